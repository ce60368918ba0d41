//! `mcp-import`: the tools of an MCP server as a toolc manifest, so that `toolc build` gives
//! typed Rust and TypeScript for a remote catalog. `mcp-import http://host/mcp` (streamable
//! HTTP; `--bearer TOKEN` for a server that wants one) or `mcp-import -- command args...`
//! (a server spoken to over stdio). The manifest goes to stdout, as JSON (which YAML reads):
//! `mcp-import http://127.0.0.1:8790/mcp > remote.tools.yaml && toolc build remote.tools.yaml`.
//! Every tool is a `server` tool (the MCP server runs it); tools toolc cannot take (a name it
//! does not allow, a schema that does not compile) are listed on stderr and left out.

use std::process::ExitCode;

use serde_json::{json, Map, Value};
use toolc_runtime::mcp::McpTools;
use toolc_runtime::ToolDefinition;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "mcp-import [--bearer TOKEN] URL | mcp-import -- COMMAND [ARGS...]";
    mcp_server::run(Some(usage), async move {
        println!("{}", import(&args).await?);
        Ok(())
    })
}

async fn import(args: &[String]) -> Result<String, String> {
    let tools = match args {
        [dashes, command, rest @ ..] if dashes == "--" => {
            let mut child = tokio::process::Command::new(command);
            child.args(rest);
            McpTools::spawn(child).await
        }
        [flag, token, url] if flag == "--bearer" => {
            McpTools::connect_http_with(url, Some(token), &[]).await
        }
        [url] if url.starts_with("http://") || url.starts_with("https://") => {
            McpTools::connect_http(url).await
        }
        _ => return Err("name one MCP server".into()),
    }
    .map_err(|e| e.to_string())?;
    for (name, why) in tools.skipped() {
        eprintln!("left out `{name}`: {why}");
    }
    let manifest = json!({
        "version": 1,
        "tools": tools.definitions().iter().map(manifest_tool).collect::<Vec<_>>(),
    });
    serde_json::to_string_pretty(&manifest).map_err(|e| e.to_string())
}

/// One definition as a manifest's tool: what the server said, nothing of the client's own
/// settings (its timeout is this process's, not the server's).
fn manifest_tool(definition: &ToolDefinition) -> Value {
    let mut tool = Map::new();
    tool.insert("name".into(), json!(definition.name));
    let description = if definition.description.trim().is_empty() {
        format!("The MCP server's `{}` tool.", definition.name)
    } else {
        definition.description.clone()
    };
    tool.insert("description".into(), json!(description));
    tool.insert("location".into(), json!("server"));
    if let Some(title) = &definition.title {
        tool.insert("title".into(), json!(title));
    }
    tool.insert("parameters".into(), definition.parameters.clone());
    if let Some(returns) = &definition.returns {
        tool.insert("returns".into(), returns.clone());
    }
    let hints = &definition.annotations;
    let mut annotations = Map::new();
    for (name, hint) in [
        ("read_only", hints.read_only),
        ("destructive", hints.destructive),
        ("idempotent", hints.idempotent),
        ("open_world", hints.open_world),
    ] {
        if let Some(hint) = hint {
            annotations.insert(name.into(), json!(hint));
        }
    }
    if !annotations.is_empty() {
        tool.insert("annotations".into(), Value::Object(annotations));
    }
    Value::Object(tool)
}
