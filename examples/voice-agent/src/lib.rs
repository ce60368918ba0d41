//! The voice-agent demo as a library, so that tests can start it in-process: one listener serves
//! the page over HTTP and, on the same port, relays each page's websocket (`ws://HOST:PORT/`) to
//! a realtime model through `toolc_runtime::relay::run_session`. The model is the bundled
//! scripted one ([`conversation`]) unless an upstream URL is given.

pub mod conversation;
pub mod http;
pub mod tools;

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures_util::SinkExt;
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use toolc_runtime::realtime::{Naming, Session, SessionConfig};
use toolc_runtime::relay::testing::FakeModel;
use toolc_runtime::relay::{run_session, upstream_request};
use toolc_runtime::Registry;

use http::{HeadError, Request, Response};

/// How long opening the model connection may take before the page gets an error.
const UPSTREAM_TIMEOUT: Duration = Duration::from_secs(15);
/// After a page leaves, how long its failed calls may still take to reach the model.
const CLOSE_GRACE: Duration = Duration::from_millis(200);

/// Which model the relay talks to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Model {
    /// The bundled scripted model, started in this process; `pace` is the pause between
    /// streamed pieces of its text.
    Scripted { pace: Duration },
    /// A realtime model at `url` (OpenAI's GA endpoint or anything speaking its events).
    Remote {
        url: String,
        api_key: Option<String>,
    },
}

/// Everything the server needs.
#[derive(Clone, Debug)]
pub struct Options {
    pub listen: String,
    /// The manifest whose tools the relay declares (`manifests/support.tools.yaml`).
    pub manifest: PathBuf,
    /// The folder with `index.html`, `style.css` and the compiled `dist/`.
    pub web_dir: PathBuf,
    pub model: Model,
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
            manifest: here.join("../../manifests/support.tools.yaml"),
            web_dir: here.join("web"),
            model: Model::Scripted {
                pace: Duration::from_millis(40),
            },
            test_endpoints: false,
            filler_delay: None,
            session: serde_json::Map::new(),
        }
    }
}

struct App {
    registry: Arc<Registry>,
    session: Arc<SessionConfig>,
    upstream: String,
    api_key: Option<String>,
    web_dir: PathBuf,
    /// Kept alive here: dropping it stops the scripted model.
    scripted: Option<FakeModel>,
    test_endpoints: bool,
}

/// A bound demo server; [`Server::serve`] runs it.
pub struct Server {
    listener: TcpListener,
    app: Arc<App>,
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
        let definitions = toolc_runtime::load_definitions([&options.manifest])
            .map_err(|e| format!("cannot load {}:\n{e}", options.manifest.display()))?;
        let data = Arc::new(tools::Data::bundled()?);
        let registry = Arc::new(tools::registry(definitions, data)?);

        let mut session = SessionConfig::new(&registry);
        session.trace_calls = true;
        session.filler_delay = options.filler_delay;
        session.session.extend(options.session.clone());
        // Notes, refusals and calls are logged through `tracing` (the binary sets up
        // `RUST_LOG` filtering).

        let (upstream, api_key, scripted) = match options.model {
            Model::Scripted { pace } => {
                let model = FakeModel::start(conversation::script(pace))
                    .await
                    .map_err(|e| format!("cannot start the scripted model: {e}"))?;
                (model.url(), None, Some(model))
            }
            Model::Remote { url, api_key } => (url, api_key, None),
        };

