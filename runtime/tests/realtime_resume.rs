//! A page that loses its connection at each point of a call's life and resumes, as session
//! rules on a paused clock (the relay's side, tokens and sockets, is `relay_resume.rs`): while
//! the page is away nothing fails, calls and approval requests made meanwhile wait for it, and
//! the resumed page gets every open one again; the model gets one result per call id and a
//! page that dedupes by id runs no handler twice. OpenAI Realtime, Gemini Live and GPT-Live.
#![cfg(feature = "testing")]

mod common {
    pub mod behaviours;
    pub mod session;
}

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

use common::behaviours::Harness;
use serde_json::{json, Value};
use toolc_runtime::realtime::{script, Verdict};

/// The page as the TypeScript client behaves: it reads what reaches it, runs each call's
/// handler once per call id, and answers each approval request once per id.
#[derive(Default)]
struct Page {
    /// Events of `h.to_browser` this page has read (the rest it missed while away).
    read: usize,
    runs: HashMap<String, usize>,
    asked: HashMap<String, usize>,
}

impl Page {
    /// Reads `events`; returns the calls whose handler runs now (first time seen).
    fn read_events(&mut self, events: &[Value]) -> (Vec<String>, Vec<String>) {
        let (mut calls, mut approvals) = (Vec::new(), Vec::new());
        for e in events {
            if e["type"] == "function_call" {
                let id = e["call_id"].as_str().unwrap().to_owned();
                let runs = self.runs.entry(id.clone()).or_default();
                *runs += 1;
                if *runs == 1 {
                    calls.push(id);
                }
            }
            if e["type"] == "toolc.approval.request" {
                let id = e["approval_id"].as_str().unwrap().to_owned();
                let asked = self.asked.entry(id.clone()).or_default();
                *asked += 1;
                if *asked == 1 {
                    approvals.push(id);
                }
            }
        }
        (calls, approvals)
    }

    /// Reads what the session sent since the last read.
    fn read(&mut self, h: &Harness) -> (Vec<String>, Vec<String>) {
        let new = h.to_browser[self.read..].to_vec();
        self.read = h.to_browser.len();
        self.read_events(&new)
    }
}

/// The page leaves; `lost` of the events sent to it last never reached it.
fn leave(h: &mut Harness, page: &mut Page, lost: usize) {
    h.session.browser_away();
    page.read = h.to_browser.len().saturating_sub(lost).max(page.read);
}

/// The page is back: it reads the re-delivered open calls and approval requests, then what was
/// queued for it while it was away (the relay's buffer).
fn resume(h: &mut Harness, page: &mut Page) -> (Vec<String>, Vec<String>) {
    let again: Vec<Value> = h
        .session
        .browser_resumed()
        .iter()
        .map(|t| serde_json::from_str(t).unwrap())
        .collect();
    let (mut calls, mut approvals) = page.read_events(&again);
    let (queued_calls, queued_approvals) = page.read(h);
    calls.extend(queued_calls);
    approvals.extend(queued_approvals);
    (calls, approvals)
}

fn one_result_each(h: &Harness) {
    let mut seen = HashMap::new();
    for (id, _) in h.outputs() {
        *seen.entry(id).or_insert(0) += 1;
    }
    assert!(seen.values().all(|n| *n == 1), "{seen:?}");
}

