//! Driving one session between a browser's websocket and the model's: the loop that reads both
//! sides, hands every frame to the transport-free [`RealtimeSession`], and writes what it decides.
//!
//! - Every frame from the model is read, text or binary (Google's Live servers send JSON in
//!   binary frames): a binary frame that is UTF-8 goes through the same path as text, and the
//!   page gets it as a text frame; one that is not is dropped and counted (fail closed).
//! - What goes to the model waits while the model is not ready ([`RealtimeSession::upstream_ready`]:
//!   before Gemini Live's `setupComplete`, and while the session moves to a new connection),
//!   within [`DriveOptions::held_bytes`] (past it the oldest page audio is dropped, never
//!   anything else); then it is sent in order.
//! - With a connector ([`run_session_resumable`]), a Gemini Live session moves to a new model
//!   connection on `goAway` or when its connection ends, resuming with the latest handle.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{FutureExt, Sink, SinkExt, Stream, StreamExt};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::error::ProtocolError;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::{Error as WsError, Message, Utf8Bytes};

use super::page::{write_page, PageQueue};
use super::resume::Comeback;
use super::{relay_error, RelayConfig, RelayLimits, RelayStats};
use std::sync::atomic::AtomicU64;
use toolc_realtime::{Output, RealtimeSession, Reconnect, SessionEvents, Verdict};

/// A websocket as a session is driven over it: frames in, frames out (tokio-tungstenite's
/// stream, or any pair a test makes).
pub trait Socket:
    Stream<Item = Result<Message, WsError>> + Sink<Message, Error = WsError> + Unpin
{
}

impl<T> Socket for T where
    T: Stream<Item = Result<Message, WsError>> + Sink<Message, Error = WsError> + Unpin
{
}

/// How many already-received frames are forwarded before the writes are flushed: batching the
/// flush saves a syscall per frame under load without delaying a lone frame.
const BATCH: usize = 64;

/// How many times in a row a move to a new model connection may fail to connect before the
/// conversation ends.
const CONNECT_ATTEMPTS: u32 = 3;

/// Who ended a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// The browser went away: it closed, disconnected, stalled or idled out.
    Browser,
    /// The model connection closed or failed (and could not be resumed).
    Model,
    /// The relay drained: the session's calls finished (or the drain deadline came), their
    /// results went to the model, and the page was told to reconnect (close code 1012).
    Drained,
}

/// How a session is driven: the relay's limits, or the defaults for [`run_session`].
#[derive(Clone, Debug)]
pub struct DriveOptions {
    /// After the browser leaves, how long the session may still send the failed results of its
    /// open calls upstream before the model connection is closed.
    pub close_grace: Duration,
    /// `None`: no idle limit.
    pub idle_timeout: Option<Duration>,
    /// `None`: no pings.
    pub ping_interval: Option<Duration>,
    /// How long one write to the browser may take before it is disconnected as stalled.
    pub write_timeout: Duration,
    /// Bytes queued for the page (a page that reads slowly, stopped reading, or is away): past
    /// it the oldest audio is dropped and counted, nothing else; past it with no audio left the
    /// model's frames wait until the page catches up.
    pub page_buffer_bytes: usize,
    /// Bytes of the page's input held while the model is not ready (before `setupComplete`,
    /// during a move to a new connection). Past it the oldest held page audio is dropped and
    /// counted; nothing else is (results, the page's text turns).
    pub held_bytes: usize,
    /// How long before a `goAway`'s time is up the session moves, when no resumable point came
    /// first.
    pub go_away_margin: Duration,
    /// Where to count the session's events; `None` counts nothing.
    pub stats: Option<Arc<RelayStats>>,
    /// Says when the relay drains ([`crate::RelayService::drain`]): the deadline by which the
    /// session ends. `None`: the session is never drained.
    pub drain: Option<watch::Receiver<Option<Instant>>>,
}

impl DriveOptions {
    /// Options for [`run_session`]: `close_grace`, no idle limit, no pings, the default write
    /// timeout, queue and held input, no counters.
    pub fn new(close_grace: Duration) -> DriveOptions {
        let limits = RelayLimits::default();
        DriveOptions {
            close_grace,
            idle_timeout: None,
            ping_interval: None,
            write_timeout: limits.write_timeout,
            page_buffer_bytes: limits.page_buffer_bytes,
            held_bytes: limits.held_input_bytes,
            go_away_margin: limits.go_away_margin,
            stats: None,
            drain: None,
        }
    }

    /// The options of a session of the relay configured by `config`, counted in `stats`.
    pub fn from_config(config: &RelayConfig, stats: Option<Arc<RelayStats>>) -> DriveOptions {
        let limits = &config.limits;
        DriveOptions {
            close_grace: config.close_grace,
            idle_timeout: Some(limits.idle_timeout),
            ping_interval: Some(limits.ping_interval),
            write_timeout: limits.write_timeout,
            page_buffer_bytes: limits.page_buffer_bytes.max(1),
            held_bytes: limits.held_input_bytes,
            go_away_margin: limits.go_away_margin,
            stats,
            drain: None,
        }
    }

