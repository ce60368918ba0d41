//! The remote catalog client against a real HTTP server on loopback, started by each test: the
//! server answers from a handler and records every request it got.
#![cfg(feature = "catalog")]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use toolc_runtime::catalog::{CatalogClient, CatalogErrorKind, DEFAULT_TTL};
use toolc_runtime::{executor_fn, CallErrorKind, Location, Principal, Registry, SessionScope};

#[derive(Clone, Debug)]
struct Seen {
    method: String,
    path: String,
    authorization: Option<String>,
    body: Value,
}

/// What the server does with one request.
enum Reply {
    Json(u16, Value),
    Text(u16, &'static str),
    /// The body in two chunks, `Transfer-Encoding: chunked`, no length.
    Chunked(Value),
    /// Never answer (the client must time out).
    Hang,
    /// Close the connection without answering.
    Close,
}

type Handler = dyn Fn(&Seen, usize) -> Reply + Send + Sync;

struct Server {
    base: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Server {
    /// `handler(request, index of this request among those of its path)`.
    async fn start(handler: impl Fn(&Seen, usize) -> Reply + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}/api", listener.local_addr().unwrap());
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let handler: Arc<Handler> = Arc::new(handler);
        let task = {
            let seen = seen.clone();
            tokio::spawn(async move {
                while let Ok((stream, _)) = listener.accept().await {
                    tokio::spawn(serve(stream, seen.clone(), handler.clone()));
                }
            })
        };
        Server { base, seen, task }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    fn count(&self, method: &str, path: &str) -> usize {
        self.seen()
            .iter()
            .filter(|s| s.method == method && s.path == path)
            .count()
    }

    fn gets(&self) -> usize {
        self.count("GET", "/api/tools")
    }

    fn posts(&self) -> usize {
        self.count("POST", "/api/execute")
    }
}

async fn serve(mut stream: TcpStream, seen: Arc<Mutex<Vec<Seen>>>, handler: Arc<Handler>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut start = lines.next().unwrap().split(' ');
    let method = start.next().unwrap().to_owned();
    let path = start.next().unwrap().to_owned();
    let mut length = 0;
    let mut authorization = None;
    for line in lines {
        let (name, value) = line.split_once(':').unwrap();
        if name.eq_ignore_ascii_case("content-length") {
            length = value.trim().parse().unwrap();
        }
        if name.eq_ignore_ascii_case("authorization") {
            authorization = Some(value.trim().to_owned());
        }
    }
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => body.extend_from_slice(&chunk[..n]),
        }
    }
    let request = Seen {
        method,
        path,
        authorization,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    };
    let index = {
        let mut seen = seen.lock().unwrap();
        let index = seen.iter().filter(|s| s.path == request.path).count();
        seen.push(request.clone());
        index
    };
    let write = |status: u16, content_type: &str, body: &[u8]| {
        let mut out = format!(
            "HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .into_bytes();
        out.extend_from_slice(body);
        out
    };
    let out = match handler(&request, index) {
        Reply::Json(status, v) => write(status, "application/json", v.to_string().as_bytes()),
        Reply::Text(status, t) => write(status, "text/html", t.as_bytes()),
        Reply::Chunked(v) => {
            let text = v.to_string();
            let (a, b) = text.split_at(text.len() / 2);
            format!(
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n{:x}\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\n\r\n",
                a.len(),
                b.len()
            )
            .into_bytes()
        }
        Reply::Hang => {
            tokio::time::sleep(Duration::from_secs(60)).await;
            return;
        }
        Reply::Close => return,
    };
    let _ = stream.write_all(&out).await;
    let _ = stream.shutdown().await;
}

fn tools_envelope(tools: Value) -> Reply {
    let count = tools.as_array().map_or(0, Vec::len);
    Reply::Json(
        200,
        json!({"success": true, "data": {"tools": tools, "count": count, "include_unauthorized": false}}),
    )
}

fn weather() -> Value {
    json!({
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": { "city": { "type": "string", "minLength": 1 } },
            "required": ["city"],
            "additionalProperties": false
        },
        "requires_auth": false
    })
}

