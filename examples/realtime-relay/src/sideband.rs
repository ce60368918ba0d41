//! `--sideband` (GPT-Live): the page opens the live session itself over WebRTC, so its audio
//! goes straight to OpenAI, and this relay serves the tools from a sideband attached to that
//! session (`/v1/live/sessions/{id}/attach`).
//!
//! 1. The page posts its SDP offer to `POST /gpt-live/sessions` (`Content-Type:
//!    application/sdp`). The relay checks the page as it checks a websocket handshake (the
//!    origin rule, the drain, `--auth-tokens`), opens the session with OpenAI (`POST
//!    {api}/live/sessions`, the SDK's `LiveCreateParams`: the offer and
//!    `gpt_live::webrtc_session`'s `session`, which declares the tools to the delegated backend
//!    and restricts the page's data channel), and answers the page with what it needs and
//!    nothing more: the SDP answer and a ticket. The API key stays here; the session id too.
//! 2. The page opens its websocket with `?sideband=TICKET`. The ticket (used once, for
//!    [`TICKET_TTL`], bound to the user it was issued to) names the session: the relay attaches
//!    to it with the API key and runs the realtime session as a sideband
//!    (`SessionConfig::sideband`): server calls run here, client calls go to the page over this
//!    websocket and their results come back on it, and a server call answered by someone else
//!    (the page over its data channel) is reported. The page never names a session id, so a
//!    hostile page cannot make the relay attach to someone else's session.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use toolc_runtime::relay::axum::body::{to_bytes, Body};
use toolc_runtime::relay::axum::extract::{ConnectInfo, Request, State};
use toolc_runtime::relay::axum::http::{header, HeaderValue, StatusCode};
use toolc_runtime::relay::axum::response::{IntoResponse, Response};
use toolc_runtime::relay::axum::routing::{any, post};
use toolc_runtime::relay::axum::Router;
use toolc_runtime::relay::{Handshake, Refusal, RelayService};

use toolc_runtime::realtime::gpt_live;

/// How long a ticket may wait for its page's websocket.
pub const TICKET_TTL: Duration = Duration::from_secs(60);

/// The largest SDP offer taken (a browser's is a few KiB).
const MAX_OFFER_BYTES: usize = 64 * 1024;

/// The largest answer read from the Live API.
const MAX_ANSWER_BYTES: usize = 1024 * 1024;

/// How long OpenAI may take to open a session.
const CREATE_TIMEOUT: Duration = Duration::from_secs(15);

/// What the sideband mode needs to know.
pub struct Options {
    /// `POST` here opens a session: `{api}/live/sessions`.
    pub sessions_url: String,
    /// Where sidebands attach: `{base}/{id}/attach` (the relay's upstream URL).
    pub attach_base: String,
    /// Sent to OpenAI only.
    pub api_key: Option<String>,
    /// The `session` of every session opened (`gpt_live::webrtc_session`).
    pub session: Value,
    /// At most this many tickets wait at once, and this many per user.
    pub max_tickets: usize,
    pub max_tickets_per_user: usize,
}

/// The sideband mode's state: the relay, the HTTP client, the tickets waiting for their page.
pub struct Sideband {
    relay: RelayService,
    http: reqwest::Client,
    options: Options,
    tickets: Mutex<HashMap<String, Ticket>>,
}

/// A session opened for a page, waiting for the page's websocket.
struct Ticket {
    attach_url: String,
    /// The user it was issued to (`None` without `--auth-tokens`).
    user: Option<String>,
    issued: Instant,
}

impl Sideband {
    pub fn new(relay: RelayService, options: Options) -> Result<Sideband, String> {
        let http = reqwest::Client::builder()
            // The API key goes to the host named, never to a redirect's.
            .redirect(reqwest::redirect::Policy::none())
            .timeout(CREATE_TIMEOUT)
            .user_agent(concat!("toolc-realtime-relay/", env!("CARGO_PKG_VERSION")))
            .tls_backend_preconfigured(tls_config(options.sessions_url.starts_with("https:"))?)
            .build()
            .map_err(|e| format!("cannot set up the HTTP client: {e}"))?;
        Ok(Sideband {
            relay,
            http,
            options,
            tickets: Mutex::new(HashMap::new()),
        })
    }

