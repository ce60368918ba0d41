//! `McpServer` over a byte pipe with stdio's framing, driven by raw JSON-RPC: a client's
//! `notifications/cancelled` reaches the executor's cancellation signal.
#![cfg(feature = "mcp")]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use toolc_runtime::mcp::McpServer;
use toolc_runtime::{
    definitions_from_str, executor_fn_with_context, CallContext, Registry, ToolError,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_request_fires_the_executors_cancellation_signal() {
    let saw_cancellation = Arc::new(AtomicBool::new(false));
    let flag = saw_cancellation.clone();
    let registry = Registry::builder()
        .definitions(
            definitions_from_str(
                "w.tools.yaml",
                "version: 1\ntools:\n  - name: wait\n    description: Waits until cancelled.\n    location: server\n",
            )
            .unwrap(),
        )
        .executor(
            "wait",
            executor_fn_with_context(move |ctx: CallContext, _args: Value| {
                let flag = flag.clone();
                async move {
                    ctx.cancelled().await;
                    flag.store(true, Ordering::SeqCst);
                    Err::<Value, _>(ToolError::new("stopped: the client cancelled").with_code("cancelled"))
                }
            }),
        )
        .build()
        .unwrap();
    let (client, server) = tokio::io::duplex(64 * 1024);
    tokio::spawn(McpServer::new(Arc::new(registry)).serve_io(tokio::io::split(server)));
    let (read, mut write) = tokio::io::split(client);
    let mut lines = BufReader::new(read).lines();
    let send = |message: Value| {
        let mut line = message.to_string();
        line.push('\n');
        line
    };
    let init = send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
    );
    write.write_all(init.as_bytes()).await.unwrap();
    let response = lines.next_line().await.unwrap().unwrap();
    assert!(response.contains("\"id\":1"), "{response}");
    for message in [
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "wait", "arguments": {}}}),
    ] {
        write.write_all(send(message).as_bytes()).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!saw_cancellation.load(Ordering::SeqCst), "still waiting");
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": 2, "reason": "the user moved on"}});
    write.write_all(send(cancel).as_bytes()).await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !saw_cancellation.load(Ordering::SeqCst) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the executor never saw the cancellation"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Progress an executor reports reaches a client that sent a progress token, in order and
/// before the result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reported_progress_reaches_a_client_that_asked_for_it() {
    let registry = Registry::builder()
        .definitions(
            definitions_from_str(
                "c.tools.yaml",
                "version: 1\ntools:\n  - name: count\n    description: Counts to three.\n    location: server\n",
            )
            .unwrap(),
        )
        .executor(
            "count",
            executor_fn_with_context(|ctx: CallContext, _args: Value| async move {
                for step in 1..=3 {
                    ctx.report_progress(f64::from(step), Some(3.0), Some("counting"));
                    tokio::task::yield_now().await;
                }
                Ok::<_, ToolError>(json!({ "counted": 3 }))
            }),
        )
        .build()
        .unwrap();
    let (client, server) = tokio::io::duplex(64 * 1024);
    tokio::spawn(McpServer::new(Arc::new(registry)).serve_io(tokio::io::split(server)));
    let (read, mut write) = tokio::io::split(client);
    let mut lines = BufReader::new(read).lines();
    for message in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "count", "arguments": {}, "_meta": {"progressToken": "p1"}}}),
    ] {
        let mut line = message.to_string();
        line.push('\n');
        write.write_all(line.as_bytes()).await.unwrap();
    }
    let mut progress = Vec::new();
    loop {
        let line = tokio::time::timeout(Duration::from_secs(5), lines.next_line())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["method"] == "notifications/progress" {
            assert_eq!(message["params"]["progressToken"], "p1");
            assert_eq!(message["params"]["total"], 3.0);
            progress.push(message["params"]["progress"].as_f64().unwrap());
        } else if message["id"] == 2 {
            assert_eq!(message["result"]["structuredContent"], Value::Null);
            break;
        }
    }
    assert_eq!(progress, [1.0, 2.0, 3.0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_that_needs_approval_does_not_run_over_mcp() {
    let ran = Arc::new(AtomicBool::new(false));
    let flag = ran.clone();
    let registry = Registry::builder()
        .definitions(
            definitions_from_str(
                "a.tools.yaml",
                "version: 1\ntools:\n  - name: wipe\n    description: Wipe the disk.\n    location: server\n    approval: required\n",
            )
            .unwrap(),
        )
        .executor(
            "wipe",
            executor_fn_with_context(move |_ctx: CallContext, _args: Value| {
                let flag = flag.clone();
                async move {
                    flag.store(true, Ordering::SeqCst);
                    Ok(json!({}))
                }
            }),
        )
        .build()
        .unwrap();
    let (client, server) = tokio::io::duplex(64 * 1024);
    tokio::spawn(McpServer::new(Arc::new(registry)).serve_io(tokio::io::split(server)));
    let (read, mut write) = tokio::io::split(client);
    let mut lines = BufReader::new(read).lines();
    for message in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "wipe", "arguments": {}}}),
    ] {
        let mut line = message.to_string();
        line.push('\n');
        write.write_all(line.as_bytes()).await.unwrap();
    }
    let (mut result, mut listed) = (Value::Null, Value::Null);
    while result.is_null() || listed.is_null() {
        let line = tokio::time::timeout(Duration::from_secs(5), lines.next_line())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["id"] == 2 {
            result = v;
        } else if v["id"] == 3 {
            listed = v;
        }
    }
    // Not offered: this server cannot ask, so it does not advertise a tool that always refuses.
    assert_eq!(listed["result"]["tools"], json!([]), "{listed}");
    // Named anyway: refused in the one `{"error": ...}` shape every path sends.
    assert_eq!(result["result"]["isError"], true, "{result}");
    let text: Value =
        serde_json::from_str(result["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text["error"]["kind"], "not_approved", "{text}");
    assert_eq!(text["error"]["code"], "approval_unavailable", "{text}");
    assert!(!ran.load(Ordering::SeqCst));
}