fn account() -> Value {
    json!({
        "name": "get_account",
        "description": "The signed-in user's account.",
        "parameters": { "type": "object", "properties": {} },
        "requires_auth": true
    })
}

fn ok(data: Value) -> Reply {
    Reply::Json(200, json!({"success": true, "data": data, "error": null}))
}

/// A catalog with both tools that executes by echoing what it got.
async fn echo_server() -> Server {
    Server::start(|req, _| match req.path.as_str() {
        "/api/tools" => tools_envelope(json!([weather(), account()])),
        "/api/execute" => ok(json!({"ran": req.body["name"], "with": req.body["arguments"]})),
        _ => Reply::Json(404, json!({})),
    })
    .await
}

#[tokio::test]
async fn discovery_reads_the_envelope_and_is_cached_until_the_ttl_passes() {
    assert_eq!(DEFAULT_TTL, Duration::from_secs(300));
    let server = echo_server().await;
    let client = CatalogClient::new(&server.base)
        .unwrap()
        .with_ttl(Duration::from_millis(300));
    let catalog = client.catalog().await.unwrap();
    let names: Vec<&str> = catalog.tools().iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["get_weather", "get_account"]);
    assert!(catalog.tool("get_account").unwrap().requires_auth);
    assert_eq!(catalog.count(), Some(2));
    assert_eq!(catalog.include_unauthorized(), Some(false));
    client.catalog().await.unwrap();
    client
        .execute("get_weather", &json!({"city": "Oslo"}), None)
        .await
        .unwrap();
    assert_eq!(server.gets(), 1, "served from the cache");
    tokio::time::sleep(Duration::from_millis(400)).await;
    client.catalog().await.unwrap();
    assert_eq!(server.gets(), 2, "fetched again after the TTL");
    client.refresh().await.unwrap();
    assert_eq!(server.gets(), 3, "refresh fetches at once");
    assert_eq!(
        client
            .stats()
            .discoveries
            .load(std::sync::atomic::Ordering::Relaxed),
        3
    );
}

#[tokio::test]
async fn a_miss_refreshes_once_then_fails() {
    // The second discovery lists a tool the first did not.
    let server = Server::start(|req, index| match req.path.as_str() {
        "/api/tools" if index == 0 => tools_envelope(json!([weather()])),
        "/api/tools" => tools_envelope(json!([weather(), account()])),
        _ => ok(json!("done")),
    })
    .await;
    let client = CatalogClient::new(&server.base).unwrap();
    client.catalog().await.unwrap();
    assert_eq!(server.gets(), 1);
    // Not cached: one refresh finds it, and the call goes out.
    let out = client
        .execute("get_account", &json!({}), Some("Bearer t"))
        .await
        .unwrap();
    assert_eq!(out, json!("done"));
    assert_eq!((server.gets(), server.posts()), (2, 1));
    // Not in the catalog at all: one refresh, then an error; nothing is executed.
    let err = client
        .execute("get_wether", &json!({}), None)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), CatalogErrorKind::UnknownTool);
    assert!(
        err.message().contains("Did you mean `get_weather`?"),
        "{err}"
    );
    assert_eq!((server.gets(), server.posts()), (3, 1));
}

#[tokio::test]
async fn a_miss_right_after_a_fetch_does_not_fetch_twice() {
    let server = echo_server().await;
    let client = CatalogClient::new(&server.base).unwrap();
    let err = client.execute("nope", &json!({}), None).await.unwrap_err();
    assert_eq!(err.kind(), CatalogErrorKind::UnknownTool);
    assert_eq!(server.gets(), 1);
    assert_eq!(server.posts(), 0);
}

