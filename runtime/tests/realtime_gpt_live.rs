//! The session rules on OpenAI GPT-Live with Responses delegation (the same manifest and
//! harness as `realtime_behaviours.rs`): the tools declared to the delegated backend, calls
//! nested in `response.event`, one continuation per backend response, what the page sees and
//! may send; and every event of these scenarios checked against OpenAI's own SDK
//! (`openai.types.live`, `tests/gpt-live/validate.py`), unknown members refused.
#![cfg(feature = "testing")]

mod common {
    pub mod behaviours;
    pub mod session;
}

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Duration;

use common::behaviours::Harness;
use serde_json::{json, Value};
use toolc_runtime::realtime::script::gpt_live as script;
use toolc_runtime::realtime::{
    client_delegate, DelegationAnswer, Note, RealtimeProvider, RejectReason, Speaker, Verdict,
};

fn gpt_live() -> Harness {
    Harness::for_provider(RealtimeProvider::GptLive, |_| {})
}

/// A session whose client delegations run here: the answer names the last thing the user said.
fn with_delegate() -> Harness {
    Harness::for_provider(RealtimeProvider::GptLive, |config| {
        config.client_delegate = Some(client_delegate(|delegation, ctx| async move {
            assert_eq!(ctx.call_id(), delegation.id);
            let asked = delegation
                .transcript
                .iter()
                .rev()
                .find(|line| line.speaker == Speaker::User)
                .map(|line| line.text.clone())
                .unwrap_or_default();
            DelegationAnswer::Say(format!("Order AB-1 has shipped ({asked})."))
        }));
    })
}

fn transcript(kind: &str, delta: &str) -> Value {
    json!({"type": kind, "event_id": "evt_t", "delta": delta, "start_ms": 0, "end_ms": 10})
}

