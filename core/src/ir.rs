//! The validated intermediate representation that every emitter reads.

use crate::definition::ToolDefinition;
use crate::source::Span;
use crate::yaml::SpanTree;

/// All tools of one compilation, in declaration order (files in the order given).
#[derive(Debug, Default, Clone)]
pub struct Ir {
    /// The tools, in declaration order.
    pub tools: Vec<IrTool>,
}

/// One validated tool: its definition, and what only the compiler needs (its toolset,
/// deferred loading, the list's time to live, where it is written).
#[derive(Debug, Clone)]
pub struct IrTool {
    /// The tool's definition, as the runtime gets it.
    pub def: ToolDefinition,
    /// The toolset the tool belongs to (the manifest's `toolset`), declared as a namespace by
    /// providers that have them (Responses).
    pub toolset: Option<Toolset>,
    /// The manifest's `defer_loading`: the model rarely needs the tool, so a provider with tool
    /// search (Responses) loads it only when the model looks for it.
    pub defer_loading: bool,
    /// Its manifest's `mcp.list_ttl` (and where it is written): how long an MCP client may keep
    /// the tool list.
    pub mcp_list_ttl: Option<(std::time::Duration, Span)>,
    /// Where the tool is written, for diagnostics that point into its manifest.
    pub origin: Origin,
}

/// A named group of tools with a description (the manifest's `toolsets`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolset {
    /// The toolset's name, its key under the manifest's `toolsets`.
    pub name: String,
    /// What the model reads to decide whether to look in the toolset.
    pub description: String,
}

/// Where a tool came from, so that later stages (provider lowering, the `#[tool]` binding) can
/// point at the exact node. Tools derived from Rust fns have no manifest origin.
#[derive(Debug, Clone, Default)]
pub struct Origin {
    /// The manifest file's path, as the user gave it.
    pub file: Option<String>,
    /// 1-based line of the tool's `name`.
    pub line: usize,
    /// The span of the tool's `name` value; `None` for a tool without a manifest.
    pub name: Option<Span>,
    /// The span of the tool's `location` value; `None` when the manifest gives none.
    pub location: Option<Span>,
    /// The spans of the manifest's `parameters` schema; `None` when it declares none.
    pub parameters: Option<SpanTree>,
    /// The spans of the manifest's `returns` schema; `None` when absent or `null`.
    pub returns: Option<SpanTree>,
}

impl Ir {
    /// The tool called `name`, if there is one.
    pub fn get(&self, name: &str) -> Option<&IrTool> {
        self.tools.iter().find(|t| t.def.name == name)
    }

    /// How long an MCP client may keep the tool list: the shortest `mcp.list_ttl` of the
    /// manifests (a list is only as fresh as its most changeable part), with where it is
    /// written; `None` when no manifest sets one.
    pub fn mcp_list_ttl(&self) -> Option<(std::time::Duration, Span)> {
        self.tools
            .iter()
            .filter_map(|t| t.mcp_list_ttl)
            .min_by_key(|(ttl, _)| *ttl)
    }

    /// Every tool's definition, in declaration order.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.tools.iter().map(|t| t.def.clone()).collect()
    }

    /// Builds an IR from definitions that have no manifest (e.g. assembled from `#[tool]` fns).
    pub fn from_definitions(defs: impl IntoIterator<Item = ToolDefinition>) -> Ir {
        Ir {
            tools: defs
                .into_iter()
                .map(|def| IrTool {
                    def,
                    toolset: None,
                    defer_loading: false,
                    mcp_list_ttl: None,
                    origin: Origin::default(),
                })
                .collect(),
        }
    }
}

impl IrTool {
    /// The span of a node inside the parameters schema, found by JSON pointer.
    pub fn parameters_span(&self, pointer: &str) -> Option<Span> {
        self.origin
            .parameters
            .as_ref()?
            .pointer(pointer)
            .map(|(_, span)| span)
    }

    /// The span of a node inside the `returns` schema, found by JSON pointer.
    pub fn returns_span(&self, pointer: &str) -> Option<Span> {
        self.origin
            .returns
            .as_ref()?
            .pointer(pointer)
            .map(|(_, span)| span)
    }
}