#[tokio::test]
async fn requires_auth_tools_need_credentials_which_are_forwarded() {
    let server = echo_server().await;
    let client = CatalogClient::new(&server.base).unwrap();
    for missing in [None, Some(""), Some("  ")] {
        let err = client
            .execute("get_account", &json!({}), missing)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), CatalogErrorKind::AuthRequired);
        assert_eq!(err.code(), "auth_required");
        assert!(err.message().contains("sign in"), "{err}");
    }
    assert_eq!(server.posts(), 0, "nothing was sent without credentials");
    client
        .execute("get_account", &json!({}), Some("Bearer user-token"))
        .await
        .unwrap();
    client
        .execute(
            "get_weather",
            &json!({"city": "Oslo"}),
            Some("Bearer other"),
        )
        .await
        .unwrap();
    client
        .execute("get_weather", &json!({"city": "Rome"}), None)
        .await
        .unwrap();
    let posts: Vec<Seen> = server
        .seen()
        .into_iter()
        .filter(|s| s.method == "POST")
        .collect();
    assert_eq!(posts.len(), 3);
    assert_eq!(posts[0].authorization.as_deref(), Some("Bearer user-token"));
    assert_eq!(
        posts[0].body,
        json!({"name": "get_account", "arguments": {}})
    );
    assert_eq!(posts[1].authorization.as_deref(), Some("Bearer other"));
    assert_eq!(posts[2].authorization, None);
    // Discovery never carries a caller's credentials.
    assert!(server
        .seen()
        .iter()
        .filter(|s| s.method == "GET")
        .all(|s| s.authorization.is_none()));
}

#[tokio::test]
async fn arguments_are_validated_against_the_catalog_schema_before_sending() {
    let server = echo_server().await;
    let client = CatalogClient::new(&server.base).unwrap();
    for bad in [
        json!({}),
        json!({"city": ""}),
        json!({"city": "Oslo", "extra": 1}),
        json!([1]),
    ] {
        let err = client.execute("get_weather", &bad, None).await.unwrap_err();
        assert_eq!(err.kind(), CatalogErrorKind::InvalidArguments, "{bad}");
        assert!(err.message().contains("get_weather"), "{err}");
    }
    assert_eq!(server.posts(), 0);
    let out = client
        .execute("get_weather", &json!({"city": "Oslo"}), None)
        .await
        .unwrap();
    assert_eq!(out, json!({"ran": "get_weather", "with": {"city": "Oslo"}}));
}

#[tokio::test]
async fn http_401_and_500_become_error_results_with_status_and_code() {
    let server = Server::start(|req, _| match (req.path.as_str(), req.body["arguments"]["city"].as_str()) {
        ("/api/tools", _) => tools_envelope(json!([weather()])),
        (_, Some("401")) => Reply::Json(401, json!({"detail": "token expired"})),
        (_, Some("500-envelope")) => Reply::Json(
            500,
            json!({"success": false, "data": null, "error": {
                "message": "The weather provider is down.",
                "code": "upstream_down",
                "status_code": 502,
                "raw": {"trace": "provider timeout after 30s"}
            }}),
        ),
        (_, Some("500-html")) => Reply::Text(500, "<html>Internal Server Error</html>"),
        (_, Some("remote-error")) => Reply::Json(
            200,
            json!({"success": false, "data": null, "error": {"message": "City not found.", "code": "not_found", "status_code": 404, "raw": "lookup: no rows"}}),
        ),
        _ => ok(json!({})),
    })
    .await;
    let seen_errors: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = seen_errors.clone();
    let client = CatalogClient::new(&server.base)
        .unwrap()
        .with_observer(Arc::new(move |e| {
            log.lock().unwrap().push(e.code().to_owned())
        }));
    let call = |city: &'static str| {
        let client = &client;
        async move {
            client
                .execute("get_weather", &json!({ "city": city }), None)
                .await
                .unwrap_err()
        }
    };

    let e = call("401").await;
    assert_eq!(e.kind(), CatalogErrorKind::Http);
    assert_eq!((e.status(), e.code()), (Some(401), "unauthorized"));
    assert!(e.message().contains("HTTP 401"), "{e}");
    assert!(e.raw().unwrap().contains("token expired"));

    let e = call("500-envelope").await;
    assert_eq!(e.kind(), CatalogErrorKind::Remote);
    assert_eq!(e.message(), "The weather provider is down.");
    assert_eq!((e.status(), e.code()), (Some(502), "upstream_down"));
    assert!(e.raw().unwrap().contains("provider timeout"));
    assert!(
        !e.message().contains("provider timeout"),
        "raw stays out of the model's text"
    );

    let e = call("500-html").await;
    assert_eq!(e.kind(), CatalogErrorKind::Http);
    assert_eq!((e.status(), e.code()), (Some(500), "catalog_http_error"));
    assert!(e.raw().unwrap().contains("Internal Server Error"));

    let e = call("remote-error").await;
    assert_eq!(e.kind(), CatalogErrorKind::Remote);
    assert_eq!(e.message(), "City not found.");
    assert_eq!(
        (e.status(), e.code(), e.raw()),
        (Some(404), "not_found", Some("lookup: no rows"))
    );

    assert_eq!(
        *seen_errors.lock().unwrap(),
        [
            "unauthorized",
            "upstream_down",
            "catalog_http_error",
            "not_found"
        ]
    );
}

