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

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use crate::ToolDefinition;

mod read;
pub(crate) mod spelling;

pub use read::{
    parse_duration, read, scrub, CallMessage, FunctionCall, Plain, Read, ResumptionUpdate,
    Unreadable,
};

/// Google's Live API websocket endpoint (v1beta); the API key goes in the `x-goog-api-key`
/// header, never in the URL the relay logs.
pub const DEFAULT_URL: &str = "wss://generativelanguage.googleapis.com/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent";

/// The model named in `setup` unless the application names another (`session["model"]` of
/// [`crate::SessionConfig`], or the relay example's `--model`): Gemini 3.8 Live,
/// Google's stable Live model and its default for voice agents. `gemini-live-2.5-flash-preview`
/// was shut down on 2025-12-09.
pub const DEFAULT_MODEL: &str = "models/gemini-3.8-live";

/// Vertex AI's Live endpoint in `us-central1`; [`vertex_url`] gives another location's.
pub const VERTEX_DEFAULT_URL: &str = "wss://us-central1-aiplatform.googleapis.com/ws/google.cloud.aiplatform.v1.LlmBidiService/BidiGenerateContent";

/// The Live model on Vertex AI unless the application names another: Gemini Live 2.5 Flash
/// native audio, generally available there. Vertex wants the model as a resource name:
/// [`vertex_model`].
pub const VERTEX_DEFAULT_MODEL: &str = "gemini-live-2.5-flash-native-audio";

/// Vertex AI's Live endpoint for a location (`us-central1`, `europe-west4`, ...; `global` has
/// no location prefix).
pub fn vertex_url(location: &str) -> String {
    let host = match location {
        "global" => "aiplatform.googleapis.com".to_owned(),
        location => format!("{location}-aiplatform.googleapis.com"),
    };
    format!("wss://{host}/ws/google.cloud.aiplatform.v1.LlmBidiService/BidiGenerateContent")
}

/// The `setup.model` of a Vertex AI Live session:
/// `projects/{project}/locations/{location}/publishers/google/models/{model}`.
pub fn vertex_model(project: &str, location: &str, model: &str) -> String {
    format!("projects/{project}/locations/{location}/publishers/google/models/{model}")
}

/// When the model takes up a `NON_BLOCKING` (`mode: async`) call's final result: the manifest's
/// `scheduling`, written as Live's `FunctionResponseScheduling` ([`Scheduling::live_value`]).
pub use toolc_core::definition::Scheduling;

/// The `functionDeclarations` entry of one tool ([`toolc_core::declare::gemini_live`]): full JSON
/// Schema in `parametersJsonSchema`, `responseJsonSchema`, and `NON_BLOCKING` for `mode: async`
/// tools.
pub fn declaration(def: &ToolDefinition) -> Value {
    toolc_core::declare::gemini_live(def)
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

/// How a relay keeps a Live conversation going past its connections (a connection lasts about
/// ten minutes; without compression an audio session's context fills in about fifteen).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveOptions {
    /// Ask for session resumption in `setup`, keep the latest handle, and move the session to
    /// a new connection on `goAway` or when the connection closes. On by default.
    pub resumption: bool,
    /// Context window compression in `setup`, unless the application's `setup` sets
    /// `contextWindowCompression` itself.
    pub compression: Compression,
    /// Tell the page when the session moves to a new connection (`toolc.upstream` events with
    /// `state` `reconnecting`, then `resumed`). Off by default: the page notices nothing. A
    /// move that fails is always an `error` event (`upstream_resume_failed`).
    pub notify_page: bool,
}

impl Default for LiveOptions {
    fn default() -> LiveOptions {
        LiveOptions {
            resumption: true,
            compression: Compression::AudioSessions(SlidingWindow::default()),
            notify_page: false,
        }
    }
}

/// When a Live session asks the server to compress its context window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// Never.
    Off,
    /// When the session answers in audio: its `generationConfig.responseModalities` is absent
    /// (Live answers in audio then) or names `AUDIO`. The default.
    AudioSessions(SlidingWindow),
    /// Always.
    Always(SlidingWindow),
}

