//! The relay on loopback with real websockets: a scripted fake model server, the relay, and a
//! test browser.
#![cfg(feature = "testing")]

mod common {
    pub mod relay;
}

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use toolc_runtime::realtime::script;
use toolc_runtime::relay::testing::{FakeModel, Script, TestBrowser};
use toolc_runtime::{definitions_from_str, executor_fn, Registry};

const MANIFEST: &str = r#"
version: 1
tools:
  - name: lookup
    description: Look a word up.
    location: server
    timeout: 1s
    parameters:
      type: object
      properties: { word: { type: string } }
      required: [word]
  - name: highlight
    description: Highlight an element.
    location: client
    timeout: 300ms
    parameters:
      type: object
      properties: { selector: { type: string } }
      required: [selector]
  - name: scroll
    description: Scroll to a section.
    location: client
    timeout: 300ms
    parameters:
      type: object
      properties: { section: { type: string } }
      required: [section]
  - name: confirm
    description: Ask the user to confirm; waits long.
    location: client
    timeout: 20s
"#;

const LIMIT: Duration = Duration::from_secs(20);
const EVENTS: usize = 10_000;

fn registry() -> Arc<Registry> {
    let defs = definitions_from_str("relay.tools.yaml", MANIFEST).unwrap();
    Arc::new(
        Registry::builder()
            .definitions(defs)
            .executor(
                "lookup",
                executor_fn(|a: Value| async move {
                    Ok(json!({ "meaning": format!("server-only meaning of {}", a["word"].as_str().unwrap_or("")) }))
                }),
            )
            .build()
            .unwrap(),
    )
}

