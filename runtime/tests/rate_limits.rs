//! A tool's `rate_limit` through the chat runner: the model reads a `rate_limited` result that
//! says when to try again, nothing runs, and a principal's calls count across conversations.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use toolc_runtime::chat::{ChatCompletions, TurnRunner};
use toolc_runtime::{definitions_from_str, executor_fn, Principal, Registry, SessionScope};

const MANIFEST: &str = r#"
version: 1
tools:
  - name: send_sms
    description: Send a text message.
    location: server
    rate_limit: 2/min per principal
    parameters:
      type: object
      properties: { text: { type: string } }
      required: [text]
"#;

fn response(id: &str, text: &str) -> Value {
    json!({ "choices": [{ "message": { "role": "assistant", "tool_calls": [{
        "id": id,
        "type": "function",
        "function": { "name": "send_sms", "arguments": json!({ "text": text }).to_string() }
    }]}}]})
}

#[tokio::test(start_paused = true)]
async fn over_the_limit_the_model_gets_rate_limited_with_when_to_retry_and_nothing_runs() {
    let sent = Arc::new(AtomicUsize::new(0));
    let counter = sent.clone();
    let registry = Arc::new(
        Registry::builder()
            .definitions(definitions_from_str("sms.tools.yaml", MANIFEST).unwrap())
            .executor(
                "send_sms",
                executor_fn(move |_: Value| {
                    counter.fetch_add(1, Ordering::SeqCst);
                    async { Ok(json!("sent")) }
                }),
            )
            .build()
            .unwrap(),
    );
    // Two conversations of one user (a principal unique to this test: the process's limiter is
    // shared), and one of another user.
    let open = |who: &str| {
        TurnRunner::new(registry.clone()).with_scope(
            SessionScope::new().with_principal(Some(Principal::new(format!("rate-limits-{who}")))),
        )
    };
    let (first, second, other) = (open("ann"), open("ann"), open("bob"));
    for (runner, id) in [(&first, "c1"), (&second, "c2")] {
        let messages = runner
            .follow_up(&ChatCompletions, &response(id, id))
            .await
            .unwrap();
        assert_eq!(messages[0]["content"], "\"sent\"", "{messages:?}");
    }
    tokio::time::advance(std::time::Duration::from_secs(15)).await;
    let messages = first
        .follow_up(&ChatCompletions, &response("c3", "third"))
        .await
        .unwrap();
    assert_eq!(messages[0]["tool_call_id"], "c3");
    let result: Value = serde_json::from_str(messages[0]["content"].as_str().unwrap()).unwrap();
    assert_eq!(result["error"]["code"], "rate_limited", "{result}");
    assert_eq!(result["error"]["retryable"], true);
    assert_eq!(result["error"]["retry_after_ms"], 45_000);
    assert_eq!(
        sent.load(Ordering::SeqCst),
        2,
        "the refused call did not run"
    );
    // Another user is not held back.
    let messages = other
        .follow_up(&ChatCompletions, &response("c4", "hi"))
        .await
        .unwrap();
    assert_eq!(messages[0]["content"], "\"sent\"");
}
