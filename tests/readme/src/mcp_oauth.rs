//! docs/mcp-auth.md, "Connecting to a protected server": `McpTools` as an OAuth client.

use std::sync::Arc;

use toolc_runtime::mcp::client_oauth::{Authorize, OAuthClient};
use toolc_runtime::mcp::{McpError, McpTools};

// A user logs in: `login` opens their browser at the authorization URL and returns the
// redirect the redirect URI received (a loopback listener of the application's, here).
pub async fn protected_tools(login: impl Authorize + 'static) -> Result<Arc<McpTools>, McpError> {
    let oauth = OAuthClient::authorization_code("http://127.0.0.1:8976/callback", login)
        .client_name("Support desk agent")
        .client_metadata_url("https://agent.example.com/oauth/client.json");
    McpTools::connect_oauth("https://mcp.example.com/mcp", oauth).await
}

// A service acting for itself: client credentials, no user.
pub async fn service_tools(secret: String) -> Result<Arc<McpTools>, McpError> {
    let oauth = OAuthClient::client_secret("billing-agent", secret).scopes(["mcp:tools"]);
    McpTools::connect_oauth("https://mcp.example.com/mcp", oauth).await
}

// Signing out: the tokens are revoked at the authorization server (RFC 7009) and forgotten;
// the tools' calls then fail until the application connects (and the user logs in) again.
pub async fn sign_out(signed_in: &McpTools) -> Result<(), McpError> {
    signed_in.revoke().await
}