    fn count(&self, counter: impl Fn(&RelayStats) -> &AtomicU64) {
        if let Some(stats) = &self.stats {
            RelayStats::bump(counter(stats));
        }
    }
}

/// Runs one session between two connected websockets until either side goes away. Usable with
/// any pair of message streams (a test may pass in its own).
pub async fn run_session<B, M>(
    session: RealtimeSession,
    events: SessionEvents,
    browser: B,
    model: M,
    close_grace: Duration,
) -> Ended
where
    B: Socket + Send + 'static,
    M: Socket,
{
    let options = DriveOptions::new(close_grace);
    run_session_with(session, events, browser, model, &options).await
}

/// [`run_session`] with the relay's limits: idle timeout and pings, the browser's write
/// deadline and queue, and counters. The model connection is not replaced when it ends.
///
/// Frames for the browser go through a bounded queue to a writer task of their own, so a
/// browser that stops reading never holds up the model's side: a client call's timeout result
/// reaches the model at its deadline, and the stalled browser is disconnected when its queue
/// fills or one write takes longer than the write timeout.
pub async fn run_session_with<B, M>(
    session: RealtimeSession,
    events: SessionEvents,
    browser: B,
    model: M,
    options: &DriveOptions,
) -> Ended
where
    B: Socket + Send + 'static,
    M: Socket,
{
    type NoConnector<M> = fn(u32) -> std::future::Ready<Result<M, String>>;
    drive(
        session,
        events,
        browser,
        model,
        None::<NoConnector<M>>,
        options,
        None,
    )
    .await
}

/// [`run_session_with`], and when a Gemini Live model connection ends (`goAway`, a close, a
/// failure) the session moves to a new one from `connect` (called with the attempt, 0 first)
/// and resumes there with the latest handle ([`RealtimeSession::resume_setup`]). The page notices
/// nothing but an optional `toolc.upstream` event; when the move fails it gets an `error`
/// event (`upstream_resume_failed`) and the session ends.
pub async fn run_session_resumable<B, M, C, F>(
    session: RealtimeSession,
    events: SessionEvents,
    browser: B,
    model: M,
    connect: C,
    options: &DriveOptions,
) -> Ended
where
    B: Socket + Send + 'static,
    M: Socket,
    C: FnMut(u32) -> F,
    F: Future<Output = Result<M, String>>,
{
    drive(
        session,
        events,
        browser,
        model,
        Some(connect),
        options,
        None,
    )
    .await
}

/// [`run_session_resumable`] for a relay session whose page may come back
/// ([`PageReturn`]).
pub(crate) async fn run_session_held<B, M, C, F>(
    session: RealtimeSession,
    events: SessionEvents,
    browser: B,
    model: M,
    connect: C,
    options: &DriveOptions,
    page_return: PageReturn<B>,
) -> Ended
where
    B: Socket + Send + 'static,
    M: Socket,
    C: FnMut(u32) -> F,
    F: Future<Output = Result<M, String>>,
{
    drive(
        session,
        events,
        browser,
        model,
        Some(connect),
        options,
        Some(page_return),
    )
    .await
}

/// A move to a new model connection under way.
struct Moving<F> {
    /// The connection being opened.
    connecting: Option<Pin<Box<F>>>,
    /// The `setup` to send first on it.
    setup: String,
    /// Connection attempts so far.
    attempts: u32,
}

/// What a relay gives a session so that its page can come back after its connection drops
/// ([`crate::resume`]): where the page's new connections arrive, how long to wait for one, the
/// page's first token, and the relay's bookkeeping of held sessions.
pub(crate) struct PageReturn<B> {
    pub(crate) pages: mpsc::Receiver<Comeback<B>>,
    pub(crate) grace: Duration,
    pub(crate) token: String,
    pub(crate) relay_id: String,
    pub(crate) held: Box<dyn HeldSession>,
}

/// The relay's bookkeeping of one session whose page may come back.
pub(crate) trait HeldSession: Send {
    /// The page left: whether the session may wait for it (the relay's cap of held sessions).
    fn hold(&self) -> bool;
    /// The page came back.
    fn back(&self);
    /// The session ended (`expired`: its page did not come back within the grace window).
    fn ended(&self, expired: bool);
}

/// The page's current connection: its frames in, and the writer task sending it the queue.
struct Page<B: Socket> {
    from: SplitStream<B>,
    writer: tokio::task::JoinHandle<()>,
}

impl<B> Page<B>
where
    B: Socket + Send + 'static,
{
    fn start(socket: B, queue: &Arc<PageQueue>, write_timeout: Duration) -> Page<B> {
        let (sink, from) = socket.split();
        let writer = tokio::spawn(write_page(sink, queue.clone(), write_timeout));
        Page { from, writer }
    }

    /// Leaves the connection: whatever the writer took and did not write is lost with it.
    fn drop_connection(self) {
        self.writer.abort();
    }
}

