//! The demo server in-process, on loopback, with a test browser standing in for the page: the
//! HTTP side (page files, config, refusals) and the whole scripted conversation through the
//! relay. The real page in a real browser is tested by `npm test` in `web/`.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use toolc_runtime::realtime::RealtimeProvider;
use toolc_runtime::relay::testing::TestBrowser;
use voice_agent::{conversation, Model, Options, Server};

const LIMIT: Duration = Duration::from_secs(10);

async fn start() -> String {
    start_with(RealtimeProvider::OpenAi).await
}

async fn start_with(provider: RealtimeProvider) -> String {
    let mut options = Options::new("127.0.0.1:0");
    options.provider = provider;
    options.model = Model::Scripted {
        pace: Duration::ZERO,
    };
    options.test_endpoints = true;
    let server = Server::bind(options).await.expect("the demo starts");
    let addr = server.local_addr().unwrap();
    tokio::spawn(server.serve());
    addr.to_string()
}

/// One raw HTTP exchange; returns the status and the body.
async fn request(addr: &str, head: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    tokio::time::timeout(LIMIT, stream.read_to_end(&mut response))
        .await
        .expect("the server answers and closes")
        .unwrap();
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

async fn get(addr: &str, path: &str) -> (u16, String) {
    request(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_and_its_settings_are_served_and_nothing_else() {
    let addr = start().await;
    let (status, body) = get(&addr, "/").await;
    assert_eq!(status, 200);
    assert!(body.contains(r#"<script type="module" src="dist/main.js">"#));
    let (status, body) = get(&addr, "/style.css").await;
    assert_eq!(status, 200);
    assert!(body.contains("[data-highlight]"));

    let (status, body) = get(&addr, "/config.json").await;
    assert_eq!(status, 200);
    let config: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        config,
        json!({"mode": "scripted", "provider": "openai", "question": conversation::QUESTION})
    );

    for path in [
        "/../Cargo.toml",
        "/package.json",
        "/build.mjs",
        "/dist/../../src/lib.rs",
        "/nope.html",
    ] {
        assert_eq!(get(&addr, path).await.0, 404, "{path}");
    }
    let (status, _) = request(
        &addr,
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(status, 405);
    assert_eq!(request(&addr, "NONSENSE\r\n\r\n").await.0, 400);
    // A head larger than hyper reads (about 400 KiB), without a terminator.
    let huge = format!("GET / HTTP/1.1\r\nX: {}", "a".repeat(420_000));
    assert_eq!(request(&addr, &huge).await.0, 431);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_sites_page_cannot_open_the_relay() {
    let addr = start().await;
    let handshake = |origin: &str| {
        format!(
            "GET / HTTP/1.1\r\nHost: {addr}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
             Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
             Origin: {origin}\r\n\r\n"
        )
    };
    // A refusal is an ordinary response on a kept-alive connection: ask for it to be closed.
    let refused = handshake("https://elsewhere.example")
        .replace("Connection: Upgrade", "Connection: Upgrade, close");
    let (status, body) = request(&addr, &refused).await;
    assert_eq!(status, 403, "{body}");

    // The page's own origin is let in (101), and the model connection is opened.
    let mut stream = TcpStream::connect(&addr).await.unwrap();
    stream
        .write_all(handshake(&format!("http://{addr}")).as_bytes())
        .await
        .unwrap();
    let mut buf = [0u8; 256];
    let n = tokio::time::timeout(LIMIT, stream.read(&mut buf))
        .await
        .unwrap()
        .unwrap();
    let head = String::from_utf8_lossy(&buf[..n]);
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    assert!(head
        .to_ascii_lowercase()
        .contains("sec-websocket-accept: s3pplmbitxaq9kygzzhzrbk+xoo="));
}

/// Plays the page: reads events until every tool in `names` has been called and `approvals`
/// approval requests came (each approved), answering the waiting calls with `answers(name)`.
/// Calls of one response reach the page in any order (each runs on its own task). Returns the
/// calls and every event read.
async fn take_calls(
    browser: &mut TestBrowser,
    names: &[&str],
    approvals: usize,
    answers: impl Fn(&str) -> Option<Value>,
) -> (Vec<Value>, Vec<Value>) {
    let mut calls: Vec<Value> = Vec::new();
    let mut events = Vec::new();
    let mut approved = 0;
    while calls.len() < names.len() || approved < approvals {
        let Some(event) = browser.next_event(LIMIT).await else {
            panic!("calls {names:?} did not all arrive; got {events:?}");
        };
        if event["type"] == "toolc.approval.request" {
            assert_eq!(event["name"], "submit_refund_request", "{event}");
            assert_eq!(event["arguments"]["order_number"], "AB-123456");
            let yes = json!({
                "type": "toolc.approval.response",
                "approval_id": event["approval_id"],
                "approved": true,
            });
            assert!(browser.send(&yes).await);
            approved += 1;
        }
        if event["type"] == "function_call" {
            let name = event["name"].as_str().unwrap_or_default().to_owned();
            assert!(names.contains(&name.as_str()), "unexpected call {event}");
            if let Some(output) = answers(&name) {
                let reply = json!({
                    "type": "function_call.result",
                    "call_id": event["call_id"],
                    "output": output.to_string(),
                });
                assert!(browser.send(&reply).await);
            }
            calls.push(event.clone());
        }
        events.push(event);
    }
    (calls, events)
}

fn answer(name: &str) -> Option<Value> {
    match name {
        "highlight_element" => Some(json!({"found": true})),
        "scroll_to_section" => Some(json!({"scrolled": true})),
        "fill_form_field" => Some(json!({"filled": true})),
        // Fire-and-forget: a page sends no reply.
        _ => None,
    }
}

/// What the customer's question is on each provider's wire: a user message, then (OpenAI) a
/// request for a response; Live answers a `clientContent` that completes the user's turn.
fn question(provider: RealtimeProvider) -> Vec<Value> {
    match provider {
        RealtimeProvider::OpenAi => vec![
            json!({
                "type": "conversation.item.create",
                "item": {"type": "message", "role": "user",
                         "content": [{"type": "input_text", "text": conversation::QUESTION}]},
            }),
            json!({"type": "response.create"}),
        ],
        // GPT-Live takes the customer's voice only: 100 ms chunks of PCM16 at 24 kHz (silence
        // here; the page sends a tone), which the scripted model transcribes as the question.
        RealtimeProvider::GptLive => {
            let silence = "AAAA".repeat(4800 / 3);
            (0..conversation::GPT_LIVE_CLIP_CHUNKS)
                .map(|_| json!({"type": "session.input_audio.append", "audio": silence}))
                .collect()
        }
        RealtimeProvider::GeminiLive | RealtimeProvider::VertexLive => vec![json!({
            "clientContent": {
                "turns": [{"role": "user", "parts": [{"text": conversation::QUESTION}]}],
                "turnComplete": true,
            }
        })],
    }
}

/// The results the model received, by call id, and how many times it was asked to go on
/// (OpenAI: every `response.create`, the customer's included; Live: every `toolResponse`).
fn results_and_continuations(
    provider: RealtimeProvider,
    received: &[Value],
) -> (Vec<(String, Value)>, usize) {
    let mut results = Vec::new();
    let mut continuations = 0;
    for event in received {
        match provider {
            // OpenAI: results as conversation items; GPT-Live: as the backend's items.
            RealtimeProvider::OpenAi | RealtimeProvider::GptLive => {
                if event["type"] == "response.create" {
                    continuations += 1;
                }
                if event["item"]["type"] == "function_call_output" {
                    let output = event["item"]["output"].as_str().unwrap();
                    results.push((
                        event["item"]["call_id"].as_str().unwrap().to_owned(),
                        serde_json::from_str(output).unwrap(),
                    ));
                }
            }
            RealtimeProvider::GeminiLive | RealtimeProvider::VertexLive => {
                let Some(responses) = event["toolResponse"]["functionResponses"].as_array() else {
                    continue;
                };
                continuations += 1;
                for response in responses {
                    results.push((
                        response["id"].as_str().unwrap().to_owned(),
                        response["response"]["output"].clone(),
                    ));
                }
            }
        }
    }
    (results, continuations)
}

/// The whole scripted conversation through the relay, as a page plays it, on `provider`'s wire.
/// Returns what the model received and what the page received.
async fn conversation_runs_through_the_relay(
    provider: RealtimeProvider,
) -> (Vec<Value>, Vec<Value>) {
    let addr = start_with(provider).await;
    let mut browser = TestBrowser::connect(&format!("ws://{addr}/"))
        .await
        .expect("the relay accepts a page");
    for message in question(provider) {
        assert!(browser.send(&message).await);
    }

    let (first, mut seen) = take_calls(
        &mut browser,
        &["highlight_element", "scroll_to_section"],
        0,
        answer,
    )
    .await;
    assert_eq!(first.len(), 2);
    let (second, more) =
        take_calls(&mut browser, &["fill_form_field", "show_toast"], 1, answer).await;
    assert_eq!(second.len(), 2);
    seen.extend(more);
    let (closing, rest) = browser
        .next_matching(LIMIT, |e| match provider {
            RealtimeProvider::OpenAi => {
                e["type"] == "response.done" && e["response"]["id"] == "resp_demo_3"
            }
            RealtimeProvider::GptLive => {
                e["type"] == "response.event"
                    && e["event"]["type"] == "response.completed"
                    && e["event"]["response"]["id"] == "resp_demo_3"
            }
            RealtimeProvider::GeminiLive | RealtimeProvider::VertexLive => {
                e["serverContent"]["turnComplete"] == true
            }
        })
        .await;
    assert!(closing.is_some(), "no closing response; got {rest:?}");
    seen.extend(rest);
    let traces: Vec<&Value> = seen.iter().filter(|e| e["type"] == "toolc.trace").collect();
    assert!(
        traces
            .iter()
            .any(|t| t["name"] == "search_help_articles" && t["location"] == "server"),
        "{traces:?}"
    );

    let (status, body) = get(&addr, "/_test/model").await;
    assert_eq!(status, 200);
    let report: Value = serde_json::from_str(&body).unwrap();
    let received = report["connections"][0]["received"]
        .as_array()
        .unwrap()
        .clone();
    let (results, continuations) = results_and_continuations(provider, &received);
    let mut ids: Vec<&str> = results.iter().map(|(id, _)| id.as_str()).collect();
    ids.sort_unstable();
    assert_eq!(
        ids,
        [
            "call_demo_fill",
            "call_demo_highlight",
            "call_demo_scroll",
            "call_demo_search",
            "call_demo_submit",
            "call_demo_toast"
        ],
        "one result per call"
    );
    let asked = match provider {
        // The customer's response.create, then one continuation per response with calls.
        RealtimeProvider::OpenAi => 3,
        // One toolResponse per batch: the customer's clientContent started the turn.
        // Only the relay asks the backend to go on: one per backend response with calls.
        RealtimeProvider::GptLive => 2,
        RealtimeProvider::GeminiLive | RealtimeProvider::VertexLive => 2,
    };
    assert_eq!(continuations, asked, "{received:?}");
    assert_eq!(report["counters"]["continuations"], 2);
    assert_eq!(report["counters"]["server_calls"], 2);
    assert_eq!(report["counters"]["approvals_granted"], 1);
    assert_eq!(report["counters"]["results_accepted"], 3);
    let result = |id: &str| &results.iter().find(|(c, _)| c == id).unwrap().1;
    assert_eq!(
        result("call_demo_search")["articles"][0]["section"],
        "refunds"
    );
    assert_eq!(
        result("call_demo_submit")["status"],
        "submitted",
        "approved, so it ran"
    );
    assert_eq!(*result("call_demo_highlight"), json!({"found": true}));

    let text = serde_json::to_string(&seen).unwrap();
    assert!(!text.contains("call_demo_search"), "{text}");
    assert!(
        !text.contains("call_demo_submit"),
        "a server call's id stays on the server"
    );
    browser.close().await;
    (received, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scripted_conversation_runs_through_the_relay() {
    conversation_runs_through_the_relay(RealtimeProvider::OpenAi).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scripted_conversation_runs_through_the_relay_on_gemini_live() {
    conversation_runs_through_the_relay(RealtimeProvider::GeminiLive).await;
    let addr = start_with(RealtimeProvider::GeminiLive).await;
    let (_, body) = get(&addr, "/config.json").await;
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["provider"],
        "gemini-live"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scripted_conversation_runs_through_the_relay_on_gpt_live() {
    let (received, seen) = conversation_runs_through_the_relay(RealtimeProvider::GptLive).await;
    // The relay declared the tools to the delegated backend, in `session.start`.
    assert_eq!(received[0]["type"], "session.start");
    let tools = received[0]["session"]["delegation"]["responses"]["tools"]
        .as_array()
        .unwrap();
    assert_eq!(tools.len(), 7);
    assert_eq!(
        received[0]["session"]["audio"]["format"],
        json!({"type": "audio/pcm", "rate": 24000})
    );
    // The page's voice reached the model; the page asked for no response (only the relay may).
    assert_eq!(
        received
            .iter()
            .filter(|e| e["type"] == "session.input_audio.append")
            .count(),
        conversation::GPT_LIVE_CLIP_CHUNKS
    );
    // The page saw the customer's words and the agent's, as the model sent them.
    let said = |kind: &str| -> String {
        seen.iter()
            .filter(|e| e["type"] == kind)
            .filter_map(|e| e["delta"].as_str())
            .collect()
    };
    assert_eq!(
        said("session.input_transcript.delta"),
        conversation::QUESTION
    );
    assert!(said("session.output_transcript.delta").ends_with("Anything else I can do?"));

    // Every event of the conversation in the shapes of OpenAI's SDK: what the scripted model
    // sent, what the model received (the relay's and the page's), and what the page received
    // of the model's (scrubbed where it had server calls).
    let mut lines = String::new();
    for step in conversation::gpt_live_script(Duration::ZERO).steps {
        if let toolc_runtime::relay::testing::Step::Send(event) = step {
            lines.push_str(&format!("server {event}\n"));
        }
    }
    for event in &received {
        lines.push_str(&format!("client {event}\n"));
    }
    for event in seen.iter().filter(|e| {
        e["type"]
            .as_str()
            .is_some_and(toolc_runtime::realtime::gpt_live::is_server_event_type)
    }) {
        lines.push_str(&format!("server {event}\n"));
    }
    validate_with_openais_sdk(&lines);
}

/// Checks GPT-Live events (`client {..}` / `server {..}` lines) with OpenAI's SDK
/// (`tests/gpt-live/validate.py`, in the virtualenv `scripts/setup` makes): members the SDK does
/// not define are refused too.
fn validate_with_openais_sdk(lines: &str) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let python = repo.join("tests/mcp/.venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup (it installs OpenAI's SDK there)",
        python.display()
    );
    let dir = std::env::temp_dir().join(format!("voice-agent-gpt-live-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("events.jsonl");
    std::fs::write(&file, lines).unwrap();
    let out = std::process::Command::new(&python)
        .arg(repo.join("tests/gpt-live/validate.py"))
        .arg(&file)
        .output()
        .expect("the validator runs");
    let _ = std::fs::remove_dir_all(&dir);
    let report =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{report}");
    let count = lines.lines().count();
    assert!(
        report.contains(&format!("{count} accepted, 0 refused")),
        "{report}"
    );
}

#[test]
fn every_article_has_its_place_on_the_page() {
    let html =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("web/index.html"))
            .expect("web/index.html");
    let data = voice_agent::tools::Data::bundled().unwrap();
    for a in &data.articles {
        assert!(
            html.contains(&format!(r#"<section id="{}""#, a.section)),
            "section {} of {}",
            a.section,
            a.id
        );
        assert!(
            html.contains(&format!(r#"<article id="article-{}">"#, a.id)),
            "{}",
            a.id
        );
        assert!(
            html.contains(&format!("<h3>{}</h3>", a.title)),
            "{}",
            a.title
        );
        assert!(html.contains(&a.summary), "{}", a.summary);
    }
    // What the scripted conversation points at.
    assert!(html.contains(r#"id="refund-button""#));
    for field in ["name", "email", "order_number", "message"] {
        assert!(
            html.contains(&format!(r#"name="{field}""#)),
            "form field {field}"
        );
    }
}

async fn start_remote(url: String, api_key: Option<String>) -> String {
    let mut options = Options::new("127.0.0.1:0");
    options.model = Model::Remote { url, api_key };
    let server = Server::bind(options).await.expect("the demo starts");
    let addr = server.local_addr().unwrap();
    tokio::spawn(server.serve());
    addr.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_model_gets_the_key_and_the_page_does_not() {
    use toolc_runtime::relay::testing::{FakeModel, Script};
    let model = FakeModel::start(
        Script::new()
            .wait_for("session.update", 1)
            .send(json!({"type": "session.updated", "event_id": "e1", "session": {}})),
    )
    .await
    .unwrap();
    let addr = start_remote(model.url(), Some("sk-test-secret".into())).await;
    let (status, body) = get(&addr, "/config.json").await;
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["mode"],
        "remote"
    );
    assert_eq!(
        get(&addr, "/_test/model").await.0,
        404,
        "off unless asked for"
    );

    let mut browser = TestBrowser::connect(&format!("ws://{addr}/"))
        .await
        .unwrap();
    let first = browser.next_event(LIMIT).await.expect("the relay's event");
    assert_eq!(
        first["type"], "toolc.session",
        "the page's resume token comes first"
    );
    let updated = browser.next_event(LIMIT).await.expect("the model's event");
    assert_eq!(updated["type"], "session.updated");
    let conn = model.connection(0, LIMIT).await.unwrap();
    assert_eq!(
        conn.authorization().as_deref(),
        Some("Bearer sk-test-secret")
    );
    let update = &conn.events_of("session.update")[0];
    assert_eq!(update["session"]["tools"].as_array().unwrap().len(), 7);
    assert!(!updated.to_string().contains("sk-test-secret"));
    browser.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_live_model_gets_the_key_in_its_own_header_and_the_tools_in_setup() {
    use toolc_runtime::relay::testing::{FakeModel, Script};
    let model = FakeModel::start(
        Script::live()
            .wait_for("setup", 1)
            .send(toolc_runtime::realtime::script::live::setup_complete()),
    )
    .await
    .unwrap();
    let mut options = Options::new("127.0.0.1:0");
    options.provider = RealtimeProvider::GeminiLive;
    options.model = Model::Remote {
        url: model.url(),
        api_key: Some("AIza-test-secret".into()),
    };
    let server = Server::bind(options).await.expect("the demo starts");
    let addr = server.local_addr().unwrap();
    tokio::spawn(server.serve());

    let mut browser = TestBrowser::connect(&format!("ws://{addr}/"))
        .await
        .unwrap();
    let first = browser.next_event(LIMIT).await.expect("the relay's event");
    assert_eq!(
        first["type"], "toolc.session",
        "the page's resume token comes first"
    );
    let complete = browser
        .next_event(LIMIT)
        .await
        .expect("the model's message");
    assert_eq!(complete, json!({"setupComplete": {}}));
    let conn = model.connection(0, LIMIT).await.unwrap();
    assert_eq!(conn.google_api_key().as_deref(), Some("AIza-test-secret"));
    assert_eq!(conn.authorization(), None, "Live takes no bearer token");
    let setup = &conn.events_of("setup")[0];
    let declared = setup["setup"]["tools"][0]["functionDeclarations"]
        .as_array()
        .unwrap();
    assert_eq!(declared.len(), 7);
    let submit = declared
        .iter()
        .find(|d| d["name"] == "submit_refund_request")
        .unwrap();
    assert_eq!(submit["behavior"], "BLOCKING");
    browser.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_model_is_reported_to_the_page() {
    // Port 9 (discard) on loopback: nothing listens there in a test environment.
    let addr = start_remote("ws://127.0.0.1:9/v1/realtime".into(), Some("sk-x".into())).await;
    let mut browser = TestBrowser::connect(&format!("ws://{addr}/"))
        .await
        .unwrap();
    let error = browser.next_event(LIMIT).await.expect("an error event");
    assert_eq!(error["type"], "error");
    assert_eq!(error["error"]["code"], "upstream_unavailable");
    assert!(!error.to_string().contains("sk-x"), "{error}");
    assert_eq!(
        browser.next_close(LIMIT).await,
        Some((1011, "the relay could not reach the model".to_owned())),
        "then the page is closed, with a reason"
    );
}
