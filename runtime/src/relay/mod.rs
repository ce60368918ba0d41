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

#[cfg(feature = "testing")]
pub mod testing;

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_util::{FutureExt, Sink, SinkExt, Stream, StreamExt};
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::{HeaderValue, StatusCode};
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::MaybeTlsStream;

use crate::realtime::{openai, Naming, Output, Session, SessionConfig, SessionEvents, Verdict};
use crate::Registry;

/// How many already-received frames are forwarded before the writes are flushed: batching the
/// flush saves a syscall per frame under load without delaying a lone frame.
const BATCH: usize = 64;

/// Relay settings.
#[derive(Clone, Debug)]
pub struct RelayConfig {
    /// The model's websocket URL (OpenAI's GA endpoint by default).
    pub upstream: String,
    /// Sent upstream as `Authorization: Bearer KEY`; never to the browser.
    pub api_key: Option<String>,
    /// Settings of every session; its counters are shared by all sessions of the relay.
    pub session: Arc<SessionConfig>,
    /// After a browser leaves, how long its session may still send the failed results of its
    /// open calls upstream before the model connection is closed.
    pub close_grace: Duration,
}

impl RelayConfig {
    pub fn new(registry: &Registry) -> RelayConfig {
        RelayConfig {
            upstream: openai::DEFAULT_URL.to_owned(),
            api_key: None,
            session: Arc::new(SessionConfig::new(registry)),
            close_grace: Duration::from_millis(200),
        }
    }
}

/// Relay-wide counters (per-call counters are in [`SessionConfig::counters`]).
#[derive(Debug, Default)]
pub struct RelayStats {
    pub sessions_opened: AtomicU64,
    pub sessions_active: AtomicU64,
    /// Browser handshakes refused (wrong path, not a websocket).
    pub handshakes_refused: AtomicU64,
    /// Sessions that ended because the model connection could not be opened.
    pub upstream_failures: AtomicU64,
}

/// A bound relay; [`Relay::serve`] runs it.
#[derive(Debug)]
pub struct Relay {
    listener: TcpListener,
    registry: Arc<Registry>,
    config: Arc<RelayConfig>,
    stats: Arc<RelayStats>,
}