        let listener = TcpListener::bind(&options.listen)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", options.listen))?;
        Ok(Server {
            listener,
            app: Arc::new(App {
                registry,
                session: Arc::new(session),
                upstream,
                api_key,
                web_dir: options.web_dir,
                scripted,
                test_endpoints: options.test_endpoints,
            }),
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

    /// Accepts connections until the future is dropped.
    pub async fn serve(self) {
        loop {
            let stream = match self.listener.accept().await {
                Ok((stream, _)) => stream,
                // Out of file descriptors and similar: back off instead of spinning.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let app = self.app.clone();
            tokio::spawn(connection(stream, app));
        }
    }
}

async fn connection(mut stream: TcpStream, app: Arc<App>) {
    let _ = stream.set_nodelay(true);
    let (request, rest) = match http::read_head(&mut stream).await {
        Ok(head) => head,
        Err(HeadError::Closed) => return,
        Err(e) => {
            let status = match e {
                HeadError::TooLarge => 431,
                HeadError::TimedOut => 408,
                _ => 400,
            };
            http::send(&mut stream, &Response::text(status, http::reason(status))).await;
            return;
        }
    };
    if request.is_websocket_upgrade() {
        websocket(stream, request, rest, app).await;
    } else {
        let response = route(&request, &app).await;
        http::send(&mut stream, &response).await;
    }
}

// ---- HTTP ---------------------------------------------------------------------------------

async fn route(request: &Request, app: &App) -> Response {
    if request.method != "GET" {
        return Response::text(405, "only GET is served here");
    }
    match request.path.as_str() {
        "/" => static_file(&app.web_dir, "index.html").await,
        "/config.json" => Response::json(&json!({
            "mode": if app.scripted.is_some() { "scripted" } else { "remote" },
            "question": conversation::QUESTION,
        })),
        "/_test/model" if app.test_endpoints => Response::json(&model_report(app).await),
        path => match safe_relative(path) {
            Some(relative) => static_file(&app.web_dir, &relative).await,
            None => Response::text(404, "not found"),
        },
    }
}

/// The file a request path names, if it is one the page may load: a file directly in `web/`
/// or anything under `web/dist/`, with a known type, and no component that is empty, hidden
/// or `..`.
fn safe_relative(path: &str) -> Option<String> {
    let parts: Vec<&str> = path.strip_prefix('/')?.split('/').collect();
    let ok = |p: &&str| {
        !p.is_empty()
            && !p.starts_with('.')
            && p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
    };
    if !parts.iter().all(ok) || (parts.len() > 1 && parts[0] != "dist") {
        return None;
    }
    content_type(parts.last()?)?;
    Some(parts.join("/"))
}

fn content_type(name: &str) -> Option<&'static str> {
    let ext = name.rsplit_once('.')?.1;
    Some(match ext {
        "html" => "text/html; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "js" => "text/javascript; charset=utf-8",
        "map" => "application/json",
        "svg" => "image/svg+xml",
        _ => return None,
    })
}

async fn static_file(web_dir: &Path, relative: &str) -> Response {
    let Some(kind) = content_type(relative) else {
        return Response::text(404, "not found");
    };
    match tokio::fs::read(web_dir.join(relative)).await {
        Ok(body) => Response::new(200, kind, body),
        Err(_) if relative.starts_with("dist/") => Response::text(
            404,
            format!(
                "{relative} is not built yet: run `npm ci && npm run build` in {}",
                web_dir.display()
            ),
        ),
        Err(_) => Response::text(404, "not found"),
    }
}

/// What the scripted model received on each connection, and the relay's counters: what the
/// browser test checks (every `function_call_output`, one `response.create` per response).
async fn model_report(app: &App) -> Value {
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
    json!({
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
        },
    })
}

// ---- websocket relay ----------------------------------------------------------------------

/// Checks a websocket handshake: `GET /`, version 13, a key, and an `Origin` (when the client
/// sends one, as browsers always do) that is this server's own, so another web site open in
/// the same browser cannot drive the relay and spend the API key. Returns the accept key.
pub fn check_handshake(request: &Request) -> Result<String, Response> {
    if request.method != "GET" {
        return Err(Response::text(405, "websocket handshakes use GET"));
    }
    if request.path != "/" {
        return Err(Response::text(404, "pages connect at ws://HOST:PORT/"));
    }
    if !request.header_has_token("connection", "upgrade")
        || request.header("sec-websocket-version") != Some("13")
    {
        return Err(Response::text(
            426,
            "a websocket version 13 handshake is needed",
        ));
    }
    let Some(key) = request.header("sec-websocket-key") else {
        return Err(Response::text(400, "missing Sec-WebSocket-Key"));
    };
    if let Some(origin) = request.header("origin") {
        let own = request.header("host").map(|h| format!("http://{h}"));
        if own.as_deref() != Some(origin) {
            return Err(Response::text(
                403,
                "this relay only serves its own page (Origin does not match Host)",
            ));
        }
    }
    Ok(derive_accept_key(key.as_bytes()))
}

async fn websocket(mut stream: TcpStream, request: Request, rest: Vec<u8>, app: Arc<App>) {
    let accept = match check_handshake(&request) {
        Ok(accept) => accept,
        Err(response) => return http::send(&mut stream, &response).await,
    };
    let head = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Accept: {accept}\r\n\r\n"
    );
    if stream.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    let mut page = WebSocketStream::from_partially_read(stream, rest, Role::Server, None).await;
    let naming = request
        .query_value("naming")
        .and_then(Naming::parse)
        .unwrap_or(app.session.naming);