/// The `function_call_output` items sent to the backend, as (call id, output text).
fn outputs(h: &Harness) -> Vec<(String, String)> {
    h.to_model
        .iter()
        .filter(|e| {
            e["type"] == "response.item.create" && e["item"]["type"] == "function_call_output"
        })
        .map(|e| {
            let item = &e["item"];
            (
                item["call_id"].as_str().unwrap().to_owned(),
                item["output"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn continuations(h: &Harness) -> usize {
    h.model_events_of("response.create").len()
}

/// One backend response of delegation `d1` that calls `calls`, fed to the session.
fn delegate(h: &mut Harness, response_id: &str, calls: &[(&str, &str, &str)]) -> Vec<Verdict> {
    h.model(&script::delegation_created("d1", "responses"));
    script::response_with_calls("d1", response_id, calls)
        .iter()
        .map(|e| h.model(e))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn session_start_declares_the_manifest_to_the_delegated_backend_strict_where_it_can() {
    let h = gpt_live();
    let start: Value = serde_json::from_str(&h.session.session_update()).unwrap();
    assert_eq!(start["type"], "session.start");
    assert_eq!(start["session"]["model"], "gpt-live-1");
    let delegation = &start["session"]["delegation"];
    assert_eq!(delegation["type"], "responses");
    let tools = delegation["responses"]["tools"].as_array().unwrap();
    let of = |name: &str| tools.iter().find(|t| t["name"] == name).unwrap();
    assert_eq!(tools.len(), 7, "every tool of the manifest: {tools:#?}");
    assert_eq!(of("delete_account")["strict"], true);
    assert_eq!(
        of("delete_account")["parameters"]["required"],
        json!(["user"])
    );
    // `show_card`'s `price` is optional: strict mode makes it required and nullable.
    let card = &of("show_card")["parameters"];
    assert_eq!(of("show_card")["strict"], true);
    assert_eq!(card["required"], json!(["title", "price"]));
    assert!(!h.session.upstream_ready(), "not before session.started");
}

#[tokio::test(start_paused = true)]
async fn a_server_call_runs_here_and_the_page_never_sees_it() {
    let mut h = gpt_live();
    h.model(&script::session_started("sess_1"));
    assert!(h.session.upstream_ready());
    let verdicts = delegate(&mut h, "resp_1", &[("c1", "search", "{}")]);
    // The call's four nested events are dropped; the lifecycle snapshots pass.
    let dropped = verdicts.iter().filter(|v| **v == Verdict::Drop).count();
    assert_eq!(dropped, 4, "{verdicts:?}");
    assert!(
        !h.to_browser.iter().any(|e| e.to_string().contains("c1")),
        "{:#?}",
        h.to_browser
    );
    assert_eq!(continuations(&h), 0, "nothing before the result");
    h.run_for(Duration::from_secs(4)).await;
    assert_eq!(outputs(&h), vec![("c1".into(), r#"{"hits":3}"#.into())]);
    assert_eq!(continuations(&h), 1);
    assert_eq!(h.seen.searches_finished.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn parallel_calls_of_one_response_get_one_continuation_after_the_last_result() {
    let mut h = gpt_live();
    h.model(&script::session_started("sess_1"));
    delegate(
        &mut h,
        "resp_1",
        &[
            ("c1", "search", "{}"),
            ("c2", "highlight", r##"{"selector":"#buy"}"##),
        ],
    );
    // The page gets its own call, as the browser protocol's call and in the raw stream.
    let calls = h.browser_of("function_call");
    assert_eq!(calls.len(), 1, "{:#?}", h.to_browser);
    assert_eq!(calls[0]["call_id"], "c2");
    h.run_for(Duration::from_secs(4)).await;
    assert_eq!(continuations(&h), 0, "the page's call is still open");
    h.answer_call("c2", r#"{"highlighted":true}"#);
    h.run_for(Duration::from_millis(10)).await;
    let outputs = outputs(&h);
    assert_eq!(outputs.len(), 2, "{outputs:?}");
    assert_eq!(continuations(&h), 1, "one response.create for the batch");
    // A second answer to the same call is refused, and nothing more goes to the backend.
    h.answer_call("c2", r#"{"again":true}"#);
    h.run_for(Duration::from_millis(10)).await;
    assert_eq!(self::outputs(&h).len(), 2);
    assert!(h
        .notes()
        .iter()
        .any(|n| matches!(n, Note::ResultRejected { call_id, .. } if call_id == "c2")));
}

#[tokio::test(start_paused = true)]
async fn approvals_arguments_and_nulls_of_strict_mode() {
    let mut h = gpt_live();
    h.model(&script::session_started("sess_1"));
    // The backend writes `null` for the optional `price` it left out (strict mode): removed
    // before validation, so the call is valid and reaches the page without it.
    delegate(
        &mut h,
        "resp_1",
        &[
            ("c1", "show_card", r#"{"title":"Lamp","price":null}"#),
            ("c2", "delete_account", r#"{"user":"ann"}"#),
        ],
    );
    let card = h.browser_of("function_call")[0].clone();
    assert_eq!(card["call_id"], "c1");
    assert_eq!(
        serde_json::from_str::<Value>(card["arguments"].as_str().unwrap()).unwrap(),
        json!({"title": "Lamp"})
    );
    // The server tool that needs approval asks the page; denied, it does not run.
    h.run_for(Duration::from_millis(10)).await;
    let request = h.approval_request();
    assert_eq!(request["name"], "delete_account");
    let id = request["approval_id"].as_str().unwrap().to_owned();
    h.answer_approval(&id, false, Some("not now"));
    h.answer_call("c1", r#"{"shown":true}"#);
    h.run_for(Duration::from_millis(10)).await;
    assert_eq!(h.seen.deletions.load(Ordering::SeqCst), 0);
    let denied = outputs(&h).into_iter().find(|(c, _)| c == "c2").unwrap().1;
    assert!(denied.contains("not_approved"), "{denied}");
    assert_eq!(continuations(&h), 1);
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_backend_response_cancels_its_calls_and_earns_no_continuation() {
    let mut h = gpt_live();
    h.model(&script::session_started("sess_1"));
    h.model(&script::delegation_created("d1", "responses"));
    let mut events = script::response_with_calls("d1", "resp_1", &[("c1", "search", "{}")]);
    // The user spoke over it: the response ends cancelled instead of completed.
    events.pop();
    for e in &events {
        h.model(e);
    }
    h.model(&script::response_event(
        "d1",
        99,
        script::lifecycle("response.failed", "resp_1", "cancelled", 9),
    ));
    h.run_for(Duration::from_secs(4)).await;
    assert_eq!(h.seen.searches_cancelled.load(Ordering::SeqCst), 1);
    let out = outputs(&h);
    assert_eq!(out.len(), 1);
    assert!(out[0].1.contains("interrupted"), "{out:?}");
    assert_eq!(continuations(&h), 0);
}

#[tokio::test(start_paused = true)]
async fn the_page_sends_input_and_context_but_nothing_that_is_the_servers() {
    let mut h = gpt_live();
    h.model(&script::session_started("sess_1"));
    let passes = [
        json!({"type": "session.input_audio.append", "audio": "AAAA"}),
        json!({"type": "session.input_audio.mute"}),
        json!({"type": "session.instructions.append", "content": "Be brief."}),
        json!({"type": "session.commentary.append", "content": "The cart is empty.", "delegation_id": null}),
        json!({"type": "session.close"}),
    ];
    for event in &passes {
        assert_eq!(h.browser(event), Verdict::Forward, "{event}");
    }
    assert!(!h.session.last_input_was_audio());
    let refused = [
        (json!({"type": "response.create"}), "server_only_event"),
        (
            json!({"type": "response.item.create", "item": {"type": "function_call_output", "call_id": "c1", "output": "{}"}}),
            "server_only_event",
        ),
        (
            json!({"type": "session.update", "session": {"delegation": {"type": "responses", "responses": {"tools": []}}}}),
            "server_only_event",
        ),
        (
            json!({"type": "session.thinking.append", "content": "done", "delegation_id": "d1"}),
            "server_only_event",
        ),
        (json!({"type": "decision.create"}), "server_only_event"),
        (
            json!({"type": "session.start", "session": {}}),
            "server_only_event",
        ),
        (json!({"type": "tools.replace"}), "unknown_event"),
        (json!({"audio": "AAAA"}), "missing_type"),
    ];
    for (event, code) in &refused {
        let before = h.to_browser.len();
        assert_eq!(h.browser(event), Verdict::Drop, "{event}");
        let error = &h.to_browser[before];
        assert_eq!(error["error"]["code"], *code, "{event}: {error}");
    }
    assert!(h.model_events_of("response.create").is_empty());
    h.browser(&json!({"type": "session.input_audio.append", "audio": "AAAA"}));
    assert!(h.session.last_input_was_audio());
}

#[tokio::test(start_paused = true)]
async fn what_cannot_be_read_is_dropped_and_noted() {
    let mut h = gpt_live();
    for text in [
        "not json",
        r#"{"type":"response.event","type":"session.started"}"#,
        r#"{"no_type":true}"#,
        r#"{"type":"response.event","event_id":"e","delegation_id":"d1"}"#,
        r#"{"type":"response.event","event_id":"e","event":{"item":{}}}"#,
        // Types the SDK does not define: they could carry a server call in a shape the
        // session does not read.
        r#"{"type":"response.function_call_arguments.done","call_id":"c1","arguments":"{}"}"#,
        r#"{"type":"conversation.item.created","item":{"type":"function_call","call_id":"c1"}}"#,
        r#"{"type":"session.tool_call","name":"delete_account"}"#,
        r#"{"type":"response.event","event_id":"e","event":{"type":"response.tool_call.done","call_id":"c1"}}"#,
    ] {
        assert_eq!(h.session.on_model_event(text), Verdict::Drop, "{text}");
    }
    let unreadable = h
        .notes()
        .iter()
        .filter(|n| matches!(n, Note::ModelEventUnreadable { .. }))
        .count();
    assert_eq!(unreadable, 9);
    assert_eq!(h.session.counters().snapshot().unreadable_model_events, 9);
    // Audio and the SDK's other events that are not about calls pass unread.
    assert_eq!(h.model(&script::audio("AAAA")), Verdict::Forward);
    assert_eq!(
        h.model(&json!({"type": "session.usage.updated", "event_id": "e", "usage": {}})),
        Verdict::Forward
    );
}

#[tokio::test(start_paused = true)]
async fn a_refused_continuation_is_kept_from_the_page() {
    let mut h = gpt_live();
    h.model(&script::session_started("sess_1"));
    delegate(&mut h, "resp_1", &[("c1", "search", "{}")]);
    h.run_for(Duration::from_secs(4)).await;
    let create = h.model_events_of("response.create")[0].clone();
    let id = create["event_id"].as_str().unwrap();
    assert_eq!(
        h.model(&script::error(id, "no_waiting_response")),
        Verdict::Drop
    );
    assert!(h
        .notes()
        .iter()
        .any(|n| matches!(n, Note::ResponseRefused { .. })));
    // Someone else's error goes to the page.
    assert_eq!(
        h.model(&script::error("evt_page_1", "bad")),
        Verdict::Forward
    );
}

#[tokio::test(start_paused = true)]
async fn a_background_result_goes_in_when_no_backend_response_is_in_progress() {
    let mut h = gpt_live();
    h.model(&script::session_started("sess_1"));
    delegate(
        &mut h,
        "resp_1",
        &[("c1", "generate_report", r#"{"topic":"sales"}"#)],
    );
    h.run_for(Duration::from_millis(10)).await;
    // "started" at once, then the backend goes on.
    assert_eq!(outputs(&h).len(), 1);
    assert_eq!(continuations(&h), 1);
    // The backend answers in a new response; the result that comes meanwhile waits for its end.
    let next = |kind, status, seq| {
        script::response_event("d1", seq, script::lifecycle(kind, "resp_2", status, seq))
    };
    h.model(&next("response.created", "in_progress", 10));
    h.run_for(Duration::from_secs(6)).await;
    assert!(!h.to_model.iter().any(|e| e["item"]["type"] == "message"));
    h.model(&next("response.completed", "completed", 11));
    let messages: Vec<&Value> = h
        .to_model
        .iter()
        .filter(|e| e["type"] == "response.item.create" && e["item"]["type"] == "message")
        .collect();
    assert_eq!(messages.len(), 1, "{:#?}", h.to_model);
    let text = messages[0]["item"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("all about sales"), "{text}");
    assert_eq!(continuations(&h), 2);
}

#[tokio::test(start_paused = true)]
async fn a_client_delegation_runs_on_the_delegate_over_the_transcript() {
    let mut h = with_delegate();
    h.model(&script::session_started("sess_1"));
    for (kind, delta) in [
        ("session.input_transcript.delta", "Where is "),
        ("session.input_transcript.delta", "my order?"),
        ("session.output_transcript.delta", "Let me check."),
    ] {
        assert_eq!(h.model(&transcript(kind, delta)), Verdict::Forward);
    }
    h.model(&script::delegation_created("dlg_1", "client"));
    h.run_for(Duration::from_millis(10)).await;
    let answers = h.model_events_of("session.commentary.append");
    assert_eq!(answers.len(), 1, "{:#?}", h.to_model);
    assert_eq!(answers[0]["delegation_id"], "dlg_1");
    assert_eq!(
        answers[0]["content"],
        "Order AB-1 has shipped (Where is my order?)."
    );
    // The server answers it: the page may not.
    let refused = h.browser(
        &json!({"type": "session.thinking.append", "content": "x", "delegation_id": "dlg_1"}),
    );
    assert_eq!(refused, Verdict::Drop);
    // A Responses delegation is not the delegate's.
    h.model(&script::delegation_created("dlg_2", "responses"));
    h.run_for(Duration::from_millis(10)).await;
    assert_eq!(h.model_events_of("session.commentary.append").len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_delegate_that_panics_still_answers_the_model() {
    let mut h = Harness::for_provider(RealtimeProvider::GptLive, |config| {
        config.client_delegate = Some(client_delegate(|_, _| async {
            panic!("backend down");
        }));
    });
    h.model(&script::session_started("sess_1"));
    h.model(&script::delegation_created("dlg_1", "client"));
    h.run_for(Duration::from_millis(10)).await;
    let answers = h.model_events_of("session.thinking.append");
    assert_eq!(answers.len(), 1, "{:#?}", h.to_model);
    assert_eq!(answers[0]["delegation_id"], "dlg_1");
    assert!(!answers[0].to_string().contains("backend down"));
}

#[tokio::test(start_paused = true)]
async fn without_a_delegate_the_page_answers_its_client_delegations_and_no_other() {
    let mut h = gpt_live();
    h.model(&script::session_started("sess_1"));
    h.model(&script::delegation_created("dlg_1", "client"));
    h.model(&script::delegation_created("dlg_2", "responses"));
    let answer = |id: &str| json!({"type": "session.commentary.append", "content": "Shipped.", "delegation_id": id});
    assert_eq!(h.browser(&answer("dlg_1")), Verdict::Forward);
    assert_eq!(h.browser(&answer("dlg_2")), Verdict::Drop, "the backend's");
    assert_eq!(h.browser(&answer("dlg_9")), Verdict::Drop, "never created");
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Every event of a full scenario, both sides, through OpenAI's SDK.
#[tokio::test(start_paused = true)]
async fn every_event_validates_with_openais_sdk() {
    let mut h = with_delegate();
    let mut lines = format!("client {}\n", h.session.session_update());
    let mut server = vec![
        script::session_started("sess_1"),
        script::delegation_created("d1", "responses"),
        script::audio("AAAA"),
        script::error("toolc_response_1", "no_waiting_response"),
        transcript("session.input_transcript.delta", "Where is my order?"),
        transcript("session.output_transcript.delta", "Let me check."),
        script::delegation_created("dlg_client", "client"),
    ];
    server.extend(script::response_with_calls(
        "d1",
        "resp_1",
        &[
            ("c1", "search", "{}"),
            ("c2", "highlight", r##"{"selector":"#buy"}"##),
            ("c3", "generate_report", r#"{"topic":"sales"}"#),
        ],
    ));
    for event in &server {
        lines.push_str(&format!("server {event}\n"));
        h.model(event);
    }
    h.answer_call("c2", "{}");
    h.run_for(Duration::from_secs(4)).await;
    // The backend's next response, during which the background result arrives.
    let next = |kind, status, seq| {
        script::response_event("d1", seq, script::lifecycle(kind, "resp_2", status, seq))
    };
    let started = next("response.created", "in_progress", 20);
    lines.push_str(&format!("server {started}\n"));
    h.model(&started);
    h.run_for(Duration::from_secs(2)).await;
    let done = next("response.completed", "completed", 21);
    lines.push_str(&format!("server {done}\n"));
    h.model(&done);
    assert_eq!(h.model_events_of("session.commentary.append").len(), 1);
    // A toolset choice goes to the backend as `session.update`.
    h.session.select_toolsets::<&str>(&[]).unwrap();
    h.drain();
    assert_eq!(h.model_events_of("session.update").len(), 1);
    // Three results, the background message, and the continuations.
    assert_eq!(outputs(&h).len(), 3, "{:#?}", h.to_model);
    assert!(h.to_model.iter().any(|e| e["item"]["type"] == "message"));
    assert!(continuations(&h) >= 2, "{:#?}", h.to_model);
    for event in &h.to_model {
        lines.push_str(&format!("client {event}\n"));
    }
    let python = repo().join("tests/mcp/.venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup (it installs OpenAI's SDK there)",
        python.display()
    );
    let dir = std::env::temp_dir().join(format!("toolc-gpt-live-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("events.jsonl");
    std::fs::write(&file, &lines).unwrap();
    let out = std::process::Command::new(&python)
        .arg(repo().join("tests/gpt-live/validate.py"))
        .arg(&file)
        .output()
        .expect("the validator runs");
    let _ = std::fs::remove_dir_all(&dir);
    let report =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{report}");
    let accepted = lines.lines().count();
    assert!(
        report.contains(&format!("{accepted} accepted, 0 refused")),
        "{report}"
    );

    // And the validator refuses what the SDK does not define.
    let bad = "client {\"type\":\"response.create\",\"response\":{\"tools\":[]}}\n";
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(&file, bad).unwrap();
    let out = std::process::Command::new(&python)
        .arg(repo().join("tests/gpt-live/validate.py"))
        .arg(&file)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        !out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[tokio::test(start_paused = true)]
async fn a_continuation_the_backend_never_starts_is_asked_for_again() {
    let mut h = gpt_live();
    h.model(&script::session_started("sess_1"));
    delegate(&mut h, "resp_1", &[("c1", "search", "{}")]);
    h.run_for(Duration::from_secs(4)).await;
    assert_eq!(continuations(&h), 1);
    h.run_for(Duration::from_secs(15)).await;
    assert_eq!(continuations(&h), 2);
    h.model(&script::response_event(
        "d1",
        50,
        script::lifecycle("response.created", "resp_2", "in_progress", 50),
    ));
    h.run_for(Duration::from_secs(60)).await;
    assert_eq!(continuations(&h), 2);
}

// ---- the session rules of `realtime_behaviours.rs`, on GPT-Live ------------------------------

/// A lifecycle event of delegation `d1`'s response `response_id`.
fn lifecycle(kind: &str, response_id: &str, status: &str, seq: u64) -> Value {
    script::response_event("d1", seq, script::lifecycle(kind, response_id, status, seq))
}

/// The calls of backend response `response_id`, its `response.created` and calls only: the
/// response is still in progress.
fn calls_in_progress(h: &mut Harness, response_id: &str, calls: &[(&str, &str, &str)]) {
    h.model(&script::delegation_created("d1", "responses"));
    let mut events = script::response_with_calls("d1", response_id, calls);
    events.pop();
    for e in &events {
        h.model(e);
    }
}

#[tokio::test(start_paused = true)]
async fn a_continuation_waits_while_another_backend_response_is_in_progress() {
    let mut h = gpt_live();
    h.model(&script::session_started("sess_1"));
    delegate(
        &mut h,
        "resp_1",
        &[("c1", "highlight", r##"{"selector":"#a"}"##)],
    );
    // The user speaks: the live model delegates again before the page answered.
    h.model(&script::delegation_created("d2", "responses"));
    h.model(&script::response_event(
        "d2",
        0,
        script::lifecycle("response.created", "resp_2", "in_progress", 0),
    ));
    h.answer_call("c1", r#"{"ok":true}"#);
    h.run_for(Duration::from_millis(10)).await;
    assert_eq!(outputs(&h).len(), 1, "the result goes in at once");
    assert_eq!(continuations(&h), 0, "the backend is busy: it would refuse");
    h.model(&script::response_event(
        "d2",
        1,
        script::lifecycle("response.completed", "resp_2", "completed", 1),
    ));
    assert_eq!(continuations(&h), 1, "asked for when resp_2 ended");
}

#[tokio::test(start_paused = true)]
async fn a_refused_continuation_asks_again_when_the_next_response_ends() {
    let mut h = gpt_live();
    h.model(&script::session_started("sess_1"));
    delegate(&mut h, "resp_1", &[("c1", "search", "{}")]);
    h.run_for(Duration::from_secs(4)).await;
    let create = h.model_events_of("response.create")[0].clone();
    h.model(&script::error(
        create["event_id"].as_str().unwrap(),
        "conversation_already_has_active_response",
    ));
    assert_eq!(continuations(&h), 1);
    h.model(&lifecycle("response.created", "resp_9", "in_progress", 40));
    h.model(&lifecycle("response.completed", "resp_9", "completed", 41));
    assert_eq!(continuations(&h), 2, "asked again");
    assert_eq!(outputs(&h).len(), 1, "the result is not sent twice");
}

#[tokio::test(start_paused = true)]
async fn an_answer_approves_only_its_own_request_and_the_page_cannot_answer_a_server_call() {
    let mut h = gpt_live();
    h.model(&script::session_started("sess_1"));
    delegate(
        &mut h,
        "resp_1",
        &[("c1", "delete_account", r#"{"user":"ann"}"#)],
    );
    h.run_for(Duration::from_millis(10)).await;
    let id = h.approval_request()["approval_id"]
        .as_str()
        .unwrap()
        .to_owned();
    for forged in [
        json!({"type": "toolc.approval.response", "approval_id": "approval_2", "approved": true}),
        json!({"type": "toolc.approval.response", "approval_id": "c1", "approved": true}),
        json!({"type": "toolc.approval.response", "approval_id": id, "approved": "yes"}),
    ] {
        assert_eq!(h.browser(&forged), Verdict::Drop, "{forged}");
    }
    h.run_for(Duration::from_millis(10)).await;
    assert_eq!(h.seen.deletions.load(Ordering::SeqCst), 0);
    h.answer_call("c1", r#"{"deleted":"everyone"}"#);
    h.answer_approval(&id, true, None);
    h.answer_approval(&id, false, None);
    h.run_for(Duration::from_millis(10)).await;
    assert_eq!(
        outputs(&h),
        vec![("c1".into(), r#"{"deleted":"ann"}"#.into())]
    );
    assert_eq!(h.seen.deletions.load(Ordering::SeqCst), 1);
    assert!(h.notes().iter().any(|n| matches!(
        n,
        Note::ResultRejected { call_id, reason: RejectReason::NotRoutedToBrowser } if call_id == "c1"
    )));
    assert_eq!(continuations(&h), 1);
}

#[tokio::test(start_paused = true)]
async fn an_unanswered_approval_times_out_and_the_question_is_withdrawn() {
    let mut h = Harness::for_provider(RealtimeProvider::GptLive, |c| {
        c.approval_timeout = Duration::from_secs(3)
    });
    h.model(&script::session_started("sess_1"));
    delegate(
        &mut h,
        "resp_1",
        &[("c1", "delete_account", r#"{"user":"ann"}"#)],
    );
    h.run_for(Duration::from_secs(4)).await;
    let out = outputs(&h);
    assert_eq!(out.len(), 1);
    assert!(out[0].1.contains("approval_timeout"), "{out:?}");
    let id = h.approval_request()["approval_id"].clone();
    assert_eq!(h.browser_of("toolc.cancel")[0]["approval_id"], id);
    h.answer_approval(id.as_str().unwrap(), true, None);
    h.run_for(Duration::from_millis(10)).await;
    assert_eq!(h.seen.deletions.load(Ordering::SeqCst), 0);
    assert_eq!(continuations(&h), 1);
}

#[tokio::test(start_paused = true)]
async fn barge_in_during_an_approval_cancels_the_call_and_the_question() {
    let mut h = gpt_live();
    h.model(&script::session_started("sess_1"));
    calls_in_progress(
        &mut h,
        "resp_1",
        &[("c1", "delete_account", r#"{"user":"ann"}"#)],
    );
    h.run_for(Duration::from_millis(10)).await;
    let id = h.approval_request()["approval_id"]
        .as_str()
        .unwrap()
        .to_owned();
    h.model(&lifecycle(
        "response.incomplete",
        "resp_1",
        "incomplete",
        30,
    ));
    h.run_for(Duration::from_millis(10)).await;
    let out = outputs(&h);
    assert_eq!(out.len(), 1);
    assert!(out[0].1.contains("interrupted"), "{out:?}");
    let cancels = h.browser_of("toolc.cancel");
    assert_eq!(cancels.len(), 1, "{cancels:?}");
    assert_eq!(cancels[0]["approval_id"], id.as_str());
    h.answer_approval(&id, true, None);
    h.run_for(Duration::from_secs(1)).await;
    assert_eq!(h.seen.deletions.load(Ordering::SeqCst), 0);
    assert_eq!(continuations(&h), 0);
}

#[tokio::test(start_paused = true)]
async fn a_result_before_the_interruption_stands_and_one_after_is_refused() {
    let mut h = gpt_live();
    h.model(&script::session_started("sess_1"));
    calls_in_progress(
        &mut h,
        "resp_1",
        &[
            ("a", "highlight", r##"{"selector":"#x"}"##),
            ("b", "highlight", r##"{"selector":"#y"}"##),
        ],
    );
    h.run_for(Duration::from_millis(10)).await;
    h.answer_call("a", r#"{"ok":true}"#);
    h.run_for(Duration::from_millis(10)).await;
    h.model(&lifecycle(
        "response.incomplete",
        "resp_1",
        "incomplete",
        30,
    ));
    h.answer_call("b", r#"{"ok":true}"#);
    h.run_for(Duration::from_secs(1)).await;
    let out = outputs(&h);
    assert_eq!(out.len(), 2, "one result per call: {out:?}");
    assert_eq!(out[0], ("a".into(), r#"{"ok":true}"#.into()));
    assert!(
        out[1].0 == "b" && out[1].1.contains("interrupted"),
        "{out:?}"
    );
    assert_eq!(h.browser_of("toolc.cancel")[0]["call_id"], "b");
    assert!(h.notes().iter().any(|n| matches!(
        n,
        Note::ResultRejected { call_id, reason: RejectReason::NotOpen } if call_id == "b"
    )));
    assert_eq!(continuations(&h), 0);
}

#[tokio::test(start_paused = true)]
async fn a_call_that_does_not_cancel_keeps_running_and_earns_the_continuation() {
    let mut h = gpt_live();
    h.model(&script::session_started("sess_1"));
    calls_in_progress(&mut h, "resp_1", &[("c1", "play_video", "{}")]);
    h.model(&lifecycle(
        "response.incomplete",
        "resp_1",
        "incomplete",
        30,
    ));
    h.run_for(Duration::from_millis(10)).await;
    assert!(h.browser_of("toolc.cancel").is_empty());
    assert!(outputs(&h).is_empty());
    h.answer_call("c1", r#"{"played":true}"#);
    h.run_for(Duration::from_millis(10)).await;
    assert_eq!(
        outputs(&h),
        vec![("c1".into(), r#"{"played":true}"#.into())]
    );
    assert_eq!(continuations(&h), 1);
}

#[tokio::test(start_paused = true)]
async fn a_call_reported_twice_runs_once() {
    let mut h = gpt_live();
    h.model(&script::session_started("sess_1"));
    delegate(
        &mut h,
        "resp_1",
        &[("c1", "delete_account", r#"{"user":"ann"}"#)],
    );
    // The same call again, in the completed snapshot of the response.
    let mut completed = script::lifecycle("response.completed", "resp_1", "completed", 30);
    completed["response"]["output"] = json!([{
        "type": "function_call", "id": "fc_c1", "call_id": "c1", "name": "delete_account",
        "arguments": r#"{"user":"ann"}"#, "status": "completed",
    }]);
    let verdict = h.model(&script::response_event("d1", 30, completed));
    let Verdict::Replace(text) = verdict else {
        panic!("the server call is scrubbed from the snapshot: {verdict:?}")
    };
    assert!(!text.contains("c1"), "{text}");
    h.run_for(Duration::from_millis(10)).await;
    let id = h.approval_request()["approval_id"]
        .as_str()
        .unwrap()
        .to_owned();
    h.answer_approval(&id, true, None);
    h.run_for(Duration::from_millis(10)).await;
    assert_eq!(h.seen.deletions.load(Ordering::SeqCst), 1);
    assert_eq!(outputs(&h).len(), 1);
}

#[test]
fn the_session_forwards_exactly_the_sdks_server_event_types() {
    let python = repo().join("tests/mcp/.venv/bin/python");
    let out = std::process::Command::new(&python)
        .arg(repo().join("tests/gpt-live/validate.py"))
        .arg("--server-types")
        .output()
        .expect("the validator runs");
    assert!(out.status.success());
    let sdk: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(sdk, toolc_runtime::realtime::gpt_live::SERVER_EVENT_TYPES);
    let out = std::process::Command::new(&python)
        .arg(repo().join("tests/gpt-live/validate.py"))
        .arg("--nested-types")
        .output()
        .expect("the validator runs");
    let nested: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(
        nested,
        toolc_runtime::realtime::gpt_live::RESPONSE_STREAM_EVENT_TYPES
    );
}

// ---- sideband (`/v1/live/sessions/{id}/attach`) -----------------------------------------------

fn sideband() -> Harness {
    Harness::for_provider(RealtimeProvider::GptLive, |config| config.sideband = true)
}

#[tokio::test(start_paused = true)]
async fn a_sideband_serves_the_tools_and_the_page_gets_only_the_browser_protocol() {
    let mut h = sideband();
    // Attached to a started session: no `session.start`, the tools by `session.update`.
    let first: Value = serde_json::from_str(&h.session.session_update()).unwrap();
    assert_eq!(first["type"], "session.update");
    let tools = first["session"]["delegation"]["responses"]["tools"]
        .as_array()
        .unwrap();
    assert_eq!(tools.len(), 7);
    assert!(h.session.upstream_ready());
    // Nothing the model sends is the page's: it has its own data channel.
    assert_eq!(h.model(&script::audio("AAAA")), Verdict::Drop);
    delegate(
        &mut h,
        "resp_1",
        &[
            ("c1", "search", "{}"),
            ("c2", "highlight", r##"{"selector":"#buy"}"##),
        ],
    );
    assert!(
        h.to_browser.iter().all(|e| e["type"] == "function_call"),
        "{:#?}",
        h.to_browser
    );
    assert_eq!(h.browser_of("function_call")[0]["call_id"], "c2");
    // The page's model events go over its data channel, not this socket.
    for event in [
        json!({"type": "session.input_audio.append", "audio": "AAAA"}),
        json!({"type": "response.create"}),
        json!({"type": "session.commentary.append", "content": "x", "delegation_id": null}),
    ] {
        let before = h.to_browser.len();
        assert_eq!(h.browser(&event), Verdict::Drop, "{event}");
        assert_eq!(
            h.to_browser[before]["error"]["code"],
            "sideband_model_event"
        );
    }
    h.answer_call("c2", r#"{"highlighted":true}"#);
    h.run_for(Duration::from_secs(4)).await;
    assert_eq!(outputs(&h).len(), 2);
    assert_eq!(continuations(&h), 1);
    assert_eq!(
        h.session
            .counters()
            .snapshot()
            .server_calls_answered_elsewhere,
        0
    );
}

#[tokio::test(start_paused = true)]
async fn a_sideband_reports_a_server_call_someone_else_answered() {
    let mut h = sideband();
    delegate(&mut h, "resp_1", &[("c1", "search", "{}")]);
    h.run_for(Duration::from_millis(100)).await;
    // The search runs for 3 s; meanwhile the backend goes on in the same delegation, and this
    // session asked for nothing: the page (over its data channel) answered the call.
    h.model(&lifecycle("response.created", "resp_2", "in_progress", 40));
    let reports: Vec<Note> = h
        .notes()
        .into_iter()
        .filter(|n| matches!(n, Note::ServerCallAnsweredElsewhere { .. }))
        .collect();
    assert_eq!(
        reports,
        vec![Note::ServerCallAnsweredElsewhere {
            call_id: "c1".into(),
            tool: "search".into(),
            delegation_id: "d1".into(),
        }]
    );
    assert_eq!(
        h.session
            .counters()
            .snapshot()
            .server_calls_answered_elsewhere,
        1
    );
    // The session's own result and continuation still go: the model reads both answers.
    h.model(&lifecycle("response.completed", "resp_2", "completed", 41));
    h.run_for(Duration::from_secs(4)).await;
    assert_eq!(outputs(&h), vec![("c1".into(), r#"{"hits":3}"#.into())]);
    // A response this session asked for is not a report.
    h.model(&lifecycle("response.created", "resp_3", "in_progress", 50));
    assert_eq!(
        h.session
            .counters()
            .snapshot()
            .server_calls_answered_elsewhere,
        1
    );
}

#[test]
fn the_webrtc_session_body_validates_with_openais_sdk() {
    let registry = {
        let seen = std::sync::Arc::new(common::behaviours::Seen::default());
        common::behaviours::registry(seen)
    };
    let config =
        toolc_runtime::realtime::SessionConfig::for_provider(&registry, RealtimeProvider::GptLive);
    let session =
        toolc_runtime::realtime::gpt_live::webrtc_session(config.session, &config.declarations);
    let create = json!({"session": session, "transport": {"type": "webrtc", "sdp": "v=0\r\n"}});
    let dir = std::env::temp_dir().join(format!("toolc-gpt-live-create-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("create.jsonl");
    std::fs::write(&file, format!("create {create}\n")).unwrap();
    let out = std::process::Command::new(repo().join("tests/mcp/.venv/bin/python"))
        .arg(repo().join("tests/gpt-live/validate.py"))
        .arg(&file)
        .output()
        .expect("the validator runs");
    let _ = std::fs::remove_dir_all(&dir);
    let report =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{report}");
    assert!(report.contains("1 accepted, 0 refused"), "{report}");
}
