//! The browser protocol: client calls go to the browser as
//! `{"type":"function_call","call_id","name","arguments"}` and come back as
//! `{"type":"function_call.result","call_id","output"}`, with `arguments` and `output` as JSON
//! text. The alternative naming is `tool.call` / `tool.result` with `callId`. Results are
//! accepted in either naming whatever the session sends.
//!
//! Opt-in ([`crate::SessionConfig::trace_calls`]): when a call resolves, the browser
//! gets `{"type":"toolc.trace","name","location","duration_ms","status"}` plus `"error"` (the
//! [`crate::CallErrorKind`] string) for a failed call and `"call_id"` for a call it was given.
//! It never carries a server call's id, arguments or result.
//!
//! Call behaviours (the manifest's `approval`, `cancel_on_interruption`, `stream_arguments`):
//! - `{"type":"toolc.approval.request","approval_id","name","location","arguments"}` asks the
//!   page to approve a call (server or client; `arguments` is the validated object). The page
//!   answers `{"type":"toolc.approval.response","approval_id","approved","reason"?}`; the id is
//!   fresh per request and bound to that call and those arguments in the session, so an answer
//!   can approve nothing else. A server call's id never appears.
//! - `{"type":"toolc.cancel","call_id"|"approval_id","reason"}` withdraws a client call (the
//!   handler's abort signal fires) or an approval request (the user interrupted, it timed out).
//! - `{"type":"toolc.arguments.delta","call_id","name","partial"}` carries a streaming client
//!   tool's arguments so far, closed into an object (see the `partial` module).

use std::time::Duration;

use serde_json::{json, Value};

use super::openai::str_field;

/// Which message names a session uses towards its browser.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Naming {
    /// `function_call` / `function_call.result` with `call_id`.
    #[default]
    FunctionCall,
    /// `tool.call` / `tool.result` with `callId`.
    ToolCall,
}

impl Naming {
    /// Parses `function_call` or `tool.call` (also `tool`, as in a `?naming=tool` query).
    pub fn parse(text: &str) -> Option<Naming> {
        match text {
            "function_call" | "function" => Some(Naming::FunctionCall),
            "tool.call" | "tool" => Some(Naming::ToolCall),
            _ => None,
        }
    }

    /// The `type` of a call message in this naming.
    pub fn call_type(self) -> &'static str {
        match self {
            Naming::FunctionCall => "function_call",
            Naming::ToolCall => "tool.call",
        }
    }

    /// The `type` of a result message in this naming.
    pub fn result_type(self) -> &'static str {
        match self {
            Naming::FunctionCall => "function_call.result",
            Naming::ToolCall => "tool.result",
        }
    }

    fn id_key(self) -> &'static str {
        match self {
            Naming::FunctionCall => "call_id",
            Naming::ToolCall => "callId",
        }
    }

    /// The naming whose result message has this `type`.
    pub fn of_result_type(kind: &str) -> Option<Naming> {
        match kind {
            "function_call.result" => Some(Naming::FunctionCall),
            "tool.result" => Some(Naming::ToolCall),
            _ => None,
        }
    }
}

/// A client call for the browser.
pub fn encode_call(naming: Naming, call_id: &str, name: &str, arguments: &str) -> String {
    encode_call_traced(naming, call_id, name, arguments, None)
}

/// [`encode_call`] with the W3C `traceparent` of the call's trace, when there is one (runtime
/// feature `otel`): a page that starts its own span for the handler as a child of it shows the
/// browser's part of the call inside the call's trace.
pub fn encode_call_traced(
    naming: Naming,
    call_id: &str,
    name: &str,
    arguments: &str,
    traceparent: Option<&str>,
) -> String {
    let mut msg = serde_json::Map::with_capacity(5);
    msg.insert("type".into(), Value::String(naming.call_type().into()));
    msg.insert(naming.id_key().into(), Value::String(call_id.into()));
    msg.insert("name".into(), Value::String(name.into()));
    msg.insert("arguments".into(), Value::String(arguments.into()));
    if let Some(traceparent) = traceparent {
        msg.insert("traceparent".into(), Value::String(traceparent.into()));
    }
    Value::Object(msg).to_string()
}

/// A browser's answer (what a browser-side dispatcher sends; used by tests and fakes).
pub fn encode_result(naming: Naming, call_id: &str, output: &str) -> String {
    let mut msg = serde_json::Map::with_capacity(3);
    msg.insert("type".into(), Value::String(naming.result_type().into()));
    msg.insert(naming.id_key().into(), Value::String(call_id.into()));
    msg.insert("output".into(), Value::String(output.into()));
    Value::Object(msg).to_string()
}

/// A decoded result message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BrowserResult {
    /// The id of the call the result answers.
    pub call_id: String,
    /// The output as JSON text.
    pub output: String,
}

/// Why a result message could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Malformed {
    /// The message has no string call id under the naming's key.
    MissingCallId,
    /// The message has no `output`, or it is `null`.
    MissingOutput,
}

