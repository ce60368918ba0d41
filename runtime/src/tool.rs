//! Typed tool definitions: generated code implements [`Tool`] once per tool, so programs can
//! name a tool by type instead of by string.

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::{Location, ToolDefinition};

pub trait Tool {
    const NAME: &'static str;
    const LOCATION: Location;
    /// The generated arguments type (from `parameters`).
    type Args: Serialize + DeserializeOwned + Send + 'static;
    /// The generated result type (from `returns`; `serde_json::Value` when there is none).
    type Output: Serialize + DeserializeOwned + Send + 'static;

    fn definition() -> ToolDefinition;
}
