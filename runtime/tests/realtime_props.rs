//! Properties of the session dispatcher over random conversations and random garbage.
#![cfg(feature = "testing")]

mod common {
    pub mod props;
}

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use common::props::registry;
use proptest::prelude::*;
use serde_json::{json, Value};
use toolc_runtime::realtime::{
    script, Output, RealtimeProvider, RealtimeSession, SessionConfig, Verdict,
};

/// What the browser does with one client call.
#[derive(Clone, Debug)]
enum Answer {
    Reply,
    Ignore,
    ReplyTwice,
    ReplyWrongId,
}

#[derive(Clone, Debug)]
struct Call {
    tool: &'static str,
    n: i64,
    answer: Answer,
    malformed: bool,
}

fn call() -> impl Strategy<Value = Call> {
    (
        prop_oneof![Just("srv"), Just("cli"), Just("fire"), Just("nope")],
        0i64..8,
        prop_oneof![
            Just(Answer::Reply),
            Just(Answer::Ignore),
            Just(Answer::ReplyTwice),
            Just(Answer::ReplyWrongId)
        ],
        proptest::bool::weighted(0.1),
    )
        .prop_map(|(tool, n, answer, malformed)| Call {
            tool,
            n,
            answer,
            malformed,
        })
}

/// What the model side saw, and a fake model that answers the session's `response.create`s as
/// the API does: it starts each a moment later and finishes it soon after, and it refuses (with
/// an `error` naming the request) one sent while a response is in progress or another request
/// has not started yet.
struct Run {
    to_model: Vec<Value>,
    /// The response the model is giving now: a scripted one or its answer to a request.
    active: Option<String>,
    /// Requests it accepted that have not started yet.
    unstarted: usize,
    /// What it will send, in time order.
    due: Vec<(tokio::time::Instant, Value)>,
    /// The requests it refused.
    refused: Vec<Value>,
    answers: usize,
}

impl Run {
    fn new() -> Run {
        Run {
            to_model: Vec::new(),
            active: None,
            unstarted: 0,
            due: Vec::new(),
            refused: Vec::new(),
            answers: 0,
        }
    }

    fn send_later(&mut self, after_ms: u64, event: Value) {
        let at = tokio::time::Instant::now() + Duration::from_millis(after_ms);
        let i = self.due.partition_point(|(t, _)| *t <= at);
        self.due.insert(i, (at, event));
    }

    /// What the session queued for the model, as the model receives it.
    fn take_outputs(&mut self, session: &mut RealtimeSession) {
        let outputs: Vec<Output> = session.drain_outputs().collect();
        for o in outputs {
            let Output::ToModel(t) = o else { continue };
            let event: Value = serde_json::from_str(&t).unwrap();
            if event["type"] == "response.create" {
                self.request(&event);
            }
            self.to_model.push(event);
        }
    }

    fn request(&mut self, create: &Value) {
        if self.active.is_some() || self.unstarted > 0 {
            self.refused.push(create.clone());
            let error = json!({
                "type": "error",
                "event_id": "ev_error",
                "error": {
                    "type": "invalid_request_error",
                    "code": "conversation_already_has_active_response",
                    "message": "Conversation already has an active response in progress.",
                    "event_id": create["event_id"],
                },
            });
            return self.send_later(1, error);
        }
        self.unstarted += 1;
        let id = format!("answer{}", self.answers);
        self.answers += 1;
        let mut created = script::response_created(&id);
        if let Some(metadata) = create["response"].get("metadata") {
            created["response"]["metadata"] = metadata.clone();
        }
        self.send_later(2, created);
        self.send_later(4, script::response_done(&id, vec![]));
    }

    /// One model event to the session, the fake model's own (`answer`) or the script's.
    fn deliver(&mut self, session: &mut RealtimeSession, event: &Value, answer: bool) {
        match event["type"].as_str() {
            Some("response.created") => {
                assert!(self.active.is_none(), "two responses at once");
                self.active = event["response"]["id"].as_str().map(str::to_owned);
                if answer {
                    self.unstarted -= 1;
                }
            }
            Some("response.done") => self.active = None,
            _ => {}
        }
        session.on_model_event(&event.to_string());
        self.take_outputs(session);
    }

