//! MCP: a `tools/list` result, valid for protocol versions 2025-11-25 and 2026-07-28.
//!
//! 2025-11-25 restricts `outputSchema` to `type: "object"` at the root and requires every member
//! of `inputSchema.properties` to be a schema object (not `true`/`false`); 2026-07-28 requires
//! `resultType`, `cacheScope` and `ttlMs` in the result. The file satisfies both.

use serde_json::{json, Value};

use super::text::{self, Json};
use super::{codes, object_root, returns_span, Shared};
use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::ir::IrTool;

/// Writes the declaration at `depth`. The whole result around the declarations (`resultType`,
/// `cacheScope: public`, `ttlMs: 0`) is written by the caller: the declarations hold no user
/// data, and a client should cache nothing, since a redeploy may change the tools at any time.
pub(super) fn write(
    out: &mut Vec<u8>,
    depth: usize,
    tool: &IrTool,
    shared: &Shared,
    diags: &mut Diagnostics,
) {
    let d = &tool.def;
    let lowered = lowered_input_schema(&d.parameters).map(|schema| text::render(&schema));
    let output = d.returns.as_ref().and_then(|returns| {
        if returns.get("type").and_then(Value::as_str) == Some("object") {
            Some(text::render(returns))
        } else {
            diags.push(output_warning(tool, returns));
            None
        }
    });
    let mut members = vec![("name", Json::Str(&d.name))];
    if let Some(title) = &d.title {
        members.push(("title", Json::Str(title)));
    }
    members.extend([
        ("description", Json::Str(shared.description(d))),
        (
            "inputSchema",
            Json::Rendered(lowered.as_deref().unwrap_or(&shared.as_written)),
        ),
    ]);
    if let Some(output) = &output {
        members.push(("outputSchema", Json::Rendered(output)));
    }
    let a = &d.annotations;
    let hints: Vec<(&'static str, Json)> = [
        ("readOnlyHint", a.read_only),
        ("destructiveHint", a.destructive),
        ("idempotentHint", a.idempotent),
        ("openWorldHint", a.open_world),
    ]
    .into_iter()
    .filter_map(|(key, hint)| hint.map(|h| (key, Json::Bool(h))))
    .collect();
    if !hints.is_empty() {
        members.push(("annotations", Json::Object(hints)));
    }
    text::write(out, &Json::Object(members), depth);
}

/// The `inputSchema` of a tool's parameters: the schema as written, with `true`/`false`
/// property schemas as the objects of the same meaning (2025-11-25 requires objects there). The
/// runtime's MCP server declares its tools with this too.
pub fn input_schema(parameters: &Value) -> Value {
    lowered_input_schema(parameters).unwrap_or_else(|| object_root(parameters).into_owned())
}

/// `inputSchema` when the schema as written cannot be it: `None` unless a property's schema is
/// `true` or `false`, which become the objects with the same meaning.
fn lowered_input_schema(parameters: &Value) -> Option<Value> {
    let schema = object_root(parameters);
    let is_bool = |props: &serde_json::Map<String, Value>| props.values().any(Value::is_boolean);
    if !schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(is_bool)
    {
        return None;
    }
    let mut schema = schema.into_owned();
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        for sub in props.values_mut() {
            match sub {
                Value::Bool(true) => *sub = json!({}),
                Value::Bool(false) => *sub = json!({ "not": {} }),
                _ => {}
            }
        }
    }
    Some(schema)
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