impl Relay {
    pub async fn bind(
        addr: impl tokio::net::ToSocketAddrs,
        registry: Arc<Registry>,
        config: RelayConfig,
    ) -> io::Result<Relay> {
        Ok(Relay {
            listener: TcpListener::bind(addr).await?,
            registry,
            config: Arc::new(config),
            stats: Arc::new(RelayStats::default()),
        })
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    pub fn stats(&self) -> Arc<RelayStats> {
        self.stats.clone()
    }

    /// Accepts browsers until the future is dropped.
    pub async fn serve(self) {
        loop {
            let (stream, _) = match self.listener.accept().await {
                Ok(conn) => conn,
                // Out of file descriptors and similar: back off instead of spinning.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let registry = self.registry.clone();
            let config = self.config.clone();
            let stats = self.stats.clone();
            tokio::spawn(async move {
                let _ = stream.set_nodelay(true);
                handle_browser(stream, registry, config, stats).await;
            });
        }
    }
}

/// Checks the path and reads `?naming=`; anything but `/` is refused with 404.
// The error type is tungstenite's handshake callback contract.
#[allow(clippy::result_large_err)]
fn browser_handshake(request: &Request, naming: &mut Naming) -> Result<(), ErrorResponse> {
    if request.uri().path() != "/" {
        let mut response = ErrorResponse::new(Some("browsers connect at /".to_owned()));
        *response.status_mut() = StatusCode::NOT_FOUND;
        return Err(response);
    }
    if let Some(query) = request.uri().query() {
        for pair in query.split('&') {
            if let Some(value) = pair.strip_prefix("naming=") {
                if let Some(n) = Naming::parse(value) {
                    *naming = n;
                }
            }
        }
    }
    Ok(())
}

/// The request for the upstream connection, with the API key.
pub fn upstream_request(
    url: &str,
    api_key: Option<&str>,
) -> Result<tokio_tungstenite::tungstenite::handshake::client::Request, WsError> {
    let mut request = url.into_client_request()?;
    if let Some(key) = api_key {
        let value = HeaderValue::from_str(&format!("Bearer {key}"))
            .map_err(|e| WsError::HttpFormat(e.into()))?;
        request.headers_mut().insert("authorization", value);
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

// The handshake callback's error type is tungstenite's contract.
#[allow(clippy::result_large_err)]
async fn handle_browser(
    stream: TcpStream,
    registry: Arc<Registry>,
    config: Arc<RelayConfig>,
    stats: Arc<RelayStats>,
) {
    let mut naming = config.session.naming;
    let accepted = tokio_tungstenite::accept_hdr_async(stream, |req: &Request, resp: Response| {
        browser_handshake(req, &mut naming).map(|()| resp)
    })
    .await;
    let mut browser = match accepted {
        Ok(ws) => ws,
        Err(_) => {
            stats.handshakes_refused.fetch_add(1, Ordering::Relaxed);
            return;
        }
    };
    let upstream = match upstream_request(&config.upstream, config.api_key.as_deref()) {
        Ok(request) => connect_upstream(request).await,
        Err(e) => Err(e),
    };
    let upstream = match upstream {
        Ok(ws) => ws,
        Err(e) => {
            stats.upstream_failures.fetch_add(1, Ordering::Relaxed);
            // The error names the URL's problem, never the key.
            let _ = browser
                .send(relay_error(&format!(
                    "the relay could not reach the model: {e}"
                )))
                .await;
            let _ = browser.close(None).await;
            return;
        }
    };
    if let MaybeTlsStream::Plain(tcp) = upstream.get_ref() {
        let _ = tcp.set_nodelay(true);
    }
    stats.sessions_opened.fetch_add(1, Ordering::Relaxed);
    stats.sessions_active.fetch_add(1, Ordering::Relaxed);
    let (mut session, events) = Session::new(registry, config.session.clone());
    session.set_naming(naming);
    run_session(session, events, browser, upstream, config.close_grace).await;
    stats.sessions_active.fetch_sub(1, Ordering::Relaxed);
}

/// Who ended a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    Browser,
    Model,
}

/// Runs one session between two connected websockets until either side goes away. Usable with
/// any pair of message streams (a test may pass in its own).
pub async fn run_session<B, M>(
    mut session: Session,
    mut events: SessionEvents,
    browser: B,
    model: M,
    close_grace: Duration,
) -> Ended
where
    B: Stream<Item = Result<Message, WsError>> + Sink<Message, Error = WsError> + Unpin,
    M: Stream<Item = Result<Message, WsError>> + Sink<Message, Error = WsError> + Unpin,
{
    let (mut to_browser, mut from_browser) = browser.split();
    let (mut to_model, mut from_model) = model.split();
    if to_model
        .send(Message::text(session.session_update()))
        .await
        .is_err()
    {
        let _ = to_browser
            .send(relay_error("the model connection closed"))
            .await;
        let _ = to_browser.close().await;
        return Ended::Model;
    }
    let ended = loop {
        tokio::select! {
            msg = from_model.next() => {
                let (side, source) = (Side::Model, &mut from_model);
                let batch = relay_batch(&mut session, side, msg, source, &mut to_browser, &mut to_model);
                if let Err(who) = batch.await {
                    break who;
                }
            }
            msg = from_browser.next() => {
                let (side, source) = (Side::Browser, &mut from_browser);
                let batch = relay_batch(&mut session, side, msg, source, &mut to_browser, &mut to_model);
                if let Err(who) = batch.await {
                    break who;
                }
            }
            Some(event) = events.recv() => {
                session.on_event(event);
                while let Some(event) = events.try_recv() {
                    session.on_event(event);
                }
                if let Err(who) = flush(&mut session, &mut to_browser, &mut to_model, (false, false)).await {
                    break who;
                }
            }
        }
    };
    match ended {
        Ended::Browser => {
            // Fail the browser's open calls now and let their results reach the model before
            // the model connection closes.
            session.browser_closed();
            let until = tokio::time::Instant::now() + close_grace;
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
            let _ = to_browser.close().await;
        }
    }
    ended
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
/// one busy side cannot starve the other), then flushes the side written to. `Err` names the
/// side whose connection failed or closed.
async fn relay_batch<R, B, M>(
    session: &mut Session,
    from: Side,
    first: Option<Result<Message, WsError>>,
    source: &mut R,
    to_browser: &mut B,
    to_model: &mut M,
) -> Result<(), Ended>
where
    R: Stream<Item = Result<Message, WsError>> + Unpin,
    B: Sink<Message, Error = WsError> + Unpin,
    M: Sink<Message, Error = WsError> + Unpin,
{
    let mut next = first;
    let mut relayed = 0;
    loop {
        match next {
            None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return Err(from.ended()),
            Some(Ok(m)) => relay_frame(session, from, m, to_browser, to_model).await?,
        }
        relayed += 1;
        if relayed == BATCH {
            break;
        }
        match source.next().now_or_never() {
            Some(m) => next = m,
            None => break,
        }
    }
    let dirty = match from {
        Side::Model => (true, false),
        Side::Browser => (false, true),
    };
    flush(session, to_browser, to_model, dirty).await
}

/// One frame to the other side, as the session decides; `Err` names the side whose connection
/// failed.
async fn relay_frame<B, M>(
    session: &mut Session,
    from: Side,
    msg: Message,
    to_browser: &mut B,
    to_model: &mut M,
) -> Result<(), Ended>
where
    B: Sink<Message, Error = WsError> + Unpin,
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
        Message::Binary(b) => Message::Binary(b),
        // tungstenite answers pings itself; close frames end the batch in the caller.
        Message::Ping(_) | Message::Pong(_) | Message::Frame(_) | Message::Close(_) => {
            return Ok(())
        }
    };
    match from {
        Side::Model => to_browser.feed(out).await.map_err(|_| Ended::Browser),
        Side::Browser => to_model.feed(out).await.map_err(|_| Ended::Model),
    }
}

/// Sends what the session queued, then flushes the sides that were written to (`dirty` says
/// which the caller fed: browser, model); `Err` names the side whose
/// connection failed.
async fn flush<B, M>(
    session: &mut Session,
    to_browser: &mut B,
    to_model: &mut M,
    (mut browser_dirty, mut model_dirty): (bool, bool),
) -> Result<(), Ended>
where
    B: Sink<Message, Error = WsError> + Unpin,
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
                browser_dirty = true;
                if browser_ok && to_browser.feed(Message::text(t)).await.is_err() {
                    browser_ok = false;
                }
            }
        }
    }
    // Flush only the sides written to: a flush is a write syscall when frames are buffered.
    if model_dirty {
        to_model.flush().await.map_err(|_| Ended::Model)?;
    }
    if !browser_ok || (browser_dirty && to_browser.flush().await.is_err()) {
        return Err(Ended::Browser);
    }
    Ok(())
}
