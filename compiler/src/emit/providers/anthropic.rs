//! Anthropic Messages API `tools`: `{name, description, input_schema}`.
//!
//! `input_schema` takes JSON Schema, but the API rejects `anyOf`, `oneOf` and `allOf` at its root
//! ("input_schema does not support oneOf, allOf, or anyOf at the top level"). Such a root is
//! lowered: `allOf` members are merged into the root (no constraint lost when they are objects);
//! the properties of `anyOf`/`oneOf` alternatives become optional properties of the root and the
//! "one of these shapes" rule is dropped, with a warning.

use serde_json::{Map, Value};

use super::{codes, object, object_root, parameters_span};
use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::ir::IrTool;

pub(super) fn declaration(tool: &IrTool, diags: &mut Diagnostics) -> Value {
    let d = &tool.def;
    object([
        ("name", d.name.as_str().into()),
        ("description", d.description.as_str().into()),
        ("input_schema", input_schema(tool, diags)),
    ])
}

fn input_schema(tool: &IrTool, diags: &mut Diagnostics) -> Value {
    let schema = object_root(&tool.def.parameters);
    let Value::Object(root) = &schema else {
        return schema;
    };
    if !["anyOf", "oneOf", "allOf"]
        .iter()
        .any(|k| root.contains_key(*k))
    {
        return schema;
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
                    let member = resolve(member, &schema);
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
    Value::Object(out)
}

fn resolve<'a>(member: &'a Value, root: &'a Value) -> &'a Value {
    member
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| crate::emit::strict::resolve_ref(root, r))
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
