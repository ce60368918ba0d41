//! The Model Context Protocol, on the official Rust SDK (`rmcp`): a [`crate::Registry`] served
//! to MCP hosts ([`McpServer`]).

mod server;

pub use server::{mcp_tool, McpError, McpServer, PrincipalFn};
