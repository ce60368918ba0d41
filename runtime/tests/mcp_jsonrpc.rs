//! `McpServer` answers like JSON-RPC 2.0 where rmcp alone does not: text that is not JSON is a
//! parse error (`-32700`, id `null`) on stdio and over HTTP (status 400, not rmcp's 415), and the
//! session goes on; JSON that is no message is an invalid request (`-32600`); a `tools/call`
//! whose params do not parse is invalid params (`-32602`, not "method not found"); an unknown
//! method is `-32601`. Only the versions served as their specifications say are offered.
#![cfg(feature = "mcp")]

use std::sync::Arc;

use serde_json::{json, Value};
use tower::ServiceExt;

mod common {
    pub mod mcp;
}

use common::mcp::Pipe;
use toolc_runtime::mcp::McpServer;
use toolc_runtime::{definitions_from_str, executor_fn, Registry};

fn server() -> McpServer {
    let manifest =
        "version: 1\ntools:\n  - name: echo\n    description: Echoes.\n    location: server\n";
    let registry = Registry::builder()
        .definitions(definitions_from_str("e.tools.yaml", manifest).unwrap())
        .executor("echo", executor_fn(|args| async move { Ok(args) }))
        .build()
        .unwrap();
    McpServer::new(Arc::new(registry))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_stdio_what_is_not_json_rpc_is_answered_and_the_session_goes_on() {
    let (mut pipe, init) = Pipe::open(server(), json!({})).await;
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    pipe.send_raw("{this is not json").await;
    let parse = pipe.next().await;
    assert_eq!(parse["id"], Value::Null, "{parse}");
    assert_eq!(parse["error"]["code"], -32700, "{parse}");
    pipe.send_raw("[1, 2]").await;
    assert_eq!(pipe.next().await["error"]["code"], -32600);

    let ask = |id: u64, method: &str, params: Value| json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let no_name = pipe
        .ask(ask(2, "tools/call", json!({"arguments": {}})))
        .await;
    assert_eq!(no_name["error"]["code"], -32602, "{no_name}");
    assert!(no_name["error"]["message"]
        .as_str()
        .unwrap()
        .contains("`name`"));
    let bad_arguments = pipe
        .ask(ask(
            3,
            "tools/call",
            json!({"name": "echo", "arguments": "x"}),
        ))
        .await;
    assert_eq!(bad_arguments["error"]["code"], -32602, "{bad_arguments}");
    let unknown = pipe.ask(ask(4, "frobnicate/now", json!({}))).await;
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    // Still serving.
    let echoed = pipe.call(5, "echo", json!({})).await;
    assert_eq!(echoed["isError"], json!(false), "{echoed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn old_versions_are_not_offered() {
    for old in ["2025-03-26", "2024-11-05"] {
        let (mut pipe, _) = Pipe::open(server(), json!({})).await;
        let init = pipe
            .ask(
                json!({"jsonrpc": "2.0", "id": "again", "method": "initialize", "params": {
                "protocolVersion": old, "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}}),
            )
            .await;
        let answered = init["result"]["protocolVersion"]
            .as_str()
            .map(str::to_owned);
        assert_ne!(answered.as_deref(), Some(old), "{init}");
    }
}

async fn post(body: &str) -> (http::StatusCode, Value) {
    let service = server().streamable_http();
    let request = http::Request::post("/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("host", "localhost")
        .body(axum::body::Body::from(body.to_owned()))
        .unwrap();
    let response = service.oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(axum::body::Body::new(response.into_body()), 1 << 20)
        .await
        .unwrap();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

#[tokio::test]
async fn over_http_what_is_not_json_rpc_is_a_400_with_its_error() {
    let (status, body) = post("{this is not json").await;
    assert_eq!(status, http::StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["code"], -32700, "{body}");
    assert_eq!(body["id"], Value::Null);
    let (status, body) = post(r#"{"hello": "world"}"#).await;
    assert_eq!(status, http::StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["code"], -32600, "{body}");
    // A real message goes on to rmcp.
    let (status, _) = post(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
    )
    .await;
    assert!(status.is_success(), "{status}");
}
