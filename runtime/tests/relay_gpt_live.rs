//! GPT-Live through the relay, against a fake model that speaks the SDK's event shapes: the
//! page's input held until `session.started`, a delegated backend response with a server and a
//! client call, one continuation, the server call kept from the page, the page's attempts at
//! the server's events refused, and the API key sent as a bearer token.
#![cfg(feature = "testing")]

mod common {
    pub mod relay;
}

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use toolc_runtime::realtime::script::gpt_live as script;
use toolc_runtime::realtime::{Counters, RealtimeProvider, SessionConfig};
use toolc_runtime::relay::testing::{FakeModel, Script, TestBrowser};
use toolc_runtime::relay::RelayConfig;
use toolc_runtime::{definitions_from_str, executor_fn, Registry};

const LIMIT: Duration = Duration::from_secs(10);

const MANIFEST: &str = r#"
version: 1
tools:
  - name: lookup_order
    description: Find an order.
    location: server
    parameters:
      type: object
      properties: { order_number: { type: string } }
      required: [order_number]
  - name: highlight
    description: Highlight an element.
    location: client
    timeout: 20s
    parameters:
      type: object
      properties: { selector: { type: string } }
      required: [selector]
"#;

fn registry(lookups: Arc<AtomicUsize>) -> Arc<Registry> {
    let defs = definitions_from_str("gpt-live.tools.yaml", MANIFEST).expect("manifest");
    Arc::new(
        Registry::builder()
            .definitions(defs)
            .executor(
                "lookup_order",
                executor_fn(move |args: Value| {
                    let lookups = lookups.clone();
                    async move {
                        lookups.fetch_add(1, Ordering::SeqCst);
                        Ok(json!({ "order": args["order_number"], "status": "shipped" }))
                    }
                }),
            )
            .build()
            .expect("registry"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delegated_conversation_through_the_relay() {
    let lookups = Arc::new(AtomicUsize::new(0));
    let mut model_script = Script::new()
        .wait_for("session.start", 1)
        // The page spoke before the session started: its audio must come after this.
        .sleep(Duration::from_millis(200))
        .send(script::session_started("sess_1"))
        .wait_for("session.input_audio.append", 1)
        .send(script::delegation_created("d1", "responses"));
    model_script = model_script.send_all(script::response_with_calls(
        "d1",
        "resp_1",
        &[
            ("s1", "lookup_order", r#"{"order_number":"AB-1"}"#),
            ("c1", "highlight", r##"{"selector":"#order"}"##),
        ],
    ));
    let model = FakeModel::start(
        model_script
            .wait_for("response.create", 1)
            .send(script::audio("UklGRg==")),
    )
    .await
    .unwrap();
    let counters = Arc::new(Counters::default());
    let registry = registry(lookups.clone());
    let session_registry = registry.clone();
    let session_counters = counters.clone();
    let relay = common::relay::start(registry, model.url(), move |config: &mut RelayConfig| {
        let mut session = SessionConfig::for_provider(&session_registry, RealtimeProvider::GptLive);
        session.counters = session_counters;
        config.session = Arc::new(session);
        config.api_key = Some("sk-test".into());
    })
    .await;
    let mut browser = TestBrowser::connect(&relay.url).await.unwrap();
    browser
        .send(&json!({"type": "session.input_audio.append", "audio": "AAAA"}))
        .await;
    // The page tries the server's events: each is refused, and none reaches the model.
    browser.send(&json!({"type": "response.create"})).await;
    browser
        .send(&json!({"type": "response.item.create", "item": {"type": "function_call_output", "call_id": "s1", "output": "{}"}}))
        .await;
    let mut events = Vec::new();
    while let Some(event) = browser.next_event(LIMIT).await {
        let done = event["type"] == "function_call";
        events.push(event);
        if done {
            break;
        }
    }
    let call = events.last().unwrap().clone();
    assert_eq!(call["call_id"], "c1", "{events:#?}");
    let refusals: Vec<&Value> = events
        .iter()
        .filter(|e| e["error"]["code"] == "server_only_event")
        .collect();
    assert_eq!(refusals.len(), 2, "{events:#?}");
    browser
        .send(&json!({"type": "function_call.result", "call_id": "c1", "output": "{\"ok\":true}"}))
        .await;
    while let Some(event) = browser.next_event(LIMIT).await {
        let done = event["type"] == "session.output_audio.delta";
        events.push(event);
        if done {
            break;
        }
    }
    let text = serde_json::to_string(&events).unwrap();
    assert!(text.contains("session.started"), "{text}");
    assert!(
        !text.contains("s1") && !text.contains("lookup_order") && !text.contains("AB-1"),
        "the server call reached the page: {text}"
    );
    assert!(text.contains("session.output_audio.delta"), "{text}");

    let conn = model.connection(0, LIMIT).await.unwrap();
    assert!(conn.wait_for("response.create", 1, LIMIT).await);
    assert_eq!(conn.authorization().as_deref(), Some("Bearer sk-test"));
    let kinds: Vec<String> = conn
        .events()
        .iter()
        .map(|e| e["type"].as_str().unwrap_or("?").to_owned())
        .collect();
    assert_eq!(kinds[0], "session.start", "{kinds:?}");
    assert_eq!(
        kinds[1], "session.input_audio.append",
        "held until started: {kinds:?}"
    );
    let outputs: Vec<String> = conn
        .events_of("response.item.create")
        .iter()
        .map(|e| e["item"]["call_id"].as_str().unwrap().to_owned())
        .collect();
    let mut sorted = outputs.clone();
    sorted.sort();
    assert_eq!(sorted, ["c1", "s1"], "one result per call: {kinds:?}");
    assert_eq!(
        conn.count("response.create"),
        1,
        "one continuation: {kinds:?}"
    );
    assert_eq!(lookups.load(Ordering::SeqCst), 1);
    let snapshot = counters.snapshot();
    assert_eq!(snapshot.unreadable_model_events, 0);
    assert_eq!(snapshot.refused_browser_events, 2);
}
