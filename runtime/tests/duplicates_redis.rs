//! `RedisDuplicates` against a real `redis-server` the test starts (loopback, a free port, a
//! temporary folder, nothing saved) and kills, through two chat runners with connections of
//! their own (what two servers that build a runner per request have): a repeat in one of a
//! call the other made in the same named conversation gets its result (`reuse`) or is refused
//! (`refuse`); another principal or another conversation shares nothing; the memory ends with
//! the window; a hostile result too long to keep is not stored; a stopped Redis is the
//! configured choice within the timeout (run, or refuse), never a hang. And two MCP servers
//! over streamable HTTP, whose application names the conversation of each request.
//!
//! Needs Debian's `redis-server` (`scripts/setup` installs it); without it these tests fail.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use toolc_runtime::chat::{ChatCompletions, Codec, TurnRunner};
use toolc_runtime::engine::{DuplicateStore, OnUnavailable, RedisDuplicates};
use toolc_runtime::relay::testing::RedisServer;
use toolc_runtime::{definitions_from_str, executor_fn, Principal, Registry, SessionScope};

const MANIFEST: &str = r#"
version: 1
tools:
  - name: create_ticket
    description: Open a support ticket.
    location: server
    annotations: { idempotent: false }
    duplicate_window: 2s
    parameters:
      type: object
      properties: { subject: { type: string } }
      required: [subject]
  - name: cancel_order
    description: Cancel an order.
    location: server
    annotations: { idempotent: false, destructive: true }
    parameters:
      type: object
      properties: { order: { type: string } }
      required: [order]
"#;

/// The registry: `create_ticket` answers with a new ticket number each run (so a reused
/// result is told from a second run), `cancel_order` counts its runs; a subject of `huge`
/// answers 300 KiB.
fn registry(runs: &Arc<AtomicUsize>) -> Arc<Registry> {
    let (tickets, cancels) = (runs.clone(), runs.clone());
    let registry = Registry::builder()
        .definitions(definitions_from_str("desk.tools.yaml", MANIFEST).unwrap())
        .executor(
            "create_ticket",
            executor_fn(move |args: Value| {
                let n = tickets.fetch_add(1, Ordering::SeqCst) + 1;
                async move {
                    if args["subject"] == "huge" {
                        return Ok(json!({ "ticket": n, "log": "x".repeat(300 * 1024) }));
                    }
                    Ok(json!({ "ticket": n }))
                }
            }),
        )
        .executor(
            "cancel_order",
            executor_fn(move |_: Value| {
                cancels.fetch_add(1, Ordering::SeqCst);
                async { Ok(json!({ "cancelled": true })) }
            }),
        )
        .build()
        .unwrap();
    Arc::new(registry)
}

/// A runner of `principal`'s conversation `id` over `store`: a request on one server.
fn runner(
    registry: &Arc<Registry>,
    store: &Arc<dyn DuplicateStore>,
    principal: &str,
    id: &str,
) -> TurnRunner {
    let scope = SessionScope::new()
        .with_principal(Some(Principal::new(principal)))
        .with_conversation_id(id);
    TurnRunner::new(registry.clone())
        .with_duplicate_store(store.clone())
        .with_scope(scope)
}

/// One model turn with one call, run by `runner`: the result the model reads.
async fn turn(runner: &TurnRunner, call_id: &str, tool: &str, arguments: Value) -> Value {
    let response = json!({ "choices": [{ "message": { "role": "assistant", "tool_calls": [{
        "id": call_id,
        "type": "function",
        "function": { "name": tool, "arguments": arguments.to_string() }
    }]}}]});
    let calls = ChatCompletions.decode(&response).unwrap();
    let outcome = runner.run(&calls).await;
    serde_json::from_str(&outcome.results[0].output).unwrap()
}

