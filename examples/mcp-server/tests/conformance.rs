//! The support desk's MCP server against the protocol and its real clients:
//! - every response to a raw JSON-RPC exchange over stdio is checked against the official MCP
//!   JSON Schema of its protocol version (`../shared/specs/mcp`, both 2025-11-25 and 2026-07-28);
//! - the official Python SDK (`mcp` on PyPI, installed by `scripts/setup` into
//!   `tests/mcp/.venv`) lists, calls, checks `structuredContent` against `outputSchema`, and gets
//!   `isError` for bad arguments, over stdio and over streamable HTTP, once with each version's
//!   handshake (`initialize`: 2025-11-25, `server/discover`: 2026-07-28). (The TypeScript SDK
//!   does the same in `tests/mcp`, run by `npm test`.)

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

const LIMIT: Duration = Duration::from_secs(30);

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn spec(version: &str) -> Value {
    let path = repo().join(format!("../shared/specs/mcp/{version}/schema.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (the specs are in ../shared)", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// Checks `value` against the definition `name` of the protocol's schema.
fn conforms(spec: &Value, name: &str, value: &Value) {
    let schema = json!({ "$ref": format!("#/$defs/{name}"), "$defs": spec["$defs"] });
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{name}: {errors:#?}\n{value:#}");
}

/// One stdio session: each request written as a line, each response read as a line.
struct StdioSession {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
}

impl StdioSession {
    fn start() -> StdioSession {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-server"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        StdioSession {
            child,
            stdin,
            lines,
        }
    }

    async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await.unwrap();
    }

    /// Sends a request and returns the response with its id.
    async fn request(&mut self, message: Value) -> Value {
        let id = message["id"].clone();
        self.send(message).await;
        loop {
            let line = tokio::time::timeout(LIMIT, self.lines.next_line())
                .await
                .expect("a response in time")
                .unwrap()
                .expect("the server is still there");
            let response: Value = serde_json::from_str(&line).unwrap();
            if response["id"] == id {
                return response;
            }
        }
    }
}

fn search_call(id: u64, arguments: Value, meta: Option<&Value>) -> Value {
    let mut params = json!({ "name": "search_help_articles", "arguments": arguments });
    if let Some(meta) = meta {
        params["_meta"] = meta.clone();
    }
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params })
}

fn check_tools(result: &Value) {
    let mut names: Vec<&str> = result["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    names.sort();
    // The server tools only: client tools run in a browser.
    assert_eq!(names, ["get_order_status", "search_help_articles"]);
}

fn check_calls(good: &Value, bad: &Value) {
    assert_ne!(good["isError"], true, "{good}");
    let text: Value = serde_json::from_str(good["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, good["structuredContent"]);
    assert_eq!(bad["isError"], true, "{bad}");
    let error: Value = serde_json::from_str(bad["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(error["error"]["kind"], "invalid_arguments");
}

#[tokio::test]
async fn every_response_conforms_to_the_2025_11_25_schema() {
    let spec = spec("2025-11-25");
    let mut s = StdioSession::start();
    let init = s
        .request(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}}),
        )
        .await;
    conforms(&spec, "InitializeResult", &init["result"]);
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    s.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    let tools = s
        .request(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        .await;
    conforms(&spec, "ListToolsResult", &tools["result"]);
    check_tools(&tools["result"]);
    let good = s
        .request(search_call(3, json!({"query": "password"}), None))
        .await;
    conforms(&spec, "CallToolResult", &good["result"]);
    let bad = s.request(search_call(4, json!({"query": 5}), None)).await;
    conforms(&spec, "CallToolResult", &bad["result"]);
    check_calls(&good["result"], &bad["result"]);
    let client_tool = s
        .request(json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                        "params": {"name": "highlight_element", "arguments": {}}}))
        .await;
    assert_eq!(client_tool["error"]["code"], -32602, "{client_tool}");
    let _ = s.child.kill().await;
}

#[tokio::test]
async fn every_response_conforms_to_the_2026_07_28_schema() {
    let spec = spec("2026-07-28");
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let mut s = StdioSession::start();
    let discovered = s
        .request(json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}))
        .await;
    conforms(&spec, "DiscoverResultResponse", &discovered);
    let tools = s
        .request(
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": meta}}),
        )
        .await;
    conforms(&spec, "ListToolsResultResponse", &tools);
    check_tools(&tools["result"]);
    let good = s
        .request(search_call(3, json!({"query": "password"}), Some(&meta)))
        .await;
    conforms(&spec, "CallToolResultResponse", &good);
    let bad = s
        .request(search_call(4, json!({"query": 5}), Some(&meta)))
        .await;
    conforms(&spec, "CallToolResultResponse", &bad);
    check_calls(&good["result"], &bad["result"]);
    let _ = s.child.kill().await;
}

fn python() -> PathBuf {
    let venv = repo().join("tests/mcp/.venv/bin/python");
    assert!(
        venv.exists(),
        "{} is missing: run scripts/setup (it installs the MCP Python SDK there)",
        venv.display()
    );
    venv
}

async fn python_client(args: &[&str]) -> Value {
    let out = tokio::time::timeout(
        LIMIT,
        Command::new(python())
            .arg(repo().join("tests/mcp/client.py"))
            .args(args)
            .output(),
    )
    .await
    .expect("the Python client finishes in time")
    .unwrap();
    assert!(
        out.status.success(),
        "the Python SDK client failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap()
}

/// The handshakes of the two protocol versions and what the client then speaks.
const HANDSHAKES: [(&str, &str); 2] = [("initialize", "2025-11-25"), ("discover", "2026-07-28")];

#[tokio::test]
async fn the_python_sdk_as_a_client_over_stdio() {
    for (handshake, version) in HANDSHAKES {
        let seen = python_client(&["stdio", env!("CARGO_BIN_EXE_mcp-server"), handshake]).await;
        assert_eq!(seen["protocol"], version);
        assert_eq!(
            seen["tools"],
            json!(["get_order_status", "search_help_articles"])
        );
    }
}

#[tokio::test]
async fn the_python_sdk_as_a_client_over_streamable_http() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-server"))
        .args(["--http", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(LIMIT, lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let url = first
        .strip_prefix("listening on ")
        .expect(&first)
        .to_owned();
    for (handshake, version) in HANDSHAKES {
        let seen = python_client(&["http", &url, handshake]).await;
        assert_eq!(seen["protocol"], version);
        assert_eq!(
            seen["tools"],
            json!(["get_order_status", "search_help_articles"])
        );
    }
    let _ = child.kill().await;
}
