//! The websocket relay (feature `relay`): browsers connect at `ws://HOST:PORT/`; for each one the
//! relay opens the upstream model websocket, sends the tool declarations in `session.update`,
//! runs a [`Session`] between the two, and forwards every other event both ways, unchanged and
//! in order.
//!
//! - The API key goes upstream only, as `Authorization: Bearer KEY`.
//! - `?naming=tool` in the browser's URL selects the `tool.call` / `tool.result` naming.
//! - Each browser has its own task: whatever one browser or its model connection sends (any
//!   bytes, any JSON), other sessions are unaffected.
//! - A `wss://` upstream (OpenAI's endpoint, the default) needs the `tls` feature (rustls with the
//!   webpki roots); without it only `ws://` upstreams connect, and a `wss://` one fails with an
//!   `error` event to the browser.

pub mod auth;
mod service;
#[cfg(feature = "testing")]
pub mod testing;

pub use auth::{Authorizer, Handshake, Refusal, StaticTokens};
/// The axum the relay is built on, so an app mounting [`RelayService::router`] needs no
/// `axum` dependency of its own (or can match this version exactly).
pub use axum;
pub use service::RelayService;

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::http::Request;
use futures_util::{FutureExt, Sink, SinkExt, Stream, StreamExt};
use hyper::body::Incoming;
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::MaybeTlsStream;

use crate::realtime::{Output, Provider, Session, SessionConfig, SessionEvents, Verdict};
use crate::Registry;

/// How many already-received frames are forwarded before the writes are flushed: batching the
/// flush saves a syscall per frame under load without delaying a lone frame.
const BATCH: usize = 64;

/// Limits of a relay; the defaults are safe for a public deployment of a voice agent.
#[derive(Clone, Debug)]
pub struct RelayLimits {
    /// The largest message a browser may send (a `session.update` is a few KiB; audio chunks
    /// are smaller). A larger one closes the session with 1009 after this many bytes are read.
    pub max_message_size: usize,
    /// The largest single frame a browser may send.
    pub max_frame_size: usize,
    /// How long a browser may take to send its upgrade request, and the authorizer to decide.
    pub handshake_timeout: Duration,
    /// How long opening the model connection may take.
    pub upstream_connect_timeout: Duration,
    /// Sessions open at once, in all.
    pub max_sessions: usize,
    /// Sessions open at once for one principal (by [`Principal::id`](crate::Principal::id)).
    pub max_sessions_per_principal: usize,
    /// A browser that sends nothing (not even a pong) for this long is disconnected.
    pub idle_timeout: Duration,
    /// How often the relay pings a browser, so that a live but quiet page is not idle.
    pub ping_interval: Duration,
    /// How long one write to a browser may take; a browser that stops reading is disconnected
    /// after it, and never holds up what the session sends to the model.
    pub write_timeout: Duration,
    /// Frames queued for a browser that has not read them yet; more than this and the browser
    /// is disconnected as stalled.
    pub browser_queue: usize,
}

impl Default for RelayLimits {
    fn default() -> RelayLimits {
        RelayLimits {
            max_message_size: 1 << 20,
            max_frame_size: 1 << 20,
            handshake_timeout: Duration::from_secs(10),
            upstream_connect_timeout: Duration::from_secs(10),
            max_sessions: 1000,
            max_sessions_per_principal: 8,
            idle_timeout: Duration::from_secs(120),
            ping_interval: Duration::from_secs(30),
            write_timeout: Duration::from_secs(10),
            browser_queue: 4096,
        }
    }
}

/// Relay settings.
#[derive(Clone)]
pub struct RelayConfig {
    /// The model's websocket URL (the provider's public endpoint by default).
    pub upstream: String,
    /// Sent upstream only, never to the browser: as `Authorization: Bearer KEY` to OpenAI, as
    /// `x-goog-api-key: KEY` to Gemini Live.
    pub api_key: Option<String>,
    /// Settings of every session; its counters are shared by all sessions of the relay.
    pub session: Arc<SessionConfig>,
    /// After a browser leaves, how long its session may still send the failed results of its
    /// open calls upstream before the model connection is closed.
    pub close_grace: Duration,
    /// Decides who a browser is at the handshake; `None` lets every browser in without a
    /// principal (only for a relay on loopback or behind an authenticating proxy).
    pub authorizer: Option<Arc<dyn Authorizer>>,
    /// Origins (`https://app.example.com`) whose pages may open sessions; `None` allows any.
    /// A request without `Origin` does not come from a browser page and is not checked.
    pub allowed_origins: Option<Vec<String>>,
    /// Sizes, timeouts and session counts the relay enforces.
    pub limits: RelayLimits,
}

