//! The call behaviours as session rules on Gemini Live (the same harness as
//! `realtime_behaviours.rs`): setup, batches, calls reported twice, cancellation, background
//! results and their scheduling, and what the browser may send.
#![cfg(feature = "testing")]

mod common {
    pub mod behaviours;
    pub mod session;
}

use std::sync::atomic::Ordering;
use std::time::Duration;

use common::behaviours::Harness;
use serde_json::{json, Value};
use toolc_runtime::realtime::{script, Note, RealtimeProvider, RejectReason, Scheduling, Verdict};

#[tokio::test(start_paused = true)]
async fn live_setup_declares_every_tool_with_full_json_schema_and_its_behavior() {
    let h = Harness::live();
    let setup: Value = serde_json::from_str(&h.session.session_update()).unwrap();
    let declarations = setup["setup"]["tools"][0]["functionDeclarations"]
        .as_array()
        .unwrap();
    let of = |name: &str| {
        declarations
            .iter()
            .find(|d| d["name"] == name)
            .unwrap_or_else(|| panic!("{name} declared"))
    };
    assert_eq!(of("generate_report")["behavior"], "NON_BLOCKING");
    assert_eq!(of("search")["behavior"], "BLOCKING");
    assert_eq!(
        of("delete_account")["parametersJsonSchema"]["additionalProperties"],
        false,
        "full JSON Schema, not the restricted subset"
    );
    assert!(of("search").get("parametersJsonSchema").is_none());
    assert!(setup["setup"]["model"]
        .as_str()
        .unwrap()
        .starts_with("models/"));
}

