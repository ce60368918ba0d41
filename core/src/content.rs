//! Content results: a tool whose manifest says `returns: content` answers with content blocks
//! (text, an image, audio, an embedded resource), as MCP's `tools/call` result carries them,
//! instead of a JSON value of its own schema. The manifest's word stands for [`schema`], so
//! every later stage (validation, the generated types, the provider files, `toolc diff`) reads
//! an ordinary schema; [`is_content`] tells the stages that treat content specially (MCP's
//! `content` blocks, the runtime's `ToolContent` type) which tools they are.

use std::sync::OnceLock;

use serde_json::{json, Value};

/// The manifest's word for it: `returns: content`.
pub const KEYWORD: &str = "content";

/// The result schema of a content tool: `{ "content": [block, ...] }`, each block MCP's text,
/// image, audio or embedded-resource content (`data` and `blob` are base64).
pub fn schema() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        json!({
            "type": "object",
            "description": "Content blocks: text, images, audio and embedded resources.",
            "properties": {
                "content": {
                    "type": "array",
                    "items": {
                        "anyOf": [
                            {
                                "type": "object",
                                "properties": {
                                    "type": { "enum": ["text"] },
                                    "text": { "type": "string" }
                                },
                                "required": ["type", "text"],
                                "additionalProperties": false
                            },
                            {
                                "type": "object",
                                "properties": {
                                    "type": { "enum": ["image", "audio"] },
                                    "data": { "type": "string", "description": "base64" },
                                    "mimeType": { "type": "string" }
                                },
                                "required": ["type", "data", "mimeType"],
                                "additionalProperties": false
                            },
                            {
                                "type": "object",
                                "properties": {
                                    "type": { "enum": ["resource"] },
                                    "resource": {
                                        "type": "object",
                                        "properties": {
                                            "uri": { "type": "string" },
                                            "mimeType": { "type": "string" },
                                            "text": { "type": "string" },
                                            "blob": { "type": "string", "description": "base64" }
                                        },
                                        "required": ["uri"],
                                        "additionalProperties": false
                                    }
                                },
                                "required": ["type", "resource"],
                                "additionalProperties": false
                            }
                        ]
                    }
                }
            },
            "required": ["content"],
            "additionalProperties": false
        })
    })
}

/// Whether a result schema is the content schema (the manifest said `returns: content`).
pub fn is_content(returns: Option<&Value>) -> bool {
    returns.is_some_and(|r| r == schema())
}
