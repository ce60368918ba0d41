//! The Model Context Protocol, on the official Rust SDK (`rmcp`), both ways: a
//! [`crate::Registry`] served to MCP hosts ([`McpServer`]), and the tools of an MCP server used
//! as server tools of a registry ([`McpTools`]).
#![warn(missing_docs)]

//!
//! The two halves are separate features, so that a server does not build an HTTP client stack
//! it never uses: `mcp` is the server (stdio and streamable HTTP), `mcp-client` the client
//! (a spawned stdio server, or streamable HTTP over reqwest), `mcp-client-oauth` the client
//! of OAuth-protected servers ([`client_oauth`]).

// The kernel's items at this crate's root, where `toolc-runtime` has them too, so that a path
// reads the same in every crate of the runtime (`crate::Registry`, `crate::dispatch::ToolCall`).
#[allow(unused_imports)]
use toolc_kernel::*;

#[cfg(feature = "server")]
mod approval;
#[cfg(feature = "client")]
mod client;
#[cfg(feature = "client-oauth")]
pub mod client_oauth;
#[cfg(feature = "server")]
mod jsonrpc;
#[cfg(feature = "server")]
mod logging;
#[cfg(feature = "oauth")]
pub mod oauth;
#[cfg(feature = "server")]
mod server;
#[cfg(feature = "server")]
mod tasks;

#[cfg(feature = "server")]
pub use approval::DEFAULT_APPROVAL_TIMEOUT;
#[cfg(feature = "client")]
pub use client::{McpTools, DEFAULT_MCP_TIMEOUT};
#[cfg(feature = "server")]
pub use jsonrpc::McpHttpService;
#[cfg(feature = "server")]
pub use logging::{log_layer, McpLogLayer};
#[cfg(feature = "server")]
pub use server::{mcp_tool, ConversationFn, ListCache, McpServer, PrincipalFn, DEFAULT_LIST_TTL};

/// Why an MCP session did not start or stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpError(pub String);

impl std::fmt::Display for McpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for McpError {}
