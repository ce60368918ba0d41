//! The ready GPT-Live client delegate (`delegate::chat_delegate`, feature `chat-delegate`)
//! against a fake OpenAI Responses API on loopback (axum) that answers as the real one does:
//! a `Response` object with a `function_call` item, then, given its result through
//! `previous_response_id`, a `message` with the answer; errors as an HTTP status with
//! OpenAI's error object. Every request toolc sent and every body the fake answered is checked
//! with OpenAI's SDK (`tests/gpt-live/validate.py`).
#![cfg(all(feature = "chat-delegate", feature = "testing"))]

mod common {
    pub mod session;
}

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::post;
use axum::Router;
use common::session::Wire;
use serde_json::{json, Value};
use toolc_runtime::chat::http::{user_message, ModelError, ResponsesModel};
use toolc_runtime::chat::TurnRunner;
use toolc_runtime::delegate::{chat_delegate, FAILED};
use toolc_runtime::realtime::script::gpt_live as script;
use toolc_runtime::realtime::{RealtimeProvider, RealtimeSession, SessionConfig};
use toolc_runtime::{definitions_from_str, executor_fn, Registry};

const MANIFEST: &str = r#"
version: 1
tools:
  - name: lookup_order
    description: Where an order is.
    location: server
    parameters:
      type: object
      properties:
        order: { type: string }
        carrier: { type: string }
      required: [order]
      additionalProperties: false
  - name: highlight
    description: Highlight an element on the page.
    location: client
    parameters:
      type: object
      properties: { selector: { type: string } }
      required: [selector]
"#;

const KEY: &str = "sk-test-delegate";

/// The fake API's state: what it was sent, and how it answers.
#[derive(Default)]
struct Api {
    requests: Mutex<Vec<(Option<String>, Value)>>,
    answered: Mutex<Vec<Value>>,
    /// Answer every request with another call (a model that never stops).
    calls_forever: bool,
    n: AtomicUsize,
}

/// A `Response` as the API returns it (the members of OpenAI's `Response` object).
fn response(id: &str, request: &Value, output: Vec<Value>) -> Value {
    json!({
        "id": id,
        "object": "response",
        "created_at": 1_796_000_000,
        "status": "completed",
        "background": false,
        "error": null,
        "incomplete_details": null,
        "instructions": request.get("instructions").cloned().unwrap_or(Value::Null),
        "max_output_tokens": null,
        "model": "gpt-5.5-2026-09-01",
        "output": output,
        "parallel_tool_calls": true,
        "previous_response_id": request.get("previous_response_id").cloned().unwrap_or(Value::Null),
        "reasoning": { "effort": "medium", "summary": null },
        "service_tier": "default",
        "temperature": 1.0,
        "text": { "format": { "type": "text" }, "verbosity": "medium" },
        "tool_choice": "auto",
        "tools": request.get("tools").cloned().unwrap_or(json!([])),
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": {
            "input_tokens": 120, "input_tokens_details": { "cached_tokens": 0, "cache_write_tokens": 0 },
            "output_tokens": 20, "output_tokens_details": { "reasoning_tokens": 0 },
            "total_tokens": 140,
        },
        "user": null,
        "metadata": {},
    })
}

fn function_call(n: usize, name: &str, arguments: &str) -> Value {
    json!({
        "type": "function_call", "id": format!("fc_{n}"), "call_id": format!("call_{n}"),
        "name": name, "arguments": arguments, "status": "completed",
    })
}

