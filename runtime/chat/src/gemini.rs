//! Google Gemini `generateContent` / `streamGenerateContent`.
//!
//! Shapes relied on (Gemini API reference for `Part`, `FunctionCall`, `FunctionResponse`; the
//! google-genai SDK types):
//! - `candidates[0].content.parts[]`, a part with `functionCall: {name, args?, id?}`; `args` is an
//!   object (absent for a call without arguments); `id` exists only in newer API versions.
//! - Streaming: each chunk is a whole `GenerateContentResponse` whose parts continue the turn; a
//!   `functionCall` part arrives complete inside one chunk, so calls are the `functionCall` parts
//!   of all chunks in order.
//! - Results: ONE content `{role: "user", parts: [...]}` with one
//!   `{functionResponse: {id?, name, response}}` part per call, in call order. `response` must be
//!   an object: the API reads its `output` key as the function's output and its `error` key as
//!   error details, so successes are sent as `{"output": ...}` and failures as
//!   `{"error": {"kind", "message", ...}}`. `id` is passed back only when the call had one.
//! - Calls without an id get `call_id` `gemini-call-N` (N = position in the turn) so that every
//!   call gets its own result; these ids are never sent to the API.

use serde_json::{json, Map, Value};

use super::{expect_object, optional_array, CallResult, Codec, DecodeError, Provider, ToolCall};

const P: Provider = Provider::Gemini;

/// The Gemini codec.
#[derive(Clone, Copy, Debug, Default)]
pub struct Gemini;

/// The parts of `candidates[0].content` (empty when the response has none, e.g. blocked).
fn parts(response: &Value) -> Result<&[Value], DecodeError> {
    expect_object(P, response, "")?;
    let candidates = optional_array(P, response, "", "candidates")?;
    let Some(candidate) = candidates.first() else {
        return Ok(&[]);
    };
    expect_object(P, candidate, "/candidates/0")?;
    match candidate.get("content") {
        None | Some(Value::Null) => Ok(&[]),
        Some(content) => {
            expect_object(P, content, "/candidates/0/content")?;
            optional_array(P, content, "/candidates/0/content", "parts")
        }
    }
}

fn function_call(part: &Value, at: &str, position: usize) -> Result<Option<ToolCall>, DecodeError> {
    expect_object(P, part, at)?;
    let Some(call) = part.get("functionCall") else {
        return Ok(None);
    };
    let at = format!("{at}/functionCall");
    expect_object(P, call, &at)?;
    let name = super::required_str(P, call, &at, "name")?;
    let arguments = match call.get("args") {
        None | Some(Value::Null) => "{}".to_owned(),
        Some(args) => args.to_string(),
    };
    Ok(Some(match call.get("id") {
        Some(Value::String(id)) if !id.is_empty() => ToolCall::new(id.clone(), name, arguments),
        _ => ToolCall {
            call_id: format!("gemini-call-{position}"),
            name: name.to_owned(),
            arguments,
            synthesized_id: true,
        },
    }))
}

impl Codec for Gemini {
    fn provider(&self) -> Provider {
        P
    }

    fn decode(&self, response: &Value) -> Result<Vec<ToolCall>, DecodeError> {
        let mut calls = Vec::new();
        for (i, part) in parts(response)?.iter().enumerate() {
            let at = format!("/candidates/0/content/parts/{i}");
            if let Some(call) = function_call(part, &at, calls.len())? {
                calls.push(call);
            }
        }
        Ok(calls)
    }

    fn encode(&self, results: &[CallResult]) -> Vec<Value> {
        if results.is_empty() {
            return Vec::new();
        }
        let parts: Vec<Value> = results
            .iter()
            .map(|r| {
                let mut response = Map::new();
                let output = r.output_value();
                if r.is_error() {
                    match output {
                        Value::Object(error) if error.contains_key("error") => response = error,
                        other => {
                            response.insert("error".into(), other);
                        }
                    }
                } else {
                    response.insert("output".into(), output);
                }
                let mut function_response = Map::new();
                if !r.call.synthesized_id {
                    function_response.insert("id".into(), Value::String(r.call.call_id.clone()));
                }
                function_response.insert("name".into(), Value::String(r.call.name.clone()));
                function_response.insert("response".into(), Value::Object(response));
                json!({ "functionResponse": function_response })
            })
            .collect();
        vec![json!({ "role": "user", "parts": parts })]
    }

    fn assistant_turn(&self, response: &Value) -> Vec<Value> {
        response
            .pointer("/candidates/0/content")
            .filter(|c| c.is_object())
            .map(|c| {
                let mut content = c.clone();
                // The API may omit the role on model content; the next request needs it.
                if content.get("role").is_none() {
                    content["role"] = Value::String("model".into());
                }
                vec![content]
            })
            .unwrap_or_default()
    }
}

/// Collects the function calls (and all parts, for the replay) of a streamed response.
#[derive(Debug, Default)]
pub struct GeminiStream {
    parts: Vec<Value>,
    calls: Vec<ToolCall>,
    chunks: usize,
}

impl GeminiStream {
    /// An assembler with nothing seen yet; start one per streamed response.
    pub fn new() -> GeminiStream {
        GeminiStream::default()
    }

    /// Feeds one SSE `data:` payload (`streamGenerateContent?alt=sse`).
    pub fn push_str(&mut self, data: &str) -> Result<(), DecodeError> {
        match super::sse_data(P, data, "chunk", self.chunks)? {
            Some(chunk) => self.push(&chunk),
            None => Ok(()),
        }
    }

    /// Feeds one parsed stream chunk. Fails when the chunk is not a `generateContent` response.
    pub fn push(&mut self, chunk: &Value) -> Result<(), DecodeError> {
        let n = self.chunks;
        self.chunks += 1;
        let parts = parts(chunk).map_err(|mut e| {
            e.pointer = format!("chunk {n}: {}", e.pointer);
            e
        })?;
        for (i, part) in parts.iter().enumerate() {
            let at = format!("chunk {n}: /candidates/0/content/parts/{i}");
            if let Some(call) = function_call(part, &at, self.calls.len())? {
                self.calls.push(call);
            }
            self.parts.push(part.clone());
        }
        Ok(())
    }

    /// The function calls seen so far, in stream order; where Gemini gave no id, one is made up
    /// from the call's position.
    pub fn calls(&self) -> Vec<ToolCall> {
        self.calls.clone()
    }

    /// The model's content to replay: every streamed part in order (thought signatures kept).
    pub fn model_content(&self) -> Value {
        json!({ "role": "model", "parts": self.parts })
    }
}
