//! The websocket relay (feature `relay`): browsers connect at `ws://HOST:PORT/`; for each one the
//! relay opens the upstream model websocket, sends the tool declarations in `session.update`,
//! runs a [`RealtimeSession`](toolc_realtime::RealtimeSession) between the two, and forwards every other event both ways, unchanged and
//! in order.
//!
//! - The API key goes upstream only, as `Authorization: Bearer KEY`.
//! - `?naming=tool` in the browser's URL selects the `tool.call` / `tool.result` naming.
//! - Each browser has its own task: whatever one browser or its model connection sends (any
//!   bytes, any JSON), other sessions are unaffected.
//! - A `wss://` upstream (OpenAI's endpoint, the default) needs the `tls` feature (rustls with the
//!   webpki roots); without it only `ws://` upstreams connect, and a `wss://` one fails with an
//!   `error` event to the browser.
#![warn(missing_docs)]

// The kernel's items at this crate's root, where `toolc-runtime` has them too, so that a path
// reads the same in every crate of the runtime (`crate::Registry`, `crate::dispatch::ToolCall`).
#[allow(unused_imports)]
use toolc_kernel::*;

pub mod auth;
mod drive;
mod page;
mod resume;
mod service;
#[cfg(feature = "testing")]
pub mod testing;

pub use auth::{Authorizer, Handshake, Refusal, StaticTokens};
/// The axum the relay is built on, so an app mounting [`RelayService::router`] needs no
/// `axum` dependency of its own (or can match this version exactly).
pub use axum;
pub use drive::{
    run_session, run_session_resumable, run_session_with, DriveOptions, Ended, Socket,
};
pub use service::RelayService;

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::http::Request;
use hyper::body::Incoming;
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::MaybeTlsStream;

use crate::Registry;
use toolc_realtime::{RealtimeProvider, SessionConfig};

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
    /// after it (and its session held for [`RelayLimits::resume_grace`], as for any page that
    /// left), and never holds up what the session sends to the model.
    pub write_timeout: Duration,
    /// Bytes queued for a page: one that reads slowly, stopped reading, or is away while its
    /// session is held. Past it the oldest audio frames are dropped and counted
    /// ([`RelayStats::page_audio_dropped`]), never anything else (a call, a cancellation, an
    /// approval request, a transcript); with no audio left to drop, the model's frames wait in
    /// their socket until the page catches up.
    pub page_buffer_bytes: usize,
    /// How long a session whose page's connection dropped keeps its model connection and its
    /// calls, waiting for the page to resume with its token (`?resume=TOKEN`); zero ends a
    /// session when its page leaves. A page that closes with code 1000 (or none) hung up and is
    /// not waited for.
    pub resume_grace: Duration,
    /// Sessions held at once without a page; a page that leaves when this many are held ends
    /// its session.
    pub max_held_sessions: usize,
    /// Bytes of a page's input held while the model is not ready for it (before Gemini Live's
    /// `setupComplete`, and while a session moves to a new model connection). Past it the
    /// oldest held page audio is dropped and counted ([`RelayStats::held_input_dropped`]);
    /// nothing else is (results, the page's text turns).
    pub held_input_bytes: usize,
    /// After a Gemini Live `goAway`, the session moves to a new connection at the first point
    /// it can be resumed from, or this long before the time the server said was left.
    pub go_away_margin: Duration,
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
            // About 30 s of 24 kHz PCM audio in base64.
            page_buffer_bytes: 2 << 20,
            resume_grace: Duration::from_secs(30),
            max_held_sessions: 250,
            // About 45 s of 16 kHz PCM audio in base64, more than a reconnection takes.
            held_input_bytes: 2 << 20,
            go_away_margin: Duration::from_secs(2),
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
    /// This relay's name in resume tokens (`RELAYID.SECRET`), so that a balancer in front of
    /// several relays can send a page that resumes to the relay that holds its session: set it
    /// to the name the balancer knows the relay by (letters, digits, `-`, `_`; at most 32).
    /// Random by default.
    pub relay_id: String,
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
            .field("relay_id", &self.relay_id)
            .finish_non_exhaustive()
    }
}

impl RelayConfig {
    /// A relay to OpenAI Realtime for the registry's tools, with the default limits, no
    /// authorizer and any origin allowed.
    pub fn new(registry: &Registry) -> RelayConfig {
        RelayConfig::for_provider(registry, RealtimeProvider::OpenAi)
    }

