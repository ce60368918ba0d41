//! The relay's HTTP side: the websocket handshake as an axum handler. It checks, in order, that
//! the request is a websocket upgrade, the page's `Origin`, the session limits and the
//! authorizer; only then does it answer 101 and open the model connection. A refused browser
//! costs no upstream connection and no model session.
//!
//! The upgrade is taken from hyper directly (not through axum's `WebSocketUpgrade`) so that the
//! browser's frames stay tungstenite messages end to end: pass-through forwards them without
//! converting or copying.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::json;
use tokio::sync::watch;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};
use tokio_tungstenite::WebSocketStream;

use super::auth::{origin_allowed, Handshake, Refusal, BEARER_SUBPROTOCOL_PREFIX, SUBPROTOCOL};
use super::drive::{run_session_held, HeldSession, PageReturn};
use super::resume::{clean_relay_id, Comeback, Resumes};
use super::{
    connect_upstream, relay_error, upstream_request_for, DriveOptions, RelayConfig, RelayLimits,
    RelayStats, UpstreamSocket,
};
use crate::context::{Principal, SessionScope};
use crate::Registry;
use toolc_realtime::{Naming, RealtimeSession};

/// The relay as a service of an axum application: [`RelayService::router`] answers at `/` of
/// wherever it is nested, and [`RelayService::handle`] serves one request from a handler of
/// the application's own (to run extractors first).
#[derive(Clone, Debug)]
pub struct RelayService {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    registry: Arc<Registry>,
    config: RelayConfig,
    stats: Arc<RelayStats>,
    /// Open sessions by principal id, for `max_sessions_per_principal`.
    per_principal: Mutex<HashMap<Arc<str>, usize>>,
    /// The drain deadline once [`RelayService::drain`] was called: sessions watch it, and
    /// handshakes are refused.
    drain: watch::Sender<Option<tokio::time::Instant>>,
    /// Sessions a page may resume, by token.
    resumes: Arc<Resumes<PageSocket>>,
}

/// Chooses a handshake's upstream URL once it is authorized ([`RelayService::handle_at`]).
type ChooseUpstream<'a> =
    Box<dyn FnOnce(Option<&Principal>) -> Result<String, Refusal> + Send + 'a>;

/// A page's websocket, as the relay accepts it.
type PageSocket = WebSocketStream<hyper_util::rt::TokioIo<hyper::upgrade::Upgraded>>;

/// One session's entry in the relay's [`Resumes`].
struct HeldBy {
    resumes: Arc<Resumes<PageSocket>>,
    key: u64,
}

impl HeldSession for HeldBy {
    fn hold(&self) -> bool {
        self.resumes.hold(self.key)
    }

    fn back(&self) {
        self.resumes.back(self.key)
    }

    fn ended(&self, expired: bool) {
        self.resumes.ended(self.key, expired)
    }
}

impl RelayService {
    /// A service relaying browsers to the model for `registry`, as `config` says.
    pub fn new(registry: Arc<Registry>, mut config: RelayConfig) -> RelayService {
        config.relay_id = clean_relay_id(&config.relay_id);
        let resumes = Resumes::new(config.relay_id.clone(), config.limits.max_held_sessions);
        RelayService {
            inner: Arc::new(Inner {
                registry,
                config,
                stats: Arc::new(RelayStats::default()),
                per_principal: Mutex::new(HashMap::new()),
                drain: watch::channel(None).0,
                resumes: Arc::new(resumes),
            }),
        }
    }

    /// The relay's id in resume tokens ([`RelayConfig::relay_id`]).
    pub fn relay_id(&self) -> &str {
        self.inner.resumes.relay_id()
    }

    /// Sessions held now without a page, waiting for it to resume.
    pub fn pages_away(&self) -> usize {
        self.inner.resumes.away()
    }

    /// The service's counters, shared by every session it serves.
    pub fn stats(&self) -> Arc<RelayStats> {
        self.inner.stats.clone()
    }