    /// `POST /gpt-live/sessions` and the pages' websockets at `/`.
    pub fn router(self: Arc<Sideband>) -> Router {
        Router::new()
            .route("/gpt-live/sessions", post(create))
            .route("/", any(page_socket))
            .fallback(|| async {
                fail(
                    StatusCode::NOT_FOUND,
                    "pages open sessions at POST /gpt-live/sessions and connect at /",
                )
            })
            .with_state(self)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Ticket>> {
        self.tickets.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Room for one more ticket for `user`, after forgetting the expired ones.
    fn room(&self, user: Option<&str>) -> Result<(), (StatusCode, &'static str)> {
        let mut tickets = self.lock();
        tickets.retain(|_, t| t.issued.elapsed() < TICKET_TTL);
        if tickets.len() >= self.options.max_tickets {
            return Err((
                StatusCode::SERVICE_UNAVAILABLE,
                "too many sessions wait for their page; try again later",
            ));
        }
        let mine = tickets
            .values()
            .filter(|t| t.user.as_deref() == user)
            .count();
        if user.is_some() && mine >= self.options.max_tickets_per_user {
            return Err((
                StatusCode::TOO_MANY_REQUESTS,
                "this user has too many sessions waiting for their page",
            ));
        }
        Ok(())
    }

    /// The attach URL of `ticket`, which is used up, if it was issued to `user` and is fresh.
    fn redeem(&self, ticket: &str, user: Option<&str>) -> Result<String, Refusal> {
        let found = self.lock().remove(ticket);
        let Some(found) = found else {
            return Err(Refusal::forbidden(
                "unknown or used sideband ticket: open a session with POST /gpt-live/sessions",
            ));
        };
        if found.issued.elapsed() >= TICKET_TTL {
            return Err(Refusal::forbidden(
                "the sideband ticket expired: open a new session",
            ));
        }
        if found.user.as_deref() != user {
            tracing::warn!("a sideband ticket was presented by another user");
            return Err(Refusal::forbidden(
                "this sideband ticket was issued to another user",
            ));
        }
        Ok(found.attach_url)
    }

    /// Opens the session with OpenAI; returns the attach URL and the SDP answer. Errors name
    /// what went wrong, never the key.
    async fn open(&self, offer: &str) -> Result<(String, String), String> {
        let body = json!({
            "session": self.options.session,
            "transport": { "type": "webrtc", "sdp": offer },
        });
        let mut request = self
            .http
            .post(&self.options.sessions_url)
            .header(header::CONTENT_TYPE, "application/json")
            .body(body.to_string());
        if let Some(key) = &self.options.api_key {
            request = request.bearer_auth(key);
        }
        let response = request
            .send()
            .await
            .map_err(|e| format!("cannot reach the Live API: {}", error_chain(&e)))?;
        let status = response.status();
        // Read within a bound: the answer is an SDP and an id, a few KiB.
        let mut response = response;
        let mut body = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) if body.len() + chunk.len() <= MAX_ANSWER_BYTES => {
                    body.extend_from_slice(&chunk)
                }
                Ok(Some(_)) => return Err("the Live API's answer is larger than 1 MiB".into()),
                Ok(None) => break,
                Err(e) => {
                    return Err(format!(
                        "the Live API's answer broke off: {}",
                        error_chain(&e)
                    ))
                }
            }
        }
        let answer: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        if !status.is_success() {
            // Its message is for the operator: it can quote part of the key (OpenAI's "Incorrect
            // API key provided: sk-...").
            let message: String = answer["error"]["message"]
                .as_str()
                .unwrap_or("no error message")
                .chars()
                .take(200)
                .collect();
            tracing::warn!(%status, message, "the Live API refused to open a session");
            return Err(format!("the Live API refused the session ({status})"));
        }
        // The SDK's `LiveCreateResponse`: `session.id` and `transport` `{type: webrtc, sdp}`.
        let id = answer["session"]["id"].as_str();
        let sdp = answer["transport"]["sdp"]
            .as_str()
            .filter(|_| answer["transport"]["type"] == "webrtc");
        let (Some(id), Some(sdp)) = (id, sdp) else {
            return Err("the Live API's answer has no session id or WebRTC answer".into());
        };
        let attach = gpt_live::attach_url(&self.options.attach_base, id).ok_or_else(|| {
            "the Live API returned a session id that is not one safe path segment".to_owned()
        })?;
        Ok((attach, sdp.to_owned()))
    }
}

