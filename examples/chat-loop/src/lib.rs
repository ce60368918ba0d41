//! A complete tool-calling loop for request/response chat APIs, against a local fake provider.
//!
//! The pieces a real application has, in one place:
//! - the manifest (`manifests/support.tools.yaml`) loaded at run time, its provider declarations
//!   built by toolc, and a [`Registry`] with an executor for each server tool;
//! - a simulated browser behind a [`ChannelClient`] that answers the client tools;
//! - the loop: send the conversation, decode the tool calls, run them with the
//!   [`TurnRunner`], append the model's turn and the follow-up, send again — until the model
//!   answers without calling tools.

pub mod fake_provider;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use toolc::diagnostic::Diagnostics;
use toolc::emit::providers::{declarations, Provider};
use toolc_runtime::chat::{
    Anthropic, AnthropicStream, CallResult, ChannelClient, ChatCompletions, ChatCompletionsStream,
    Codec, ToolCall, TurnRunner,
};
use toolc_runtime::{executor_fn, Registry, ToolError};

/// Which API the loop speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    Chat,
    Anthropic,
}

impl Api {
    pub fn parse(name: &str) -> Option<Api> {
        match name {
            "chat" | "openai" | "openai-chat" => Some(Api::Chat),
            "anthropic" => Some(Api::Anthropic),
            _ => None,
        }
    }
}

pub fn manifest_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../manifests/support.tools.yaml")
}

/// The checked tools of the manifest: provider declarations and the registry.
#[derive(Debug)]
pub struct Tools {
    pub registry: Arc<Registry>,
    pub openai_chat: Value,
    pub anthropic: Value,
}

/// Loads the manifest, builds the provider declarations and registers the server executors.
pub fn load_tools(path: &Path) -> Result<Tools, String> {
    let mut session = toolc::Session::new();
    session
        .add_path(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let ir = session.check().ok_or_else(|| session.render(false))?;
    let mut warnings = Diagnostics::default();
    let openai_chat = declarations(&ir, Provider::OpenaiChat, &mut warnings);
    let anthropic = declarations(&ir, Provider::Anthropic, &mut warnings);
    let data = Arc::new(support_desk::Data::bundled()?);
    let (search_data, order_data) = (data.clone(), data);
    let registry = Registry::builder()
        .definitions(ir.definitions())
        .executor(
            "search_help_articles",
            executor_fn(move |args| {
                let data = search_data.clone();
                async move {
                    let query = args["query"].as_str().unwrap_or_default();
                    // The manifest's default applies when the model left `limit` out.
                    let limit = args["limit"].as_u64().unwrap_or(3).clamp(1, 10) as usize;
                    Ok(json!({ "articles": data.search(query, limit) }))
                }
            }),
        )
        .executor(
            "get_order_status",
            executor_fn(move |args| {
                let data = order_data.clone();
                async move {
                    let number = args["order_number"].as_str().unwrap_or_default();
                    match data.order(number) {
                        Some(o) => Ok(json!({ "status": o.status, "eta": o.eta })),
                        None => {
                            Err(ToolError::new("no order with that number").with_code("not_found"))
                        }
                    }
                }
            }),
        )
        .build()
        .map_err(|e| e.to_string())?;
    Ok(Tools {
        registry: Arc::new(registry),
        openai_chat,
        anthropic,
    })
}

/// What the simulated browser was asked to do: (tool, arguments).
pub type BrowserLog = Arc<Mutex<Vec<(String, String)>>>;

/// Starts a simulated browser: it answers every client tool that waits, and records every call.
pub fn start_browser() -> (ChannelClient, BrowserLog) {
    let (client, mut requests) = ChannelClient::new(16);
    let log: BrowserLog = Arc::default();
    let seen = log.clone();
    tokio::spawn(async move {
        while let Some(request) = requests.recv().await {
            if let Ok(mut seen) = seen.lock() {
                seen.push((
                    request.call.tool_call.name.clone(),
                    request.call.tool_call.arguments.clone(),
                ));
            }
            let output = match request.call.tool_call.name.as_str() {
                "highlight_element" => json!({ "found": true }),
                "scroll_to_section" => json!({ "scrolled": true }),
                "fill_form_field" => json!({ "filled": true }),
                _ => json!({}),
            };
            if let Some(reply) = request.reply {
                let _ = reply.send(output.to_string());
            }
        }
    });
    (client, log)
}

/// How a conversation went.
#[derive(Debug)]
pub struct Conversation {
    /// The model's final text.
    pub answer: String,
    /// Requests sent.
    pub requests: usize,
    /// Every tool result, in the order they were sent back.
    pub results: Vec<CallResult>,
}

/// The model's turn: its calls and what to replay, or its final text.
enum ModelTurn {
    Calls {
        calls: Vec<ToolCall>,
        replay: Vec<Value>,
    },
    Text(String),
}

/// A provider's answer, read whole.
struct Answer {
    status: u16,
    content_type: String,
    body: String,
}

/// The `data:` payloads of a `text/event-stream` body, in order (the SSE fields the chat APIs
/// use; `event:` names repeat the payload's own `type`).
fn sse_data(body: &str) -> impl Iterator<Item = &str> {
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(str::trim)
}

fn read_turn(api: Api, response: &Answer) -> Result<ModelTurn, String> {
    if response.status != 200 {
        return Err(format!(
            "the provider answered HTTP {}: {}",
            response.status, response.body
        ));
    }
    let streamed = response.content_type.starts_with("text/event-stream");
    let (calls, replay) = match (api, streamed) {
        (Api::Chat, false) => {
            let body: Value = serde_json::from_str(&response.body).map_err(|e| e.to_string())?;
            let calls = ChatCompletions.decode(&body).map_err(|e| e.to_string())?;
            if calls.is_empty() {
                let text = body["choices"][0]["message"]["content"]
                    .as_str()
                    .unwrap_or("");
                return Ok(ModelTurn::Text(text.to_owned()));
            }
            (calls, ChatCompletions.assistant_turn(&body))
        }
        (Api::Chat, true) => {
            let mut stream = ChatCompletionsStream::new();
            for data in sse_data(&response.body) {
                stream.push_str(data).map_err(|e| e.to_string())?;
            }
            let calls = stream.calls().map_err(|e| e.to_string())?;
            let message = stream.assistant_message().map_err(|e| e.to_string())?;
            if calls.is_empty() {
                return Ok(ModelTurn::Text(
                    message["content"].as_str().unwrap_or("").to_owned(),
                ));
            }
            (calls, vec![message])
        }
        (Api::Anthropic, false) => {
            let body: Value = serde_json::from_str(&response.body).map_err(|e| e.to_string())?;
            let calls = Anthropic.decode(&body).map_err(|e| e.to_string())?;
            if calls.is_empty() {
                return Ok(ModelTurn::Text(anthropic_text(&body["content"])));
            }
            (calls, Anthropic.assistant_turn(&body))
        }
        (Api::Anthropic, true) => {
            let mut stream = AnthropicStream::new();
            for data in sse_data(&response.body) {
                stream.push_str(data).map_err(|e| e.to_string())?;
            }
            let calls = stream.calls();
            let message = stream.assistant_message();
            if calls.is_empty() {
                return Ok(ModelTurn::Text(anthropic_text(&message["content"])));
            }
            (calls, vec![message])
        }
    };
    Ok(ModelTurn::Calls { calls, replay })
}

fn anthropic_text(content: &Value) -> String {
    content
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b["text"].as_str())
        .collect()
}