impl Malformed {
    /// The problem in words, for a log or an error message.
    pub fn as_str(self) -> &'static str {
        match self {
            Malformed::MissingCallId => "the result has no call id",
            Malformed::MissingOutput => "the result has no output",
        }
    }
}

/// Reads a result message of `naming`. The id must be a string under that naming's key; an
/// `output` that is JSON but not a string is accepted as its JSON text, because browser code
/// often forgets to encode it and the meaning is unambiguous.
pub fn decode_result(naming: Naming, message: &Value) -> Result<BrowserResult, Malformed> {
    let call_id = str_field(message, naming.id_key()).ok_or(Malformed::MissingCallId)?;
    let output = match message.get("output") {
        None | Some(Value::Null) => return Err(Malformed::MissingOutput),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    };
    Ok(BrowserResult {
        call_id: call_id.to_owned(),
        output,
    })
}

/// Reads a raw `conversation.item.create` carrying a `function_call_output` (a browser that
/// talks to the model directly): it is handled as a result, never forwarded.
pub fn decode_item_result(event: &Value) -> Option<Result<BrowserResult, Malformed>> {
    let item = event.get("item")?;
    if item.get("type").and_then(Value::as_str) != Some("function_call_output") {
        return None;
    }
    Some(decode_result(Naming::FunctionCall, item))
}

/// What a `toolc.trace` event says about one resolved call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trace<'a> {
    /// Only for calls that were routed to the browser.
    pub call_id: Option<&'a str>,
    /// The tool's name.
    pub name: &'a str,
    /// Where the tool runs.
    pub location: crate::Location,
    /// From the moment the call was reported to its result.
    pub duration: Duration,
    /// `ok`, `acknowledged` (fire-and-forget) or `error`.
    pub status: &'a str,
    /// The error kind of a failed call.
    pub error: Option<&'a str>,
}

/// The `toolc.trace` event (see the module documentation).
pub fn encode_trace(trace: &Trace<'_>) -> String {
    let mut msg = serde_json::Map::with_capacity(7);
    msg.insert("type".into(), Value::String("toolc.trace".into()));
    if let Some(call_id) = trace.call_id {
        msg.insert("call_id".into(), Value::String(call_id.into()));
    }
    msg.insert("name".into(), Value::String(trace.name.into()));
    msg.insert(
        "location".into(),
        Value::String(trace.location.as_str().into()),
    );
    // Whole microseconds, so the number prints short (2.345, not 2.3451234).
    let ms = trace.duration.as_micros() as f64 / 1000.0;
    msg.insert("duration_ms".into(), json!(ms));
    msg.insert("status".into(), Value::String(trace.status.into()));
    if let Some(error) = trace.error {
        msg.insert("error".into(), Value::String(error.into()));
    }
    Value::Object(msg).to_string()
}

/// Longest `reason` of a denial that is passed on to the model; the rest is cut.
pub const MAX_DENIAL_REASON: usize = 500;

/// `toolc.approval.request`.
pub fn encode_approval_request(
    approval_id: &str,
    name: &str,
    location: crate::Location,
    arguments: &Value,
) -> String {
    json!({
        "type": "toolc.approval.request",
        "approval_id": approval_id,
        "name": name,
        "location": location.as_str(),
        "arguments": arguments,
    })
    .to_string()
}

/// `toolc.cancel` for a client call.
pub fn encode_call_cancel(call_id: &str, reason: &str) -> String {
    json!({ "type": "toolc.cancel", "call_id": call_id, "reason": reason }).to_string()
}

/// `toolc.cancel` for an approval request.
pub fn encode_approval_cancel(approval_id: &str, reason: &str) -> String {
    json!({ "type": "toolc.cancel", "approval_id": approval_id, "reason": reason }).to_string()
}

/// `toolc.arguments.delta`.
pub fn encode_partial_arguments(call_id: &str, name: &str, partial: &Value) -> String {
    json!({
        "type": "toolc.arguments.delta",
        "call_id": call_id,
        "name": name,
        "partial": partial,
    })
    .to_string()
}

/// A page's answer to an approval request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApprovalAnswer {
    /// The id of the request answered, as the runtime sent it.
    pub approval_id: String,
    /// Whether the user approved the call.
    pub approved: bool,
    /// The user's reason, trimmed and cut to [`MAX_DENIAL_REASON`] bytes; `None` when they gave
    /// none or it was empty.
    pub reason: Option<String>,
}

/// Why an approval answer could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadAnswer {
    /// No non-empty string `approval_id`.
    MissingApprovalId,
    /// No boolean `approved`.
    MissingApproved,
    /// `reason` is there but not a string.
    BadReason,
}

impl BadAnswer {
    /// The problem in words, for a log or an error message.
    pub fn as_str(self) -> &'static str {
        match self {
            BadAnswer::MissingApprovalId => "the answer has no string `approval_id`",
            BadAnswer::MissingApproved => "the answer has no boolean `approved`",
            BadAnswer::BadReason => "`reason` must be a string",
        }
    }
}

