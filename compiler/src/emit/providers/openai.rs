//! OpenAI: Realtime GA `session.tools`, Chat Completions `tools`, Responses `tools`.

use serde_json::Value;

use super::{object, object_root};
use crate::ir::IrTool;

/// A Realtime GA function tool (`RealtimeFunctionTool`). Realtime has no strict mode, so the
/// schema goes as written.
pub(super) fn realtime(tool: &IrTool) -> Value {
    let d = &tool.def;
    object([
        ("type", "function".into()),
        ("name", d.name.as_str().into()),
        ("description", d.description.as_str().into()),
        ("parameters", object_root(&d.parameters)),
    ])
}

/// A Chat Completions tool (`ChatCompletionTool` with a `FunctionObject`).
pub(super) fn chat(tool: &IrTool, strict: Option<&Value>) -> Value {
    let d = &tool.def;
    let (parameters, is_strict) = parameters(tool, strict);
    object([
        ("type", "function".into()),
        (
            "function",
            object([
                ("name", d.name.as_str().into()),
                ("description", d.description.as_str().into()),
                ("parameters", parameters),
                ("strict", is_strict.into()),
            ]),
        ),
    ])
}

/// A Responses function tool (`FunctionTool`, where `strict` is a required field).
pub(super) fn responses(tool: &IrTool, strict: Option<&Value>) -> Value {
    let d = &tool.def;
    let (parameters, is_strict) = parameters(tool, strict);
    object([
        ("type", "function".into()),
        ("name", d.name.as_str().into()),
        ("description", d.description.as_str().into()),
        ("parameters", parameters),
        ("strict", is_strict.into()),
    ])
}

fn parameters(tool: &IrTool, strict: Option<&Value>) -> (Value, bool) {
    match strict {
        Some(schema) => (schema.clone(), true),
        None => (object_root(&tool.def.parameters), false),
    }
}