    /// Drains the relay, as on a deploy (the example relay does it on SIGTERM): from now on
    /// handshakes are refused (503, so a balancer sends the page elsewhere); every page gets a
    /// `toolc.drain` event (`deadline_ms`: finish, then reconnect); each session ends once its
    /// calls in flight have finished and their results reached the model, or at `deadline`,
    /// when its open calls end as the page's leaving ends them (a failed result for the model,
    /// within the close grace), and the page gets close code 1012. Returns when every session
    /// has ended, or shortly after the deadline.
    pub async fn drain(&self, deadline: Duration) {
        let inner = &self.inner;
        let until = tokio::time::Instant::now() + deadline;
        inner.drain.send_replace(Some(until));
        tracing::info!(
            sessions = inner
                .stats
                .sessions_active
                .load(std::sync::atomic::Ordering::Relaxed),
            ?deadline,
            "relay draining"
        );
        let give_up = until + inner.config.close_grace + Duration::from_secs(1);
        while inner
            .stats
            .sessions_active
            .load(std::sync::atomic::Ordering::Relaxed)
            > 0
            && tokio::time::Instant::now() < give_up
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Whether [`RelayService::drain`] was called.
    pub fn is_draining(&self) -> bool {
        self.inner.drain.borrow().is_some()
    }

    /// The limits the service enforces.
    pub fn limits(&self) -> &RelayLimits {
        &self.inner.config.limits
    }

    /// A router that upgrades `GET /` to a relay session; mount it with
    /// `app.nest_service("/voice", relay.router())` or `Router::merge`.
    pub fn router(&self) -> Router {
        let service = self.clone();
        let stats = self.stats();
        Router::new()
            .route(
                "/",
                axum::routing::any(move |request: Request| {
                    let service = service.clone();
                    async move { service.handle(request).await }
                }),
            )
            .fallback(move || {
                RelayStats::bump(&stats.handshakes_refused);
                RelayStats::bump(&stats.refused_not_websocket);
                std::future::ready(refusal_response(&Refusal::with_status(
                    StatusCode::NOT_FOUND,
                    "browsers connect at /",
                )))
            })
    }

    /// Serves one browser request: a 101 and a relay session, or a refusal.
    pub async fn handle(&self, request: Request) -> Response {
        self.handle_inner(request, None).await
    }

    /// Serves one browser request as [`RelayService::handle`] does, but the model connection
    /// goes to the URL `upstream` returns: called once the page has passed the origin rule, the
    /// drain and the authorizer, with the principal it was authorized as. A refusal from it is
    /// the handshake's answer (counted as unauthorized). This is how a GPT-Live sideband's page
    /// reaches the session the server opened for it (the attach URL of a ticket the page was
    /// given, bound to its principal): the page names a ticket, never a session. A page
    /// resuming (`?resume=TOKEN`) goes back to its session and `upstream` is not called.
    pub async fn handle_at(
        &self,
        request: Request,
        upstream: impl FnOnce(Option<&Principal>) -> Result<String, Refusal> + Send,
    ) -> Response {
        self.handle_inner(request, Some(Box::new(upstream))).await
    }

    /// Whether a plain HTTP request (not a websocket) from a page may use the relay: the same
    /// origin rule, drain and authorizer as a handshake, counted the same way. Applications
    /// that serve a page something beside the relay's socket (the GPT-Live sideband's session
    /// creation) check it with this, so that both take the same users.
    pub async fn authorize(&self, handshake: Handshake) -> Result<Option<Principal>, Refusal> {
        let stats = &self.inner.stats;
        let peer = handshake.remote;
        self.admit(&handshake).await.map_err(|(counter, refusal)| {
            RelayStats::bump(&stats.handshakes_refused);
            RelayStats::bump(counter(stats));
            tracing::warn!(
                status = refusal.status().as_u16(),
                peer = ?peer,
                reason = refusal.message(),
                "relay request refused"
            );
            refusal
        })
    }

    /// The drain, the origin rule and the authorizer, in that order: the principal, or the
    /// refusal and the counter it goes to.
    async fn admit(
        &self,
        handshake: &Handshake,
    ) -> Result<Option<Principal>, (fn(&RelayStats) -> &std::sync::atomic::AtomicU64, Refusal)>
    {
        let inner = &self.inner;
        if self.is_draining() {
            let refusal = Refusal::with_status(
                StatusCode::SERVICE_UNAVAILABLE,
                "the relay is restarting; connect again (to another relay)",
            );
            return Err((|s| &s.refused_draining, refusal));
        }
        if let (Some(allowed), Some(origin)) = (&inner.config.allowed_origins, handshake.origin()) {
            if !origin_allowed(allowed, origin) {
                let refusal =
                    Refusal::forbidden(format!("pages from {origin} may not open relay sessions"));
                return Err((|s| &s.refused_origin, refusal));
            }
        }
        let Some(authorizer) = &inner.config.authorizer else {
            return Ok(None);
        };
        let decided = tokio::time::timeout(
            inner.config.limits.handshake_timeout,
            authorizer.authorize(handshake.clone()),
        )
        .await;
        match decided {
            Ok(Ok(principal)) => Ok(Some(principal)),
            Ok(Err(refusal)) => Err((|s| &s.refused_unauthorized, refusal)),
            Err(_) => {
                let refusal = Refusal::with_status(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the authorizer did not answer in time",
                );
                Err((|s| &s.refused_unauthorized, refusal))
            }
        }
    }

    async fn handle_inner(
        &self,
        mut request: Request,
        upstream: Option<ChooseUpstream<'_>>,
    ) -> Response {
        let inner = &self.inner;
        let stats = &inner.stats;
        let peer = request
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map(|c| c.0);
        let refuse = |counter: &std::sync::atomic::AtomicU64, refusal: Refusal| {
            RelayStats::bump(&stats.handshakes_refused);
            RelayStats::bump(counter);
            tracing::warn!(
                status = refusal.status().as_u16(),
                peer = ?peer,
                reason = refusal.message(),
                "relay handshake refused"
            );
            refusal_response(&refusal)
        };
        let key = match websocket_key(&request) {
            Ok(key) => key,
            Err(refusal) => return refuse(&stats.refused_not_websocket, refusal),
        };
        let handshake = Handshake {
            uri: request.uri().clone(),
            headers: request.headers().clone(),
            remote: request
                .extensions()
                .get::<ConnectInfo<SocketAddr>>()
                .map(|c| c.0),
        };
        let principal = match self.admit(&handshake).await {
            Ok(principal) => principal,
            Err((counter, refusal)) => return refuse(counter(stats), refusal),
        };
        if let Some(token) = handshake.query("resume") {
            let subprotocol = choose_subprotocol(&handshake);
            let Some(on_upgrade) = request
                .extensions_mut()
                .remove::<hyper::upgrade::OnUpgrade>()
            else {
                let refusal = Refusal::with_status(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "this server cannot upgrade connections to websockets",
                );
                return refuse(&stats.refused_not_websocket, refusal);
            };
            self.resume(on_upgrade, token, principal.as_ref());
            return upgraded(&key, subprotocol);
        }
        let upstream = match upstream.map(|choose| choose(principal.as_ref())) {
            None => None,
            Some(Ok(url)) => Some(url),
            Some(Err(refusal)) => return refuse(&stats.refused_unauthorized, refusal),
        };
        let conversation = match handshake.query("conversation") {
            None => None,
            Some(id) => match conversation_id(id, principal.as_ref()) {
                Ok(id) => Some(id),
                Err(refusal) => return refuse(&stats.refused_conversation, refusal),
            },
        };
        let slot = match self.take_slot(principal.as_ref()) {
            Ok(slot) => slot,
            Err(refusal) => return refuse(&stats.refused_capacity, refusal),
        };
        let mut naming = inner.config.session.naming;
        if let Some(n) = handshake.query("naming").and_then(Naming::parse) {
            naming = n;
        }
        let Some(on_upgrade) = request
            .extensions_mut()
            .remove::<hyper::upgrade::OnUpgrade>()
        else {
            // The server this handler runs in does not support upgrades (HTTP/2 without
            // extended CONNECT, or a test harness): a server problem, not the browser's.
            let refusal = Refusal::with_status(
                StatusCode::INTERNAL_SERVER_ERROR,
                "this server cannot upgrade connections to websockets",
            );
            return refuse(&stats.refused_not_websocket, refusal);
        };
        let subprotocol = choose_subprotocol(&handshake);
        let service = self.clone();
        tokio::spawn(async move {
            let Ok(upgraded) = on_upgrade.await else {
                return;
            };
            let browser = service.page_socket(upgraded).await;
            service
                .run(browser, principal, conversation, naming, slot, upstream)
                .await;
        });
        upgraded(&key, subprotocol)
    }

    async fn page_socket(&self, upgraded: hyper::upgrade::Upgraded) -> PageSocket {
        let limits = &self.inner.config.limits;
        let config = WebSocketConfig::default()
            .max_message_size(Some(limits.max_message_size))
            .max_frame_size(Some(limits.max_frame_size));
        WebSocketStream::from_raw_socket(
            hyper_util::rt::TokioIo::new(upgraded),
            Role::Server,
            Some(config),
        )
        .await
    }

    /// A page that comes back with `?resume=TOKEN`: its connection goes to the session the
    /// token names, or is closed at once with why not (see [`crate::resume`]).
    fn resume(
        &self,
        on_upgrade: hyper::upgrade::OnUpgrade,
        token: &str,
        principal: Option<&Principal>,
    ) {
        let resumes = &self.inner.resumes;
        let redeemed = resumes.redeem(token, principal.map(Principal::id));
        let refused = redeemed.as_ref().err().map(|why| {
            RelayStats::bump(&self.inner.stats.refused_resume);
            let reason = why.reason(resumes.relay_id(), token);
            tracing::info!(reason = %reason, "resume refused");
            CloseFrame {
                code: CloseCode::from(why.code()),
                reason: reason.into(),
            }
        });
        let service = self.clone();
        tokio::spawn(async move {
            let Ok(upgraded) = on_upgrade.await else {
                return;
            };
            let mut socket = service.page_socket(upgraded).await;
            let refused = match redeemed {
                Ok((_, token, pages)) => match pages.send(Comeback { socket, token }).await {
                    Ok(()) => return,
                    // The session ended meanwhile.
                    Err(gone) => {
                        socket = gone.0.socket;
                        CloseFrame {
                            code: CloseCode::from(4410),
                            reason:
                                "resume_ended: the conversation is over; start a new conversation"
                                    .into(),
                        }
                    }
                },
                Err(_) => refused.expect("a refusal has a close frame"),
            };
            let _ = socket.close(Some(refused)).await;
        });
    }

    /// Opens the model connection and runs the session until either side leaves.
    async fn run(
        &self,
        mut browser: PageSocket,
        principal: Option<Principal>,
        conversation: Option<String>,
        naming: Naming,
        _slot: SessionSlot,
        upstream: Option<String>,
    ) {
        use futures_util::SinkExt;
        let inner = &self.inner;
        let chosen;
        let config = match upstream {
            Some(url) => {
                chosen = RelayConfig {
                    upstream: url,
                    ..inner.config.clone()
                };
                &chosen
            }
            None => &inner.config,
        };
        let upstream = connect_model(config).await;
        let upstream = match upstream {
            Ok(ws) => ws,
            Err(e) => {
                RelayStats::bump(&inner.stats.upstream_failures);
                tracing::warn!(error = %e, "the relay could not reach the model");
                // The error names the URL's problem, never the key.
                let _ = browser
                    .send(relay_error(&format!(
                        "the relay could not reach the model: {e}"
                    )))
                    .await;
                // A close frame with a reason, so a page that missed the error event still
                // learns why (1011: the server could not go on).
                let _ = browser
                    .close(Some(CloseFrame {
                        code: CloseCode::Error,
                        reason: "the relay could not reach the model".into(),
                    }))
                    .await;
                return;
            }
        };
        set_nodelay(&upstream);
        RelayStats::bump(&inner.stats.sessions_opened);
        let (mut session, events) =
            RealtimeSession::new(inner.registry.clone(), config.session.clone());
        session.set_naming(naming);
        let mut scope = SessionScope::new().with_principal(principal);
        if let Some(id) = conversation {
            scope = scope.with_conversation_id(id);
        }
        // The session's span: every call span and event of the session nests in it.
        let span = tracing::info_span!(
            "toolc.session",
            "otel.name" = "realtime session",
            "gen_ai.provider.name" = config.session.provider.otel_name(),
            "gen_ai.conversation.id" = %scope.session_id(),
            session = %scope.session_id(),
            principal = scope.principal().map(|p| p.id()),
            ended_by = tracing::field::Empty,
        );
        session.set_scope(scope);
        let mut options = DriveOptions::from_config(config, Some(inner.stats.clone()));
        options.drain = Some(inner.drain.subscribe());
        let (key, token, pages) = inner
            .resumes
            .register(session.scope().principal().map(|p| Arc::from(p.id())));
        let page_return = PageReturn {
            pages,
            grace: config.limits.resume_grace,
            token,
            relay_id: inner.resumes.relay_id().to_owned(),
            held: Box::new(HeldBy {
                resumes: inner.resumes.clone(),
                key,
            }),
        };
        let ended = {
            use tracing::Instrument;
            // A Live session that must move to a new model connection opens it the same way,
            // after a short pause on a retry.
            let connect = |attempt: u32| {
                let config = config.clone();
                async move {
                    if attempt > 0 {
                        let pause = 250u64 << attempt.min(4);
                        tokio::time::sleep(std::time::Duration::from_millis(pause)).await;
                    }
                    connect_model(&config).await.inspect(set_nodelay)
                }
            };
            run_session_held(
                session,
                events,
                browser,
                upstream,
                connect,
                &options,
                page_return,
            )
            .instrument(span.clone())
            .await
        };
        span.record(
            "ended_by",
            match ended {
                super::Ended::Browser => "browser",
                super::Ended::Model => "model",
                super::Ended::Drained => "drain",
            },
        );
    }

    /// Counts a session against the limits, or refuses it.
    fn take_slot(&self, principal: Option<&Principal>) -> Result<SessionSlot, Refusal> {
        let inner = &self.inner;
        let limits = &inner.config.limits;
        let active = inner
            .stats
            .sessions_active
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut slot = SessionSlot {
            service: self.clone(),
            principal: None,
        };
        if active >= limits.max_sessions as u64 {
            return Err(Refusal::with_status(
                StatusCode::SERVICE_UNAVAILABLE,
                "the relay is at its session limit; try again later",
            ));
        }
        if let Some(p) = principal {
            let mut open = lock(&inner.per_principal);
            let count = open.entry(Arc::from(p.id())).or_insert(0);
            if *count >= limits.max_sessions_per_principal {
                return Err(Refusal::with_status(
                    StatusCode::TOO_MANY_REQUESTS,
                    "this user has too many sessions open; close one first",
                ));
            }
            *count += 1;
            slot.principal = Some(Arc::from(p.id()));
        }
        Ok(slot)
    }
}

/// Opens the model connection `config` names, within its connect timeout; the error names the
/// URL's problem, never the key.
async fn connect_model(config: &RelayConfig) -> Result<UpstreamSocket, String> {
    let request = upstream_request_for(
        config.session.provider,
        &config.upstream,
        config.api_key.as_deref(),
    )
    .map_err(|e| e.to_string())?;
    match tokio::time::timeout(
        config.limits.upstream_connect_timeout,
        connect_upstream(request),
    )
    .await
    {
        Ok(connected) => connected.map_err(|e| e.to_string()),
        Err(_) => Err("the connection timed out".to_owned()),
    }
}

fn set_nodelay(ws: &UpstreamSocket) {
    if let tokio_tungstenite::MaybeTlsStream::Plain(tcp) = ws.get_ref() {
        let _ = tcp.set_nodelay(true);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// One session counted against the limits; dropping it (the session ended, or the handshake
/// was refused after counting) gives the place back.
#[derive(Debug)]
struct SessionSlot {
    service: RelayService,
    principal: Option<Arc<str>>,
}

impl Drop for SessionSlot {
    fn drop(&mut self) {
        let inner = &self.service.inner;
        inner
            .stats
            .sessions_active
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        if let Some(id) = &self.principal {
            let mut open = lock(&inner.per_principal);
            if let Some(count) = open.get_mut(id) {
                *count -= 1;
                if *count == 0 {
                    open.remove(id);
                }
            }
        }
    }
}

/// The 101 answer to a websocket upgrade.
fn upgraded(key: &str, subprotocol: Option<String>) -> Response {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let headers = response.headers_mut();
    headers.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
    headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    if let Ok(accept) = HeaderValue::from_str(&derive_accept_key(key.as_bytes())) {
        headers.insert(header::SEC_WEBSOCKET_ACCEPT, accept);
    }
    if let Some(protocol) = subprotocol.and_then(|p| HeaderValue::from_str(&p).ok()) {
        headers.insert(header::SEC_WEBSOCKET_PROTOCOL, protocol);
    }
    response
}

/// The `Sec-WebSocket-Key` of a valid upgrade request, or a 400/426 refusal.
fn websocket_key(request: &Request) -> Result<String, Refusal> {
    let headers = request.headers();
    let has_token = |name: header::HeaderName, token: &str| {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    };
    if request.method() != Method::GET
        || !has_token(header::UPGRADE, "websocket")
        || !has_token(header::CONNECTION, "upgrade")
    {
        return Err(Refusal::with_status(
            StatusCode::UPGRADE_REQUIRED,
            "connect with a websocket (GET with `Upgrade: websocket`)",
        ));
    }
    if headers
        .get(header::SEC_WEBSOCKET_VERSION)
        .and_then(|v| v.to_str().ok())
        != Some("13")
    {
        return Err(Refusal::with_status(
            StatusCode::BAD_REQUEST,
            "unsupported websocket version; use 13",
        ));
    }
    headers
        .get(header::SEC_WEBSOCKET_KEY)
        .and_then(|v| v.to_str().ok())
        .filter(|k| !k.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| Refusal::with_status(StatusCode::BAD_REQUEST, "missing `Sec-WebSocket-Key`"))
}

/// The longest conversation id a page may name.
const MAX_CONVERSATION_ID: usize = 128;

/// The conversation a page named with `?conversation=ID`, under which a store shared by the
/// fleet keeps its first calls (`SessionConfig::duplicates`), so that a repeat made after the
/// page reconnected, to this relay or another, is caught. Only for an authenticated principal:
/// the key is the principal and the id, so a page can only meet its own user's calls; without
/// a principal, any page could name another's conversation and read its results. The id is the
/// page's own (a UUID it keeps in `sessionStorage`): letters, digits and `-_.~`, at most 128.
fn conversation_id(id: &str, principal: Option<&Principal>) -> Result<String, Refusal> {
    if principal.is_none() {
        return Err(Refusal::with_status(
            StatusCode::BAD_REQUEST,
            "`conversation` needs an authenticated user: this relay has no authorizer, so a \
             page could name another page's conversation; leave it out",
        ));
    }
    let valid = !id.is_empty()
        && id.len() <= MAX_CONVERSATION_ID
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~'));
    if !valid {
        return Err(Refusal::with_status(
            StatusCode::BAD_REQUEST,
            format!(
                "`conversation` must be 1 to {MAX_CONVERSATION_ID} letters, digits, `-`, `_`, \
                 `.` or `~` (e.g. a UUID the page keeps)"
            ),
        ));
    }
    Ok(id.to_owned())
}

/// The subprotocol to answer with: `toolc` when offered; otherwise the bearer one, because a
/// browser fails a connection whose offered subprotocols all went unanswered.
fn choose_subprotocol(handshake: &Handshake) -> Option<String> {
    let offered: Vec<&str> = handshake.subprotocols().collect();
    if offered.contains(&SUBPROTOCOL) {
        return Some(SUBPROTOCOL.to_owned());
    }
    offered
        .into_iter()
        .find(|p| p.starts_with(BEARER_SUBPROTOCOL_PREFIX))
        .map(str::to_owned)
}

fn refusal_response(refusal: &Refusal) -> Response {
    let body = json!({
        "error": { "type": "relay_refused", "status": refusal.status().as_u16(), "message": refusal.message() }
    });
    let mut response = (refusal.status(), body.to_string()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if refusal.status() == StatusCode::UNAUTHORIZED {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    response
}
