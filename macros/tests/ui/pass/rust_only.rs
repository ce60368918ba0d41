//! Tools defined from Rust alone: every parameter form, sync and async, client declarations,
//! and a registry assembled with `tools!`; checked with warnings denied.
#![deny(warnings)]

use serde::{Deserialize, Serialize};
use toolc_runtime::{tool, tools, Location, ToolError};

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct Window {
    pub from: String,
    pub to: String,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Hits {
    pub total: u64,
}

/// Search the logs.
///
/// # Arguments
///
/// * `query` - What to look for.
/// * `window` - When.
pub async fn plain_search(query: &str) -> usize {
    query.len()
}

/// Search the logs within a time window.
///
/// # Arguments
///
/// * `query` - What to look for.
/// * `window` - When.
#[tool(timeout = "1500ms")]
pub async fn search_logs(
    query: &str,
    window: Option<Window>,
    levels: Vec<String>,
    #[arg(description = "Largest number of hits.")] max: Option<u32>,
    raw: Option<serde_json::Value>,
) -> Result<Hits, ToolError> {
    let _ = (window, levels, raw);
    Ok(Hits {
        total: plain_search(query).await as u64 + u64::from(max.unwrap_or(0)),
    })
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct PingArgs {
    /// Host to ping.
    pub host: String,
}

/// Ping a host.
#[tool(name = "ping-host")]
pub fn ping(#[args] args: PingArgs) -> String {
    args.host
}

/// Seconds since the server started; takes no arguments.
#[tool]
pub fn uptime() -> u64 {
    42
}

/// Show a toast on the page.
#[tool(client, wait_for_response = false)]
pub fn show_toast(message: String, level: Option<String>);

/// Ask the browser for the current selection.
#[tool(client, timeout = "3s")]
pub fn get_selection() -> String;

/// Archive old logs; slow, so it runs in the background, and only once the user agreed.
#[tool(approval = "required", mode = "async")]
pub async fn archive_logs() -> Result<u64, ToolError> {
    Ok(0)
}

fn main() {
    let registry = tools![search_logs, ping, uptime, show_toast, get_selection, archive_logs]
        .build()
        .unwrap();
    assert_eq!(registry.len(), 6);
    let archive = registry.definition("archive_logs").unwrap();
    assert!(archive.requires_approval() && archive.runs_in_background());
    assert!(!archive.cancels_on_interruption());
    assert!(!registry.definition("ping-host").unwrap().requires_approval());
    assert_eq!(
        registry.definition("uptime").unwrap().parameters,
        toolc_runtime::ToolDefinition::empty_parameters()
    );
    assert_eq!(registry.location("show_toast"), Some(Location::Client));
    let ping = registry.definition("ping-host").unwrap();
    assert_eq!(ping.parameters["required"][0], "host");
    let search = registry.definition("search_logs").unwrap();
    assert_eq!(search.parameters["properties"]["window"]["$ref"], "#/$defs/Window");
    assert_eq!(search.returns.as_ref().unwrap()["type"], "object");
    assert!(registry.definition("get_selection").unwrap().returns.is_some());
}