async fn responses(
    State(api): State<Arc<Api>>,
    headers: HeaderMap,
    body: String,
) -> axum::response::Response {
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let Ok(request) = serde_json::from_str::<Value>(&body) else {
        let error = json!({"error": {"message": "We could not parse the JSON body of your request.", "type": "invalid_request_error", "param": null, "code": null}});
        return (StatusCode::BAD_REQUEST, axum::Json(error)).into_response();
    };
    api.requests
        .lock()
        .unwrap()
        .push((auth.clone(), request.clone()));
    if auth.as_deref() != Some(&format!("Bearer {KEY}")) {
        let error = json!({"error": {"message": "Incorrect API key provided: sk-wrong. You can find your API key at https://platform.openai.com/account/api-keys.", "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}});
        return (StatusCode::UNAUTHORIZED, axum::Json(error)).into_response();
    }
    let n = api.n.fetch_add(1, Ordering::SeqCst) + 1;
    let id = format!("resp_{n}");
    let answered_call = request["input"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|item| item["type"] == "function_call_output");
    let output = if api.calls_forever || !answered_call {
        vec![function_call(
            n,
            "lookup_order",
            r#"{"order":"AB-1","carrier":null}"#,
        )]
    } else {
        vec![json!({
            "type": "message", "id": format!("msg_{n}"), "status": "completed", "role": "assistant",
            "content": [{ "type": "output_text", "text": "Order AB-1 left the depot on Monday.", "annotations": [], "logprobs": [] }],
        })]
    };
    let answer = response(&id, &request, output);
    api.answered.lock().unwrap().push(answer.clone());
    axum::Json(answer).into_response()
}

/// The fake API on loopback; its base URL.
async fn serve(api: Arc<Api>) -> String {
    let app = Router::new()
        .route("/v1/responses", post(responses))
        .with_state(api);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}/v1")
}

fn registry(looked_up: Arc<Mutex<Vec<Value>>>) -> Arc<Registry> {
    let defs = definitions_from_str("delegate.tools.yaml", MANIFEST).unwrap();
    Arc::new(
        Registry::builder()
            .definitions(defs)
            .executor(
                "lookup_order",
                executor_fn(move |args: Value| {
                    let seen = looked_up.clone();
                    async move {
                        seen.lock().unwrap().push(args);
                        Ok(json!({"status": "shipped", "left_depot": "Monday"}))
                    }
                }),
            )
            .build()
            .unwrap(),
    )
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Every request and answer of `api`, through OpenAI's SDK.
fn validate_with_sdk(api: &Api) {
    let mut lines = String::new();
    for (_, request) in api.requests.lock().unwrap().iter() {
        lines.push_str(&format!("request {request}\n"));
    }
    for answer in api.answered.lock().unwrap().iter() {
        lines.push_str(&format!("response {answer}\n"));
    }
    static RUN: AtomicUsize = AtomicUsize::new(0);
    let run = RUN.fetch_add(1, Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("toolc-delegate-{}-{run}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("exchange.jsonl");
    std::fs::write(&file, &lines).unwrap();
    let out = std::process::Command::new(repo().join("tests/mcp/.venv/bin/python"))
        .arg(repo().join("tests/gpt-live/validate.py"))
        .arg(&file)
        .output()
        .expect("the validator runs (scripts/setup installs OpenAI's SDK)");
    let _ = std::fs::remove_dir_all(&dir);
    let report =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{report}");
    let n = lines.lines().count();
    assert!(
        report.contains(&format!("{n} accepted, 0 refused")),
        "{report}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_delegation_runs_a_tool_turn_against_the_responses_api_and_is_said() {
    let api = Arc::new(Api::default());
    let base = serve(api.clone()).await;
    let looked_up = Arc::new(Mutex::new(Vec::new()));
    let registry = registry(looked_up.clone());
    let model = ResponsesModel::new(&base, KEY, "gpt-5.5").unwrap();
    let mut config = SessionConfig::for_provider(&registry, RealtimeProvider::GptLive);
    config.client_delegate = Some(chat_delegate(registry.clone(), model));
    let mut h = Wire::new(RealtimeSession::new(registry, Arc::new(config)));
    h.model(&script::session_started("sess_1"));
    for (kind, delta) in [
        ("session.input_transcript.delta", "Where is my order "),
        ("session.input_transcript.delta", "AB-1?"),
        ("session.output_transcript.delta", "Let me look."),
    ] {
        h.model(&json!({"type": kind, "event_id": "evt_t", "delta": delta, "start_ms": 0, "end_ms": 10}));
    }
    h.model(&script::delegation_created("dlg_1", "client"));
    h.settle(|w| !w.model_events_of("session.commentary.append").is_empty())
        .await;

    // The live model says the backend's answer, bound to the delegation.
    let said = h.model_events_of("session.commentary.append");
    assert_eq!(said.len(), 1, "{:#?}", h.to_model);
    assert_eq!(said[0]["delegation_id"], "dlg_1");
    assert_eq!(said[0]["content"], "Order AB-1 left the depot on Monday.");
    // The server tool ran once, with the strict-mode null removed.
    assert_eq!(*looked_up.lock().unwrap(), vec![json!({"order": "AB-1"})]);

    let requests = api.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    for (auth, _) in &requests {
        assert_eq!(auth.as_deref(), Some(&*format!("Bearer {KEY}")));
    }
    // The first: the transcript, and the server tools only (the page cannot be reached).
    let first = &requests[0].1;
    assert_eq!(first["model"], "gpt-5.5");
    let text = first["input"][0]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("user: Where is my order AB-1?\nassistant: Let me look."),
        "{text}"
    );
    let tools = first["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1, "{tools:#?}");
    assert_eq!(tools[0]["name"], "lookup_order");
    assert_eq!(tools[0]["strict"], true);
    // The second continues the first with the call's result.
    let second = &requests[1].1;
    assert_eq!(second["previous_response_id"], "resp_1");
    assert_eq!(second["input"].as_array().unwrap().len(), 1);
    assert_eq!(second["input"][0]["type"], "function_call_output");
    assert_eq!(second["input"][0]["call_id"], "call_1");
    let output: Value =
        serde_json::from_str(second["input"][0]["output"].as_str().unwrap()).unwrap();
    assert_eq!(output["status"], "shipped");

    validate_with_sdk(&api);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_request_answers_the_live_model_silently_and_says_why_to_the_application() {
    let api = Arc::new(Api::default());
    let base = serve(api.clone()).await;
    let registry = registry(Arc::default());
    let runner = TurnRunner::new(registry.clone());
    let wrong = ResponsesModel::new(&base, "sk-wrong", "gpt-5.5").unwrap();
    let err = wrong
        .run(&runner, vec![user_message("hi")])
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ModelError::Api { status: 401, code: Some(code), message } if code == "invalid_api_key" && message.starts_with("Incorrect API key")),
        "{err:?}"
    );
    // Through the delegate: silent context, nothing of the error's text.
    let mut config = SessionConfig::for_provider(&registry, RealtimeProvider::GptLive);
    config.client_delegate = Some(chat_delegate(registry.clone(), wrong));
    let mut h = Wire::new(RealtimeSession::new(registry, Arc::new(config)));
    h.model(&script::session_started("sess_1"));
    h.model(&script::delegation_created("dlg_1", "client"));
    h.settle(|w| !w.model_events_of("session.thinking.append").is_empty())
        .await;
    let thought = h.model_events_of("session.thinking.append");
    assert_eq!(thought.len(), 1, "{:#?}", h.to_model);
    assert_eq!(thought[0]["content"], FAILED);
    assert!(h.model_events_of("session.commentary.append").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_keeps_calling_tools_is_stopped() {
    let api = Arc::new(Api {
        calls_forever: true,
        ..Api::default()
    });
    let base = serve(api.clone()).await;
    let registry = registry(Arc::default());
    let model = ResponsesModel::new(&base, KEY, "gpt-5.5")
        .unwrap()
        .max_turns(3);
    let err = model
        .run(&TurnRunner::new(registry), vec![user_message("loop")])
        .await
        .unwrap_err();
    assert_eq!(err, ModelError::TooManyTurns(3));
    assert_eq!(api.requests.lock().unwrap().len(), 3);
    validate_with_sdk(&api);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_that_is_not_there_or_answers_garbage_is_an_error_not_a_hang() {
    // Nothing listens on this port once the listener is gone.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let registry = registry(Arc::default());
    let runner = TurnRunner::new(registry);
    let model = ResponsesModel::new(&format!("http://{closed}/v1"), KEY, "m").unwrap();
    let err = model
        .run(&runner, vec![user_message("hi")])
        .await
        .unwrap_err();
    assert!(matches!(err, ModelError::Transport(_)), "{err:?}");

    // A server that answers 200 with what is not a Response.
    let app = Router::new().route("/v1/responses", post(|| async { "[1, 2]" }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let model = ResponsesModel::new(&format!("http://{addr}/v1"), KEY, "m")
        .unwrap()
        .timeout(Duration::from_secs(5))
        .unwrap();
    let err = model
        .run(&runner, vec![user_message("hi")])
        .await
        .unwrap_err();
    assert!(matches!(err, ModelError::Unreadable(_)), "{err:?}");
}
