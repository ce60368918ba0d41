//! The two-pass marker flow in a realtime session, without sockets: model events go in as text,
//! the verdicts are what the browser would get, the queued outputs what the model would get.
#![cfg(feature = "testing")]

mod common {
    pub mod session;
}

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::session::Wire;
use proptest::prelude::*;
use serde_json::{json, Value};
use toolc_runtime::markers::MarkerTag;
use toolc_runtime::realtime::marker_flow::{MARKER_CALL_PREFIX, RESULT_ITEM_PREFIX};
use toolc_runtime::realtime::script::text_response;
use toolc_runtime::realtime::MarkerFlowConfig;
use toolc_runtime::realtime::{RealtimeSession, SessionConfig, Verdict};
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
      properties: { order_id: { type: string, minLength: 3 } }
      required: [order_id]
      additionalProperties: false
  - name: highlight
    description: Highlight an element.
    location: client
    timeout: 300ms
    parameters:
      type: object
      properties: { selector: { type: string } }
      required: [selector]
"#;

const TAG: &str = "APIPILOT_CALL";

fn registry(runs: Arc<AtomicUsize>) -> Registry {
    let defs = definitions_from_str("flow.tools.yaml", MANIFEST).expect("manifest");
    Registry::builder()
        .definitions(defs)
        .executor(
            "get_order_status",
            executor_fn(move |args: Value| {
                let runs = runs.clone();
                async move {
                    runs.fetch_add(1, Ordering::SeqCst);
                    Ok(json!({ "order_id": args["order_id"], "status": "shipped" }))
                }
            }),
        )
        .build()
        .expect("registry")
}

struct Harness {
    wire: Wire,
    runs: Arc<AtomicUsize>,
    flow: Arc<MarkerFlowConfig>,
}

common::session::derefs_to_wire!(Harness);

impl Harness {
    fn new(markers: bool) -> Harness {
        Harness::with_config(markers, |_| {})
    }

    fn with_config(markers: bool, adjust: impl FnOnce(&mut SessionConfig)) -> Harness {
        let runs = Arc::new(AtomicUsize::new(0));
        let registry = Arc::new(registry(runs.clone()));
        let tag = MarkerTag::new(TAG).unwrap();
        let flow = Arc::new(MarkerFlowConfig::for_registry(tag, &registry, |_| false));
        let mut config = SessionConfig::new(&registry);
        config.filler_delay = None;
        if markers {
            config.markers = Some(flow.clone());
        }
        adjust(&mut config);
        Harness {
            wire: Wire::new(RealtimeSession::new(registry, Arc::new(config))),
            runs,
            flow,
        }
    }

    /// The text a browser shows: its deltas, joined.
    fn visible_deltas(&self) -> String {
        self.to_browser
            .iter()
            .filter(|e| e["type"] == "response.output_text.delta")
            .map(|e| e["delta"].as_str().unwrap())
            .collect()
    }
}

fn marker(name: &str, args: &str) -> String {
    MarkerTag::new(TAG).unwrap().render_call(name, args)
}

/// Splits `text` into pieces of `n` characters.
fn pieces(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(n).map(|c| c.iter().collect()).collect()
}

fn response(rid: &str, item: &str, text: &str, n: usize) -> Vec<Value> {
    let parts = pieces(text, n);
    let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
    text_response(rid, item, &refs)
}

/// The text of the first injected system message.
fn injected_texts(h: &Harness) -> Vec<String> {
    h.model_events_of("conversation.item.create")
        .iter()
        .map(|e| {
            assert_eq!(e["item"]["type"], "message");
            assert_eq!(e["item"]["role"], "system");
            e["item"]["content"][0]["text"].as_str().unwrap().to_owned()
        })
        .collect()
}

