//! `--provider gpt-live --sideband`: the example binary opens the page's WebRTC session with a
//! fake Live API (axum on loopback, answering as the SDK's `LiveCreateResponse`), attaches to
//! it on the scripted fake model as a sideband, and serves the tools from there while the page's
//! websocket carries the browser protocol only.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::{Child, Command};
use toolc_runtime::realtime::script::gpt_live as script;
use toolc_runtime::relay::axum;
use toolc_runtime::relay::testing::{FakeModel, Script, Step, TestBrowser};

const LIMIT: Duration = Duration::from_secs(20);
const KEY: &str = "sk-sideband-secret";
const SESSION_ID: &str = "sess_fake_1";
const ANSWER_SDP: &str = "v=0\r\no=- 42 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n";
const OFFER_SDP: &str =
    "v=0\r\no=- 7 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\n";

/// What the fake Live API received: the `Authorization` header and the body of each request.
type Seen = Arc<Mutex<Vec<(Option<String>, Value)>>>;

/// A fake `POST /v1/live/sessions` that answers as OpenAI's SDK's `LiveCreateResponse` says.
async fn fake_live_api() -> (String, Seen) {
    let seen: Seen = Arc::default();
    let state = seen.clone();
    let app = axum::Router::new().route(
        "/v1/live/sessions",
        axum::routing::post(move |headers: axum::http::HeaderMap, body: String| {
            let state = state.clone();
            async move {
                let auth = headers
                    .get("authorization")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
                state.lock().unwrap().push((auth, body));
                let answer = json!({
                    "session": { "id": SESSION_ID },
                    "transport": { "type": "webrtc", "sdp": ANSWER_SDP },
                });
                ([("content-type", "application/json")], answer.to_string())
            }
        }),
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}/v1"), seen)
}

