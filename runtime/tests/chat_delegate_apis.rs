//! The chat delegate (`delegate::chat_delegate`) on the message-based chat APIs: OpenAI Chat
//! Completions (`ChatCompletionsModel`) and Anthropic Messages (`AnthropicModel`), each against
//! a fake API on loopback (axum) that answers in the real API's shape: a completion / message
//! with one tool call, then, given the call's result in the resent conversation, the answer in
//! text; a wrong key is the API's 401 with its error object (OpenAI's
//! `{"error": {"message", "type", "param", "code"}}`, Anthropic's
//! `{"type": "error", "error": {"type", "message"}, "request_id"}`).
#![cfg(all(feature = "chat-delegate", feature = "testing"))]

mod common {
    pub mod session;
}

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::post;
use axum::Router;
use common::session::Wire;
use serde_json::{json, Value};
use toolc_runtime::chat::http::{
    AnthropicModel, ChatCompletionsModel, ChatModel, ModelError, ANTHROPIC_VERSION,
};
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
const ANSWER: &str = "Order AB-1 left the depot on Monday.";

/// A fake API's state: the requests it was sent (headers that matter, body), and how it
/// answers.
#[derive(Default)]
struct Api {
    requests: Mutex<Vec<(HeaderMap, Value)>>,
    /// Answer every request with another call (a model that never stops).
    calls_forever: bool,
    n: AtomicUsize,
}

impl Api {
    fn bodies(&self) -> Vec<Value> {
        let requests = self.requests.lock().unwrap();
        requests.iter().map(|(_, body)| body.clone()).collect()
    }
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// `POST /v1/chat/completions` as OpenAI answers it.
async fn chat_completions(
    State(api): State<Arc<Api>>,
    headers: HeaderMap,
    body: String,
) -> axum::response::Response {
    let Ok(request) = serde_json::from_str::<Value>(&body) else {
        let error = json!({"error": {"message": "We could not parse the JSON body of your request.", "type": "invalid_request_error", "param": null, "code": null}});
        return (StatusCode::BAD_REQUEST, axum::Json(error)).into_response();
    };
    api.requests
        .lock()
        .unwrap()
        .push((headers.clone(), request.clone()));
    if header(&headers, "authorization") != Some(&format!("Bearer {KEY}")) {
        let error = json!({"error": {"message": "Incorrect API key provided: sk-wrong. You can find your API key at https://platform.openai.com/account/api-keys.", "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}});
        return (StatusCode::UNAUTHORIZED, axum::Json(error)).into_response();
    }
    let n = api.n.fetch_add(1, Ordering::SeqCst) + 1;
    let answered = request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|m| m["role"] == "tool");
    let (message, finish_reason) = if api.calls_forever || !answered {
        let call = json!({
            "id": format!("call_{n}"), "type": "function",
            "function": { "name": "lookup_order", "arguments": r#"{"order":"AB-1"}"# },
        });
        (
            json!({"role": "assistant", "content": null, "refusal": null, "annotations": [], "tool_calls": [call]}),
            "tool_calls",
        )
    } else {
        (
            json!({"role": "assistant", "content": ANSWER, "refusal": null, "annotations": []}),
            "stop",
        )
    };
    axum::Json(json!({
        "id": format!("chatcmpl-{n}"),
        "object": "chat.completion",
        "created": 1_796_000_000,
        "model": "gpt-5.5-2026-09-01",
        "choices": [{ "index": 0, "message": message, "logprobs": null, "finish_reason": finish_reason }],
        "usage": {
            "prompt_tokens": 120, "completion_tokens": 20, "total_tokens": 140,
            "prompt_tokens_details": { "cached_tokens": 0, "audio_tokens": 0 },
            "completion_tokens_details": { "reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0 },
        },
        "service_tier": "default",
        "system_fingerprint": null,
    }))
    .into_response()
}

/// `POST /v1/messages` as Anthropic answers it.
async fn messages(
    State(api): State<Arc<Api>>,
    headers: HeaderMap,
    body: String,
) -> axum::response::Response {
    let invalid = |message: &str| {
        let error = json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}, "request_id": "req_011CTest"});
        (StatusCode::BAD_REQUEST, axum::Json(error)).into_response()
    };
    let Ok(request) = serde_json::from_str::<Value>(&body) else {
        return invalid("There was an issue with the request body: not JSON");
    };
    api.requests
        .lock()
        .unwrap()
        .push((headers.clone(), request.clone()));
    if header(&headers, "x-api-key") != Some(KEY) {
        let error = json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}, "request_id": "req_011CTest"});
        return (StatusCode::UNAUTHORIZED, axum::Json(error)).into_response();
    }
    if header(&headers, "anthropic-version").is_none() {
        return invalid("anthropic-version: header is required");
    }
    if !request["max_tokens"].is_u64() {
        return invalid("max_tokens: Field required");
    }
    let n = api.n.fetch_add(1, Ordering::SeqCst) + 1;
    let answered = request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .any(|block| block["type"] == "tool_result");
    let (content, stop_reason) = if api.calls_forever || !answered {
        (
            json!([
                { "type": "text", "text": "Let me look that up." },
                { "type": "tool_use", "id": format!("toolu_0{n}"), "name": "lookup_order", "input": { "order": "AB-1" } },
            ]),
            "tool_use",
        )
    } else {
        (json!([{ "type": "text", "text": ANSWER }]), "end_turn")
    };
    axum::Json(json!({
        "id": format!("msg_0{n}"),
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": null,
        "usage": {
            "input_tokens": 120, "output_tokens": 20,
            "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
            "server_tool_use": null, "service_tier": "standard",
        },
    }))
    .into_response()
}