#[tokio::test(start_paused = true)]
async fn live_server_calls_run_here_and_answer_in_one_tool_response_the_browser_never_sees() {
    let mut h = Harness::live();
    let verdict = h.model(&script::live::tool_call(&[
        ("c1", "search", json!({})),
        ("c2", "delete_account", json!({"user": "ann"})),
        ("c3", "highlight", json!({"selector": "#buy"})),
    ]));
    // The page sees only its own call, in the Live message and as a browser-protocol call.
    let Verdict::Replace(text) = verdict else {
        panic!("rewritten, got {verdict:?}")
    };
    assert!(
        text.contains("c3") && !text.contains("c1") && !text.contains("ann"),
        "{text}"
    );
    assert_eq!(h.browser_of("function_call").len(), 1);
    h.run_for(Duration::from_secs(4)).await;
    let request = h.approval_request();
    let id = request["approval_id"].as_str().unwrap().to_owned();
    h.answer_approval(&id, true, None);
    h.answer_call("c3", r#"{"highlighted":true}"#);
    h.run_for(Duration::from_millis(10)).await;
    let responses = h.tool_responses();
    assert_eq!(
        responses.len(),
        1,
        "one toolResponse for the batch: {responses:#?}"
    );
    let by_id = |id: &str| responses[0].iter().find(|r| r["id"] == id).unwrap().clone();
    assert_eq!(by_id("c1")["response"], json!({"output": {"hits": 3}}));
    assert_eq!(
        by_id("c2")["response"],
        json!({"output": {"deleted": "ann"}})
    );
    assert_eq!(
        by_id("c3")["response"],
        json!({"output": {"highlighted": true}})
    );
    assert_eq!(by_id("c1")["name"], "search");
    assert!(h.to_browser.iter().all(|m| !m.to_string().contains("hits")));
}

#[tokio::test(start_paused = true)]
async fn live_a_call_in_the_model_turn_and_the_tool_call_runs_once() {
    let mut h = Harness::live();
    h.model(&script::live::model_turn_call(
        "c1",
        "delete_account",
        json!({"user": "ann"}),
    ));
    h.model(&script::live::tool_call(&[(
        "c1",
        "delete_account",
        json!({"user": "ann"}),
    )]));
    h.run_for(Duration::from_secs(1)).await;
    let id = h.approval_request()["approval_id"]
        .as_str()
        .unwrap()
        .to_owned();
    h.answer_approval(&id, true, None);
    h.run_for(Duration::from_millis(10)).await;
    assert_eq!(h.seen.deletions.load(Ordering::SeqCst), 1);
    assert_eq!(h.tool_responses().concat().len(), 1);
    assert_eq!(h.session.counters().snapshot().duplicate_calls, 1);
}

#[tokio::test(start_paused = true)]
async fn live_cancellation_takes_the_barge_in_path_and_sends_no_result() {
    let mut h = Harness::live();
    h.model(&script::live::tool_call(&[
        ("c1", "search", json!({})),
        ("c2", "highlight", json!({"selector": "#a"})),
    ]));
    h.run_for(Duration::from_secs(1)).await;
    let verdict = h.model(&script::live::cancellation(&["c1", "c2"]));
    h.run_for(Duration::from_secs(5)).await;
    assert_eq!(h.seen.searches_cancelled.load(Ordering::SeqCst), 1);
    assert_eq!(h.seen.searches_finished.load(Ordering::SeqCst), 0);
    let cancels = h.browser_of("toolc.cancel");
    assert_eq!(cancels.len(), 1, "only the page's own call");
    assert_eq!(cancels[0]["call_id"], "c2");
    // The browser's copy of the cancellation names only its call.
    let Verdict::Replace(text) = verdict else {
        panic!("{verdict:?}")
    };
    assert!(text.contains("c2") && !text.contains("c1"), "{text}");
    // The model takes nothing for cancelled calls, and a late page result is refused.
    h.answer_call("c2", r#"{"late":true}"#);
    assert!(h.tool_responses().is_empty(), "{:#?}", h.to_model);
    assert!(h.notes().iter().any(|n| matches!(
        n,
        Note::ResultRejected { call_id, reason: RejectReason::NotOpen } if call_id == "c2"
    )));
    assert_eq!(h.session.counters().snapshot().interrupted_calls, 2);
}

#[tokio::test(start_paused = true)]
async fn live_an_async_call_says_started_at_once_and_its_result_is_scheduled() {
    let mut h = Harness::for_provider(RealtimeProvider::GeminiLive, |c| {
        c.scheduling_of
            .insert("generate_report".into(), Scheduling::Interrupt);
    });
    h.model(&script::live::tool_call(&[(
        "c1",
        "generate_report",
        json!({"topic": "tides"}),
    )]));
    h.run_for(Duration::from_millis(10)).await;
    let responses = h.tool_responses();
    assert_eq!(responses.len(), 1);
    assert_eq!(responses[0][0]["response"]["output"]["status"], "started");
    assert_eq!(responses[0][0]["willContinue"], true);
    assert_eq!(responses[0][0]["scheduling"], "SILENT");
    h.run_for(Duration::from_secs(6)).await;
    let responses = h.tool_responses();
    assert_eq!(responses.len(), 2);
    let last = &responses[1][0];
    assert_eq!(last["id"], "c1");
    assert_eq!(last["scheduling"], "INTERRUPT");
    assert_eq!(last["response"]["output"]["report"], "all about tides");
    assert!(last.get("willContinue").is_none());
}

#[tokio::test(start_paused = true)]
async fn live_an_async_result_takes_the_manifests_scheduling() {
    let mut h = Harness::live();
    h.model(&script::live::tool_call(&[(
        "c1",
        "generate_report",
        json!({"topic": "tides"}),
    )]));
    h.run_for(Duration::from_secs(6)).await;
    let responses = h.tool_responses();
    assert_eq!(responses.len(), 2);
    assert_eq!(
        responses[1][0]["scheduling"], "SILENT",
        "`scheduling: silent`"
    );
}

#[tokio::test(start_paused = true)]
async fn live_a_cancelled_call_that_does_not_cancel_runs_on_and_its_batch_goes_without_it() {
    let mut h = Harness::live();
    h.model(&script::live::tool_call(&[
        ("c1", "play_video", json!({})),
        ("c2", "highlight", json!({"selector": "#a"})),
        ("c3", "delete_account", json!({"user": "ann"})),
    ]));
    h.run_for(Duration::from_millis(10)).await;
    let id = h.approval_request()["approval_id"]
        .as_str()
        .unwrap()
        .to_owned();
    h.answer_approval(&id, true, None);
    h.run_for(Duration::from_millis(10)).await;
    h.model(&script::live::cancellation(&["c1", "c2"]));
    // `play_video` has `cancel_on_interruption: false`: the page is not told to stop it.
    let cancels: Vec<&Value> = h.browser_of("toolc.cancel");
    assert_eq!(cancels.len(), 1, "{cancels:?}");
    assert_eq!(cancels[0]["call_id"], "c2");
    // The batch's one call the model still wants is answered without waiting for the video.
    let responses = h.tool_responses();
    assert_eq!(responses.len(), 1, "{responses:#?}");
    assert_eq!(responses[0].len(), 1);
    assert_eq!(responses[0][0]["id"], "c3");
    // The video's end is nobody's to hear.
    h.answer_call("c1", r#"{"watched":true}"#);
    h.run_for(Duration::from_secs(6)).await;
    assert_eq!(h.tool_responses().len(), 1);
    assert_eq!(h.session.open_calls(), 0);
}

#[tokio::test(start_paused = true)]
async fn live_audio_passes_and_an_unreadable_call_message_is_dropped() {
    let mut h = Harness::live();
    assert_eq!(h.model(&script::live::audio("AAAA")), Verdict::Forward);
    assert_eq!(h.model(&script::live::setup_complete()), Verdict::Forward);
    assert_eq!(
        h.model(&script::live::turn_complete(false)),
        Verdict::Forward
    );
    let broken =
        r#"{"toolCall":{"functionCalls":[{"id":"c1","name":"search","args":{"q":"\ud800"}}]}}"#;
    assert_eq!(h.session.on_model_event(broken), Verdict::Drop);
    assert_eq!(h.session.counters().snapshot().unreadable_model_events, 1);
    assert_eq!(h.session.counters().snapshot().calls, 0);
}

#[tokio::test(start_paused = true)]
async fn live_browser_input_passes_and_it_cannot_declare_tools_or_answer_calls_upstream() {
    let mut h = Harness::live();
    let audio =
        json!({"realtimeInput": {"audio": {"mimeType": "audio/pcm;rate=16000", "data": "AAAA"}}});
    assert_eq!(h.browser(&audio), Verdict::Forward);
    let text = json!({"clientContent": {"turns": [{"role": "user", "parts": [{"text": "hi"}]}], "turnComplete": true}});
    assert_eq!(h.browser(&text), Verdict::Forward);
    h.model(&script::live::tool_call(&[("c1", "search", json!({}))]));
    for (message, code) in [
        (
            json!({"setup": {"tools": [{"functionDeclarations": [{"name": "steal"}]}]}}),
            "setup_not_allowed",
        ),
        (
            json!({"toolResponse": {"functionResponses": [{"id": "c1", "name": "search", "response": {"output": 1}}]}}),
            "tool_response_not_allowed",
        ),
        (
            json!({"clientContent": {"turns": [{"role": "user", "parts": [{"functionResponse": {"id": "c1", "name": "search", "response": {}}}]}]}}),
            "call_part_not_allowed",
        ),
        (
            json!({"realtimeInput": {}, "clientContent": {}}),
            "not_one_message",
        ),
        (json!({}), "not_one_message"),
        // The page may not replace the declarations mid-session (and so call a server tool's
        // name as its own, or take the tools away).
        (
            json!({"contextUpdate": {"tools": {"tools": [{"functionDeclarations": [{"name": "steal"}]}]}}}),
            "tools_not_allowed",
        ),
        (
            json!({"contextUpdate": {"tools": {"tools": []}}}),
            "tools_not_allowed",
        ),
        // Allow-listed: what the relay does not know is not forwarded.
        (
            json!({"toolCall": {"functionCalls": []}}),
            "unknown_message",
        ),
        (json!({"type": 7}), "unknown_message"),
    ] {
        assert_eq!(h.browser(&message), Verdict::Drop, "{message}");
        let error = h.to_browser.last().unwrap();
        assert_eq!(error["error"]["code"], code, "{message}");
    }
    assert_eq!(
        h.session
            .on_browser_event(r#"{"realtimeInput":{},"realtimeInput":{}}"#),
        Verdict::Drop
    );
    let instructions =
        json!({"contextUpdate": {"systemInstruction": {"parts": [{"text": "Be brief."}]}}});
    assert_eq!(h.browser(&instructions), Verdict::Forward);
    // A server call is answered only by its executor, never by the page.
    h.answer_call("c1", r#"{"hits":99}"#);
    h.run_for(Duration::from_secs(4)).await;
    let responses = h.tool_responses().concat();
    assert_eq!(responses.len(), 1);
    assert_eq!(responses[0]["response"]["output"]["hits"], 3);
}
