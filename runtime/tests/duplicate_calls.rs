//! Repeated calls (the same tool, the same arguments in any key order, within the tool's
//! `duplicate_window`) are answered as the tool's `on_duplicate` says, the same way in a
//! realtime session on either provider (across responses, a re-issue after an interruption
//! included), in the chat runner and over MCP: `reuse` does not run again and gets the first
//! result, `refuse` does not run again and says so, `run` (and tools without the hint) run.
#![cfg(all(feature = "mcp", feature = "testing"))]

mod common {
    pub mod mcp;
    pub mod session;
}

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::mcp::Pipe;
use common::session::Wire;
use serde_json::{json, Value};
use toolc_runtime::chat::{ToolCall, TurnRunner};
use toolc_runtime::mcp::McpServer;
use toolc_runtime::realtime::{script, RealtimeProvider, RealtimeSession, SessionConfig};
use toolc_runtime::{definitions_from_str, executor_fn, Registry};

const MANIFEST: &str = r#"
version: 1
tools:
  - name: create_ticket
    description: Open a support ticket.
    location: server
    annotations: { idempotent: false }
    parameters:
      type: object
      properties: { subject: { type: string }, priority: { type: string } }
  - name: transfer
    description: Move money.
    location: server
    annotations: { idempotent: false, destructive: true }
    duplicate_window: 10s
    parameters:
      type: object
      properties: { amount: { type: number } }
  - name: issue_refund
    description: Refund an order.
    location: server
    approval: required
    annotations: { idempotent: false }
    parameters:
      type: object
      properties: { order: { type: string } }
  - name: lookup
    description: Look something up.
    location: server
    parameters:
      type: object
      properties: { q: { type: string } }
"#;

/// How many times each executor ran.
#[derive(Default)]
struct Runs {
    create_ticket: AtomicUsize,
    transfer: AtomicUsize,
    lookup: AtomicUsize,
}

fn registry(runs: Arc<Runs>) -> Arc<Registry> {
    let (a, b, c) = (runs.clone(), runs.clone(), runs);
    Arc::new(
        Registry::builder()
            .definitions(definitions_from_str("d.tools.yaml", MANIFEST).unwrap())
            .executor(
                "create_ticket",
                executor_fn(move |_args: Value| {
                    let n = a.create_ticket.fetch_add(1, Ordering::SeqCst) + 1;
                    async move {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        Ok(json!({ "ticket": format!("T-{n}") }))
                    }
                }),
            )
            .executor(
                "transfer",
                executor_fn(move |_args: Value| {
                    b.transfer.fetch_add(1, Ordering::SeqCst);
                    async move { Ok(json!({ "receipt": "R-1" })) }
                }),
            )
            .executor(
                "issue_refund",
                executor_fn(|_args: Value| async move { Ok(json!({ "refunded": true })) }),
            )
            .executor(
                "lookup",
                executor_fn(move |_args: Value| {
                    c.lookup.fetch_add(1, Ordering::SeqCst);
                    async move { Ok(json!({ "hits": 1 })) }
                }),
            )
            .build()
            .unwrap(),
    )
}

fn runs(runs: &Runs) -> (usize, usize, usize) {
    (
        runs.create_ticket.load(Ordering::SeqCst),
        runs.transfer.load(Ordering::SeqCst),
        runs.lookup.load(Ordering::SeqCst),
    )
}

fn session(provider: RealtimeProvider, runs: Arc<Runs>) -> Wire {
    let registry = registry(runs);
    let mut config = SessionConfig::for_provider(&registry, provider);
    config.filler_delay = None;
    Wire::new(RealtimeSession::new(registry, Arc::new(config)))
}

/// Makes the model call `(call_id, tool, arguments)` in a response of its own.
fn call(
    wire: &mut Wire,
    provider: RealtimeProvider,
    response: &str,
    calls: &[(&str, &str, Value)],
) {
    match provider {
        RealtimeProvider::OpenAi => {
            let calls: Vec<(&str, &str, String)> = calls
                .iter()
                .map(|(id, name, args)| (*id, *name, args.to_string()))
                .collect();
            let calls: Vec<(&str, &str, &str)> =
                calls.iter().map(|(i, n, a)| (*i, *n, a.as_str())).collect();
            wire.model_all(&script::response_with_calls(response, &calls));
        }
        RealtimeProvider::GptLive => {
            let calls: Vec<(&str, &str, String)> = calls
                .iter()
                .map(|(id, name, args)| (*id, *name, args.to_string()))
                .collect();
            let calls: Vec<(&str, &str, &str)> =
                calls.iter().map(|(i, n, a)| (*i, *n, a.as_str())).collect();
            wire.model_all(&script::gpt_live::response_with_calls(
                "d1", response, &calls,
            ));
        }
        RealtimeProvider::GeminiLive | RealtimeProvider::VertexLive => {
            let calls: Vec<(&str, &str, Value)> = calls
                .iter()
                .map(|(id, name, args)| (*id, *name, args.clone()))
                .collect();
            wire.model(&script::live::tool_call(&calls));
        }
    }
}

