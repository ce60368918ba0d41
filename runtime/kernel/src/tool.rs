//! Typed tool definitions: generated code implements [`Tool`] once per tool, so programs can
//! name a tool by type instead of by string.

use serde::de::DeserializeOwned;
use serde::Serialize;

use toolc_core::definition::{Location, ToolDefinition};

/// A tool known at compile time: its name, where it runs, and its argument and result types.
/// Generated code implements it once per manifest tool.
pub trait Tool {
    /// The tool's name, as the model sees it.
    const NAME: &'static str;
    /// Where the tool runs: in-process on the server, or forwarded to the client.
    const LOCATION: Location;
    /// The generated arguments type (from `parameters`).
    type Args: Serialize + DeserializeOwned + Send + 'static;
    /// The generated result type (from `returns`; `serde_json::Value` when there is none).
    type Output: Serialize + DeserializeOwned + Send + 'static;

    /// The tool's full definition, as the manifest declares it.
    fn definition() -> ToolDefinition;
}
