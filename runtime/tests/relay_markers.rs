//! The two-pass marker flow through the relay on loopback: a scripted fake model writes call
//! markers into its streamed text, the relay hides them from a real websocket browser, runs the
//! calls (a server tool in-process, a client tool through the browser), injects the results as
//! context and asks for exactly one new response, whose answer reaches the browser.
#![cfg(feature = "testing")]

mod common {
    pub mod relay;
}

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use toolc_runtime::markers::MarkerTag;
use toolc_runtime::realtime::marker_flow::RESULT_ITEM_PREFIX;
use toolc_runtime::realtime::script::text_response;
use toolc_runtime::realtime::MarkerFlowConfig;
use toolc_runtime::relay::testing::{FakeModel, Script, TestBrowser};
use toolc_runtime::{definitions_from_str, executor_fn, Registry};

const MANIFEST: &str = r#"
version: 1
tools:
  - name: get_order_status
    description: The status of an order.
    location: server
    timeout: 1s
    parameters:
      type: object
      properties: { order_id: { type: string } }
      required: [order_id]
  - name: highlight
    description: Highlight an element on the page.
    location: client
    timeout: 5s
    parameters:
      type: object
      properties: { selector: { type: string } }
      required: [selector]
"#;

const LIMIT: Duration = Duration::from_secs(20);
const TAG: &str = "APIPILOT_CALL";

async fn relay(upstream: String) -> (String, Arc<MarkerFlowConfig>) {
    let defs = definitions_from_str("markers.tools.yaml", MANIFEST).unwrap();
    let registry = Arc::new(
        Registry::builder()
            .definitions(defs)
            .executor(
                "get_order_status",
                executor_fn(|a: Value| async move {
                    Ok(json!({ "order_id": a["order_id"], "status": "shipped-secret-status" }))
                }),
            )
            .build()
            .unwrap(),
    );
    let tag = MarkerTag::new(TAG).unwrap();
    let flow = Arc::new(MarkerFlowConfig::for_registry(tag, &registry, |_| false));
    let markers = flow.clone();
    let relay = common::relay::start(registry, upstream, |config| {
        common::relay::edit_session(config, |session| {
            session
                .session
                .insert("instructions".into(), json!("You help with orders."));
            session.markers = Some(markers);
        });
    })
    .await;
    (relay.url, flow)
}

fn deltas_of<'a>(events: &'a [Value], response_id: &str) -> String {
    events
        .iter()
        .filter(|e| e["type"] == "response.output_text.delta" && e["response_id"] == response_id)
        .map(|e| e["delta"].as_str().unwrap())
        .collect::<Vec<&'a str>>()
        .concat()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn marker_calls_run_through_the_relay_and_the_browser_never_sees_a_marker() {
    let tag = MarkerTag::new(TAG).unwrap();
    let first = format!(
        "Let me look that up. {}{} Just a moment.",
        tag.render_call("get_order_status", r#"{"order_id":"AB-123456"}"#),
        tag.render_call("highlight", r##"{"selector":"#order-AB-123456"}"##),
    );
    // Cut the first reply into 4-byte deltas (all ASCII), so every marker spans many deltas.
    let pieces: Vec<&str> = first
        .as_bytes()
        .chunks(4)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    let first_item = format!("{RESULT_ITEM_PREFIX}1");
    let model = FakeModel::start(
        Script::new()
            .wait_for("session.update", 1)
            .send_all(text_response("r1", "msg1", &pieces))
            .wait_for("response.create", 1)
            // The server echoes the injected results; the relay must not pass them on.
            .send(json!({
                "type": "conversation.item.added", "event_id": "echo1", "previous_item_id": "msg1",
                "item": {"id": first_item, "object": "realtime.item", "type": "message",
                         "status": "completed", "role": "system",
                         "content": [{"type": "input_text", "text": "Tool result ... shipped-secret-status"}]},
            }))
            .send_all(text_response(
                "r2",
                "msg2",
                &["Your order ", "AB-123456 has ", "shipped."],
            ))
            .send(json!({"type": "test.end"})),
    )
    .await
    .unwrap();
    let (url, flow) = relay(model.url()).await;
    let mut browser = TestBrowser::connect(&url).await.unwrap();

    // The browser gets the client call (with a marker call id) and answers it.
    let (call, mut seen) = browser
        .next_matching(LIMIT, |e| e["type"] == "function_call")
        .await;
    let call = call.expect("the client tool call reaches the browser");
    assert_eq!(call["name"], "highlight");
    assert_eq!(
        serde_json::from_str::<Value>(call["arguments"].as_str().unwrap()).unwrap(),
        json!({"selector": "#order-AB-123456"})
    );
    let answer = json!({"type": "function_call.result", "call_id": call["call_id"], "output": "{\"highlighted\":true}"});
    assert!(browser.send(&answer).await);

    let (end, rest) = browser
        .next_matching(LIMIT, |e| e["type"] == "test.end")
        .await;
    assert!(end.is_some(), "the second response reaches the browser");
    seen.push(call.clone());
    seen.extend(rest);

    // First pass: the visible text only; second pass: the answer.
    assert_eq!(
        deltas_of(&seen, "r1"),
        "Let me look that up.  Just a moment."
    );
    assert_eq!(deltas_of(&seen, "r2"), "Your order AB-123456 has shipped.");
    for e in &seen {
        let text = e.to_string();
        assert!(
            !text.contains("<<<"),
            "marker text reached the browser: {text}"
        );
        assert!(
            !text.contains(TAG),
            "marker text reached the browser: {text}"
        );
        assert!(
            !text.contains("shipped-secret-status"),
            "a server result reached the browser: {text}"
        );
        assert!(
            !text.contains(&first_item),
            "an echo reached the browser: {text}"
        );
    }
    let done = seen
        .iter()
        .find(|e| e["type"] == "response.done" && e["response"]["id"] == "r1")
        .unwrap();
    assert_eq!(
        done["response"]["output"][0]["content"][0]["text"],
        "Let me look that up.  Just a moment."
    );

    // The model got the catalog, both results as context, and exactly one continuation.
    let upstream = model.connection(0, LIMIT).await.unwrap();
    let updates = upstream.events_of("session.update");
    let instructions = updates[0]["session"]["instructions"].as_str().unwrap();
    assert!(instructions.starts_with("You help with orders.\n\n# Tools"));
    assert!(instructions.contains("<<<APIPILOT_CALL:NAME=get_order_status,ARGUMENTS="));
    let items = upstream.events_of("conversation.item.create");
    assert_eq!(items.len(), 2, "{items:?}");
    let texts: Vec<&str> = items
        .iter()
        .map(|i| {
            assert_eq!(i["item"]["role"], "system");
            i["item"]["content"][0]["text"].as_str().unwrap()
        })
        .collect();
    assert!(texts
        .iter()
        .any(|t| t.contains("`get_order_status`") && t.contains("shipped-secret-status")));
    assert!(texts
        .iter()
        .any(|t| t.contains("`highlight`") && t.contains(r#"{"highlighted":true}"#)));
    assert_eq!(upstream.count("response.create"), 1);
    assert_eq!(
        upstream.events_of("response.create")[0],
        json!({"type": "response.create", "event_id": "toolc_response_1"})
    );
    // No function_call_output: this model never saw a function call.
    assert!(!upstream
        .texts()
        .iter()
        .any(|t| t.contains("function_call_output")));
    let counters = flow.counters().snapshot();
    assert_eq!((counters.calls, counters.results_injected), (2, 2));
    assert_eq!(counters.hidden_echoes, 1);
    browser.close().await;
}