async fn relay(
    upstream: String,
    key: Option<&str>,
) -> (String, Arc<toolc_runtime::relay::RelayStats>) {
    let relay = common::relay::start(registry(), upstream, |config| {
        config.api_key = key.map(str::to_owned);
    })
    .await;
    (relay.url, relay.stats)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_response_three_results_one_continuation_and_ten_thousand_events_each_way() {
    let model = FakeModel::start(
        Script::new()
            .wait_for("session.update", 1)
            .send_all(script::response_with_calls(
                "r1",
                &[
                    ("call_server", "lookup", r#"{"word":"tea"}"#),
                    ("call_hl", "highlight", r##"{"selector":"#buy"}"##),
                    ("call_scroll", "scroll", r#"{"section":"faq"}"#),
                ],
            ))
            .wait_for("response.create", 1)
            .wait_for("input_audio_buffer.append", EVENTS)
            .send_all((0..EVENTS as u64).map(|i| script::text_delta("r2", i)))
            .send(json!({"type":"test.end"})),
    )
    .await
    .unwrap();
    let (url, _stats) = relay(model.url(), Some("sk-test-secret")).await;
    let mut browser = TestBrowser::connect(&url).await.unwrap();

    // The browser gets both client calls (and nothing of the server call).
    let mut seen = Vec::new();
    let mut calls = Vec::new();
    while calls.len() < 2 {
        let event = browser
            .next_event(LIMIT)
            .await
            .expect("the browser gets its calls");
        if event["type"] == "function_call" {
            calls.push(event.clone());
        }
        seen.push(event);
    }
    assert_eq!(calls[0]["call_id"], "call_hl");
    assert_eq!(calls[1]["call_id"], "call_scroll");
    // Answer one; let the other time out.
    assert!(browser.send(&json!({"type":"function_call.result","call_id":"call_hl","output":"{\"found\":true}"})).await);

    let upstream = model.connection(0, LIMIT).await.unwrap();
    assert!(upstream.wait_for("response.create", 1, LIMIT).await);
    let outputs = upstream.events_of("conversation.item.create");
    assert_eq!(outputs.len(), 3, "{outputs:?}");
    let output_of = |id: &str| -> Value {
        let o = outputs.iter().find(|o| o["item"]["call_id"] == id).unwrap();
        serde_json::from_str(o["item"]["output"].as_str().unwrap()).unwrap()
    };
    assert_eq!(
        output_of("call_server")["meaning"],
        "server-only meaning of tea"
    );
    assert_eq!(output_of("call_hl")["found"], true);
    assert_eq!(output_of("call_scroll")["error"]["kind"], "timeout");
    // The continuation is the last thing sent, after every result.
    let texts = upstream.texts();
    let last: Value = serde_json::from_str(texts.last().unwrap()).unwrap();
    assert_eq!(
        last,
        json!({"type":"response.create","event_id":"toolc_response_1"})
    );
    assert_eq!(
        upstream.authorization().as_deref(),
        Some("Bearer sk-test-secret")
    );
    assert!(upstream.path().starts_with("/v1/realtime"));

    // 10,000 unrelated events browser → model.
    for i in 0..EVENTS {
        let e = json!({"type":"input_audio_buffer.append","audio":format!("chunk-{i}")});
        assert!(browser.feed_text(e.to_string()).await);
    }
    assert!(browser.flush().await);
    // ... and 10,000 model → browser, which the model sends once it has all of the above.
    let (end, between) = browser
        .next_matching(LIMIT, |e| e["type"] == "test.end")
        .await;
    assert!(
        end.is_some(),
        "the browser got every event up to the end marker"
    );
    seen.extend(between);
    let deltas: Vec<u64> = seen
        .iter()
        .filter(|e| e["type"] == "response.output_text.delta")
        .map(|e| {
            e["event_id"].as_str().unwrap()["ev_text_".len()..]
                .parse()
                .unwrap()
        })
        .collect();
    assert_eq!(
        deltas,
        (0..EVENTS as u64).collect::<Vec<_>>(),
        "none lost, none reordered"
    );
    let appended: Vec<String> = upstream
        .events_of("input_audio_buffer.append")
        .iter()
        .map(|e| e["audio"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(appended.len(), EVENTS);
    assert!(appended
        .iter()
        .enumerate()
        .all(|(i, a)| *a == format!("chunk-{i}")));
    // Still exactly one continuation, and the browser never saw the server call or the key.
    assert_eq!(upstream.count("response.create"), 1);
    let browser_saw = serde_json::to_string(&seen).unwrap();
    for secret in [
        "call_server",
        "server-only",
        "tea",
        "sk-test-secret",
        "lookup",
    ] {
        assert!(!browser_saw.contains(secret), "the browser saw {secret}");
    }
    // The unrelated events arrived byte for byte.
    let first_delta = seen
        .iter()
        .find(|e| e["type"] == "response.output_text.delta")
        .unwrap();
    assert_eq!(first_delta, &script::text_delta("r2", 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_disconnect_fails_its_open_calls_at_once() {
    let model = FakeModel::start(Script::new().wait_for("session.update", 1).send_all(
        script::response_with_calls("r1", &[("call_c", "confirm", "{}")]),
    ))
    .await
    .unwrap();
    let (url, _) = relay(model.url(), None).await;
    let mut browser = TestBrowser::connect(&url).await.unwrap();
    let (call, _) = browser
        .next_matching(LIMIT, |e| e["type"] == "function_call")
        .await;
    assert_eq!(call.unwrap()["call_id"], "call_c");
    let upstream = model.connection(0, LIMIT).await.unwrap();
    assert_eq!(upstream.authorization(), None);
    let start = Instant::now();
    // The page hangs up (a page whose connection merely drops is held for a while, to resume:
    // `relay_resume.rs`).
    browser.close().await;
    assert!(upstream.wait_for("response.create", 1, LIMIT).await);
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "failed at once, not after the 20 s deadline"
    );
    let output = &upstream.events_of("conversation.item.create")[0]["item"]["output"];
    let output: Value = serde_json::from_str(output.as_str().unwrap()).unwrap();
    assert_eq!(output["error"]["code"], "client_disconnected");
    assert!(
        upstream.wait_closed(LIMIT).await,
        "the model connection is closed after"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_updates_namings_paths_and_a_missing_upstream() {
    let model = FakeModel::start(Script::new().wait_for("session.update", 2).send_all(
        script::response_with_calls("r1", &[("c1", "highlight", r#"{"selector":"a"}"#)]),
    ))
    .await
    .unwrap();
    let (url, stats) = relay(model.url(), None).await;
    let mut browser = TestBrowser::connect(&format!("{url}?naming=tool"))
        .await
        .unwrap();
    let update = json!({"type":"session.update","session":{"type":"realtime","instructions":"Talk like a pirate.","tools":[{"type":"function","name":"browser_made_up"}]}});
    assert!(browser.send(&update).await);
    let (call, _) = browser
        .next_matching(LIMIT, |e| e["type"] == "tool.call")
        .await;
    assert_eq!(call.unwrap()["callId"], "c1");
    let upstream = model.connection(0, LIMIT).await.unwrap();
    let updates = upstream.events_of("session.update");
    assert_eq!(updates.len(), 2);
    let tools = |u: &Value| -> Vec<String> {
        u["session"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        tools(&updates[0]),
        ["lookup", "highlight", "scroll", "confirm"]
    );
    assert_eq!(
        tools(&updates[1]),
        ["lookup", "highlight", "scroll", "confirm"]
    );
    assert_eq!(updates[1]["session"]["instructions"], "Talk like a pirate.");
    assert!(
        browser
            .send(&json!({"type":"tool.result","callId":"c1","output":"{}"}))
            .await
    );
    assert!(upstream.wait_for("response.create", 1, LIMIT).await);

    // Only `/` is a browser endpoint.
    assert!(TestBrowser::connect(&format!("{url}v1/other"))
        .await
        .is_err());
    // A relay whose model is unreachable tells the browser and closes.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_url = format!("ws://{}/", dead.local_addr().unwrap());
    drop(dead);
    let (url2, stats2) = relay(dead_url, Some("sk-never-shown")).await;
    let mut b2 = TestBrowser::connect(&url2).await.unwrap();
    let err = b2.next_event(LIMIT).await.unwrap();
    assert_eq!(err["type"], "error");
    assert_eq!(err["error"]["code"], "upstream_unavailable");
    assert!(!err.to_string().contains("sk-never-shown"));
    assert!(
        b2.next_event(Duration::from_secs(5)).await.is_none(),
        "then closes"
    );
    let s = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(s(&stats2.upstream_failures), 1);
    assert_eq!(s(&stats.handshakes_refused), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_independent() {
    let model = FakeModel::start(Script::new().wait_for("session.update", 1).send_all(
        script::response_with_calls("r1", &[("same_id", "highlight", r#"{"selector":"a"}"#)]),
    ))
    .await
    .unwrap();
    let (url, _) = relay(model.url(), None).await;
    let mut a = TestBrowser::connect(&url).await.unwrap();
    let (ca, _) = a
        .next_matching(LIMIT, |e| e["type"] == "function_call")
        .await;
    assert!(ca.is_some());
    let mut b = TestBrowser::connect(&url).await.unwrap();
    let (cb, _) = b
        .next_matching(LIMIT, |e| e["type"] == "function_call")
        .await;
    assert!(cb.is_some());
    let up_a = model.connection(0, LIMIT).await.unwrap();
    let up_b = model.connection(1, LIMIT).await.unwrap();
    // A answers; only A's model connection gets the result and a continuation.
    assert!(
        a.send(&json!({"type":"function_call.result","call_id":"same_id","output":"\"from a\""}))
            .await
    );
    assert!(up_a.wait_for("response.create", 1, LIMIT).await);
    assert_eq!(
        up_a.events_of("conversation.item.create")[0]["item"]["output"],
        "\"from a\""
    );
    // B lets its call time out; A closing does not disturb B.
    a.close().await;
    assert!(up_b.wait_for("response.create", 1, LIMIT).await);
    let out = up_b.events_of("conversation.item.create")[0]["item"]["output"].clone();
    assert!(out.as_str().unwrap().contains("timeout"), "{out}");
    assert!(b.send(&json!({"type":"input_audio_buffer.commit"})).await);
    assert!(up_b.wait_for("input_audio_buffer.commit", 1, LIMIT).await);
}