/// Reads `toolc.approval.response`; a reason is trimmed and cut to [`MAX_DENIAL_REASON`] bytes
/// (at a character boundary), and an empty one is none.
pub fn decode_approval_answer(value: &Value) -> Result<ApprovalAnswer, BadAnswer> {
    let approval_id = str_field(value, "approval_id")
        .filter(|id| !id.is_empty())
        .ok_or(BadAnswer::MissingApprovalId)?;
    let approved = value
        .get("approved")
        .and_then(Value::as_bool)
        .ok_or(BadAnswer::MissingApproved)?;
    let reason = match value.get("reason") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => {
            let text = text.trim();
            let mut end = text.len().min(MAX_DENIAL_REASON);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            (!text.is_empty()).then(|| text[..end].to_owned())
        }
        Some(_) => return Err(BadAnswer::BadReason),
    };
    Ok(ApprovalAnswer {
        approval_id: approval_id.to_owned(),
        approved,
        reason,
    })
}

/// A result message the runtime sends nowhere but tests use to check the encoding round trip.
pub fn result_value(naming: Naming, call_id: &str, output: &str) -> Value {
    let mut v = json!({ "type": naming.result_type(), "output": output });
    v[naming.id_key()] = Value::String(call_id.into());
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_namings_encode_as_documented() {
        let a: Value =
            serde_json::from_str(&encode_call(Naming::FunctionCall, "c1", "hl", r#"{"s":1}"#))
                .unwrap();
        assert_eq!(
            a,
            json!({"type":"function_call","call_id":"c1","name":"hl","arguments":"{\"s\":1}"})
        );
        let b: Value =
            serde_json::from_str(&encode_call(Naming::ToolCall, "c1", "hl", "{}")).unwrap();
        assert_eq!(
            b,
            json!({"type":"tool.call","callId":"c1","name":"hl","arguments":"{}"})
        );
    }

    #[test]
    fn results_decode_in_both_namings() {
        for naming in [Naming::FunctionCall, Naming::ToolCall] {
            let text = encode_result(naming, "c7", r#"{"ok":true}"#);
            let v: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(v, result_value(naming, "c7", r#"{"ok":true}"#));
            let kind = v["type"].as_str().unwrap();
            assert_eq!(Naming::of_result_type(kind), Some(naming));
            assert_eq!(
                decode_result(naming, &v),
                Ok(BrowserResult {
                    call_id: "c7".into(),
                    output: r#"{"ok":true}"#.into()
                })
            );
        }
    }

    #[test]
    fn the_id_key_must_match_the_naming() {
        let v = json!({"type":"tool.result","call_id":"c1","output":"1"});
        assert_eq!(
            decode_result(Naming::ToolCall, &v),
            Err(Malformed::MissingCallId)
        );
        let v = json!({"type":"function_call.result","call_id":7,"output":"1"});
        assert_eq!(
            decode_result(Naming::FunctionCall, &v),
            Err(Malformed::MissingCallId)
        );
        let v = json!({"type":"function_call.result","call_id":"c"});
        assert_eq!(
            decode_result(Naming::FunctionCall, &v),
            Err(Malformed::MissingOutput)
        );
        let v = json!({"type":"function_call.result","call_id":"c","output":{"a":1}});
        assert_eq!(
            decode_result(Naming::FunctionCall, &v).unwrap().output,
            r#"{"a":1}"#
        );
    }

    #[test]
    fn raw_function_call_outputs_are_results() {
        let v = json!({"type":"conversation.item.create","item":{"type":"function_call_output","call_id":"c1","output":"x"}});
        assert_eq!(decode_item_result(&v).unwrap().unwrap().call_id, "c1");
        let msg =
            json!({"type":"conversation.item.create","item":{"type":"message","role":"user"}});
        assert!(decode_item_result(&msg).is_none());
    }

    #[test]
    fn traces_name_the_call_id_only_when_given() {
        let server = encode_trace(&Trace {
            call_id: None,
            name: "lookup",
            location: crate::Location::Server,
            duration: Duration::from_micros(2_345),
            status: "error",
            error: Some("timeout"),
        });
        assert_eq!(
            serde_json::from_str::<Value>(&server).unwrap(),
            json!({"type":"toolc.trace","name":"lookup","location":"server","duration_ms":2.345,"status":"error","error":"timeout"})
        );
        let client = encode_trace(&Trace {
            call_id: Some("c1"),
            name: "hl",
            location: crate::Location::Client,
            duration: Duration::from_millis(40),
            status: "ok",
            error: None,
        });
        assert_eq!(
            serde_json::from_str::<Value>(&client).unwrap(),
            json!({"type":"toolc.trace","call_id":"c1","name":"hl","location":"client","duration_ms":40.0,"status":"ok"})
        );
    }

    #[test]
    fn naming_parses_query_values() {
        assert_eq!(Naming::parse("tool"), Some(Naming::ToolCall));
        assert_eq!(Naming::parse("function_call"), Some(Naming::FunctionCall));
        assert_eq!(Naming::parse("x"), None);
    }
}