    /// A scripted event. The model first says what it still had to say: the user speaks after
    /// the answers to earlier requests.
    fn script(&mut self, session: &mut RealtimeSession, event: &Value) {
        if event["type"] == "response.created" {
            for _ in 0..100 {
                if self.due.is_empty() {
                    break;
                }
                let (_, next) = self.due.remove(0);
                self.deliver(session, &next, true);
            }
        }
        self.deliver(session, event, false);
    }

    /// Lets `d` of (virtual) time pass: call tasks' events go to the session, the fake model's
    /// events when they fall due.
    async fn run(
        &mut self,
        session: &mut RealtimeSession,
        events: &mut toolc_runtime::realtime::SessionEvents,
        d: Duration,
    ) {
        let until = tokio::time::Instant::now() + d;
        loop {
            self.take_outputs(session);
            let next = self.due.first().map_or(until, |(t, _)| (*t).min(until));
            match tokio::time::timeout_at(next, events.recv()).await {
                Ok(Some(e)) => session.on_event(e),
                _ if next < until || self.due.first().is_some_and(|(t, _)| *t <= until) => {
                    let (_, event) = self.due.remove(0);
                    self.deliver(session, &event, true);
                }
                _ => break,
            }
        }
        self.take_outputs(session);
    }
}

async fn run(
    session: &mut RealtimeSession,
    events: &mut toolc_runtime::realtime::SessionEvents,
    out: &mut Run,
    d: Duration,
) {
    out.run(session, events, d).await;
}

fn conversation(responses: Vec<Vec<Call>>, fillers: bool) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async move {
        let registry = registry();
        let mut config = SessionConfig::new(&registry);
        config.filler_delay = fillers.then(|| Duration::from_millis(30));
        let (mut session, mut events) = RealtimeSession::new(registry, Arc::new(config));
        let mut out = Run::new();
        let mut expected_calls = BTreeSet::new();
        let mut responses_with_calls = 0;
        for (r, calls) in responses.iter().enumerate() {
            let rid = format!("r{r}");
            let list: Vec<(String, &str, String)> = calls
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let args = if c.malformed {
                        "{n:".to_owned()
                    } else {
                        format!(r#"{{"n":{}}}"#, c.n)
                    };
                    (format!("c{r}_{i}"), c.tool, args)
                })
                .collect();
            let refs: Vec<(&str, &str, &str)> = list
                .iter()
                .map(|(a, b, c)| (a.as_str(), *b, c.as_str()))
                .collect();
            if !refs.is_empty() {
                responses_with_calls += 1;
            }
            for e in script::response_with_calls(&rid, &refs) {
                out.script(&mut session, &e);
            }
            run(
                &mut session,
                &mut events,
                &mut out,
                Duration::from_millis(5),
            )
            .await;
            for ((call_id, _, _), c) in list.iter().zip(calls) {
                expected_calls.insert(call_id.clone());
                let reply = |id: &str| {
                    json!({"type":"function_call.result","call_id":id,"output":"{\"r\":1}"})
                        .to_string()
                };
                match c.answer {
                    Answer::Reply => {
                        session.on_browser_event(&reply(call_id));
                    }
                    Answer::ReplyTwice => {
                        session.on_browser_event(&reply(call_id));
                        session.on_browser_event(&reply(call_id));
                    }
                    Answer::ReplyWrongId => {
                        session.on_browser_event(&reply(&format!("{call_id}x")));
                    }
                    Answer::Ignore => {}
                }
            }
            run(
                &mut session,
                &mut events,
                &mut out,
                Duration::from_millis(20),
            )
            .await;
        }
        run(&mut session, &mut events, &mut out, Duration::from_secs(2)).await;

        // Exactly one result per call, every call answered, nothing else.
        let mut per_call: BTreeMap<String, usize> = BTreeMap::new();
        for e in &out.to_model {
            if e["type"] == "conversation.item.create" {
                *per_call
                    .entry(e["item"]["call_id"].as_str().unwrap().to_owned())
                    .or_default() += 1;
            }
        }
        assert_eq!(
            per_call.keys().cloned().collect::<BTreeSet<_>>(),
            expected_calls
        );
        assert!(per_call.values().all(|n| *n == 1), "{per_call:?}");
        // Exactly one continuation per response that had calls.
        let continuations = out
            .to_model
            .iter()
            .filter(|e| e["type"] == "response.create" && e.get("response").is_none())
            .count();
        assert_eq!(continuations, responses_with_calls);
        assert!(
            out.refused.is_empty(),
            "asked for a response while one was in progress or not started: {:#?}",
            out.refused
        );
        assert_eq!(session.open_calls(), 0);
    });
}

