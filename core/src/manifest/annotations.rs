//! A tool's `annotations`: behaviour hints for hosts (MCP's `*Hint`s), each a boolean.

use super::*;

/// The hint names of `annotations`, as the manifest spells them.
pub const ANNOTATION_FIELDS: &[&str] = &["read_only", "destructive", "idempotent", "open_world"];

pub(super) fn parse_annotations(v: &Node, what: &str, diags: &mut Diagnostics) -> Annotations {
    let mut out = Annotations::default();
    let Some(entries) = v.as_map() else {
        diags.push(type_error(
            "annotations",
            "a mapping of `read_only`, `destructive`, `idempotent`, `open_world` to booleans",
            v,
        ));
        return out;
    };
    for (key, value) in entries {
        let name = key.as_str().unwrap_or_default();
        let slot = match name {
            "read_only" => &mut out.read_only,
            "destructive" => &mut out.destructive,
            "idempotent" => &mut out.idempotent,
            "open_world" => &mut out.open_world,
            _ => {
                diags.push(
                    Diagnostic::error(
                        crate::codes::UNKNOWN_FIELD,
                        format!("unknown annotation `{name}` in {what}"),
                    )
                    .at(key.span, "not an annotation")
                    .help(format!(
                        "{}the annotations are `read_only`, `destructive`, `idempotent` and `open_world`",
                        did_you_mean(name, ANNOTATION_FIELDS.iter().copied())
                    )),
                );
                continue;
            }
        };
        match value.value {
            Value::Bool(b) => *slot = Some(b),
            _ => diags.push(type_error(name, "`true` or `false`", value)),
        }
    }
    out
}
