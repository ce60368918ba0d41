//! The relay mounted in an application's axum router, beside the application's own routes, and
//! called from a handler of the application's own (its extractors and state run first).
#![cfg(feature = "testing")]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::json;
use toolc_runtime::realtime::script;
use toolc_runtime::relay::testing::{FakeModel, Script, TestBrowser};
use toolc_runtime::relay::{RelayConfig, RelayService};
use toolc_runtime::{definitions_from_str, executor_fn, Registry};

const LIMIT: Duration = Duration::from_secs(20);

fn registry() -> Arc<Registry> {
    let defs = definitions_from_str(
        "a.tools.yaml",
        "version: 1\ntools:\n  - name: ping\n    description: Answers pong.\n    location: server\n",
    )
    .unwrap();
    Arc::new(
        Registry::builder()
            .definitions(defs)
            .executor("ping", executor_fn(|_| async { Ok(json!("pong")) }))
            .build()
            .unwrap(),
    )
}

#[derive(Clone)]
struct App {
    relay: RelayService,
    closed_for_maintenance: bool,
}

/// The application's own handler: its state decides first, then the relay takes the request.
async fn voice(State(app): State<App>, request: Request) -> Response {
    if app.closed_for_maintenance {
        return (axum::http::StatusCode::SERVICE_UNAVAILABLE, "maintenance").into_response();
    }
    app.relay.handle(request).await
}

async fn serve(app: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
        .unwrap();
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_relay_runs_inside_an_axum_app_next_to_its_other_routes() {
    let model = FakeModel::start(
        Script::new()
            .wait_for("session.update", 1)
            .send_all(script::response_with_calls("r1", &[("c1", "ping", "{}")]))
            .wait_for("response.create", 1),
    )
    .await
    .unwrap();
    let registry = registry();
    let mut config = RelayConfig::new(&registry);
    config.upstream = model.url();
    let relay = RelayService::new(registry, config);
    let app = Router::new()
        .route("/health", get(|| async { "ok" }))
        .nest_service("/voice", relay.router())
        .route(
            "/own-handler",
            get(voice).with_state(App {
                relay: relay.clone(),
                closed_for_maintenance: false,
            }),
        )
        .route(
            "/closed",
            get(voice).with_state(App {
                relay: relay.clone(),
                closed_for_maintenance: true,
            }),
        );
    let addr = serve(app).await;

    // The application's own route still answers.
    let health = reqwest_free_get(addr, "/health").await;
    assert!(
        health.starts_with("HTTP/1.1 200") && health.ends_with("ok"),
        "{health}"
    );

    // A browser session through the nested router.
    let mut browser = TestBrowser::connect(&format!("ws://{addr}/voice"))
        .await
        .unwrap();
    let conn = model.connection(0, LIMIT).await.unwrap();
    assert!(conn.wait_for("response.create", 1, LIMIT).await);
    let outputs = conn.events_of("conversation.item.create");
    assert_eq!(outputs[0]["item"]["output"], "\"pong\"");
    assert!(
        browser
            .send(&json!({"type": "input_audio_buffer.commit"}))
            .await
    );
    assert!(conn.wait_for("input_audio_buffer.commit", 1, LIMIT).await);

    // Through the application's handler: its state decides before the relay does.
    let _second = TestBrowser::connect(&format!("ws://{addr}/own-handler"))
        .await
        .unwrap();
    assert!(model.connection(1, LIMIT).await.is_some());
    match TestBrowser::connect(&format!("ws://{addr}/closed")).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(r)) => assert_eq!(r.status(), 503),
        other => panic!("expected a 503, got {:?}", other.map(|_| ())),
    }
    // Both sessions are the relay's, whichever route they came in by.
    let opened = || {
        relay
            .stats()
            .sessions_opened
            .load(std::sync::atomic::Ordering::Relaxed)
    };
    let deadline = std::time::Instant::now() + LIMIT;
    while opened() < 2 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(opened(), 2);
}

