//! OpenAI Chat Completions.
//!
//! Shapes relied on (OpenAI OpenAPI document, `../shared/specs/openai/...extract.json`):
//! - `ChatCompletionResponseMessage.tool_calls[]` is `ChatCompletionMessageToolCall`
//!   `{id, type: "function", function: {name, arguments}}` with `arguments` a JSON *string* that
//!   "the model does not always generate valid"; `ChatCompletionMessageCustomToolCall`
//!   (`type: "custom"`, `custom: {name, input}`) is read too, so that it gets a result.
//! - Streaming: `ChatCompletionStreamResponseDelta.tool_calls[]` is
//!   `ChatCompletionMessageToolCallChunk` `{index, id?, type?, function?: {name?, arguments?}}`:
//!   only `index` is required; `id` and `name` come in the first chunk of a call and argument
//!   fragments are split anywhere, so fragments are concatenated by `index`.
//! - Results: one `ChatCompletionRequestToolMessage` `{role: "tool", tool_call_id, content}` per
//!   call, in call order, right after the assistant message that made the calls.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::{
    expect_object, json_type, optional_array, required_index, required_str, CallResult, Codec,
    DecodeError, Provider, ToolCall,
};

const P: Provider = Provider::OpenaiChat;

/// The Chat Completions codec.
#[derive(Clone, Copy, Debug, Default)]
pub struct ChatCompletions;

/// The assistant message of a response body: `choices[0].message`, or the body itself when it
/// already is a message (has `role` or `tool_calls`).
fn message(response: &Value) -> Result<Option<(&Value, &'static str)>, DecodeError> {
    expect_object(P, response, "")?;
    if response.get("choices").is_some() {
        let choices = optional_array(P, response, "", "choices")?;
        return match choices.first() {
            None => Ok(None),
            Some(choice) => {
                expect_object(P, choice, "/choices/0")?;
                match choice.get("message") {
                    None | Some(Value::Null) => Ok(None),
                    Some(m) => {
                        expect_object(P, m, "/choices/0/message")?;
                        Ok(Some((m, "/choices/0/message")))
                    }
                }
            }
        };
    }
    if response.get("role").is_some() || response.get("tool_calls").is_some() {
        return Ok(Some((response, "")));
    }
    Err(DecodeError::new(
        P,
        "",
        "expected a chat completion (with `choices`) or an assistant message",
    ))
}

fn arguments_text(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        // Some OpenAI-compatible servers send an object; its JSON text is what was meant.
        Some(other) => other.to_string(),
    }
}

impl Codec for ChatCompletions {
    fn provider(&self) -> Provider {
        P
    }

    fn decode(&self, response: &Value) -> Result<Vec<ToolCall>, DecodeError> {
        let Some((message, at)) = message(response)? else {
            return Ok(Vec::new());
        };
        let items = optional_array(P, message, at, "tool_calls")?;
        let mut calls = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let here = format!("{at}/tool_calls/{i}");
            expect_object(P, item, &here)?;
            let id = required_str(P, item, &here, "id")?;
            let (name, arguments) = match item.get("type").and_then(Value::as_str) {
                Some("custom") => {
                    let custom = item.get("custom").unwrap_or(&Value::Null);
                    let at = format!("{here}/custom");
                    expect_object(P, custom, &at)?;
                    (
                        required_str(P, custom, &at, "name")?,
                        arguments_text(custom.get("input")),
                    )
                }
                _ => {
                    let function = item.get("function").unwrap_or(&Value::Null);
                    let at = format!("{here}/function");
                    expect_object(P, function, &at)?;
                    (
                        required_str(P, function, &at, "name")?,
                        arguments_text(function.get("arguments")),
                    )
                }
            };
            calls.push(ToolCall::new(id, name, arguments));
        }
        Ok(calls)
    }

    fn encode(&self, results: &[CallResult]) -> Vec<Value> {
        results
            .iter()
            .map(|r| {
                json!({
                    "role": "tool",
                    "tool_call_id": r.call.call_id,
                    "content": r.output,
                })
            })
            .collect()
    }

    fn assistant_turn(&self, response: &Value) -> Vec<Value> {
        match message(response) {
            Ok(Some((m, _))) => vec![m.clone()],
            _ => Vec::new(),
        }
    }
}

#[derive(Debug, Default)]
struct PartialCall {
    id: Option<String>,
    name: Option<String>,
    arguments: String,
}

