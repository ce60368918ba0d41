//! Checks across tools and files: unique names, and names that stay unique once they become
//! Rust and TypeScript identifiers.

use foldhash::{HashMap, HashMapExt};

use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::ident::{pascal_case, snake_case};
use crate::ir::IrTool;

/// Checks all tools of a compilation together: names unique across manifests, names that stay
/// distinct as Rust and TypeScript identifiers, and one description per toolset.
pub fn check_tools(tools: &[IrTool], diags: &mut Diagnostics) {
    check_toolsets(tools, diags);
    // Two probes per tool of a catalog of thousands: a fast hash, sized once.
    let mut by_name: HashMap<&str, &IrTool> = HashMap::with_capacity(tools.len());
    let mut by_ident: HashMap<(&str, String), &IrTool> = HashMap::with_capacity(2 * tools.len());
    for tool in tools {
        let name = tool.def.name.as_str();
        if let Some(first) = by_name.get(name) {
            let mut d = Diagnostic::error(crate::codes::DUPLICATE_NAME, format!("tool `{name}` is defined twice"))
                .help("tool names are unique across all manifests compiled together; rename or remove one of them");
            if let Some(span) = tool.origin.name {
                d = d.at(span, "defined again here");
            }
            if let Some(span) = first.origin.name {
                d = d.also(span, "first defined here");
            }
            diags.push(d);
            continue;
        }
        by_name.insert(name, tool);
        // Rust types and TypeScript types use PascalCase, Rust methods snake_case: two names
        // that differ only in case or separators would produce the same item.
        let idents = [
            ("Rust/TypeScript type", pascal_case(name)),
            ("Rust method", snake_case(name)),
        ];
        for (kind, ident) in idents {
            let key = (kind, ident);
            if let Some(first) = by_ident.get(&key) {
                let ident = &key.1;
                let mut d = Diagnostic::error(
                    crate::codes::IDENTIFIER_COLLISION,
                    format!(
                        "tools `{}` and `{name}` both become the {kind} name `{ident}`",
                        first.def.name
                    ),
                )
                .help("rename one of them so that the names differ by more than case, `_` or `-`");
                if let Some(span) = tool.origin.name {
                    d = d.at(span, format!("becomes `{ident}`"));
                }
                if let Some(span) = first.origin.name {
                    d = d.also(span, format!("also becomes `{ident}`"));
                }
                diags.push(d);
                break;
            }
            by_ident.insert(key, tool);
        }
    }
}

/// One toolset name means one toolset: manifests compiled together may each declare it, but
/// with the same description (a provider declares it once).
fn check_toolsets(tools: &[IrTool], diags: &mut Diagnostics) {
    let mut first: HashMap<&str, &IrTool> = HashMap::new();
    for tool in tools {
        let Some(toolset) = &tool.toolset else {
            continue;
        };
        let Some(earlier) = first.get(toolset.name.as_str()) else {
            first.insert(&toolset.name, tool);
            continue;
        };
        let theirs = earlier.toolset.as_ref().map(|t| t.description.as_str());
        if theirs == Some(toolset.description.as_str()) {
            continue;
        }
        let mut d = Diagnostic::error(
            crate::codes::TOOLSET_CONFLICT,
            format!(
                "toolset `{}` is described differently in the manifests of `{}` and `{}`",
                toolset.name, earlier.def.name, tool.def.name
            ),
        )
        .help("give the toolset one description in every manifest that declares it, or rename one of them");
        if let Some(span) = tool.origin.name {
            d = d.at(span, "this tool's toolset");
        }
        if let Some(span) = earlier.origin.name {
            d = d.also(span, "the first description's tool");
        }
        diags.push(d);
        // Later tools are compared with this one.
        first.insert(&toolset.name, tool);
    }
}
