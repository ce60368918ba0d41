//! Anthropic Messages API `tools`: `{name, description, input_schema}`.
//!
//! `input_schema` takes JSON Schema, but the API rejects `anyOf`, `oneOf` and `allOf` at its root
//! ("input_schema does not support oneOf, allOf, or anyOf at the top level"). Such a root is
//! lowered: `allOf` members are merged into the root (no constraint lost when they are objects);
//! the properties of `anyOf`/`oneOf` alternatives become optional properties of the root and the
//! "one of these shapes" rule is dropped, with a warning.

use serde_json::{Map, Value};

use super::text::{self, Json};
use super::{codes, object_root, parameters_span, Shared};
use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::ir::IrTool;

/// Writes the declaration at `depth`: the schema as written, or lowered where its root has a
/// composition.
pub(super) fn write(
    out: &mut Vec<u8>,
    depth: usize,
    tool: &IrTool,
    shared: &Shared,
    diags: &mut Diagnostics,
) {
    let d = &tool.def;
    let lowered = lowered_input_schema(tool, diags).map(|schema| text::render(&schema));
    let input_schema = lowered.as_deref().unwrap_or(&shared.as_written);
    let declaration = Json::Object(vec![
        ("name", Json::Str(&d.name)),
        ("description", Json::Str(shared.description(d))),
        ("input_schema", Json::Rendered(input_schema)),
    ]);
    text::write(out, &declaration, depth);
}

/// The warnings of the declaration [`write`] writes.
pub(super) fn warnings(tool: &IrTool, diags: &mut Diagnostics) {
    lowered_input_schema(tool, diags);
}

/// `input_schema` when the schema as written cannot be it: `None` when there is no composition
/// at the root.
fn lowered_input_schema(tool: &IrTool, diags: &mut Diagnostics) -> Option<Value> {
    let schema = object_root(&tool.def.parameters);
    let Value::Object(root) = schema.as_ref() else {
        return None;
    };
    if !["anyOf", "oneOf", "allOf"]
        .iter()
        .any(|k| root.contains_key(*k))
    {
        return None;
    }
    let mut out = Map::new();
    let mut properties = root
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut required: Vec<Value> = root
        .get("required")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (key, value) in root {
        match key.as_str() {
            "properties" | "required" => {}
            "allOf" | "anyOf" | "oneOf" => {
                let members = value.as_array().map(Vec::as_slice).unwrap_or_default();
                for member in members {
                    let member = resolve(member, schema.as_ref());
                    if let Some(props) = member.get("properties").and_then(Value::as_object) {
                        for (name, sub) in props {
                            properties
                                .entry(name.clone())
                                .or_insert_with(|| sub.clone());
                        }
                    }
                    // Only `allOf` makes a member's required names required for every call.
                    if key == "allOf" {
                        let names = member.get("required").and_then(Value::as_array);
                        for name in names.into_iter().flatten() {
                            if !required.contains(name) {
                                required.push(name.clone());
                            }
                        }
                    }
                }
                if key != "allOf" {
                    diags.push(warning(tool, key));
                }
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    out.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        out.insert("required".into(), Value::Array(required));
    }
    Some(Value::Object(out))
}

fn resolve<'a>(member: &'a Value, root: &'a Value) -> &'a Value {
    member
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| toolc_core::strict::resolve_ref(root, r))
        .unwrap_or(member)
}

fn warning(tool: &IrTool, keyword: &str) -> Diagnostic {
    let mut d = Diagnostic::warning(
        codes::ANTHROPIC_UNSUPPORTED,
        format!(
            "tool `{}`: Anthropic rejects `{keyword}` at the root of `input_schema`; anthropic.json declares the alternatives' properties as optional instead",
            tool.def.name
        ),
    )
    .help(format!(
        "the model is no longer told that the arguments must match one of the `{keyword}` alternatives; the runtime still validates them against the manifest. To avoid this, move the alternatives into a property"
    ));
    if let Some(span) = parameters_span(tool, "", Some(keyword)) {
        d = d.at(span, format!("`{keyword}` at the root"));
    }
    d
}
