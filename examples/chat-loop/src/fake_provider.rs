//! A scripted model behind a local axum server, speaking just enough of the OpenAI Chat
//! Completions (`POST /v1/chat/completions`) and Anthropic Messages (`POST /v1/messages`) APIs,
//! with and without streaming.
//!
//! Turn 1: the model calls four tools at once (a server tool with a strict-mode `null`, a server
//! tool with an argument that breaks the manifest's `pattern`, a client tool that waits, and a
//! fire-and-forget client tool). Turn 2: it checks — as the real APIs do — that every call got
//! exactly one result, in the place and order the API requires, and answers with a summary;
//! a follow-up that breaks the rules gets HTTP 400.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// The calls of turn 1: (tool, arguments JSON).
pub const SCRIPT: [(&str, &str); 4] = [
    (
        "search_help_articles",
        r#"{"query":"return my order","limit":null}"#,
    ),
    ("get_order_status", r#"{"order_number":"12345"}"#),
    (
        "highlight_element",
        r##"{"selector":"#returns","color":null}"##,
    ),
    (
        "show_toast",
        r#"{"message":"Looking into your return","level":null}"#,
    ),
];

/// A running fake provider; it stops when dropped.
#[derive(Debug)]
pub struct FakeProvider {
    pub addr: SocketAddr,
    /// Every request body received, in order.
    pub requests: Arc<Mutex<Vec<Value>>>,
    task: JoinHandle<()>,
}

impl Drop for FakeProvider {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeProvider {
    /// Listens on `127.0.0.1` on a free port.
    pub async fn start() -> std::io::Result<FakeProvider> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let requests = Arc::new(Mutex::new(Vec::new()));
        let log = requests.clone();
        let app = Router::new()
            .route(
                "/v1/chat/completions",
                post(|log: State<Log>, body: Bytes| endpoint(log, Endpoint::Chat, body)),
            )
            .route(
                "/v1/messages",
                post(|log: State<Log>, body: Bytes| endpoint(log, Endpoint::Messages, body)),
            )
            .fallback(|| async {
                reply(
                    404,
                    "application/json",
                    error_body("no such route; POST /v1/chat/completions or /v1/messages"),
                )
            })
            .with_state(log);
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(FakeProvider {
            addr,
            requests,
            task,
        })
    }
}

fn error_body(message: &str) -> String {
    json!({ "error": { "type": "invalid_request_error", "message": message } }).to_string()
}

fn reply(status: u16, content_type: &'static str, body: String) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, [(header::CONTENT_TYPE, content_type)], body).into_response()
}

type Log = Arc<Mutex<Vec<Value>>>;

#[derive(Clone, Copy)]
enum Endpoint {
    Chat,
    Messages,
}

async fn endpoint(State(log): State<Log>, endpoint: Endpoint, body: Bytes) -> Response {
    let (status, content_type, text) = respond(endpoint, &body, &log);
    reply(status, content_type, text)
}

fn respond(
    endpoint: Endpoint,
    body: &[u8],
    log: &Mutex<Vec<Value>>,
) -> (u16, &'static str, String) {
    let body: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => {
            return (
                400,
                "application/json",
                error_body(&format!("body is not JSON: {e}")),
            )
        }
    };
    if let Ok(mut log) = log.lock() {
        log.push(body.clone());
    }
    let stream = body["stream"] == json!(true);
    let outcome = match endpoint {
        Endpoint::Chat => chat(&body, stream),
        Endpoint::Messages => anthropic(&body, stream),
    };
    match outcome {
        Ok((true, text)) => (200, "text/event-stream", text),
        Ok((false, text)) => (200, "application/json", text),
        Err(message) => (400, "application/json", error_body(&message)),
    }
}

/// A one-line verdict on one result, for the final answer.
fn verdict(name: &str, output: &str) -> String {
    match serde_json::from_str::<Value>(output) {
        Ok(v) => match v.pointer("/error/kind").and_then(Value::as_str) {
            Some(kind) => format!("{name} failed ({kind})"),
            None => format!("{name} ok"),
        },
        Err(_) => format!("{name} answered in plain text"),
    }
}

/// Splits argument text into 7-character fragments, as a model streams it.
fn fragments(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(7).map(|c| c.iter().collect()).collect()
}