/// A sliding-window compression: when the context reaches `trigger_tokens`, the server drops
/// the oldest turns down to `target_tokens`. `None` leaves each to the server's default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SlidingWindow {
    /// The context length that starts a compression.
    pub trigger_tokens: Option<u64>,
    /// The context length a compression leaves.
    pub target_tokens: Option<u64>,
}

impl LiveOptions {
    /// Adds the resumption request (with `handle` when resuming) and the compression to an
    /// application's `setup`.
    pub fn apply(&self, setup: &mut Map<String, Value>, handle: Option<&str>) {
        if self.resumption {
            let mut resumption = Map::new();
            if let Some(handle) = handle {
                resumption.insert("handle".into(), Value::String(handle.into()));
            }
            setup.insert("sessionResumption".into(), Value::Object(resumption));
        }
        let window = match self.compression {
            Compression::Off => None,
            Compression::Always(window) => Some(window),
            Compression::AudioSessions(window) => answers_in_audio(setup).then_some(window),
        };
        let theirs = setup.contains_key("contextWindowCompression")
            || setup.contains_key("context_window_compression");
        if let (Some(window), false) = (window, theirs) {
            let mut sliding = Map::new();
            if let Some(target) = window.target_tokens {
                sliding.insert("targetTokens".into(), json!(target));
            }
            let mut compression = Map::new();
            if let Some(trigger) = window.trigger_tokens {
                compression.insert("triggerTokens".into(), json!(trigger));
            }
            compression.insert("slidingWindow".into(), Value::Object(sliding));
            setup.insert(
                "contextWindowCompression".into(),
                Value::Object(compression),
            );
        }
    }
}

/// Whether a `setup` asks for audio answers: no `responseModalities` (Live's default is audio)
/// or one that names `AUDIO`.
fn answers_in_audio(setup: &Map<String, Value>) -> bool {
    let config = spelling::value(setup, "generationConfig")
        .ok()
        .flatten()
        .and_then(Value::as_object);
    let modalities = config.and_then(|c| spelling::value(c, "responseModalities").ok().flatten());
    match modalities {
        Some(Value::Array(list)) => list.iter().any(|m| m == "AUDIO"),
        _ => true,
    }
}

/// One `functionResponses` entry. A result is `{"output": ...}` and a failure the runtime's
/// `{"error": ...}` object, as the API asks; `scheduling` and `willContinue` only apply to
/// `NON_BLOCKING` calls. Written straight to its text (a call's result is copied, not read
/// into a tree and written again): it is on the path of every call.
#[derive(Clone, Debug, Serialize)]
pub struct FunctionResponse {
    id: String,
    name: String,
    response: LiveResult,
    #[serde(skip_serializing_if = "Option::is_none")]
    scheduling: Option<&'static str>,
    #[serde(rename = "willContinue", skip_serializing_if = "std::ops::Not::not")]
    will_continue: bool,
}

#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
enum LiveResult {
    /// A result, its JSON as the executor or the page wrote it (checked to be JSON).
    Output { output: Box<RawValue> },
    /// A failure: the runtime's `{"error": ...}` object, or anything else wrapped in one.
    Failure(Value),
}

impl FunctionResponse {
    /// The call this entry answers.
    pub fn call_id(&self) -> &str {
        &self.id
    }
}

/// The `functionResponses` entry of `call_id`'s result or failure (see [`FunctionResponse`]).
pub fn function_response(
    call_id: &str,
    name: &str,
    output: &str,
    failed: bool,
    scheduling: Option<Scheduling>,
    will_continue: bool,
) -> FunctionResponse {
    let response = if failed {
        match serde_json::from_str::<Value>(output).unwrap_or_else(|_| json!(output)) {
            Value::Object(error) if error.contains_key("error") => {
                LiveResult::Failure(Value::Object(error))
            }
            value => LiveResult::Failure(json!({ "error": value })),
        }
    } else {
        // Text that is not JSON goes as a JSON string.
        let output = serde_json::from_str::<Box<RawValue>>(output).unwrap_or_else(|_| {
            RawValue::from_string(Value::String(output.to_owned()).to_string())
                .expect("a JSON string is JSON")
        });
        LiveResult::Output { output }
    };
    FunctionResponse {
        id: call_id.to_owned(),
        name: name.to_owned(),
        response,
        scheduling: scheduling.map(Scheduling::live_value),
        will_continue,
    }
}