#[tokio::test]
async fn a_marker_split_across_deltas_runs_once_and_never_reaches_the_browser() {
    let mut h = Harness::new(true);
    let text = format!(
        "Let me check that order. {} One moment.",
        marker("get_order_status", r#"{"order_id":"AB-123456"}"#)
    );
    // Three characters per delta: the opening, the name and the JSON are all cut.
    h.model_all(&response("r1", "msg1", &text, 3));
    h.settle(|h| !h.model_events_of("response.create").is_empty())
        .await;

    assert_eq!(h.runs.load(Ordering::SeqCst), 1);
    assert_eq!(h.visible_deltas(), "Let me check that order.  One moment.");
    let everything = serde_json::to_string(&h.to_browser).unwrap();
    assert!(!everything.contains("<<<"), "{everything}");
    assert!(!everything.contains("APIPILOT"), "{everything}");
    assert!(!everything.contains("AB-123456"), "{everything}");
    // Every event that repeats the text carries the visible text.
    let text_done = h
        .to_browser
        .iter()
        .find(|e| e["type"] == "response.output_text.done")
        .unwrap();
    assert_eq!(text_done["text"], "Let me check that order.  One moment.");
    let part = h
        .to_browser
        .iter()
        .find(|e| e["type"] == "response.content_part.done")
        .unwrap();
    assert_eq!(
        part["part"]["text"],
        "Let me check that order.  One moment."
    );
    let done = h
        .to_browser
        .iter()
        .find(|e| e["type"] == "response.done")
        .unwrap();
    assert_eq!(
        done["response"]["output"][0]["content"][0]["text"],
        "Let me check that order.  One moment."
    );

    // The result goes back as context, then exactly one new response is requested.
    let texts = injected_texts(&h);
    assert_eq!(texts.len(), 1);
    assert!(texts[0].contains("`get_order_status`"), "{}", texts[0]);
    assert!(texts[0].contains(r#""status":"shipped""#), "{}", texts[0]);
    let kinds: Vec<&str> = h
        .to_model
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["conversation.item.create", "response.create"]);
    assert_eq!(
        h.to_model[1],
        json!({"type":"response.create","event_id":"toolc_response_1"})
    );
    assert_eq!(h.session.open_calls(), 0);
    let counters = h.flow.counters().snapshot();
    assert_eq!(counters.calls, 1);
    assert_eq!(counters.results_injected, 1);
}

#[tokio::test]
async fn the_continuation_waits_for_response_done_and_for_every_marker_call() {
    let mut h = Harness::new(true);
    let text = format!(
        "A{}B{}C",
        marker("get_order_status", r#"{"order_id":"AB-1"}"#),
        marker("get_order_status", r#"{"order_id":"CD-2"}"#)
    );
    let events = response("r1", "msg1", &text, 7);
    let (body, last) = events.split_at(events.len() - 1);
    h.model_all(body);
    // Both calls finish while the response is still open: no continuation yet.
    h.settle(|h| h.model_events_of("conversation.item.create").len() == 2)
        .await;
    assert!(h.model_events_of("response.create").is_empty());
    h.model(&last[0]);
    assert_eq!(h.model_events_of("response.create").len(), 1);
    assert_eq!(h.visible_deltas(), "ABC");
    assert_eq!(h.runs.load(Ordering::SeqCst), 2);
    // A later response without markers asks for nothing.
    h.model_all(&response("r2", "msg2", "Both orders are on their way.", 5));
    h.settle(|_| false).await;
    assert_eq!(h.model_events_of("response.create").len(), 1);
    assert_eq!(h.model_events_of("conversation.item.create").len(), 2);
}

#[tokio::test]
async fn invalid_arguments_and_unknown_tools_become_error_results_without_running() {
    let mut h = Harness::new(true);
    let text = format!(
        "x{}y{}z",
        marker("get_order_status", r#"{"order_id":"A"}"#),
        marker("get_order_stat", r#"{}"#)
    );
    h.model_all(&response("r1", "msg1", &text, 4));
    h.settle(|h| !h.model_events_of("response.create").is_empty())
        .await;
    assert_eq!(h.runs.load(Ordering::SeqCst), 0);
    let texts = injected_texts(&h);
    assert_eq!(texts.len(), 2);
    assert!(texts.iter().all(|t| t.contains("failed")), "{texts:?}");
    assert!(
        texts.iter().any(|t| t.contains("invalid_arguments")),
        "{texts:?}"
    );
    assert!(
        texts
            .iter()
            .any(|t| t.contains("unknown_tool") && t.contains("Did you mean `get_order_status`")),
        "{texts:?}"
    );
    assert_eq!(h.model_events_of("response.create").len(), 1);
    assert_eq!(h.visible_deltas(), "xyz");
}

#[tokio::test]
async fn broken_markers_are_hidden_and_answered_with_an_error() {
    let mut h = Harness::new(true);
    let opening = format!("<<<{TAG}:NAME=");
    // Invalid JSON in one marker, and a marker that never ends.
    let text = format!(
        "ok {opening}get_order_status,ARGUMENTS={{\"order_id\": nope}}>>> then {opening}get_order_status,ARGUMENTS={{\"order_id\":\"AB"
    );
    h.model_all(&response("r1", "msg1", &text, 5));
    h.settle(|h| !h.model_events_of("response.create").is_empty())
        .await;
    assert_eq!(h.runs.load(Ordering::SeqCst), 0);
    assert_eq!(h.visible_deltas(), "ok  then ");
    let everything = serde_json::to_string(&h.to_browser).unwrap();
    assert!(!everything.contains("NAME="), "{everything}");
    let texts = injected_texts(&h);
    assert_eq!(texts.len(), 2, "{texts:?}");
    assert!(texts[0].contains("invalid_json"), "{}", texts[0]);
    assert!(texts[1].contains("no closing"), "{}", texts[1]);
    assert!(
        texts[1].contains(&format!("<<<{TAG}:NAME=tool_name,ARGUMENTS=")),
        "the error repeats the syntax: {}",
        texts[1]
    );
    assert_eq!(h.model_events_of("response.create").len(), 1);
    assert_eq!(h.flow.counters().snapshot().errors, 2);
}

#[tokio::test]
async fn a_client_tool_marker_goes_to_the_browser_and_its_answer_comes_back_as_context() {
    let mut h = Harness::new(true);
    let text = format!(
        "Look here: {}",
        marker("highlight", r##"{"selector":"#refund"}"##)
    );
    h.model_all(&response("r1", "msg1", &text, 6));
    h.settle(|h| h.to_browser.iter().any(|e| e["type"] == "function_call"))
        .await;
    let call = h
        .to_browser
        .iter()
        .find(|e| e["type"] == "function_call")
        .unwrap()
        .clone();
    let call_id = call["call_id"].as_str().unwrap().to_owned();
    assert!(call_id.starts_with(MARKER_CALL_PREFIX), "{call_id}");
    assert_eq!(call["name"], "highlight");
    let answer =
        json!({"type":"function_call.result","call_id":call_id,"output":"{\"highlighted\":true}"});
    assert_eq!(
        h.session.on_browser_event(&answer.to_string()),
        Verdict::Drop
    );
    h.settle(|h| !h.model_events_of("response.create").is_empty())
        .await;
    let texts = injected_texts(&h);
    assert_eq!(texts.len(), 1);
    assert!(texts[0].contains(r#"{"highlighted":true}"#), "{}", texts[0]);
    assert!(h.model_events_of("response.create").len() == 1);
}

#[tokio::test]
async fn echoes_of_injected_results_are_not_relayed() {
    let mut h = Harness::new(true);
    let text = marker("get_order_status", r#"{"order_id":"AB-123456"}"#);
    h.model_all(&response("r1", "msg1", &text, 10));
    h.settle(|h| !h.model_events_of("response.create").is_empty())
        .await;
    let item = h.model_events_of("conversation.item.create")[0]["item"].clone();
    let id = item["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with(RESULT_ITEM_PREFIX) && id.len() <= 32, "{id}");
    let mut echoed = item.clone();
    echoed["object"] = json!("realtime.item");
    echoed["status"] = json!("completed");
    for kind in ["conversation.item.added", "conversation.item.done"] {
        let echo = json!({"type": kind, "event_id": "e", "item": echoed});
        assert_eq!(h.model(&echo), Verdict::Drop, "{kind}");
    }
    // Other items pass untouched.
    let user = json!({"type":"conversation.item.added","event_id":"e2","item":{"id":"u1","type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}});
    assert_eq!(h.model(&user), Verdict::Forward);
    assert_eq!(h.flow.counters().snapshot().hidden_echoes, 2);
}

#[tokio::test]
async fn a_cancelled_response_ends_an_open_marker_quietly() {
    let mut h = Harness::new(true);
    let opening = format!("<<<{TAG}:NAME=get_order_status,ARGUMENTS={{");
    let mut events = vec![toolc_runtime::realtime::script::response_created("r1")];
    events.push(json!({
        "type": "response.output_text.delta", "event_id": "d1", "response_id": "r1",
        "item_id": "msg1", "output_index": 0, "content_index": 0,
        "delta": format!("Sure {opening}"),
    }));
    let mut done = toolc_runtime::realtime::script::response_done("r1", vec![]);
    done["response"]["status"] = json!("cancelled");
    events.push(done);
    h.model_all(&events);
    h.settle(|_| false).await;
    assert_eq!(h.visible_deltas(), "Sure ");
    assert!(h.to_model.is_empty(), "{:?}", h.to_model);
    assert_eq!(h.session.open_calls(), 0);
}

#[tokio::test]
async fn text_that_only_looks_like_a_marker_is_released() {
    let mut h = Harness::new(true);
    let text = "a << b <<<OTHER:x>>> <<<APIPILOT_CAL c";
    h.model_all(&response("r1", "msg1", text, 1));
    assert_eq!(h.visible_deltas(), text);
    assert!(h.to_model.is_empty());
    // Nothing needed rewriting in the events that repeat the text.
    let done = h
        .to_browser
        .iter()
        .find(|e| e["type"] == "response.output_text.done")
        .unwrap();
    assert_eq!(done["text"], text);
}

#[tokio::test]
async fn a_part_without_deltas_is_scanned_at_its_done_event() {
    let mut h = Harness::new(true);
    let text = format!(
        "Checking. {}",
        marker("get_order_status", r#"{"order_id":"AB-123456"}"#)
    );
    let mut events = text_response("r1", "msg1", &[&text]);
    events.retain(|e| e["type"] != "response.output_text.delta");
    h.model_all(&events);
    h.settle(|h| !h.model_events_of("response.create").is_empty())
        .await;
    assert_eq!(h.runs.load(Ordering::SeqCst), 1);
    let done = h
        .to_browser
        .iter()
        .find(|e| e["type"] == "response.output_text.done")
        .unwrap();
    assert_eq!(done["text"], "Checking. ");
    assert_eq!(h.model_events_of("conversation.item.create").len(), 1);
}

#[tokio::test]
async fn without_the_flow_marker_text_passes_unchanged() {
    let mut h = Harness::new(false);
    let text = format!(
        "Hi {}",
        marker("get_order_status", r#"{"order_id":"AB-123456"}"#)
    );
    let events = response("r1", "msg1", &text, 4);
    for e in &events {
        assert_eq!(h.model(e), Verdict::Forward);
    }
    h.settle(|_| false).await;
    assert_eq!(h.visible_deltas(), text);
    assert!(h.to_model.is_empty());
    assert_eq!(h.runs.load(Ordering::SeqCst), 0);
}

#[test]
fn the_catalog_is_declared_after_the_application_and_browser_instructions() {
    let h = Harness::with_config(true, |c| {
        c.session
            .insert("instructions".into(), json!("You are a support agent."));
    });
    let update: Value = serde_json::from_str(&h.session.session_update()).unwrap();
    let instructions = update["session"]["instructions"].as_str().unwrap();
    assert!(instructions.starts_with("You are a support agent.\n\n# Tools"));
    assert!(instructions.contains("<<<APIPILOT_CALL:NAME=get_order_status,ARGUMENTS="));
    assert!(instructions.ends_with(h.flow.instructions()));

    let mut h = h;
    let theirs = json!({"type":"session.update","session":{"type":"realtime","instructions":"Speak French."}});
    let Verdict::Replace(merged) = h.session.on_browser_event(&theirs.to_string()) else {
        panic!("a session.update is merged");
    };
    let merged: Value = serde_json::from_str(&merged).unwrap();
    let instructions = merged["session"]["instructions"].as_str().unwrap();
    assert!(
        instructions.starts_with("Speak French.\n\n# Tools"),
        "{instructions}"
    );
    // Without instructions of its own, the browser's update keeps the declared catalog.
    let bare = json!({"type":"session.update","session":{"type":"realtime","audio":{}}});
    let Verdict::Replace(merged) = h.session.on_browser_event(&bare.to_string()) else {
        panic!("a session.update is merged");
    };
    let merged: Value = serde_json::from_str(&merged).unwrap();
    assert!(merged["session"].get("instructions").is_none());

    let off = Harness::new(false);
    let update: Value = serde_json::from_str(&off.session.session_update()).unwrap();
    assert!(update["session"].get("instructions").is_none());
}

// ---- the GA schemas ----------------------------------------------------------------------

fn spec() -> Value {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let rel = "shared/specs/openai/openai-tool-calling-schemas.extract.json";
    let a = manifest.join("../..").join(rel);
    let path = if a.exists() {
        a
    } else {
        manifest.join("..").join(rel)
    };
    let text = std::fs::read_to_string(&path).expect("the OpenAI spec extract is readable");
    serde_json::from_str(&text).expect("the spec is JSON")
}

fn schema_errors(spec: &Value, schema: &str, instance: &Value) -> Vec<String> {
    let mut doc = spec.clone();
    doc["$ref"] = Value::String(format!("#/components/schemas/{schema}"));
    let validator = jsonschema::draft202012::new(&doc).expect("the spec compiles");
    validator
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path().as_str()))
        .collect()
}

fn assert_valid(spec: &Value, schema: &str, instance: &Value) {
    let errors = schema_errors(spec, schema, instance);
    assert!(
        errors.is_empty(),
        "{schema} rejects {instance}:\n{}",
        errors.join("\n")
    );
}

#[tokio::test]
async fn what_the_flow_sends_and_rewrites_validates_against_the_ga_schemas() {
    let spec = spec();
    let mut h = Harness::new(true);
    let text = format!(
        "One moment. {} {}",
        marker("get_order_status", r#"{"order_id":"AB-123456"}"#),
        marker("get_order_status", r#"{"order_id":"X"}"#)
    );
    let events = response("r1", "msg1", &text, 5);
    // The scripted events themselves are valid server events.
    let server_schema = |kind: &str| match kind {
        "response.created" => "RealtimeServerEventResponseCreated",
        "response.output_item.added" => "RealtimeServerEventResponseOutputItemAdded",
        "response.content_part.added" => "RealtimeServerEventResponseContentPartAdded",
        "response.output_text.delta" => "RealtimeServerEventResponseTextDelta",
        "response.output_text.done" => "RealtimeServerEventResponseTextDone",
        "response.content_part.done" => "RealtimeServerEventResponseContentPartDone",
        "response.output_item.done" => "RealtimeServerEventResponseOutputItemDone",
        "response.done" => "RealtimeServerEventResponseDone",
        other => panic!("no schema for {other}"),
    };
    for e in &events {
        assert_valid(&spec, server_schema(e["type"].as_str().unwrap()), e);
    }
    h.model_all(&events);
    h.settle(|h| !h.model_events_of("response.create").is_empty())
        .await;
    // What the browser got (rewritten or not) is still valid.
    for e in &h.to_browser {
        assert_valid(&spec, server_schema(e["type"].as_str().unwrap()), e);
    }
    assert_eq!(h.model_events_of("conversation.item.create").len(), 2);
    for e in &h.to_model {
        let schema = match e["type"].as_str().unwrap() {
            "conversation.item.create" => {
                assert_valid(&spec, "RealtimeConversationItemMessageSystem", &e["item"]);
                "RealtimeClientEventConversationItemCreate"
            }
            "response.create" => "RealtimeClientEventResponseCreate",
            other => panic!("unexpected {other}"),
        };
        assert_valid(&spec, schema, e);
    }
    let update: Value = serde_json::from_str(&h.session.session_update()).unwrap();
    assert_valid(&spec, "RealtimeClientEventSessionUpdate", &update);
}

// ---- property: whatever the split, the browser sees the text without markers --------------

#[derive(Clone, Debug)]
enum Segment {
    Text(String),
    Marker(String),
}

fn segment() -> impl Strategy<Value = Segment> {
    prop_oneof![
        3 => "[ab <>é\n{}\"]{0,12}".prop_map(Segment::Text),
        1 => "[A-Z]{1,6}".prop_map(Segment::Marker),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn the_browser_sees_the_text_without_markers_however_it_is_split(
        segments in prop::collection::vec(segment(), 0..8),
        cuts in prop::collection::vec(1usize..9, 1..40),
    ) {
        let mut text = String::new();
        let mut visible = String::new();
        let mut markers = 0;
        for s in &segments {
            match s {
                Segment::Text(t) => {
                    text.push_str(t);
                    visible.push_str(t);
                }
                Segment::Marker(id) => {
                    text.push_str(&marker("get_order_status", &json!({ "order_id": id }).to_string()));
                    markers += 1;
                }
            }
        }
        // Cut at character boundaries, with sizes taken in turn from `cuts`.
        let chars: Vec<char> = text.chars().collect();
        let mut deltas = Vec::new();
        let mut at = 0;
        let mut k = 0;
        while at < chars.len() {
            let n = cuts[k % cuts.len()].min(chars.len() - at);
            deltas.push(chars[at..at + n].iter().collect::<String>());
            at += n;
            k += 1;
        }
        let refs: Vec<&str> = deltas.iter().map(String::as_str).collect();
        let mut h = Harness::new(true);
        h.model_all(&text_response("r1", "msg1", &refs));
        let shown = h.visible_deltas();
        let done = h.to_browser.iter().find(|e| e["type"] == "response.output_text.done").unwrap();
        // A trailing prefix of the opening is only released with the part's end (module docs).
        prop_assert!(visible.starts_with(&shown), "{shown:?} vs {visible:?}");
        prop_assert!(visible.len() - shown.len() < "<<<APIPILOT_CALL:NAME=".len());
        prop_assert_eq!(done["text"].as_str().unwrap(), visible.as_str());
        prop_assert_eq!(h.flow.counters().snapshot().calls, markers);
        prop_assert_eq!(h.flow.counters().snapshot().errors, 0);
    }
}

fn any_json() -> impl Strategy<Value = Value> {
    let marker_text =
        format!("x <<<{TAG}:NAME=get_order_status,ARGUMENTS={{\"order_id\":\"AB-1\"}}>>> y");
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        "[a<>{}\"\\\\ ]{0,10}".prop_map(Value::String),
        Just(Value::String(marker_text)),
        Just(Value::String(format!("<<<{TAG}:NAME=get"))),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop_oneof![
                        Just("text".to_owned()),
                        Just("transcript".to_owned()),
                        Just("delta".to_owned()),
                        Just("item".to_owned()),
                        Just("part".to_owned()),
                        Just("content".to_owned()),
                        Just("output".to_owned()),
                        Just("type".to_owned()),
                        Just("id".to_owned()),
                        Just("item_id".to_owned()),
                        Just("response_id".to_owned()),
                        Just("content_index".to_owned()),
                    ],
                    inner
                ),
                0..5
            )
            .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn flow_event() -> impl Strategy<Value = Value> {
    let kinds = prop_oneof![
        Just("response.output_text.delta"),
        Just("response.output_audio_transcript.delta"),
        Just("response.output_text.done"),
        Just("response.output_audio_transcript.done"),
        Just("response.content_part.added"),
        Just("response.content_part.done"),
        Just("response.output_item.done"),
        Just("conversation.item.added"),
        Just("response.done"),
        Just("response.created"),
    ];
    (kinds, any_json()).prop_map(|(kind, body)| {
        let mut event = match body {
            Value::Object(map) => Value::Object(map),
            other => json!({ "delta": other, "text": other, "item_id": "i1" }),
        };
        event["type"] = json!(kind);
        event
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Whatever shape the model's events have (fields missing, of the wrong type, markers in
    /// odd places), the flow does not panic.
    #[test]
    fn arbitrary_events_never_panic_the_flow(events in prop::collection::vec(flow_event(), 0..12)) {
        let mut h = Harness::new(true);
        for e in &events {
            h.session.on_model_event(&e.to_string());
        }
        let _ = h.session.drain_outputs().count();
    }
}