/// Runs the conversation against the provider at `addr` until the model stops calling tools
/// (at most `max_requests` requests).
pub async fn converse(
    addr: &str,
    api: Api,
    stream: bool,
    tools: &Tools,
    runner: &TurnRunner,
    question: &str,
    max_requests: usize,
) -> Result<Conversation, String> {
    let codec: &dyn Codec = match api {
        Api::Chat => &ChatCompletions,
        Api::Anthropic => &Anthropic,
    };
    let (path, mut messages) = match api {
        Api::Chat => (
            "/v1/chat/completions",
            vec![
                json!({ "role": "system", "content": "You are a support agent." }),
                json!({ "role": "user", "content": question }),
            ],
        ),
        Api::Anthropic => (
            "/v1/messages",
            vec![json!({ "role": "user", "content": question })],
        ),
    };
    let mut results = Vec::new();
    // reqwest's rustls has no crypto provider of its own here: use ring for the process (an
    // application that installed another keeps it).
    let _ = rustls::crypto::ring::default_provider().install_default();
    // One client for the whole conversation: its connection is reused request after request.
    let client = reqwest::Client::builder()
        .build()
        .map_err(|e| format!("cannot set up the HTTP client: {e}"))?;
    for sent in 1..=max_requests {
        let request = match api {
            Api::Chat => json!({ "model": "fake-model", "messages": messages,
                "tools": tools.openai_chat, "parallel_tool_calls": true, "stream": stream }),
            Api::Anthropic => json!({ "model": "fake-model", "max_tokens": 1024,
                "system": "You are a support agent.", "messages": messages,
                "tools": tools.anthropic, "stream": stream }),
        };
        let headers: &[(&str, &str)] = match api {
            Api::Chat => &[("Authorization", "Bearer not-a-real-key")],
            Api::Anthropic => &[
                ("x-api-key", "not-a-real-key"),
                ("anthropic-version", "2023-06-01"),
            ],
        };
        let mut post = client
            .post(format!("http://{addr}{path}"))
            .header("content-type", "application/json")
            .body(request.to_string());
        for (name, value) in headers {
            post = post.header(*name, *value);
        }
        let response = post
            .send()
            .await
            .map_err(|e| format!("POST http://{addr}{path}: {e}"))?;
        let response = Answer {
            status: response.status().as_u16(),
            content_type: response
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned(),
            body: response
                .text()
                .await
                .map_err(|e| format!("reading the answer of {path}: {e}"))?,
        };
        match read_turn(api, &response)? {
            ModelTurn::Text(answer) => {
                return Ok(Conversation {
                    answer,
                    requests: sent,
                    results,
                })
            }
            ModelTurn::Calls { calls, replay } => {
                let outcome = runner.run(&calls).await;
                messages.extend(replay);
                messages.extend(outcome.encode(codec).map_err(|e| e.to_string())?);
                results.extend(outcome.results);
            }
        }
    }
    Err(format!(
        "the model was still calling tools after {max_requests} requests"
    ))
}
