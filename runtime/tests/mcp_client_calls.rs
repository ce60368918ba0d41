//! `McpTools` calls as a registry's callers see them, against toolc's own `McpServer`: the
//! server's progress reaches the caller's context; cancelling the caller's context reaches the
//! server (`notifications/cancelled`) and ends the call; a hung server is bounded by the tools'
//! timeout; the server's annotations are kept; over HTTP, a bearer token and headers go with
//! every request.
#![cfg(all(feature = "mcp", feature = "mcp-client"))]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use toolc_runtime::mcp::{McpServer, McpTools};
use toolc_runtime::{
    definitions_from_str, executor_fn_with_context, CallErrorKind, Progress, Registry, SessionScope,
};

const MANIFEST: &str = r#"
version: 1
tools:
  - name: count
    description: Counts to three, reporting each step.
    location: server
    annotations: { read_only: true, idempotent: true, open_world: false }
  - name: wait
    description: Waits until it is cancelled.
    location: server
    timeout: 1h
  - name: whoami
    description: Says who the caller is.
    location: server
"#;

/// The server side: its tools, and whether `wait` saw its cancellation signal.
fn server(cancelled: Arc<AtomicBool>) -> McpServer {
    let registry = Registry::builder()
        .definitions(definitions_from_str("s.tools.yaml", MANIFEST).unwrap())
        .executor(
            "count",
            executor_fn_with_context(|ctx, _| async move {
                for step in 1..=3 {
                    ctx.report_progress(f64::from(step), Some(3.0), Some(&format!("step {step}")));
                }
                Ok(json!({ "counted": 3 }))
            }),
        )
        .executor(
            "wait",
            executor_fn_with_context(move |ctx, _| {
                let cancelled = cancelled.clone();
                async move {
                    ctx.cancelled().await;
                    cancelled.store(true, Ordering::SeqCst);
                    Ok(json!("stopped"))
                }
            }),
        )
        .executor(
            "whoami",
            executor_fn_with_context(|ctx, _| async move {
                Ok(json!({
                    "principal": ctx.principal().map(|p| p.id().to_owned()),
                    "key": ctx.principal().and_then(|p| p.credential().map(str::to_owned)),
                }))
            }),
        )
        .build()
        .unwrap();
    McpServer::new(Arc::new(registry))
}

/// The client side: the server's tools in a registry of their own, over a pipe.
async fn client(server: McpServer) -> (Arc<McpTools>, Registry) {
    let (near, far) = tokio::io::duplex(64 * 1024);
    tokio::spawn(server.serve_io(tokio::io::split(far)));
    let tools = McpTools::connect(tokio::io::split(near)).await.unwrap();
    let registry = tools
        .merge_into(Registry::builder(), &[])
        .unwrap()
        .build()
        .unwrap();
    (tools, registry)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_progress_reaches_the_callers_context() {
    let (_tools, registry) = client(server(Arc::default())).await;
    type Reports = Vec<(f64, Option<f64>, Option<String>)>;
    let seen: Arc<Mutex<Reports>> = Arc::default();
    let sink = seen.clone();
    let ctx = SessionScope::new()
        .call("count", "c1")
        .with_progress(Arc::new(move |p: Progress| {
            sink.lock().unwrap().push((p.progress, p.total, p.message));
        }));
    let out = registry
        .call_value_with_context(ctx, json!({}))
        .await
        .unwrap();
    assert_eq!(out, json!({ "counted": 3 }));
    // The server sends its reports before its result; give the client's reader a moment.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let seen = seen.lock().unwrap();
    // rmcp hands notifications to concurrent tasks: a report older than one passed on is
    // dropped (progress only moves forward), so the caller sees an increasing run ending at
    // the last one.
    assert!(!seen.is_empty(), "no progress reached the caller");
    assert!(
        seen.windows(2).all(|w| w[0].0 < w[1].0),
        "progress went backwards: {seen:?}"
    );
    assert_eq!(
        seen.last().unwrap(),
        &(3.0, Some(3.0), Some("step 3".to_owned()))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_callers_context_cancels_the_servers_call() {
    let cancelled = Arc::new(AtomicBool::new(false));
    let (_tools, registry) = client(server(cancelled.clone())).await;
    let scope = SessionScope::new();
    let ctx = scope.call("wait", "c1");
    let call = tokio::spawn(async move { registry.call_value_with_context(ctx, json!({})).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    scope.cancel();
    let error = tokio::time::timeout(Duration::from_secs(5), call)
        .await
        .expect("the call ends once cancelled")
        .unwrap()
        .unwrap_err();
    assert_eq!(error.code(), Some("cancelled"), "{error:?}");
    // The server heard it: its executor's signal fired.
    for _ in 0..100 {
        if cancelled.load(Ordering::SeqCst) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the server's executor was never cancelled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_server_is_bounded_by_the_tools_timeout_and_hints_are_kept() {
    let (near, far) = tokio::io::duplex(64 * 1024);
    tokio::spawn(server(Arc::default()).serve_io(tokio::io::split(far)));
    let tools = McpTools::connect(tokio::io::split(near)).await.unwrap();
    let count = tools
        .definitions()
        .into_iter()
        .find(|d| d.name == "count")
        .unwrap();
    assert_eq!(count.timeout, Some(toolc_runtime::mcp::DEFAULT_MCP_TIMEOUT));
    assert_eq!(count.annotations.read_only, Some(true));
    assert_eq!(count.annotations.idempotent, Some(true));
    assert_eq!(count.annotations.open_world, Some(false));
    tools.set_timeout(Duration::from_millis(200));
    let registry = tools
        .merge_into(Registry::builder(), &[])
        .unwrap()
        .build()
        .unwrap();
    let started = std::time::Instant::now();
    let error = registry.call_value("wait", json!({})).await.unwrap_err();
    assert_eq!(error.kind(), CallErrorKind::Timeout, "{error:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_a_bearer_token_and_headers_go_with_every_request() {
    let server = server(Arc::default()).with_principal(|parts| {
        let header = |name: &str| {
            parts
                .headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let token = header("authorization")?.strip_prefix("Bearer ")?.to_owned();
        let principal = toolc_runtime::Principal::new(token);
        Some(match header("x-api-key") {
            Some(key) => principal.with_credential(key),
            None => principal,
        })
    });
    let app = axum::Router::new().nest_service("/mcp", server.streamable_http());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let tools = McpTools::connect_http_with(&url, Some("alice-token"), &[("x-api-key", "k-42")])
        .await
        .unwrap();
    let registry = tools
        .merge_into(Registry::builder(), &[])
        .unwrap()
        .build()
        .unwrap();
    let out: Value = registry.call_value("whoami", json!({})).await.unwrap();
    assert_eq!(out, json!({ "principal": "alice-token", "key": "k-42" }));
    assert!(
        McpTools::connect_http_with(&url, None, &[("mcp-session-id", "forged")])
            .await
            .is_err(),
        "a header the transport owns is refused"
    );
}
