//! Rate limits shared through a real Redis by two relay processes (the example binary): a
//! user's `per principal` limit holds across both, a `per conversation` limit counts each
//! session alone, and a Redis stopped mid-test refuses limited calls at once with a result the
//! model can act on (fail closed), or lets them run (a relay started with `--redis-fail-open`).
//!
//! Needs Debian's `redis-server` (`scripts/setup` installs it); without it the test fails.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use toolc_runtime::realtime::script;
use toolc_runtime::relay::testing::{FakeModel, RedisServer, Script};

mod common;

use common::start_relay;

const LIMIT: Duration = Duration::from_secs(20);

/// One session of the user of `token` on the relay at `url` (the model's `index`th
/// connection): the results the model got, by call id, and how long the session took from
/// connecting to the model's continuation.
async fn session(
    model: &FakeModel,
    index: usize,
    url: &str,
    token: &str,
) -> (HashMap<String, Value>, Duration) {
    let started = Instant::now();
    let mut request = url.into_client_request().unwrap();
    request.headers_mut().insert(
        "authorization",
        HeaderValue::from_str(&format!("Bearer {token}")).unwrap(),
    );
    let (ws, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    let upstream = model.connection(index, LIMIT).await.unwrap();
    assert!(
        upstream.wait_for("response.create", 1, LIMIT).await,
        "session {index}: no continuation"
    );
    let took = started.elapsed();
    let results = upstream
        .events_of("conversation.item.create")
        .iter()
        .filter_map(|e| {
            let item = &e["item"];
            let output = serde_json::from_str(item["output"].as_str()?).ok()?;
            Some((item["call_id"].as_str()?.to_owned(), output))
        })
        .collect();
    drop(ws);
    (results, took)
}

fn code(result: &Value) -> &str {
    result["error"]["code"].as_str().unwrap_or("-")
}

/// Of the two searches of one session (one conversation, `1/min per conversation`), one ran
/// and one was refused; which one got there first is the order Redis saw them in.
fn one_search_ran_and_one_was_limited(results: &HashMap<String, Value>) {
    let mut codes = [code(&results["s1"]), code(&results["s2"])];
    codes.sort();
    assert_eq!(codes, ["-", "rate_limited"], "{results:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_relays_share_a_principals_limit_through_redis_and_a_stopped_redis_fails_closed() {
    let mut redis = RedisServer::start("relay-redis");
    let dir = std::env::temp_dir().join(format!("relay-redis-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let tokens = dir.join("tokens");
    std::fs::write(
        &tokens,
        "alice-token-0123456789 alice\nbob-token-0123456789ab bob\n",
    )
    .unwrap();
    // The support manifest with limits: orders 2 a minute per user, searches 1 a minute per
    // conversation.
    let support = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../manifests/support.tools.yaml"
    ))
    .unwrap();
    let limited = support
        .replace(
            "    title: Search help articles\n",
            "    title: Search help articles\n    rate_limit: 1/min per conversation\n",
        )
        .replace(
            "    title: Order status\n",
            "    title: Order status\n    rate_limit: 2/min per principal\n",
        );
    assert_ne!(limited, support);
    let manifest = dir.join("support.tools.yaml");
    std::fs::write(&manifest, limited).unwrap();
    // Every session: one order lookup and two searches.
    let model = FakeModel::start(
        Script::new()
            .wait_for("session.update", 1)
            .send_all(script::response_with_calls(
                "r1",
                &[
                    ("o1", "get_order_status", r#"{"order_number":"AB-123456"}"#),
                    ("s1", "search_help_articles", r#"{"query":"refund"}"#),
                    ("s2", "search_help_articles", r#"{"query":"invoice"}"#),
                ],
            ))
            .wait_for("response.create", 1),
    )
    .await
    .unwrap();
    let redis_url = redis.url();
    let upstream = model.url();
    let common = [
        "--listen",
        "127.0.0.1:0",
        "--upstream",
        &upstream,
        "--filler-delay-ms",
        "0",
        "--auth-tokens",
        tokens.to_str().unwrap(),
        "--manifest",
        manifest.to_str().unwrap(),
        "--redis",
        &redis_url,
        "--redis-timeout-ms",
        "300",
    ];
    let (_a, relay_a) = start_relay(&common).await;
    let (_b, relay_b) = start_relay(&common).await;
    let mut fail_open = common.to_vec();
    fail_open.push("--redis-fail-open");
    let (_c, relay_c) = start_relay(&fail_open).await;
    let (alice, bob) = ("alice-token-0123456789", "bob-token-0123456789ab");

    // Alice on relay A, then on relay B: two order lookups, her limit; each session's second
    // search is over its conversation's limit.
    let (first, _) = session(&model, 0, &relay_a, alice).await;
    assert_eq!(first["o1"]["status"], "delivered", "{first:?}");
    one_search_ran_and_one_was_limited(&first);
    let (second, _) = session(&model, 1, &relay_b, alice).await;
    assert_eq!(second["o1"]["status"], "delivered", "{second:?}");
    // A new conversation on another process is not the first one's, whatever its number there.
    one_search_ran_and_one_was_limited(&second);
    // Alice's third lookup, back on relay A, is over the limit both relays counted.
    let (third, _) = session(&model, 2, &relay_a, alice).await;
    let refused = &third["o1"]["error"];
    assert_eq!(refused["code"], "rate_limited", "{third:?}");
    assert_eq!(refused["retryable"], true);
    let after = refused["retry_after_ms"].as_u64().unwrap();
    assert!(after > 30_000 && after <= 60_000, "{after}");
    one_search_ran_and_one_was_limited(&third);
    // Bob has his own count: his lookup runs (and finds no order of his by that number).
    let (bobs, _) = session(&model, 3, &relay_b, bob).await;
    assert_eq!(code(&bobs["o1"]), "not_found", "{bobs:?}");

    // Redis goes away mid-test: limited calls are refused at once, never hang.
    redis.stop();
    let (down, took) = session(&model, 4, &relay_a, bob).await;
    for id in ["o1", "s1", "s2"] {
        let error = &down[id]["error"];
        assert_eq!(error["code"], "rate_limit_unavailable", "{id}: {down:?}");
        assert_eq!(error["retryable"], true);
        assert_eq!(error["retry_after_ms"], 15_000);
    }
    assert!(
        took < Duration::from_secs(5),
        "a stopped Redis took {took:?}"
    );
    // A relay that fails open runs them, uncounted.
    let (open, took) = session(&model, 5, &relay_c, bob).await;
    assert_eq!(code(&open["o1"]), "not_found", "{open:?}");
    assert!(open["s1"]["articles"].is_array() && open["s2"]["articles"].is_array());
    assert!(
        took < Duration::from_secs(5),
        "a stopped Redis took {took:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Not a test of Redis itself: the client the limiter uses speaks plain RESP, so a Redis that
/// answers nothing at all (a port that accepts and stays silent, like a hung server) is bounded
/// by the limiter's timeout too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_that_never_answers_is_bounded_by_the_timeout() {
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = silent.local_addr().unwrap().port();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((mut socket, _)) = silent.accept().await {
            let mut buf = [0u8; 1024];
            // Read what is sent, answer nothing.
            let _ = socket.read(&mut buf).await;
            let _ = socket.flush().await;
            held.push(socket);
        }
    });
    let model = FakeModel::start(
        Script::new()
            .wait_for("session.update", 1)
            .send_all(script::response_with_calls(
                "r1",
                &[("s1", "search_help_articles", r#"{"query":"refund"}"#)],
            ))
            .wait_for("response.create", 1),
    )
    .await
    .unwrap();
    let dir = std::env::temp_dir().join(format!("relay-redis-silent-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let tokens = dir.join("tokens");
    std::fs::write(&tokens, "alice-token-0123456789 alice\n").unwrap();
    let support = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../manifests/support.tools.yaml"
    ))
    .unwrap();
    let manifest = dir.join("support.tools.yaml");
    std::fs::write(
        &manifest,
        support.replace(
            "    title: Search help articles\n",
            "    title: Search help articles\n    rate_limit: 5/min\n",
        ),
    )
    .unwrap();
    let redis_url = format!("redis://127.0.0.1:{port}/");
    let upstream = model.url();
    let (_relay, url) = start_relay(&[
        "--listen",
        "127.0.0.1:0",
        "--upstream",
        &upstream,
        "--filler-delay-ms",
        "0",
        "--auth-tokens",
        tokens.to_str().unwrap(),
        "--manifest",
        manifest.to_str().unwrap(),
        "--redis",
        &redis_url,
        "--redis-timeout-ms",
        "200",
    ])
    .await;
    let (results, took) = session(&model, 0, &url, "alice-token-0123456789").await;
    assert_eq!(
        code(&results["s1"]),
        "rate_limit_unavailable",
        "{results:?}"
    );
    assert!(
        took < Duration::from_secs(5),
        "a silent Redis took {took:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The status of a handshake the relay refused.
async fn refused_status(url: &str, token: Option<&str>) -> u16 {
    let mut request = url.into_client_request().unwrap();
    if let Some(token) = token {
        request.headers_mut().insert(
            "authorization",
            HeaderValue::from_str(&format!("Bearer {token}")).unwrap(),
        );
    }
    match tokio_tungstenite::connect_async(request).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => response.status().as_u16(),
        other => panic!("the handshake was not refused: {:?}", other.map(|_| ())),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeat_after_the_page_moved_to_another_relay_reuses_or_is_refused_through_redis() {
    let mut redis = RedisServer::start("relay-duplicates");
    let dir = std::env::temp_dir().join(format!("relay-duplicates-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let tokens = dir.join("tokens");
    std::fs::write(
        &tokens,
        "alice-token-0123456789 alice\nbob-token-0123456789ab bob\n",
    )
    .unwrap();
    // Order lookups: one a minute per user, and a repeat within 3 s gets the first result
    // (so a reused lookup is told from one that ran: that one is over the limit). Searches:
    // a repeat within 3 s is refused.
    let support = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../manifests/support.tools.yaml"
    ))
    .unwrap();
    let remembered = support
        .replace(
            "    title: Search help articles\n",
            "    title: Search help articles\n    on_duplicate: refuse\n    duplicate_window: 3s\n",
        )
        .replace(
            "    title: Order status\n",
            "    title: Order status\n    rate_limit: 1/min per principal\n    on_duplicate: reuse\n    duplicate_window: 3s\n",
        );
    assert_ne!(remembered, support);
    let manifest = dir.join("support.tools.yaml");
    std::fs::write(&manifest, remembered).unwrap();
    // Every session: one order lookup and one search, the same each time.
    let model = FakeModel::start(
        Script::new()
            .wait_for("session.update", 1)
            .send_all(script::response_with_calls(
                "r1",
                &[
                    ("o1", "get_order_status", r#"{"order_number":"AB-123456"}"#),
                    ("s1", "search_help_articles", r#"{"query":"refund"}"#),
                ],
            ))
            .wait_for("response.create", 1),
    )
    .await
    .unwrap();
    let redis_url = redis.url();
    let upstream = model.url();
    let common = [
        "--listen",
        "127.0.0.1:0",
        "--upstream",
        &upstream,
        "--filler-delay-ms",
        "0",
        "--auth-tokens",
        tokens.to_str().unwrap(),
        "--manifest",
        manifest.to_str().unwrap(),
        "--redis",
        &redis_url,
        "--redis-timeout-ms",
        "300",
    ];
    let (_a, relay_a) = start_relay(&common).await;
    let (_b, relay_b) = start_relay(&common).await;
    let mut fail_closed = common.to_vec();
    fail_closed.push("--redis-duplicates-fail-closed");
    let (_c, relay_c) = start_relay(&fail_closed).await;
    let (alice, bob) = ("alice-token-0123456789", "bob-token-0123456789ab");
    let named = |relay: &str, id: &str| format!("{relay}?conversation={id}");

    // Alice's page on relay A: both run.
    let (first, _) = session(&model, 0, &named(&relay_a, "conv-7"), alice).await;
    assert_eq!(first["o1"]["status"], "delivered", "{first:?}");
    assert!(first["s1"]["articles"].is_array(), "{first:?}");
    // Her page comes back on relay B, in the same conversation: the lookup gets the first
    // result (had it run, her limit would have refused it), the search is refused.
    let (moved, _) = session(&model, 1, &named(&relay_b, "conv-7"), alice).await;
    assert_eq!(moved["o1"], first["o1"], "{moved:?}");
    assert_eq!(code(&moved["s1"]), "duplicate_call", "{moved:?}");
    // Bob, naming the same conversation id, meets only his own calls.
    let (bobs, _) = session(&model, 2, &named(&relay_b, "conv-7"), bob).await;
    assert_eq!(code(&bobs["o1"]), "not_found", "{bobs:?}");
    assert!(bobs["s1"]["articles"].is_array(), "{bobs:?}");
    // A session of Alice's that names no conversation is its own: the lookup runs, over her
    // limit, and the search runs.
    let (unnamed, _) = session(&model, 3, &relay_a, alice).await;
    assert_eq!(code(&unnamed["o1"]), "rate_limited", "{unnamed:?}");
    assert!(unnamed["s1"]["articles"].is_array(), "{unnamed:?}");
    // After the window, the conversation's calls are first calls again.
    tokio::time::sleep(Duration::from_millis(3200)).await;
    let (later, _) = session(&model, 4, &named(&relay_b, "conv-7"), alice).await;
    assert_eq!(code(&later["o1"]), "rate_limited", "{later:?}");
    assert!(later["s1"]["articles"].is_array(), "{later:?}");

    // A conversation id is taken only from an authenticated page, and only if it is one.
    assert_eq!(
        refused_status(&named(&relay_a, "two%20words"), Some(alice)).await,
        400
    );
    let (_open, unauthenticated) = start_relay(&[
        "--listen",
        "127.0.0.1:0",
        "--upstream",
        &upstream,
        "--manifest",
        manifest.to_str().unwrap(),
    ])
    .await;
    assert_eq!(
        refused_status(&named(&unauthenticated, "conv-7"), None).await,
        400
    );

    // Redis goes away: by default the search runs as a first call (the limited lookup is
    // refused, limits failing closed); a relay set to fail closed for repeats refuses it.
    redis.stop();
    let (open, took) = session(&model, 5, &named(&relay_a, "conv-8"), alice).await;
    assert!(open["s1"]["articles"].is_array(), "{open:?}");
    assert_eq!(code(&open["o1"]), "rate_limit_unavailable", "{open:?}");
    assert!(
        took < Duration::from_secs(5),
        "a stopped Redis took {took:?}"
    );
    let (closed, took) = session(&model, 6, &named(&relay_c, "conv-8"), alice).await;
    let error = &closed["s1"]["error"];
    assert_eq!(error["code"], "duplicate_check_unavailable", "{closed:?}");
    assert_eq!(error["retryable"], true);
    assert!(
        took < Duration::from_secs(5),
        "a stopped Redis took {took:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
