//! The voice-agent demo as a library, so that tests can start it in-process: one axum app serves
//! the page (tower-http for the files, gzip where the browser takes it) and, on the same port
//! and path, relays each page's websocket (`ws://HOST:PORT/`) to a realtime model through
//! `toolc_runtime::relay::RelayService`. The model speaks OpenAI Realtime, Gemini Live or
//! GPT-Live ([`Options::provider`]); it is the bundled scripted one ([`conversation`]) unless an upstream
//! URL is given.

pub mod conversation;
pub mod tools;

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use toolc_runtime::realtime::{RealtimeProvider, SessionConfig};
use toolc_runtime::relay::testing::FakeModel;
use toolc_runtime::relay::{RelayConfig, RelayService};
use toolc_runtime::Registry;
use tower_http::compression::CompressionLayer;
use tower_http::services::{ServeDir, ServeFile};

/// How long opening the model connection may take before the page gets an error.
const UPSTREAM_TIMEOUT: Duration = Duration::from_secs(15);
/// After a page leaves, how long its failed calls may still take to reach the model.
const CLOSE_GRACE: Duration = Duration::from_millis(200);
/// Pages of one browser profile share no principal here, so the per-principal limit is the
/// total one.
const MAX_SESSIONS: usize = 64;

/// Which model the relay talks to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Model {
    /// The bundled scripted model, started in this process; `pace` is the pause between
    /// streamed pieces of its text.
    Scripted { pace: Duration },
    /// A realtime model at `url` (the provider's endpoint or anything speaking its wire).
    Remote {
        url: String,
        api_key: Option<String>,
    },
}

/// Everything the server needs.
#[derive(Clone, Debug)]
pub struct Options {
    pub listen: String,
    /// The manifests whose tools the relay declares (`manifests/support.tools.yaml` and this
    /// demo's `refunds.tools.yaml`).
    pub manifests: Vec<PathBuf>,
    /// The folder with `index.html`, `style.css` and the compiled `dist/`.
    pub web_dir: PathBuf,
    pub model: Model,
    /// Which wire the model speaks: OpenAI Realtime GA events, Gemini Live messages or GPT-Live
    /// events. The page's tool protocol is the same for all.
    pub provider: RealtimeProvider,
    /// Serve `GET /_test/model` (what the scripted model received, and the relay's counters).
    pub test_endpoints: bool,
    /// How long a waiting client call may be open before the model says a filler phrase.
    pub filler_delay: Option<Duration>,
    /// The realtime `session` settings sent with the tool declarations (e.g. `instructions`).
    pub session: serde_json::Map<String, Value>,
}

impl Options {
    /// The defaults: the repository's support manifest and this crate's `web/`, scripted model.
    pub fn new(listen: impl Into<String>) -> Options {
        let here = Path::new(env!("CARGO_MANIFEST_DIR"));
        Options {
            listen: listen.into(),
            manifests: vec![
                here.join("../../manifests/support.tools.yaml"),
                here.join("refunds.tools.yaml"),
            ],
            web_dir: here.join("web"),
            model: Model::Scripted {
                pace: Duration::from_millis(40),
            },
            provider: RealtimeProvider::OpenAi,
            test_endpoints: false,
            filler_delay: None,
            session: serde_json::Map::new(),
        }
    }
}

struct App {
    registry: Arc<Registry>,
    session: Arc<SessionConfig>,
    provider: RealtimeProvider,
    upstream: String,
    relay: RelayService,
    web_dir: PathBuf,
    /// Kept alive here: dropping it stops the scripted model.
    scripted: Option<FakeModel>,
}

/// A bound demo server; [`Server::serve`] runs it.
pub struct Server {
    listener: TcpListener,
    app: Arc<App>,
    router: Router,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("addr", &self.listener.local_addr().ok())
            .field("upstream", &self.app.upstream)
            .finish()
    }
}

