//! `McpTools` as a client of a server that runs a call as a task (the
//! `io.modelcontextprotocol/tasks` extension): the client names itself `toolc`, declares the
//! extension, follows the task with `tasks/get` to its result, and reports a cancelled task as
//! the tool's error. The server here is raw JSON-RPC over a pipe, so every message is seen.
#![cfg(feature = "mcp-client")]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use toolc_runtime::mcp::McpTools;

/// A fake MCP server: answers `initialize` and `tools/list`, makes every `tools/call` a task,
/// and answers `tasks/get` with `working` until `polls` have been made, then with `last`.
async fn fake_server(
    io: tokio::io::DuplexStream,
    polls: usize,
    last: Value,
    seen: Arc<Mutex<Vec<Value>>>,
) {
    let (read, mut write) = tokio::io::split(io);
    let mut lines = BufReader::new(read).lines();
    let mut asked = 0;
    let task = |status: &str| {
        json!({"taskId": "task-7", "status": status, "createdAt": "2026-12-04T00:00:00.000Z",
               "lastUpdatedAt": "2026-12-04T00:00:00.000Z", "ttlMs": 60000, "pollIntervalMs": 10})
    };
    while let Ok(Some(line)) = lines.next_line().await {
        let message: Value = serde_json::from_str(&line).unwrap();
        seen.lock().unwrap().push(message.clone());
        let Some(id) = message.get("id").cloned() else {
            continue;
        };
        let result = match message["method"].as_str().unwrap_or_default() {
            "initialize" => json!({
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}},
                "serverInfo": {"name": "fake", "version": "1"}
            }),
            "tools/list" => json!({"tools": [{
                "name": "build_report", "description": "A long report.",
                "inputSchema": {"type": "object", "properties": {"topic": {"type": "string"}}}
            }]}),
            "tools/call" => {
                let mut created = task("working");
                created["resultType"] = json!("task");
                created
            }
            "tasks/get" => {
                asked += 1;
                if asked < polls {
                    task("working")
                } else {
                    let mut done = task(last["status"].as_str().unwrap());
                    if let Some(result) = last.get("result") {
                        done["result"] = result.clone();
                    }
                    done
                }
            }
            _ => json!({}),
        };
        let mut reply = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
        reply.push('\n');
        if write.write_all(reply.as_bytes()).await.is_err() {
            return;
        }
    }
}

async fn tools(polls: usize, last: Value) -> (Arc<McpTools>, Arc<Mutex<Vec<Value>>>) {
    let (client, server) = tokio::io::duplex(64 * 1024);
    let seen = Arc::new(Mutex::new(Vec::new()));
    tokio::spawn(fake_server(server, polls, last, seen.clone()));
    let tools = McpTools::connect(tokio::io::split(client)).await.unwrap();
    (tools, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_followed_to_its_result() {
    let result =
        json!({"content": [{"type": "text", "text": "{\"report\":\"Q3\"}"}], "isError": false});
    let (tools, seen) = tools(3, json!({"status": "completed", "result": result})).await;
    let registry = tools
        .merge_into(toolc_runtime::Registry::builder(), &[])
        .unwrap()
        .build()
        .unwrap();
    let value = tokio::time::timeout(
        Duration::from_secs(10),
        registry.call_value("build_report", json!({"topic": "Q3"})),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(value, json!({"report": "Q3"}));
    let seen = seen.lock().unwrap();
    let init = &seen[0];
    assert_eq!(init["params"]["clientInfo"]["name"], "toolc", "{init}");
    // `initialize` names the last version that has an `initialize` handshake.
    assert_eq!(init["method"], "initialize", "{init}");
    assert_eq!(init["params"]["protocolVersion"], "2025-11-25", "{init}");
    assert!(
        init["params"]["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"].is_object(),
        "{init}"
    );
    let polls = seen.iter().filter(|m| m["method"] == "tasks/get").count();
    assert_eq!(polls, 3, "polled until the task completed");
    assert!(seen
        .iter()
        .filter(|m| m["method"] == "tasks/get")
        .all(|m| m["params"]["taskId"] == "task-7"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_task_is_the_tools_error() {
    let (tools, _) = tools(1, json!({"status": "cancelled"})).await;
    let registry = tools
        .merge_into(toolc_runtime::Registry::builder(), &[])
        .unwrap()
        .build()
        .unwrap();
    let error = registry
        .call_value("build_report", json!({"topic": "Q3"}))
        .await
        .unwrap_err();
    assert!(
        error.model_text().contains("cancelled the task"),
        "{}",
        error.model_text()
    );
}