/// How the page's connection was lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lost {
    /// The page closed it (close code 1000 or none), or broke the protocol: the conversation
    /// ends.
    HungUp,
    /// It dropped (no close frame, an error, close code 1001 of a page that reloads, ...).
    Dropped,
    /// The page stopped reading: a write took longer than the write timeout.
    Stalled,
}

/// The `toolc.session` event: the page's resume token and how long the relay waits for it.
fn session_notice(token: &str, relay_id: &str, grace: Duration, resumed: bool) -> Message {
    Message::text(
        serde_json::json!({
            "type": "toolc.session",
            "resume_token": token,
            "relay": relay_id,
            "grace_ms": u64::try_from(grace.as_millis()).unwrap_or(u64::MAX),
            "resumed": resumed,
        })
        .to_string(),
    )
}

async fn drive<B, M, C, F>(
    mut session: RealtimeSession,
    mut events: SessionEvents,
    browser: B,
    model: M,
    mut connect: Option<C>,
    options: &DriveOptions,
    mut page_return: Option<PageReturn<B>>,
) -> Ended
where
    B: Socket + Send + 'static,
    M: Socket,
    C: FnMut(u32) -> F,
    F: Future<Output = Result<M, String>>,
{
    let queue = PageQueue::new(options.page_buffer_bytes);
    let mut to_browser = BrowserOut {
        queue: queue.clone(),
    };
    if let Some(r) = &page_return {
        to_browser.send(session_notice(&r.token, &r.relay_id, r.grace, false));
    }
    let mut page: Option<Page<B>> = Some(Page::start(browser, &queue, options.write_timeout));
    let (sink, stream) = model.split();
    let mut to_model = ModelOut::new(sink, options.held_bytes);
    let mut from_model: Option<SplitStream<M>> = Some(stream);
    if to_model
        .send_first(Message::text(session.session_update()))
        .await
        .is_err()
    {
        to_browser.send(relay_error("the model connection closed"));
        to_browser.close();
        if let Some(r) = &page_return {
            r.held.ended(false);
        }
        return Ended::Model;
    }
    let far = Duration::from_secs(86_400 * 365);
    let idle = options.idle_timeout;
    let ping_every = options.ping_interval.unwrap_or(far);
    let mut last_heard = Instant::now();
    let mut ping = tokio::time::interval_at(Instant::now() + ping_every, ping_every);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // One idle timer for the session, moved only when it fires early: a browser frame just
    // notes when it came, so no timer is registered per frame.
    let idle_timer = tokio::time::sleep_until(last_heard + idle.unwrap_or(far));
    tokio::pin!(idle_timer);
    // When a `goAway`'s connection must be left at the latest.
    let move_timer = tokio::time::sleep_until(Instant::now() + far);
    tokio::pin!(move_timer);
    let mut move_by: Option<Instant> = None;
    let mut moving: Option<Moving<F>> = None;
    let mut model_close: Option<CloseFrame> = None;
    // Draining: the page was told, and the session ends once no call is open, or at the
    // deadline.
    let mut drain = options.drain.clone();
    let drain_timer = tokio::time::sleep_until(Instant::now() + far);
    tokio::pin!(drain_timer);
    let mut draining = false;
    // While the page is away: when the session stops waiting for it.
    let grace_timer = tokio::time::sleep_until(Instant::now() + far);
    tokio::pin!(grace_timer);
    let mut expired = false;
    let ended = loop {
        // What the model side did in this turn of the loop: `Err` when its connection ended.
        let mut model_side: Result<(), Ended> = Ok(());
        let mut lost: Option<Lost> = None;
        tokio::select! {
            msg = next_of(&mut from_model), if from_model.is_some() && to_browser.has_room() => {
                let source = from_model.as_mut().expect("guarded by is_some");
                let mut hung_up = false;
                let batch = relay_batch(&mut session, Side::Model, msg, source, &mut to_browser, &mut to_model, &mut model_close, &mut hung_up);
                model_side = batch.await;
            }
            from = from_page(&mut page), if page.is_some() => match from {
                FromPage::WriterEnded => {
                    // The writer gave up: the page stopped reading or its connection failed.
                    options.count(|s| &s.stalled_browsers);
                    tracing::warn!("browser stopped reading: disconnected");
                    lost = Some(Lost::Stalled);
                }
                FromPage::Frame(msg) => {
                    last_heard = Instant::now();
                    let mut hung_up = false;
                    if let Some(Err(e)) = &msg {
                        hung_up = refuse_browser_error(e, &mut to_browser, options);
                    }
                    let from = &mut page.as_mut().expect("guarded by is_some").from;
                    let batch = relay_batch(&mut session, Side::Browser, msg, from, &mut to_browser, &mut to_model, &mut model_close, &mut hung_up);
                    match batch.await {
                        Err(Ended::Browser) => lost = Some(if hung_up { Lost::HungUp } else { Lost::Dropped }),
                        other => model_side = other,
                    }
                }
            },
            () = to_browser.room(), if !to_browser.has_room() => {}
            Some(event) = events.recv() => {
                session.on_event(event);
                while let Some(event) = events.try_recv() {
                    session.on_event(event);
                }
                model_side = flush(&mut session, &mut to_browser, &mut to_model).await;
            }
            Some(comeback) = comeback_of(&mut page_return) => {
                // The page is back (or a new connection of it replaces one the relay has not
                // seen drop yet): it gets its new token, then every open call and approval
                // request again, then what waited for it.
                if let Some(old) = page.take() {
                    old.drop_connection();
                }
                queue.forget_control();
                let r = page_return.as_ref().expect("a comeback comes through it");
                let mut first = vec![session_notice(&comeback.token, &r.relay_id, r.grace, true)];
                first.extend(session.browser_resumed().into_iter().map(Message::text));
                if draining {
                    first.push(drain_notice(drain_timer.deadline()));
                }
                queue.push_front(first);
                page = Some(Page::start(comeback.socket, &queue, options.write_timeout));
                r.held.back();
                grace_timer.as_mut().reset(Instant::now() + far);
                last_heard = Instant::now();
                options.count(|s| &s.pages_resumed);
                tracing::info!("the page resumed the session");
            }
            () = &mut grace_timer, if page.is_none() => {
                options.count(|s| &s.held_expired);
                tracing::info!("the page did not come back within the grace window");
                expired = true;
                break Ended::Browser;
            }
            connected = connecting_of(&mut moving), if moving.as_ref().is_some_and(|m| m.connecting.is_some()) => {
                let state = moving.as_mut().expect("guarded by is_some");
                state.connecting = None;
                let opened = match connected {
                    Ok(model) => {
                        let (sink, stream) = model.split();
                        to_model.attach(sink);
                        match to_model.send_first(Message::text(state.setup.clone())).await {
                            Ok(()) => {
                                from_model = Some(stream);
                                Ok(())
                            }
                            Err(_) => Err("the new model connection closed at once".to_owned()),
                        }
                    }
                    Err(why) => Err(why),
                };
                if let Err(why) = opened {
                    to_model.detach().await;
                    state.attempts += 1;
                    if state.attempts >= CONNECT_ATTEMPTS {
                        break fail_move(&mut session, &mut to_browser, &why, options).await;
                    }
                    tracing::info!(error = %why, attempt = state.attempts, "the new model connection failed; trying again");
                    if let Some(connect) = connect.as_mut() {
                        state.connecting = Some(Box::pin(connect(state.attempts)));
                    }
                }
            }
            () = &mut move_timer, if move_by.is_some() => {
                move_by = None;
                move_timer.as_mut().reset(Instant::now() + far);
                model_side = Err(Ended::Model);
                model_close = None;
            }
            _ = ping.tick(), if options.ping_interval.is_some() && page.is_some() => {
                to_browser.send(Message::Ping(Default::default()));
            }
            () = &mut idle_timer, if idle.is_some() && page.is_some() => {
                let idle_at = last_heard + idle.unwrap_or(far);
                if idle_at > Instant::now() {
                    // The browser spoke since the timer was set: wait for the new deadline.
                    idle_timer.as_mut().reset(idle_at);
                    continue;
                }
                options.count(|s| &s.idle_browsers);
                tracing::info!("browser idle: disconnected");
                to_browser.send(Message::Close(Some(CloseFrame {
                    code: CloseCode::Policy,
                    reason: "idle".into(),
                })));
                break Ended::Browser;
            }
            changed = drain_signal(&mut drain), if !draining && drain.is_some() => {
                let Some(deadline) = changed else {
                    // The relay went away without draining: nothing to wait for.
                    drain = None;
                    continue;
                };
                draining = true;
                drain_timer.as_mut().reset(deadline);
                to_browser.send(drain_notice(deadline));
            }
            () = &mut drain_timer, if draining => {
                break Ended::Drained;
            }
        }
        if let Some(lost) = lost {
            let held = lost != Lost::HungUp
                && !draining
                && page_return
                    .as_ref()
                    .is_some_and(|r| !r.grace.is_zero() && r.held.hold());
            if !held {
                break Ended::Browser;
            }
            if let Some(gone) = page.take() {
                gone.drop_connection();
            }
            queue.forget_control();
            session.browser_away();
            let grace = page_return.as_ref().map_or(far, |r| r.grace);
            grace_timer.as_mut().reset(Instant::now() + grace);
            options.count(|s| &s.pages_held);
            tracing::info!(?grace, "the page left: holding the session for it");
        }
        if let Some(dropped) = queue.take_dropped() {
            if let Some(stats) = &options.stats {
                stats
                    .page_audio_dropped
                    .fetch_add(dropped, std::sync::atomic::Ordering::Relaxed);
            }
        }
        let after = after_turn(
            &session,
            &mut to_model,
            &mut moving,
            &mut move_by,
            move_timer.as_mut(),
            options,
        )
        .await;
        if model_side.is_ok() && after.is_ok() {
            // Draining and nothing in flight: the session ends now.
            if draining && session.open_calls() == 0 {
                break Ended::Drained;
            }
            continue;
        }
        let left = leave_model(
            &mut session,
            &mut to_browser,
            &mut to_model,
            moving.is_some(),
            &mut connect,
            &mut model_close,
            options,
        )
        .await;
        match left {
            Ok(move_now) => {
                move_by = None;
                move_timer.as_mut().reset(Instant::now() + far);
                from_model = None;
                moving = Some(move_now);
            }
            Err(ended) => break ended,
        }
    };
    // From now on a resume is refused with the reason.
    if let Some(r) = &page_return {
        r.held.ended(expired);
    }
    drop(page_return);
    if page.is_none() {
        // Nobody to write to: what waited for the page goes.
        queue.close();
    }
    end_session(
        ended,
        &mut session,
        &mut events,
        &mut to_browser,
        &mut to_model,
        options,
    )
    .await;
    ended
}

