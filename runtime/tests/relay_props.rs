//! Arbitrary bytes and arbitrary JSON from either side never panic the relay or end other
//! sessions: real websockets, a fresh relay and fake model per case.
#![cfg(feature = "testing")]

mod common {
    pub mod relay;
}

use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use serde_json::{json, Value};
use toolc_runtime::relay::testing::{FakeModel, Script, TestBrowser};
use toolc_runtime::{definitions_from_str, executor_fn, Registry};

const MANIFEST: &str = r#"
version: 1
tools:
  - name: srv
    description: Server tool.
    location: server
    timeout: 100ms
  - name: cli
    description: Client tool.
    location: client
    timeout: 100ms
    filler: ["One moment."]
"#;

const LIMIT: Duration = Duration::from_secs(20);

#[derive(Clone, Debug)]
enum Frame {
    Text(String),
    Binary(Vec<u8>),
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<f64>().prop_map(|f| json!(f)),
        ".{0,10}".prop_map(Value::String),
        prop_oneof![
            Just("srv"),
            Just("cli"),
            Just("c1"),
            Just("r1"),
            Just("function_call"),
            Just("function_call_output"),
            Just("function"),
            Just("transcription")
        ]
        .prop_map(|s| Value::String(s.into())),
    ];
    leaf.prop_recursive(3, 20, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("type".to_owned()),
                    Just("call_id".to_owned()),
                    Just("name".to_owned()),
                    Just("arguments".to_owned()),
                    Just("item".to_owned()),
                    Just("response".to_owned()),
                    Just("output".to_owned()),
                    Just("tools".to_owned()),
                    Just("input".to_owned()),
                    Just("tool_choice".to_owned()),
                    "[a-z_.]{1,8}",
                ],
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn frame() -> impl Strategy<Value = Frame> {
    let kinds = prop_oneof![
        Just("response.created"),
        Just("response.done"),
        Just("response.output_item.done"),
        Just("response.function_call_arguments.done"),
        Just("function_call.result"),
        Just("conversation.item.create"),
        Just("session.update"),
        Just("response.create"),
    ];
    prop_oneof![
        ".{0,60}".prop_map(Frame::Text),
        json_value().prop_map(|v| Frame::Text(v.to_string())),
        (kinds, json_value(), json_value()).prop_map(|(k, a, b)| Frame::Text(
            json!({"type": k, "call_id": "c1", "name": "cli", "arguments": "{}", "response_id": "r1", "item": a, "response": b, "session": b, "output": "x"}).to_string()
        )),
        prop::collection::vec(any::<u8>(), 0..64).prop_map(Frame::Binary),
    ]
}

fn registry() -> Arc<Registry> {
    let defs = definitions_from_str("f.tools.yaml", MANIFEST).unwrap();
    Arc::new(
        Registry::builder()
            .definitions(defs)
            .executor("srv", executor_fn(|_| async { Ok(json!({})) }))
            .build()
            .unwrap(),
    )
}

async fn case(from_model: Vec<Frame>, from_browser: Vec<Frame>, abort: bool) {
    let mut script = Script::new().wait_for("session.update", 1);
    for f in &from_model {
        script = match f {
            Frame::Text(t) => script.send_text(t.clone()),
            Frame::Binary(b) => script.send_binary(b.clone()),
        };
    }
    let model = FakeModel::start(script.send(json!({"type":"fuzz.end"})))
        .await
        .unwrap();
    let common::relay::TestRelay { url, server, .. } =
        common::relay::start(registry(), model.url(), |config| {
            // Fillers on: a slow call's phrases interleave with the fuzzed frames.
            common::relay::edit_session(config, |session| {
                session.filler_delay = Some(Duration::from_millis(20));
            });
        })
        .await;

    // A healthy session first, then the fuzzed one.
    let mut healthy = TestBrowser::connect(&url).await.unwrap();
    let up_healthy = model.connection(0, LIMIT).await.unwrap();
    let mut fuzzed = TestBrowser::connect(&url).await.unwrap();
    let up_fuzzed = model.connection(1, LIMIT).await.unwrap();
    for f in &from_browser {
        let ok = match f {
            Frame::Text(t) => fuzzed.feed_text(t.clone()).await,
            Frame::Binary(b) => fuzzed.send_binary(b.clone()).await,
        };
        assert!(ok, "the relay keeps reading the fuzzed browser");
    }
    assert!(fuzzed.flush().await);
    // The fuzzed session still relays: a marker reaches its model, the model's end reaches it.
    assert!(fuzzed.send(&json!({"type":"fuzz.marker"})).await);
    assert!(up_fuzzed.wait_for("fuzz.marker", 1, LIMIT).await);
    let (end, _) = fuzzed
        .next_matching(LIMIT, |e| e["type"] == "fuzz.end")
        .await;
    assert!(end.is_some());
    // Whatever the browser sent, the model only ever got tools, calls and outputs the relay
    // made: the declared functions, no call items, no outputs of calls it never routed there.
    assert!(
        up_fuzzed.binary().is_empty(),
        "a browser binary frame reached the model"
    );
    for event in up_fuzzed.events() {
        assert_made_by_the_relay(&event);
    }
    if abort {
        fuzzed.abort();
    } else {
        fuzzed.close().await;
    }
    // The other session is unaffected.
    let (end, _) = healthy
        .next_matching(LIMIT, |e| e["type"] == "fuzz.end")
        .await;
    assert!(end.is_some());
    assert!(healthy.send(&json!({"type":"health.check"})).await);
    assert!(up_healthy.wait_for("health.check", 1, LIMIT).await);
    // And the relay still accepts new browsers.
    let _third = TestBrowser::connect(&url).await.unwrap();
    let up_third = model.connection(2, LIMIT).await.unwrap();
    assert!(up_third.wait_for("session.update", 1, LIMIT).await);
    server.abort();
}

fn assert_made_by_the_relay(event: &Value) {
    let functions = |tools: &Value| -> Vec<String> {
        tools
            .as_array()
            .into_iter()
            .flatten()
            .filter(|t| {
                t.get("type")
                    .and_then(Value::as_str)
                    .is_none_or(|k| k == "function")
            })
            .map(|t| t["name"].as_str().unwrap_or("?").to_owned())
            .collect()
    };
    match event["type"].as_str() {
        Some("session.update") => {
            let tools = &event["session"]["tools"];
            if event["session"]["type"] != "transcription" {
                assert_eq!(functions(tools), ["srv", "cli"], "{event}");
            } else {
                assert!(tools.is_null(), "{event}");
            }
        }
        Some("response.create") => {
            assert!(functions(&event["response"]["tools"]).is_empty(), "{event}");
            for item in event["response"]["input"].as_array().into_iter().flatten() {
                assert!(item.get("call_id").is_none(), "{event}");
            }
        }
        Some("conversation.item.create") => {
            // Outputs are the relay's own (a call it routed): the fuzzer never saw a real
            // call id, and forged call items never pass.
            assert_ne!(event["item"]["type"], "function_call", "{event}");
        }
        _ => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, .. ProptestConfig::default() })]

    #[test]
    fn garbage_from_either_side_never_breaks_the_relay(
        from_model in prop::collection::vec(frame(), 0..24),
        from_browser in prop::collection::vec(frame(), 0..24),
        abort in any::<bool>(),
    ) {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        rt.block_on(case(from_model, from_browser, abort));
    }
}
