//! OpenAI: Realtime GA `session.tools`, Chat Completions `tools`, Responses `tools`.

use serde_json::{json, Value};

use super::object_root;
use crate::ir::IrTool;

/// A Realtime GA function tool (`RealtimeFunctionTool`). Realtime has no strict mode, so the
/// schema goes as written.
pub(super) fn realtime(tool: &IrTool) -> Value {
    let d = &tool.def;
    json!({
        "type": "function",
        "name": d.name,
        "description": d.description,
        "parameters": object_root(&d.parameters),
    })
}

/// A Chat Completions tool (`ChatCompletionTool` with a `FunctionObject`).
pub(super) fn chat(tool: &IrTool, strict: Option<&Value>) -> Value {
    let d = &tool.def;
    let (parameters, is_strict) = parameters(tool, strict);
    json!({
        "type": "function",
        "function": {
            "name": d.name,
            "description": d.description,
            "parameters": parameters,
            "strict": is_strict,
        }
    })
}

/// A Responses function tool (`FunctionTool`, where `strict` is a required field).
pub(super) fn responses(tool: &IrTool, strict: Option<&Value>) -> Value {
    let d = &tool.def;
    let (parameters, is_strict) = parameters(tool, strict);
    json!({
        "type": "function",
        "name": d.name,
        "description": d.description,
        "parameters": parameters,
        "strict": is_strict,
    })
}

fn parameters(tool: &IrTool, strict: Option<&Value>) -> (Value, bool) {
    match strict {
        Some(schema) => (schema.clone(), true),
        None => (object_root(&tool.def.parameters), false),
    }
}
