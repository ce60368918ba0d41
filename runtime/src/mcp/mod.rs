//! The Model Context Protocol, on the official Rust SDK (`rmcp`), both ways: a
//! [`crate::Registry`] served to MCP hosts ([`McpServer`]), and the tools of an MCP server used
//! as server tools of a registry ([`McpTools`]).

mod client;
mod server;

pub use client::McpTools;
pub use server::{mcp_tool, McpError, McpServer, PrincipalFn};
