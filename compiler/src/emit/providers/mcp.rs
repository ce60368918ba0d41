//! MCP: a `tools/list` result, valid for protocol versions 2025-11-25 and 2026-07-28.
//!
//! 2025-11-25 restricts `outputSchema` to `type: "object"` at the root and requires every member
//! of `inputSchema.properties` to be a schema object (not `true`/`false`); 2026-07-28 requires
//! `resultType`, `cacheScope` and `ttlMs` in the result. The file satisfies both.

use serde_json::{json, Map, Value};

use super::{codes, object, object_root, returns_span};
use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::ir::IrTool;

/// The whole result. The declarations hold no user data (`cacheScope: public`); `ttlMs: 0` lets a
/// client cache nothing, since a redeploy may change the tools at any time.
pub(super) fn list_result(tools: Vec<Value>) -> Value {
    object([
        ("resultType", "complete".into()),
        ("tools", Value::Array(tools)),
        ("cacheScope", "public".into()),
        ("ttlMs", 0.into()),
    ])
}

pub(super) fn declaration(tool: &IrTool, diags: &mut Diagnostics) -> Value {
    let d = &tool.def;
    let mut out = Map::new();
    out.insert("name".into(), d.name.clone().into());
    out.insert("description".into(), d.description.clone().into());
    out.insert("inputSchema".into(), input_schema(&d.parameters));
    if let Some(returns) = &d.returns {
        if returns.get("type").and_then(Value::as_str) == Some("object") {
            out.insert("outputSchema".into(), returns.clone());
        } else {
            diags.push(output_warning(tool, returns));
        }
    }
    Value::Object(out)
}

fn input_schema(parameters: &Value) -> Value {
    let mut schema = object_root(parameters);
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        for sub in props.values_mut() {
            // `true` and `false` as JSON objects with the same meaning.
            match sub {
                Value::Bool(true) => *sub = json!({}),
                Value::Bool(false) => *sub = json!({ "not": {} }),
                _ => {}
            }
        }
    }
    schema
}

fn output_warning(tool: &IrTool, returns: &Value) -> Diagnostic {
    let found = match returns.get("type") {
        Some(Value::String(t)) => format!("`type: {t}`"),
        Some(other) => format!("`type: {other}`"),
        None => "no `type`".into(),
    };
    let mut d = Diagnostic::warning(
        codes::MCP_OUTPUT_SCHEMA,
        format!(
            "tool `{}`: its `returns` schema has {found}, but MCP's `outputSchema` must be an object schema; mcp.json declares no `outputSchema` for it",
            tool.def.name
        ),
    )
    .help("MCP clients then treat the result as unstructured content; to declare it, return an object (e.g. wrap a list as `{ items: [...] }`)");
    if let Some(span) = returns_span(tool, "/type") {
        d = d.at(span, "not `type: object`");
    }
    d
}