/// Every result the model got, by call id.
fn results(wire: &Wire) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for e in &wire.to_model {
        if e["item"]["type"] == "function_call_output" {
            out.push((
                e["item"]["call_id"].as_str().unwrap().to_owned(),
                serde_json::from_str(e["item"]["output"].as_str().unwrap()).unwrap(),
            ));
        }
        for r in e["toolResponse"]["functionResponses"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let response = &r["response"];
            let value = response.get("output").unwrap_or(response).clone();
            out.push((r["id"].as_str().unwrap().to_owned(), value));
        }
    }
    out
}

fn result_of(wire: &Wire, call_id: &str) -> Value {
    results(wire)
        .into_iter()
        .find(|(id, _)| id == call_id)
        .unwrap_or_else(|| panic!("no result for {call_id}: {:?}", wire.to_model))
        .1
}

async fn realtime_repeats(provider: RealtimeProvider) {
    let counted = Arc::new(Runs::default());
    let mut wire = session(provider, counted.clone());
    // A create-type call, re-issued in the next response with the keys in another order.
    call(
        &mut wire,
        provider,
        "r1",
        &[(
            "c1",
            "create_ticket",
            json!({"subject": "refund", "priority": "high"}),
        )],
    );
    wire.run_for(Duration::from_secs(1)).await;
    call(
        &mut wire,
        provider,
        "r2",
        &[(
            "c2",
            "create_ticket",
            json!({"priority": "high", "subject": "refund"}),
        )],
    );
    wire.run_for(Duration::from_secs(1)).await;
    assert_eq!(runs(&counted).0, 1, "the repeat did not run");
    assert_eq!(result_of(&wire, "c1"), json!({"ticket": "T-1"}));
    assert_eq!(
        result_of(&wire, "c2"),
        json!({"ticket": "T-1"}),
        "it got the first result"
    );
    // Other arguments are another call.
    call(
        &mut wire,
        provider,
        "r3",
        &[("c3", "create_ticket", json!({"subject": "exchange"}))],
    );
    wire.run_for(Duration::from_secs(1)).await;
    assert_eq!(result_of(&wire, "c3"), json!({"ticket": "T-2"}));

    // A destructive, non-idempotent tool refuses the repeat; after its window it runs again.
    call(
        &mut wire,
        provider,
        "r4",
        &[("t1", "transfer", json!({"amount": 10}))],
    );
    wire.run_for(Duration::from_secs(1)).await;
    call(
        &mut wire,
        provider,
        "r5",
        &[("t2", "transfer", json!({"amount": 10.0}))],
    );
    wire.run_for(Duration::from_secs(1)).await;
    assert_eq!(runs(&counted).1, 1);
    let refusal = result_of(&wire, "t2");
    assert_eq!(refusal["error"]["code"], "duplicate_call", "{refusal}");
    assert!(
        refusal.to_string().contains("t1"),
        "it names the first call: {refusal}"
    );
    tokio::time::advance(Duration::from_secs(11)).await;
    call(
        &mut wire,
        provider,
        "r6",
        &[("t3", "transfer", json!({"amount": 10}))],
    );
    wire.run_for(Duration::from_secs(1)).await;
    assert_eq!(runs(&counted).1, 2, "past the window it is a new call");

    // Without the hint every call runs; two repeats in one batch both run.
    call(
        &mut wire,
        provider,
        "r7",
        &[
            ("l1", "lookup", json!({"q": "x"})),
            ("l2", "lookup", json!({"q": "x"})),
        ],
    );
    wire.run_for(Duration::from_secs(1)).await;
    assert_eq!(runs(&counted).2, 2);
    assert_eq!(wire.session.counters().snapshot().repeated_calls, 2);
}

#[tokio::test(start_paused = true)]
async fn a_realtime_repeat_gets_the_first_result_or_is_refused_on_openai() {
    realtime_repeats(RealtimeProvider::OpenAi).await;
}

#[tokio::test(start_paused = true)]
async fn a_realtime_repeat_gets_the_first_result_or_is_refused_on_gemini_live() {
    realtime_repeats(RealtimeProvider::GeminiLive).await;
}

#[tokio::test(start_paused = true)]
async fn a_realtime_repeat_gets_the_first_result_or_is_refused_on_gpt_live() {
    realtime_repeats(RealtimeProvider::GptLive).await;
}