impl Server {
    /// Loads the manifest, builds the registry, starts the scripted model if it is the one
    /// chosen, and binds the listener.
    pub async fn bind(options: Options) -> Result<Server, String> {
        let definitions = toolc_runtime::load_definitions(&options.manifests)
            .map_err(|e| format!("cannot load the manifests:\n{e}"))?;
        let data = Arc::new(tools::Data::bundled()?);
        let registry = Arc::new(tools::registry(definitions, data)?);

        let provider = options.provider;
        let mut session = SessionConfig::for_provider(&registry, provider);
        session.trace_calls = true;
        session.filler_delay = options.filler_delay;
        session.session.extend(options.session.clone());
        if provider == RealtimeProvider::GptLive {
            // The page speaks PCM16 at 24 kHz (its clip, or the microphone), and plays the
            // model's audio at that rate: said, not left to the API's default.
            session.session.entry("audio").or_insert_with(|| {
                json!({ "format": { "type": "audio/pcm", "rate": conversation::GPT_LIVE_AUDIO_RATE } })
            });
        }
        // Notes, refusals and calls are logged through `tracing` (the binary sets up
        // `RUST_LOG` filtering).

        let (upstream, api_key, scripted) = match options.model {
            Model::Scripted { pace } => {
                let script = match provider {
                    RealtimeProvider::OpenAi => conversation::script(pace),
                    RealtimeProvider::GeminiLive | RealtimeProvider::VertexLive => {
                        conversation::live_script(pace)
                    }
                    RealtimeProvider::GptLive => conversation::gpt_live_script(pace),
                };
                let model = FakeModel::start(script)
                    .await
                    .map_err(|e| format!("cannot start the scripted model: {e}"))?;
                (model.url(), None, Some(model))
            }
            Model::Remote { url, api_key } => (url, api_key, None),
        };

        let listener = TcpListener::bind(&options.listen)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", options.listen))?;
        let session = Arc::new(session);
        let mut relay = RelayConfig::for_provider(&registry, provider);
        relay.upstream = upstream.clone();
        relay.api_key = api_key;
        relay.session = session.clone();
        relay.close_grace = CLOSE_GRACE;
        relay.limits.upstream_connect_timeout = UPSTREAM_TIMEOUT;
        relay.limits.max_sessions = MAX_SESSIONS;
        relay.limits.max_sessions_per_principal = MAX_SESSIONS;
        let app = Arc::new(App {
            relay: RelayService::new(registry.clone(), relay),
            registry,
            session,
            provider,
            upstream,
            web_dir: options.web_dir,
            scripted,
        });
        let router = router(app.clone(), options.test_endpoints);
        Ok(Server {
            listener,
            app,
            router,
        })
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The model URL the relay connects to.
    pub fn upstream(&self) -> &str {
        &self.app.upstream
    }

    pub fn tool_names(&self) -> Vec<String> {
        self.app.registry.names().map(str::to_owned).collect()
    }

    /// Serves until the future is dropped.
    pub async fn serve(self) {
        use axum::serve::ListenerExt;
        let listener = self.listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let app = self
            .router
            .into_make_service_with_connect_info::<SocketAddr>();
        let _ = axum::serve(listener, app).await;
    }
}

// ---- HTTP ---------------------------------------------------------------------------------

/// `/` is the page and, for a websocket upgrade, the relay; `/style.css` and `/dist/**` are the
/// page's files; nothing else of `web/` (sources, `node_modules`, `package.json`) is served.
fn router(app: Arc<App>, test_endpoints: bool) -> Router {
    let dist = app.web_dir.join("dist");
    let not_built = format!(
        "this file is not built yet: run `npm ci && npm run build` in {}",
        app.web_dir.display()
    );
    let files = Router::new()
        .route_service("/style.css", ServeFile::new(app.web_dir.join("style.css")))
        .nest_service(
            "/dist",
            ServeDir::new(dist).not_found_service(axum::routing::any(move || {
                let not_built = not_built.clone();
                async move { (StatusCode::NOT_FOUND, not_built) }
            })),
        )
        .layer(CompressionLayer::new());
    let mut router = Router::new()
        .route("/", get(page_or_relay))
        .route("/config.json", get(config));
    if test_endpoints {
        router = router.route("/_test/model", get(model_report));
    }
    router.merge(files).with_state(app)
}

/// The page, or, for a websocket upgrade from the page itself, a relay session. Another web
/// site open in the same browser must not drive the relay and spend the API key: a page's
/// `Origin` must be this server's own (`http://` + the `Host` it asked for).
async fn page_or_relay(State(app): State<Arc<App>>, request: Request) -> Response {
    let headers = request.headers();
    let upgrade = headers
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    if !upgrade {
        let index = app.web_dir.join("index.html");
        return match tokio::fs::read(&index).await {
            Ok(body) => {
                ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response()
            }
            Err(_) => (StatusCode::NOT_FOUND, "index.html is missing").into_response(),
        };
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let own = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .map(|h| format!("http://{h}"));
        if own.as_deref().map(str::as_bytes) != Some(origin.as_bytes()) {
            return (
                StatusCode::FORBIDDEN,
                "this relay only serves its own page (Origin does not match Host)",
            )
                .into_response();
        }
    }
    app.relay.handle(request).await
}

async fn config(State(app): State<Arc<App>>) -> Json<Value> {
    Json(json!({
        "mode": if app.scripted.is_some() { "scripted" } else { "remote" },
        "provider": app.provider.as_str(),
        "question": conversation::QUESTION,
    }))
}

/// What the scripted model received on each connection, and the relay's counters: what the
/// browser test checks (every result, one continuation per response).
async fn model_report(State(app): State<Arc<App>>) -> Json<Value> {
    let mut connections = Vec::new();
    if let Some(model) = &app.scripted {
        for i in 0..model.connection_count() {
            if let Some(c) = model.connection(i, Duration::ZERO).await {
                connections.push(json!({
                    "received": c.events(),
                    "script_finished": c.script_finished(),
                    "closed": c.is_closed(),
                }));
            }
        }
    }
    let c = app.session.counters.snapshot();
    Json(json!({
        "connections": connections,
        "counters": {
            "calls": c.calls,
            "server_calls": c.server_calls,
            "client_calls": c.client_calls,
            "notify_calls": c.notify_calls,
            "failed_calls": c.failed_calls,
            "results_accepted": c.results_accepted,
            "results_rejected": c.results_rejected,
            "continuations": c.continuations,
            "fillers": c.fillers,
            "approvals_requested": c.approvals_requested,
            "approvals_granted": c.approvals_granted,
            "approvals_refused": c.approvals_refused,
        },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::ServiceExt;

    async fn demo() -> Server {
        let mut options = Options::new("127.0.0.1:0");
        options.test_endpoints = true;
        Server::bind(options).await.unwrap()
    }

    fn get(path: &str, headers: &[(&str, &str)]) -> Request {
        let mut request = axum::http::Request::get(path);
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        request.body(axum::body::Body::empty()).unwrap()
    }

    #[tokio::test]
    async fn only_the_pages_files_are_served() {
        let server = demo().await;
        for (path, status) in [
            ("/", 200),
            ("/style.css", 200),
            ("/config.json", 200),
            ("/_test/model", 200),
            ("/package.json", 404),
            ("/src/main.ts", 404),
            ("/../Cargo.toml", 404),
            ("/dist/../../src/lib.rs", 404),
            ("/dist/%2e%2e/%2e%2e/Cargo.toml", 404),
            ("/node_modules/typescript/package.json", 404),
        ] {
            let response = server.router.clone().oneshot(get(path, &[])).await.unwrap();
            assert_eq!(response.status(), status, "{path}");
        }
    }

    #[tokio::test]
    async fn another_sites_page_may_not_open_the_relay() {
        let server = demo().await;
        let upgrade = [
            ("host", "127.0.0.1:8080"),
            ("connection", "Upgrade"),
            ("upgrade", "websocket"),
            ("sec-websocket-version", "13"),
            ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
        ];
        let mut foreign = upgrade.to_vec();
        foreign.push(("origin", "https://evil.example"));
        let response = server
            .router
            .clone()
            .oneshot(get("/", &foreign))
            .await
            .unwrap();
        assert_eq!(response.status(), 403);
        let mut own = upgrade.to_vec();
        own.push(("origin", "http://127.0.0.1:8080"));
        let response = server.router.clone().oneshot(get("/", &own)).await.unwrap();
        // Past the origin rule; without a real connection there is nothing to upgrade.
        assert_ne!(response.status(), 403);
    }
}
