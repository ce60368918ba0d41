//! OpenAI GPT-Live (`/v1/live/sessions`) as the runtime writes and reads it, with Responses
//! delegation: the live model hands tasks to a Responses backend the session configures, and
//! the backend's function calls reach the session nested in `response.event`s.
//!
//! The shapes follow the official SDK's `openai.types.live` (the tests validate every message
//! the runtime writes against it, unknown fields refused): `session.start` with the tools in
//! `session.delegation.responses.tools` (Responses `FunctionTool`s, strict where the schema
//! allows), a result as `response.item.create` with a `function_call_output` item, and one
//! `response.create` to continue the delegated response.

use serde_json::{json, Map, Value};

use crate::ToolDefinition;

/// OpenAI's GPT-Live websocket endpoint. The model is `session.model` in `session.start`, not a
/// query parameter.
pub const DEFAULT_URL: &str = "wss://api.openai.com/v1/live/sessions";

/// The live model a session starts with unless the application names another.
pub const DEFAULT_MODEL: &str = "gpt-live-1";

/// The Responses model that delegated tasks run on unless the application names another
/// (`session.delegation.responses.model`).
pub const DEFAULT_BACKEND_MODEL: &str = "gpt-5.5";

/// Every server event type of OpenAI's SDK (`openai.types.live.ServerEvent`, `openai` 3.63.0),
/// sorted. The session forwards only these: an event of any other type could carry what the
/// page must not see (a server call in a shape toolc does not read), so it is dropped and
/// counted, as an unreadable one is. `tests/gpt-live/validate.py --server-types` prints the
/// SDK's list, and a test holds this one to it.
pub const SERVER_EVENT_TYPES: &[&str] = &[
    "decision.event",
    "decision.item.created",
    "decision.item.deleted",
    "error",
    "info",
    "response.event",
    "session.closed",
    "session.commentary.appended",
    "session.delegation.created",
    "session.input_audio.append",
    "session.input_audio.muted",
    "session.input_audio.unmuted",
    "session.input_transcript.delta",
    "session.instructions.appended",
    "session.output_audio.delta",
    "session.output_audio.fixture.played",
    "session.output_audio.fixture.playing",
    "session.output_transcript.delta",
    "session.started",
    "session.thinking.appended",
    "session.updated",
    "session.usage.updated",
    "transport.answered",
    "transport.dtmf.received",
    "transport.dtmf.send",
    "transport.dtmf.sent",
    "transport.failed",
    "transport.ringing",
];

/// Every Responses streaming event type of OpenAI's SDK
/// (`openai.types.responses.ResponseStreamEvent`, `openai` 3.63.0), sorted: the nested events of
/// `response.event` the session forwards. Another type in a `response.event` is dropped and
/// counted (`validate.py --nested-types` prints the SDK's list; a test holds this one to it).
pub const RESPONSE_STREAM_EVENT_TYPES: &[&str] = &[
    "error",
    "response.audio.delta",
    "response.audio.done",
    "response.audio.transcript.delta",
    "response.audio.transcript.done",
    "response.code_interpreter_call.completed",
    "response.code_interpreter_call.in_progress",
    "response.code_interpreter_call.interpreting",
    "response.code_interpreter_call_code.delta",
    "response.code_interpreter_call_code.done",
    "response.compaction.compacting",
    "response.completed",
    "response.content_part.added",
    "response.content_part.done",
    "response.created",
    "response.custom_tool_call_input.delta",
    "response.custom_tool_call_input.done",
    "response.failed",
    "response.file_search_call.completed",
    "response.file_search_call.in_progress",
    "response.file_search_call.searching",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "response.image_generation_call.completed",
    "response.image_generation_call.generating",
    "response.image_generation_call.in_progress",
    "response.image_generation_call.partial_image",
    "response.in_progress",
    "response.incomplete",
    "response.mcp_call.completed",
    "response.mcp_call.failed",
    "response.mcp_call.in_progress",
    "response.mcp_call_arguments.delta",
    "response.mcp_call_arguments.done",
    "response.mcp_list_tools.completed",
    "response.mcp_list_tools.failed",
    "response.mcp_list_tools.in_progress",
    "response.output_item.added",
    "response.output_item.done",
    "response.output_text.annotation.added",
    "response.output_text.delta",
    "response.output_text.done",
    "response.queued",
    "response.reasoning_summary_part.added",
    "response.reasoning_summary_part.done",
    "response.reasoning_summary_text.delta",
    "response.reasoning_summary_text.done",
    "response.reasoning_text.delta",
    "response.reasoning_text.done",
    "response.refusal.delta",
    "response.refusal.done",
    "response.shell_call_command.added",
    "response.shell_call_command.delta",
    "response.shell_call_command.done",
    "response.shell_call_output_content.delta",
    "response.shell_call_output_content.done",
    "response.web_search_call.completed",
    "response.web_search_call.in_progress",
    "response.web_search_call.searching",
];

