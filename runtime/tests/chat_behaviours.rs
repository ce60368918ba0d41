//! The turn runner with the manifest's call behaviours: calls that need approval are pending
//! until the application resolves them; background calls answer "started" and their results
//! are handed over when the work ends.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use toolc_runtime::chat::{ChatCompletions, ToolCall, TurnRunner};
use toolc_runtime::{definitions_from_str, executor_fn, Registry};

const MANIFEST: &str = r#"
version: 1
tools:
  - name: refund
    description: Refund an order.
    location: server
    approval: required
    parameters:
      type: object
      properties: { order: { type: string } }
      required: [order]
      additionalProperties: false
  - name: lookup
    description: Look an order up.
    location: server
  - name: report
    description: Build a report.
    location: server
    mode: async
"#;

fn runner(refunds: Arc<AtomicUsize>) -> TurnRunner {
    let defs = definitions_from_str("chat.tools.yaml", MANIFEST).unwrap();
    let registry = Registry::builder()
        .definitions(defs)
        .executor(
            "refund",
            executor_fn(move |args: Value| {
                let refunds = refunds.clone();
                async move {
                    refunds.fetch_add(1, Ordering::SeqCst);
                    Ok(json!({ "refunded": args["order"] }))
                }
            }),
        )
        .executor(
            "lookup",
            executor_fn(|_| async { Ok(json!({ "status": "shipped" })) }),
        )
        .executor(
            "report",
            executor_fn(|_| async {
                tokio::time::sleep(Duration::from_secs(10)).await;
                Ok(json!({ "pages": 3 }))
            }),
        )
        .build()
        .unwrap();
    TurnRunner::new(Arc::new(registry))
}

fn call(id: &str, name: &str, args: Value) -> ToolCall {
    ToolCall::new(id, name, args.to_string())
}

#[tokio::test]
async fn a_call_that_needs_approval_waits_and_runs_once_approved() {
    let refunds = Arc::new(AtomicUsize::new(0));
    let runner = runner(refunds.clone());
    let outcome = runner
        .run(&[
            call("1", "lookup", json!({})),
            call("2", "refund", json!({ "order": "A7" })),
        ])
        .await;
    assert_eq!(outcome.results.len(), 1, "the lookup ran");
    assert_eq!(outcome.pending.len(), 1);
    let pending = outcome.pending.into_iter().next().unwrap();
    assert_eq!(pending.call().call_id, "2");
    assert_eq!(pending.arguments(), &json!({ "order": "A7" }));
    assert_eq!(
        refunds.load(Ordering::SeqCst),
        0,
        "nothing ran before the answer"
    );
    let results = runner.resolve(vec![pending.approve()]).await;
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].output_value(), json!({ "refunded": "A7" }));
    assert_eq!(refunds.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_denial_is_the_calls_result_and_nothing_runs() {
    let refunds = Arc::new(AtomicUsize::new(0));
    let runner = runner(refunds.clone());
    let mut outcome = runner
        .run(&[call("2", "refund", json!({ "order": "A7" }))])
        .await;
    let pending = outcome.pending.pop().unwrap();
    let results = runner
        .resolve(vec![pending.deny(Some("Too late.".into()))])
        .await;
    let error = &results[0].output_value()["error"];
    assert_eq!(error["code"], "approval_denied");
    assert!(error["message"].as_str().unwrap().contains("Too late."));
    assert_eq!(refunds.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn invalid_arguments_are_refused_before_anyone_is_asked() {
    let runner = runner(Arc::default());
    let outcome = runner
        .run(&[call("2", "refund", json!({ "order": 7 }))])
        .await;
    assert!(outcome.pending.is_empty());
    assert_eq!(outcome.results[0].error_kind(), Some("invalid_arguments"));
}

#[tokio::test]
async fn follow_up_cannot_ask_so_it_refuses_in_call_order() {
    let refunds = Arc::new(AtomicUsize::new(0));
    let runner = runner(refunds.clone());
    let response = json!({"choices": [{"message": {"role": "assistant", "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "refund", "arguments": "{\"order\":\"A7\"}"}},
        {"id": "b", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    ]}}]});
    let messages = runner.follow_up(&ChatCompletions, &response).await.unwrap();
    let ids: Vec<&str> = messages
        .iter()
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["a", "b"]);
    let refused: Value = serde_json::from_str(messages[0]["content"].as_str().unwrap()).unwrap();
    assert_eq!(refused["error"]["code"], "approval_unavailable");
    assert_eq!(refunds.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn a_background_call_answers_started_and_hands_over_its_result_later() {
    let runner = runner(Arc::default());
    let outcome = runner.run(&[call("r", "report", json!({}))]).await;
    assert_eq!(outcome.results[0].output_value()["status"], "started");
    assert!(runner.background_results().is_empty());
    let done = runner.next_background_results().await;
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].call.call_id, "r");
    assert_eq!(done[0].result.output_value(), json!({ "pages": 3 }));
    assert!(done[0]
        .message_text()
        .contains("`report` (call_id r) finished"));
    assert!(runner.background_results().is_empty(), "taken once");
}

/// The approval round trip on every chat provider: while a call has no result, `encode`
/// refuses the outcome (the next request would carry a call without its result, which every
/// provider refuses with a 400); once the resolved results are `complete`d in, every call has
/// its result, in the order the model made the calls.
#[tokio::test]
async fn an_approved_call_goes_back_with_the_others_in_call_order_on_every_provider() {
    use toolc_runtime::chat::{Anthropic, Codec, Gemini, Responses};
    let codecs: [(&str, &dyn Codec); 4] = [
        ("chat", &ChatCompletions),
        ("responses", &Responses),
        ("anthropic", &Anthropic),
        ("gemini", &Gemini),
    ];
    for (name, codec) in codecs {
        let refunds = Arc::new(AtomicUsize::new(0));
        let runner = runner(refunds.clone());
        let mut outcome = runner
            .run(&[
                call("call_a", "refund", json!({ "order": "A7" })),
                call("call_b", "lookup", json!({})),
                call("call_c", "refund", json!({ "order": "B9" })),
            ])
            .await;
        let refused = outcome.encode(codec).unwrap_err();
        assert_eq!(refused.pending, ["call_a", "call_c"], "{name}");
        assert!(
            refused.to_string().contains("TurnOutcome::complete"),
            "{refused}"
        );
        // Taking the pending calls out to ask the user does not make the turn encodable.
        let mut pending = std::mem::take(&mut outcome.pending).into_iter();
        assert!(outcome.encode(codec).is_err(), "{name}");
        let (a, c) = (pending.next().unwrap(), pending.next().unwrap());
        let resolved = runner
            .resolve(vec![c.deny(Some("not this one".into())), a.approve()])
            .await;
        outcome.complete(resolved);
        assert_eq!(refunds.load(Ordering::SeqCst), 1, "{name}: one refund ran");
        let ids: Vec<&str> = outcome
            .results
            .iter()
            .map(|r| r.call.call_id.as_str())
            .collect();
        assert_eq!(ids, ["call_a", "call_b", "call_c"], "{name}");
        let follow_up = outcome.encode(codec).expect("every call has its result");
        let text = serde_json::to_string(&follow_up).unwrap();
        let at = |id: &str| {
            text.find(id)
                .unwrap_or_else(|| panic!("{name}: {id} in {text}"))
        };
        assert!(
            at("call_a") < at("call_b") && at("call_b") < at("call_c"),
            "{name}: {text}"
        );
        assert!(
            text.contains("not this one"),
            "{name}: the denial reaches the model"
        );
    }
}