/// Waits until the store holds the end of the first calls (shared on a task of their own).
async fn settle() {
    tokio::time::sleep(Duration::from_millis(100)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_share_first_calls_per_principal_and_conversation_through_redis() {
    let redis = RedisServer::start("duplicates");
    let runs = Arc::new(AtomicUsize::new(0));
    let registry = registry(&runs);
    // Two stores with connections of their own: what two server processes have.
    let a: Arc<dyn DuplicateStore> = Arc::new(RedisDuplicates::open(&redis.url()).unwrap());
    let b: Arc<dyn DuplicateStore> = Arc::new(RedisDuplicates::open(&redis.url()).unwrap());
    let subject = json!({ "subject": "refund" });

    // `reuse`: the repeat on the other server gets the first ticket, and nothing runs again.
    let first = turn(
        &runner(&registry, &a, "ann", "conv-1"),
        "c1",
        "create_ticket",
        subject.clone(),
    )
    .await;
    assert_eq!(first, json!({ "ticket": 1 }));
    settle().await;
    let repeat = turn(
        &runner(&registry, &b, "ann", "conv-1"),
        "c2",
        "create_ticket",
        json!({ "subject": "refund" }),
    )
    .await;
    assert_eq!(repeat, first, "the first call's result");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // Another principal with the same conversation id, and another conversation of Ann's:
    // their own first calls.
    let bobs = turn(
        &runner(&registry, &b, "bob", "conv-1"),
        "c1",
        "create_ticket",
        subject.clone(),
    )
    .await;
    assert_eq!(bobs, json!({ "ticket": 2 }));
    let other = turn(
        &runner(&registry, &a, "ann", "conv-2"),
        "c1",
        "create_ticket",
        subject.clone(),
    )
    .await;
    assert_eq!(other, json!({ "ticket": 3 }));
    // A conversation without an application id is this runner's alone.
    let unnamed = TurnRunner::new(registry.clone())
        .with_duplicate_store(a.clone())
        .with_scope(SessionScope::new().with_principal(Some(Principal::new("ann"))));
    let alone = turn(&unnamed, "c1", "create_ticket", subject.clone()).await;
    assert_eq!(alone, json!({ "ticket": 4 }));

    // The window (2 s) ends the memory: the same call is a first call again.
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let later = turn(
        &runner(&registry, &b, "ann", "conv-1"),
        "c3",
        "create_ticket",
        subject.clone(),
    )
    .await;
    assert_eq!(later, json!({ "ticket": 5 }));

    // `refuse`: the repeat elsewhere is refused, naming the first call, and never runs.
    let order = json!({ "order": "AB-1" });
    let cancelled = turn(
        &runner(&registry, &a, "ann", "conv-1"),
        "k1",
        "cancel_order",
        order.clone(),
    )
    .await;
    assert_eq!(cancelled, json!({ "cancelled": true }));
    settle().await;
    let refused = turn(
        &runner(&registry, &b, "ann", "conv-1"),
        "k2",
        "cancel_order",
        order.clone(),
    )
    .await;
    assert_eq!(refused["error"]["code"], "duplicate_call", "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("`k1`") && message.contains("already ran"),
        "{message}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 6);

    // A result too long to keep (300 KiB) is not stored: the repeat elsewhere runs.
    let huge = json!({ "subject": "huge" });
    let first = turn(
        &runner(&registry, &a, "ann", "conv-1"),
        "h1",
        "create_ticket",
        huge.clone(),
    )
    .await;
    assert_eq!(first["ticket"], 7);
    settle().await;
    let again = turn(
        &runner(&registry, &b, "ann", "conv-1"),
        "h2",
        "create_ticket",
        huge,
    )
    .await;
    assert_eq!(again["ticket"], 8);
    let stored = redis_memory_keys_of_size(&redis, 200 * 1024).await;
    assert_eq!(
        stored, 0,
        "no stored value is anywhere near the huge result"
    );
}

/// How many keys of the store hold a value longer than `over` bytes (through `redis-cli`).
async fn redis_memory_keys_of_size(redis: &RedisServer, over: usize) -> usize {
    let url = redis.url();
    let port = url
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .unwrap()
        .to_owned();
    let cli = |args: &[&str]| {
        let out = std::process::Command::new("redis-cli")
            .args(["-p", &port])
            .args(args)
            .output()
            .expect("redis-cli runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let keys = cli(&["--scan", "--pattern", "toolc:dup:*"]);
    let keys: Vec<&str> = keys.lines().filter(|k| !k.is_empty()).collect();
    assert!(!keys.is_empty(), "the store holds first calls");
    keys.iter()
        .filter(|key| {
            let len: usize = cli(&["HSTRLEN", key, "output"]).trim().parse().unwrap_or(0);
            len > over
        })
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_redis_is_the_configured_choice_within_the_timeout() {
    let mut redis = RedisServer::start("duplicates-down");
    let runs = Arc::new(AtomicUsize::new(0));
    let registry = registry(&runs);
    let timeout = Duration::from_millis(200);
    let open: Arc<dyn DuplicateStore> = Arc::new(
        RedisDuplicates::open(&redis.url())
            .unwrap()
            .with_timeout(timeout),
    );
    let closed: Arc<dyn DuplicateStore> = Arc::new(
        RedisDuplicates::open(&redis.url())
            .unwrap()
            .with_timeout(timeout)
            .on_unavailable(OnUnavailable::FailClosed),
    );
    let subject = json!({ "subject": "refund" });
    let first = turn(
        &runner(&registry, &open, "ann", "conv-1"),
        "c1",
        "create_ticket",
        subject.clone(),
    )
    .await;
    assert_eq!(first, json!({ "ticket": 1 }));
    redis.stop();
    // Fail open (the default): the call runs, as a first call nobody else knows of.
    let started = Instant::now();
    let ran = turn(
        &runner(&registry, &open, "ann", "conv-1"),
        "c2",
        "create_ticket",
        subject.clone(),
    )
    .await;
    assert_eq!(ran, json!({ "ticket": 2 }));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    // Fail closed: refused with a result the model can act on, nothing runs.
    let started = Instant::now();
    let refused = turn(
        &runner(&registry, &closed, "ann", "conv-1"),
        "c3",
        "create_ticket",
        subject.clone(),
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    let error = &refused["error"];
    assert_eq!(error["code"], "duplicate_check_unavailable", "{refused}");
    assert_eq!(error["retryable"], true);
    assert_eq!(error["retry_after_ms"], 15_000);
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    // A paused (hung) Redis is bounded by the timeout too.
    redis.restart();
    redis.signal("STOP");
    let started = Instant::now();
    let refused = turn(
        &runner(&registry, &closed, "ann", "conv-9"),
        "c4",
        "create_ticket",
        subject,
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        refused["error"]["code"], "duplicate_check_unavailable",
        "{refused}"
    );
    redis.signal("CONT");
}

/// An MCP server over streamable HTTP on loopback, keeping first calls in `store` for the
/// conversation every request names (here the application says: `conv-1`, for `ann`).
async fn mcp_server(registry: &Arc<Registry>, store: Arc<dyn DuplicateStore>) -> String {
    use toolc_runtime::mcp::McpServer;
    let app = axum::Router::new().nest_service(
        "/mcp",
        McpServer::new(registry.clone())
            .with_principal(|_| Some(Principal::new("ann")))
            .with_duplicate_store(store, |_| Some("conv-1".to_owned()))
            .streamable_http(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/mcp")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_mcp_servers_answer_a_repeat_in_a_named_conversation_through_redis() {
    use toolc_runtime::mcp::McpTools;
    let redis = RedisServer::start("duplicates-mcp");
    let runs = Arc::new(AtomicUsize::new(0));
    let registry = registry(&runs);
    let a = mcp_server(
        &registry,
        Arc::new(RedisDuplicates::open(&redis.url()).unwrap()),
    )
    .await;
    let b = mcp_server(
        &registry,
        Arc::new(RedisDuplicates::open(&redis.url()).unwrap()),
    )
    .await;
    // A host's client of each server (each call a request of its own, on its own session).
    let via = |url: String| async move {
        let tools = McpTools::connect_http(&url).await.unwrap();
        Arc::new(
            tools
                .merge_into(Registry::builder(), &[])
                .unwrap()
                .build()
                .unwrap(),
        )
    };
    let (host_a, host_b) = (via(a).await, via(b).await);
    let subject = json!({ "subject": "refund" });
    let first = host_a
        .call_value("create_ticket", subject.clone())
        .await
        .unwrap();
    assert_eq!(first, json!({ "ticket": 1 }));
    settle().await;
    let repeat = host_b
        .call_value("create_ticket", subject.clone())
        .await
        .unwrap();
    assert_eq!(
        repeat, first,
        "the first call's result, from the other server"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let order = json!({ "order": "AB-1" });
    host_a
        .call_value("cancel_order", order.clone())
        .await
        .unwrap();
    settle().await;
    let refused = host_b.call_value("cancel_order", order).await.unwrap_err();
    assert!(refused.to_string().contains("duplicate_call"), "{refused}");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}