fn drain_notice(deadline: Instant) -> Message {
    let left = deadline.saturating_duration_since(Instant::now());
    let notice = serde_json::json!({
        "type": "toolc.drain",
        "deadline_ms": u64::try_from(left.as_millis()).unwrap_or(u64::MAX),
    });
    Message::text(notice.to_string())
}

async fn comeback_of<B>(page_return: &mut Option<PageReturn<B>>) -> Option<Comeback<B>> {
    match page_return {
        Some(r) => r.pages.recv().await,
        None => std::future::pending().await,
    }
}

/// What the page's connection did.
enum FromPage {
    /// A frame came (`None`, an error or a close frame: the connection ended).
    Frame(Option<Result<Message, WsError>>),
    /// The writer gave up (a write timed out or failed).
    WriterEnded,
}

async fn from_page<B: Socket>(page: &mut Option<Page<B>>) -> FromPage {
    match page {
        Some(p) => tokio::select! {
            msg = p.from.next() => FromPage::Frame(msg),
            _ = &mut p.writer => FromPage::WriterEnded,
        },
        None => std::future::pending().await,
    }
}

/// After each turn of the loop: what waited for the model goes once the model reads input,
/// dropped page audio is counted, and a `goAway` sets when to move. `Err`: the model
/// connection must be left now.
async fn after_turn<M, F>(
    session: &RealtimeSession,
    to_model: &mut ModelOut<SplitSink<M, Message>>,
    moving: &mut Option<Moving<F>>,
    move_by: &mut Option<Instant>,
    move_timer: Pin<&mut tokio::time::Sleep>,
    options: &DriveOptions,
) -> Result<(), Ended>
where
    M: Sink<Message, Error = WsError> + Unpin,
{
    let mut result = Ok(());
    if session.upstream_ready() && to_model.is_attached() {
        if moving.as_ref().is_some_and(|m| m.connecting.is_none()) {
            *moving = None;
            tracing::info!("the session resumed on a new model connection");
        }
        result = to_model.release().await;
    }
    if let Some(dropped) = to_model.take_dropped() {
        if let Some(stats) = &options.stats {
            stats
                .held_input_dropped
                .fetch_add(dropped, std::sync::atomic::Ordering::Relaxed);
        }
    }
    // A `goAway`: move now if the session is at a resumable point, else by its deadline.
    match session.reconnect_due() {
        Reconnect::No => {}
        Reconnect::Now if moving.is_none() => result = Err(Ended::Model),
        Reconnect::Now => {}
        Reconnect::Within(left) => {
            if move_by.is_none() && moving.is_none() {
                let left = left.unwrap_or(options.go_away_margin * 2);
                let at = Instant::now() + left.saturating_sub(options.go_away_margin);
                *move_by = Some(at);
                move_timer.reset(at);
            }
        }
    }
    result
}