#[tokio::test(start_paused = true)]
async fn a_call_made_while_the_page_is_away_waits_for_it_and_is_delivered_once() {
    let mut h = Harness::new();
    let mut page = Page::default();
    leave(&mut h, &mut page, 0);
    h.call_in("r1", "c1", "highlight", r##"{"selector":"#buy"}"##);
    h.model(&script::response_done("r1", vec![]));
    h.run_for(Duration::from_secs(2)).await;
    // Nothing was sent for it while away, and nothing failed.
    assert!(h.browser_of("function_call").is_empty());
    assert!(h.outputs().is_empty());
    let (calls, _) = resume(&mut h, &mut page);
    assert_eq!(calls, ["c1"]);
    assert_eq!(h.answer_call("c1", r#"{"ok":true}"#), Verdict::Drop);
    h.run_for(Duration::from_millis(10)).await;
    assert_eq!(h.output_of("c1"), json!({"ok": true}));
    assert_eq!(h.continuations(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_waiting_client_call_is_delivered_again_and_answered_once_whichever_connection_answers() {
    let mut h = Harness::new();
    let mut page = Page::default();
    h.call_in("r1", "c1", "highlight", r##"{"selector":"#buy"}"##);
    h.model(&script::response_done("r1", vec![]));
    h.run_for(Duration::from_millis(10)).await;
    // The page got the call and ran its handler; then its connection dropped.
    assert_eq!(page.read(&h).0, ["c1"]);
    leave(&mut h, &mut page, 0);
    h.run_for(Duration::from_secs(2)).await;
    let (calls, _) = resume(&mut h, &mut page);
    // Delivered again, but this page already runs it: no second run.
    assert!(calls.is_empty());
    assert_eq!(page.runs["c1"], 2);
    // The answer comes on the new connection; a copy of it from the old one is refused.
    h.answer_call("c1", r#"{"ok":1}"#);
    h.answer_call("c1", r#"{"ok":2}"#);
    h.run_for(Duration::from_millis(10)).await;
    assert_eq!(h.output_of("c1"), json!({"ok": 1}));
    assert_eq!(h.session.counters().snapshot().results_rejected, 1);
    assert_eq!(h.continuations(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_call_whose_message_was_lost_in_the_drop_reaches_the_resumed_page() {
    let mut h = Harness::new();
    let mut page = Page::default();
    h.call_in("r1", "c1", "highlight", r##"{"selector":"#buy"}"##);
    h.model(&script::response_done("r1", vec![]));
    h.run_for(Duration::from_millis(10)).await;
    // The call's message never reached the page.
    leave(&mut h, &mut page, 1);
    assert!(page.runs.is_empty());
    let (calls, _) = resume(&mut h, &mut page);
    assert_eq!(calls, ["c1"]);
    h.answer_call("c1", "{}");
    h.run_for(Duration::from_millis(10)).await;
    one_result_each(&h);
    assert_eq!(h.outputs().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_client_call_whose_deadline_passes_while_the_page_is_away_ends_and_is_not_delivered() {
    let mut h = Harness::new();
    let mut page = Page::default();
    h.call_in("r1", "c1", "highlight", r##"{"selector":"#buy"}"##);
    h.model(&script::response_done("r1", vec![]));
    h.run_for(Duration::from_millis(10)).await;
    page.read(&h);
    leave(&mut h, &mut page, 0);
    // The tool's timeout is 5 s.
    h.run_for(Duration::from_secs(6)).await;
    assert_eq!(h.output_of("c1")["error"]["kind"], "timeout");
    let again = h.session.browser_resumed();
    assert!(again.is_empty(), "{again:?}");
    assert_eq!(h.continuations(), 1);
}

#[tokio::test(start_paused = true)]
async fn an_approval_asked_before_the_drop_is_asked_again_and_decides_once() {
    let mut h = Harness::new();
    let mut page = Page::default();
    h.call_in("r1", "c1", "delete_account", r#"{"user":"ann"}"#);
    h.model(&script::response_done("r1", vec![]));
    h.run_for(Duration::from_millis(10)).await;
    let (_, asked) = page.read(&h);
    assert_eq!(asked.len(), 1);
    leave(&mut h, &mut page, 1);
    h.run_for(Duration::from_secs(2)).await;
    let again = h.session.browser_resumed();
    assert_eq!(again.len(), 1);
    let request: Value = serde_json::from_str(&again[0]).unwrap();
    assert_eq!(request["type"], "toolc.approval.request");
    assert_eq!(request["approval_id"], asked[0].as_str());
    h.answer_approval(&asked[0], true, None);
    // A second answer (from the old connection) approves nothing more.
    h.answer_approval(&asked[0], true, None);
    h.run_for(Duration::from_millis(10)).await;
    assert_eq!(h.seen.deletions.load(Ordering::SeqCst), 1);
    assert_eq!(h.output_of("c1"), json!({"deleted": "ann"}));
    assert_eq!(h.continuations(), 1);
}

#[tokio::test(start_paused = true)]
async fn an_approval_needed_while_the_page_is_away_is_asked_when_it_resumes() {
    let mut h = Harness::new();
    let mut page = Page::default();
    leave(&mut h, &mut page, 0);
    h.call_in("r1", "c1", "checkout", r#"{"total":12}"#);
    h.model(&script::response_done("r1", vec![]));
    h.run_for(Duration::from_secs(1)).await;
    assert!(h.browser_of("toolc.approval.request").is_empty());
    let (calls, asked) = resume(&mut h, &mut page);
    assert!(calls.is_empty());
    assert_eq!(asked.len(), 1);
    h.answer_approval(&asked[0], true, None);
    h.run_for(Duration::from_millis(10)).await;
    // Approved: the client call goes to the page, once.
    let (calls, _) = page.read(&h);
    assert_eq!(calls, ["c1"]);
    h.answer_call("c1", r#"{"paid":true}"#);
    h.run_for(Duration::from_millis(10)).await;
    assert_eq!(h.output_of("c1"), json!({"paid": true}));
    assert_eq!(page.runs["c1"], 1);
}

#[tokio::test(start_paused = true)]
async fn an_async_tool_finishes_while_the_page_is_away_and_its_result_reaches_the_model() {
    let mut h = Harness::new();
    let mut page = Page::default();
    h.call_in("r1", "c1", "generate_report", r#"{"topic":"q3"}"#);
    h.model(&script::response_done("r1", vec![]));
    h.run_for(Duration::from_millis(10)).await;
    assert_eq!(h.output_of("c1")["status"], "started");
    // The model answers the "started" result, then the page drops.
    h.model(&script::response_created("r2"));
    h.model(&script::response_done("r2", vec![]));
    leave(&mut h, &mut page, 0);
    // The report takes 5 s; it finishes while the page is away.
    h.run_for(Duration::from_secs(6)).await;
    assert_eq!(h.seen.reports.load(Ordering::SeqCst), 1);
    assert_eq!(h.system_messages().len(), 1, "{:#?}", h.to_model);
    let (calls, asked) = resume(&mut h, &mut page);
    assert!(calls.is_empty() && asked.is_empty());
    one_result_each(&h);
}

#[tokio::test(start_paused = true)]
async fn a_drop_during_streamed_arguments_loses_no_call() {
    let mut h = Harness::new();
    let mut page = Page::default();
    let mut events = script::function_call(
        "r1",
        0,
        "item_c1",
        "c1",
        "show_card",
        r#"{"title":"Lamp","price":12}"#,
    );
    h.model(&script::response_created("r1"));
    // The item and the first piece of the arguments arrive; the page sees the partials.
    h.model(&events.remove(0));
    h.model(&events.remove(0));
    page.read(&h);
    assert!(!h.browser_of("toolc.arguments.delta").is_empty());
    leave(&mut h, &mut page, 0);
    h.model_all(&events);
    h.model(&script::response_done("r1", vec![]));
    h.run_for(Duration::from_secs(1)).await;
    let (calls, _) = resume(&mut h, &mut page);
    assert_eq!(calls, ["c1"]);
    h.answer_call("c1", r#"{"shown":true}"#);
    h.run_for(Duration::from_millis(10)).await;
    assert_eq!(h.output_of("c1"), json!({"shown": true}));
    assert_eq!(page.runs["c1"], 1);
}

#[tokio::test(start_paused = true)]
async fn on_gemini_live_a_call_made_while_away_is_delivered_on_resume_and_answered_once() {
    let mut h = Harness::live();
    let mut page = Page::default();
    leave(&mut h, &mut page, 0);
    h.model(&script::live::tool_call(&[(
        "c1",
        "highlight",
        json!({"selector": "#buy"}),
    )]));
    h.run_for(Duration::from_secs(1)).await;
    assert!(h.tool_responses().is_empty());
    let (calls, _) = resume(&mut h, &mut page);
    assert_eq!(calls, ["c1"]);
    h.answer_call("c1", r#"{"ok":true}"#);
    h.answer_call("c1", r#"{"ok":true}"#);
    h.run_for(Duration::from_millis(10)).await;
    let responses = h.tool_responses();
    assert_eq!(responses.len(), 1, "{responses:#?}");
    assert_eq!(responses[0].len(), 1);
    assert_eq!(responses[0][0]["id"], "c1");
}

#[tokio::test(start_paused = true)]
async fn on_gpt_live_a_call_lost_in_the_drop_is_delivered_again_and_answered_once() {
    use toolc_runtime::realtime::RealtimeProvider;
    let mut h = Harness::for_provider(RealtimeProvider::GptLive, |_| {});
    let mut page = Page::default();
    h.model(&script::gpt_live::session_started("s1"));
    h.model(&script::gpt_live::delegation_created("d1", "responses"));
    for event in script::gpt_live::response_with_calls(
        "d1",
        "resp_1",
        &[("c1", "highlight", r##"{"selector":"#buy"}"##)],
    ) {
        h.model(&event);
    }
    h.run_for(Duration::from_millis(10)).await;
    // The page missed everything it was sent.
    leave(&mut h, &mut page, usize::MAX);
    let (calls, _) = resume(&mut h, &mut page);
    assert_eq!(calls, ["c1"]);
    h.answer_call("c1", r#"{"ok":true}"#);
    h.answer_call("c1", r#"{"ok":true}"#);
    h.run_for(Duration::from_millis(10)).await;
    let outputs: Vec<&Value> = h
        .to_model
        .iter()
        .filter(|e| e["type"] == "response.item.create" && e["item"]["call_id"] == "c1")
        .collect();
    assert_eq!(outputs.len(), 1, "{:#?}", h.to_model);
}