/// A Live API that refuses the key, quoting part of it as OpenAI does.
async fn refusing_live_api() -> String {
    let app = axum::Router::new().route(
        "/v1/live/sessions",
        axum::routing::post(|| async {
            let error = json!({"error": {
                "message": format!("Incorrect API key provided: {}****", &KEY[..10]),
                "type": "invalid_request_error", "code": "invalid_api_key",
            }});
            (axum::http::StatusCode::UNAUTHORIZED, error.to_string())
        }),
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{addr}/v1")
}

/// The relay in sideband mode; returns it, its address and its stderr lines as they come.
async fn start(
    model: &FakeModel,
    api: &str,
    extra: &[&str],
) -> (Child, String, Arc<Mutex<Vec<String>>>) {
    let base = model.url();
    let host = base.split("/v1/").next().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_realtime-relay"))
        .args([
            "--listen",
            "127.0.0.1:0",
            "--provider",
            "gpt-live",
            "--sideband",
        ])
        .args(["--upstream", &format!("{host}/v1/live/sessions")])
        .args(["--live-api", api, "--api-key-env", "SIDEBAND_TEST_KEY"])
        .args(extra)
        .env("SIDEBAND_TEST_KEY", KEY)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the example binary starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(LIMIT, lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let addr = first
        .strip_prefix("listening on ws://")
        .expect(&first)
        .trim_end_matches('/')
        .to_owned();
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let errors: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = errors.clone();
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    tokio::spawn(async move {
        while let Ok(Some(line)) = stderr.next_line().await {
            sink.lock().unwrap().push(line);
        }
    });
    (child, addr, errors)
}

/// One HTTP/1.1 exchange on loopback; the status and the body.
async fn http(addr: &str, head: &str, body: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "{head}\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    tokio::time::timeout(LIMIT, stream.read_to_end(&mut response))
        .await
        .expect("the relay answers")
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

/// The page opens its session: the SDP offer in, the answer and a ticket out.
async fn open_session(addr: &str, extra_headers: &str) -> (u16, Value, String) {
    let head =
        format!("POST /gpt-live/sessions HTTP/1.1\r\nContent-Type: application/sdp{extra_headers}");
    let (status, body) = http(addr, &head, OFFER_SDP).await;
    let value = serde_json::from_str(&body).unwrap_or(Value::Null);
    (status, value, body)
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Checks `create {..}` / `client {..}` / `server {..}` lines with OpenAI's SDK
/// (`tests/gpt-live/validate.py`), members it does not define refused.
fn validate_with_openais_sdk(lines: &str) {
    let python = repo().join("tests/mcp/.venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup (it installs OpenAI's SDK there)",
        python.display()
    );
    let dir = std::env::temp_dir().join(format!("relay-sideband-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("events.jsonl");
    std::fs::write(&file, lines).unwrap();
    let out = std::process::Command::new(&python)
        .arg(repo().join("tests/gpt-live/validate.py"))
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

/// The backend delegation the attached model plays: a server search and a client highlight in
/// one response, then (after the relay's one continuation) a closing response.
fn conversation() -> Script {
    let mut script = Script::new()
        .wait_for("session.update", 1)
        .send(script::delegation_created("d1", "responses"))
        .send_all(script::response_with_calls(
            "d1",
            "resp_1",
            &[
                (
                    "c_search",
                    "search_help_articles",
                    r#"{"query":"refund","limit":2}"#,
                ),
                (
                    "c_hl",
                    "highlight_element",
                    r##"{"selector":"#refund-button","color":"yellow"}"##,
                ),
            ],
        ))
        .wait_for("response.create", 1);
    script.steps.extend(
        script::response_with_calls("d1", "resp_2", &[])
            .into_iter()
            .map(Step::Send),
    );
    script
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_relay_opens_the_pages_session_and_serves_its_tools_from_a_sideband() {
    let model = FakeModel::start(conversation()).await.unwrap();
    let (api, seen) = fake_live_api().await;
    let (_relay, addr, _) = start(&model, &api, &[]).await;

    // The page's session: the offer goes to the Live API with the key and the tools; the page
    // gets the answer and a ticket, not the key, nor the session id.
    let (status, opened, raw) = open_session(&addr, "").await;
    assert_eq!(status, 201, "{raw}");
    assert_eq!(opened["sdp"], ANSWER_SDP);
    let ticket = opened["ticket"].as_str().unwrap().to_owned();
    assert_eq!(ticket.len(), 64);
    assert!(!raw.contains(KEY) && !raw.contains(SESSION_ID), "{raw}");
    let created = seen.lock().unwrap().clone();
    assert_eq!(created.len(), 1);
    assert_eq!(created[0].0.as_deref(), Some(&*format!("Bearer {KEY}")));
    let body = &created[0].1;
    assert_eq!(
        body["transport"],
        json!({"type": "webrtc", "sdp": OFFER_SDP})
    );
    let tools = body["session"]["delegation"]["responses"]["tools"]
        .as_array()
        .unwrap();
    assert_eq!(tools.len(), 6);
    // The page's data channel carries no call events and no server commands.
    let channel = &body["session"]["client"]["data_channel"];
    let allowed = channel["allowed_client_events"].to_string();
    assert!(
        !allowed.contains("response.") && !allowed.contains("commentary"),
        "{allowed}"
    );
    assert!(!channel["allowed_server_events"]
        .to_string()
        .contains("response.output_item.done"));

    // Without the ticket, with a made-up one: no session.
    let no_ticket = TestBrowser::connect(&format!("ws://{addr}/")).await;
    assert!(no_ticket.is_err(), "a page without a ticket is refused");
    let forged = format!("ws://{addr}/?sideband={}", "0".repeat(64));
    assert!(TestBrowser::connect(&forged).await.is_err());
    assert_eq!(model.connection_count(), 0, "nothing attached for them");

    let mut page = TestBrowser::connect(&format!("ws://{addr}/?sideband={ticket}"))
        .await
        .expect("the page connects with its ticket");
    let conn = model
        .connection(0, LIMIT)
        .await
        .expect("the relay attached");
    assert!(
        conn.wait_for("session.update", 1, LIMIT).await,
        "the tools, first"
    );
    assert_eq!(
        conn.path(),
        format!("/v1/live/sessions/{SESSION_ID}/attach")
    );
    assert_eq!(
        conn.authorization().as_deref(),
        Some(&*format!("Bearer {KEY}"))
    );

    // The client call reaches the page over the relay's socket; the server call never does.
    let (call, before) = page
        .next_matching(LIMIT, |e| e["type"] == "function_call")
        .await;
    let call = call.expect("the client call");
    assert_eq!(call["call_id"], "c_hl");
    assert_eq!(call["name"], "highlight_element");
    assert!(page
        .send(&json!({"type": "function_call.result", "call_id": "c_hl", "output": "{\"found\":true}"}))
        .await);
    // A model event on the relay's socket is refused: it goes over the page's data channel.
    assert!(page.send(&json!({"type": "response.create"})).await);
    let (refusal, after) = page
        .next_matching(LIMIT, |e| e["error"]["code"] == "sideband_model_event")
        .await;
    assert!(refusal.is_some(), "{after:?}");
    assert!(conn.wait_for("response.create", 1, LIMIT).await);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let received = conn.events();
    let outputs: Vec<(&str, &str)> = received
        .iter()
        .filter(|e| e["item"]["type"] == "function_call_output")
        .map(|e| {
            (
                e["item"]["call_id"].as_str().unwrap(),
                e["item"]["output"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(outputs.len(), 2, "{received:?}");
    assert!(outputs
        .iter()
        .any(|(id, out)| *id == "c_search" && out.contains("articles")));
    assert!(outputs.contains(&("c_hl", r#"{"found":true}"#)));
    assert_eq!(conn.count("response.create"), 1, "one continuation");
    assert_eq!(
        received[0]["type"], "session.update",
        "a sideband never starts the session"
    );
    // The page saw the browser protocol only: no model event, no trace of the server call.
    let seen_by_page = serde_json::to_string(&[before, after].concat()).unwrap();
    assert!(!seen_by_page.contains("c_search") && !seen_by_page.contains("response.event"));
    assert!(!seen_by_page.contains(KEY));

    // The ticket was used up.
    let again = format!("ws://{addr}/?sideband={ticket}");
    assert!(TestBrowser::connect(&again).await.is_err());

    // Everything on the wire in the shapes of OpenAI's SDK.
    let mut lines = format!("create {body}\n");
    for event in &received {
        lines.push_str(&format!("client {event}\n"));
    }
    for step in conversation().steps {
        if let Step::Send(event) = step {
            lines.push_str(&format!("server {event}\n"));
        }
    }
    validate_with_openais_sdk(&lines);
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_answering_a_server_call_is_reported() {
    // The search needs approval here, so it stays open while the page is asked.
    let manifest = std::env::temp_dir().join(format!("sideband-{}.tools.yaml", std::process::id()));
    let support = std::fs::read_to_string(repo().join("manifests/support.tools.yaml")).unwrap();
    let approved = support.replacen(
        "    location: server\n",
        "    location: server\n    approval: required\n",
        1,
    );
    assert_ne!(approved, support);
    std::fs::write(&manifest, approved).unwrap();
    let model = FakeModel::start(
        Script::new()
            .wait_for("session.update", 1)
            .send(script::delegation_created("d1", "responses"))
            .send_all(script::response_with_calls(
                "d1",
                "resp_1",
                &[(
                    "c_search",
                    "search_help_articles",
                    r#"{"query":"refund","limit":2}"#,
                )],
            ))
            .sleep(Duration::from_millis(300))
            // The backend goes on in the same delegation although the relay asked for nothing:
            // someone (the page, over its data channel) answered the call.
            .send(script::response_event(
                "d1",
                90,
                script::lifecycle("response.created", "resp_2", "in_progress", 0),
            )),
    )
    .await
    .unwrap();
    let (api, _) = fake_live_api().await;
    let manifest_arg = manifest.display().to_string();
    let (_relay, addr, errors) = start(&model, &api, &["--manifest", &manifest_arg]).await;
    let (status, opened, _) = open_session(&addr, "").await;
    assert_eq!(status, 201);
    let ticket = opened["ticket"].as_str().unwrap();
    let mut page = TestBrowser::connect(&format!("ws://{addr}/?sideband={ticket}"))
        .await
        .unwrap();
    let (asked, _) = page
        .next_matching(LIMIT, |e| e["type"] == "toolc.approval.request")
        .await;
    let asked = asked.expect("the page is asked to approve the search");
    let reported = async {
        loop {
            if errors
                .lock()
                .unwrap()
                .iter()
                .any(|l| l.contains("answered elsewhere") && l.contains("c_search"))
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(LIMIT, reported)
        .await
        .unwrap_or_else(|_| panic!("no report: {:?}", errors.lock().unwrap()));
    // The relay's own answer still goes, once.
    assert!(page
        .send(&json!({"type": "toolc.approval.response", "approval_id": asked["approval_id"], "approved": true}))
        .await);
    let conn = model.connection(0, LIMIT).await.unwrap();
    assert!(
        conn.wait_until(LIMIT, |texts| texts
            .iter()
            .any(|t| t.contains("function_call_output")))
            .await
    );
    let _ = std::fs::remove_file(&manifest);
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_endpoint_takes_the_relays_users_and_only_sdp() {
    let model = FakeModel::start(Script::new()).await.unwrap();
    let (api, seen) = fake_live_api().await;
    let tokens = std::env::temp_dir().join(format!("sideband-tokens-{}", std::process::id()));
    std::fs::write(
        &tokens,
        "tok-ann-0123456789abcdef ann\ntok-bob-0123456789abcdef bob\n",
    )
    .unwrap();
    let tokens_arg = tokens.display().to_string();
    let (_relay, addr, _) = start(&model, &api, &["--auth-tokens", &tokens_arg]).await;

    // Nobody, a stranger: refused before anything is opened on the API key.
    assert_eq!(open_session(&addr, "").await.0, 401);
    assert_eq!(
        open_session(&addr, "\r\nAuthorization: Bearer nope")
            .await
            .0,
        401
    );
    // Not an SDP offer.
    let (status, _) = http(
        &addr,
        "POST /gpt-live/sessions HTTP/1.1\r\nAuthorization: Bearer tok-ann-0123456789abcdef\r\nContent-Type: application/json",
        "{\"session\":{}}",
    )
    .await;
    assert_eq!(status, 415);
    assert!(seen.lock().unwrap().is_empty(), "no session was opened");

    // Ann's ticket is Ann's: Bob cannot attach with it, and it is then used up.
    let (status, opened, _) =
        open_session(&addr, "\r\nAuthorization: Bearer tok-ann-0123456789abcdef").await;
    assert_eq!(status, 201);
    let ticket = opened["ticket"].as_str().unwrap();
    let url = format!("ws://{addr}/?sideband={ticket}");
    let as_bob = TestBrowser::connect_with(
        &url,
        &[("authorization", "Bearer tok-bob-0123456789abcdef")],
    )
    .await;
    assert!(as_bob.is_err(), "another user's ticket is refused");
    let as_ann = TestBrowser::connect_with(
        &url,
        &[("authorization", "Bearer tok-ann-0123456789abcdef")],
    )
    .await;
    assert!(as_ann.is_err(), "a ticket shown to someone else is spent");
    assert_eq!(model.connection_count(), 0);
    let _ = std::fs::remove_file(&tokens);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_session_is_a_bad_gateway_that_quotes_nothing_of_the_key() {
    let model = FakeModel::start(Script::new()).await.unwrap();
    let api = refusing_live_api().await;
    let (_relay, addr, errors) = start(&model, &api, &[]).await;
    let (status, answer, raw) = open_session(&addr, "").await;
    assert_eq!(status, 502, "{raw}");
    assert_eq!(
        answer["error"]["message"],
        "the Live API refused the session (401 Unauthorized)"
    );
    assert!(!raw.contains(&KEY[..10]), "{raw}");
    // The operator's log says why.
    let logged = async {
        while !errors
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains("Incorrect API key"))
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(LIMIT, logged)
        .await
        .unwrap_or_else(|_| panic!("not logged: {:?}", errors.lock().unwrap()));
    assert_eq!(model.connection_count(), 0);
}
