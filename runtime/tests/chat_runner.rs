//! The turn runner: concurrency, deadlines, fire-and-forget, duplicates, strict-mode nulls,
//! client paths, and never panicking.

mod common {
    pub mod chat;
}

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::chat::*;
use serde_json::{json, Value};
use toolc_runtime::chat::{ChannelClient, ChatCompletions, Codec, ToolCall, TurnRunner};
use toolc_runtime::dispatch::Status;
use toolc_runtime::{executor_fn, Location, Registry};

fn call(id: &str, name: &str, args: Value) -> ToolCall {
    ToolCall::new(id, name, args.to_string())
}

#[tokio::test(start_paused = true)]
async fn client_deadline_and_fire_and_forget_do_not_hold_up_the_turn() {
    let notified = Arc::new(AtomicUsize::new(0));
    let runner =
        TurnRunner::new(registry(Arc::default())).with_client(scripted_client(notified.clone()));
    let started = tokio::time::Instant::now();
    let outcome = runner
        .run(&[
            call("1", "ask", json!({ "mode": "hang" })),
            call("2", "toast", json!({ "message": "saved" })),
            call("3", "search", json!({ "query": "q" })),
            call("4", "ask", json!({ "mode": "answer" })),
        ])
        .await;
    // The hanging call resolves at its 200 ms deadline, and nothing waits longer.
    assert_eq!(started.elapsed(), Duration::from_millis(200));
    let kinds: Vec<Option<&str>> = outcome.results.iter().map(|r| r.error_kind()).collect();
    assert_eq!(kinds, [Some("timeout"), None, None, None]);
    assert_eq!(outcome.results[1].status, Status::Acknowledged);
    assert!(
        outcome.results[0].output.contains("200 ms"),
        "{}",
        outcome.results[0].output
    );
    tokio::task::yield_now().await;
    assert_eq!(
        notified.load(Ordering::SeqCst),
        1,
        "the toast was delivered"
    );
}

#[tokio::test]
async fn server_calls_of_one_turn_run_concurrently() {
    // Each call waits at a barrier that opens only when all four are inside their executor.
    let barrier = Arc::new(tokio::sync::Barrier::new(4));
    let b = barrier.clone();
    let registry = Arc::new(
        Registry::builder()
            .definition(def(
                "meet",
                Location::Server,
                json!({ "type": "object", "properties": {} }),
            ))
            .executor(
                "meet",
                executor_fn(move |_| {
                    let b = b.clone();
                    async move {
                        b.wait().await;
                        Ok(json!("met"))
                    }
                }),
            )
            .build()
            .unwrap(),
    );
    let calls: Vec<ToolCall> = (0..4)
        .map(|i| call(&format!("c{i}"), "meet", json!({})))
        .collect();
    let outcome = tokio::time::timeout(
        Duration::from_secs(5),
        TurnRunner::new(registry).run(&calls),
    )
    .await
    .expect("sequential execution would deadlock at the barrier");
    assert!(outcome.results.iter().all(|r| r.output == "\"met\""));
}

#[tokio::test]
async fn a_duplicate_call_id_runs_once_and_gets_one_result() {
    let counters = Arc::new(Counters::default());
    let runner = TurnRunner::new(registry(counters.clone()));
    let calls = [
        call("dup", "search", json!({ "query": "first" })),
        call("other", "search", json!({ "query": "second" })),
        call("dup", "search", json!({ "query": "third" })),
    ];
    let outcome = runner.run(&calls).await;
    assert_eq!(counters.search.load(Ordering::SeqCst), 2);
    let ids: Vec<&str> = outcome
        .results
        .iter()
        .map(|r| r.call.call_id.as_str())
        .collect();
    assert_eq!(ids, ["dup", "other"]);
    assert!(outcome.results[0].output.contains("first"));
    assert_eq!(outcome.duplicates, vec![calls[2].clone()]);
    assert_eq!(outcome.encode(&ChatCompletions).unwrap().len(), 2);
}