/// Whether `kind` is a Responses streaming event type of the SDK.
pub fn is_response_stream_event_type(kind: &str) -> bool {
    RESPONSE_STREAM_EVENT_TYPES.binary_search(&kind).is_ok()
}

/// Whether `kind` is a server event type of the SDK.
pub fn is_server_event_type(kind: &str) -> bool {
    SERVER_EVENT_TYPES.binary_search(&kind).is_ok()
}

/// The `session.delegation.responses.tools` entry of one tool (the SDK's `FunctionTool`, made
/// by [`toolc_core::declare::openai_function`]): the strict form of the parameters where the
/// schema has one, else the schema as written with `strict: false`.
pub fn declaration(def: &ToolDefinition) -> Value {
    toolc_core::declare::openai_function(def)
}

/// Declarations for every tool, in definition order.
pub fn declarations<'a>(defs: impl IntoIterator<Item = &'a ToolDefinition>) -> Vec<Value> {
    defs.into_iter().map(declaration).collect()
}

/// The session's settings before the application's own: the live model and Responses
/// delegation to the default backend model.
pub fn default_session() -> Map<String, Value> {
    let session = json!({
        "model": DEFAULT_MODEL,
        "delegation": {
            "type": "responses",
            "responses": { "model": DEFAULT_BACKEND_MODEL },
        },
    });
    match session {
        Value::Object(map) => map,
        _ => unreachable!("a JSON object literal"),
    }
}

