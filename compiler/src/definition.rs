//! The definition of one tool, shared by the compiler (which produces it from manifests and
//! `#[tool]` fns) and the runtime (which routes calls with it). It carries no source spans: those
//! live beside it in the compiler's IR, so that the runtime type stays small and serialisable.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Where a tool's handler runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Location {
    /// In-process on the server, through exactly one executor.
    Server,
    /// In the browser or app, forwarded over the client channel; never has a server executor.
    Client,
}

impl Location {
    pub fn as_str(self) -> &'static str {
        match self {
            Location::Server => "server",
            Location::Client => "client",
        }
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The default deadline for a client tool when its manifest gives none.
pub const DEFAULT_CLIENT_TIMEOUT: Duration = Duration::from_secs(10);

/// One tool, validated.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    pub location: Location,
    /// JSON Schema 2020-12 of the arguments; the root is always an object schema.
    pub parameters: serde_json::Value,
    /// JSON Schema 2020-12 of the result, when the manifest declares one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub returns: Option<serde_json::Value>,
    /// Deadline for the executor (server) or for the browser's reply (client).
    #[serde(
        default,
        rename = "timeout_ms",
        with = "duration_ms",
        skip_serializing_if = "Option::is_none"
    )]
    pub timeout: Option<Duration>,
    /// Client tools only: `false` means fire-and-forget.
    #[serde(default = "yes")]
    pub wait_for_response: bool,
    /// Client tools only: phrases a voice agent may say while it waits.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub filler: Vec<String>,
    /// A human-readable name, for hosts that show tools to people (MCP's `title`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does to the world, as hints for hosts (MCP's tool annotations).
    #[serde(default, skip_serializing_if = "Annotations::is_empty")]
    pub annotations: Annotations,
}

/// Behaviour hints of a tool (the manifest's `annotations`, MCP's `*Hint`s). Unset means the
/// manifest does not say; hosts then assume MCP's defaults (not read-only, destructive, not
/// idempotent, open world).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Annotations {
    /// It does not change its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// It may destroy or overwrite (meaningful when not read-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    /// Calling it twice with the same arguments does nothing more than once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// It reaches an open world (the web, other people), not a closed domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world: Option<bool>,
}

impl Annotations {
    /// No hint given.
    pub const NONE: Annotations = Annotations {
        read_only: None,
        destructive: None,
        idempotent: None,
        open_world: None,
    };

    pub fn is_empty(&self) -> bool {
        *self == Annotations::NONE
    }
}

fn yes() -> bool {
    true
}

impl ToolDefinition {
    /// The schema used when a tool declares no parameters: an object that accepts no properties.
    pub fn empty_parameters() -> serde_json::Value {
        serde_json::json!({ "type": "object", "properties": {}, "additionalProperties": false })
    }

    /// The deadline that applies to a call of this tool: its own, or for client tools the default.
    pub fn effective_timeout(&self) -> Option<Duration> {
        match (self.timeout, self.location) {
            (Some(t), _) => Some(t),
            (None, Location::Client) => Some(DEFAULT_CLIENT_TIMEOUT),
            (None, Location::Server) => None,
        }
    }
}

mod duration_ms {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(d) => s.serialize_u64(d.as_millis() as u64),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.map(Duration::from_millis))
    }
}