/// Assembles the tool calls of a streamed Chat Completion from its chunks
/// (`chat.completion.chunk` objects, the `data:` payloads of the server-sent events).
/// Only choice 0 is read; chunks of other choices are ignored.
#[derive(Debug, Default)]
pub struct ChatCompletionsStream {
    calls: BTreeMap<usize, PartialCall>,
    content: String,
    chunks: usize,
}

impl ChatCompletionsStream {
    /// An assembler with nothing seen yet; start one per streamed response.
    pub fn new() -> ChatCompletionsStream {
        ChatCompletionsStream::default()
    }

    /// Feeds one SSE `data:` payload; the terminating `[DONE]` is accepted and ignored.
    pub fn push_str(&mut self, data: &str) -> Result<(), DecodeError> {
        match super::sse_data(P, data, "chunk", self.chunks)? {
            Some(chunk) => self.push(&chunk),
            None => Ok(()),
        }
    }

    /// Feeds one parsed chunk.
    pub fn push(&mut self, chunk: &Value) -> Result<(), DecodeError> {
        let n = self.chunks;
        self.chunks += 1;
        expect_object(P, chunk, "")?;
        let choices = optional_array(P, chunk, "", "choices")?;
        for (c, choice) in choices.iter().enumerate() {
            let at = format!("/choices/{c}");
            expect_object(P, choice, &at)?;
            if choice.get("index").and_then(Value::as_u64).unwrap_or(0) != 0 {
                continue;
            }
            let delta = match choice.get("delta") {
                None | Some(Value::Null) => continue,
                Some(d) => d,
            };
            let at = format!("{at}/delta");
            expect_object(P, delta, &at)?;
            if let Some(Value::String(text)) = delta.get("content") {
                self.content.push_str(text);
            }
            for (i, piece) in optional_array(P, delta, &at, "tool_calls")?
                .iter()
                .enumerate()
            {
                let at = format!("{at}/tool_calls/{i}");
                expect_object(P, piece, &at)?;
                let index = required_index(P, piece, &at, "index").map_err(|e| with_chunk(e, n))?;
                let call = self.calls.entry(index).or_default();
                // Taken from the first chunk that carries them: some compatible servers repeat
                // them in every chunk, and repeating must not double them.
                if let Some(Value::String(id)) = piece.get("id") {
                    if call.id.is_none() && !id.is_empty() {
                        call.id = Some(id.clone());
                    }
                }
                if let Some(function) = piece.get("function").filter(|f| f.is_object()) {
                    if let Some(Value::String(name)) = function.get("name") {
                        if call.name.is_none() && !name.is_empty() {
                            call.name = Some(name.clone());
                        }
                    }
                    match function.get("arguments") {
                        Some(Value::String(fragment)) => call.arguments.push_str(fragment),
                        None | Some(Value::Null) => {}
                        Some(other) => {
                            return Err(with_chunk(
                                DecodeError::new(
                                    P,
                                    format!("{at}/function/arguments"),
                                    format!(
                                        "expected a string fragment, found {}",
                                        json_type(other)
                                    ),
                                ),
                                n,
                            ))
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The calls assembled so far, in `index` order. Fails if a call never received its id or
    /// name.
    pub fn calls(&self) -> Result<Vec<ToolCall>, DecodeError> {
        self.calls
            .iter()
            .map(|(index, call)| {
                let missing = |what: &str| {
                    DecodeError::new(
                        P,
                        format!("tool call index {index}"),
                        format!("the stream ended without the call's {what}"),
                    )
                };
                let id = call.id.clone().ok_or_else(|| missing("id"))?;
                let name = call.name.clone().ok_or_else(|| missing("function name"))?;
                Ok(ToolCall::new(id, name, call.arguments.clone()))
            })
            .collect()
    }

    /// The assistant message to replay in the next request: the streamed text and the calls.
    pub fn assistant_message(&self) -> Result<Value, DecodeError> {
        let calls = self.calls()?;
        let mut message = Map::new();
        message.insert("role".into(), "assistant".into());
        message.insert(
            "content".into(),
            if self.content.is_empty() {
                Value::Null
            } else {
                Value::String(self.content.clone())
            },
        );
        if !calls.is_empty() {
            message.insert(
                "tool_calls".into(),
                calls
                    .into_iter()
                    .map(|c| {
                        json!({
                            "id": c.call_id,
                            "type": "function",
                            "function": { "name": c.name, "arguments": c.arguments },
                        })
                    })
                    .collect(),
            );
        }
        Ok(Value::Object(message))
    }
}

fn with_chunk(mut e: DecodeError, chunk: usize) -> DecodeError {
    e.pointer = format!("chunk {chunk}: {}", e.pointer);
    e
}
