//! Anthropic Messages.
//!
//! Shapes relied on (Anthropic's Messages API and streaming documentation; Anthropic publishes
//! no schema file, see `../shared/specs/README.md`):
//! - `content[]` blocks `{type: "tool_use", id, name, input}` with `input` an object; a turn that
//!   wants tools ends with `stop_reason: "tool_use"`. Other block types (`text`, `thinking`,
//!   `server_tool_use`, ...) are not ours to run.
//! - Streaming (server-sent events, each `data:` a JSON object with `type`):
//!   `content_block_start {index, content_block: {type: "tool_use", id, name, input: {}}}`, then
//!   `content_block_delta {index, delta: {type: "input_json_delta", partial_json}}` fragments to be
//!   concatenated per block `index`, then `content_block_stop {index}`. Text blocks stream
//!   `text_delta`s.
//! - Results: ONE `user` message whose `content` holds one
//!   `{type: "tool_result", tool_use_id, content, is_error?}` block per `tool_use`, in `tool_use`
//!   order; `is_error: true` marks failures. Tool results must come first in that message: add
//!   any text of your own after them.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::{
    expect_object, optional_array, required_index, required_str, CallResult, Codec, DecodeError,
    Provider, ToolCall,
};

const P: Provider = Provider::Anthropic;

/// The Anthropic Messages codec.
#[derive(Clone, Copy, Debug, Default)]
pub struct Anthropic;

fn is_tool_use(block: &Value) -> bool {
    block.get("type").and_then(Value::as_str) == Some("tool_use")
}

fn input_text(input: Option<&Value>) -> String {
    match input {
        None | Some(Value::Null) => "{}".to_owned(),
        Some(v) => v.to_string(),
    }
}

impl Codec for Anthropic {
    fn provider(&self) -> Provider {
        P
    }

    fn decode(&self, response: &Value) -> Result<Vec<ToolCall>, DecodeError> {
        expect_object(P, response, "")?;
        let mut calls = Vec::new();
        for (i, block) in optional_array(P, response, "", "content")?
            .iter()
            .enumerate()
        {
            let at = format!("/content/{i}");
            expect_object(P, block, &at)?;
            if is_tool_use(block) {
                calls.push(ToolCall::new(
                    required_str(P, block, &at, "id")?,
                    required_str(P, block, &at, "name")?,
                    input_text(block.get("input")),
                ));
            }
        }
        Ok(calls)
    }

    fn encode(&self, results: &[CallResult]) -> Vec<Value> {
        if results.is_empty() {
            return Vec::new();
        }
        let blocks: Vec<Value> = results
            .iter()
            .map(|r| {
                let mut block = json!({
                    "type": "tool_result",
                    "tool_use_id": r.call.call_id,
                    "content": r.output,
                });
                if r.is_error() {
                    block["is_error"] = Value::Bool(true);
                }
                block
            })
            .collect();
        vec![json!({ "role": "user", "content": blocks })]
    }

    fn assistant_turn(&self, response: &Value) -> Vec<Value> {
        match response.get("content") {
            Some(content @ Value::Array(_)) => {
                vec![json!({ "role": "assistant", "content": content })]
            }
            _ => Vec::new(),
        }
    }
}

#[derive(Debug)]
enum Block {
    Text(String),
    ToolUse {
        id: String,
        name: String,
        start_input: Value,
        partial_json: String,
    },
    /// Any other block, kept as started (with text deltas not applied) for the replay.
    Other(Value),
}

/// Assembles the `tool_use` blocks of a streamed Messages response from its events.
#[derive(Debug, Default)]
pub struct AnthropicStream {
    blocks: BTreeMap<usize, Block>,
    events: usize,
}

impl AnthropicStream {
    /// An assembler with nothing seen yet; start one per streamed response.
    pub fn new() -> AnthropicStream {
        AnthropicStream::default()
    }

