//! `RedisLimiter` against a real `redis-server` the test starts (loopback, a free port, a
//! temporary folder, nothing saved) and kills: two limiters (as two processes would) share one
//! sliding window; a Redis that is paused (slow) or stopped refuses within the timeout (fail
//! closed) or lets calls run (fail open), and a Redis that comes back is found again; the chat
//! runner awaits the check before approval is asked.
//!
//! Needs Debian's `redis-server` (`scripts/setup` installs it); without it these tests fail.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use toolc_runtime::chat::{ChatCompletions, Codec, TurnRunner};
use toolc_runtime::engine::{Acquire, LimitRefusal, OnUnavailable, RateLimiter, RedisLimiter};
use toolc_runtime::relay::testing::RedisServer;
use toolc_runtime::{
    definitions_from_str, executor_fn, Principal, RateLimit, Registry, SessionScope,
};

/// One check through `limiter`, awaited.
async fn check(
    limiter: &dyn RateLimiter,
    key: &str,
    limit: &RateLimit,
) -> Result<(), LimitRefusal> {
    match limiter.acquire(key, limit, tokio::time::Instant::now()) {
        Acquire::Now(answer) => answer,
        Acquire::Later(answer) => answer.await,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_limiters_share_one_sliding_window_and_outages_are_bounded_and_survived() {
    let mut redis = RedisServer::start("limiter");
    let timeout = Duration::from_millis(200);
    // Two limiters with connections of their own: what two relay processes have.
    let a = RedisLimiter::open(&redis.url())
        .unwrap()
        .with_timeout(timeout);
    let b = RedisLimiter::open(&redis.url())
        .unwrap()
        .with_timeout(timeout);
    let limit = RateLimit::parse("2/2s").unwrap();
    let key = "send_sms\0p\0ann";
    assert_eq!(check(&a, key, &limit).await, Ok(()));
    assert_eq!(check(&b, key, &limit).await, Ok(()));
    let Err(LimitRefusal::Over(after)) = check(&a, key, &limit).await else {
        panic!("the third call in the window is refused")
    };
    assert!(
        after > Duration::ZERO && after <= Duration::from_secs(2),
        "{after:?}"
    );
    assert!(matches!(
        check(&b, key, &limit).await,
        Err(LimitRefusal::Over(_))
    ));
    // Another key counts alone.
    assert_eq!(check(&b, "send_sms\0p\0bob", &limit).await, Ok(()));
    // The window slides: once the first calls leave it, calls fit again.
    tokio::time::sleep(after + Duration::from_millis(50)).await;
    assert_eq!(check(&b, key, &limit).await, Ok(()));

    // A hung Redis (paused): refused within the timeout, or run when failing open.
    let open = RedisLimiter::open(&redis.url())
        .unwrap()
        .with_timeout(timeout)
        .on_unavailable(OnUnavailable::FailOpen);
    assert_eq!(check(&open, "k", &limit).await, Ok(()));
    redis.signal("STOP");
    let started = Instant::now();
    let answer = check(&a, "other", &limit).await;
    assert!(
        matches!(&answer, Err(LimitRefusal::Unavailable(why)) if why.contains("timed out") || why.contains("did not answer")),
        "{answer:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(check(&open, "k", &limit).await, Ok(()), "fail open");
    redis.signal("CONT");

    // A stopped Redis: refused at once; started again, it is found again.
    redis.stop();
    let started = Instant::now();
    assert!(matches!(
        check(&a, "other", &limit).await,
        Err(LimitRefusal::Unavailable(_))
    ));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    redis.restart();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match check(&a, "after-restart", &limit).await {
            Ok(()) => break,
            Err(refusal) => assert!(Instant::now() < deadline, "not reconnected: {refusal:?}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

const MANIFEST: &str = r#"
version: 1
tools:
  - name: wire_money
    description: Wire money.
    location: server
    approval: required
    rate_limit: 1/min per principal
    parameters:
      type: object
      properties: { amount: { type: number } }
      required: [amount]
"#;

fn response(id: &str, amount: u32) -> Value {
    json!({ "choices": [{ "message": { "role": "assistant", "tool_calls": [{
        "id": id,
        "type": "function",
        "function": { "name": "wire_money", "arguments": json!({ "amount": amount }).to_string() }
    }]}}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chat_runner_checks_a_shared_limit_before_the_user_is_asked() {
    let redis = RedisServer::start("chat-limiter");
    let ran = Arc::new(AtomicUsize::new(0));
    let counter = ran.clone();
    let registry = Arc::new(
        Registry::builder()
            .definitions(definitions_from_str("wire.tools.yaml", MANIFEST).unwrap())
            .executor(
                "wire_money",
                executor_fn(move |_: Value| {
                    counter.fetch_add(1, Ordering::SeqCst);
                    async { Ok(json!("wired")) }
                }),
            )
            .build()
            .unwrap(),
    );
    let limiter: Arc<dyn RateLimiter> = Arc::new(RedisLimiter::open(&redis.url()).unwrap());
    // Two runners (two servers, say) of one user over one Redis.
    let open = || {
        TurnRunner::new(registry.clone())
            .with_limiter(limiter.clone())
            .with_scope(SessionScope::new().with_principal(Some(Principal::new("ann"))))
    };
    let (first, second) = (open(), open());
    let calls = ChatCompletions.decode(&response("c1", 10)).unwrap();
    let turn = first.run(&calls).await;
    assert_eq!(turn.pending.len(), 1, "under the limit, the user is asked");
    let calls = ChatCompletions.decode(&response("c2", 20)).unwrap();
    let turn = second.run(&calls).await;
    assert!(turn.pending.is_empty(), "over it, nobody is asked");
    let result: Value = serde_json::from_str(&turn.results[0].output).unwrap();
    assert_eq!(result["error"]["code"], "rate_limited", "{result}");
    assert_eq!(ran.load(Ordering::SeqCst), 0);
}
