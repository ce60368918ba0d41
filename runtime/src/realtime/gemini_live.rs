//! The Gemini Live API (the `BidiGenerateContent` websocket) messages the runtime reads and
//! writes: the codec beside [`super::openai`].
//!
//! Live messages carry no `type`: each is an object whose one member names what it is
//! (`setupComplete`, `serverContent`, `toolCall`, `toolCallCancellation`, `goAway`, ...). Most of
//! the traffic is audio in `serverContent`, so [`read`] screens a message's text for the few
//! member names that can carry a call before it parses anything; a message without them is
//! forwarded as its original text. The shapes follow Google's Live API reference
//! (`BidiGenerateContentSetup`, `BidiGenerateContentToolCall`, `BidiGenerateContentToolResponse`,
//! `BidiGenerateContentToolCallCancellation`, `FunctionResponse`); `specs/gemini-live/` in the
//! repository holds them as JSON Schemas generated from Google's Gen AI SDK, and the runtime's
//! tests validate every message of a session against those and the SDK itself.

use serde_json::{json, Map, Value};

use crate::ToolDefinition;

/// Google's Live API websocket endpoint (v1beta); the API key goes in the `x-goog-api-key`
/// header, never in the URL the relay logs.
pub const DEFAULT_URL: &str = "wss://generativelanguage.googleapis.com/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent";

/// The model named in `setup` unless the application names another.
pub const DEFAULT_MODEL: &str = "models/gemini-live-2.5-flash-preview";

/// When the model takes up a `NON_BLOCKING` (`mode: async`) call's final result: the manifest's
/// `scheduling`, written as Live's `FunctionResponseScheduling` ([`Scheduling::live_value`]).
pub use toolc_core::definition::Scheduling;