impl fmt::Debug for RelayConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RelayConfig")
            .field("upstream", &self.upstream)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("close_grace", &self.close_grace)
            .field("authorizer", &self.authorizer.is_some())
            .field("allowed_origins", &self.allowed_origins)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl RelayConfig {
    /// A relay to OpenAI Realtime for the registry's tools, with the default limits, no
    /// authorizer and any origin allowed.
    pub fn new(registry: &Registry) -> RelayConfig {
        RelayConfig::for_provider(registry, Provider::OpenAi)
    }

    /// A relay to `provider` (its public endpoint, its declarations of the registry's tools);
    /// everything else as [`RelayConfig::new`].
    pub fn for_provider(registry: &Registry, provider: Provider) -> RelayConfig {
        RelayConfig {
            upstream: provider.default_url().to_owned(),
            api_key: None,
            session: Arc::new(SessionConfig::for_provider(registry, provider)),
            close_grace: Duration::from_millis(200),
            authorizer: None,
            allowed_origins: None,
            limits: RelayLimits::default(),
        }
    }
}

/// Relay-wide counters (per-call counters are in [`SessionConfig::counters`]).
#[derive(Debug, Default)]
pub struct RelayStats {
    /// Sessions opened so far, counted once the model connection is open.
    pub sessions_opened: AtomicU64,
    /// Sessions open now.
    pub sessions_active: AtomicU64,
    /// Browser handshakes refused for any reason (the counters below say which).
    pub handshakes_refused: AtomicU64,
    /// Not a websocket upgrade, or the wrong path.
    pub refused_not_websocket: AtomicU64,
    /// The authorizer refused (401/403) or did not answer in time.
    pub refused_unauthorized: AtomicU64,
    /// The page's `Origin` is not on the allow-list (403).
    pub refused_origin: AtomicU64,
    /// `max_sessions` or `max_sessions_per_principal` reached (503/429).
    pub refused_capacity: AtomicU64,
    /// Sessions that ended because the model connection could not be opened.
    pub upstream_failures: AtomicU64,
    /// Browsers disconnected because they stopped reading (queue full or a write timed out).
    pub stalled_browsers: AtomicU64,
    /// Browsers disconnected after `idle_timeout` without a frame.
    pub idle_browsers: AtomicU64,
    /// Browsers disconnected for a protocol error: a frame or message over the limits, bad
    /// framing, invalid UTF-8 in a text frame.
    pub browser_protocol_errors: AtomicU64,
}

impl RelayStats {
    fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// A bound relay; [`Relay::serve`] runs it. The same relay mounts in an axum application with
/// [`RelayService`].
#[derive(Debug)]
pub struct Relay {
    listener: TcpListener,
    service: RelayService,
}

impl Relay {
    /// Binds `addr` for `registry` with `config`; returns once it listens, and accepts nothing
    /// until [`Relay::serve`]. Fails when the address cannot be bound.
    pub async fn bind(
        addr: impl tokio::net::ToSocketAddrs,
        registry: Arc<Registry>,
        config: RelayConfig,
    ) -> io::Result<Relay> {
        Ok(Relay {
            listener: TcpListener::bind(addr).await?,
            service: RelayService::new(registry, config),
        })
    }

    /// The address the relay listens on (with the actual port when `addr` gave port 0).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The relay's live counters, updated by its running sessions.
    pub fn stats(&self) -> Arc<RelayStats> {
        self.service.stats()
    }

    /// Accepts browsers at `/` until the future is dropped.
    pub async fn serve(self) {
        let router = self.service.router();
        let header_timeout = self.service.limits().handshake_timeout;
        loop {
            let (stream, remote) = match self.listener.accept().await {
                Ok(conn) => conn,
                // Out of file descriptors and similar: back off instead of spinning.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let _ = stream.set_nodelay(true);
            let router = router.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |mut request: Request<Incoming>| {
                    request
                        .extensions_mut()
                        .insert(axum::extract::ConnectInfo(remote));
                    let router = router.clone();
                    async move {
                        use tower::ServiceExt;
                        router.oneshot(request.map(axum::body::Body::new)).await
                    }
                });
                let mut http = hyper::server::conn::http1::Builder::new();
                http.timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(header_timeout);
                let _ = http
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .with_upgrades()
                    .await;
            });
        }
    }
}

/// The request for an OpenAI upstream connection, with the API key.
pub fn upstream_request(
    url: &str,
    api_key: Option<&str>,
) -> Result<tokio_tungstenite::tungstenite::handshake::client::Request, WsError> {
    upstream_request_for(Provider::OpenAi, url, api_key)
}

