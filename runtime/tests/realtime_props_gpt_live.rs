//! The interleaving properties of `realtime_props.rs` on GPT-Live: random conversations of
//! delegated backend responses (server, client, fire-and-forget, unknown and malformed calls;
//! approvals, interruptions, background calls), any page behaviour, against a fake backend that
//! answers the session's `response.create`s as the API does and refuses one sent while a
//! response is in progress or another request has not started; and random garbage on both
//! sides. The scripted server events are the SDK's shapes (`script::gpt_live`), and a fixed
//! run of each property is checked event by event with OpenAI's SDK (`tests/gpt-live/validate.py`).
#![cfg(feature = "testing")]

mod common {
    pub mod props;
}

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use common::props::registry;
use proptest::prelude::*;
use serde_json::{json, Value};
use toolc_runtime::realtime::script::gpt_live as script;
use toolc_runtime::realtime::{
    Output, RealtimeProvider, RealtimeSession, SessionConfig, SessionEvents, Verdict,
};

/// What the page does with one client call.
#[derive(Clone, Copy, Debug)]
enum Answer {
    Reply,
    Ignore,
    ReplyTwice,
    ReplyWrongId,
}

#[derive(Clone, Copy, Debug)]
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

/// Both sides of the wire, and a fake Responses backend behind the live session: it starts the
/// response a `response.create` asks for a moment later (in the delegation it continues) and
/// completes it soon after, and refuses (an `error` naming the request) one sent while a
/// response is in progress or another request has not started.
struct Backend {
    to_model: Vec<Value>,
    /// Every server event the session was given, in order (for the SDK's check).
    from_model: Vec<Value>,
    /// What the page received: forwarded or rewritten server events, and the session's own.
    to_browser: Vec<Value>,
    active: Option<String>,
    unstarted: usize,
    due: Vec<(tokio::time::Instant, Value)>,
    refused: Vec<Value>,
    answers: usize,
    /// The delegation the backend's answers belong to (the last one scripted).
    delegation: String,
    seq: u64,
}

impl Backend {
    fn new() -> Backend {
        Backend {
            to_model: Vec::new(),
            from_model: Vec::new(),
            to_browser: Vec::new(),
            active: None,
            unstarted: 0,
            due: Vec::new(),
            refused: Vec::new(),
            answers: 0,
            delegation: "d_start".to_owned(),
            seq: 1000,
        }
    }

    fn send_later(&mut self, after_ms: u64, event: Value) {
        let at = tokio::time::Instant::now() + Duration::from_millis(after_ms);
        let i = self.due.partition_point(|(t, _)| *t <= at);
        self.due.insert(i, (at, event));
    }

    fn take_outputs(&mut self, session: &mut RealtimeSession) {
        let outputs: Vec<Output> = session.drain_outputs().collect();
        for o in outputs {
            match o {
                Output::ToModel(t) => {
                    let event: Value = serde_json::from_str(&t).unwrap();
                    if event["type"] == "response.create" {
                        self.request(&event);
                    }
                    self.to_model.push(event);
                }
                Output::ToBrowser(t) => self.to_browser.push(serde_json::from_str(&t).unwrap()),
            }
        }
    }

    fn lifecycle(&mut self, kind: &str, id: &str, status: &str) -> Value {
        self.seq += 1;
        let inner = script::lifecycle(kind, id, status, self.seq);
        script::response_event(&self.delegation, self.seq, inner)
    }

    fn request(&mut self, create: &Value) {
        if self.active.is_some() || self.unstarted > 0 {
            self.refused.push(create.clone());
            let id = create["event_id"].as_str().unwrap_or_default();
            let error = script::error(id, "conversation_already_has_active_response");
            return self.send_later(1, error);
        }
        self.unstarted += 1;
        let id = format!("answer{}", self.answers);
        self.answers += 1;
        let created = self.lifecycle("response.created", &id, "in_progress");
        let completed = self.lifecycle("response.completed", &id, "completed");
        self.send_later(2, created);
        self.send_later(4, completed);
    }

    /// One server event to the session, the backend's own answer (`answer`) or the script's.
    fn deliver(&mut self, session: &mut RealtimeSession, event: &Value, answer: bool) {
        let inner = &event["event"];
        match inner["type"].as_str() {
            Some("response.created") => {
                assert!(self.active.is_none(), "two backend responses at once");
                self.active = inner["response"]["id"].as_str().map(str::to_owned);
                if answer {
                    self.unstarted -= 1;
                }
            }
            Some(
                "response.completed"
                | "response.cancelled"
                | "response.failed"
                | "response.incomplete",
            ) => self.active = None,
            _ => {}
        }
        self.from_model.push(event.clone());
        match session.on_model_event(&event.to_string()) {
            Verdict::Forward => self.to_browser.push(event.clone()),
            Verdict::Replace(t) => self.to_browser.push(serde_json::from_str(&t).unwrap()),
            Verdict::Drop => {}
        }
        self.take_outputs(session);
    }

