//! Runs the README's Rust snippets (the modules of `readme-snippets`) and checks that they do
//! what the README says next to them. One test binary, because the tracing snippet installs the
//! process's global subscriber.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use opentelemetry_sdk::trace::InMemorySpanExporter;
use readme_snippets::{builder, fn_tools, mcp, mcp_oauth_server, relay, telemetry, typed_registry};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::{HeaderValue, StatusCode};
use tokio_tungstenite::tungstenite::Error as WsError;
use toolc_runtime::relay::testing::{FakeModel, Script};
use toolc_runtime::Registry;
use tower::ServiceExt;

const LIMIT: Duration = Duration::from_secs(10);

#[tokio::test]
async fn typed_registry_answers_with_the_generated_output() {
    let output = typed_registry::order_status().await.unwrap();
    assert_eq!(output, r#"{"status":"shipped","eta":"2026-12-24"}"#);
}

#[tokio::test]
async fn fn_tools_run_and_client_tools_are_declared() {
    let registry = fn_tools::docs_registry().unwrap();
    let found = registry
        .call("search_docs", r#"{"query":"refund"}"#)
        .await
        .unwrap();
    assert_eq!(found, r#"["Refunds reach your card in 5 days."]"#);
    assert!(registry.definition("highlight_element").is_some());
    let refused = registry
        .call("highlight_element", r#"{"selector":"h1"}"#)
        .await
        .unwrap_err();
    // A client tool runs in the browser: the registry refuses to run it on the server.
    assert_eq!(refused.kind().as_str(), "client_tool");
}

fn support_registry() -> Registry {
    typed_registry::support::registry(typed_registry::Desk).unwrap()
}

#[tokio::test]
async fn the_relay_in_your_own_app_checks_token_and_origin() {
    let model = FakeModel::start(Script::new().wait_for("session.update", 1))
        .await
        .unwrap();
    std::env::set_var("OPENAI_API_KEY", "sk-readme");
    let sessions = relay::Sessions(Arc::new(HashMap::from([(
        "tok-1".to_owned(),
        "user-1".to_owned(),
    )])));
    let app = relay::voice_app(support_registry(), sessions, model.url()).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(relay::serve(listener, app));
    let url = format!("ws://{addr}/voice");

    let handshake = |token: Option<&str>, origin: &str| {
        let mut request = url.as_str().into_client_request().unwrap();
        let headers = request.headers_mut();
        headers.insert("origin", HeaderValue::from_str(origin).unwrap());
        if let Some(token) = token {
            let protocols = format!("toolc, toolc.bearer.{token}");
            headers.insert(
                "sec-websocket-protocol",
                HeaderValue::from_str(&protocols).unwrap(),
            );
        }
        tokio_tungstenite::connect_async(request)
    };
    let refusal = |result: Result<_, WsError>| match result {
        Ok(_) => panic!("the relay let the browser in"),
        Err(WsError::Http(response)) => response.status(),
        Err(other) => panic!("handshake failed: {other}"),
    };

    let no_token = handshake(None, "https://shop.example").await;
    assert_eq!(refusal(no_token), StatusCode::UNAUTHORIZED);
    let unknown = handshake(Some("tok-2"), "https://shop.example").await;
    assert_eq!(refusal(unknown), StatusCode::UNAUTHORIZED);
    let elsewhere = handshake(Some("tok-1"), "https://evil.example").await;
    assert_eq!(refusal(elsewhere), StatusCode::FORBIDDEN);
    assert_eq!(
        model.connection_count(),
        0,
        "a refused browser opens no model connection"
    );

    let (browser, response) = handshake(Some("tok-1"), "https://shop.example")
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::SWITCHING_PROTOCOLS);
    assert_eq!(
        response.headers()["sec-websocket-protocol"],
        "toolc",
        "the token is never echoed"
    );
    let upstream = model
        .connection(0, LIMIT)
        .await
        .expect("a model connection");
    assert!(upstream.wait_for("session.update", 1, LIMIT).await);
    assert_eq!(
        upstream.authorization().as_deref(),
        Some("Bearer sk-readme")
    );
    let update: Value = upstream.events_of("session.update").remove(0);
    let names: Vec<&str> = update["session"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"get_order_status"), "{names:?}");
    drop(browser);
}

#[tokio::test]
async fn the_mcp_router_answers_initialize() {
    let app = mcp::mcp_app(support_registry());
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "readme", "version": "0"}}
    });
    let request = toolc_runtime::relay::axum::http::Request::post("/mcp")
        .header("host", "localhost")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(toolc_runtime::relay::axum::body::Body::from(
            body.to_string(),
        ))
        .unwrap();
    let response = app.oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = toolc_runtime::relay::axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("\"support-desk\""), "{text}");
}