/// The model connection ended or must be left: the move to a new one that starts now, or how
/// the session ends (the page told why, with a close frame).
async fn leave_model<M, C, F>(
    session: &mut RealtimeSession,
    to_browser: &mut BrowserOut,
    to_model: &mut ModelOut<SplitSink<M, Message>>,
    in_move: bool,
    connect: &mut Option<C>,
    model_close: &mut Option<CloseFrame>,
    options: &DriveOptions,
) -> Result<Moving<F>, Ended>
where
    M: Sink<Message, Error = WsError> + Unpin,
    C: FnMut(u32) -> F,
{
    if in_move {
        let why = match model_close.take() {
            Some(frame) => format!(
                "the model refused to resume the session ({}: {})",
                u16::from(frame.code),
                frame.reason
            ),
            None => "the new model connection closed before the session resumed".into(),
        };
        return Err(fail_move(session, to_browser, &why, options).await);
    }
    if connect.is_none() || session.can_resume().is_err() {
        // The model's close code (a policy violation, a server error) reaches the page;
        // without one, the page still gets a close frame that says why.
        let frame = model_close.take().unwrap_or_else(|| CloseFrame {
            code: CloseCode::Error,
            reason: "the model connection ended".into(),
        });
        to_browser.send(Message::Close(Some(frame)));
        return Err(Ended::Model);
    }
    let setup = match session.resume_setup() {
        Ok(setup) => setup,
        Err(why) => return Err(fail_move(session, to_browser, &why.to_string(), options).await),
    };
    tracing::info!("the model connection is ending: moving the session to a new one");
    *model_close = None;
    to_model.detach().await;
    // The session's cancellations (page notices) go now; results wait for the new model.
    if flush(session, to_browser, to_model).await == Err(Ended::Browser) {
        return Err(Ended::Browser);
    }
    Ok(Moving {
        connecting: connect.as_mut().map(|connect| Box::pin(connect(0))),
        setup,
        attempts: 0,
    })
}