/// `toolResponse` with the given entries: one message per batch of the model's calls, which is
/// what lets the model go on (Live has no `response.create`).
pub fn tool_response(responses: &[FunctionResponse]) -> String {
    #[derive(Serialize)]
    struct ToolResponse<'a> {
        #[serde(rename = "toolResponse")]
        tool_response: Entries<'a>,
    }
    #[derive(Serialize)]
    struct Entries<'a> {
        #[serde(rename = "functionResponses")]
        function_responses: &'a [FunctionResponse],
    }
    let message = ToolResponse {
        tool_response: Entries {
            function_responses: responses,
        },
    };
    serde_json::to_string(&message).expect("a tool response serializes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_and_failures_use_the_output_and_error_members() {
        let ok = serde_json::to_value(function_response(
            "c1",
            "search",
            r#"{"hits": 3}"#,
            false,
            None,
            false,
        ))
        .unwrap();
        assert_eq!(ok["response"], json!({"output": {"hits": 3}}));
        let text = serde_json::to_value(function_response("c1", "a", "plain", false, None, true));
        assert_eq!(
            text.unwrap(),
            json!({"id": "c1", "name": "a", "response": {"output": "plain"}, "willContinue": true})
        );
        let failed = serde_json::to_value(function_response(
            "c1",
            "search",
            r#"{"error":{"kind":"timeout"}}"#,
            true,
            Some(Scheduling::WhenIdle),
            false,
        ))
        .unwrap();
        assert_eq!(failed["response"], json!({"error": {"kind": "timeout"}}));
        assert_eq!(failed["scheduling"], "WHEN_IDLE");
    }

    #[test]
    fn vertex_endpoints_and_models_are_named_as_google_cloud_names_them() {
        assert_eq!(vertex_url("us-central1"), VERTEX_DEFAULT_URL);
        assert_eq!(
            vertex_url("global"),
            "wss://aiplatform.googleapis.com/ws/google.cloud.aiplatform.v1.LlmBidiService/BidiGenerateContent"
        );
        assert_eq!(
            vertex_model("acme", "europe-west4", VERTEX_DEFAULT_MODEL),
            "projects/acme/locations/europe-west4/publishers/google/models/gemini-live-2.5-flash-native-audio"
        );
    }

    #[test]
    fn setup_asks_for_resumption_and_compresses_audio_sessions_only() {
        let options = LiveOptions::default();
        let mut audio = Map::new();
        options.apply(&mut audio, Some("h-1"));
        assert_eq!(audio["sessionResumption"], json!({"handle": "h-1"}));
        assert_eq!(
            audio["contextWindowCompression"],
            json!({"slidingWindow": {}})
        );
        let mut text: Map<String, Value> =
            serde_json::from_value(json!({"generationConfig": {"responseModalities": ["TEXT"]}}))
                .unwrap();
        options.apply(&mut text, None);
        assert_eq!(text["sessionResumption"], json!({}));
        assert!(!text.contains_key("contextWindowCompression"));
        // The application's own compression wins; a trigger is passed on.
        let mut theirs: Map<String, Value> =
            serde_json::from_value(json!({"context_window_compression": {"triggerTokens": 9}}))
                .unwrap();
        options.apply(&mut theirs, None);
        assert!(!theirs.contains_key("contextWindowCompression"));
        let always = LiveOptions {
            resumption: false,
            compression: Compression::Always(SlidingWindow {
                trigger_tokens: Some(20_000),
                target_tokens: Some(8_000),
            }),
            notify_page: false,
        };
        let mut text: Map<String, Value> =
            serde_json::from_value(json!({"generationConfig": {"responseModalities": ["TEXT"]}}))
                .unwrap();
        always.apply(&mut text, Some("ignored"));
        assert!(!text.contains_key("sessionResumption"));
        assert_eq!(
            text["contextWindowCompression"],
            json!({"triggerTokens": 20000, "slidingWindow": {"targetTokens": 8000}})
        );
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