#[tokio::test]
async fn the_introspected_app_serves_its_metadata_and_refuses_a_request_without_a_token() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let app = mcp_oauth_server::introspected_app(Arc::new(support_registry()), "s".into()).unwrap();
    let get = |uri: &str| {
        toolc_runtime::relay::axum::http::Request::get(uri)
            .header("host", "localhost")
            .body(toolc_runtime::relay::axum::body::Body::empty())
            .unwrap()
    };
    let metadata = app
        .clone()
        .oneshot(get("/.well-known/oauth-protected-resource/mcp"))
        .await
        .unwrap();
    assert_eq!(metadata.status(), 200);
    let bytes = toolc_runtime::relay::axum::body::to_bytes(metadata.into_body(), 1 << 20)
        .await
        .unwrap();
    let document: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(document["resource"], "https://mcp.example.com/mcp");
    // No token: refused before the introspection endpoint (which does not exist) is asked.
    let refused = app.oneshot(get("/mcp")).await.unwrap();
    assert_eq!(refused.status(), 401);
}

#[tokio::test]
async fn telemetry_exports_a_span_per_call() {
    let exporter = InMemorySpanExporter::default();
    let provider = telemetry::init_tracing(exporter.clone());
    // A chat turn's call (the relay's calls have the same span, inside their session's).
    let runner = toolc_runtime::chat::TurnRunner::new(Arc::new(support_registry()));
    let call = toolc_runtime::chat::ToolCall::new(
        "call-1",
        "get_order_status",
        r#"{"order_number":"AB-123456"}"#,
    );
    let outcome = runner.run(&[call]).await;
    assert_eq!(outcome.results.len(), 1);
    provider.force_flush().unwrap();
    let spans = exporter.get_finished_spans().unwrap();
    let call = spans
        .iter()
        .find(|s| s.name == "execute_tool get_order_status")
        .unwrap_or_else(|| panic!("no execute_tool span in {spans:?}"));
    let tool = call
        .attributes
        .iter()
        .find(|kv| kv.key.as_str() == "gen_ai.tool.name")
        .map(|kv| kv.value.to_string());
    assert_eq!(tool.as_deref(), Some("get_order_status"));
    provider.shutdown().unwrap();
}

#[tokio::test]
async fn the_generated_builder_takes_tool_fns_and_the_declarations_are_anthropics_tools() {
    let registry = builder::desk_registry().unwrap();
    let names: Vec<&str> = registry.names().collect();
    let mut expected = support_registry_names();
    expected.push("today");
    assert_eq!(names, expected);
    assert_eq!(
        registry.call("today", "{}").await.unwrap(),
        r#""2026-12-24""#
    );
    let output = registry
        .call("get_order_status", r#"{"order_number":"AB-123456"}"#)
        .await
        .unwrap();
    assert_eq!(output, r#"{"status":"shipped","eta":"2026-12-24"}"#);

    let tools = builder::anthropic_tools().unwrap();
    let declared: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(declared, support_registry_names());
    assert!(tools[0]["input_schema"].is_object(), "{tools}");
}

#[tokio::test]
async fn an_mcp_servers_tools_join_the_generated_builder() {
    let server = tokio::process::Command::new(env!("CARGO_BIN_EXE_docs_mcp_stdio"));
    let registry = tokio::time::timeout(LIMIT, mcp::desk_with_mcp_tools(server))
        .await
        .expect("in time")
        .unwrap();
    let names: Vec<&str> = registry.names().collect();
    // The manifest's tools, then the MCP server's (its server tools: `search_docs`).
    let mut expected: Vec<&str> = support_registry_names();
    expected.push("search_docs");
    assert_eq!(names, expected);
    let found = tokio::time::timeout(LIMIT, registry.call("search_docs", r#"{"query":"refund"}"#))
        .await
        .expect("in time")
        .unwrap();
    assert!(found.contains("Refunds reach your card"), "{found}");
}

fn support_registry_names() -> Vec<&'static str> {
    let registry = support_registry();
    registry
        .names()
        .map(|n| &*Box::leak(n.to_owned().into_boxed_str()))
        .collect()
}

/// The OTLP exporter the README shows builds (it connects only when it exports). Not in an
/// async test: its blocking HTTP client may not be dropped inside a runtime.
#[test]
fn the_otlp_exporter_builds() {
    telemetry::otlp_exporter("http://127.0.0.1:4318/v1/traces").unwrap();
}
