//! `McpTools` as the client the official MCP conformance suite drives
//! (`conformance client --command mcp-conformance-client`, run by `tests/mcp-conformance`): it
//! connects to the URL the suite appends, lists the server's tools, calls each with arguments
//! made from its `inputSchema` (its required properties, each a plain value of its type) and
//! exits 0 when every step worked. The scenario (`MCP_CONFORMANCE_SCENARIO`) is only logged:
//! the client does what any `McpTools` user's code does.

use std::process::ExitCode;

use serde_json::{json, Map, Value};
use toolc_runtime::mcp::McpTools;
use toolc_runtime::Registry;

fn main() -> ExitCode {
    let Some(url) = std::env::args().nth(1) else {
        eprintln!("usage: mcp-conformance-client URL");
        return ExitCode::FAILURE;
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    mcp_server::run(None, async move {
        let calls = run(&url).await.map_err(|e| format!("{scenario}: {e}"))?;
        eprintln!("{scenario}: {calls} calls made");
        Ok(())
    })
}

async fn run(url: &str) -> Result<usize, String> {
    let tools = McpTools::connect_http(url)
        .await
        .map_err(|e| e.to_string())?;
    let registry = tools
        .merge_into(Registry::builder(), &[])
        .map_err(|e| e.to_string())?
        .build()
        .map_err(|e| e.to_string())?;
    let mut calls = 0;
    for definition in tools.definitions() {
        let arguments = example(&definition.parameters);
        // A tool's own failure is its answer; only a failure to reach it is the client's.
        match registry.call_value(&definition.name, arguments).await {
            Ok(_) => {}
            Err(e) if e.code() == Some("tool_error") => {}
            Err(e) => return Err(format!("calling `{}`: {e}", definition.name)),
        }
        calls += 1;
    }
    Ok(calls)
}

/// Arguments that satisfy a plain object schema: each required property with a value of its
/// type.
fn example(schema: &Value) -> Value {
    let mut arguments = Map::new();
    let properties = schema.get("properties").and_then(Value::as_object);
    let required = schema.get("required").and_then(Value::as_array);
    for name in required.into_iter().flatten().filter_map(Value::as_str) {
        let property = properties.and_then(|p| p.get(name)).unwrap_or(&Value::Null);
        arguments.insert(name.to_owned(), value_of(property));
    }
    Value::Object(arguments)
}

fn value_of(schema: &Value) -> Value {
    if let Some(first) = schema.get("enum").and_then(|e| e.get(0)) {
        return first.clone();
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("number") | Some("integer") => json!(1),
        Some("boolean") => json!(true),
        Some("array") => json!([]),
        Some("object") => example(schema),
        _ => json!("test"),
    }
}
