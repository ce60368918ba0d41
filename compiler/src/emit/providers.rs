//! Provider declaration files. (Lowering per provider is filled in by the provider work.)

use serde_json::{json, Value};

use crate::diagnostic::Diagnostics;
use crate::emit::to_json_text;
use crate::ir::Ir;
use crate::output::Outputs;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Provider {
    OpenaiRealtime,
    OpenaiChat,
    OpenaiResponses,
    Anthropic,
    Gemini,
    Mcp,
}

impl Provider {
    pub const ALL: [Provider; 6] = [
        Provider::OpenaiRealtime,
        Provider::OpenaiChat,
        Provider::OpenaiResponses,
        Provider::Anthropic,
        Provider::Gemini,
        Provider::Mcp,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Provider::OpenaiRealtime => "openai-realtime",
            Provider::OpenaiChat => "openai-chat",
            Provider::OpenaiResponses => "openai-responses",
            Provider::Anthropic => "anthropic",
            Provider::Gemini => "gemini",
            Provider::Mcp => "mcp",
        }
    }

    pub fn parse(name: &str) -> Option<Provider> {
        Provider::ALL.into_iter().find(|p| p.name() == name)
    }
}

pub fn emit(ir: &Ir, diags: &mut Diagnostics, outputs: &mut Outputs) {
    for provider in Provider::ALL {
        let value = declarations(ir, provider, diags);
        outputs.insert(
            format!("providers/{}.json", provider.name()),
            to_json_text(&value),
        );
    }
}

pub fn declarations(ir: &Ir, provider: Provider, _diags: &mut Diagnostics) -> Value {
    let tools: Vec<Value> = ir
        .tools
        .iter()
        .map(|t| {
            let d = &t.def;
            match provider {
                Provider::OpenaiRealtime => json!({"type": "function", "name": d.name, "description": d.description, "parameters": d.parameters}),
                Provider::OpenaiChat => json!({"type": "function", "function": {"name": d.name, "description": d.description, "parameters": d.parameters}}),
                Provider::OpenaiResponses => json!({"type": "function", "name": d.name, "description": d.description, "parameters": d.parameters, "strict": false}),
                Provider::Anthropic => json!({"name": d.name, "description": d.description, "input_schema": d.parameters}),
                Provider::Gemini => json!({"name": d.name, "description": d.description, "parameters": d.parameters}),
                Provider::Mcp => json!({"name": d.name, "description": d.description, "inputSchema": d.parameters}),
            }
        })
        .collect();
    match provider {
        Provider::Gemini => json!({ "functionDeclarations": tools }),
        Provider::Mcp => json!({ "tools": tools }),
        _ => Value::Array(tools),
    }
}
