//! docs/mcp.md, "MCP both ways": a registry as an MCP server, and an MCP server's tools in the
//! generated module's registry.

use std::sync::Arc;

use toolc_runtime::mcp::{McpError, McpServer};
use toolc_runtime::relay::axum::Router;
use toolc_runtime::Registry;

// What a host launches: the registry's server tools over stdin and stdout.
pub async fn serve_stdio(registry: Registry) -> Result<(), McpError> {
    let server = McpServer::new(Arc::new(registry)).with_implementation("support-desk", "1.0.0");
    server.serve_stdio().await
}

// Or, in an axum app next to the relay: streamable HTTP at `/mcp`.
pub fn mcp_app(registry: Registry) -> Router {
    let server = McpServer::new(Arc::new(registry)).with_implementation("support-desk", "1.0.0");
    Router::new().nest_service("/mcp", server.streamable_http())
}

// The other way: an MCP server's tools join the generated module's `registry_builder`, which
// holds the manifest's tools and typed executors already.
use toolc_runtime::mcp::McpTools;

use crate::typed_registry::{support, Desk}; // the generated module and its server

pub async fn desk_with_mcp_tools(
    server: tokio::process::Command,
) -> Result<toolc_runtime::Registry, Box<dyn std::error::Error>> {
    let tools = McpTools::spawn(server).await?;
    let builder = support::registry_builder(Desk);
    let builder = tools.merge_into(builder, &support::definitions())?;
    Ok(builder.build()?)
}
