//! Toolsets: named groups of tools (the manifest's `toolsets`), and the choice of them a
//! realtime session or a chat conversation offers the model ([`ToolSelection`]): every tool in
//! no toolset, and the tools of the chosen ones.

use std::collections::HashSet;
use std::fmt;

use serde_json::Value;

/// A named group of tools (the manifest's `toolsets`): what a session can choose to declare
/// ([`crate::Registry::selection`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Toolset {
    /// The toolset's name, as the manifest writes it.
    pub name: String,
    /// What the tools are for.
    pub description: String,
    /// Its tools, in definition order.
    pub tools: Vec<String>,
}

/// A toolset name the registry does not have.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownToolset {
    /// The name asked for.
    pub name: String,
    /// The toolsets there are.
    pub known: Vec<String>,
}

impl fmt::Display for UnknownToolset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no toolset named `{}`", self.name)?;
        if self.known.is_empty() {
            f.write_str(": the manifest declares none")
        } else {
            write!(f, "; the toolsets are {}", self.known.join(", "))
        }
    }
}

impl std::error::Error for UnknownToolset {}

/// The tools a session offers the model: those in no toolset, and those of the chosen
/// toolsets ([`crate::Registry::selection`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolSelection {
    pub(crate) toolsets: Vec<String>,
    pub(crate) tools: HashSet<String>,
}

impl ToolSelection {
    /// The chosen toolsets, as given.
    pub fn toolsets(&self) -> &[String] {
        &self.toolsets
    }

    /// Whether the selection offers `tool`.
    pub fn offers(&self, tool: &str) -> bool {
        self.tools.contains(tool)
    }
}

impl ToolSelection {
    /// A compiled provider file's declarations (`toolc build`'s `providers/*.json`) with only
    /// what the selection offers: function entries by name (`name`, or `function.name` for
    /// Chat Completions), Responses namespaces by toolset (a chosen one whole, another not at
    /// all), Gemini's `functionDeclarations` by name; anything else (hosted tools such as
    /// `tool_search`) is kept. What a chat request declares for this turn.
    pub fn declarations(&self, file: &Value) -> Value {
        match file {
            Value::Array(entries) => Value::Array(
                entries
                    .iter()
                    .filter(|entry| self.keeps(entry))
                    .cloned()
                    .collect(),
            ),
            Value::Object(object) => {
                let mut object = object.clone();
                if let Some(declarations) = object.get_mut("functionDeclarations") {
                    *declarations = self.declarations(declarations);
                }
                Value::Object(object)
            }
            other => other.clone(),
        }
    }

    /// The refusal of a call of `tool` when it is a registry tool this selection does not
    /// offer: the model is told it is unknown, and which tools there are.
    pub(crate) fn refusal(
        &self,
        registry: &crate::Registry,
        tool: &str,
    ) -> Option<crate::CallError> {
        if registry.definition(tool).is_none() || self.offers(tool) {
            return None;
        }
        let offered: Vec<&str> = registry.names().filter(|n| self.offers(n)).collect();
        Some(crate::CallError::unknown_tool(tool, &offered))
    }

    fn keeps(&self, entry: &Value) -> bool {
        let name = |v: &Value| v.get("name").and_then(Value::as_str).map(str::to_owned);
        if entry.get("type").and_then(Value::as_str) == Some("namespace") {
            return name(entry).is_some_and(|n| self.toolsets.contains(&n));
        }
        match entry.get("function").and_then(name).or_else(|| name(entry)) {
            Some(tool) => self.offers(&tool),
            None => true,
        }
    }
}