/// The session is over: when the browser left, its open calls fail and their results reach
/// the model within the close grace; when the model left, the browser's side closes.
async fn end_session<M>(
    ended: Ended,
    session: &mut RealtimeSession,
    events: &mut SessionEvents,
    to_browser: &mut BrowserOut,
    to_model: &mut ModelOut<SplitSink<M, Message>>,
    options: &DriveOptions,
) where
    M: Sink<Message, Error = WsError> + Unpin,
{
    match ended {
        Ended::Browser | Ended::Drained => {
            if ended == Ended::Drained {
                // 1012: the service restarts; the page reconnects (to another relay).
                to_browser.send(Message::Close(Some(CloseFrame {
                    code: CloseCode::Restart,
                    reason: "the relay is restarting: reconnect".into(),
                })));
            }
            to_browser.close();
            session.browser_closed();
            let until = Instant::now() + options.close_grace;
            while session.open_calls() > 0 {
                match tokio::time::timeout_at(until, events.recv()).await {
                    Ok(Some(event)) => session.on_event(event),
                    _ => break,
                }
            }
            // A drain's deadline: what is still open answers the model with an error rather
            // than nothing.
            if ended == Ended::Drained {
                let open = session.end_open_calls();
                if open > 0 {
                    tracing::warn!(
                        calls = open,
                        "drain deadline: open calls ended as server_restarting"
                    );
                }
            }
            let ready = session.upstream_ready();
            for out in session.drain_outputs() {
                if let Output::ToModel(text) = out {
                    if !ready || to_model.feed_now(Message::text(text)).await.is_err() {
                        break;
                    }
                }
            }
            to_model.close().await;
        }
        Ended::Model => {
            session.browser_closed();
            to_browser.close();
        }
    }
}

/// A move to a new model connection failed: the page hears why, the session's calls end, and
/// so does the session.
async fn fail_move(
    session: &mut RealtimeSession,
    to_browser: &mut BrowserOut,
    why: &str,
    options: &DriveOptions,
) -> Ended {
    tracing::warn!(error = %why, "the session could not move to a new model connection");
    options.count(|s| &s.upstream_failures);
    session.resume_failed(why);
    while let Some(out) = session.pop_output() {
        if let Output::ToBrowser(text) = out {
            to_browser.send(Message::text(text));
        }
    }
    to_browser.send(Message::Close(Some(CloseFrame {
        code: CloseCode::Error,
        reason: "the conversation could not be resumed".into(),
    })));
    Ended::Model
}

/// The drain deadline, once the relay starts draining; `None` when the relay is gone.
async fn drain_signal(drain: &mut Option<watch::Receiver<Option<Instant>>>) -> Option<Instant> {
    let rx = drain.as_mut()?;
    loop {
        if let Some(deadline) = *rx.borrow_and_update() {
            return Some(deadline);
        }
        if rx.changed().await.is_err() {
            return None;
        }
    }
}

async fn next_of<S>(stream: &mut Option<S>) -> Option<Result<Message, WsError>>
where
    S: Stream<Item = Result<Message, WsError>> + Unpin,
{
    match stream {
        Some(stream) => stream.next().await,
        None => std::future::pending().await,
    }
}

async fn connecting_of<F: Future>(moving: &mut Option<Moving<F>>) -> F::Output {
    match moving.as_mut().and_then(|m| m.connecting.as_mut()) {
        Some(connecting) => connecting.await,
        None => std::future::pending().await,
    }
}

/// A browser frame that broke the protocol or the limits: counted, and answered with a close
/// frame (1009 for a message over the size limit, 1002 otherwise) before the session ends.
/// Returns whether it was such a frame (a lost connection is not).
fn refuse_browser_error(
    error: &WsError,
    to_browser: &mut BrowserOut,
    options: &DriveOptions,
) -> bool {
    if matches!(
        error,
        WsError::ConnectionClosed
            | WsError::AlreadyClosed
            | WsError::Io(_)
            | WsError::Protocol(ProtocolError::ResetWithoutClosingHandshake)
    ) {
        return false;
    }
    options.count(|s| &s.browser_protocol_errors);
    tracing::warn!(error = %error, "browser broke the websocket protocol or the limits");
    let code = if matches!(error, WsError::Capacity(_)) {
        CloseCode::Size
    } else {
        CloseCode::Protocol
    };
    to_browser.send(Message::Close(Some(CloseFrame {
        code,
        reason: "the relay refused this message".into(),
    })));
    true
}

