//! Draining a relay, as on a deploy: new pages are refused, every page hears `toolc.drain`, a
//! server call in flight finishes and its result reaches the model before the session closes
//! (1012), and a call that outlives the deadline still ends with a result the model sees.
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

const LIMIT: Duration = Duration::from_secs(10);

const MANIFEST: &str = r#"
version: 1
tools:
  - name: slow_lookup
    description: A lookup that takes a while.
    location: server
    parameters:
      type: object
      properties: { ms: { type: integer } }
      required: [ms]
"#;

fn registry() -> Arc<Registry> {
    let defs = definitions_from_str("drain.tools.yaml", MANIFEST).expect("manifest");
    Arc::new(
        Registry::builder()
            .definitions(defs)
            .executor(
                "slow_lookup",
                executor_fn(|args: Value| async move {
                    let ms = args["ms"].as_u64().unwrap_or(0);
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    Ok(json!({ "waited_ms": ms }))
                }),
            )
            .build()
            .expect("registry"),
    )
}

/// A model that makes one call of `slow_lookup` taking `ms`, then waits for its continuation.
async fn model_calling(ms: u64) -> FakeModel {
    let arguments = format!(r#"{{"ms":{ms}}}"#);
    FakeModel::start(
        Script::new()
            .wait_for("session.update", 1)
            .send_all(script::response_with_calls(
                "r1",
                &[("c1", "slow_lookup", &arguments)],
            ))
            .wait_for("response.create", 1),
    )
    .await
    .unwrap()
}

/// Reads the page until the drain notice, then to its close frame: the events, and the close
/// code and reason.
async fn read_to_close(browser: &mut TestBrowser) -> (Vec<Value>, Option<(u16, String)>) {
    let mut events = Vec::new();
    while let Some(event) = browser.next_event(LIMIT).await {
        let notice = event["type"] == "toolc.drain";
        events.push(event);
        if notice {
            break;
        }
    }
    (events, browser.next_close(LIMIT).await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drain_lets_the_call_in_flight_finish_and_answer_the_model() {
    let model = model_calling(600).await;
    let relay = common::relay::start(registry(), model.url(), |_| {}).await;
    let mut browser = TestBrowser::connect(&relay.url).await.unwrap();
    let conn = model.connection(0, LIMIT).await.unwrap();
    assert!(conn.wait_for("session.update", 1, LIMIT).await);
    // The call is running when the drain starts.
    tokio::time::sleep(Duration::from_millis(150)).await;
    let started = Instant::now();
    let service = relay.service.clone();
    let drained = tokio::spawn(async move { service.drain(Duration::from_secs(5)).await });
    // A page that comes now is sent elsewhere.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(TestBrowser::connect(&relay.url).await.is_err());
    let (events, close) = read_to_close(&mut browser).await;
    drained.await.unwrap();
    let took = started.elapsed();
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "toolc.drain" && e["deadline_ms"].as_u64().is_some()),
        "{events:#?}"
    );
    let (code, reason) = close.expect("a close frame");
    assert_eq!(code, 1012, "{reason}");
    // The result went to the model before its connection closed, and the drain did not wait
    // for its deadline.
    assert!(conn.wait_closed(LIMIT).await);
    let outputs = conn.events_of("conversation.item.create");
    assert_eq!(outputs.len(), 1, "{:#?}", conn.events());
    assert_eq!(outputs[0]["item"]["call_id"], "c1");
    assert!(outputs[0]["item"]["output"]
        .as_str()
        .unwrap()
        .contains("waited_ms"));
    assert!(took < Duration::from_secs(3), "{took:?}");
    let stats = &relay.stats;
    assert_eq!(
        stats
            .refused_draining
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
    assert_eq!(
        stats
            .sessions_active
            .load(std::sync::atomic::Ordering::Relaxed),
        0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_outlives_the_deadline_still_ends_with_a_result_for_the_model() {
    let model = model_calling(30_000).await;
    let relay = common::relay::start(registry(), model.url(), |config| {
        config.close_grace = Duration::from_millis(300);
    })
    .await;
    let mut browser = TestBrowser::connect(&relay.url).await.unwrap();
    let conn = model.connection(0, LIMIT).await.unwrap();
    assert!(conn.wait_for("session.update", 1, LIMIT).await);
    tokio::time::sleep(Duration::from_millis(150)).await;
    let started = Instant::now();
    relay.service.drain(Duration::from_millis(400)).await;
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    let (_, close) = read_to_close(&mut browser).await;
    assert_eq!(close.map(|c| c.0), Some(1012));
    assert!(conn.wait_closed(LIMIT).await);
    // The executor saw its cancellation; the model got the call's failure, not silence.
    let outputs = conn.events_of("conversation.item.create");
    assert_eq!(outputs.len(), 1, "{:#?}", conn.events());
    assert_eq!(outputs[0]["item"]["call_id"], "c1");
    let output = outputs[0]["item"]["output"].as_str().unwrap();
    assert!(output.contains("server_restarting"), "{output}");
}
