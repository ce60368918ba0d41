//! The opt-in `toolc.trace` events (`SessionConfig::trace_calls`): one per resolved call, in the
//! browser's stream, naming a server call without its id, arguments or result; none when the
//! option is off (the default).
#![cfg(feature = "testing")]

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use toolc_runtime::realtime::{
    script, Output, RealtimeSession, SessionConfig, SessionEvents, Verdict,
};
use toolc_runtime::{definitions_from_str, executor_fn, Registry, ToolError};

const MANIFEST: &str = r#"
version: 1
tools:
  - name: lookup
    description: Look a word up.
    location: server
    parameters:
      type: object
      properties: { word: { type: string } }
      required: [word]
  - name: refuse
    description: Fails.
    location: server
  - name: highlight
    description: Highlight an element.
    location: client
    timeout: 300ms
    parameters:
      type: object
      properties: { selector: { type: string } }
      required: [selector]
  - name: toast
    description: Show a toast.
    location: client
    wait_for_response: false
"#;

fn session(trace: bool) -> (RealtimeSession, SessionEvents) {
    let defs = definitions_from_str("trace.tools.yaml", MANIFEST).expect("manifest");
    let registry = Registry::builder()
        .definitions(defs)
        .executor(
            "lookup",
            executor_fn(|args: Value| async move {
                Ok(json!({ "meaning": format!("classified meaning of {}", args["word"]) }))
            }),
        )
        .executor(
            "refuse",
            executor_fn(|_| async { Err(ToolError::new("not today")) }),
        )
        .build()
        .expect("registry");
    let registry = Arc::new(registry);
    let mut config = SessionConfig::new(&registry);
    config.filler_delay = None;
    config.trace_calls = trace;
    RealtimeSession::new(registry, Arc::new(config))
}

/// Plays one response with every kind of call, answers the client call, and returns what the
/// browser received.
async fn play(trace: bool) -> Vec<Value> {
    let (mut session, mut events) = session(trace);
    let mut to_browser = Vec::new();
    let calls = script::response_with_calls(
        "r1",
        &[
            ("c_srv", "lookup", r#"{"word":"secret-word"}"#),
            ("c_bad", "refuse", "{}"),
            ("c_hl", "highlight", r##"{"selector":"#buy"}"##),
            ("c_toast", "toast", "{}"),
            ("c_ghost", "no_such_tool", "{}"),
        ],
    );
    for event in &calls {
        if let Verdict::Forward = session.on_model_event(&event.to_string()) {
            to_browser.push(event.clone());
        }
    }
    let until = tokio::time::Instant::now() + Duration::from_secs(2);
    while session.open_calls() > 0 {
        let Ok(Some(event)) = tokio::time::timeout_at(until, events.recv()).await else {
            panic!("calls did not resolve: {} open", session.open_calls());
        };
        session.on_event(event);
        for out in session.drain_outputs().collect::<Vec<_>>() {
            if let Output::ToBrowser(text) = out {
                let v: Value = serde_json::from_str(&text).unwrap();
                if v["type"] == "function_call" && v["name"] == "highlight" {
                    let answer = json!({"type":"function_call.result","call_id":"c_hl","output":"{\"found\":true}"});
                    session.on_browser_event(&answer.to_string());
                }
                to_browser.push(v);
            }
        }
    }
    for out in session.drain_outputs().collect::<Vec<_>>() {
        if let Output::ToBrowser(text) = out {
            to_browser.push(serde_json::from_str(&text).unwrap());
        }
    }
    to_browser
}

#[tokio::test]
async fn every_resolved_call_is_traced_without_server_details() {
    let seen = play(true).await;
    let mut traces: Vec<&Value> = seen.iter().filter(|e| e["type"] == "toolc.trace").collect();
    traces.sort_by_key(|t| t["name"].as_str().unwrap_or_default().to_owned());
    let names: Vec<&str> = traces.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["highlight", "lookup", "refuse", "toast"],
        "{seen:?}"
    );

    let (highlight, lookup, refuse, toast) = (traces[0], traces[1], traces[2], traces[3]);
    assert_eq!(highlight["call_id"], "c_hl");
    assert_eq!(highlight["location"], "client");
    assert_eq!(highlight["status"], "ok");
    assert_eq!(toast["call_id"], "c_toast");
    assert_eq!(toast["status"], "acknowledged");
    assert_eq!(lookup["location"], "server");
    assert_eq!(lookup["status"], "ok");
    assert!(lookup.get("call_id").is_none(), "{lookup}");
    assert_eq!(refuse["status"], "error");
    assert_eq!(refuse["error"], "tool_failed");
    for t in &traces {
        assert!(t["duration_ms"].as_f64().is_some_and(|d| d >= 0.0), "{t}");
    }

    let text = serde_json::to_string(&seen).unwrap();
    for hidden in [
        "c_srv",
        "c_bad",
        "secret-word",
        "classified",
        "no_such_tool",
    ] {
        assert!(
            !text.contains(hidden),
            "`{hidden}` reached the browser: {text}"
        );
    }
}

#[tokio::test]
async fn nothing_is_traced_by_default() {
    let seen = play(false).await;
    assert!(seen.iter().all(|e| e["type"] != "toolc.trace"), "{seen:?}");
    assert!(
        seen.iter().any(|e| e["type"] == "function_call"),
        "the browser still gets its calls"
    );
}
