//! docs/mcp-auth.md, "The server as an OAuth 2.1 resource server": opaque access tokens checked
//! by introspection at the authorization server.

use std::sync::Arc;
use std::time::Duration;

use toolc_runtime::mcp::oauth::{IntrospectionValidator, ResourceServer, TokenError};
use toolc_runtime::mcp::McpServer;
use toolc_runtime::relay::axum::Router;
use toolc_runtime::Registry;

// Each token is checked by asking the authorization server (RFC 7662), as this server's own
// client there: opaque tokens, and tokens that must stop working the moment they are revoked.
pub fn introspected_app(registry: Arc<Registry>, secret: String) -> Result<Router, TokenError> {
    let resource = "https://mcp.example.com/mcp"; // this endpoint's URL: tokens' audience
    let validator = IntrospectionValidator::new(
        "https://auth.example.com/oauth/introspect", // its `introspection_endpoint`
        "mcp-server",                                // this server's client id there
        secret,
        resource,
    )?
    .issuer("https://auth.example.com")
    // Optional: one round trip per token per 10 s; a revoked token works up to 10 s longer.
    .with_cache(Duration::from_secs(10), 10_000);
    let auth = ResourceServer::new(resource, validator)
        .authorization_server("https://auth.example.com")
        .require_scopes(["mcp:tools"]);
    Ok(Router::new()
        .route_service(&auth.metadata_path(), auth.metadata_service())
        .nest_service(
            "/mcp",
            McpServer::new(registry).with_oauth(auth).streamable_http(),
        ))
}
