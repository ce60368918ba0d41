//! Every rule of a call, tested once, against the engine; the adapters' tests check their wire.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use super::*;
use crate::dispatch::{
    ApprovalFuture, ApprovalRequest, ClientCall, ClientFailure, ClientFuture, ClientPath, Decision,
    NoClient, Status,
};
use crate::{definitions_from_str, executor_fn, CallContext, SessionScope, ToolFuture};

const MANIFEST: &str = r#"
version: 1
toolsets:
  orders: { description: Orders. }
tools:
  - name: search
    description: Search.
    location: server
    parameters:
      type: object
      properties: { q: { type: string } }
      required: [q]
  - name: create
    description: Create a thing.
    location: server
    annotations: { idempotent: false }
    parameters:
      type: object
      properties: { a: { type: number } }
  - name: delete
    description: Delete a thing.
    location: server
    annotations: { idempotent: false, destructive: true }
  - name: refund
    description: Refund an order.
    location: server
    approval: required
    toolset: orders
    parameters:
      type: object
      properties: { order: { type: string } }
  - name: export
    description: Export everything.
    location: server
    mode: async
  - name: highlight
    description: Highlight an element.
    location: client
  - name: confetti
    description: Throw confetti.
    location: client
    wait_for_response: false
"#;

/// The registry, and how many times each server executor ran.
fn registry() -> (Arc<Registry>, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = |runs: &Arc<AtomicUsize>| {
        let runs = runs.clone();
        executor_fn(move |args: Value| {
            runs.fetch_add(1, Ordering::SeqCst);
            async move { Ok(json!({ "got": args })) }
        })
    };
    let registry = Registry::builder()
        .definitions(definitions_from_str("e.tools.yaml", MANIFEST).unwrap())
        .toolset("orders", "Orders.", ["refund"])
        .executor("search", counted(&runs))
        .executor("create", counted(&runs))
        .executor("delete", counted(&runs))
        .executor("refund", counted(&runs))
        .executor("export", counted(&runs))
        .build()
        .unwrap();
    (Arc::new(registry), runs)
}

fn conversation() -> Conversation {
    Conversation::new(registry().0)
}

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall::new(id, name, arguments)
}

fn refusal_kind(admission: &Admission) -> Option<CallErrorKind> {
    match admission.next() {
        Next::Answer(CallOutcome {
            status: Status::Failed(e),
            ..
        }) => Some(e.kind()),
        _ => None,
    }
}