/// `session.start` with everything the application set and the declarations as the function
/// tools of the Responses delegation. Other tools the application listed there (hosted ones)
/// stay; function tools are the server's. A session without Responses delegation gets it.
pub fn session_start(mut session: Map<String, Value>, declarations: &[Value]) -> String {
    let delegation = session
        .entry("delegation")
        .or_insert_with(|| json!({ "type": "responses", "responses": {} }));
    if !delegation.is_object() {
        *delegation = json!({ "type": "responses", "responses": {} });
    }
    let delegation = delegation.as_object_mut().expect("made an object above");
    delegation.insert("type".into(), json!("responses"));
    let responses = delegation.entry("responses").or_insert_with(|| json!({}));
    if !responses.is_object() {
        *responses = json!({});
    }
    let responses = responses.as_object_mut().expect("made an object above");
    responses
        .entry("model")
        .or_insert_with(|| json!(DEFAULT_BACKEND_MODEL));
    let mut tools: Vec<Value> = responses
        .get("tools")
        .and_then(Value::as_array)
        .map(|tools| {
            tools
                .iter()
                .filter(|t| t.get("type").and_then(Value::as_str) != Some("function"))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    tools.extend(declarations.iter().cloned());
    responses.insert("tools".into(), Value::Array(tools));
    json!({ "type": "session.start", "session": Value::Object(session) }).to_string()
}

/// What a page may send over its WebRTC data channel when the server serves the tools from a
/// sideband ([`webrtc_session`]): its audio controls, instructions, fixtures and closing.
/// Results, responses, tool declarations and commentary (which could answer a delegation that
/// is the server's: the data channel cannot tell) are the sideband's.
pub const PAGE_CLIENT_EVENTS: &[&str] = &[
    "session.input_audio.append",
    "session.input_audio.mute",
    "session.input_audio.unmute",
    "session.instructions.append",
    "session.output_audio.fixture.play",
    "session.close",
];

/// The nested Responses events that can carry a function call (the item, its arguments): kept
/// from the page's data channel in sideband mode, since a selector cannot tell a server call's
/// from a client call's. The page gets its client calls from toolc's socket instead.
pub const CALL_EVENTS: &[&str] = &[
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "response.output_item.added",
    "response.output_item.done",
];

/// Server events delivered only to sideband connections: not selectors of the page's channel.
const SIDEBAND_ONLY: &[&str] = &[
    "session.input_audio.append",
    "transport.answered",
    "transport.dtmf.received",
    "transport.dtmf.send",
    "transport.dtmf.sent",
    "transport.failed",
    "transport.ringing",
];

/// The `session` of `POST /v1/live/sessions` for a session the page opens over WebRTC and the
/// server serves from a sideband (`/v1/live/sessions/{id}/attach`): everything the
/// application set, the declarations as the backend's function tools (as [`session_start`]),
/// and `client.data_channel` restricting the page (the untrusted frontend) to
/// [`PAGE_CLIENT_EVENTS`] and to every server event but the nested ones in [`CALL_EVENTS`].
/// The location rule holds there as far as the API enforces these lists.
pub fn webrtc_session(session: Map<String, Value>, declarations: &[Value]) -> Value {
    let start: Value =
        serde_json::from_str(&session_start(session, declarations)).unwrap_or(Value::Null);
    let mut session = start.get("session").cloned().unwrap_or_else(|| json!({}));
    let mut allowed_server_events = Vec::new();
    for kind in SERVER_EVENT_TYPES {
        if SIDEBAND_ONLY.contains(kind) {
            continue;
        }
        if *kind == "response.event" {
            allowed_server_events.extend(
                RESPONSE_STREAM_EVENT_TYPES
                    .iter()
                    .filter(|nested| !CALL_EVENTS.contains(nested))
                    .map(|nested| json!({ "type": kind, "response_event": nested })),
            );
        } else {
            allowed_server_events.push(json!({ "type": kind }));
        }
    }
    if let Some(map) = session.as_object_mut() {
        map.insert(
            "client".into(),
            json!({
                "data_channel": {
                    "allowed_client_events": PAGE_CLIENT_EVENTS,
                    "allowed_server_events": allowed_server_events,
                },
            }),
        );
    }
    session
}

/// The URL a sideband attaches at: `{base}/{session_id}/attach`, `base` being the primary
/// endpoint ([`DEFAULT_URL`] or a compatible one). `None` for an id that is not one path
/// segment of URL-safe characters (it comes from the application's page).
pub fn attach_url(base: &str, session_id: &str) -> Option<String> {
    let safe = !session_id.is_empty()
        && session_id.len() <= 128
        && session_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    safe.then(|| format!("{}/{session_id}/attach", base.trim_end_matches('/')))
}

/// `session.update` that replaces the delegated backend's tools: `hosted` (the application's
/// tools that are not functions) and the declarations.
pub fn tools_update(hosted: &[Value], declarations: &[Value]) -> String {
    let tools: Vec<Value> = hosted.iter().chain(declarations).cloned().collect();
    json!({
        "type": "session.update",
        "session": { "delegation": { "type": "responses", "responses": { "tools": tools } } },
    })
    .to_string()
}

/// The tools of the application's session settings that are not functions (hosted tools such
/// as `web_search`), which stay beside the declarations.
pub fn hosted_tools(session: &Map<String, Value>) -> Vec<Value> {
    session
        .get("delegation")
        .and_then(|d| d.get("responses"))
        .and_then(|r| r.get("tools"))
        .and_then(Value::as_array)
        .map(|tools| {
            tools
                .iter()
                .filter(|t| t.get("type").and_then(Value::as_str) != Some("function"))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// The answer to a client delegation: `session.commentary.append` (spoken) or
/// `session.thinking.append` (silent), naming the delegation.
pub fn delegation_answer(delegation_id: &str, spoken: bool, content: &str) -> String {
    let kind = if spoken {
        "session.commentary.append"
    } else {
        "session.thinking.append"
    };
    json!({ "type": kind, "content": content, "delegation_id": delegation_id }).to_string()
}

/// A call's result for the Responses backend.
pub fn function_call_output(call_id: &str, output: &str) -> String {
    json!({
        "type": "response.item.create",
        "item": { "type": "function_call_output", "call_id": call_id, "output": output },
    })
    .to_string()
}

/// The background (`mode: async`) result of a call, as a developer message for the backend.
pub fn background_result(tool: &str, call_id: &str, failed: bool, output: &str) -> String {
    let status = if failed { "failed" } else { "finished" };
    let text =
        format!("The background task {tool} (call {call_id}) has {status}. Its result: {output}");
    json!({
        "type": "response.item.create",
        "item": {
            "type": "message",
            "role": "developer",
            "content": [{ "type": "input_text", "text": text }],
        },
    })
    .to_string()
}

/// Asks the backend to go on (continue the delegated response that waits for tool results).
pub fn response_create(event_id: &str) -> String {
    json!({ "type": "response.create", "event_id": event_id }).to_string()
}

/// A function call item of a nested Responses event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FunctionCallItem<'a> {
    /// The item's id (`fc_...`), which argument deltas name.
    pub item_id: Option<&'a str>,
    /// The call's id, which its result names.
    pub call_id: Option<&'a str>,
    /// The function's name.
    pub name: Option<&'a str>,
    /// The arguments, complete in `response.output_item.done`.
    pub arguments: Option<&'a str>,
}

/// The function call in a Responses output item, if it is one.
pub fn function_call_item(item: &Value) -> Option<FunctionCallItem<'_>> {
    if item.get("type").and_then(Value::as_str) != Some("function_call") {
        return None;
    }
    let s = |key| item.get(key).and_then(Value::as_str);
    Some(FunctionCallItem {
        item_id: s("id"),
        call_id: s("call_id"),
        name: s("name"),
        arguments: s("arguments"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_event_types_are_sorted_for_the_search() {
        assert!(SERVER_EVENT_TYPES.windows(2).all(|w| w[0] < w[1]));
        assert!(RESPONSE_STREAM_EVENT_TYPES.windows(2).all(|w| w[0] < w[1]));
        assert!(is_response_stream_event_type("response.output_item.done"));
        assert!(!is_response_stream_event_type("response.cancelled"));
        assert!(is_server_event_type("response.event"));
        assert!(is_server_event_type("transport.ringing"));
        assert!(!is_server_event_type(
            "response.function_call_arguments.done"
        ));
        assert!(!is_server_event_type(""));
    }

    #[test]
    fn a_webrtc_session_keeps_call_events_and_server_commands_from_the_page() {
        let tools = [json!({ "type": "function", "name": "lookup" })];
        let session = webrtc_session(default_session(), &tools);
        assert_eq!(session["delegation"]["responses"]["tools"], json!(tools));
        let channel = &session["client"]["data_channel"];
        let sent: Vec<&str> = channel["allowed_client_events"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(!sent.iter().any(|k| k.starts_with("response.")
            || k.starts_with("session.commentary")
            || *k == "session.update"));
        let received = channel["allowed_server_events"].as_array().unwrap();
        assert!(received
            .iter()
            .any(|s| s["type"] == "session.output_audio.delta"));
        assert!(received
            .iter()
            .any(|s| s["response_event"] == "response.output_text.delta"));
        for selector in received {
            let nested = selector["response_event"].as_str().unwrap_or_default();
            assert!(!CALL_EVENTS.contains(&nested), "{selector}");
        }
        assert_eq!(
            attach_url("wss://api.openai.com/v1/live/sessions/", "sess_1-a").as_deref(),
            Some("wss://api.openai.com/v1/live/sessions/sess_1-a/attach")
        );
        for bad in ["", "../x", "a/b", "a?b", &"x".repeat(129)] {
            assert_eq!(attach_url(DEFAULT_URL, bad), None, "{bad}");
        }
    }

    #[test]
    fn session_start_keeps_hosted_tools_and_replaces_function_tools() {
        let mut session = default_session();
        session["delegation"]["responses"]
            .as_object_mut()
            .unwrap()
            .insert(
                "tools".into(),
                json!([{ "type": "web_search" }, { "type": "function", "name": "forged" }]),
            );
        let ours = [json!({ "type": "function", "name": "lookup" })];
        let start: Value = serde_json::from_str(&session_start(session, &ours)).unwrap();
        assert_eq!(start["type"], "session.start");
        assert_eq!(start["session"]["model"], DEFAULT_MODEL);
        let tools = &start["session"]["delegation"]["responses"]["tools"];
        assert_eq!(
            tools,
            &json!([{ "type": "web_search" }, { "type": "function", "name": "lookup" }])
        );
    }

    #[test]
    fn a_session_without_responses_delegation_gets_it() {
        let mut session = Map::new();
        session.insert("model".into(), json!("gpt-live-1.1"));
        session.insert("delegation".into(), json!("nonsense"));
        let start: Value = serde_json::from_str(&session_start(session, &[])).unwrap();
        let delegation = &start["session"]["delegation"];
        assert_eq!(delegation["type"], "responses");
        assert_eq!(delegation["responses"]["model"], DEFAULT_BACKEND_MODEL);
        assert_eq!(delegation["responses"]["tools"], json!([]));
    }
}
