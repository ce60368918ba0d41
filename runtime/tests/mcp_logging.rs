//! MCP logging with `tracing` as the source: after `logging/setLevel`, the events recorded while
//! one of the client's calls runs reach that client as `notifications/message` (at or above its
//! level, before the call's result); a client that set no level, and every other client, get
//! none of them. Its own test binary, because it installs a global subscriber.
#![cfg(feature = "mcp")]

use std::sync::Arc;

use serde_json::{json, Value};
use tracing_subscriber::layer::SubscriberExt;

mod common {
    pub mod mcp;
}

use common::mcp::Pipe;
use toolc_runtime::mcp::McpServer;
use toolc_runtime::{definitions_from_str, executor_fn, Registry};

fn server() -> McpServer {
    let _ = tracing::subscriber::set_global_default(
        tracing_subscriber::registry().with(toolc_runtime::mcp::log_layer()),
    );
    let manifest = "version: 1\ntools:\n  - name: import_rows\n    description: Imports rows.\n    location: server\n";
    let registry = Registry::builder()
        .definitions(definitions_from_str("l.tools.yaml", manifest).unwrap())
        .executor(
            "import_rows",
            executor_fn(|_| async {
                tracing::debug!(target: "importer", "opened the file");
                tracing::info!(target: "importer", rows = 3, "read the table");
                tracing::warn!(target: "importer", "the disk is slow");
                Ok(json!({ "imported": 3 }))
            }),
        )
        .build()
        .unwrap();
    McpServer::new(Arc::new(registry))
}

fn log_messages(others: &[Value]) -> Vec<Value> {
    others
        .iter()
        .filter(|m| m["method"] == "notifications/message")
        .map(|m| m["params"].clone())
        .collect()
}

async fn set_level(pipe: &mut Pipe, level: &str) {
    let answer = pipe
        .ask(
            json!({"jsonrpc": "2.0", "id": "lvl", "method": "logging/setLevel",
                     "params": {"level": level}}),
        )
        .await;
    assert_eq!(answer["result"], json!({}), "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clients_calls_log_to_it_at_its_level_and_before_the_result() {
    let server = server();
    let (mut pipe, init) = Pipe::open(server.clone(), json!({})).await;
    assert!(
        init["result"]["capabilities"]["logging"].is_object(),
        "{init}"
    );
    set_level(&mut pipe, "info").await;
    let result = pipe.call(2, "import_rows", json!({})).await;
    assert_eq!(result["isError"], json!(false), "{result}");
    // Everything before the answer is in `others`: the messages came first.
    assert_eq!(
        log_messages(&pipe.others),
        [
            json!({"level": "info", "logger": "importer",
                   "data": {"message": "read the table", "rows": 3}}),
            json!({"level": "warning", "logger": "importer", "data": "the disk is slow"}),
        ]
    );

    pipe.others.clear();
    set_level(&mut pipe, "error").await;
    pipe.call(3, "import_rows", json!({})).await;
    assert!(log_messages(&pipe.others).is_empty(), "{:?}", pipe.others);

    set_level(&mut pipe, "debug").await;
    pipe.call(4, "import_rows", json!({})).await;
    assert_eq!(log_messages(&pipe.others).len(), 3, "{:?}", pipe.others);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_set_no_level_gets_no_messages_not_even_anothers() {
    let server = server();
    let (mut listening, _) = Pipe::open(server.clone(), json!({})).await;
    set_level(&mut listening, "debug").await;
    let (mut quiet, _) = Pipe::open(server, json!({})).await;
    quiet.call(2, "import_rows", json!({})).await;
    assert!(log_messages(&quiet.others).is_empty(), "{:?}", quiet.others);
    // The listening client hears only its own calls: a ping gives the server a moment to have
    // sent anything it (wrongly) would, and nothing came before its answer.
    listening
        .ask(json!({"jsonrpc": "2.0", "id": "p", "method": "ping"}))
        .await;
    assert!(
        log_messages(&listening.others).is_empty(),
        "{:?}",
        listening.others
    );
}
