//! OpenAI Responses.
//!
//! Shapes relied on (OpenAI OpenAPI document, `../shared/specs/openai/...extract.json`):
//! - `response.output[]` items of type `function_call` are `FunctionToolCall`
//!   `{type, id?, call_id, name, arguments, status?}`; results are matched by `call_id` (not `id`).
//! - Streaming: `response.output_item.added` (`ResponseOutputItemAddedEvent`, the item with
//!   `arguments: ""`), `response.function_call_arguments.delta` (`{item_id, output_index,
//!   delta}`), `response.function_call_arguments.done` (`{item_id, name, output_index,
//!   arguments}`, the final text) and `response.output_item.done` (the complete item). Calls are
//!   keyed by `output_index`; the complete item, when it arrives, is authoritative.
//! - Results: one `FunctionCallOutputItemParam` `{type: "function_call_output", call_id, output}`
//!   input item per call (`output` a string), in call order.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::{
    expect_object, optional_array, required_index, required_str, CallResult, Codec, DecodeError,
    Provider, ToolCall,
};

const P: Provider = Provider::OpenaiResponses;

/// The Responses codec.
#[derive(Clone, Copy, Debug, Default)]
pub struct Responses;

fn function_call(item: &Value, at: &str) -> Result<ToolCall, DecodeError> {
    let call_id = required_str(P, item, at, "call_id")?;
    let name = required_str(P, item, at, "name")?;
    let arguments = match item.get("arguments") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    };
    Ok(ToolCall::new(call_id, name, arguments))
}

fn is_function_call(item: &Value) -> bool {
    item.get("type").and_then(Value::as_str) == Some("function_call")
}

impl Codec for Responses {
    fn provider(&self) -> Provider {
        P
    }

    fn decode(&self, response: &Value) -> Result<Vec<ToolCall>, DecodeError> {
        expect_object(P, response, "")?;
        let mut calls = Vec::new();
        for (i, item) in optional_array(P, response, "", "output")?
            .iter()
            .enumerate()
        {
            let at = format!("/output/{i}");
            expect_object(P, item, &at)?;
            if is_function_call(item) {
                calls.push(function_call(item, &at)?);
            }
        }
        Ok(calls)
    }

    fn encode(&self, results: &[CallResult]) -> Vec<Value> {
        results
            .iter()
            .map(|r| {
                json!({
                    "type": "function_call_output",
                    "call_id": r.call.call_id,
                    "output": r.output,
                })
            })
            .collect()
    }

    /// Every output item (reasoning items included: reasoning models need them back), unless
    /// the next request continues with `previous_response_id`, in which case send none.
    fn assistant_turn(&self, response: &Value) -> Vec<Value> {
        response
            .get("output")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    }
}

#[derive(Debug, Default)]
struct PartialCall {
    call_id: Option<String>,
    name: Option<String>,
    arguments: String,
    /// Set by `.done` or the complete item: later deltas no longer change the text.
    final_arguments: bool,
    item: Option<Value>,
}

/// Assembles the function calls of a streamed Response from its events (the `data:` payloads).
#[derive(Debug, Default)]
pub struct ResponsesStream {
    items: BTreeMap<usize, PartialCall>,
    events: usize,
}

impl ResponsesStream {
    /// An assembler with nothing seen yet; start one per streamed response.
    pub fn new() -> ResponsesStream {
        ResponsesStream::default()
    }

    /// Feeds one SSE `data:` payload.
    pub fn push_str(&mut self, data: &str) -> Result<(), DecodeError> {
        match super::sse_data(P, data, "event", self.events)? {
            Some(event) => self.push(&event),
            None => Ok(()),
        }
    }

    /// Feeds one parsed stream event. Fails when the event is not what Responses streams carry.
    pub fn push(&mut self, event: &Value) -> Result<(), DecodeError> {
        let n = self.events;
        self.events += 1;
        let at = format!("event {n}");
        expect_object(P, event, &at)?;
        let kind = event.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "response.output_item.added" | "response.output_item.done" => {
                let index = required_index(P, event, &at, "output_index")?;
                let item = event.get("item").unwrap_or(&Value::Null);
                let item_at = format!("{at}/item");
                expect_object(P, item, &item_at)?;
                let done = kind.ends_with(".done");
                if !is_function_call(item) {
                    if done {
                        self.items.entry(index).or_default().item = Some(item.clone());
                    }
                    return Ok(());
                }
                let call = self.items.entry(index).or_default();
                if let Some(Value::String(id)) = item.get("call_id") {
                    call.call_id = Some(id.clone());
                }
                if let Some(Value::String(name)) = item.get("name") {
                    call.name = Some(name.clone());
                }
                if done {
                    let complete = function_call(item, &item_at)?;
                    call.arguments = complete.arguments;
                    call.final_arguments = true;
                    call.item = Some(item.clone());
                }
            }
            "response.function_call_arguments.delta" => {
                let index = required_index(P, event, &at, "output_index")?;
                let delta = required_str(P, event, &at, "delta")?;
                let call = self.items.entry(index).or_default();
                if !call.final_arguments {
                    call.arguments.push_str(delta);
                }
            }
            "response.function_call_arguments.done" => {
                let index = required_index(P, event, &at, "output_index")?;
                let arguments = required_str(P, event, &at, "arguments")?;
                let call = self.items.entry(index).or_default();
                if let Some(Value::String(name)) = event.get("name") {
                    call.name.get_or_insert_with(|| name.clone());
                }
                if call.item.is_none() {
                    call.arguments = arguments.to_owned();
                    call.final_arguments = true;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The function calls seen so far, in output order.
    pub fn calls(&self) -> Result<Vec<ToolCall>, DecodeError> {
        let mut calls = Vec::new();
        for (index, call) in &self.items {
            let is_call = call.call_id.is_some()
                || call.name.is_some()
                || call.item.as_ref().is_some_and(is_function_call)
                || (call.item.is_none() && !call.arguments.is_empty());
            if !is_call {
                continue;
            }
            let missing = |what: &str| {
                DecodeError::new(
                    P,
                    format!("output_index {index}"),
                    format!("the stream ended without the function call's {what}"),
                )
            };
            calls.push(ToolCall::new(
                call.call_id.clone().ok_or_else(|| missing("call_id"))?,
                call.name.clone().ok_or_else(|| missing("name"))?,
                call.arguments.clone(),
            ));
        }
        Ok(calls)
    }

    /// The completed output items (from `response.output_item.done`), in output order: what to
    /// replay as input when the next request does not use `previous_response_id`.
    pub fn output_items(&self) -> Vec<Value> {
        self.items.values().filter_map(|c| c.item.clone()).collect()
    }
}
