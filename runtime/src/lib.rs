//! toolc-runtime: what generated code and applications link.
//!
//! One crate to depend on, re-exporting the runtime's crates by feature, so an application
//! builds only what it uses:
//!
//! | path | crate | feature |
//! | --- | --- | --- |
//! | the root, [`dispatch`], [`engine`], [`context`], [`registry`], ... | `toolc-kernel` | always |
//! | [`chat`] | `toolc-chat` | `chat` (default) |
//! | [`realtime`], [`markers`] | `toolc-realtime` | `realtime` (default) |
//! | `relay` | `toolc-relay` | `relay` |
//! | `mcp` | `toolc-mcp` | `mcp` (server), `mcp-oauth`, `mcp-client`, `mcp-client-oauth`, `mcp-client-oauth-jwt` |
//! | `catalog` | `toolc-catalog` | `catalog` |
//! | `engine::RedisLimiter` (rate limits shared by a fleet) | `toolc-kernel` | `redis` |
//! | `delegate` (a GPT-Live client delegate on the chat runner, over HTTP) | `toolc-chat` and `toolc-realtime` | `chat-delegate` |
//!
//! - [`Registry`]: tool definitions plus one executor per server tool, checked against the
//!   location rule when it is built; calls are parsed, validated against schemas compiled once,
//!   deserialized, run under the tool's timeout with panics caught, checked against `returns`
//!   and serialized. Every failure is a [`CallError`] that reads well to a model.
//! - [`include_tools!`]: pulls in the module that `toolc::Builder` generated in a build script.
//! - [`load_definitions`]: manifests loaded at run time, for registries assembled dynamically.
//! - [`engine`]: the call engine; the realtime session, the chat runner and the MCP server are
//!   adapters over it.
#![warn(missing_docs)]

pub use toolc_kernel::*;

/// `#[tool]` derives a tool from a fn signature; `tools![...]` assembles a registry builder.
pub use toolc_macros::{tool, tools};

#[cfg(feature = "catalog")]
pub use toolc_catalog as catalog;
#[cfg(feature = "chat")]
pub use toolc_chat as chat;
#[cfg(feature = "chat-delegate")]
pub mod delegate;
#[cfg(any(feature = "mcp", feature = "mcp-client"))]
pub use toolc_mcp as mcp;
#[cfg(feature = "realtime")]
pub use toolc_realtime as realtime;
#[cfg(feature = "realtime")]
pub use toolc_realtime::markers;
#[cfg(feature = "relay")]
pub use toolc_relay as relay;

/// Includes the Rust module that `toolc::Builder` wrote to `OUT_DIR` for a manifest:
/// `mod support { toolc_runtime::include_tools!("support"); }` for `support.tools.yaml`.
#[macro_export]
macro_rules! include_tools {
    ($name:literal) => {
        ::core::include!(::core::concat!(::core::env!("OUT_DIR"), "/", $name, ".rs"));
    };
}
