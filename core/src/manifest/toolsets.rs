//! The manifest's toolsets: named groups of tools with a description (`toolsets:` at the root,
//! `toolset:` on a tool), which Responses declares as namespaces; and `defer_loading` for tools
//! a model rarely needs, which Responses leaves to tool search. Providers without such things
//! declare the tools as before.

use std::collections::BTreeMap;

use super::*;
use crate::ir::Toolset;

/// What a manifest's root says that applies to each of its tools: its realtime targets, its
/// toolsets and its MCP list settings.
pub(super) struct FileSettings {
    pub(super) targets: RealtimeTargets,
    pub(super) toolsets: Toolsets,
    /// `mcp.list_ttl`, and where it is written.
    pub(super) mcp_list_ttl: Option<(std::time::Duration, crate::source::Span)>,
}

impl FileSettings {
    pub(super) fn parse(root: &Node, diags: &mut Diagnostics) -> FileSettings {
        FileSettings {
            targets: targets::parse_targets(root, diags),
            toolsets: parse_toolsets(root, diags),
            mcp_list_ttl: mcp_settings::parse_mcp(root, diags),
        }
    }
}

/// The toolsets of one manifest file, by name: their descriptions and where they are declared.
pub(super) type Toolsets = BTreeMap<String, (String, crate::source::Span)>;

/// A toolset's name: what a provider shows the model as the namespace of its tools.
pub const TOOLSET_NAME_PATTERN: &str = "^[A-Za-z0-9_-]{1,64}$";

fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Reads the root's `toolsets` mapping (`name: { description: ... }`).
pub(super) fn parse_toolsets(root: &Node, diags: &mut Diagnostics) -> Toolsets {
    let mut toolsets = Toolsets::new();
    let Some((_, node)) = root.get("toolsets") else {
        return toolsets;
    };
    let Some(entries) = node.as_map() else {
        diags.push(type_error(
            "toolsets",
            "a mapping of toolset names to `{ description: ... }`",
            node,
        ));
        return toolsets;
    };
    for (key, value) in entries {
        let name = key.as_str().unwrap_or_default();
        if !valid_name(name) {
            diags.push(
                Diagnostic::error(
                    crate::codes::INVALID_FIELD,
                    format!("`{name}` is not a toolset name"),
                )
                .at(key.span, "letters, digits, `_` and `-` only, at most 64")
                .help("providers show it to the model as the namespace of its tools: name it like a tool, e.g. `orders`"),
            );
            continue;
        }
        let description = value
            .as_map()
            .and_then(|_| value.get("description"))
            .and_then(|(_, d)| d.as_str())
            .filter(|d| !d.trim().is_empty());
        match description {
            Some(description) => {
                toolsets.insert(name.to_owned(), (description.to_owned(), key.span));
            }
            None => diags.push(
                Diagnostic::error(
                    crate::codes::MISSING_FIELD,
                    format!("toolset `{name}` has no description"),
                )
                .at(value.span, "expected `{ description: ... }`")
                .help(format!(
                    "the model reads it to decide whether to look in the toolset: `{name}: {{ description: What these tools are for. }}`"
                )),
            ),
        }
    }
    toolsets
}

/// A tool's `toolset` (resolved against the file's toolsets) and `defer_loading`.
pub(super) fn tool_grouping<'n>(
    field: &dyn Fn(&str) -> Option<(&'n Node, &'n Node)>,
    toolsets: &Toolsets,
    what: &str,
    diags: &mut Diagnostics,
) -> (Option<Toolset>, bool) {
    let defer_loading = bool_field(field, "defer_loading", diags).unwrap_or(false);
    let Some((_, node)) = field("toolset") else {
        return (None, defer_loading);
    };
    let Some(name) = node.as_str() else {
        diags.push(type_error("toolset", "the name of a toolset", node));
        return (None, defer_loading);
    };
    match toolsets.get(name) {
        Some((description, _)) => (
            Some(Toolset {
                name: name.to_owned(),
                description: description.clone(),
            }),
            defer_loading,
        ),
        None => {
            let declared: Vec<String> = toolsets.keys().map(|k| format!("`{k}`")).collect();
            diags.push(
                Diagnostic::error(
                    crate::codes::UNKNOWN_TOOLSET,
                    format!("{what} is in toolset `{name}`, which this manifest does not declare"),
                )
                .at(node.span, "not a toolset of this file")
                .help(if declared.is_empty() {
                    format!(
                        "declare it at the root: `toolsets: {{ {name}: {{ description: ... }} }}`"
                    )
                } else {
                    format!(
                        "{}the toolsets are {}; or declare `{name}` under `toolsets:`",
                        did_you_mean(name, toolsets.keys().map(String::as_str)),
                        declared.join(", ")
                    )
                }),
            );
            (None, defer_loading)
        }
    }
}
