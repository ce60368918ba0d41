//! Runs the example binary against the scripted fake model and a test browser.

use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;
use toolc_runtime::realtime::script;
use toolc_runtime::relay::testing::{FakeModel, Script, TestBrowser};

mod common;

use common::{start_relay, start_relay_with_env};

const LIMIT: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_relays_a_support_conversation() {
    let model = FakeModel::start(
        Script::new()
            .wait_for("session.update", 1)
            .send_all(script::response_with_calls(
                "r1",
                &[
                    (
                        "call_search",
                        "search_help_articles",
                        r#"{"query":"refund"}"#,
                    ),
                    (
                        "call_hl",
                        "highlight_element",
                        r##"{"selector":"#refund-button"}"##,
                    ),
                    (
                        "call_toast",
                        "show_toast",
                        r#"{"message":"Opening refunds"}"#,
                    ),
                ],
            ))
            .wait_for("response.create", 1),
    )
    .await
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_realtime-relay"))
        .args(["--listen", "127.0.0.1:0", "--upstream", &model.url()])
        .args([
            "--api-key-env",
            "REALTIME_RELAY_TEST_KEY",
            "--filler-delay-ms",
            "0",
        ])
        .env("REALTIME_RELAY_TEST_KEY", "sk-example")
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the example binary starts");
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let first = tokio::time::timeout(LIMIT, lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let url = first
        .strip_prefix("listening on ")
        .expect(&first)
        .to_owned();

    let mut browser = TestBrowser::connect(&url).await.unwrap();
    let (call, _) = browser
        .next_matching(LIMIT, |e| {
            e["type"] == "function_call" && e["name"] == "highlight_element"
        })
        .await;
    let call = call.expect("the browser is asked to highlight");
    assert_eq!(call["arguments"], r##"{"selector":"#refund-button"}"##);
    assert!(browser.send(&json!({"type":"function_call.result","call_id":"call_hl","output":"{\"found\":true}"})).await);

    let upstream = model.connection(0, LIMIT).await.unwrap();
    assert!(upstream.wait_for("response.create", 1, LIMIT).await);
    assert_eq!(
        upstream.authorization().as_deref(),
        Some("Bearer sk-example")
    );
    let outputs = upstream.events_of("conversation.item.create");
    let output = |id: &str| -> Value {
        let o = outputs
            .iter()
            .find(|o| o["item"]["call_id"] == id)
            .expect(id);
        serde_json::from_str(o["item"]["output"].as_str().unwrap()).unwrap()
    };
    assert_eq!(output("call_search")["articles"][0]["id"], "request-refund");
    assert_eq!(output("call_hl")["found"], true);
    assert_eq!(output("call_toast")["status"], "sent");
    assert_eq!(outputs.len(), 3);
    assert_eq!(upstream.count("response.create"), 1);
    let _ = child.kill().await;
}

#[tokio::test]
async fn a_missing_key_variable_is_an_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_realtime-relay"))
        .args([
            "--listen",
            "127.0.0.1:0",
            "--api-key-env",
            "REALTIME_RELAY_SURELY_UNSET",
        ])
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("REALTIME_RELAY_SURELY_UNSET is not set"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_auth_tokens_each_customer_finds_only_their_own_orders() {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    use tokio_tungstenite::tungstenite::http::HeaderValue;

    let dir = std::env::temp_dir().join(format!("relay-auth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let tokens = dir.join("tokens");
    std::fs::write(
        &tokens,
        "# test tokens\nalice-token-0123456789 alice\nbob-token-0123456789ab bob\n",
    )
    .unwrap();
    let model = FakeModel::start(
        Script::new()
            .wait_for("session.update", 1)
            .send_all(script::response_with_calls(
                "r1",
                &[
                    (
                        "call_own",
                        "get_order_status",
                        r#"{"order_number":"AB-123456"}"#,
                    ),
                    (
                        "call_bobs",
                        "get_order_status",
                        r#"{"order_number":"CD-000001"}"#,
                    ),
                ],
            ))
            .wait_for("response.create", 1),
    )
    .await
    .unwrap();
    let (_child, url) = start_relay(&[
        "--listen",
        "127.0.0.1:0",
        "--upstream",
        &model.url(),
        "--auth-tokens",
        tokens.to_str().unwrap(),
        "--allow-origin",
        "https://shop.example",
    ])
    .await;

    // No token: 401, and no model session.
    match tokio_tungstenite::connect_async(url.as_str()).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(r)) => assert_eq!(r.status(), 401),
        other => panic!("expected a 401, got {:?}", other.map(|_| ())),
    }
    // A page of another origin: 403.
    let mut request = url.as_str().into_client_request().unwrap();
    let headers = request.headers_mut();
    headers.insert(
        "sec-websocket-protocol",
        HeaderValue::from_static("toolc, toolc.bearer.alice-token-0123456789"),
    );
    headers.insert("origin", HeaderValue::from_static("https://evil.example"));
    match tokio_tungstenite::connect_async(request.clone()).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(r)) => assert_eq!(r.status(), 403),
        other => panic!("expected a 403, got {:?}", other.map(|_| ())),
    }
    assert_eq!(model.connection_count(), 0);

    // Alice, from the shop's page, with her token as a subprotocol (what a browser can send).
    request
        .headers_mut()
        .insert("origin", HeaderValue::from_static("https://shop.example"));
    let (ws, response) = tokio_tungstenite::connect_async(request).await.unwrap();
    assert_eq!(
        response.headers()["sec-websocket-protocol"],
        "toolc",
        "the token is never echoed back"
    );
    let upstream = model.connection(0, LIMIT).await.unwrap();
    assert!(upstream.wait_for("response.create", 1, LIMIT).await);
    let outputs = upstream.events_of("conversation.item.create");
    let output = |id: &str| -> Value {
        let o = outputs
            .iter()
            .find(|o| o["item"]["call_id"] == id)
            .expect(id);
        serde_json::from_str(o["item"]["output"].as_str().unwrap()).unwrap()
    };
    assert_eq!(output("call_own")["status"], "delivered");
    assert_eq!(output("call_bobs")["error"]["code"], "not_found");
    drop(ws);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn without_auth_tokens_only_loopback_is_served() {
    let out = Command::new(env!("CARGO_BIN_EXE_realtime-relay"))
        .args(["--listen", "0.0.0.0:0"])
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("without authentication"), "{err}");
    assert!(err.contains("--auth-tokens FILE"), "{err}");
    // An operator behind an authenticating proxy says so explicitly.
    let (mut child, url) = start_relay(&["--listen", "0.0.0.0:0", "--insecure-no-auth"]).await;
    assert!(url.starts_with("ws://0.0.0.0:"), "{url}");
    let _ = child.kill().await;
}

/// Any manifest: its client tools go to the browser; a server tool the binary cannot execute is
/// refused at start with a pointer to the ten-line program that brings its executor.
#[tokio::test]
async fn any_manifest_of_client_tools_runs_and_a_foreign_server_tool_is_refused() {
    let dir = std::env::temp_dir().join(format!("relay-manifests-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let page = dir.join("page.tools.yaml");
    std::fs::write(
        &page,
        "version: 1\ntools:\n  - name: scroll_to\n    description: Scroll the page to a section.\n    location: client\n",
    )
    .unwrap();
    let support = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../manifests/support.tools.yaml"
    );
    let (mut child, _) = start_relay(&[
        "--listen",
        "127.0.0.1:0",
        "--manifest",
        page.to_str().unwrap(),
        support,
    ])
    .await;
    let _ = child.kill().await;

    let foreign = dir.join("billing.tools.yaml");
    std::fs::write(
        &foreign,
        "version: 1\ntools:\n  - name: refund_order\n    description: Refund an order.\n    location: server\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_realtime-relay"))
        .args(["--listen", "127.0.0.1:0", "--manifest"])
        .arg(&foreign)
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("refund_order"), "{err}");
    assert!(err.contains("A relay for your own tools"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn otlp_endpoint_exports_genai_spans_without_the_arguments() {
    use std::sync::{Arc, Mutex};
    use toolc_runtime::relay::axum::{self, body::Bytes, routing::post, Router};

    // A collector: every OTLP/HTTP request body it receives.
    let bodies: Arc<Mutex<Vec<Vec<u8>>>> = Arc::default();
    let kept = bodies.clone();
    let collector = Router::new().route(
        "/v1/traces",
        post(move |body: Bytes| {
            let kept = kept.clone();
            async move {
                kept.lock().unwrap().push(body.to_vec());
                ""
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}/v1/traces", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, collector).await });

    const SECRET: &str = "zebra-secret-query";
    let arguments = json!({ "query": SECRET }).to_string();
    let model = FakeModel::start(
        Script::new()
            .wait_for("session.update", 1)
            .send_all(script::response_with_calls(
                "resp_traced",
                &[("call_traced", "search_help_articles", &arguments)],
            ))
            .wait_for("response.create", 1),
    )
    .await
    .unwrap();
    let upstream = model.url();
    let (mut child, url) = start_relay_with_env(
        &[
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            &upstream,
            "--otlp-endpoint",
            &endpoint,
        ],
        // Batches go out at once rather than every 5 s; payloads stay out.
        &[
            ("OTEL_BSP_SCHEDULE_DELAY", "50"),
            (
                "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
                "false",
            ),
        ],
    )
    .await;

    let browser = TestBrowser::connect(&url).await.unwrap();
    let conn = model.connection(0, LIMIT).await.unwrap();
    assert!(conn.wait_for("response.create", 1, LIMIT).await);
    // The page hangs up (a dropped one would be held for a resume).
    browser.close().await;
    // The session span ends with the session; its batch follows within the schedule delay.
    let deadline = tokio::time::Instant::now() + LIMIT;
    let exported = loop {
        let all: Vec<u8> = bodies.lock().unwrap().concat();
        let has = |needle: &str| all.windows(needle.len()).any(|w| w == needle.as_bytes());
        if has("execute_tool search_help_articles") && has("realtime session") {
            break all;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the collector got no call and session span ({} requests)",
            bodies.lock().unwrap().len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let has = |needle: &str| {
        exported
            .windows(needle.len())
            .any(|w| w == needle.as_bytes())
    };
    for attribute in [
        "gen_ai.tool.call.id",
        "call_traced",
        "gen_ai.response.id",
        "resp_traced",
    ] {
        assert!(has(attribute), "{attribute} was not exported");
    }
    assert!(!has(SECRET), "arguments are exported only when opted in");
    let _ = child.kill().await;
}

/// `--provider gemini-live`: the same support tools on a Live model. The relay sends `setup`
/// with the declarations and the key in `x-goog-api-key`, runs the server call itself, asks the
/// page for the client call, and answers the batch with one `toolResponse`; the page never
/// sees the server call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_relays_a_support_conversation_to_gemini_live() {
    let model = FakeModel::start(
        Script::new()
            .wait_for("setup", 1)
            .send(script::live::setup_complete())
            .send(script::live::tool_call(&[
                (
                    "live_search",
                    "search_help_articles",
                    json!({"query": "refund"}),
                ),
                (
                    "live_hl",
                    "highlight_element",
                    json!({"selector": "#refund-button"}),
                ),
            ]))
            .wait_for("toolResponse", 1),
    )
    .await
    .unwrap();
    let upstream_url = model.url();
    let (mut child, url) = start_relay_with_env(
        &[
            "--listen",
            "127.0.0.1:0",
            "--provider",
            "gemini-live",
            "--upstream",
            &upstream_url,
            "--api-key-env",
            "REALTIME_RELAY_LIVE_KEY",
            "--filler-delay-ms",
            "0",
        ],
        &[("REALTIME_RELAY_LIVE_KEY", "AIza-example")],
    )
    .await;
    let mut browser = TestBrowser::connect(&url).await.unwrap();
    let (call, seen) = browser
        .next_matching(LIMIT, |e| {
            e["type"] == "function_call" && e["name"] == "highlight_element"
        })
        .await;
    let call = call.expect("the page is asked to highlight");
    assert_eq!(call["call_id"], "live_hl");
    assert!(
        browser
            .send(&json!({"type": "function_call.result", "call_id": "live_hl", "output": "{\"found\":true}"}))
            .await
    );
    let upstream = model.connection(0, LIMIT).await.unwrap();
    assert!(upstream.wait_for("toolResponse", 1, LIMIT).await);
    assert_eq!(upstream.google_api_key().as_deref(), Some("AIza-example"));
    let setup = &upstream.events_of("setup")[0];
    let declared = setup["setup"]["tools"][0]["functionDeclarations"]
        .as_array()
        .unwrap();
    assert!(declared.iter().any(|d| d["name"] == "search_help_articles"));
    let responses = upstream.events_of("toolResponse");
    assert_eq!(responses.len(), 1, "one toolResponse for the batch");
    let entries = responses[0]["toolResponse"]["functionResponses"]
        .as_array()
        .unwrap();
    let by_id = |id: &str| entries.iter().find(|e| e["id"] == id).expect(id).clone();
    assert_eq!(
        by_id("live_search")["response"]["output"]["articles"][0]["id"],
        "request-refund"
    );
    assert_eq!(by_id("live_hl")["response"]["output"]["found"], true);
    let page_saw = serde_json::to_string(&seen).unwrap();
    assert!(!page_saw.contains("live_search"), "{page_saw}");
    let _ = child.kill().await;
}
