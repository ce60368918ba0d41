//! README, "MCP both ways".

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