/// A response of the behaviours property: its calls (tool, approve?, reply?) and whether the
/// user interrupts it.
type BehaviourResponse = (Vec<(&'static str, bool, bool)>, bool);

/// Approvals answered or not, interruptions, background calls: one result per call whatever
/// happens, a background result only for a call that started, nothing left open.
fn behaviours(responses: Vec<BehaviourResponse>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async move {
        let registry = registry();
        let mut config = SessionConfig::new(&registry);
        config.filler_delay = None;
        config.approval_timeout = Duration::from_millis(200);
        let (mut session, mut events) = RealtimeSession::new(registry, Arc::new(config));
        let mut out = Run::new();
        let mut to_browser: Vec<Value> = Vec::new();
        let mut expected = BTreeSet::new();
        for (r, (calls, interrupted)) in responses.iter().enumerate() {
            let rid = format!("b{r}");
            let list: Vec<(String, &str, String)> = calls
                .iter()
                .enumerate()
                .map(|(i, (tool, _, _))| (format!("b{r}_{i}"), *tool, r#"{"n":0}"#.to_owned()))
                .collect();
            let refs: Vec<(&str, &str, &str)> = list.iter().map(|(a, b, c)| (a.as_str(), *b, c.as_str())).collect();
            let mut script_events = script::response_with_calls(&rid, &refs);
            if *interrupted {
                let done = script_events.pop().unwrap();
                script_events.push(script::response_interrupted(&rid, done["response"]["output"].as_array().unwrap().clone()));
            }
            for e in script_events {
                session.on_model_event(&e.to_string());
            }
            expected.extend(list.iter().map(|(id, _, _)| id.clone()));
            // The page answers what it was asked, as each call's plan says.
            for _ in 0..3 {
                let until = tokio::time::Instant::now() + Duration::from_millis(5);
                while let Ok(Some(e)) = tokio::time::timeout_at(until, events.recv()).await {
                    session.on_event(e);
                }
                for o in session.drain_outputs() {
                    match o {
                        Output::ToModel(t) => out.to_model.push(serde_json::from_str(&t).unwrap()),
                        Output::ToBrowser(t) => to_browser.push(serde_json::from_str(&t).unwrap()),
                    }
                }
                for e in std::mem::take(&mut to_browser) {
                    let plan = |id: &str| list.iter().position(|(c, _, _)| c == id).map(|i| calls[i]);
                    if e["type"] == "toolc.approval.request" {
                        // Approval ids are not call ids: answer by the only open question's tool.
                        let approve = list.iter().zip(calls).any(|((_, t, _), c)| *t == e["name"] && c.1);
                        let answer = json!({"type":"toolc.approval.response","approval_id":e["approval_id"],"approved":approve});
                        session.on_browser_event(&answer.to_string());
                    } else if e["type"] == "function_call" {
                        if let Some((_, _, reply)) = plan(e["call_id"].as_str().unwrap_or_default()) {
                            if reply {
                                let r = json!({"type":"function_call.result","call_id":e["call_id"],"output":"{}"});
                                session.on_browser_event(&r.to_string());
                            }
                        }
                    }
                }
            }
            // The model answers each response.create the session sent.
            let creates = out.to_model.iter().filter(|e| e["type"] == "response.create").count();
            for k in 0..creates {
                let id = format!("{rid}_answer{k}");
                session.on_model_event(&script::response_created(&id).to_string());
                session.on_model_event(&script::response_done(&id, vec![]).to_string());
            }
        }
        run(&mut session, &mut events, &mut out, Duration::from_secs(2)).await;

        let mut per_call: BTreeMap<String, usize> = BTreeMap::new();
        let mut started = BTreeSet::new();
        for e in &out.to_model {
            if e["type"] == "conversation.item.create" && e["item"]["type"] == "function_call_output" {
                let id = e["item"]["call_id"].as_str().unwrap().to_owned();
                if e["item"]["output"].as_str().unwrap().contains("\"started\"") {
                    started.insert(id.clone());
                }
                *per_call.entry(id).or_default() += 1;
            }
        }
        assert_eq!(per_call.keys().cloned().collect::<BTreeSet<_>>(), expected);
        assert!(per_call.values().all(|n| *n == 1), "{per_call:?}");
        for e in &out.to_model {
            if e["item"]["role"] == "system" {
                let text = e["item"]["content"][0]["text"].as_str().unwrap();
                assert!(started.iter().any(|id| text.contains(&format!("(call_id {id})"))), "{text}");
            }
        }
        assert_eq!(session.open_calls(), 0);
    });
}

/// One call of a Live batch: the tool, whether the model also reports it in a `modelTurn`
/// part, whether the user approves it (where asked), whether the page answers it, and whether
/// the model cancels it a moment later.
type LiveCall = (&'static str, bool, bool, bool, bool);

fn live_call() -> impl Strategy<Value = LiveCall> {
    (
        prop_oneof![
            Just("srv"),
            Just("cli"),
            Just("fire"),
            Just("nope"),
            Just("ask"),
            Just("bg")
        ],
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        proptest::bool::weighted(0.2),
    )
}

/// The Gemini Live side of the core over random batches: every call the model did not cancel
/// gets exactly one final result, all of a batch's in one `toolResponse`; a cancelled call gets
/// none after its cancellation; a background call says "started" once before its result; the
/// browser never sees a server call; nothing is left open.
fn live_conversation(batches: Vec<Vec<LiveCall>>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async move {
        let registry = registry();
        let mut config = SessionConfig::for_provider(&registry, RealtimeProvider::GeminiLive);
        config.approval_timeout = Duration::from_millis(200);
        let (mut session, mut events) = RealtimeSession::new(registry, Arc::new(config));
        let mut to_model: Vec<(tokio::time::Instant, Value)> = Vec::new();
        let mut to_browser: Vec<Value> = Vec::new();
        let mut seen_by_browser: Vec<Value> = Vec::new();
        let mut plan: BTreeMap<String, LiveCall> = BTreeMap::new();
        let mut cancelled_at: BTreeMap<String, tokio::time::Instant> = BTreeMap::new();
        let mut batch_of: BTreeMap<String, usize> = BTreeMap::new();
        let model = |session: &mut RealtimeSession, message: Value, seen: &mut Vec<Value>| {
            match session.on_model_event(&message.to_string()) {
                Verdict::Forward => seen.push(message),
                Verdict::Replace(t) => seen.push(serde_json::from_str(&t).unwrap()),
                Verdict::Drop => {}
            }
        };
        for (b, calls) in batches.iter().enumerate() {
            let ids: Vec<String> = (0..calls.len()).map(|i| format!("g{b}_{i}")).collect();
            for (id, call) in ids.iter().zip(calls) {
                plan.insert(id.clone(), *call);
                batch_of.insert(id.clone(), b);
                if call.1 {
                    model(&mut session, script::live::model_turn_call(id, call.0, json!({"n": 0})), &mut seen_by_browser);
                }
            }
            let list: Vec<(&str, &str, Value)> =
                ids.iter().zip(calls).map(|(id, c)| (id.as_str(), c.0, json!({"n": 0}))).collect();
            if !list.is_empty() {
                model(&mut session, script::live::tool_call(&list), &mut seen_by_browser);
            }
            for step in 0..4 {
                let until = tokio::time::Instant::now() + Duration::from_millis(5);
                while let Ok(Some(e)) = tokio::time::timeout_at(until, events.recv()).await {
                    session.on_event(e);
                }
                for o in session.drain_outputs() {
                    match o {
                        Output::ToModel(t) => to_model.push((tokio::time::Instant::now(), serde_json::from_str(&t).unwrap())),
                        Output::ToBrowser(t) => to_browser.push(serde_json::from_str(&t).unwrap()),
                    }
                }
                for e in std::mem::take(&mut to_browser) {
                    seen_by_browser.push(e.clone());
                    if e["type"] == "toolc.approval.request" {
                        let approve = ids.iter().zip(calls).any(|(_, c)| c.0 == e["name"] && c.2);
                        let answer = json!({"type":"toolc.approval.response","approval_id":e["approval_id"],"approved":approve});
                        session.on_browser_event(&answer.to_string());
                    } else if e["type"] == "function_call" {
                        let id = e["call_id"].as_str().unwrap_or_default();
                        if plan.get(id).is_some_and(|c| c.3) {
                            let r = json!({"type":"function_call.result","call_id":id,"output":"{}"});
                            session.on_browser_event(&r.to_string());
                        }
                    }
                }
                if step == 0 {
                    let cancel: Vec<&str> = ids.iter().zip(calls).filter(|(_, c)| c.4).map(|(id, _)| id.as_str()).collect();
                    if !cancel.is_empty() {
                        for id in &cancel {
                            cancelled_at.insert((*id).to_owned(), tokio::time::Instant::now());
                        }
                        model(&mut session, script::live::cancellation(&cancel), &mut seen_by_browser);
                    }
                }
            }
        }
        let until = tokio::time::Instant::now() + Duration::from_secs(2);
        while let Ok(Some(e)) = tokio::time::timeout_at(until, events.recv()).await {
            session.on_event(e);
        }
        for o in session.drain_outputs() {
            match o {
                Output::ToModel(t) => to_model.push((tokio::time::Instant::now(), serde_json::from_str(&t).unwrap())),
                Output::ToBrowser(t) => seen_by_browser.push(serde_json::from_str(&t).unwrap()),
            }
        }

        let mut finals: BTreeMap<String, usize> = BTreeMap::new();
        let mut started: BTreeMap<String, usize> = BTreeMap::new();
        for (at, message) in &to_model {
            let responses = message["toolResponse"]["functionResponses"].as_array().expect("only toolResponses go up");
            let mut batches_in_it = BTreeSet::new();
            for r in responses {
                let id = r["id"].as_str().unwrap().to_owned();
                if r["willContinue"] == true {
                    *started.entry(id.clone()).or_default() += 1;
                    continue;
                }
                assert!(
                    cancelled_at.get(&id).is_none_or(|c| at <= c),
                    "a result for {id} after the model cancelled it"
                );
                *finals.entry(id.clone()).or_default() += 1;
                if plan[&id].0 != "bg" {
                    batches_in_it.insert(batch_of[&id]);
                }
            }
            assert!(batches_in_it.len() <= 1, "one toolResponse per batch: {message}");
        }
        for (id, call) in &plan {
            let n = finals.get(id).copied().unwrap_or(0);
            if cancelled_at.contains_key(id) {
                assert!(n <= 1, "{id}: {n} results");
            } else {
                assert_eq!(n, 1, "{id} ({call:?}): {to_model:#?}");
            }
            assert!(started.get(id).copied().unwrap_or(0) <= 1);
            if matches!(call.0, "srv" | "ask" | "bg") {
                for e in &seen_by_browser {
                    assert!(!e.to_string().contains(&format!("\"{id}\"")), "server call {id} reached the browser: {e}");
                }
            }
        }
        // The results of a batch go together: every final result of batch b (not background)
        // is in one message.
        for b in 0..batches.len() {
            let messages = to_model
                .iter()
                .filter(|(_, m)| {
                    m["toolResponse"]["functionResponses"].as_array().unwrap().iter().any(|r| {
                        let id = r["id"].as_str().unwrap();
                        r["willContinue"] != true && batch_of[id] == b && plan[id].0 != "bg"
                    })
                })
                .count();
            assert!(messages <= 1, "batch {b} answered in {messages} messages");
        }
        assert_eq!(session.open_calls(), 0);
    });
}

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        ".{0,12}".prop_map(Value::String),
        prop_oneof![
            Just("c1"),
            Just("c2"),
            Just("srv"),
            Just("cli"),
            Just("r1"),
            Just("function_call")
        ]
        .prop_map(|s| Value::String(s.into())),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("type".to_owned()),
                    Just("call_id".to_owned()),
                    Just("callId".to_owned()),
                    Just("name".to_owned()),
                    Just("arguments".to_owned()),
                    Just("item".to_owned()),
                    Just("response".to_owned()),
                    Just("output".to_owned()),
                    Just("id".to_owned()),
                    Just("response_id".to_owned()),
                    Just("metadata".to_owned()),
                    "[a-z]{1,6}",
                ],
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A tool-shaped event with random contents: the types the session parses, fields that may be
/// missing or of any JSON type.
fn tool_shaped() -> impl Strategy<Value = Value> {
    (
        prop_oneof![
            Just("response.created"),
            Just("response.done"),
            Just("response.output_item.added"),
            Just("response.output_item.done"),
            Just("response.function_call_arguments.delta"),
            Just("response.function_call_arguments.done"),
            Just("conversation.item.added"),
            Just("function_call.result"),
            Just("tool.result"),
            Just("conversation.item.create"),
            Just("session.update"),
            Just("toolc.approval.response"),
            Just("toolc.cancel"),
        ],
        arbitrary_json(),
        arbitrary_json(),
        arbitrary_json(),
        prop_oneof![Just("cli"), Just("ask"), Just("bg"), Just("stream"), Just("srv")],
        prop_oneof![Just("completed"), Just("cancelled"), Just("in_progress")],
    )
        .prop_map(|(kind, a, b, c, name, status)| {
            let mut e = json!({"type": kind, "call_id": a, "item": b, "response": c.clone(), "name": name, "arguments": "{}", "output": c, "delta": "{\"a\": [1, \"x", "approval_id": "approval_1", "approved": true});
            if let Some(response) = e["response"].as_object_mut() {
                response.insert("status".into(), json!(status));
            }
            if let Some(item) = e["item"].as_object_mut() {
                item.insert("type".into(), json!("function_call"));
            }
            e
        })
}

#[derive(Clone, Debug)]
enum Input {
    Model(String),
    Browser(String),
    Wait(u64),
}

fn input() -> impl Strategy<Value = Input> {
    let text = prop_oneof![
        arbitrary_json().prop_map(|v| v.to_string()),
        tool_shaped().prop_map(|v| v.to_string()),
        ".{0,40}",
    ];
    prop_oneof![
        text.clone().prop_map(Input::Model),
        text.prop_map(Input::Browser),
        (0u64..200).prop_map(Input::Wait),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    /// Any mix of server, client, fire-and-forget, unknown and malformed calls over several
    /// responses, with any browser behaviour: one result per call, one continuation per
    /// response with calls.
    #[test]
    fn one_result_per_call_and_one_continuation_per_response(
        responses in prop::collection::vec(prop::collection::vec(call(), 0..5), 1..4),
        fillers in any::<bool>(),
    ) {
        conversation(responses, fillers);
    }

    /// Gemini Live: random batches of every kind of call, reported once or twice, answered or
    /// not, cancelled or not.
    #[test]
    fn live_batches_keep_one_result_per_call(
        batches in prop::collection::vec(prop::collection::vec(live_call(), 0..5), 1..4),
    ) {
        live_conversation(batches);
    }

    /// Approvals (given, refused, unanswered), interruptions and background calls.
    #[test]
    fn behaviours_keep_one_result_per_call(
        responses in prop::collection::vec(
            (
                prop::collection::vec(
                    (prop_oneof![Just("srv"), Just("cli"), Just("ask"), Just("bg"), Just("stream")], any::<bool>(), any::<bool>()),
                    0..4,
                ),
                proptest::bool::weighted(0.3),
            ),
            1..4,
        ),
    ) {
        behaviours(responses);
    }

    /// Garbage from either side never panics the session, and no call is answered twice.
    #[test]
    fn arbitrary_events_never_panic(inputs in prop::collection::vec(input(), 0..40)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap();
        rt.block_on(async move {
            let registry = registry();
            let mut config = SessionConfig::new(&registry);
            config.filler_delay = Some(Duration::from_millis(10));
            let (mut session, mut events) = RealtimeSession::new(registry, Arc::new(config));
            let mut out = Run::new();
            for i in inputs {
                match i {
                    Input::Model(t) => { session.on_model_event(&t); }
                    Input::Browser(t) => { session.on_browser_event(&t); }
                    Input::Wait(ms) => run(&mut session, &mut events, &mut out, Duration::from_millis(ms)).await,
                }
            }
            session.browser_closed();
            run(&mut session, &mut events, &mut out, Duration::from_secs(1)).await;
            let mut seen = BTreeSet::new();
            for e in &out.to_model {
                if e["type"] == "conversation.item.create" && e["item"]["type"] == "function_call_output" {
                    let id = e["item"]["call_id"].as_str().unwrap().to_owned();
                    assert!(seen.insert(id.clone()), "call {id} answered twice");
                }
            }
        });
    }
}
