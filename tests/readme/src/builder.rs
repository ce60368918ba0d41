//! docs/rust.md, "From Rust: build.rs and the typed registry": the generated module's builder, for
//! other tool sources, and its provider declarations.

use serde_json::Value;
use toolc_runtime::chat::{Anthropic, Codec};
use toolc_runtime::{tool, tools, Registry, RegistryError, ToolError};

use crate::typed_registry::{support, Desk}; // the generated module and the server above

/// Today's date: a tool defined in Rust, beside the manifest's.
#[tool]
async fn today() -> Result<String, ToolError> {
    Ok("2026-12-24".into())
}

// The manifest's tools with their typed executors (and its toolsets and `mcp.list_ttl`), then
// other tools before `build()`: `#[tool]` fns here; an MCP server's or a catalog's through
// their `merge_into(builder, ..)`. One registry, one location rule over all of them.
pub fn desk_registry() -> Result<Registry, RegistryError> {
    let builder = support::registry_builder(Desk);
    tools!(builder = builder; today).build()
}

// A chat request's `tools`: byte for byte `toolc build`'s `providers/anthropic.json`.
pub fn anthropic_tools() -> Result<Value, serde_json::Error> {
    serde_json::from_str(support::declarations(Anthropic.provider()))
}