fn sse(events: impl IntoIterator<Item = (Option<&'static str>, Value)>, done: bool) -> String {
    let mut out = String::new();
    for (name, data) in events {
        if let Some(name) = name {
            out.push_str(&format!("event: {name}\n"));
        }
        out.push_str(&format!("data: {data}\n\n"));
    }
    if done {
        out.push_str("data: [DONE]\n\n");
    }
    out
}

fn chat(body: &Value, stream: bool) -> Result<(bool, String), String> {
    let messages = body["messages"]
        .as_array()
        .ok_or("`messages` must be an array")?;
    let declared: Vec<&str> = body["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|t| t["function"]["name"].as_str())
                .collect()
        })
        .unwrap_or_default();
    let Some(last_call) = messages
        .iter()
        .rposition(|m| m["role"] == "assistant" && m["tool_calls"].is_array())
    else {
        // Turn 1: call the tools.
        for (name, _) in SCRIPT {
            if !declared.contains(&name) {
                return Err(format!("tool `{name}` was not declared in `tools`"));
            }
        }
        let calls: Vec<Value> = SCRIPT
            .iter()
            .enumerate()
            .map(|(i, (name, args))| {
                json!({ "id": format!("call_{i}"), "type": "function",
                        "function": { "name": name, "arguments": args } })
            })
            .collect();
        if !stream {
            return Ok((false, json!({
                "id": "chatcmpl-fake1", "object": "chat.completion", "created": 0, "model": "fake",
                "choices": [{ "index": 0, "finish_reason": "tool_calls", "logprobs": null,
                    "message": { "role": "assistant", "content": null, "refusal": null,
                                 "tool_calls": calls } }]
            }).to_string()));
        }
        let chunk = |delta: Value, finish: Value| {
            (
                None,
                json!({ "id": "chatcmpl-fake1", "object": "chat.completion.chunk",
                "created": 0, "model": "fake",
                "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }] }),
            )
        };
        let mut events = vec![chunk(
            json!({ "role": "assistant", "content": null }),
            Value::Null,
        )];
        for (i, (name, args)) in SCRIPT.iter().enumerate() {
            events.push(chunk(
                json!({ "tool_calls": [{ "index": i, "id": format!("call_{i}"),
                "type": "function", "function": { "name": name, "arguments": "" } }] }),
                Value::Null,
            ));
            for piece in fragments(args) {
                events.push(chunk(
                    json!({ "tool_calls": [{ "index": i,
                    "function": { "arguments": piece } }] }),
                    Value::Null,
                ));
            }
        }
        events.push(chunk(json!({}), json!("tool_calls")));
        return Ok((true, sse(events, true)));
    };
    // Turn 2: exactly one `tool` message per call, right after the assistant message, in order.
    let asked: Vec<(&str, &str)> = messages[last_call]["tool_calls"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            (
                c["id"].as_str().unwrap_or(""),
                c["function"]["name"].as_str().unwrap_or(""),
            )
        })
        .collect();
    let answers = &messages[last_call + 1..];
    if answers.len() != asked.len() {
        return Err(format!(
            "{} tool calls need {} tool messages, got {}",
            asked.len(),
            asked.len(),
            answers.len()
        ));
    }
    let mut summary = Vec::new();
    for ((id, name), answer) in asked.iter().zip(answers) {
        if answer["role"] != "tool" || answer["tool_call_id"] != *id {
            return Err(format!(
                "expected the tool message for `{id}`, got {answer}"
            ));
        }
        let content = answer["content"]
            .as_str()
            .ok_or("tool content must be a string")?;
        summary.push(verdict(name, content));
    }
    let text = format!("Done: {}.", summary.join("; "));
    if !stream {
        return Ok((
            false,
            json!({
                "id": "chatcmpl-fake2", "object": "chat.completion", "created": 0, "model": "fake",
                "choices": [{ "index": 0, "finish_reason": "stop", "logprobs": null,
                    "message": { "role": "assistant", "content": text, "refusal": null } }]
            })
            .to_string(),
        ));
    }
    let events = fragments(&text).into_iter().map(|piece| {
        (
            None,
            json!({ "id": "chatcmpl-fake2", "object": "chat.completion.chunk", "created": 0,
            "model": "fake", "choices": [{ "index": 0, "delta": { "content": piece },
            "finish_reason": null }] }),
        )
    });
    Ok((true, sse(events, true)))
}

fn anthropic(body: &Value, stream: bool) -> Result<(bool, String), String> {
    let messages = body["messages"]
        .as_array()
        .ok_or("`messages` must be an array")?;
    let last = messages.last().ok_or("`messages` is empty")?;
    let is_results = last["role"] == "user"
        && last["content"]
            .as_array()
            .is_some_and(|c| c.iter().any(|b| b["type"] == "tool_result"));
    if !is_results {
        let declared: Vec<&str> = body["tools"]
            .as_array()
            .map(|t| t.iter().filter_map(|t| t["name"].as_str()).collect())
            .unwrap_or_default();
        for (name, _) in SCRIPT {
            if !declared.contains(&name) {
                return Err(format!("tool `{name}` was not declared in `tools`"));
            }
        }
        let blocks: Vec<Value> = SCRIPT
            .iter()
            .enumerate()
            .map(|(i, (name, args))| {
                let input: Value = serde_json::from_str(args).unwrap_or(json!({}));
                json!({ "type": "tool_use", "id": format!("toolu_{i}"), "name": name, "input": input })
            })
            .collect();
        if !stream {
            return Ok((
                false,
                json!({
                    "id": "msg_fake1", "type": "message", "role": "assistant", "model": "fake",
                    "content": blocks, "stop_reason": "tool_use", "stop_sequence": null,
                    "usage": { "input_tokens": 1, "output_tokens": 1 }
                })
                .to_string(),
            ));
        }
        let mut events = vec![(
            Some("message_start"),
            json!({ "type": "message_start",
            "message": { "id": "msg_fake1", "type": "message", "role": "assistant",
                         "model": "fake", "content": [], "stop_reason": null } }),
        )];
        for (i, (name, args)) in SCRIPT.iter().enumerate() {
            events.push((
                Some("content_block_start"),
                json!({ "type": "content_block_start",
                "index": i, "content_block": { "type": "tool_use", "id": format!("toolu_{i}"),
                "name": name, "input": {} } }),
            ));
            for piece in fragments(args) {
                events.push((
                    Some("content_block_delta"),
                    json!({ "type": "content_block_delta",
                    "index": i, "delta": { "type": "input_json_delta", "partial_json": piece } }),
                ));
            }
            events.push((
                Some("content_block_stop"),
                json!({ "type": "content_block_stop", "index": i }),
            ));
        }
        events.push((
            Some("message_delta"),
            json!({ "type": "message_delta",
            "delta": { "stop_reason": "tool_use" }, "usage": { "output_tokens": 1 } }),
        ));
        events.push((Some("message_stop"), json!({ "type": "message_stop" })));
        return Ok((true, sse(events, false)));
    }
    // Turn 2: ONE user message whose content is one tool_result per tool_use, in order.
    let assistant = messages
        .len()
        .checked_sub(2)
        .map(|i| &messages[i])
        .filter(|m| m["role"] == "assistant")
        .ok_or("the tool results must follow the assistant message")?;
    let asked: Vec<(&str, &str)> = assistant["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "tool_use")
        .map(|b| {
            (
                b["id"].as_str().unwrap_or(""),
                b["name"].as_str().unwrap_or(""),
            )
        })
        .collect();
    let results: Vec<&Value> = last["content"].as_array().into_iter().flatten().collect();
    if results.len() != asked.len() {
        return Err(format!(
            "{} tool_use blocks need {} tool_result blocks, got {}",
            asked.len(),
            asked.len(),
            results.len()
        ));
    }
    let mut summary = Vec::new();
    for ((id, name), block) in asked.iter().zip(results) {
        if block["type"] != "tool_result" || block["tool_use_id"] != *id {
            return Err(format!("expected the tool_result for `{id}`, got {block}"));
        }
        let content = block["content"]
            .as_str()
            .ok_or("tool_result content must be a string")?;
        let line = verdict(name, content);
        if line.contains("failed") != (block["is_error"] == json!(true)) {
            return Err(format!("`is_error` does not match the result of `{id}`"));
        }
        summary.push(line);
    }
    let text = format!("Done: {}.", summary.join("; "));
    if !stream {
        return Ok((
            false,
            json!({
                "id": "msg_fake2", "type": "message", "role": "assistant", "model": "fake",
                "content": [{ "type": "text", "text": text }], "stop_reason": "end_turn",
                "stop_sequence": null, "usage": { "input_tokens": 1, "output_tokens": 1 }
            })
            .to_string(),
        ));
    }
    let mut events = vec![
        (
            Some("message_start"),
            json!({ "type": "message_start", "message": { "id": "msg_fake2",
            "type": "message", "role": "assistant", "model": "fake", "content": [] } }),
        ),
        (
            Some("content_block_start"),
            json!({ "type": "content_block_start", "index": 0,
            "content_block": { "type": "text", "text": "" } }),
        ),
    ];
    for piece in fragments(&text) {
        events.push((
            Some("content_block_delta"),
            json!({ "type": "content_block_delta", "index": 0,
            "delta": { "type": "text_delta", "text": piece } }),
        ));
    }
    events.push((
        Some("content_block_stop"),
        json!({ "type": "content_block_stop", "index": 0 }),
    ));
    events.push((Some("message_stop"), json!({ "type": "message_stop" })));
    Ok((true, sse(events, false)))
}