/// A plain GET over a socket (the test needs no HTTP client for one line).
async fn reqwest_free_get(addr: SocketAddr, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut out = String::new();
    let _ = tokio::time::timeout(LIMIT, tcp.read_to_string(&mut out)).await;
    out
}

/// A handler that picks each page's upstream from what it asks for (`?room=NAME`) once the
/// relay has checked the page: the way a GPT-Live sideband's ticket names the session to attach
/// to. Only rooms of the page's own user exist.
async fn rooms(State((relay, model)): State<(RelayService, String)>, request: Request) -> Response {
    let room = request
        .uri()
        .query()
        .and_then(|q| q.strip_prefix("room="))
        .map(str::to_owned);
    relay
        .handle_at(request, move |principal| {
            let user = principal.map(|p| p.id().to_owned());
            match (room.as_deref(), user.as_deref()) {
                (Some(room), Some(user)) if room.starts_with(&format!("{user}-")) => {
                    Ok(format!("{model}/rooms/{room}"))
                }
                _ => Err(toolc_runtime::relay::Refusal::forbidden("not your room")),
            }
        })
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upstream_is_chosen_after_the_handshakes_checks_with_the_pages_principal() {
    use toolc_runtime::relay::{Handshake, StaticTokens};
    let model = FakeModel::start(Script::new().wait_for("session.update", 1))
        .await
        .unwrap();
    let registry = registry();
    let mut config = RelayConfig::new(&registry);
    config.upstream = "ws://127.0.0.1:9/never-used".into();
    config.authorizer = Some(Arc::new(
        StaticTokens::parse("tok-ann-0123456789abcdef ann\n").unwrap(),
    ));
    config.allowed_origins = Some(vec!["https://shop.example".into()]);
    let relay = RelayService::new(registry, config);
    let base = model.url().split("/v1/").next().unwrap().to_owned();
    let app = Router::new()
        .route("/", get(rooms))
        .with_state((relay.clone(), base));
    let addr = serve(app).await;
    let ann = [
        ("authorization", "Bearer tok-ann-0123456789abcdef"),
        ("origin", "https://shop.example"),
    ];

    // Another user's room, and a stranger: refused, nothing opened upstream.
    let url = |room: &str| format!("ws://{addr}/?room={room}");
    assert!(TestBrowser::connect_with(&url("bob-1"), &ann)
        .await
        .is_err());
    assert!(TestBrowser::connect(&url("ann-1")).await.is_err());
    let elsewhere = [ann[0], ("origin", "https://evil.example")];
    assert!(TestBrowser::connect_with(&url("ann-1"), &elsewhere)
        .await
        .is_err());
    assert_eq!(model.connection_count(), 0);
    let stats = relay.stats();
    let count = |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(count(&stats.refused_unauthorized), 2);
    assert_eq!(count(&stats.refused_origin), 1);

    // Ann's own room: the model connection goes where the handler chose.
    let page = TestBrowser::connect_with(&url("ann-1"), &ann)
        .await
        .unwrap();
    let conn = model.connection(0, LIMIT).await.unwrap();
    assert!(conn.wait_for("session.update", 1, LIMIT).await);
    assert_eq!(conn.path(), "/rooms/ann-1");
    page.close().await;

    // The same checks for a plain request.
    let handshake = |headers: &[(&str, &str)]| {
        let mut map = axum::http::HeaderMap::new();
        for (k, v) in headers {
            map.insert(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        Handshake {
            uri: "/sessions".parse().unwrap(),
            headers: map,
            remote: None,
        }
    };
    let principal = relay.authorize(handshake(&ann)).await.unwrap();
    assert_eq!(principal.map(|p| p.id().to_owned()).as_deref(), Some("ann"));
    let refused = relay.authorize(handshake(&elsewhere)).await.unwrap_err();
    assert_eq!(refused.status(), 403);
    let refused = relay.authorize(handshake(&[])).await.unwrap_err();
    assert_eq!(refused.status(), 401);
    assert_eq!(count(&stats.refused_unauthorized), 3);
}
