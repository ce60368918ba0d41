//! Runs the example binary against the scripted fake model and a test browser.

use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;
use toolc_runtime::realtime::script;
use toolc_runtime::relay::testing::{FakeModel, Script, TestBrowser};

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
    assert_eq!(output("call_search")["articles"][0]["id"], "refunds");
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