/// Frames for the page, into its byte-bounded queue ([`PageQueue`]). Sending never waits and
/// never fails: past the bound the oldest audio goes, and the model's frames are read only
/// while the queue is within it ([`BrowserOut::has_room`]), so a burst from the model (audio
/// arrives faster than real time) waits for a slow but live page, while the session's own work
/// (deadlines, results, the page's events) goes on.
struct BrowserOut {
    queue: Arc<PageQueue>,
}

impl BrowserOut {
    fn has_room(&self) -> bool {
        self.queue.has_room()
    }

    /// Resolves once the queue is within its bound again.
    async fn room(&self) {
        self.queue.room().await
    }

    fn send(&mut self, msg: Message) {
        self.queue.push(msg, false);
    }

    /// A frame of the model's: `audio` ones may be dropped.
    fn send_model(&mut self, msg: Message, audio: bool) {
        self.queue.push(msg, audio);
    }

    /// Lets the writer send what is queued, then close the connection.
    fn close(&mut self) {
        self.queue.close();
    }
}

/// What goes to the model: straight to its connection while the model reads input, else held
/// in order (within a byte bound) until it does.
struct ModelOut<S> {
    sink: Option<S>,
    /// Frames waiting for the model, oldest first; `true` for the page's audio, which may be
    /// dropped.
    held: VecDeque<(Message, bool)>,
    held_bytes: usize,
    limit: usize,
    /// Page audio frames dropped from the held queue since the last [`ModelOut::take_dropped`].
    dropped: u64,
    /// Written to since the last flush.
    dirty: bool,
}

impl<M> ModelOut<SplitSink<M, Message>>
where
    M: Sink<Message, Error = WsError> + Unpin,
{
    fn new(sink: SplitSink<M, Message>, limit: usize) -> Self {
        ModelOut {
            sink: Some(sink),
            held: VecDeque::new(),
            held_bytes: 0,
            limit,
            dropped: 0,
            dirty: false,
        }
    }

    fn is_attached(&self) -> bool {
        self.sink.is_some()
    }

    fn attach(&mut self, sink: SplitSink<M, Message>) {
        self.sink = Some(sink);
        self.dirty = false;
    }

    /// Leaves the current connection (closing it briefly, politely); what is held stays.
    async fn detach(&mut self) {
        if let Some(mut sink) = self.sink.take() {
            let _ = tokio::time::timeout(Duration::from_millis(250), sink.close()).await;
        }
    }

    async fn close(&mut self) {
        if let Some(mut sink) = self.sink.take() {
            let _ = sink.close().await;
        }
    }

    /// The first message of a connection, ahead of anything held.
    async fn send_first(&mut self, msg: Message) -> Result<(), Ended> {
        match self.sink.as_mut() {
            Some(sink) => sink.send(msg).await.map_err(|_| Ended::Model),
            None => Err(Ended::Model),
        }
    }

    /// Sends now, bypassing the held queue.
    async fn feed_now(&mut self, msg: Message) -> Result<(), Ended> {
        match self.sink.as_mut() {
            Some(sink) => {
                self.dirty = true;
                sink.feed(msg).await.map_err(|_| Ended::Model)
            }
            None => Err(Ended::Model),
        }
    }

    /// Sends `msg` if the model reads input (`ready`) and nothing waits before it; else holds
    /// it. `audio`: the page's audio, which may be dropped when the held bytes overflow; no
    /// other frame is (a call's result, the page's text turn).
    async fn feed(&mut self, msg: Message, ready: bool, audio: bool) -> Result<(), Ended> {
        if ready && self.held.is_empty() && self.sink.is_some() {
            return self.feed_now(msg).await;
        }
        self.held_bytes += msg.len();
        self.held.push_back((msg, audio));
        while self.held_bytes > self.limit {
            let Some(oldest) = self.held.iter().position(|(_, audio)| *audio) else {
                break;
            };
            if let Some((msg, _)) = self.held.remove(oldest) {
                self.held_bytes -= msg.len();
                self.dropped += 1;
            }
        }
        Ok(())
    }

    /// Sends everything held, in order, and flushes.
    async fn release(&mut self) -> Result<(), Ended> {
        while let Some((msg, _)) = self.held.pop_front() {
            self.held_bytes -= msg.len();
            self.feed_now(msg).await?;
        }
        self.flush().await
    }

    async fn flush(&mut self) -> Result<(), Ended> {
        if !std::mem::take(&mut self.dirty) {
            return Ok(());
        }
        match self.sink.as_mut() {
            Some(sink) => sink.flush().await.map_err(|_| Ended::Model),
            None => Ok(()),
        }
    }

    fn take_dropped(&mut self) -> Option<u64> {
        (self.dropped > 0).then(|| std::mem::take(&mut self.dropped))
    }
}