    /// Feeds one SSE `data:` payload.
    pub fn push_str(&mut self, data: &str) -> Result<(), DecodeError> {
        match super::sse_data(P, data, "event", self.events)? {
            Some(event) => self.push(&event),
            None => Ok(()),
        }
    }

    /// Feeds one parsed stream event. Fails when the event is not what Messages streams carry.
    pub fn push(&mut self, event: &Value) -> Result<(), DecodeError> {
        let at = format!("event {}", self.events);
        self.events += 1;
        expect_object(P, event, &at)?;
        match event.get("type").and_then(Value::as_str).unwrap_or("") {
            "content_block_start" => {
                let index = required_index(P, event, &at, "index")?;
                let block = event.get("content_block").unwrap_or(&Value::Null);
                let block_at = format!("{at}/content_block");
                expect_object(P, block, &block_at)?;
                let started = match block.get("type").and_then(Value::as_str) {
                    Some("tool_use") => Block::ToolUse {
                        id: required_str(P, block, &block_at, "id")?.to_owned(),
                        name: required_str(P, block, &block_at, "name")?.to_owned(),
                        start_input: block.get("input").cloned().unwrap_or(json!({})),
                        partial_json: String::new(),
                    },
                    Some("text") => Block::Text(
                        block
                            .get("text")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_owned(),
                    ),
                    _ => Block::Other(block.clone()),
                };
                self.blocks.insert(index, started);
            }
            "content_block_delta" => {
                let index = required_index(P, event, &at, "index")?;
                let delta = event.get("delta").unwrap_or(&Value::Null);
                let delta_at = format!("{at}/delta");
                expect_object(P, delta, &delta_at)?;
                match (
                    delta.get("type").and_then(Value::as_str),
                    self.blocks.get_mut(&index),
                ) {
                    (Some("input_json_delta"), Some(Block::ToolUse { partial_json, .. })) => {
                        partial_json.push_str(required_str(P, delta, &delta_at, "partial_json")?);
                    }
                    (Some("input_json_delta"), _) => {
                        return Err(DecodeError::new(
                            P,
                            format!("{at}/index"),
                            format!("input_json_delta for block {index}, which is not a started tool_use block"),
                        ))
                    }
                    (Some("text_delta"), Some(Block::Text(text))) => {
                        text.push_str(delta.get("text").and_then(Value::as_str).unwrap_or(""));
                    }
                    _ => {}
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The `tool_use` calls seen so far, in block order.
    pub fn calls(&self) -> Vec<ToolCall> {
        self.blocks
            .values()
            .filter_map(|b| match b {
                Block::ToolUse {
                    id,
                    name,
                    start_input,
                    partial_json,
                } => Some(ToolCall::new(
                    id.clone(),
                    name.clone(),
                    if partial_json.trim().is_empty() {
                        start_input.to_string()
                    } else {
                        partial_json.clone()
                    },
                )),
                _ => None,
            })
            .collect()
    }

    /// The assistant message to replay: text and `tool_use` blocks in order. A `tool_use` whose
    /// streamed input is not a JSON object is replayed with `input: {}` (the API requires an
    /// object); its result tells the model what was wrong. Other block kinds are replayed as
    /// they started, which suits blocks that carry no deltas.
    pub fn assistant_message(&self) -> Value {
        let content: Vec<Value> = self
            .blocks
            .values()
            .map(|b| match b {
                Block::Text(text) => json!({ "type": "text", "text": text }),
                Block::ToolUse {
                    id,
                    name,
                    start_input,
                    partial_json,
                } => {
                    let input = if partial_json.trim().is_empty() {
                        start_input.clone()
                    } else {
                        match serde_json::from_str::<Value>(partial_json) {
                            Ok(v @ Value::Object(_)) => v,
                            _ => Value::Object(Map::new()),
                        }
                    };
                    json!({ "type": "tool_use", "id": id, "name": name, "input": input })
                }
                Block::Other(block) => block.clone(),
            })
            .collect();
        json!({ "role": "assistant", "content": content })
    }
}