    /// The model the relay's sessions talk to. OpenAI's is the upstream URL's `model` query
    /// parameter (`gpt-realtime-2.1` by default); Live's is `setup.model`
    /// (`models/gemini-3.8-live` by default; on Vertex AI a resource name from
    /// [`gemini_live::vertex_model`](toolc_realtime::gemini_live::vertex_model)); GPT-Live's
    /// is `session.start`'s `session.model` (`gpt-live-1` by default).
    pub fn model(mut self, model: impl Into<String>) -> RelayConfig {
        let model = model.into();
        if self.session.provider.model_in_first_message() {
            let mut session = (*self.session).clone();
            session.session.insert("model".into(), json!(model));
            self.session = Arc::new(session);
            return self;
        }
        let (base, query) = self
            .upstream
            .split_once('?')
            .unwrap_or((self.upstream.as_str(), ""));
        let mut params: Vec<&str> = query
            .split('&')
            .filter(|p| !p.is_empty() && !p.starts_with("model="))
            .collect();
        let model_param = format!("model={model}");
        params.insert(0, &model_param);
        self.upstream = format!("{base}?{}", params.join("&"));
        self
    }

    /// The model's websocket URL (a region's Vertex endpoint, a proxy, a test server).
    pub fn upstream(mut self, url: impl Into<String>) -> RelayConfig {
        self.upstream = url.into();
        self
    }

    /// A relay to `provider` (its public endpoint, its declarations of the registry's tools);
    /// everything else as [`RelayConfig::new`].
    pub fn for_provider(registry: &Registry, provider: RealtimeProvider) -> RelayConfig {
        RelayConfig {
            upstream: provider.default_url().to_owned(),
            api_key: None,
            session: Arc::new(SessionConfig::for_provider(registry, provider)),
            close_grace: Duration::from_millis(200),
            authorizer: None,
            allowed_origins: None,
            limits: RelayLimits::default(),
            relay_id: resume::random_relay_id(),
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
    /// The relay is draining ([`RelayService::drain`], 503).
    pub refused_draining: AtomicU64,
    /// Sessions that ended because the model connection could not be opened.
    pub upstream_failures: AtomicU64,
    /// Browsers disconnected because they stopped reading (a write timed out).
    pub stalled_browsers: AtomicU64,
    /// Audio frames for a page dropped, oldest first, because more was queued for it than
    /// [`RelayLimits::page_buffer_bytes`].
    pub page_audio_dropped: AtomicU64,
    /// Sessions held after their page's connection dropped (or stalled), waiting for a resume.
    pub pages_held: AtomicU64,
    /// Pages that resumed their session with a token.
    pub pages_resumed: AtomicU64,
    /// Held sessions that ended because their page did not come back within the grace window.
    pub held_expired: AtomicU64,
    /// Resumes refused (another user's token, a used one, an expired one, one this relay does
    /// not hold).
    pub refused_resume: AtomicU64,
    /// Pages that named a conversation (`?conversation=ID`) the relay could not take: an id
    /// that is not one, or no authenticated principal to keep it under (400).
    pub refused_conversation: AtomicU64,
    /// Browsers disconnected after `idle_timeout` without a frame.
    pub idle_browsers: AtomicU64,
    /// Browsers disconnected for a protocol error: a frame or message over the limits, bad
    /// framing, invalid UTF-8 in a text frame.
    pub browser_protocol_errors: AtomicU64,
    /// Page audio frames dropped, oldest first, because more input was held for a model that
    /// was not ready than [`RelayLimits::held_input_bytes`].
    pub held_input_dropped: AtomicU64,
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

    /// The service behind the relay: keep a clone to [`RelayService::drain`] it while
    /// [`Relay::serve`] runs.
    pub fn service(&self) -> &RelayService {
        &self.service
    }

    /// Accepts browsers at `/` until the future is dropped.
    pub async fn serve(self) {
        let router = self.service.router();
        self.serve_with(router).await
    }

    /// Serves `router` (one that mounts this relay's [`RelayService`], beside routes of the
    /// application's own) with the relay's connection handling: the peer's address for the
    /// authorizer, the handshake's header timeout, upgrades. Until the future is dropped.
    pub async fn serve_with(self, router: axum::Router) {
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
    upstream_request_for(RealtimeProvider::OpenAi, url, api_key)
}

/// The request for the upstream connection to `provider`, with the API key in the header that
/// provider reads.
pub fn upstream_request_for(
    provider: RealtimeProvider,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_goes_where_each_provider_reads_it() {
        let registry = Registry::builder().build().unwrap();
        let openai = RelayConfig::new(&registry).model("gpt-realtime-2.1-mini");
        assert_eq!(
            openai.upstream,
            "wss://api.openai.com/v1/realtime?model=gpt-realtime-2.1-mini"
        );
        let proxied = RelayConfig::new(&registry)
            .upstream("ws://127.0.0.1:9/v1/realtime?x=1&model=old")
            .model("new");
        assert_eq!(
            proxied.upstream,
            "ws://127.0.0.1:9/v1/realtime?model=new&x=1"
        );
        let bare = RelayConfig::new(&registry)
            .upstream("ws://127.0.0.1:9/rt")
            .model("m");
        assert_eq!(bare.upstream, "ws://127.0.0.1:9/rt?model=m");
        let live =
            RelayConfig::for_provider(&registry, RealtimeProvider::GeminiLive).model("models/x");
        assert_eq!(live.session.session["model"], "models/x");
        assert_eq!(live.upstream, RealtimeProvider::GeminiLive.default_url());
    }
}
