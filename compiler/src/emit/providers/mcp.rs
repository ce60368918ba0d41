//! MCP: a `tools/list` result, valid for protocol versions 2025-11-25 and 2026-07-28.
//!
//! 2025-11-25 restricts `outputSchema` to `type: "object"` at the root and requires every member
//! of `inputSchema.properties` to be a schema object (not `true`/`false`); 2026-07-28 requires
//! `resultType`, `cacheScope` and `ttlMs` in the result. The file satisfies both.

use serde_json::Value;

use super::text::{self, Json};
use super::{codes, returns_span, Shared};
use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::ir::IrTool;
use toolc_core::schema_util::mcp_lowered_input_schema as lowered_input_schema;

/// Writes the declaration at `depth`. The whole result around the declarations (`resultType`,
/// `cacheScope: public`, `ttlMs`) is written by the caller: the declarations hold no user data,
/// and `ttlMs` is the manifests' `mcp.list_ttl`, else 0 (a redeploy may change the tools at any
/// time).
pub(super) fn write(
    out: &mut Vec<u8>,
    depth: usize,
    tool: &IrTool,
    shared: &Shared,
    diags: &mut Diagnostics,
) {
    let d = &tool.def;
    let lowered = lowered_input_schema(&d.parameters).map(|schema| text::render(&schema));
    // A content tool answers with `content` blocks, not `structuredContent`: no outputSchema.
    let output = d
        .returns
        .as_ref()
        .filter(|_| !d.returns_content())
        .and_then(|returns| {
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

/// The warnings of the declaration [`write`] writes.
pub(super) fn warnings(tool: &IrTool, diags: &mut Diagnostics) {
    if let Some(returns) = &tool.def.returns {
        if returns.get("type").and_then(Value::as_str) != Some("object") {
            diags.push(output_warning(tool, returns));
        }
    }
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