/// Both fake APIs on loopback; the base URL (Chat's is `{base}/v1`, Anthropic's `{base}`).
async fn serve(api: Arc<Api>) -> String {
    let app = Router::new()
        .route("/v1/chat/completions", post(chat_completions))
        .route("/v1/messages", post(messages))
        .with_state(api);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
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

/// A GPT-Live session whose client delegation runs on `model`: the transcript, then a
/// delegation; the event the live model was sent (`session.commentary.append` or
/// `session.thinking.append`, whichever came).
async fn delegate(registry: Arc<Registry>, model: impl ChatModel) -> (String, Value) {
    let mut config = SessionConfig::for_provider(&registry, RealtimeProvider::GptLive);
    config.client_delegate = Some(chat_delegate(registry.clone(), model));
    let mut h = Wire::new(RealtimeSession::new(registry, Arc::new(config)));
    h.model(&script::session_started("sess_1"));
    for (kind, delta) in [
        ("session.input_transcript.delta", "Where is my order AB-1?"),
        ("session.output_transcript.delta", "Let me look."),
    ] {
        h.model(&json!({"type": kind, "event_id": "evt_t", "delta": delta, "start_ms": 0, "end_ms": 10}));
    }
    h.model(&script::delegation_created("dlg_1", "client"));
    h.settle(|w| {
        !w.model_events_of("session.commentary.append").is_empty()
            || !w.model_events_of("session.thinking.append").is_empty()
    })
    .await;
    for kind in ["session.commentary.append", "session.thinking.append"] {
        if let Some(event) = h.model_events_of(kind).into_iter().next().cloned() {
            return (kind.to_owned(), event);
        }
    }
    unreachable!("settled on one of them")
}

fn prompt_has_transcript(text: &str) {
    assert!(
        text.contains("user: Where is my order AB-1?\nassistant: Let me look."),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_delegation_runs_on_chat_completions() {
    let api = Arc::new(Api::default());
    let base = serve(api.clone()).await;
    let looked_up = Arc::new(Mutex::new(Vec::new()));
    let registry = registry(looked_up.clone());
    let model = ChatCompletionsModel::new(&format!("{base}/v1"), KEY, "gpt-5.5")
        .unwrap()
        .instructions("Be brief.");
    let (kind, event) = delegate(registry, model).await;
    assert_eq!(kind, "session.commentary.append", "{event:#}");
    assert_eq!(event["delegation_id"], "dlg_1");
    assert_eq!(event["content"], ANSWER);
    assert_eq!(*looked_up.lock().unwrap(), vec![json!({"order": "AB-1"})]);

    let bodies = api.bodies();
    assert_eq!(bodies.len(), 2, "{bodies:#?}");
    // The first: system, then the transcript as a user message; the server tool in Chat's
    // format (the client tool cannot run without the page).
    let first = &bodies[0];
    assert_eq!(first["model"], "gpt-5.5");
    assert_eq!(
        first["messages"][0],
        json!({"role": "system", "content": "Be brief."})
    );
    assert_eq!(first["messages"][1]["role"], "user");
    prompt_has_transcript(first["messages"][1]["content"].as_str().unwrap());
    let tools = first["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1, "{tools:#?}");
    assert_eq!(tools[0]["type"], "function");
    assert_eq!(tools[0]["function"]["name"], "lookup_order");
    assert_eq!(tools[0]["function"]["strict"], true);
    assert!(tools[0]["function"].get("type").is_none());
    // The second resends the conversation with the model's call and then its result.
    let second = bodies[1]["messages"].as_array().unwrap();
    assert_eq!(second.len(), 4, "{second:#?}");
    assert_eq!(second[2]["role"], "assistant");
    assert_eq!(second[2]["tool_calls"][0]["id"], "call_1");
    assert_eq!(second[3]["role"], "tool");
    assert_eq!(second[3]["tool_call_id"], "call_1");
    let output: Value = serde_json::from_str(second[3]["content"].as_str().unwrap()).unwrap();
    assert_eq!(output["status"], "shipped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_delegation_runs_on_anthropic_messages() {
    let api = Arc::new(Api::default());
    let base = serve(api.clone()).await;
    let looked_up = Arc::new(Mutex::new(Vec::new()));
    let registry = registry(looked_up.clone());
    let model = AnthropicModel::new(&base, KEY, "claude-sonnet-4-5")
        .unwrap()
        .instructions("Be brief.")
        .max_tokens(512);
    let (kind, event) = delegate(registry, model).await;
    assert_eq!(kind, "session.commentary.append", "{event:#}");
    assert_eq!(event["content"], ANSWER);
    assert_eq!(*looked_up.lock().unwrap(), vec![json!({"order": "AB-1"})]);

    let requests = api.requests.lock().unwrap();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    for (headers, _) in requests.iter() {
        assert_eq!(header(headers, "x-api-key"), Some(KEY));
        assert_eq!(
            header(headers, "anthropic-version"),
            Some(ANTHROPIC_VERSION)
        );
        assert!(headers.get("authorization").is_none());
    }
    let first = &requests[0].1;
    assert_eq!(first["model"], "claude-sonnet-4-5");
    assert_eq!(first["max_tokens"], 512);
    assert_eq!(first["system"], "Be brief.");
    assert_eq!(first["messages"].as_array().unwrap().len(), 1);
    assert_eq!(first["messages"][0]["role"], "user");
    prompt_has_transcript(first["messages"][0]["content"].as_str().unwrap());
    let tools = first["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1, "{tools:#?}");
    assert_eq!(tools[0]["name"], "lookup_order");
    assert_eq!(tools[0]["input_schema"]["required"], json!(["order"]));
    // The second: the model's turn replayed whole (its text and tool_use), then ONE user
    // message with the tool_result.
    let second = requests[1].1["messages"].as_array().unwrap();
    assert_eq!(second.len(), 3, "{second:#?}");
    assert_eq!(second[1]["role"], "assistant");
    assert_eq!(second[1]["content"][1]["type"], "tool_use");
    assert_eq!(second[2]["role"], "user");
    let result = &second[2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "toolu_01");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_key_is_the_apis_401_with_its_message() {
    let api = Arc::new(Api::default());
    let base = serve(api.clone()).await;
    let registry = registry(Arc::default());
    let runner = TurnRunner::new(registry.clone());

    let chat = ChatCompletionsModel::new(&format!("{base}/v1"), "sk-wrong", "gpt-5.5").unwrap();
    let err = chat.answer(&runner, "hi").await.unwrap_err();
    assert!(
        matches!(&err, ModelError::Api { status: 401, code: Some(code), message } if code == "invalid_api_key" && message.starts_with("Incorrect API key")),
        "{err:?}"
    );
    assert!(!format!("{chat:?}").contains("sk-wrong"));

    let anthropic = AnthropicModel::new(&base, "sk-ant-wrong", "claude-sonnet-4-5").unwrap();
    let err = anthropic.answer(&runner, "hi").await.unwrap_err();
    assert_eq!(
        err,
        ModelError::Api {
            status: 401,
            message: "invalid x-api-key".into(),
            code: Some("authentication_error".into()),
        }
    );
    assert!(!err.to_string().contains("sk-ant-wrong"));
    assert!(!format!("{anthropic:?}").contains("sk-ant-wrong"));

    // Through the delegate: silent context, nothing of the error's text.
    let (kind, event) = delegate(registry, anthropic).await;
    assert_eq!(kind, "session.thinking.append");
    assert_eq!(event["content"], FAILED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_keeps_calling_tools_is_stopped_on_every_api() {
    let api = Arc::new(Api {
        calls_forever: true,
        ..Api::default()
    });
    let base = serve(api.clone()).await;
    let registry = registry(Arc::default());
    let runner = TurnRunner::new(registry);

    let chat = ChatCompletionsModel::new(&format!("{base}/v1"), KEY, "gpt-5.5")
        .unwrap()
        .max_turns(3);
    assert_eq!(
        chat.answer(&runner, "loop").await.unwrap_err(),
        ModelError::TooManyTurns(3)
    );
    assert_eq!(api.bodies().len(), 3);

    let anthropic = AnthropicModel::new(&base, KEY, "claude-sonnet-4-5")
        .unwrap()
        .max_turns(2);
    assert_eq!(
        anthropic.answer(&runner, "loop").await.unwrap_err(),
        ModelError::TooManyTurns(2)
    );
    let bodies = api.bodies();
    assert_eq!(bodies.len(), 5);
    // Each request resends the conversation, grown by the model's turn and its result.
    assert_eq!(bodies[4]["messages"].as_array().unwrap().len(), 3);
}