#[tokio::test]
async fn strict_nulls_become_absent_only_where_the_schema_says_so() {
    let runner = TurnRunner::new(registry(Arc::default()));
    let run = |runner: TurnRunner, args: &'static str| async move {
        runner
            .run(&[ToolCall::new("c", "search", args)])
            .await
            .results[0]
            .output
            .clone()
    };
    // `limit` is optional and not nullable: its null is the strict-mode stand-in for "absent".
    assert_eq!(
        run(runner.clone(), r#"{"query":"q","limit":null}"#).await,
        r#"{"received":{"query":"q"}}"#
    );
    // `query` is required: a null there is the model's mistake and is reported.
    assert_eq!(
        error_kind(&run(runner.clone(), r#"{"query":null}"#).await).as_deref(),
        Some("invalid_arguments")
    );
    // Switched off, the null reaches validation.
    assert_eq!(
        error_kind(
            &run(
                runner.strip_strict_nulls(false),
                r#"{"query":"q","limit":null}"#
            )
            .await
        )
        .as_deref(),
        Some("invalid_arguments")
    );
}

#[tokio::test]
async fn a_panicking_client_path_and_a_panicking_executor_are_results() {
    let runner = TurnRunner::new(registry(Arc::default()))
        .with_client(scripted_client(Arc::new(AtomicUsize::new(0))));
    let outcome = runner
        .run(&[
            call("a", "ask", json!({ "mode": "panic" })),
            call("b", "boom", json!({})),
            call("c", "search", json!({ "query": "still runs" })),
        ])
        .await;
    let kinds: Vec<Option<&str>> = outcome.results.iter().map(|r| r.error_kind()).collect();
    assert_eq!(kinds, [Some("panic"), Some("panic"), None]);
    assert!(
        !outcome.results[0].output.contains("client path bug"),
        "panic text stays internal"
    );
}

#[tokio::test]
async fn without_a_client_client_tools_fail_readably() {
    let outcome = TurnRunner::new(registry(Arc::default()))
        .run(&[
            call("a", "ask", json!({ "mode": "answer" })),
            call("b", "toast", json!({ "message": "m" })),
        ])
        .await;
    for r in &outcome.results {
        assert_eq!(r.error_kind(), Some("tool_failed"));
        assert!(r.output.contains("client_disconnected"), "{}", r.output);
    }
}

#[tokio::test]
async fn channel_client_delivers_validated_calls_and_replies() {
    let (client, mut requests) = ChannelClient::new(8);
    let runner = TurnRunner::new(registry(Arc::default())).with_client(Arc::new(client));
    let browser = tokio::spawn(async move {
        let mut seen = Vec::new();
        while let Some(request) = requests.recv().await {
            seen.push((
                request.call.tool_call.name.clone(),
                request.call.tool_call.arguments.clone(),
            ));
            if let Some(reply) = request.reply {
                let _ = reply.send(json!({ "echo": request.call.tool_call.call_id }).to_string());
            }
        }
        seen
    });
    let outcome = runner
        .run(&[
            // Arguments arrive normalized (whitespace gone) and only after validation.
            ToolCall::new("x1", "ask", r#"{ "mode" : "answer" }"#),
            call("x2", "ask", json!({ "mode": "nonsense" })),
            call("x3", "toast", json!({ "message": "hi" })),
        ])
        .await;
    assert_eq!(outcome.results[0].output, r#"{"echo":"x1"}"#);
    assert_eq!(outcome.results[1].error_kind(), Some("invalid_arguments"));
    assert_eq!(outcome.results[2].status, Status::Acknowledged);
    drop(runner);
    let seen = browser.await.unwrap();
    assert_eq!(
        seen,
        [
            ("ask".to_owned(), r#"{"mode":"answer"}"#.to_owned()),
            ("toast".to_owned(), r#"{"message":"hi"}"#.to_owned()),
        ]
    );
}

#[tokio::test]
async fn a_closed_or_full_channel_fails_at_once() {
    let (client, requests) = ChannelClient::new(1);
    let runner = TurnRunner::new(registry(Arc::default())).with_client(Arc::new(client));
    let started = Instant::now();
    // Capacity 1 and nobody receiving: the first call waits in the channel until its deadline,
    // the second is refused at once.
    let outcome = runner
        .run(&[
            call("a", "ask", json!({ "mode": "answer" })),
            call("b", "ask", json!({ "mode": "answer" })),
        ])
        .await;
    assert_eq!(outcome.results[0].error_kind(), Some("timeout"));
    assert!(
        outcome.results[1].output.contains("client_rejected"),
        "{}",
        outcome.results[1].output
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    drop(requests);
    let outcome = runner
        .run(&[call("c", "ask", json!({ "mode": "answer" }))])
        .await;
    assert!(outcome.results[0].output.contains("client_disconnected"));
}

#[tokio::test]
async fn garbage_responses_are_errors_for_every_codec() {
    use toolc_runtime::chat::{Anthropic, Gemini, Responses};
    let runner = TurnRunner::new(registry(Arc::default()));
    let codecs: [&dyn Codec; 4] = [&ChatCompletions, &Responses, &Anthropic, &Gemini];
    for codec in codecs {
        for body in [json!(null), json!(1), json!("x"), json!([{}])] {
            assert!(
                runner.follow_up(codec, &body).await.is_err(),
                "{:?} accepted {body}",
                codec.provider()
            );
        }
        assert!(codec.encode(&[]).is_empty());
    }
}