#[tokio::test(start_paused = true)]
async fn a_reissue_while_the_first_runs_waits_for_its_result_and_an_interrupted_one_runs_again() {
    let counted = Arc::new(Runs::default());
    let mut wire = session(RealtimeProvider::OpenAi, counted.clone());
    // Two identical calls in one response: the second waits for the first's result.
    call(
        &mut wire,
        RealtimeProvider::OpenAi,
        "r1",
        &[
            ("c1", "create_ticket", json!({"subject": "a"})),
            ("c2", "create_ticket", json!({"subject": "a"})),
        ],
    );
    wire.run_for(Duration::from_secs(1)).await;
    assert_eq!(runs(&counted).0, 1);
    assert_eq!(result_of(&wire, "c2"), result_of(&wire, "c1"));
    assert_eq!(
        wire.model_events_of("response.create").len(),
        1,
        "one continuation"
    );

    // The user interrupts a create call; the model's re-issue afterwards runs (the first
    // never finished, so there is nothing to reuse).
    wire.model(&script::response_created("r2"));
    wire.model_all(&script::function_call(
        "r2",
        0,
        "item_c3",
        "c3",
        "create_ticket",
        &json!({"subject": "b"}).to_string(),
    ));
    wire.model(&script::response_interrupted("r2", vec![]));
    wire.run_for(Duration::from_secs(1)).await;
    call(
        &mut wire,
        RealtimeProvider::OpenAi,
        "r3",
        &[("c4", "create_ticket", json!({"subject": "b"}))],
    );
    wire.run_for(Duration::from_secs(1)).await;
    assert_eq!(result_of(&wire, "c4")["ticket"], "T-3", "the re-issue ran");
}

#[tokio::test(start_paused = true)]
async fn the_chat_runner_answers_repeats_across_turns_and_within_one() {
    let counted = Arc::new(Runs::default());
    let runner = TurnRunner::new(registry(counted.clone()));
    let turn = |calls: &[(&str, &str, Value)]| -> Vec<ToolCall> {
        calls
            .iter()
            .map(|(id, name, args)| ToolCall::new(*id, *name, args.to_string()))
            .collect()
    };
    let first = runner
        .run(&turn(&[(
            "c1",
            "create_ticket",
            json!({"subject": "s", "priority": "p"}),
        )]))
        .await;
    let second = runner
        .run(&turn(&[
            (
                "c2",
                "create_ticket",
                json!({"priority": "p", "subject": "s"}),
            ),
            ("t1", "transfer", json!({"amount": 5})),
            ("t2", "transfer", json!({"amount": 5})),
        ]))
        .await;
    assert_eq!(runs(&counted).0, 1);
    assert_eq!(second.results[0].call.call_id, "c2");
    assert_eq!(second.results[0].output, first.results[0].output);
    assert_eq!(runs(&counted).1, 1, "one transfer ran");
    let refused: Value = serde_json::from_str(&second.results[2].output).unwrap();
    assert_eq!(refused["error"]["code"], "duplicate_call");

    // Two identical reuse calls in one turn: one runs, both get its result.
    let both = runner
        .run(&turn(&[
            ("c3", "create_ticket", json!({"subject": "new"})),
            ("c4", "create_ticket", json!({"subject": "new"})),
        ]))
        .await;
    assert_eq!(runs(&counted).0, 2);
    assert_eq!(both.results[0].output, both.results[1].output);
    assert_eq!(both.results[1].call.call_id, "c4");

    // Another conversation's runner has seen nothing.
    let other = runner
        .clone()
        .with_scope(toolc_runtime::SessionScope::new());
    other
        .run(&turn(&[("c5", "create_ticket", json!({"subject": "new"}))]))
        .await;
    assert_eq!(runs(&counted).0, 3);
}

/// A call the user declined (or that could not be asked for) never ran: asking again is a new
/// call that waits for the user again, not a repeat held back by the first.
#[tokio::test(start_paused = true)]
async fn a_declined_call_asked_again_is_asked_again() {
    let runner = TurnRunner::new(registry(Arc::new(Runs::default())));
    let ask = |id: &str| {
        [ToolCall::new(
            id,
            "issue_refund",
            json!({"order": "A1"}).to_string(),
        )]
    };
    let mut first = runner.run(&ask("r1")).await;
    assert_eq!(first.pending.len(), 1);
    let declined = runner
        .resolve(vec![first.pending.remove(0).deny(Some("not now".into()))])
        .await;
    assert!(
        declined[0].output.contains("approval_denied"),
        "{}",
        declined[0].output
    );
    let again = runner.run(&ask("r2")).await;
    assert_eq!(
        again.pending.len(),
        1,
        "the user is asked again: {:?}",
        again.results
    );
    assert!(again.results.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_repeating_a_call_gets_the_first_result_or_a_refusal() {
    let counted = Arc::new(Runs::default());
    let (mut pipe, _) = Pipe::open(McpServer::new(registry(counted.clone())), json!({})).await;
    let first = pipe
        .call(2, "create_ticket", json!({"subject": "s", "priority": "p"}))
        .await;
    let repeat = pipe
        .call(3, "create_ticket", json!({"priority": "p", "subject": "s"}))
        .await;
    assert_eq!(runs(&counted).0, 1, "the repeat did not run");
    assert_eq!(first["content"], repeat["content"]);
    assert_eq!(repeat["isError"], json!(false));
    pipe.call(4, "transfer", json!({"amount": 1})).await;
    let refused = pipe.call(5, "transfer", json!({"amount": 1})).await;
    assert_eq!(runs(&counted).1, 1);
    assert_eq!(refused["isError"], json!(true));
    assert!(refused.to_string().contains("repeats call"), "{refused}");
}
