//! `McpServer` over a byte pipe with stdio's framing, driven by raw JSON-RPC: a client's
//! `notifications/cancelled` reaches the executor's cancellation signal.
#![cfg(feature = "mcp")]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
mod common {
    pub mod mcp;
}

use common::mcp::Pipe;
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
async fn a_tool_that_needs_approval_does_not_run_for_a_client_without_elicitation() {
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
    // Offered: each call asks the user through elicitation (see `mcp_approvals.rs`).
    assert_eq!(listed["result"]["tools"][0]["name"], "wipe", "{listed}");
    // This client declared no elicitation, so nobody can be asked: refused in the one
    // `{"error": ...}` shape every path sends.
    assert_eq!(result["result"]["isError"], true, "{result}");
    let text: Value =
        serde_json::from_str(result["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text["error"]["kind"], "not_approved", "{text}");
    assert_eq!(text["error"]["code"], "approval_unavailable", "{text}");
    assert!(!ran.load(Ordering::SeqCst));
}

/// `tools/list` in the registry's order every time, with the cache hints of MCP 2026-07-28:
/// `ttlMs` (the manifest's `mcp.list_ttl`, else 5 minutes, unless the application says
/// otherwise) and `cacheScope`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_list_keeps_its_order_and_carries_cache_hints() {
    use toolc_runtime::mcp::ListCache;
    let manifest = "version: 1\ntools:\n  - name: zeta\n    description: Last by name, first here.\n    location: server\n  - name: alpha\n    description: First by name.\n    location: server\n  - name: mid\n    description: In between.\n    location: server\n";
    let registry = Arc::new(
        Registry::builder()
            .definitions(definitions_from_str("o.tools.yaml", manifest).unwrap())
            .executor(
                "zeta",
                toolc_runtime::executor_fn(|_| async { Ok(json!({})) }),
            )
            .executor(
                "alpha",
                toolc_runtime::executor_fn(|_| async { Ok(json!({})) }),
            )
            .executor(
                "mid",
                toolc_runtime::executor_fn(|_| async { Ok(json!({})) }),
            )
            .build()
            .unwrap(),
    );
    let list = |id: u64| json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {}});
    let names = |v: &Value| -> Vec<String> {
        v["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let (mut pipe, _) = Pipe::open(McpServer::new(registry.clone()), json!({})).await;
    let (first, second) = (pipe.ask(list(2)).await, pipe.ask(list(3)).await);
    assert_eq!(
        names(&first),
        ["zeta", "alpha", "mid"],
        "the registry's order"
    );
    assert_eq!(names(&first), names(&second), "the same order every time");
    assert_eq!(first["result"]["ttlMs"], 300_000);
    assert_eq!(first["result"]["cacheScope"], "public");

    // The manifest's `mcp.list_ttl` (the generated `registry()` sets it) is the default.
    let from_manifest = Arc::new(
        Registry::builder()
            .definitions(registry.definitions().cloned())
            .mcp_list_ttl(Duration::from_secs(90))
            .executor(
                "zeta",
                toolc_runtime::executor_fn(|_| async { Ok(json!({})) }),
            )
            .executor(
                "alpha",
                toolc_runtime::executor_fn(|_| async { Ok(json!({})) }),
            )
            .executor(
                "mid",
                toolc_runtime::executor_fn(|_| async { Ok(json!({})) }),
            )
            .build()
            .unwrap(),
    );
    let (mut pipe, _) = Pipe::open(McpServer::new(from_manifest), json!({})).await;
    assert_eq!(pipe.ask(list(2)).await["result"]["ttlMs"], 90_000);

    let private = McpServer::new(registry).with_list_cache(ListCache {
        ttl: Duration::ZERO,
        shared: false,
    });
    let (mut pipe, _) = Pipe::open(private, json!({})).await;
    let listed = pipe.ask(list(2)).await;
    assert_eq!(listed["result"]["ttlMs"], 0);
    assert_eq!(listed["result"]["cacheScope"], "private");
}

/// A `mode: async` tool is an MCP task for a client that declares the tasks extension: the
/// call answers with the task at once, `tasks/get` follows it to its result, `tasks/cancel`
/// fires the executor's cancellation signal. A client without the extension gets the result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_tools_are_tasks_for_clients_that_take_tasks() {
    let release = Arc::new(tokio::sync::Notify::new());
    let saw_cancel = Arc::new(AtomicBool::new(false));
    let (gate, flag) = (release.clone(), saw_cancel.clone());
    let manifest = "version: 1\ntools:\n  - name: build_report\n    description: Builds a long report.\n    location: server\n    mode: async\n    timeout: 30s\n    parameters:\n      type: object\n      properties: { topic: { type: string } }\n";
    let registry = Arc::new(
        Registry::builder()
            .definitions(definitions_from_str("t.tools.yaml", manifest).unwrap())
            .executor(
                "build_report",
                executor_fn_with_context(move |ctx: CallContext, args: Value| {
                    let (gate, flag) = (gate.clone(), flag.clone());
                    async move {
                        tokio::select! {
                            () = gate.notified() => Ok(json!({"report": args["topic"]})),
                            () = ctx.cancelled() => {
                                flag.store(true, Ordering::SeqCst);
                                Err(ToolError::new("stopped").with_code("cancelled"))
                            }
                        }
                    }
                }),
            )
            .build()
            .unwrap(),
    );
    let tasks = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let (mut pipe, init) = Pipe::open(McpServer::new(registry.clone()), tasks).await;
    assert!(
        init["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"].is_object(),
        "the server offers tasks: {init}"
    );
    let get = |id: u64, task: &str| json!({"jsonrpc": "2.0", "id": id, "method": "tasks/get", "params": {"taskId": task}});

    let created = pipe.call(2, "build_report", json!({"topic": "Q3"})).await;
    assert_eq!(created["resultType"], "task", "{created}");
    assert_eq!(created["status"], "working");
    let task = created["taskId"].as_str().unwrap().to_owned();
    let working = pipe.ask(get(3, &task)).await;
    assert_eq!(working["result"]["status"], "working", "{working}");
    release.notify_one();
    let mut done = Value::Null;
    for i in 0..50 {
        done = pipe.ask(get(10 + i, &task)).await;
        if done["result"]["status"] != "working" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(done["result"]["status"], "completed", "{done}");
    let text = done["result"]["result"]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(text).unwrap(),
        json!({"report": "Q3"})
    );

    // Cancelled cooperatively: the executor's signal fires, and the task says so.
    let created = pipe.call(100, "build_report", json!({"topic": "Q4"})).await;
    let second = created["taskId"].as_str().unwrap().to_owned();
    let ack = pipe
        .ask(
            json!({"jsonrpc": "2.0", "id": 101, "method": "tasks/cancel",
                     "params": {"taskId": second}}),
        )
        .await;
    assert!(ack.get("error").is_none(), "{ack}");
    let cancelled = pipe.ask(get(102, &second)).await;
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    for _ in 0..50 {
        if saw_cancel.load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(saw_cancel.load(Ordering::SeqCst), "the executor was told");
    let unknown = pipe.ask(get(103, "task-999")).await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");

    // A client without the extension waits for the result itself.
    let (mut plain, _) = Pipe::open(McpServer::new(registry), json!({})).await;
    release.notify_one();
    let result = plain.call(2, "build_report", json!({"topic": "Q1"})).await;
    assert!(result.get("taskId").is_none(), "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(text).unwrap(),
        json!({"report": "Q1"})
    );
}

/// `returns: content`: the executor's `ToolContent` reaches the client as MCP content blocks
/// (not `structuredContent`), and `tools/list` gives the tool no `outputSchema`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_content_tool_answers_with_mcp_content_blocks() {
    let manifest = "version: 1\ntools:\n  - name: snapshot\n    description: Takes a picture.\n    location: server\n    returns: content\n";
    let registry = Arc::new(
        Registry::builder()
            .definitions(definitions_from_str("c.tools.yaml", manifest).unwrap())
            .executor(
                "snapshot",
                toolc_runtime::executor_fn(|_| async {
                    let content = toolc_runtime::ToolContent::new()
                        .text("Here it is:")
                        .image("iVBORw0KGgo=", "image/png")
                        .audio("UklGRg==", "audio/wav")
                        .resource_blob("test://raw", "application/octet-stream", "AAEC");
                    Ok(serde_json::to_value(content).unwrap())
                }),
            )
            .build()
            .unwrap(),
    );
    let (mut pipe, _) = Pipe::open(McpServer::new(registry), json!({})).await;
    let listed = pipe
        .ask(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}))
        .await;
    assert!(
        listed["result"]["tools"][0].get("outputSchema").is_none(),
        "{listed}"
    );
    let result = pipe.call(3, "snapshot", json!({})).await;
    assert!(result.get("structuredContent").is_none(), "{result}");
    assert_eq!(
        result["content"],
        json!([
            { "type": "text", "text": "Here it is:" },
            { "type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png" },
            { "type": "audio", "data": "UklGRg==", "mimeType": "audio/wav" },
            { "type": "resource", "resource": {
                "uri": "test://raw", "mimeType": "application/octet-stream", "blob": "AAEC" } }
        ])
    );
}