/// The `functionDeclarations` entry of one tool. The parameters go as full JSON Schema in
/// `parametersJsonSchema` (which current Live models accept, and which keeps `$ref`, type lists
/// and `anyOf` that the restricted `parameters` form cannot say), the result schema as
/// `responseJsonSchema`; a tool that takes no arguments declares none. `mode: async` tools are `NON_BLOCKING`, so the model talks on while they run;
/// every other tool is `BLOCKING`.
pub fn declaration(def: &ToolDefinition) -> Value {
    let mut d = Map::new();
    d.insert("name".into(), Value::String(def.name.clone()));
    d.insert(
        "description".into(),
        Value::String(def.model_description().into_owned()),
    );
    // The same lowering as the compiler's `--gemini-schema json-schema` files.
    if let Some(schema) = toolc_core::schema_util::gemini_parameters_json_schema(&def.parameters) {
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

/// Declarations for every tool, in definition order.
pub fn declarations<'a>(defs: impl IntoIterator<Item = &'a ToolDefinition>) -> Vec<Value> {
    defs.into_iter().map(declaration).collect()
}

/// The first message of a session: `setup` with everything the application set (`model`,
/// `generationConfig`, `systemInstruction`, ...) and the declarations as the one
/// `functionDeclarations` tool. Other tools the application listed (`codeExecution`, ...) stay;
/// function declarations are the server's.
pub fn setup(mut setup: Map<String, Value>, declarations: &[Value]) -> String {
    setup
        .entry("model")
        .or_insert_with(|| Value::String(DEFAULT_MODEL.into()));
    let mut tools: Vec<Value> = match setup.remove("tools") {
        Some(Value::Array(tools)) => tools
            .into_iter()
            .filter(|t| t.get("functionDeclarations").is_none())
            .collect(),
        _ => Vec::new(),
    };
    if !declarations.is_empty() {
        tools.push(json!({ "functionDeclarations": declarations }));
    }
    if !tools.is_empty() {
        setup.insert("tools".into(), Value::Array(tools));
    }
    json!({ "setup": setup }).to_string()
}

/// A function call the model made, as read from `toolCall.functionCalls` or a `functionCall`
/// part of `serverContent.modelTurn`.
#[derive(Clone, Debug, PartialEq)]
pub struct FunctionCall {
    /// The call's id; `None` when the message gave no string id.
    pub id: Option<String>,
    /// The function's name; `None` when the message gave no string name.
    pub name: Option<String>,
    /// The `args` object as JSON text (`{}` when the model sent none).
    pub arguments: String,
}

/// What a server message means to the session.
#[derive(Debug)]
pub enum Read {
    /// Nothing about calls in it (audio, text, transcripts, `setupComplete`, `goAway`, ...):
    /// forward as it is.
    Plain,
    /// The message, parsed, with the calls and cancellations it carries.
    Calls(CallMessage),
    /// It may carry a call but is not JSON the session can read: never forward it.
    Unreadable,
}

/// A parsed server message that carries calls or cancellations.
#[derive(Debug)]
pub struct CallMessage {
    /// The whole message, to be passed on only after [`scrub`] has removed what the browser must
    /// not see.
    pub message: Map<String, Value>,
    /// Calls from `toolCall.functionCalls` and from `functionCall` parts of
    /// `serverContent.modelTurn`, in message order.
    pub calls: Vec<FunctionCall>,
    /// Ids from `toolCallCancellation.ids`.
    pub cancelled: Vec<String>,
    /// The message closes the batch of calls it belongs to: it is the `toolCall` (which lists
    /// the batch), or it ends the model's turn. `functionCall` parts of a model turn alone
    /// leave the batch open for the `toolCall` that repeats them.
    pub ends_batch: bool,
}

/// Reads a server message. The screen is conservative: a message that names `toolCall`,
/// `functionCall` or has any escape (a member name could be spelled with `\u` escapes) is
/// parsed in full.
pub fn read(text: &str) -> Read {
    let bytes = text.as_bytes();
    // `toolCall`, `functionCall` and `toolCallCancellation` all hold `Call`; base64 audio
    // seldom does, and then the message is merely parsed.
    let may_carry_calls =
        memchr::memchr(b'\\', bytes).is_some() || call_finder().find(bytes).is_some();
    if !may_carry_calls {
        return Read::Plain;
    }
    let Ok(Value::Object(message)) = serde_json::from_str::<Value>(text) else {
        return Read::Unreadable;
    };
    let mut calls = Vec::new();
    if let Some(list) = message
        .get("toolCall")
        .and_then(|t| t.get("functionCalls"))
        .and_then(Value::as_array)
    {
        calls.extend(list.iter().map(function_call));
    }
    for part in model_turn_parts(&message) {
        if let Some(call) = part.get("functionCall") {
            calls.push(function_call(call));
        }
    }
    let cancelled: Vec<String> = message
        .get("toolCallCancellation")
        .and_then(|c| c.get("ids"))
        .and_then(Value::as_array)
        .map(|ids| {
            ids.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let names_calls = message.contains_key("toolCall")
        || message.contains_key("toolCallCancellation")
        || !calls.is_empty();
    if !names_calls {
        return Read::Plain;
    }
    let ends_batch = message.contains_key("toolCall") || ends_turn_in(&message);
    Read::Calls(CallMessage {
        message,
        calls,
        cancelled,
        ends_batch,
    })
}

/// Whether a message without calls ends the model's turn (`serverContent.turnComplete` or
/// `interrupted`), which closes a batch of calls that only model-turn parts reported. Audio
/// chunks are screened out without parsing.
pub fn ends_turn(text: &str) -> bool {
    let bytes = text.as_bytes();
    let may_end = memchr::memchr(b'\\', bytes).is_some()
        || memchr::memmem::find(bytes, b"turnComplete").is_some()
        || memchr::memmem::find(bytes, b"interrupted").is_some();
    may_end
        && matches!(
            serde_json::from_str::<Value>(text),
            Ok(Value::Object(message)) if ends_turn_in(&message)
        )
}

fn ends_turn_in(message: &Map<String, Value>) -> bool {
    let Some(content) = message.get("serverContent") else {
        return false;
    };
    content.get("turnComplete") == Some(&Value::Bool(true))
        || content.get("interrupted") == Some(&Value::Bool(true))
}

fn call_finder() -> &'static memchr::memmem::Finder<'static> {
    static FINDER: std::sync::OnceLock<memchr::memmem::Finder<'static>> =
        std::sync::OnceLock::new();
    FINDER.get_or_init(|| memchr::memmem::Finder::new(b"Call"))
}

fn model_turn_parts(message: &Map<String, Value>) -> impl Iterator<Item = &Value> {
    message
        .get("serverContent")
        .and_then(|c| c.get("modelTurn"))
        .and_then(|t| t.get("parts"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn function_call(call: &Value) -> FunctionCall {
    let text = |key: &str| call.get(key).and_then(Value::as_str).map(str::to_owned);
    FunctionCall {
        id: text("id"),
        name: text("name"),
        arguments: match call.get("args") {
            None | Some(Value::Null) => "{}".to_owned(),
            Some(args) => args.to_string(),
        },
    }
}

/// The message for the browser: only the calls and cancellations `visible` lets through.
/// `None` when nothing is left of it.
pub fn scrub(mut message: Map<String, Value>, visible: impl Fn(&str) -> bool) -> Option<String> {
    let call_visible = |c: &Value| c.get("id").and_then(Value::as_str).is_some_and(&visible);
    retain_in(&mut message, "toolCall", "functionCalls", call_visible);
    retain_in(&mut message, "toolCallCancellation", "ids", |id| {
        id.as_str().is_some_and(&visible)
    });
    if let Some(Value::Array(parts)) = message
        .get_mut("serverContent")
        .and_then(|c| c.get_mut("modelTurn"))
        .and_then(|t| t.get_mut("parts"))
    {
        parts.retain(|p| p.get("functionCall").is_none_or(call_visible));
    }
    (!message.is_empty()).then(|| Value::Object(message).to_string())
}

/// Keeps the entries of `message[member][list]` that `keep` accepts; removes `member` when
/// none is left or it is not that shape (what the session could not read, the page does not
/// get).
fn retain_in(
    message: &mut Map<String, Value>,
    member: &str,
    list: &str,
    keep: impl FnMut(&Value) -> bool,
) {
    let Some(value) = message.get_mut(member) else {
        return;
    };
    let kept = match value.get_mut(list) {
        Some(Value::Array(entries)) => {
            entries.retain(keep);
            !entries.is_empty()
        }
        _ => false,
    };
    if !kept {
        message.remove(member);
    }
}

/// One `functionResponses` entry. A result is `{"output": ...}` and a failure the runtime's
/// `{"error": ...}` object, as the API asks; `scheduling` and `willContinue` only apply to
/// `NON_BLOCKING` calls.
pub fn function_response(
    call_id: &str,
    name: &str,
    output: &str,
    failed: bool,
    scheduling: Option<Scheduling>,
    will_continue: bool,
) -> Value {
    let value = serde_json::from_str::<Value>(output).unwrap_or_else(|_| json!(output));
    let response = match value {
        Value::Object(error) if failed && error.contains_key("error") => Value::Object(error),
        value if failed => json!({ "error": value }),
        value => json!({ "output": value }),
    };
    let mut entry = json!({ "id": call_id, "name": name, "response": response });
    if let Some(scheduling) = scheduling {
        entry["scheduling"] = json!(scheduling.live_value());
    }
    if will_continue {
        entry["willContinue"] = json!(true);
    }
    entry
}

/// `toolResponse` with the given entries: one message per batch of the model's calls, which is
/// what lets the model go on (Live has no `response.create`).
pub fn tool_response(responses: Vec<Value>) -> String {
    json!({ "toolResponse": { "functionResponses": responses } }).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn audio_is_not_parsed_and_calls_are() {
        let audio = r#"{"serverContent":{"modelTurn":{"parts":[{"inlineData":{"mimeType":"audio/pcm;rate=24000","data":"AAAA"}}]}}}"#;
        assert!(matches!(read(audio), Read::Plain));
        let call =
            r#"{"toolCall":{"functionCalls":[{"id":"c1","name":"search","args":{"q":"x"}}]}}"#;
        let Read::Calls(m) = read(call) else {
            panic!("a call")
        };
        assert_eq!(m.calls.len(), 1);
        assert_eq!(m.calls[0].arguments, r#"{"q":"x"}"#);
    }

    #[test]
    fn an_escaped_member_name_is_still_read_and_broken_json_fails_closed() {
        let escaped = r#"{"\u0074oolCall":{"functionCalls":[{"id":"c1","name":"search"}]}}"#;
        let Read::Calls(m) = read(escaped) else {
            panic!("a call")
        };
        assert_eq!(m.calls[0].id.as_deref(), Some("c1"));
        assert_eq!(m.calls[0].arguments, "{}");
        assert!(matches!(
            read(r#"{"toolCall":{"functionCalls":[{"id":"c1""#),
            Read::Unreadable
        ));
        assert!(matches!(
            read(r#"{"toolCall":{"functionCalls":[{"id":"\ud800"}]}}"#),
            Read::Unreadable
        ));
    }

    #[test]
    fn scrubbing_keeps_only_visible_calls_and_drops_what_is_left_empty() {
        let text = r#"{"toolCall":{"functionCalls":[{"id":"s","name":"lookup"},{"id":"c","name":"highlight"}]}}"#;
        let Read::Calls(m) = read(text) else { panic!() };
        let out = scrub(m.message, |id| id == "c").unwrap();
        assert!(
            out.contains(r#""id":"c""#) && !out.contains(r#""id":"s""#),
            "{out}"
        );
        let Read::Calls(m) = read(r#"{"toolCallCancellation":{"ids":["s"]}}"#) else {
            panic!()
        };
        assert_eq!(scrub(m.message, |id| id == "c"), None);
    }

    #[test]
    fn results_and_failures_use_the_output_and_error_members() {
        let ok = function_response("c1", "search", r#"{"hits":3}"#, false, None, false);
        assert_eq!(ok["response"], json!({"output": {"hits": 3}}));
        let failed = function_response(
            "c1",
            "search",
            r#"{"error":{"kind":"timeout"}}"#,
            true,
            Some(Scheduling::WhenIdle),
            false,
        );
        assert_eq!(failed["response"], json!({"error": {"kind": "timeout"}}));
        assert_eq!(failed["scheduling"], "WHEN_IDLE");
    }

    #[test]
    fn setup_replaces_function_declarations_and_keeps_other_tools() {
        let mut s = Map::new();
        s.insert(
            "tools".into(),
            json!([{"functionDeclarations": [{"name": "browser_tool"}]}, {"codeExecution": {}}]),
        );
        let text = setup(s, &[json!({"name": "search"})]);
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["setup"]["model"], DEFAULT_MODEL);
        assert_eq!(
            v["setup"]["tools"],
            json!([{"codeExecution": {}}, {"functionDeclarations": [{"name": "search"}]}])
        );
    }
}