    let model = match upstream_request(&app.upstream, app.api_key.as_deref()) {
        Ok(req) => tokio::time::timeout(UPSTREAM_TIMEOUT, tokio_tungstenite::connect_async(req))
            .await
            .unwrap_or_else(|_| {
                Err(tokio_tungstenite::tungstenite::Error::Io(
                    io::ErrorKind::TimedOut.into(),
                ))
            }),
        Err(e) => Err(e),
    };
    let model = match model {
        Ok((ws, _)) => ws,
        Err(e) => {
            // The message names the URL's problem, never the key.
            let error = json!({
                "type": "error",
                "error": {
                    "type": "relay_error",
                    "code": "upstream_unavailable",
                    "message": format!("the relay could not reach the model: {e}"),
                },
            });
            let _ = page.send(Message::text(error.to_string())).await;
            let _ = page.close(None).await;
            return;
        }
    };
    if let MaybeTlsStream::Plain(tcp) = model.get_ref() {
        let _ = tcp.set_nodelay(true);
    }
    let (mut session, events) = Session::new(app.registry.clone(), app.session.clone());
    session.set_naming(naming);
    run_session(session, events, page, model, CLOSE_GRACE).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_page_files_are_served() {
        assert_eq!(safe_relative("/style.css").as_deref(), Some("style.css"));
        assert_eq!(
            safe_relative("/dist/generated/tools.js").as_deref(),
            Some("dist/generated/tools.js")
        );
        for bad in [
            "/../Cargo.toml",
            "/dist/../../src/lib.rs",
            "/.gitignore",
            "/node_modules/typescript/lib/tsc.js",
            "/package.json",
            "/dist//main.js",
            "/dist/main.ts",
            "/src/main.ts",
            "/dist/%2e%2e/x.js",
            "relative.css",
        ] {
            assert_eq!(safe_relative(bad), None, "{bad}");
        }
    }

    fn handshake(extra: &[(&str, &str)]) -> Request {
        let mut headers = vec![
            ("host".to_owned(), "127.0.0.1:8080".to_owned()),
            ("connection".to_owned(), "Upgrade".to_owned()),
            ("upgrade".to_owned(), "websocket".to_owned()),
            ("sec-websocket-version".to_owned(), "13".to_owned()),
            (
                "sec-websocket-key".to_owned(),
                "dGhlIHNhbXBsZSBub25jZQ==".to_owned(),
            ),
        ];
        for (k, v) in extra {
            headers.retain(|(n, _)| n != k);
            headers.push(((*k).to_owned(), (*v).to_owned()));
        }
        Request {
            method: "GET".into(),
            path: "/".into(),
            query: None,
            headers,
        }
    }

    #[test]
    fn handshakes_follow_rfc_6455_and_the_own_origin_rule() {
        // The key and accept value of RFC 6455, section 1.3.
        assert_eq!(
            check_handshake(&handshake(&[])),
            Ok("s3pPLMBiTxaQ9kYGzzhZRbK+xOo=".to_owned())
        );
        assert!(check_handshake(&handshake(&[("origin", "http://127.0.0.1:8080")])).is_ok());
        let foreign = check_handshake(&handshake(&[("origin", "https://evil.example")]));
        assert_eq!(foreign.unwrap_err().status, 403);
        let old = check_handshake(&handshake(&[("sec-websocket-version", "8")]));
        assert_eq!(old.unwrap_err().status, 426);
        let mut elsewhere = handshake(&[]);
        elsewhere.path = "/relay".into();
        assert_eq!(check_handshake(&elsewhere).unwrap_err().status, 404);
    }
}