/// The request for the upstream connection to `provider`, with the API key in the header that
/// provider reads.
pub fn upstream_request_for(
    provider: Provider,
    url: &str,
    api_key: Option<&str>,
) -> Result<tokio_tungstenite::tungstenite::handshake::client::Request, WsError> {
    let mut request = url.into_client_request()?;
    if let Some(key) = api_key {
        let (name, value) = provider.api_key_header(key);
        let value = HeaderValue::from_str(&value).map_err(|e| WsError::HttpFormat(e.into()))?;
        request.headers_mut().insert(name, value);
    }
    Ok(request)
}

/// A connection to the model: plain for `ws://`, rustls for `wss://` (with the `tls` feature).
pub type UpstreamSocket = tokio_tungstenite::WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Opens the upstream websocket for a request from [`upstream_request`]. Without the `tls`
/// feature a `wss://` URL fails here with an error, not a panic.
pub async fn connect_upstream(
    request: tokio_tungstenite::tungstenite::handshake::client::Request,
) -> Result<UpstreamSocket, WsError> {
    tokio_tungstenite::connect_async(request)
        .await
        .map(|(ws, _)| ws)
}

fn relay_error(message: &str) -> Message {
    Message::text(
        json!({
            "type": "error",
            "error": { "type": "relay_error", "code": "upstream_unavailable", "message": message },
        })
        .to_string(),
    )
}

/// Who ended a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// The browser went away: it closed, disconnected, stalled or idled out.
    Browser,
    /// The model connection closed or failed.
    Model,
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
    /// Frames queued for the browser before it is disconnected as stalled (at least 1).
    pub browser_queue: usize,
    /// Where to count the session's events; `None` counts nothing.
    pub stats: Option<Arc<RelayStats>>,
}

