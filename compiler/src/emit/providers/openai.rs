//! OpenAI: Realtime GA `session.tools`, Chat Completions `tools`, Responses `tools`.

use super::text::Json;
use super::Shared;
use crate::ir::IrTool;

/// A Realtime GA function tool (`RealtimeFunctionTool`). Realtime has no strict mode, so the
/// schema goes as written.
pub(super) fn realtime<'a>(tool: &'a IrTool, shared: &'a Shared) -> Json<'a> {
    let d = &tool.def;
    Json::Object(vec![
        ("type", Json::Str("function")),
        ("name", Json::Str(&d.name)),
        ("description", Json::Str(shared.description(d))),
        ("parameters", Json::Rendered(&shared.as_written)),
    ])
}

/// A Chat Completions tool (`ChatCompletionTool` with a `FunctionObject`).
pub(super) fn chat<'a>(tool: &'a IrTool, shared: &'a Shared) -> Json<'a> {
    let d = &tool.def;
    let (parameters, is_strict) = parameters(shared);
    Json::Object(vec![
        ("type", Json::Str("function")),
        (
            "function",
            Json::Object(vec![
                ("name", Json::Str(&d.name)),
                ("description", Json::Str(shared.description(d))),
                ("parameters", parameters),
                ("strict", Json::Bool(is_strict)),
            ]),
        ),
    ])
}

/// A Responses function tool (`FunctionTool`, where `strict` is a required field), with the
/// tool's `returns` as its `output_schema` (the JSON the function's string output encodes).
pub(super) fn responses<'a>(tool: &'a IrTool, shared: &'a Shared) -> Json<'a> {
    let d = &tool.def;
    let (parameters, is_strict) = parameters(shared);
    let mut fields = vec![
        ("type", Json::Str("function")),
        ("name", Json::Str(&d.name)),
        ("description", Json::Str(shared.description(d))),
        ("parameters", parameters),
        ("strict", Json::Bool(is_strict)),
    ];
    if let Some(returns) = &shared.returns {
        fields.push(("output_schema", Json::Rendered(returns)));
    }
    if tool.defer_loading {
        fields.push(("defer_loading", Json::Bool(true)));
    }
    Json::Object(fields)
}

/// A toolset as a Responses namespace (`NamespaceToolParam`) of its declared tools.
pub(super) fn namespace<'a>(
    toolset: &'a crate::ir::Toolset,
    members: impl Iterator<Item = (&'a IrTool, &'a Shared)>,
) -> Json<'a> {
    let tools = members
        .map(|(tool, shared)| responses(tool, shared))
        .collect();
    Json::Object(vec![
        ("type", Json::Str("namespace")),
        ("name", Json::Str(&toolset.name)),
        ("description", Json::Str(&toolset.description)),
        ("tools", Json::Array(tools)),
    ])
}

/// Hosted tool search, which finds the tools declared with `defer_loading` when the model
/// needs them.
pub(super) fn tool_search<'a>() -> Json<'a> {
    Json::Object(vec![("type", Json::Str("tool_search"))])
}

/// The strict schema where there is one, else the schema as written with `strict: false`.
fn parameters(shared: &Shared) -> (Json<'_>, bool) {
    match &shared.strict {
        Ok(schema) => (Json::Rendered(schema), true),
        Err(_) => (Json::Rendered(&shared.as_written), false),
    }
}
