//! Tool turns for request/response chat APIs: OpenAI Chat Completions and Responses, Anthropic
//! Messages and Gemini `generateContent`.
//!
//! The loop every such agent runs: send a request, get a response whose tool calls must be run,
//! send the results back in the next request. This module does the middle part on
//! `serde_json::Value`s, so that users keep their own HTTP client:
//!
//! 1. a provider [`Codec`] (or, for streamed responses, its assembler) turns the response into
//!    normalized [`ToolCall`]s — `{call_id, name, arguments}` with the arguments as the JSON text
//!    the provider sent, so that malformed JSON reaches validation and becomes a result the model
//!    can read, not a decoding failure;
//! 2. the [`TurnRunner`] runs every call of the turn concurrently — server tools through the
//!    [`Registry`], client tools through a [`ClientPath`](crate::dispatch::ClientPath) with their deadline —
//!    and yields exactly one [`CallResult`] per distinct call id, in the order of the calls;
//! 3. the codec turns the results into the follow-up messages in the shape and order that the
//!    provider requires ([`Codec::encode`]).
//!
//! | provider | calls come from | results go back as |
//! | --- | --- | --- |
//! | Chat Completions | `choices[0].message.tool_calls[]`, stream `delta.tool_calls[]` by `index` | one `{"role":"tool","tool_call_id","content"}` message per call |
//! | Responses | `output[]` items of type `function_call`, stream `response.output_item.*` + `response.function_call_arguments.*` | one `{"type":"function_call_output","call_id","output"}` input item per call |
//! | Anthropic | `content[]` blocks of type `tool_use`, stream `content_block_start` + `input_json_delta` by block index | ONE `user` message with one `tool_result` block per call, `is_error: true` on failures |
//! | Gemini | `candidates[0].content.parts[].functionCall` | ONE `user` content with one `functionResponse` part per call |
#![warn(missing_docs)]

// The kernel's items at this crate's root, where `toolc-runtime` has them too, so that a path
// reads the same in every crate of the runtime (`crate::Registry`, `crate::dispatch::ToolCall`).
#[allow(unused_imports)]
use toolc_kernel::*;

pub mod anthropic;
pub mod gemini;
#[cfg(feature = "http")]
pub mod http;
pub mod openai_chat;
pub mod openai_responses;
mod runner;

use std::fmt;

use serde_json::Value;

use crate::dispatch::{CallOutcome, Status};

pub use anthropic::{Anthropic, AnthropicStream};
pub use gemini::{Gemini, GeminiStream};
pub use openai_chat::{ChatCompletions, ChatCompletionsStream};
pub use openai_responses::{Responses, ResponsesStream};
pub use runner::{
    client_fn, BackgroundResult, ChannelClient, ClientFn, ClientRequest, Incomplete,
    PendingApproval, Resolution, TurnOutcome, TurnRunner,
};

/// One tool call of a model turn, normalized across providers: the same type every path routes.
pub use crate::dispatch::ToolCall;

/// The outcome of one call, ready to be encoded for any provider.
#[derive(Clone, Debug, PartialEq)]
pub struct CallResult {
    /// The call this result answers.
    pub call: ToolCall,
    /// JSON text for the model: the tool's result, an acknowledgement of a fire-and-forget call,
    /// or on failure the error object `{"error": {"kind", "message", ...}}`.
    pub output: String,
    /// How the call ended; the error itself when it failed.
    pub status: Status,
}

impl CallResult {
    /// The result of `call`, from the outcome of routing it.
    pub fn new(call: ToolCall, outcome: CallOutcome) -> CallResult {
        CallResult {
            call,
            output: outcome.output,
            status: outcome.status,
        }
    }

    /// Whether the call failed.
    pub fn is_error(&self) -> bool {
        matches!(self.status, Status::Failed(_))
    }

    /// The stable kind of a failure (`invalid_arguments`, `unknown_tool`, `timeout`, ...).
    pub fn error_kind(&self) -> Option<&'static str> {
        match &self.status {
            Status::Failed(e) => Some(e.kind().as_str()),
            _ => None,
        }
    }

    /// The output as a JSON value, for providers that carry objects (Gemini). Output that is not
    /// JSON (a client may answer with plain text) becomes a JSON string.
    pub fn output_value(&self) -> Value {
        serde_json::from_str(&self.output).unwrap_or_else(|_| Value::String(self.output.clone()))
    }
}

/// Which wire format a codec speaks: the compiler's provider names.
pub use toolc_core::provider::Provider;