#[tokio::test]
async fn a_service_that_does_not_answer_times_out() {
    let server = Server::start(|req, _| match req.path.as_str() {
        "/api/tools" => tools_envelope(json!([weather()])),
        _ => Reply::Hang,
    })
    .await;
    let client = CatalogClient::new(&server.base)
        .unwrap()
        .with_timeout(Duration::from_millis(200));
    let started = Instant::now();
    let e = client
        .execute("get_weather", &json!({"city": "Oslo"}), None)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), CatalogErrorKind::Timeout);
    assert_eq!(e.code(), "catalog_timeout");
    assert!(started.elapsed() < Duration::from_secs(5));

    let hanging = Server::start(|_, _| Reply::Hang).await;
    let client = CatalogClient::new(&hanging.base)
        .unwrap()
        .with_timeout(Duration::from_millis(200));
    assert_eq!(
        client.catalog().await.unwrap_err().kind(),
        CatalogErrorKind::Timeout
    );
}

#[tokio::test]
async fn malformed_envelopes_are_errors_not_panics() {
    type Case = (&'static str, fn() -> Reply);
    let cases: Vec<Case> = vec![
        ("not json", || Reply::Text(200, "hello")),
        ("no success", || {
            Reply::Json(200, json!({"data": {"tools": []}}))
        }),
        ("success not bool", || {
            Reply::Json(200, json!({"success": "yes", "data": {}}))
        }),
        ("array", || Reply::Json(200, json!([1, 2]))),
        ("no tools", || {
            Reply::Json(200, json!({"success": true, "data": {}}))
        }),
        ("tools not array", || {
            Reply::Json(200, json!({"success": true, "data": {"tools": {}}}))
        }),
        ("false without message", || {
            Reply::Json(200, json!({"success": false, "error": {}}))
        }),
        ("closed", || Reply::Close),
    ];
    for (what, reply) in cases {
        let server = Server::start(move |_, _| reply()).await;
        let client = CatalogClient::new(&server.base).unwrap();
        let e = client.catalog().await.unwrap_err();
        assert_eq!(e.kind(), CatalogErrorKind::Malformed, "{what}: {e}");
        assert_eq!(e.code(), "catalog_malformed_envelope");
        assert!(
            e.message()
                .starts_with("The tool catalog service sent an answer that could not be read"),
            "{what}: {e}"
        );
    }
    // An execute answer that is not an envelope.
    let server = Server::start(|req, _| match req.path.as_str() {
        "/api/tools" => tools_envelope(json!([weather()])),
        _ => Reply::Text(200, "{\"succ"),
    })
    .await;
    let client = CatalogClient::new(&server.base).unwrap();
    let e = client
        .execute("get_weather", &json!({"city": "Oslo"}), None)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), CatalogErrorKind::Malformed);
    assert_eq!(e.raw(), Some("{\"succ"));
}