impl DriveOptions {
    /// Options for [`run_session`]: `close_grace`, no idle limit, no pings, the default write
    /// timeout and queue, no counters.
    pub fn new(close_grace: Duration) -> DriveOptions {
        let limits = RelayLimits::default();
        DriveOptions {
            close_grace,
            idle_timeout: None,
            ping_interval: None,
            write_timeout: limits.write_timeout,
            browser_queue: limits.browser_queue,
            stats: None,
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
            browser_queue: limits.browser_queue.max(1),
            stats,
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
    session: Session,
    events: SessionEvents,
    browser: B,
    model: M,
    close_grace: Duration,
) -> Ended
where
    B: Stream<Item = Result<Message, WsError>>
        + Sink<Message, Error = WsError>
        + Unpin
        + Send
        + 'static,
    M: Stream<Item = Result<Message, WsError>> + Sink<Message, Error = WsError> + Unpin,
{
    let options = DriveOptions::new(close_grace);
    run_session_with(session, events, browser, model, &options).await
}

/// [`run_session`] with the relay's limits: idle timeout and pings, the browser's write
/// deadline and queue, and counters.
///
/// Frames for the browser go through a bounded queue to a writer task of their own, so a
/// browser that stops reading never holds up the model's side: a client call's timeout result
/// reaches the model at its deadline, and the stalled browser is disconnected when its queue
/// fills or one write takes longer than the write timeout.
pub async fn run_session_with<B, M>(
    mut session: Session,
    mut events: SessionEvents,
    browser: B,
    model: M,
    options: &DriveOptions,
) -> Ended
where
    B: Stream<Item = Result<Message, WsError>>
        + Sink<Message, Error = WsError>
        + Unpin
        + Send
        + 'static,
    M: Stream<Item = Result<Message, WsError>> + Sink<Message, Error = WsError> + Unpin,
{
    let (browser_sink, mut from_browser) = browser.split();
    let (tx, rx) = mpsc::channel(options.browser_queue.max(1));
    let mut writer = tokio::spawn(write_browser(browser_sink, rx, options.write_timeout));
    let queue = options.browser_queue.max(1);
    let mut to_browser = BrowserOut {
        tx: Some(tx),
        // A batch of model frames, plus as many again for what the session adds meanwhile.
        headroom: (2 * BATCH).min(queue),
    };
    let (mut to_model, mut from_model) = model.split();
    if to_model
        .send(Message::text(session.session_update()))
        .await
        .is_err()
    {
        let _ = to_browser.send(relay_error("the model connection closed"));
        to_browser.close();
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
    let ended = loop {
        tokio::select! {
            msg = from_model.next(), if to_browser.has_room() => {
                let (side, source) = (Side::Model, &mut from_model);
                let batch = relay_batch(&mut session, side, msg, source, &mut to_browser, &mut to_model);
                if let Err(who) = batch.await {
                    break who;
                }
            }
            msg = from_browser.next() => {
                last_heard = Instant::now();
                if let Some(Err(e)) = &msg {
                    refuse_browser_error(e, &mut to_browser, options);
                }
                let (side, source) = (Side::Browser, &mut from_browser);
                let batch = relay_batch(&mut session, side, msg, source, &mut to_browser, &mut to_model);
                if let Err(who) = batch.await {
                    break who;
                }
            }
            () = to_browser.room(), if !to_browser.has_room() => {}
            Some(event) = events.recv() => {
                session.on_event(event);
                while let Some(event) = events.try_recv() {
                    session.on_event(event);
                }
                if let Err(who) = flush(&mut session, &mut to_browser, &mut to_model, false).await {
                    break who;
                }
            }
            _ = ping.tick(), if options.ping_interval.is_some() => {
                if to_browser.send(Message::Ping(Default::default())).is_err() {
                    options.count(|s| &s.stalled_browsers);
                    break Ended::Browser;
                }
            }
            () = &mut idle_timer, if idle.is_some() => {
                let idle_at = last_heard + idle.unwrap_or(far);
                if idle_at > Instant::now() {
                    // The browser spoke since the timer was set: wait for the new deadline.
                    idle_timer.as_mut().reset(idle_at);
                    continue;
                }
                options.count(|s| &s.idle_browsers);
                tracing::info!("browser idle: disconnected");
                let _ = to_browser.send(Message::Close(Some(CloseFrame {
                    code: CloseCode::Policy,
                    reason: "idle".into(),
                })));
                break Ended::Browser;
            }
            _ = &mut writer => {
                // The writer gave up: the browser stopped reading or its connection failed.
                options.count(|s| &s.stalled_browsers);
                tracing::warn!("browser stopped reading: disconnected");
                break Ended::Browser;
            }
        }
    };
    match ended {
        Ended::Browser => {
            // Fail the browser's open calls now and let their results reach the model before
            // the model connection closes.
            to_browser.close();
            session.browser_closed();
            let until = Instant::now() + options.close_grace;
            while session.open_calls() > 0 {
                match tokio::time::timeout_at(until, events.recv()).await {
                    Ok(Some(event)) => session.on_event(event),
                    _ => break,
                }
            }
            for out in session.drain_outputs() {
                if let Output::ToModel(text) = out {
                    if to_model.feed(Message::text(text)).await.is_err() {
                        break;
                    }
                }
            }
            let _ = to_model.close().await;
        }
        Ended::Model => {
            session.browser_closed();
            to_browser.close();
        }
    }
    ended
}

/// A browser frame that broke the protocol or the limits: counted, and answered with a close
/// frame (1009 for a message over the size limit, 1002 otherwise) before the session ends.
fn refuse_browser_error(error: &WsError, to_browser: &mut BrowserOut, options: &DriveOptions) {
    if matches!(
        error,
        WsError::ConnectionClosed | WsError::AlreadyClosed | WsError::Io(_)
    ) {
        return;
    }
    options.count(|s| &s.browser_protocol_errors);
    tracing::warn!(error = %error, "browser broke the websocket protocol or the limits");
    let code = if matches!(error, WsError::Capacity(_)) {
        CloseCode::Size
    } else {
        CloseCode::Protocol
    };
    let _ = to_browser.send(Message::Close(Some(CloseFrame {
        code,
        reason: "the relay refused this message".into(),
    })));
}

/// Frames for the browser, queued for its writer task. Sending never waits: a full queue means
/// the browser stopped reading. The model's frames are read only while the queue has room for
/// a batch ([`BrowserOut::has_room`]), so a burst from the model (audio arrives faster than
/// real time) waits for a slow but live browser instead of overflowing its queue, while the
/// session's own work (deadlines, results, the browser's events) goes on.
struct BrowserOut {
    tx: Option<mpsc::Sender<Message>>,
    /// Free places the queue must have before another batch from the model is read.
    headroom: usize,
}

impl BrowserOut {
    fn has_room(&self) -> bool {
        self.tx
            .as_ref()
            .is_none_or(|tx| tx.capacity() >= self.headroom)
    }

    /// Resolves once the queue has room for a batch again.
    async fn room(&self) {
        if let Some(tx) = &self.tx {
            // The permits are given back at once: this only waits for the writer to catch up.
            let _ = tx.reserve_many(self.headroom).await;
        }
    }

    fn send(&mut self, msg: Message) -> Result<(), Ended> {
        match &self.tx {
            Some(tx) => tx.try_send(msg).map_err(|_| Ended::Browser),
            None => Err(Ended::Browser),
        }
    }

    /// Lets the writer send what is queued, then close the connection.
    fn close(&mut self) {
        self.tx = None;
    }
}

/// Writes queued frames to the browser, flushing once per burst; ends when a write takes longer
/// than `write_timeout` or fails, after a close frame, or when the session closed the queue.
async fn write_browser<S>(mut sink: S, mut rx: mpsc::Receiver<Message>, write_timeout: Duration)
where
    S: Sink<Message, Error = WsError> + Unpin,
{
    while let Some(first) = rx.recv().await {
        let burst = async {
            let mut closing = matches!(first, Message::Close(_));
            sink.feed(first).await?;
            while !closing {
                match rx.try_recv() {
                    Ok(msg) => {
                        closing = matches!(msg, Message::Close(_));
                        sink.feed(msg).await?;
                    }
                    Err(_) => break,
                }
            }
            sink.flush().await.map(|()| closing)
        };
        // Most bursts complete at once (the socket is writable): only one that has to wait
        // arms the write deadline, which saves a timer registration per burst.
        let mut burst = std::pin::pin!(burst);
        let written = match (&mut burst).now_or_never() {
            Some(done) => Ok(done),
            None => tokio::time::timeout(write_timeout, burst).await,
        };
        match written {
            Ok(Ok(false)) => {}
            Ok(Ok(true)) | Ok(Err(_)) | Err(_) => return,
        }
    }
    let _ = tokio::time::timeout(write_timeout, sink.close()).await;
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
/// names the side whose connection failed or closed.
async fn relay_batch<R, M>(
    session: &mut Session,
    from: Side,
    first: Option<Result<Message, WsError>>,
    source: &mut R,
    to_browser: &mut BrowserOut,
    to_model: &mut M,
) -> Result<(), Ended>
where
    R: Stream<Item = Result<Message, WsError>> + Unpin,
    M: Sink<Message, Error = WsError> + Unpin,
{
    let mut next = first;
    let mut relayed = 0;
    loop {
        match next {
            // The model's close code (a policy violation, a server error) reaches the page.
            Some(Ok(Message::Close(Some(frame)))) if from == Side::Model => {
                let _ = to_browser.send(Message::Close(Some(frame)));
                return Err(Ended::Model);
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
    flush(session, to_browser, to_model, from == Side::Browser).await
}

/// One frame to the other side, as the session decides; `Err` names the side whose connection
/// failed.
async fn relay_frame<M>(
    session: &mut Session,
    from: Side,
    msg: Message,
    to_browser: &mut BrowserOut,
    to_model: &mut M,
) -> Result<(), Ended>
where
    M: Sink<Message, Error = WsError> + Unpin,
{
    let out = match msg {
        Message::Text(text) => {
            let verdict = match from {
                Side::Model => session.on_model_event(text.as_str()),
                Side::Browser => session.on_browser_event(text.as_str()),
            };
            match verdict {
                Verdict::Forward => Message::Text(text),
                Verdict::Replace(t) => Message::text(t),
                Verdict::Drop => return Ok(()),
            }
        }
        Message::Binary(_) if from == Side::Browser => {
            session.on_browser_binary();
            return Ok(());
        }
        Message::Binary(b) => Message::Binary(b),
        // tungstenite answers pings itself; close frames end the batch in the caller.
        Message::Ping(_) | Message::Pong(_) | Message::Frame(_) | Message::Close(_) => {
            return Ok(())
        }
    };
    match from {
        Side::Model => to_browser.send(out),
        Side::Browser => to_model.feed(out).await.map_err(|_| Ended::Model),
    }
}

/// Sends what the session queued, then flushes the model side if it was written to
/// (`model_dirty`: the caller fed it); `Err` names the side whose connection failed.
async fn flush<M>(
    session: &mut Session,
    to_browser: &mut BrowserOut,
    to_model: &mut M,
    mut model_dirty: bool,
) -> Result<(), Ended>
where
    M: Sink<Message, Error = WsError> + Unpin,
{
    let mut browser_ok = true;
    while let Some(out) = session.pop_output() {
        match out {
            Output::ToModel(t) => {
                model_dirty = true;
                to_model
                    .feed(Message::text(t))
                    .await
                    .map_err(|_| Ended::Model)?
            }
            Output::ToBrowser(t) => {
                if browser_ok && to_browser.send(Message::text(t)).is_err() {
                    browser_ok = false;
                }
            }
        }
    }
    // Flush only when written to: a flush is a write syscall when frames are buffered.
    if model_dirty {
        to_model.flush().await.map_err(|_| Ended::Model)?;
    }
    if !browser_ok {
        return Err(Ended::Browser);
    }
    Ok(())
}
