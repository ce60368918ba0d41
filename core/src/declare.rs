//! Each provider's declaration of one tool, as a JSON value: the one definition of its shape.
//! The runtime sends these (realtime sessions, live tools); the compiler's provider files are
//! written by a renderer that builds no values, for speed, and are checked against these entry
//! by entry (`compiler/tests/declaration_shapes.rs`).
//!
//! The schema lowerings they use live here too: [`crate::strict::to_strict`] for OpenAI's strict
//! mode, [`crate::schema_util::gemini_parameters_json_schema`] for Gemini.

use serde_json::{json, Map, Value};

use crate::definition::ToolDefinition;
use crate::schema_util::{gemini_parameters_json_schema, object_root};

/// OpenAI Realtime's `session.tools` entry (`RealtimeFunctionTool`). Realtime has no strict
/// mode, so the schema goes as written.
pub fn openai_realtime(def: &ToolDefinition) -> Value {
    json!({
        "type": "function",
        "name": def.name,
        "description": def.model_description(),
        "parameters": object_root(&def.parameters),
    })
}

/// A Responses function tool (`FunctionTool`): the strict schema where the parameters have one,
/// else the schema as written with `strict: false`. OpenAI's GPT-Live declares the delegated
/// backend's tools in this shape; the compiler's `openai-responses.json` adds `output_schema`
/// and `defer_loading` where a tool has them.
pub fn openai_function(def: &ToolDefinition) -> Value {
    let (parameters, strict) = match crate::strict::to_strict(&def.parameters) {
        Ok(schema) => (schema, true),
        Err(_) => (object_root(&def.parameters).into_owned(), false),
    };
    json!({
        "type": "function",
        "name": def.name,
        "description": def.model_description(),
        "parameters": parameters,
        "strict": strict,
    })
}

/// A Chat Completions tool (`ChatCompletionTool`): the [`openai_function`] fields inside
/// `function`, as the compiler's `openai-chat.json` writes them.
pub fn openai_chat_function(def: &ToolDefinition) -> Value {
    let mut function = openai_function(def);
    if let Value::Object(fields) = &mut function {
        fields.remove("type");
    }
    json!({ "type": "function", "function": function })
}

/// An Anthropic Messages tool (`{name, description, input_schema}`), the schema as written.
/// The compiler's `anthropic.json` also lowers an `anyOf`/`oneOf`/`allOf` root (which the API
/// refuses) with a warning; this does not, so such a tool is best declared from that file.
pub fn anthropic(def: &ToolDefinition) -> Value {
    json!({
        "name": def.name,
        "description": def.model_description(),
        "input_schema": object_root(&def.parameters),
    })
}

/// Gemini Live's `functionDeclarations` entry. The parameters go as full JSON Schema in
/// `parametersJsonSchema` (which current Live models accept, and which keeps `$ref`, type lists
/// and `anyOf` that the restricted `parameters` form cannot say), the result schema as
/// `responseJsonSchema`; a tool that takes no arguments declares none. `mode: async` tools are
/// `NON_BLOCKING`, so the model talks on while they run; every other tool is `BLOCKING`.
pub fn gemini_live(def: &ToolDefinition) -> Value {
    let mut d = Map::new();
    d.insert("name".into(), Value::String(def.name.clone()));
    d.insert(
        "description".into(),
        Value::String(def.model_description().into_owned()),
    );
    if let Some(schema) = gemini_parameters_json_schema(&def.parameters) {
        d.insert("parametersJsonSchema".into(), schema.into_owned());
    }
    if let Some(returns) = &def.returns {
        d.insert("responseJsonSchema".into(), returns.clone());
    }
    let behavior = if def.runs_in_background() {
        "NON_BLOCKING"
    } else {
        "BLOCKING"
    };
    d.insert("behavior".into(), Value::String(behavior.into()));
    Value::Object(d)
}
