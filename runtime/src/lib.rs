//! toolc-runtime: what generated code and applications link.

pub use toolc::definition::{Location, ToolDefinition, DEFAULT_CLIENT_TIMEOUT};