    /// A scripted server event. Before a new delegation the backend first says what it still
    /// had to say: the user speaks after the answers to earlier requests.
    fn script(&mut self, session: &mut RealtimeSession, event: &Value) {
        if event["type"] == "session.delegation.created" {
            for _ in 0..100 {
                if self.due.is_empty() {
                    break;
                }
                let (_, next) = self.due.remove(0);
                self.deliver(session, &next, true);
            }
            if let Some(id) = event["delegation"]["id"].as_str() {
                self.delegation = id.to_owned();
            }
        }
        self.deliver(session, event, false);
    }

    /// Lets `d` of (virtual) time pass: call tasks' events go to the session, the backend's
    /// events when they fall due.
    async fn run(
        &mut self,
        session: &mut RealtimeSession,
        events: &mut SessionEvents,
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

    /// The `function_call_output`s sent, as (call id, output).
    fn outputs(&self) -> Vec<(String, String)> {
        self.to_model
            .iter()
            .filter(|e| {
                e["type"] == "response.item.create" && e["item"]["type"] == "function_call_output"
            })
            .map(|e| {
                (
                    e["item"]["call_id"].as_str().unwrap().to_owned(),
                    e["item"]["output"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    }

    /// Every result (but those of the calls in `interrupted`, whose response the user spoke
    /// over) is followed by a `response.create`: the backend goes on after it.
    fn assert_every_result_continued(&self, interrupted: &BTreeSet<String>) {
        let last_create = self
            .to_model
            .iter()
            .rposition(|e| e["type"] == "response.create");
        let last_result = self.to_model.iter().rposition(|e| {
            e["type"] == "response.item.create"
                && !e["item"]["call_id"]
                    .as_str()
                    .is_some_and(|id| interrupted.contains(id))
        });
        assert!(
            last_result <= last_create,
            "a result after the last continuation: {:#?}",
            self.to_model
        );
    }

    /// No server call's id, arguments or item ever reached the page.
    fn assert_page_never_saw(&self, server_calls: &BTreeSet<String>) {
        for e in &self.to_browser {
            let text = e.to_string();
            for id in server_calls {
                assert!(
                    !text.contains(&format!("\"{id}\"")) && !text.contains(&format!("fc_{id}")),
                    "server call {id} reached the page: {e}"
                );
            }
        }
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap()
}

fn new_session(
    configure: impl FnOnce(&mut SessionConfig),
) -> (RealtimeSession, SessionEvents, Backend) {
    let registry = registry();
    let mut config = SessionConfig::for_provider(&registry, RealtimeProvider::GptLive);
    configure(&mut config);
    let (mut session, events) = RealtimeSession::new(registry, Arc::new(config));
    let mut backend = Backend::new();
    backend
        .from_model
        .push(script::session_started("sess_props"));
    session.on_model_event(&script::session_started("sess_props").to_string());
    backend.take_outputs(&mut session);
    (session, events, backend)
}

/// One backend response per entry of `responses`, each in its own delegation and held open
/// for its `u64` milliseconds after its calls (so that results of earlier responses arrive
/// while it is in progress): one result per call, one continuation per response with calls, no
/// request refused, the page never sees a server call, nothing left open. Returns both sides
/// of the wire.
///
/// With `sideband`, the session is attached to one the page opened: the same, and the page
/// gets nothing of the model's events (only the browser protocol).
fn conversation(responses: Vec<(Vec<Call>, u64)>, sideband: bool) -> Backend {
    runtime().block_on(async move {
        let (mut session, mut events, mut out) = new_session(|config| config.sideband = sideband);
        let mut expected_calls = BTreeSet::new();
        let mut server_calls = BTreeSet::new();
        let mut responses_with_calls = 0;
        for (r, (calls, hold)) in responses.iter().enumerate() {
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
            let delegation = format!("d{r}");
            out.script(
                &mut session,
                &script::delegation_created(&delegation, "responses"),
            );
            let mut scripted = script::response_with_calls(&delegation, &format!("r{r}"), &refs);
            let completed = scripted.pop().unwrap();
            for e in &scripted {
                out.script(&mut session, e);
            }
            if *hold > 0 {
                out.run(&mut session, &mut events, Duration::from_millis(*hold))
                    .await;
            }
            out.script(&mut session, &completed);
            out.run(&mut session, &mut events, Duration::from_millis(5))
                .await;
            for ((call_id, tool, _), c) in list.iter().zip(calls) {
                expected_calls.insert(call_id.clone());
                if *tool == "srv" {
                    server_calls.insert(call_id.clone());
                }
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
            out.run(&mut session, &mut events, Duration::from_millis(20))
                .await;
        }
        out.run(&mut session, &mut events, Duration::from_secs(2))
            .await;

        let mut per_call: BTreeMap<String, usize> = BTreeMap::new();
        for (id, _) in out.outputs() {
            *per_call.entry(id).or_default() += 1;
        }
        assert_eq!(
            per_call.keys().cloned().collect::<BTreeSet<_>>(),
            expected_calls
        );
        assert!(per_call.values().all(|n| *n == 1), "{per_call:?}");
        // At most one continuation per response with calls, and one after every result: the
        // batches that end while a backend response is in progress share the one that follows.
        let continuations = out
            .to_model
            .iter()
            .filter(|e| e["type"] == "response.create")
            .count();
        assert!(
            continuations <= responses_with_calls,
            "{continuations} continuations for {responses_with_calls} responses: {:#?}",
            out.to_model
        );
        out.assert_every_result_continued(&BTreeSet::new());
        assert!(
            out.refused.is_empty(),
            "asked for a response while one was in progress or not started: {:#?}",
            out.refused
        );
        out.assert_page_never_saw(&server_calls);
        if sideband {
            let browser_protocol = ["function_call", "toolc.cancel", "error"];
            assert!(
                out.to_browser
                    .iter()
                    .all(|e| browser_protocol.contains(&e["type"].as_str().unwrap_or_default())),
                "{:#?}",
                out.to_browser
            );
            assert_eq!(
                session
                    .counters()
                    .snapshot()
                    .server_calls_answered_elsewhere,
                0,
                "only this session answered"
            );
        }
        assert_eq!(session.open_calls(), 0);
        out
    })
}

/// A response of the behaviours property: its calls (tool, approve?, reply?) and whether the
/// user interrupts it.
type BehaviourResponse = (Vec<(&'static str, bool, bool)>, bool);

/// Approvals answered or not, interruptions, background calls: one result per call whatever
/// happens, a background result only for a call that started, no request refused, nothing
/// left open.
fn behaviours(responses: Vec<BehaviourResponse>) -> Backend {
    runtime().block_on(async move {
        let (mut session, mut events, mut out) = new_session(|config| {
            config.approval_timeout = Duration::from_millis(200);
        });
        let mut expected = BTreeSet::new();
        let mut server_calls = BTreeSet::new();
        let mut interrupted_calls = BTreeSet::new();
        for (r, (calls, interrupted)) in responses.iter().enumerate() {
            // `ask` and `bg` take no parameters: strict mode lets the backend write none.
            let arguments = |tool: &str| match tool {
                "ask" | "bg" => "{}",
                _ => r#"{"n":0}"#,
            };
            let list: Vec<(String, &str, String)> = calls
                .iter()
                .enumerate()
                .map(|(i, (tool, _, _))| (format!("b{r}_{i}"), *tool, arguments(tool).to_owned()))
                .collect();
            if *interrupted {
                interrupted_calls.extend(list.iter().map(|(id, _, _)| id.clone()));
            }
            let refs: Vec<(&str, &str, &str)> = list
                .iter()
                .map(|(a, b, c)| (a.as_str(), *b, c.as_str()))
                .collect();
            let delegation = format!("d{r}");
            let rid = format!("b{r}");
            let mut scripted = script::response_with_calls(&delegation, &rid, &refs);
            if *interrupted {
                // The user spoke over it: the backend response ends incomplete.
                let completed = scripted.pop().unwrap();
                let seq = completed["event"]["sequence_number"].as_u64().unwrap();
                scripted.push(script::response_event(
                    &delegation,
                    seq,
                    script::lifecycle("response.incomplete", &rid, "incomplete", seq),
                ));
            }
            out.script(
                &mut session,
                &script::delegation_created(&delegation, "responses"),
            );
            for e in &scripted {
                out.script(&mut session, e);
            }
            expected.extend(list.iter().map(|(id, _, _)| id.clone()));
            server_calls.extend(
                list.iter()
                    .filter(|(_, t, _)| matches!(*t, "srv" | "ask" | "bg"))
                    .map(|(id, _, _)| id.clone()),
            );
            // The page answers what it was asked, as each call's plan says.
            let mut answered = 0;
            for _ in 0..3 {
                out.run(&mut session, &mut events, Duration::from_millis(5))
                    .await;
                let asked: Vec<Value> = out.to_browser[answered..].to_vec();
                answered = out.to_browser.len();
                for e in asked {
                    let plan = |id: &str| {
                        list.iter()
                            .position(|(c, _, _)| c == id)
                            .map(|i| calls[i])
                    };
                    if e["type"] == "toolc.approval.request" {
                        let approve = list
                            .iter()
                            .zip(calls)
                            .any(|((_, t, _), c)| *t == e["name"] && c.1);
                        let answer = json!({"type":"toolc.approval.response","approval_id":e["approval_id"],"approved":approve});
                        session.on_browser_event(&answer.to_string());
                    } else if e["type"] == "function_call" {
                        let id = e["call_id"].as_str().unwrap_or_default();
                        if plan(id).is_some_and(|(_, _, reply)| reply) {
                            let r = json!({"type":"function_call.result","call_id":id,"output":"{}"});
                            session.on_browser_event(&r.to_string());
                        }
                    }
                }
            }
        }
        out.run(&mut session, &mut events, Duration::from_secs(2))
            .await;

        let mut per_call: BTreeMap<String, usize> = BTreeMap::new();
        let mut started = BTreeSet::new();
        for (id, output) in out.outputs() {
            if output.contains("\"started\"") {
                started.insert(id.clone());
            }
            *per_call.entry(id).or_default() += 1;
        }
        assert_eq!(per_call.keys().cloned().collect::<BTreeSet<_>>(), expected);
        assert!(per_call.values().all(|n| *n == 1), "{per_call:?}");
        for e in &out.to_model {
            if e["type"] == "response.item.create" && e["item"]["type"] == "message" {
                assert_eq!(e["item"]["role"], "developer");
                let text = e["item"]["content"][0]["text"].as_str().unwrap();
                assert!(
                    started
                        .iter()
                        .any(|id| text.contains(&format!("(call {id})"))),
                    "{text}"
                );
            }
        }
        assert!(
            out.refused.is_empty(),
            "asked for a response while one was in progress or not started: {:#?}",
            out.refused
        );
        out.assert_every_result_continued(&interrupted_calls);
        out.assert_page_never_saw(&server_calls);
        assert_eq!(session.open_calls(), 0);
        out
    })
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
            Just("d1"),
            Just("r1"),
            Just("function_call"),
            Just("client"),
            Just("responses"),
            Just("toolc_response_1"),
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
                    Just("name".to_owned()),
                    Just("arguments".to_owned()),
                    Just("item".to_owned()),
                    Just("item_id".to_owned()),
                    Just("response".to_owned()),
                    Just("output".to_owned()),
                    Just("id".to_owned()),
                    Just("event".to_owned()),
                    Just("delegation_id".to_owned()),
                    Just("delegation".to_owned()),
                    Just("client_event_id".to_owned()),
                    "[a-z]{1,6}",
                ],
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A nested Responses event of a kind the codec reads, with random contents.
fn nested() -> impl Strategy<Value = Value> {
    (
        prop_oneof![
            Just("response.created"),
            Just("response.in_progress"),
            Just("response.completed"),
            Just("response.cancelled"),
            Just("response.incomplete"),
            Just("response.output_item.added"),
            Just("response.output_item.done"),
            Just("response.function_call_arguments.delta"),
            Just("response.function_call_arguments.done"),
        ],
        arbitrary_json(),
        arbitrary_json(),
        prop_oneof![Just("cli"), Just("srv"), Just("fire"), Just("nope")],
        prop_oneof![Just("c1"), Just("c2"), Just("c3")],
        prop_oneof![Just("completed"), Just("cancelled"), Just("in_progress")],
    )
        .prop_map(|(kind, a, b, name, call_id, status)| {
            let mut e = json!({"type": kind, "item": a, "response": b, "item_id": format!("fc_{call_id}"), "name": name, "arguments": "{}", "delta": "{\"n\": [1, \"x"});
            if let Some(item) = e["item"].as_object_mut() {
                item.insert("type".into(), json!("function_call"));
                item.insert("call_id".into(), json!(call_id));
                item.insert("name".into(), json!(name));
                item.insert("arguments".into(), json!(r#"{"n":1}"#));
            }
            if let Some(response) = e["response"].as_object_mut() {
                response.insert("status".into(), json!(status));
                response.insert("id".into(), json!("r1"));
            }
            e
        })
}

/// A server event of a kind the codec reads (or the page's events), with random contents.
fn gpt_live_shaped() -> impl Strategy<Value = Value> {
    prop_oneof![
        (nested(), prop_oneof![Just(json!("d1")), Just(json!("d2")), Just(Value::Null)])
            .prop_map(|(event, d)| json!({"type": "response.event", "event_id": "e", "delegation_id": d, "event": event})),
        (prop_oneof![Just("client"), Just("responses")], prop_oneof![Just("d1"), Just("d2")])
            .prop_map(|(target, id)| script::delegation_created(id, target)),
        arbitrary_json().prop_map(|e| json!({"type": "error", "event_id": "e", "error": e})),
        arbitrary_json().prop_map(|e| json!({"type": "response.event", "event_id": "e", "event": e})),
        prop_oneof![Just("c1"), Just("c2"), Just("c3")].prop_map(|id| json!({"type": "function_call.result", "call_id": id, "output": "{}"})),
        arbitrary_json().prop_map(|a| json!({"type": "session.commentary.append", "content": "x", "delegation_id": a})),
        arbitrary_json().prop_map(|a| json!({"type": "toolc.approval.response", "approval_id": a, "approved": true})),
    ]
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
        gpt_live_shaped().prop_map(|v| v.to_string()),
        ".{0,40}",
    ];
    prop_oneof![
        text.clone().prop_map(Input::Model),
        text.prop_map(Input::Browser),
        (0u64..200).prop_map(Input::Wait),
    ]
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Checks every event of `runs`, both sides, with OpenAI's SDK.
fn validate_with_sdk(name: &str, runs: &[Backend]) {
    let mut lines = String::new();
    for run in runs {
        for e in &run.from_model {
            lines.push_str(&format!("server {e}\n"));
        }
        for e in &run.to_model {
            lines.push_str(&format!("client {e}\n"));
        }
    }
    let python = repo().join("tests/mcp/.venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup (it installs OpenAI's SDK there)",
        python.display()
    );
    let dir = std::env::temp_dir().join(format!("toolc-gpt-live-{name}-{}", std::process::id()));
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
}

/// A fixed run of each property, every kind of call and page behaviour, interruptions and
/// refused requests included: every server event it scripts and every event the session sends
/// is one of the SDK's.
#[test]
fn the_properties_events_validate_with_openais_sdk() {
    let calls = |n: i64| {
        ["srv", "cli", "fire", "nope"]
            .iter()
            .zip([
                Answer::Reply,
                Answer::ReplyTwice,
                Answer::Ignore,
                Answer::ReplyWrongId,
            ])
            .map(|(tool, answer)| Call {
                tool,
                n,
                answer,
                malformed: n == 3,
            })
            .collect::<Vec<_>>()
    };
    let conversation = conversation(
        vec![
            (calls(0), 0),
            (calls(1), 120),
            (vec![], 0),
            (calls(3), 0),
            (calls(2), 60),
        ],
        false,
    );
    let behaviours = behaviours(vec![
        (
            vec![("srv", true, true), ("cli", true, true), ("bg", true, true)],
            false,
        ),
        (vec![("ask", true, true), ("stream", true, false)], true),
        (vec![("ask", false, true), ("cli", true, false)], false),
        (vec![("bg", false, true)], true),
    ]);
    assert!(
        behaviours
            .to_model
            .iter()
            .any(|e| e["item"]["type"] == "message"),
        "the fixed run has a background result: {:#?}",
        behaviours.to_model
    );
    validate_with_sdk("props", &[conversation, behaviours]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    /// Any mix of server, client, fire-and-forget, unknown and malformed calls over several
    /// backend responses, with any page behaviour: one result per call, one continuation per
    /// response with calls.
    #[test]
    fn one_result_per_call_and_one_continuation_per_backend_response(
        responses in prop::collection::vec(
            (prop::collection::vec(call(), 0..5), prop_oneof![3 => Just(0u64), 1 => 1u64..150]),
            1..4,
        ),
        sideband in proptest::bool::weighted(0.3),
    ) {
        conversation(responses, sideband);
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
        runtime().block_on(async move {
            let (mut session, mut events, mut out) = new_session(|config| {
                config.approval_timeout = Duration::from_millis(50);
            });
            for i in inputs {
                match i {
                    Input::Model(t) => { session.on_model_event(&t); }
                    Input::Browser(t) => { session.on_browser_event(&t); }
                    Input::Wait(ms) => out.run(&mut session, &mut events, Duration::from_millis(ms)).await,
                }
            }
            session.browser_closed();
            out.run(&mut session, &mut events, Duration::from_secs(1)).await;
            let mut seen = BTreeSet::new();
            for (id, _) in out.outputs() {
                assert!(seen.insert(id.clone()), "call {id} answered twice");
            }
        });
    }
}