/// Parameters whose definitions each use the next twice, `levels` deep: 2^levels schemas for a
/// validator to try on an argument that fails (`x: 5`).
fn multiplying_definitions(levels: usize) -> Value {
    let mut defs = serde_json::Map::new();
    for k in 0..levels {
        let next = json!({ "$ref": format!("#/$defs/D{}", k + 1) });
        defs.insert(format!("D{k}"), json!({ "anyOf": [next.clone(), next] }));
    }
    defs.insert(format!("D{levels}"), json!({ "type": "string" }));
    json!({ "type": "object", "properties": { "x": { "$ref": "#/$defs/D0" } }, "$defs": defs })
}

#[tokio::test]
async fn unusable_catalog_entries_are_skipped_with_a_reason() {
    let server = Server::start(|_, _| {
        tools_envelope(json!([
            weather(),
            {"name": "bad name!", "parameters": {"type": "object"}},
            {"name": "string_params", "parameters": "x"},
            {"name": "array_root", "parameters": {"type": "array"}},
            {"name": "bad_schema", "parameters": {"type": "object", "properties": {"a": {"type": "nonsense"}}}},
            {"name": "auth_not_bool", "requires_auth": "yes"},
            weather(),
            {"name": "no_params"},
            {"name": "multiplying", "parameters": multiplying_definitions(40)},
        ]))
    })
    .await;
    let client = CatalogClient::new(&server.base).unwrap();
    let catalog = client.catalog().await.unwrap();
    let names: Vec<&str> = catalog.tools().iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["get_weather", "no_params"]);
    let skipped: Vec<&str> = catalog.skipped().iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        skipped,
        [
            "bad name!",
            "string_params",
            "array_root",
            "bad_schema",
            "auth_not_bool",
            "get_weather",
            "multiplying"
        ]
    );
    let (_, reason) = &catalog.skipped()[6];
    assert!(reason.contains("more than 100000 schemas"), "{reason}");
    // A tool without parameters takes an empty object, and nothing else.
    client.execute("no_params", &json!({}), None).await.unwrap();
    let e = client
        .execute("no_params", &json!({"x": 1}), None)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), CatalogErrorKind::InvalidArguments);
}

#[tokio::test]
async fn chunked_answers_and_unreachable_services() {
    let server = Server::start(|req, _| match req.path.as_str() {
        "/api/tools" => Reply::Chunked(json!({"success": true, "data": {"tools": [weather()]}})),
        _ => Reply::Chunked(json!({"success": true, "data": {"temp": 21}})),
    })
    .await;
    let client = CatalogClient::new(&server.base).unwrap();
    let out = client
        .execute("get_weather", &json!({"city": "Oslo"}), None)
        .await
        .unwrap();
    assert_eq!(out, json!({"temp": 21}));

    // A port nothing listens on.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let client = CatalogClient::new(&format!("http://127.0.0.1:{port}")).unwrap();
    let e = client.catalog().await.unwrap_err();
    assert_eq!(e.kind(), CatalogErrorKind::Unreachable);
    assert!(CatalogClient::new("ftp://catalog.example").is_err());
}