/// The side a frame comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Model,
    Browser,
}

impl Side {
    /// How the session ends when this side's connection fails.
    fn ended(self) -> Ended {
        match self {
            Side::Model => Ended::Model,
            Side::Browser => Ended::Browser,
        }
    }
}

/// Relays `first` and then every frame already waiting on `source` (at most [`BATCH`], so that
/// one busy side cannot starve the other), then flushes the model side if written to. `Err`
/// names the side whose connection failed or closed; a close frame from the model is kept in
/// `model_close` (the page gets it if the session ends).
// The two sockets' ends and what each close said: one batch touches all of them.
#[allow(clippy::too_many_arguments)]
async fn relay_batch<R, M>(
    session: &mut RealtimeSession,
    from: Side,
    first: Option<Result<Message, WsError>>,
    source: &mut R,
    to_browser: &mut BrowserOut,
    to_model: &mut ModelOut<SplitSink<M, Message>>,
    model_close: &mut Option<CloseFrame>,
    hung_up: &mut bool,
) -> Result<(), Ended>
where
    R: Stream<Item = Result<Message, WsError>> + Unpin,
    M: Sink<Message, Error = WsError> + Unpin,
{
    let mut next = first;
    let mut relayed = 0;
    loop {
        match next {
            Some(Ok(Message::Close(Some(frame)))) if from == Side::Model => {
                *model_close = Some(frame);
                return Err(Ended::Model);
            }
            // The page hung up (a close without a code, or 1000): no resume is waited for.
            Some(Ok(Message::Close(frame)))
                if from == Side::Browser
                    && frame.as_ref().is_none_or(|f| f.code == CloseCode::Normal) =>
            {
                *hung_up = true;
                return Err(Ended::Browser);
            }
            None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return Err(from.ended()),
            Some(Ok(m)) => relay_frame(session, from, m, to_browser, to_model).await?,
        }
        relayed += 1;
        // The model's frames wait in their socket while the browser's queue is short of room.
        if relayed == BATCH || (from == Side::Model && !to_browser.has_room()) {
            break;
        }
        match source.next().now_or_never() {
            Some(m) => next = m,
            None => break,
        }
    }
    flush(session, to_browser, to_model).await
}

/// One frame to the other side, as the session decides; `Err` names the side whose connection
/// failed.
async fn relay_frame<M>(
    session: &mut RealtimeSession,
    from: Side,
    msg: Message,
    to_browser: &mut BrowserOut,
    to_model: &mut ModelOut<SplitSink<M, Message>>,
) -> Result<(), Ended>
where
    M: Sink<Message, Error = WsError> + Unpin,
{
    let text = match (msg, from) {
        (Message::Text(text), _) => text,
        // Google's Live servers send JSON in binary frames: read it as text (no copy); what is
        // not UTF-8 is dropped and noted.
        (Message::Binary(bytes), Side::Model) => match Utf8Bytes::try_from(bytes) {
            Ok(text) => text,
            Err(_) => {
                session.unreadable_model_binary();
                return Ok(());
            }
        },
        (Message::Binary(_), Side::Browser) => {
            session.on_browser_binary();
            return Ok(());
        }
        // tungstenite answers pings itself; close frames end the batch in the caller.
        (Message::Ping(_) | Message::Pong(_) | Message::Frame(_) | Message::Close(_), _) => {
            return Ok(())
        }
    };
    let verdict = match from {
        Side::Model => session.on_model_event(text.as_str()),
        Side::Browser => session.on_browser_event(text.as_str()),
    };
    // The page always gets text frames: it speaks JSON text, whatever frame the model used.
    let audio = from == Side::Model
        && !matches!(verdict, Verdict::Drop)
        && session.is_audio_output(text.as_str());
    let out = match verdict {
        Verdict::Forward => Message::Text(text),
        Verdict::Replace(t) => Message::text(t),
        Verdict::Drop => return Ok(()),
    };
    match from {
        Side::Model => {
            to_browser.send_model(out, audio);
            Ok(())
        }
        Side::Browser => {
            let ready = session.upstream_ready();
            to_model
                .feed(out, ready, session.last_input_was_audio())
                .await
        }
    }
}

/// Sends what the session queued, then flushes the model side if anything was written to it;
/// `Err` names the side whose connection failed.
async fn flush<M>(
    session: &mut RealtimeSession,
    to_browser: &mut BrowserOut,
    to_model: &mut ModelOut<SplitSink<M, Message>>,
) -> Result<(), Ended>
where
    M: Sink<Message, Error = WsError> + Unpin,
{
    let ready = session.upstream_ready();
    while let Some(out) = session.pop_output() {
        match out {
            Output::ToModel(t) => to_model.feed(Message::text(t), ready, false).await?,
            Output::ToBrowser(t) => to_browser.send(Message::text(t)),
        }
    }
    // Flush only when written to: a flush is a write syscall when frames are buffered.
    to_model.flush().await
}
