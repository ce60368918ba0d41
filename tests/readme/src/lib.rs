//! The Rust snippets of the README and the book (`docs/`), each a region of one module here (the
//! page shows the region, `compiler/tests/docs.rs` checks that it is the same text,
//! `tests/snippets.rs` runs it).

pub mod builder;
pub mod fn_tools;
pub mod gpt_live;
pub mod gpt_live_chat;
pub mod mcp;
pub mod mcp_oauth;
pub mod mcp_oauth_server;
pub mod relay;
pub mod telemetry;
pub mod toolsets;
pub mod typed_registry;