#[tokio::test]
async fn catalog_tools_merge_into_a_registry_as_server_tools() {
    let server = Server::start(|req, _| match (req.path.as_str(), req.body["arguments"]["city"].as_str()) {
        ("/api/tools", _) => tools_envelope(json!([weather(), account()])),
        (_, Some("Atlantis")) => Reply::Json(
            200,
            json!({"success": false, "error": {"message": "No such city.", "code": "not_found", "status_code": 404}}),
        ),
        _ => ok(json!({"temp": 21, "auth": req.authorization})),
    })
    .await;
    let client = Arc::new(CatalogClient::new(&server.base).unwrap());
    let tools = client.server_tools().await.unwrap();
    assert!(tools.requires_auth("get_account"));
    assert!(!tools.requires_auth("get_weather"));
    let local = toolc_runtime::definitions_from_str(
        "local.tools.yaml",
        "version: 1\ntools:\n  - name: ping\n    description: Ping.\n    location: server\n",
    )
    .unwrap();

    // Signed out: requires_auth tools are refused as error results.
    let builder = Registry::builder()
        .definitions(local.clone())
        .executor("ping", executor_fn(|_| async { Ok(json!("pong")) }));
    let registry = tools
        .merge_into(builder, &local, None)
        .unwrap()
        .build()
        .unwrap();
    let names: Vec<&str> = registry.names().collect();
    assert_eq!(names, ["ping", "get_weather", "get_account"]);
    assert!(registry
        .definitions()
        .all(|d| d.location == Location::Server));
    let out = registry
        .call("get_weather", r#"{"city":"Oslo"}"#)
        .await
        .unwrap();
    assert_eq!(out, r#"{"temp":21,"auth":null}"#);
    let e = registry.call("get_account", "{}").await.unwrap_err();
    assert_eq!(e.kind(), CallErrorKind::ToolFailed);
    assert_eq!(e.code(), Some("auth_required"));
    let e = registry
        .call("get_weather", r#"{"city":"Atlantis"}"#)
        .await
        .unwrap_err();
    assert_eq!(e.code(), Some("not_found"));
    assert!(
        e.model_text().contains("No such city."),
        "{}",
        e.model_text()
    );
    // The registry validates with the catalog's schema before the executor runs.
    let before = server.posts();
    let e = registry
        .call("get_weather", r#"{"town":"Oslo"}"#)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), CallErrorKind::InvalidArguments);
    assert_eq!(server.posts(), before);

    // Signed in: the credentials go with the call.
    let registry = tools
        .merge_into(Registry::builder(), [], Some("Bearer abc".into()))
        .unwrap()
        .build()
        .unwrap();
    registry.call("get_account", "{}").await.unwrap();
    let out = registry
        .call("get_weather", r#"{"city":"Oslo"}"#)
        .await
        .unwrap();
    assert!(out.contains("Bearer abc"), "{out}");

    // In a session, the caller's own credential goes with the call, never the process-wide one:
    // two users of one registry reach the catalog as themselves.
    for (user, credential) in [("ann", "ann-token"), ("ben", "ben-token")] {
        let scope = SessionScope::new()
            .with_principal(Some(Principal::new(user).with_credential(credential)));
        let out = registry
            .call_with_context(scope.call("get_weather", "c1"), r#"{"city":"Oslo"}"#)
            .await
            .unwrap();
        assert!(out.contains(&format!("Bearer {credential}")), "{out}");
    }
    // A signed-in user without a credential does not borrow the process's.
    let scope = SessionScope::new().with_principal(Some(Principal::new("cid")));
    let e = registry
        .call_with_context(scope.call("get_account", "c2"), "{}")
        .await
        .unwrap_err();
    assert_eq!(e.code(), Some("auth_required"));
    // A credential that would break the header line is never sent.
    let scope = SessionScope::new().with_principal(Some(
        Principal::new("eve").with_credential("x\r\nX-Admin: 1"),
    ));
    let e = registry
        .call_with_context(scope.call("get_account", "c3"), "{}")
        .await
        .unwrap_err();
    assert_eq!(e.code(), Some("auth_required"));

    // A clash with a local tool is an error, and names every clashing tool.
    let clash = toolc_runtime::definitions_from_str(
        "clash.tools.yaml",
        "version: 1\ntools:\n  - name: get_weather\n    description: Local weather.\n    location: client\n",
    )
    .unwrap();
    let err = tools
        .merge_into(Registry::builder().definitions(clash.clone()), &clash, None)
        .unwrap_err();
    assert_eq!(err.names, ["get_weather"]);
    assert!(err.to_string().contains("get_weather"));
}