/// `POST /gpt-live/sessions`: the page's SDP offer in, the SDP answer and a ticket out.
async fn create(State(sideband): State<Arc<Sideband>>, request: Request) -> Response {
    let handshake = Handshake {
        uri: request.uri().clone(),
        headers: request.headers().clone(),
        remote: request
            .extensions()
            .get::<ConnectInfo<std::net::SocketAddr>>()
            .map(|c| c.0),
    };
    let principal = match sideband.relay.authorize(handshake).await {
        Ok(principal) => principal,
        Err(refusal) => return refused(&refusal),
    };
    let user = principal.as_ref().map(|p| p.id().to_owned());
    let sdp_type = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/sdp"));
    if !sdp_type {
        return fail(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "post the page's SDP offer as `Content-Type: application/sdp`",
        );
    }
    let offer = match to_bytes(request.into_body(), MAX_OFFER_BYTES).await {
        Ok(bytes) => String::from_utf8(bytes.to_vec()).unwrap_or_default(),
        Err(_) => {
            return fail(
                StatusCode::PAYLOAD_TOO_LARGE,
                "the SDP offer is larger than 64 KiB",
            )
        }
    };
    if !offer.starts_with("v=0") {
        return fail(
            StatusCode::BAD_REQUEST,
            "the body is not an SDP offer (it starts with `v=0`)",
        );
    }
    if let Err((status, message)) = sideband.room(user.as_deref()) {
        return fail(status, message);
    }
    let (attach_url, answer) = match sideband.open(&offer).await {
        Ok(opened) => opened,
        Err(message) => {
            tracing::warn!(reason = %message, "no GPT-Live session for the page");
            return fail(StatusCode::BAD_GATEWAY, message);
        }
    };
    let ticket = match new_ticket() {
        Ok(ticket) => ticket,
        Err(message) => return fail(StatusCode::INTERNAL_SERVER_ERROR, message),
    };
    sideband.lock().insert(
        ticket.clone(),
        Ticket {
            attach_url,
            user,
            issued: Instant::now(),
        },
    );
    let body = json!({
        "sdp": answer,
        "ticket": ticket,
        "expires_in_ms": TICKET_TTL.as_millis() as u64,
    });
    let mut response = (StatusCode::CREATED, body.to_string()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// A page's websocket: with `?sideband=TICKET`, a relay session attached to the ticket's
/// session; with `?resume=TOKEN`, back to its session; anything else is refused.
async fn page_socket(State(sideband): State<Arc<Sideband>>, request: Request) -> Response {
    let query = request.uri().query().unwrap_or_default().to_owned();
    let param = |name: &str| {
        query
            .split('&')
            .filter_map(|pair| pair.split_once('='))
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_owned())
    };
    let (ticket, resume) = (param("sideband"), param("resume").is_some());
    if let Some(ticket) = ticket {
        let chooser = sideband.clone();
        return sideband
            .relay
            .handle_at(request, move |principal| {
                chooser.redeem(&ticket, principal.map(|p| p.id()))
            })
            .await;
    }
    if resume {
        return sideband.relay.handle(request).await;
    }
    fail(
        StatusCode::BAD_REQUEST,
        "in sideband mode a page connects with `?sideband=TICKET`, the ticket from POST /gpt-live/sessions",
    )
}

/// 256 bits from the operating system's generator, as hex.
fn new_ticket() -> Result<String, String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| format!("no randomness for a ticket: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn refused(refusal: &Refusal) -> Response {
    fail(refusal.status(), refusal.message())
}

/// An error answer in the relay's shape (`{"error": {"type": "relay_refused", ...}}`).
fn fail(status: StatusCode, message: impl Into<String>) -> Response {
    let body = json!({
        "error": {
            "type": "relay_refused",
            "status": status.as_u16(),
            "message": message.into(),
        }
    });
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

fn error_chain(e: &reqwest::Error) -> String {
    // reqwest's own message is only "error sending request": the causes say why.
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// rustls with the ring provider and, for `https://`, the system's roots.
fn tls_config(with_roots: bool) -> Result<rustls::ClientConfig, String> {
    let mut roots = rustls::RootCertStore::empty();
    if with_roots {
        for cert in rustls_native_certs::load_native_certs().certs {
            // A certificate the store cannot use is skipped, as a browser would.
            let _ = roots.add(cert);
        }
        if roots.is_empty() {
            return Err(
                "no trusted root certificates found (set SSL_CERT_FILE to a PEM bundle)".into(),
            );
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("cannot set up TLS: {e}"))
        .map(|config| config.with_root_certificates(roots).with_no_client_auth())
}