#[test]
fn a_tool_outside_the_chosen_toolsets_is_unknown() {
    let (registry, _) = registry();
    let none: &[&str] = &[];
    let mut conversation =
        Conversation::new(registry.clone()).with_selection(Some(registry.selection(none).unwrap()));
    let refused = conversation.admit(call("c1", "refund", "{}"));
    assert_eq!(refusal_kind(&refused), Some(CallErrorKind::UnknownTool));
    assert!(matches!(refused.route(), Route::Reject(_)));
    // Tools in no toolset stay offered; choosing the toolset offers the tool.
    let search = conversation.admit(call("c2", "search", r#"{"q":"x"}"#));
    assert!(matches!(search.next(), Next::Run { .. }));
    conversation.set_selection(Some(registry.selection(&["orders"]).unwrap()));
    let offered = conversation.admit(call("c3", "refund", "{}"));
    assert!(offered.needs_approval());
}

#[test]
fn arguments_are_validated_before_anything_else() {
    let mut conversation = conversation();
    let invalid = conversation.admit(call("c1", "search", r#"{"q":1}"#));
    assert_eq!(
        refusal_kind(&invalid),
        Some(CallErrorKind::InvalidArguments)
    );
    let not_json = conversation.admit(call("c2", "search", "{"));
    assert_eq!(refusal_kind(&not_json), Some(CallErrorKind::InvalidJson));
    let unknown = conversation.admit(call("c3", "nope", "{}"));
    assert_eq!(refusal_kind(&unknown), Some(CallErrorKind::UnknownTool));
    // A refused call is not remembered: the same call, valid, is a first.
    let valid = conversation.admit(call("c4", "search", r#"{"q":"a"}"#));
    assert_eq!(valid.arguments(), Some(&json!({"q": "a"})));
}

#[test]
fn where_a_call_goes_follows_its_location() {
    let mut conversation = conversation();
    let client = conversation.admit(call("c1", "highlight", "{}"));
    assert!(matches!(client.route(), Route::Client { .. }));
    assert_eq!(client.location(), Location::Client);
    let notify = conversation.admit(call("c2", "confetti", "{}"));
    assert!(matches!(notify.route(), Route::Notify { .. }));
    let server = conversation.admit(call("c3", "search", r#"{"q":"a"}"#));
    assert!(matches!(server.route(), Route::Server { .. }));
    assert_eq!(server.location(), Location::Server);
}

#[test]
fn a_repeat_waits_for_its_first_call_and_then_reuses_its_result() {
    let mut conversation = conversation();
    let first = conversation.admit(call("c1", "create", r#"{"a":1}"#));
    assert!(matches!(first.next(), Next::Run { .. }));
    // The same arguments in another spelling are the same call.
    let waits = conversation.admit(call("c2", "create", r#"{ "a" : 1.0 }"#));
    assert_eq!(waits.next(), &Next::Wait { first: "c1".into() });
    let answered = conversation.finished("c1", &CallOutcome::ok("c1", r#"{"id":7}"#.into()));
    assert_eq!(answered, vec![CallOutcome::ok("c2", r#"{"id":7}"#.into())]);
    // Nothing waits any more; a later repeat gets the result at once.
    assert!(conversation
        .finished("c1", &CallOutcome::ok("c1", r#"{"id":7}"#.into()))
        .is_empty());
    let later = conversation.admit(call("c3", "create", r#"{"a":1}"#));
    assert_eq!(
        later.next(),
        &Next::Answer(CallOutcome::ok("c3", r#"{"id":7}"#.into()))
    );
    // Other arguments are another call.
    let other = conversation.admit(call("c4", "create", r#"{"a":2}"#));
    assert!(matches!(other.next(), Next::Run { .. }));
}

#[test]
fn a_failed_first_call_is_no_first_and_its_waiters_get_its_failure() {
    let mut conversation = conversation();
    conversation.admit(call("c1", "create", "{}"));
    conversation.admit(call("c2", "create", "{}"));
    let failure = CallOutcome::failed("c1", CallError::timeout("create", Duration::from_secs(1)));
    let answered = conversation.finished("c1", &failure);
    assert_eq!(answered.len(), 1);
    assert_eq!(answered[0].call_id, "c2");
    assert!(answered[0].is_error());
    let again = conversation.admit(call("c3", "create", "{}"));
    assert!(
        matches!(again.next(), Next::Run { .. }),
        "the next one runs"
    );
}

#[test]
fn a_destructive_repeat_is_refused_and_never_runs() {
    let mut conversation = conversation();
    conversation.admit(call("c1", "delete", "{}"));
    let running = conversation.admit(call("c2", "delete", "{}"));
    assert_eq!(refusal_kind(&running), Some(CallErrorKind::Duplicate));
    conversation.finished("c1", &CallOutcome::ok("c1", "{}".into()));
    let done = conversation.admit(call("c3", "delete", "{}"));
    assert_eq!(refusal_kind(&done), Some(CallErrorKind::Duplicate));
}

#[test]
fn waiting_repeats_are_bounded() {
    let mut conversation = conversation();
    conversation.admit(call("first", "create", "{}"));
    for i in 0..MAX_WAITING {
        let waits = conversation.admit(call(&format!("r{i}"), "create", "{}"));
        assert!(matches!(waits.next(), Next::Wait { .. }));
    }
    let over = conversation.admit(call("over", "create", "{}"));
    assert_eq!(refusal_kind(&over), Some(CallErrorKind::Duplicate));
    let answered = conversation.finished("first", &CallOutcome::ok("first", "{}".into()));
    assert_eq!(answered.len(), MAX_WAITING);
}

#[test]
fn approval_and_background_are_decided_from_the_tool() {
    let (registry, _) = registry();
    let mut conversation = Conversation::new(registry);
    let refund = conversation.admit(call("c1", "refund", "{}"));
    assert!(refund.needs_approval() && !refund.runs_in_background());
    assert!(!refund.clone().approved().needs_approval());
    let declined = refund.declined(Some("not today"));
    assert!(declined.output.contains("not today"), "{}", declined.output);
    let export = conversation.admit(call("c2", "export", "{}"));
    assert!(export.runs_in_background() && !export.needs_approval());
    assert!(export.started().output.contains("background"));
    let search = conversation.admit(call("c3", "search", r#"{"q":"a"}"#));
    assert!(!search.needs_approval() && !search.runs_in_background());
}

/// A client that answers approvals as told and counts what it was asked.
struct Asks {
    decision: Mutex<Option<Decision>>,
    asked: AtomicUsize,
}

impl ClientPath for Asks {
    fn call(&self, _call: ClientCall) -> ClientFuture {
        Box::pin(async { Err(ClientFailure::Disconnected) })
    }
    fn notify(&self, _call: ClientCall) -> Result<(), ClientFailure> {
        Err(ClientFailure::Disconnected)
    }
    fn approve(&self, _request: ApprovalRequest) -> ApprovalFuture {
        self.asked.fetch_add(1, Ordering::SeqCst);
        let decision = self.decision.lock().unwrap().take().unwrap();
        Box::pin(async move { decision })
    }
}

#[tokio::test]
async fn a_call_that_needs_approval_runs_only_once_approved() {
    let (registry, runs) = registry();
    let scope = SessionScope::new();
    let mut conversation = Conversation::new(registry.clone());
    let refund = conversation.admit(call("c1", "refund", "{}"));
    let denies = Asks {
        decision: Mutex::new(Some(Decision::Denied { reason: None })),
        asked: AtomicUsize::new(0),
    };
    let ctx = scope.call("refund", "c1");
    let outcome = refund.clone().run(&registry, ctx, &denies).await;
    assert_eq!(denies.asked.load(Ordering::SeqCst), 1);
    assert!(matches!(&outcome.status, Status::Failed(e) if e.kind() == CallErrorKind::NotApproved));
    assert_eq!(runs.load(Ordering::SeqCst), 0, "a declined call never runs");

    let approves = Asks {
        decision: Mutex::new(Some(Decision::Approved)),
        asked: AtomicUsize::new(0),
    };
    let outcome = refund
        .run(&registry, scope.call("refund", "c1"), &approves)
        .await;
    assert_eq!(outcome.status, Status::Ok, "{}", outcome.output);
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    // Approved out of band (the chat runner's application asked): not asked again.
    let again = conversation
        .admit(call("c2", "refund", r#"{"order":"o2"}"#))
        .approved();
    let never = Asks {
        decision: Mutex::new(None),
        asked: AtomicUsize::new(0),
    };
    let outcome = again
        .run(&registry, scope.call("refund", "c2"), &never)
        .await;
    assert_eq!(never.asked.load(Ordering::SeqCst), 0);
    assert_eq!(outcome.status, Status::Ok);
    // And an adapter with nobody to ask refuses it rather than running it.
    let unasked = conversation.admit(call("c3", "refund", r#"{"order":"o3"}"#));
    let refused = unasked
        .run_value(&registry, scope.call("refund", "c3"))
        .await
        .unwrap_err();
    assert_eq!(refused.kind(), CallErrorKind::NotApproved);
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn answers_and_waiting_repeats_never_run() {
    let (registry, runs) = registry();
    let scope = SessionScope::new();
    let mut conversation = Conversation::new(registry.clone());
    let first = conversation.admit(call("c1", "create", "{}"));
    let waits = conversation.admit(call("c2", "create", "{}"));
    let rejected = conversation.admit(call("c3", "search", "{}"));
    for admission in [waits, rejected] {
        let id = admission.call().call_id.clone();
        let outcome = admission
            .run(&registry, scope.call("x", &id), &NoClient)
            .await;
        assert!(outcome.is_error());
        assert_eq!(outcome.call_id, id);
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let outcome = first
        .run(&registry, scope.call("create", "c1"), &NoClient)
        .await;
    assert_eq!(outcome.status, Status::Ok);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// Live tools that have one tool, `weather`.
struct Weather;

impl LiveTools for Weather {
    fn current(&self) -> (u64, Arc<Vec<crate::ToolDefinition>>) {
        (1, Arc::new(vec![]))
    }
    fn is_live(&self, name: &str) -> bool {
        name == "weather"
    }
    fn call(&self, _ctx: CallContext, name: &str, arguments: Value) -> ToolFuture {
        let name = name.to_owned();
        Box::pin(async move {
            if name == "weather" {
                Ok(json!({ "sunny": arguments }))
            } else {
                Err(crate::ToolError::new(format!("no live tool `{name}`")))
            }
        })
    }
}

#[tokio::test]
async fn a_name_the_registry_does_not_know_goes_to_the_live_tools() {
    let (registry, _) = registry();
    let scope = SessionScope::new();
    let none: &[&str] = &[];
    let mut conversation = Conversation::new(registry.clone())
        .with_live_tools(Some(Arc::new(Weather)))
        .with_selection(Some(registry.selection(none).unwrap()));
    let weather = conversation.admit(call("c1", "weather", r#"{"city":"Oslo"}"#));
    assert!(matches!(weather.route(), Route::Live { .. }));
    let outcome = weather
        .run(&registry, scope.call("weather", "c1"), &NoClient)
        .await;
    assert_eq!(outcome.output, r#"{"sunny":{"city":"Oslo"}}"#);
    let not_json = conversation.admit(call("c2", "weather", "{"));
    assert_eq!(refusal_kind(&not_json), Some(CallErrorKind::InvalidJson));
    // A registry tool the conversation does not offer stays unknown: it is not the live
    // tools' to take.
    let refund = conversation.admit(call("c3", "refund", "{}"));
    assert_eq!(refusal_kind(&refund), Some(CallErrorKind::UnknownTool));
}

const LIMITED: &str = r#"
version: 1
tools:
  - name: send_sms
    description: Send a text.
    location: server
    rate_limit: 2/min per principal
  - name: poll
    description: Poll.
    location: server
    rate_limit: 1/10s per conversation
"#;

fn limited() -> Arc<Registry> {
    let ok = || executor_fn(|_: Value| async { Ok(json!("sent")) });
    Arc::new(
        Registry::builder()
            .definitions(definitions_from_str("l.tools.yaml", LIMITED).unwrap())
            .executor("send_sms", ok())
            .executor("poll", ok())
            .build()
            .unwrap(),
    )
}

fn rate_limited(admission: &Admission) -> Option<CallError> {
    match admission.next() {
        Next::Answer(CallOutcome {
            status: Status::Failed(e),
            ..
        }) if e.kind() == CallErrorKind::RateLimited => Some(e.clone()),
        _ => None,
    }
}

#[tokio::test(start_paused = true)]
async fn a_per_principal_limit_holds_across_conversations_and_the_model_is_told_when_to_retry() {
    let registry = limited();
    let limiter: Arc<dyn RateLimiter> = Arc::new(InMemoryLimiter::new());
    let open = |principal: &str| {
        Conversation::new(registry.clone())
            .with_limiter(limiter.clone())
            .with_principal(Some(principal.to_owned()))
    };
    let (mut a, mut b, mut other) = (open("ann"), open("ann"), open("bob"));
    assert!(matches!(
        a.admit(call("c1", "send_sms", "{}")).next(),
        Next::Run { .. }
    ));
    tokio::time::advance(Duration::from_secs(20)).await;
    assert!(matches!(
        b.admit(call("c2", "send_sms", "{}")).next(),
        Next::Run { .. }
    ));
    // A third call of the same principal, in either conversation, does not run.
    let over = a.admit(call("c3", "send_sms", r#"{}"#));
    let error = rate_limited(&over).expect("rate limited");
    assert_eq!(error.retry_after(), Some(Duration::from_secs(40)));
    let shown = error.to_model_json();
    assert_eq!(shown["error"]["code"], "rate_limited");
    assert_eq!(shown["error"]["kind"], "rate_limited");
    assert_eq!(shown["error"]["retryable"], true);
    assert_eq!(shown["error"]["retry_after_ms"], 40_000);
    assert!(error.message().contains("in 40 s"), "{}", error.message());
    // The refused call is no first call: a repeat with the same arguments is judged afresh.
    assert!(!a.remembers("c3"));
    // Another principal has its own count.
    assert!(matches!(
        other.admit(call("c4", "send_sms", "{}")).next(),
        Next::Run { .. }
    ));
    // Once the first call leaves the window, one more fits.
    tokio::time::advance(Duration::from_secs(40)).await;
    assert!(matches!(
        b.admit(call("c5", "send_sms", "{}")).next(),
        Next::Run { .. }
    ));
    assert!(rate_limited(&a.admit(call("c6", "send_sms", "{}"))).is_some());
}

#[tokio::test(start_paused = true)]
async fn a_per_conversation_limit_counts_each_conversation_alone_and_refused_calls_do_not_run() {
    let registry = limited();
    let limiter: Arc<dyn RateLimiter> = Arc::new(InMemoryLimiter::new());
    let open = || {
        Conversation::new(registry.clone())
            .with_limiter(limiter.clone())
            .with_principal(Some("ann".into()))
    };
    let (mut a, mut b) = (open(), open());
    let scope = SessionScope::new();
    let first = a.admit(call("c1", "poll", "{}"));
    let outcome = first
        .run(&registry, scope.call("poll", "c1"), &NoClient)
        .await;
    assert_eq!(
        (outcome.status, outcome.output.as_str()),
        (Status::Ok, r#""sent""#)
    );
    let over = a.admit(call("c2", "poll", "{}"));
    // Nothing runs: running the admission answers the refusal.
    let outcome = over
        .run(&registry, scope.call("poll", "c2"), &NoClient)
        .await;
    assert!(matches!(&outcome.status, Status::Failed(e) if e.kind() == CallErrorKind::RateLimited));
    assert!(matches!(
        b.admit(call("c3", "poll", "{}")).next(),
        Next::Run { .. }
    ));
    // Without a principal, a `per principal` limit counts the conversation's calls.
    let mut anonymous = Conversation::new(registry.clone()).with_limiter(limiter.clone());
    assert!(matches!(
        anonymous.admit(call("c4", "send_sms", "{}")).next(),
        Next::Run { .. }
    ));
}

/// A limiter over a "store" that answers later: the in-memory one's answer, or always
/// unavailable; counts the checks that ran.
struct Later {
    counts: InMemoryLimiter,
    down: bool,
    checks: Arc<AtomicUsize>,
}

impl RateLimiter for Later {
    fn acquire(&self, key: &str, limit: &crate::RateLimit, now: tokio::time::Instant) -> Acquire {
        let checks = self.checks.clone();
        let answer = match self.down {
            true => Err(LimitRefusal::Unavailable("connection refused".into())),
            false => self
                .counts
                .count(key, limit, now)
                .map_err(LimitRefusal::Over),
        };
        Acquire::Later(Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(5)).await;
            checks.fetch_add(1, Ordering::SeqCst);
            answer
        }))
    }
}

const LIMITED_APPROVAL: &str = r#"
version: 1
tools:
  - name: wire
    description: Wire money.
    location: server
    approval: required
    rate_limit: 1/min per principal
    parameters:
      type: object
      properties: { n: { type: number } }
  - name: highlight
    description: Highlight an element.
    location: client
    rate_limit: 1/min per conversation
"#;

#[tokio::test(start_paused = true)]
async fn a_limit_a_store_answers_later_is_awaited_before_approval_is_asked_and_anything_runs() {
    let ran = Arc::new(AtomicUsize::new(0));
    let counter = ran.clone();
    let registry = Arc::new(
        Registry::builder()
            .definitions(definitions_from_str("a.tools.yaml", LIMITED_APPROVAL).unwrap())
            .executor(
                "wire",
                executor_fn(move |_: Value| {
                    counter.fetch_add(1, Ordering::SeqCst);
                    async { Ok(json!("wired")) }
                }),
            )
            .build()
            .unwrap(),
    );
    let checks = Arc::new(AtomicUsize::new(0));
    let limiter: Arc<dyn RateLimiter> = Arc::new(Later {
        counts: InMemoryLimiter::new(),
        down: false,
        checks: checks.clone(),
    });
    let mut conversation = Conversation::new(registry.clone())
        .with_limiter(limiter)
        .with_principal(Some("ann".into()));
    let scope = SessionScope::new();
    let client = Asks {
        decision: Mutex::new(Some(Decision::Approved)),
        asked: AtomicUsize::new(0),
    };
    // Under the limit: checked, asked, run.
    let first = conversation.admit(call("c1", "wire", "{}"));
    assert!(first.limit_pending() && first.needs_approval());
    assert!(matches!(first.next(), Next::Run { approval: true, .. }));
    let outcome = first
        .run(&registry, scope.call("wire", "c1"), &client)
        .await;
    assert_eq!(outcome.status, Status::Ok);
    assert_eq!(client.asked.load(Ordering::SeqCst), 1);
    // Over it: refused before anyone is asked, and nothing runs.
    let over = conversation.admit(call("c2", "wire", r#"{"n":2}"#));
    let copy = over.clone();
    let outcome = over.run(&registry, scope.call("wire", "c2"), &client).await;
    let Status::Failed(error) = &outcome.status else {
        panic!("{outcome:?}")
    };
    assert_eq!(error.code(), Some("rate_limited"));
    let after = error.retry_after().unwrap();
    assert!(after > Duration::from_secs(59) && after <= Duration::from_secs(60));
    assert_eq!(client.asked.load(Ordering::SeqCst), 1, "nobody was asked");
    assert_eq!(ran.load(Ordering::SeqCst), 1, "nothing ran");
    // Every clone of the admission reads the one answer: the call was checked once.
    assert!(!copy.limit_pending());
    assert_eq!(copy.check_limit().await, Err(outcome.clone()));
    assert_eq!(checks.load(Ordering::SeqCst), 2);
    // The refusal is the call's outcome for repeats too: recorded, it is no first call.
    assert!(conversation.finished("c2", &outcome).is_empty());
    assert!(!conversation.remembers("c2"));
}

#[tokio::test(start_paused = true)]
async fn a_store_that_cannot_be_asked_refuses_the_call_with_a_result_the_model_can_act_on() {
    let registry = Arc::new(
        Registry::builder()
            .definitions(definitions_from_str("a.tools.yaml", LIMITED_APPROVAL).unwrap())
            .executor("wire", executor_fn(|_: Value| async { Ok(json!("wired")) }))
            .build()
            .unwrap(),
    );
    let limiter: Arc<dyn RateLimiter> = Arc::new(Later {
        counts: InMemoryLimiter::new(),
        down: true,
        checks: Arc::default(),
    });
    let mut conversation = Conversation::new(registry.clone()).with_limiter(limiter);
    // A client call is not sent anywhere before its check: its run gets the refusal.
    let highlight = conversation.admit(call("h1", "highlight", "{}"));
    assert!(highlight.limit_pending());
    let outcome = highlight
        .run(
            &registry,
            SessionScope::new().call("highlight", "h1"),
            &NoClient,
        )
        .await;
    let Status::Failed(error) = &outcome.status else {
        panic!("{outcome:?}")
    };
    assert_eq!(error.kind(), CallErrorKind::RateLimited);
    let shown = error.to_model_json();
    assert_eq!(shown["error"]["code"], "rate_limit_unavailable");
    assert_eq!(shown["error"]["reason"], "rate_limit_unavailable");
    assert_eq!(shown["error"]["retryable"], true);
    assert_eq!(shown["error"]["retry_after_ms"], 15_000);
    let message = shown["error"]["message"].as_str().unwrap();
    assert!(message.contains("cannot be counted right now"), "{message}");
    assert!(
        !message.contains("connection refused"),
        "operator detail stays out: {message}"
    );
    // An adapter without anyone to ask (MCP's `run_value`) reads the same error.
    let wire = conversation.admit(call("w1", "wire", "{}"));
    let ctx = SessionScope::new().call("wire", "w1");
    let error = wire.run_value(&registry, ctx).await.unwrap_err();
    assert_eq!(error.code(), Some("rate_limit_unavailable"));
}

const RETRIED: &str = r#"
version: 1
tools:
  - name: lookup
    description: Look up an order.
    location: server
    annotations: { idempotent: true }
    retry: { attempts: 3, backoff: 100ms, on: [tool_failed] }
  - name: slow
    description: A slow lookup.
    location: server
    timeout: 1s
    annotations: { read_only: true }
    retry: { attempts: 2, backoff: 50ms, on: [tool_failed] }
"#;

/// A registry whose `lookup` fails `failures` times, then answers; `slow` never answers.
fn retried(failures: usize) -> (Arc<Registry>, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let (r1, r2) = (runs.clone(), runs.clone());
    let registry = Registry::builder()
        .definitions(definitions_from_str("r.tools.yaml", RETRIED).unwrap())
        .executor(
            "lookup",
            executor_fn(move |_: Value| {
                let n = r1.fetch_add(1, Ordering::SeqCst);
                async move {
                    if n < failures {
                        Err(crate::ToolError::new("backend unavailable"))
                    } else {
                        Ok(json!("found"))
                    }
                }
            }),
        )
        .executor(
            "slow",
            executor_fn(move |_: Value| {
                r2.fetch_add(1, Ordering::SeqCst);
                async {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                    Ok(json!("late"))
                }
            }),
        )
        .build()
        .unwrap();
    (Arc::new(registry), runs)
}

#[tokio::test(start_paused = true)]
async fn a_retryable_failure_runs_again_after_a_doubling_backoff() {
    let (registry, runs) = retried(2);
    let scope = SessionScope::new();
    let admission = Conversation::new(registry.clone()).admit(call("c1", "lookup", "{}"));
    let started = tokio::time::Instant::now();
    let outcome = admission
        .run(&registry, scope.call("lookup", "c1"), &NoClient)
        .await;
    assert_eq!(
        (outcome.status, outcome.output.as_str()),
        (Status::Ok, r#""found""#)
    );
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    // 100 ms before the first retry, 200 ms before the second.
    assert_eq!(started.elapsed(), Duration::from_millis(300));
}

#[tokio::test(start_paused = true)]
async fn retries_stop_at_the_attempts_and_skip_failures_not_named() {
    let (registry, runs) = retried(usize::MAX);
    let scope = SessionScope::new();
    let outcome = Conversation::new(registry.clone())
        .admit(call("c1", "lookup", "{}"))
        .run(&registry, scope.call("lookup", "c1"), &NoClient)
        .await;
    assert!(matches!(&outcome.status, Status::Failed(e) if e.kind() == CallErrorKind::ToolFailed));
    assert_eq!(runs.load(Ordering::SeqCst), 3, "three runs in all");
    // `slow` retries only `tool_failed`: its timeout reaches the model after one run.
    runs.store(0, Ordering::SeqCst);
    let outcome = Conversation::new(registry.clone())
        .admit(call("c2", "slow", "{}"))
        .run(&registry, scope.call("slow", "c2"), &NoClient)
        .await;
    assert!(matches!(&outcome.status, Status::Failed(e) if e.kind() == CallErrorKind::Timeout));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_call_does_not_retry() {
    let (registry, runs) = retried(usize::MAX);
    let scope = SessionScope::new();
    let ctx = scope.call("lookup", "c1");
    let admission = Conversation::new(registry.clone()).admit(call("c1", "lookup", "{}"));
    let run = tokio::spawn({
        let registry = registry.clone();
        async move { admission.run(&registry, ctx, &NoClient).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    scope.cancel();
    let outcome = run.await.unwrap();
    assert!(matches!(&outcome.status, Status::Failed(e) if e.kind() == CallErrorKind::Cancelled));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// A duplicate store in memory with the semantics of a shared one (first calls by key, claims,
/// expiry by the window on the test's clock), answering after a short pause as a store over
/// the network would; or, `down`, unable to answer, failing open or closed.
#[derive(Default)]
struct FakeStore {
    entries: Mutex<std::collections::HashMap<DuplicateKey, FakeEntry>>,
    down: Option<bool>,
    claims: AtomicUsize,
}

struct FakeEntry {
    first: String,
    token: String,
    until: tokio::time::Instant,
    ended: Option<Ended>,
}

impl DuplicateStore for FakeStore {
    fn claim(
        &self,
        key: &DuplicateKey,
        call_id: &str,
        claim: &str,
        window: Duration,
        policy: toolc_core::definition::OnDuplicate,
    ) -> StoreFuture<Prior> {
        self.claims.fetch_add(1, Ordering::SeqCst);
        let now = tokio::time::Instant::now();
        let prior = match self.down {
            Some(true) => Prior::Unchecked,
            Some(false) => Prior::Unavailable("connection refused".into()),
            None => {
                let mut entries = self.entries.lock().unwrap();
                let fresh = entries.get(key).filter(|e| e.until > now);
                let prior = fresh.and_then(|e| match &e.ended {
                    None => Some(Prior::Running {
                        first: e.first.clone(),
                    }),
                    Some(Ended::Succeeded(None))
                        if policy == toolc_core::definition::OnDuplicate::Reuse =>
                    {
                        None
                    }
                    Some(Ended::Succeeded(result)) => Some(Prior::Succeeded {
                        first: e.first.clone(),
                        result: result.clone(),
                    }),
                    Some(Ended::Failed) => None,
                });
                prior.unwrap_or_else(|| {
                    let entry = FakeEntry {
                        first: call_id.to_owned(),
                        token: claim.to_owned(),
                        until: now + window,
                        ended: None,
                    };
                    entries.insert(key.clone(), entry);
                    Prior::Claimed
                })
            }
        };
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(2)).await;
            prior
        })
    }

    fn ended(&self, key: &DuplicateKey, claim: &str, ended: Ended) -> StoreFuture<()> {
        let mut entries = self.entries.lock().unwrap();
        if let Some(entry) = entries.get_mut(key).filter(|e| e.token == claim) {
            entry.ended = Some(ended);
        }
        Box::pin(std::future::ready(()))
    }
}

/// A conversation over `registry` sharing first calls through `store`, as `principal`'s
/// conversation `id` (a second process's conversation of the same id is another of these).
fn shared(
    registry: &Arc<Registry>,
    store: &Arc<FakeStore>,
    principal: &str,
    id: Option<&str>,
) -> Conversation {
    let store: Arc<dyn DuplicateStore> = store.clone();
    let mut conversation = Conversation::new(registry.clone())
        .with_principal(Some(principal.into()))
        .with_duplicate_store(Some(store));
    conversation.set_conversation_id(id.map(str::to_owned));
    conversation
}

/// Admits and runs `id` in `conversation`, records its outcome as an adapter does, and lets
/// the store get the end.
async fn admit_run_finish(
    registry: &Registry,
    conversation: &mut Conversation,
    id: &str,
    tool: &str,
    arguments: &str,
) -> CallOutcome {
    let admission = conversation.admit(call(id, tool, arguments));
    let outcome = admission
        .run(registry, SessionScope::new().call(tool, id), &NoClient)
        .await;
    conversation.finished(id, &outcome);
    tokio::task::yield_now().await;
    outcome
}

#[tokio::test(start_paused = true)]
async fn a_repeat_in_another_process_of_the_same_conversation_gets_the_first_result() {
    let (registry, runs) = registry();
    let store = Arc::new(FakeStore::default());
    let mut here = shared(&registry, &store, "ann", Some("conv-1"));
    let mut there = shared(&registry, &store, "ann", Some("conv-1"));
    // The first call is checked in the store before it runs.
    let first = here.admit(call("c1", "create", r#"{"a":1}"#));
    assert!(first.limit_pending(), "the store is asked before it runs");
    let outcome = first
        .run(
            &registry,
            SessionScope::new().call("create", "c1"),
            &NoClient,
        )
        .await;
    assert_eq!(outcome.status, Status::Ok);
    here.finished("c1", &outcome);
    tokio::task::yield_now().await;
    // The same call, spelled otherwise, in the other process: the first result, not a run.
    let repeat = there.admit(call("x9", "create", r#"{ "a": 1.0 }"#));
    assert!(matches!(repeat.next(), Next::Run { .. }) && repeat.limit_pending());
    let copy = repeat.clone();
    let reused = repeat
        .run(
            &registry,
            SessionScope::new().call("create", "x9"),
            &NoClient,
        )
        .await;
    assert_eq!(reused, CallOutcome::ok("x9", outcome.output.clone()));
    assert_eq!(copy.check_limit().await, Err(reused.clone()));
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "ran once for both processes"
    );
    // Recorded there, a later repeat there is answered from memory, without the store.
    there.finished("x9", &reused);
    let claims = store.claims.load(Ordering::SeqCst);
    let local = there.admit(call("x10", "create", r#"{"a":1}"#));
    assert_eq!(
        local.next(),
        &Next::Answer(CallOutcome::ok("x10", outcome.output.clone()))
    );
    assert_eq!(store.claims.load(Ordering::SeqCst), claims);
    // Another principal's conversation of the same id, and another conversation of Ann's,
    // share nothing.
    let mut bob = shared(&registry, &store, "bob", Some("conv-1"));
    let bobs = admit_run_finish(&registry, &mut bob, "b1", "create", r#"{"a":1}"#).await;
    assert_eq!(bobs.status, Status::Ok);
    let mut other = shared(&registry, &store, "ann", Some("conv-2"));
    admit_run_finish(&registry, &mut other, "o1", "create", r#"{"a":1}"#).await;
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    // After the window, the same call is a first call again.
    tokio::time::advance(toolc_core::DEFAULT_DUPLICATE_WINDOW + Duration::from_secs(1)).await;
    let mut third = shared(&registry, &store, "ann", Some("conv-1"));
    admit_run_finish(&registry, &mut third, "c2", "create", r#"{"a":1}"#).await;
    assert_eq!(runs.load(Ordering::SeqCst), 4);
}

#[tokio::test(start_paused = true)]
async fn a_conversation_without_an_application_id_never_asks_the_store() {
    let (registry, runs) = registry();
    let store = Arc::new(FakeStore::default());
    let mut here = shared(&registry, &store, "ann", None);
    let mut there = shared(&registry, &store, "ann", None);
    let first = here.admit(call("c1", "create", "{}"));
    assert!(!first.limit_pending());
    admit_run_finish(&registry, &mut here, "c1", "create", "{}").await;
    admit_run_finish(&registry, &mut there, "c1", "create", "{}").await;
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "two conversations, two runs"
    );
    assert_eq!(store.claims.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn a_refused_repeat_elsewhere_is_refused_running_or_done_and_never_runs() {
    let (registry, runs) = registry();
    let store = Arc::new(FakeStore::default());
    let mut here = shared(&registry, &store, "ann", Some("conv-1"));
    let mut there = shared(&registry, &store, "ann", Some("conv-1"));
    let first = here.admit(call("d1", "delete", "{}"));
    first.check_limit().await.unwrap();
    // While the first still runs here:
    let running = there.admit(call("d2", "delete", "{}"));
    let Err(refused) = running.check_limit().await else {
        panic!("a repeat ran")
    };
    let Status::Failed(error) = &refused.status else {
        panic!("{refused:?}")
    };
    assert_eq!(error.code(), Some("duplicate_call"));
    assert!(error.message().contains("still running"), "{error}");
    assert!(!error.retryable());
    // Recorded as adapters do: a refusal is no first call, here either.
    there.finished("d2", &refused);
    let outcome = first
        .run(
            &registry,
            SessionScope::new().call("delete", "d1"),
            &NoClient,
        )
        .await;
    here.finished("d1", &outcome);
    tokio::task::yield_now().await;
    let done = there.admit(call("d3", "delete", "{}"));
    let refused = done
        .run(
            &registry,
            SessionScope::new().call("delete", "d3"),
            &NoClient,
        )
        .await;
    assert!(refused.output.contains("already ran"), "{}", refused.output);
    assert!(refused.output.contains("`d1`"), "names the first call");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn a_reuse_repeat_waits_for_a_first_call_running_elsewhere_within_its_deadline() {
    let (registry, runs) = registry();
    let store = Arc::new(FakeStore::default());
    let mut here = shared(&registry, &store, "ann", Some("conv-1"));
    let mut there = shared(&registry, &store, "ann", Some("conv-1"));
    let first = here.admit(call("c1", "create", "{}"));
    first.check_limit().await.unwrap();
    let repeat = there.admit(call("c2", "create", "{}"));
    let waiting = tokio::spawn({
        let registry = registry.clone();
        async move {
            repeat
                .run(
                    &registry,
                    SessionScope::new().call("create", "c2"),
                    &NoClient,
                )
                .await
        }
    });
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(!waiting.is_finished(), "it waits for the first call");
    here.finished("c1", &CallOutcome::ok("c1", r#"{"id":1}"#.into()));
    let reused = waiting.await.unwrap();
    assert_eq!(reused, CallOutcome::ok("c2", r#"{"id":1}"#.into()));
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    // A first call that never ends elsewhere (its process died): the repeat waits no longer
    // than its own deadline, and is told when to ask again.
    let stuck = here.admit(call("c3", "create", r#"{"a":3}"#));
    stuck.check_limit().await.unwrap();
    let started = tokio::time::Instant::now();
    let repeat = there.admit(call("c4", "create", r#"{"a":3}"#));
    let Err(refused) = repeat.check_limit().await else {
        panic!("a repeat ran")
    };
    let waited = started.elapsed();
    assert!(
        waited <= crate::DEFAULT_CLIENT_TIMEOUT && waited >= Duration::from_secs(5),
        "{waited:?}"
    );
    let Status::Failed(error) = &refused.status else {
        panic!("{refused:?}")
    };
    assert_eq!(error.code(), Some("duplicate_call"));
    assert!(error.retryable());
    assert_eq!(error.retry_after(), Some(Duration::from_secs(5)));
}

#[tokio::test(start_paused = true)]
async fn a_failed_or_unkept_first_elsewhere_is_no_first_and_a_down_store_is_the_configured_choice()
{
    let (registry, runs) = registry();
    let store = Arc::new(FakeStore::default());
    let mut here = shared(&registry, &store, "ann", Some("conv-1"));
    let mut there = shared(&registry, &store, "ann", Some("conv-1"));
    // Failed there: the repeat here runs.
    let first = here.admit(call("c1", "create", "{}"));
    first.check_limit().await.unwrap();
    let failure = CallOutcome::failed("c1", CallError::timeout("create", Duration::from_secs(1)));
    here.finished("c1", &failure);
    tokio::task::yield_now().await;
    let outcome = admit_run_finish(&registry, &mut there, "c2", "create", "{}").await;
    assert_eq!(outcome.status, Status::Ok);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // A result too long to keep is not stored: the repeat elsewhere runs.
    let first = here.admit(call("c3", "create", r#"{"a":2}"#));
    first.check_limit().await.unwrap();
    let huge = CallOutcome::ok("c3", format!("\"{}\"", "x".repeat(MAX_KEPT_RESULT)));
    here.finished("c3", &huge);
    tokio::task::yield_now().await;
    let kept = store.entries.lock().unwrap().values().any(
        |e| matches!(&e.ended, Some(Ended::Succeeded(Some(k))) if k.output.len() > MAX_KEPT_RESULT),
    );
    assert!(!kept, "the huge result is not in the store");
    let outcome = admit_run_finish(&registry, &mut there, "c4", "create", r#"{"a":2}"#).await;
    assert!(outcome.output.len() < 100);
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    // A store that cannot be asked: fail open runs the call, fail closed refuses it.
    let open = Arc::new(FakeStore {
        down: Some(true),
        ..FakeStore::default()
    });
    let mut conversation = shared(&registry, &open, "ann", Some("conv-1"));
    let outcome = admit_run_finish(&registry, &mut conversation, "c5", "create", "{}").await;
    assert_eq!(outcome.status, Status::Ok);
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    let closed = Arc::new(FakeStore {
        down: Some(false),
        ..FakeStore::default()
    });
    let mut conversation = shared(&registry, &closed, "ann", Some("conv-1"));
    let outcome = admit_run_finish(&registry, &mut conversation, "c6", "create", "{}").await;
    let Status::Failed(error) = &outcome.status else {
        panic!("{outcome:?}")
    };
    let shown = error.to_model_json();
    assert_eq!(shown["error"]["code"], "duplicate_check_unavailable");
    assert_eq!(shown["error"]["retryable"], true);
    assert_eq!(shown["error"]["retry_after_ms"], 15_000);
    assert!(!outcome.output.contains("connection refused"));
    assert_eq!(runs.load(Ordering::SeqCst), 3, "nothing ran");
    // MCP's `run_value` reads the reused result as a value.
    let mut here = shared(&registry, &store, "ann", Some("conv-9"));
    admit_run_finish(&registry, &mut here, "v1", "create", r#"{"a":9}"#).await;
    let mut there = shared(&registry, &store, "ann", Some("conv-9"));
    let repeat = there.admit(call("v2", "create", r#"{"a":9}"#));
    let value = repeat
        .run_value(&registry, SessionScope::new().call("create", "v2"))
        .await
        .unwrap();
    assert_eq!(value, json!({ "got": { "a": 9 } }));
    assert_eq!(runs.load(Ordering::SeqCst), 4);
}