/// A response whose tool calls cannot be read: its structure is not the provider's. Argument
/// text that is not JSON is *not* a decode error; it is reported to the model as a call result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// The provider whose format the response did not follow.
    pub provider: Provider,
    /// A JSON pointer into the response (or, for streams, into the offending chunk).
    pub pointer: String,
    /// What is wrong there, in words.
    pub message: String,
}

impl DecodeError {
    pub(crate) fn new(
        provider: Provider,
        pointer: impl Into<String>,
        message: impl Into<String>,
    ) -> DecodeError {
        DecodeError {
            provider,
            pointer: pointer.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.pointer.is_empty() {
            "(root)"
        } else {
            &self.pointer
        };
        write!(
            f,
            "cannot read the {} response at {at}: {}",
            self.provider.name(),
            self.message
        )
    }
}

impl std::error::Error for DecodeError {}

/// A provider's wire format for one tool turn.
pub trait Codec: Send + Sync {
    /// The provider whose wire format this codec speaks.
    fn provider(&self) -> Provider;

    /// The tool calls of a complete (non-streamed) response body, in the order the model made
    /// them. A response without tool calls yields an empty list.
    fn decode(&self, response: &Value) -> Result<Vec<ToolCall>, DecodeError>;

    /// The follow-up messages (Chat, Anthropic, Gemini) or input items (Responses) that carry
    /// `results` back, in the order the provider requires. Append them, after the model's own
    /// message, to the conversation of the next request. No results → nothing to append.
    fn encode(&self, results: &[CallResult]) -> Vec<Value>;

    /// The model's own turn as it must be replayed in the next request (the assistant message,
    /// or for Responses the output items), taken from a complete response body.
    fn assistant_turn(&self, response: &Value) -> Vec<Value>;
}

/// The JSON of one server-sent event's `data` (a stream's chunk or event), as every streamed
/// chat API sends it: `None` for an empty one and for the `[DONE]` that OpenAI's streams end
/// with; text that is not JSON is a decode error naming the `what` and its `index`.
pub(crate) fn sse_data(
    provider: Provider,
    data: &str,
    what: &str,
    index: usize,
) -> Result<Option<Value>, DecodeError> {
    let data = data.trim();
    if data.is_empty() || data == "[DONE]" {
        return Ok(None);
    }
    serde_json::from_str(data).map(Some).map_err(|e| {
        DecodeError::new(
            provider,
            format!("{what} {index}"),
            format!("not JSON: {e}"),
        )
    })
}

/// `value[key]` as a string, or a decode error naming `pointer/key`.
pub(crate) fn required_str<'a>(
    provider: Provider,
    value: &'a Value,
    pointer: &str,
    key: &str,
) -> Result<&'a str, DecodeError> {
    match value.get(key) {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(DecodeError::new(
            provider,
            format!("{pointer}/{key}"),
            format!("expected a string, found {}", json_type(other)),
        )),
        None => Err(DecodeError::new(
            provider,
            format!("{pointer}/{key}"),
            "is missing",
        )),
    }
}

/// `value[key]` as an array; absent or `null` reads as empty.
pub(crate) fn optional_array<'a>(
    provider: Provider,
    value: &'a Value,
    pointer: &str,
    key: &str,
) -> Result<&'a [Value], DecodeError> {
    match value.get(key) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(items)) => Ok(items),
        Some(other) => Err(DecodeError::new(
            provider,
            format!("{pointer}/{key}"),
            format!("expected an array, found {}", json_type(other)),
        )),
    }
}

pub(crate) fn expect_object(
    provider: Provider,
    value: &Value,
    pointer: &str,
) -> Result<(), DecodeError> {
    if value.is_object() {
        Ok(())
    } else {
        Err(DecodeError::new(
            provider,
            pointer,
            format!("expected an object, found {}", json_type(value)),
        ))
    }
}

pub(crate) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A stream index (`index`, `output_index`) as a `usize`, or a decode error.
pub(crate) fn required_index(
    provider: Provider,
    value: &Value,
    pointer: &str,
    key: &str,
) -> Result<usize, DecodeError> {
    match value.get(key).and_then(Value::as_u64) {
        Some(i) => usize::try_from(i)
            .map_err(|_| DecodeError::new(provider, format!("{pointer}/{key}"), "is out of range")),
        None => Err(DecodeError::new(
            provider,
            format!("{pointer}/{key}"),
            "expected a non-negative integer",
        )),
    }
}
