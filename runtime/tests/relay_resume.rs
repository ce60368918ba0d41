//! A page that reconnects to its relay and resumes its conversation, over loopback: the token
//! event, a client call delivered again to the resumed page and answered once, refusals with
//! their close codes (another user's token, a replayed one, an expired window, a relay that
//! does not hold it), a page that hangs up (not held), the cap of held sessions, and a page that
//! stops reading (its queue stays within the byte bound, and its session ends after the grace
//! window). The session rules at every point of a call's life are `realtime_resume.rs`.
#![cfg(feature = "testing")]

mod common {
    pub mod relay;
}

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use toolc_runtime::realtime::{script, RealtimeProvider, SessionConfig};
use toolc_runtime::relay::testing::{FakeModel, Script, TestBrowser};
use toolc_runtime::relay::{RelayConfig, StaticTokens};
use toolc_runtime::{definitions_from_str, Registry};

const MANIFEST: &str = r#"
version: 1
tools:
  - name: highlight
    description: Highlight an element.
    location: client
    timeout: 10s
    parameters:
      type: object
      properties: { selector: { type: string } }
      required: [selector]
"#;

const LIMIT: Duration = Duration::from_secs(10);
const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-0123456789ab";

fn registry() -> Arc<Registry> {
    let defs = definitions_from_str("resume.tools.yaml", MANIFEST).unwrap();
    Arc::new(Registry::builder().definitions(defs).build().unwrap())
}

async fn relay(model: &FakeModel, edit: impl FnOnce(&mut RelayConfig)) -> common::relay::TestRelay {
    common::relay::start(registry(), model.url(), |config| {
        config.authorizer = Some(Arc::new(
            StaticTokens::parse(&format!("{ALICE} alice\n{BOB} bob\n")).unwrap(),
        ));
        config.relay_id = "relay-a".into();
        edit(config);
    })
    .await
}

async fn page(url: &str, user: &str) -> TestBrowser {
    let auth = format!("Bearer {user}");
    TestBrowser::connect_with(url, &[("authorization", &auth)])
        .await
        .expect("the relay lets the page in")
}

/// The `toolc.session` event every page gets first.
async fn session_event(browser: &mut TestBrowser) -> Value {
    let first = browser.next_event(LIMIT).await.expect("a first event");
    assert_eq!(first["type"], "toolc.session", "{first}");
    first
}

fn resume_url(relay: &common::relay::TestRelay, token: &str) -> String {
    format!("{}?resume={token}", relay.url)
}

/// A model that makes one client call and waits for its result and the continuation.
async fn model_calling_the_page() -> FakeModel {
    FakeModel::start(
        Script::new()
            .wait_for("session.update", 1)
            .send_all(script::response_with_calls(
                "r1",
                &[("c1", "highlight", r##"{"selector":"#buy"}"##)],
            ))
            .wait_for("response.create", 1)
            .wait_for("never", 1),
    )
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_that_drops_resumes_and_answers_its_waiting_call_once() {
    let model = model_calling_the_page().await;
    let relay = relay(&model, |_| {}).await;
    let mut first = page(&relay.url, ALICE).await;
    let notice = session_event(&mut first).await;
    assert_eq!(notice["relay"], "relay-a");
    assert_eq!(notice["grace_ms"], 30_000);
    assert_eq!(notice["resumed"], false);
    let token = notice["resume_token"].as_str().unwrap().to_owned();
    assert!(token.starts_with("relay-a.") && token.len() >= "relay-a.".len() + 32);
    let (call, _) = first
        .next_matching(LIMIT, |e| e["type"] == "function_call")
        .await;
    assert_eq!(call.unwrap()["call_id"], "c1");
    // The connection drops (a tunnel, a flaky network): no close frame.
    first.abort();
    let conn = model.connection(0, LIMIT).await.unwrap();
    let deadline = Instant::now() + LIMIT;
    while relay.stats.pages_held.load(Ordering::Relaxed) == 0 {
        assert!(Instant::now() < deadline, "the session was not held");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(relay.service.pages_away(), 1);
    // The model connection stays, and nothing answered the call.
    assert!(!conn.is_closed());
    assert!(conn.events_of("conversation.item.create").is_empty());

    let resumed_at = Instant::now();
    let mut second = page(&resume_url(&relay, &token), ALICE).await;
    let notice = session_event(&mut second).await;
    assert_eq!(notice["resumed"], true);
    let next = notice["resume_token"].as_str().unwrap().to_owned();
    assert_ne!(next, token, "a resumed page gets a new token");
    let again = second.next_event(LIMIT).await.unwrap();
    assert_eq!(again["type"], "function_call", "{again}");
    assert_eq!(again["call_id"], "c1");
    let took = resumed_at.elapsed();
    assert!(took < Duration::from_secs(2), "{took:?}");
    assert_eq!(relay.service.pages_away(), 0);
    // Answered twice (the page's retry): the model gets one result.
    for _ in 0..2 {
        assert!(
            second
                .send(&json!({"type": "function_call.result", "call_id": "c1", "output": "{\"found\":true}"}))
                .await
        );
    }
    assert!(conn.wait_for("response.create", 1, LIMIT).await);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let outputs = conn.events_of("conversation.item.create");
    assert_eq!(outputs.len(), 1, "{outputs:#?}");
    assert_eq!(outputs[0]["item"]["output"], "{\"found\":true}");
    assert_eq!(relay.stats.pages_resumed.load(Ordering::Relaxed), 1);

    // The used token is refused as replayed; another user's token as forbidden.
    let mut replay = page(&resume_url(&relay, &token), ALICE).await;
    let (code, reason) = replay.next_close(LIMIT).await.expect("a close frame");
    assert_eq!(code, 4409, "{reason}");
    assert!(reason.starts_with("resume_replayed"), "{reason}");
    let mut thief = page(&resume_url(&relay, &next), BOB).await;
    let (code, reason) = thief.next_close(LIMIT).await.expect("a close frame");
    assert_eq!(code, 4403, "{reason}");
    assert!(reason.starts_with("resume_forbidden"), "{reason}");
    // The thief locked nobody out: the page is still connected with its session.
    assert!(!conn.is_closed());
    assert_eq!(relay.stats.refused_resume.load(Ordering::Relaxed), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_that_does_not_come_back_in_time_finds_its_window_expired() {
    let model = model_calling_the_page().await;
    let relay = relay(&model, |c| {
        c.limits.resume_grace = Duration::from_millis(300);
    })
    .await;
    let mut first = page(&relay.url, ALICE).await;
    let token = session_event(&mut first).await["resume_token"]
        .as_str()
        .unwrap()
        .to_owned();
    first
        .next_matching(LIMIT, |e| e["type"] == "function_call")
        .await;
    first.abort();
    let conn = model.connection(0, LIMIT).await.unwrap();
    // The window ends: the waiting call fails for the model, and the session closes.
    assert!(conn.wait_closed(LIMIT).await);
    let outputs = conn.events_of("conversation.item.create");
    assert_eq!(outputs.len(), 1, "{outputs:#?}");
    assert!(outputs[0]["item"]["output"]
        .as_str()
        .unwrap()
        .contains("disconnected"));
    assert_eq!(relay.stats.held_expired.load(Ordering::Relaxed), 1);
    let mut late = page(&resume_url(&relay, &token), ALICE).await;
    let (code, reason) = late.next_close(LIMIT).await.expect("a close frame");
    assert_eq!(code, 4408, "{reason}");
    assert!(reason.starts_with("resume_expired"), "{reason}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_of_another_relay_or_none_this_relay_holds_says_start_a_new_conversation() {
    let model = FakeModel::start(Script::new().wait_for("never", 1))
        .await
        .unwrap();
    let relay = relay(&model, |_| {}).await;
    let mut other = page(&resume_url(&relay, "relay-b.00ff"), ALICE).await;
    let (code, reason) = other.next_close(LIMIT).await.expect("a close frame");
    assert_eq!(code, 4404, "{reason}");
    assert!(reason.contains("held by relay relay-b"), "{reason}");
    let mut gone = page(&resume_url(&relay, "relay-a.00ff"), ALICE).await;
    let (code, reason) = gone.next_close(LIMIT).await.expect("a close frame");
    assert_eq!(code, 4404, "{reason}");
    assert!(reason.contains("start a new conversation"), "{reason}");
    // A refused resume costs no model connection.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(model.connection_count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_that_hangs_up_is_not_waited_for_and_the_cap_holds() {
    let model = FakeModel::start(Script::new().wait_for("never", 1))
        .await
        .unwrap();
    let relay = relay(&model, |c| c.limits.max_held_sessions = 1).await;
    // Hung up (close 1000 / no code): the session ends at once.
    let mut first = page(&relay.url, ALICE).await;
    session_event(&mut first).await;
    first.close().await;
    let conn = model.connection(0, LIMIT).await.unwrap();
    assert!(conn.wait_closed(LIMIT).await);
    assert_eq!(relay.stats.pages_held.load(Ordering::Relaxed), 0);
    // Two pages drop; the relay holds one of them (its cap), the other's session ends.
    let mut a = page(&relay.url, ALICE).await;
    session_event(&mut a).await;
    let mut b = page(&relay.url, BOB).await;
    session_event(&mut b).await;
    a.abort();
    let deadline = Instant::now() + LIMIT;
    while relay.service.pages_away() == 0 {
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    b.abort();
    let (ca, cb) = (
        model.connection(1, LIMIT).await.unwrap(),
        model.connection(2, LIMIT).await.unwrap(),
    );
    assert!(cb.wait_closed(LIMIT).await);
    assert!(!ca.is_closed());
    assert_eq!(relay.service.pages_away(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_that_stops_reading_costs_the_byte_bound_and_its_session_ends_after_the_window() {
    // 24 MiB of audio, then a client call; the page reads nothing.
    let audio = "A".repeat(64 * 1024);
    let model = FakeModel::start(
        Script::new()
            .wait_for("session.update", 1)
            .send_all((0..384).map(|i| {
                json!({"type": "response.output_audio.delta", "response_id": "r0", "item_id": "i0",
                       "output_index": 0, "content_index": 0, "delta": audio, "event_id": format!("e{i}")})
            }))
            .send_all(script::response_with_calls(
                "r1",
                &[("c1", "highlight", r##"{"selector":"#buy"}"##)],
            ))
            .wait_for("never", 1),
    )
    .await
    .unwrap();
    let relay = relay(&model, |c| {
        c.limits.page_buffer_bytes = 512 << 10;
        c.limits.write_timeout = Duration::from_millis(500);
        c.limits.resume_grace = Duration::from_millis(500);
    })
    .await;
    let stalled = page(&relay.url, ALICE).await;
    let conn = model.connection(0, LIMIT).await.unwrap();
    // Every frame was read from the model (the audio past the bound dropped, oldest first),
    // the page was disconnected as stalled, held, and its session ended after the window.
    assert!(conn.wait_closed(LIMIT).await);
    let stats = &relay.stats;
    let dropped = stats.page_audio_dropped.load(Ordering::Relaxed);
    assert!(dropped > 300, "only {dropped} audio frames dropped");
    assert_eq!(stats.stalled_browsers.load(Ordering::Relaxed), 1);
    assert_eq!(stats.pages_held.load(Ordering::Relaxed), 1);
    assert_eq!(stats.held_expired.load(Ordering::Relaxed), 1);
    // The call was read and answered (the page was gone), never dropped.
    let outputs = conn.events_of("conversation.item.create");
    assert_eq!(outputs.len(), 1, "{outputs:#?}");
    assert_eq!(outputs[0]["item"]["call_id"], "c1");
    drop(stalled);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gemini_live_page_resumes_and_its_call_is_answered_once() {
    let model = FakeModel::start(
        Script::live()
            .wait_for("setup", 1)
            .send(script::live::setup_complete())
            .send(script::live::tool_call(&[(
                "c1",
                "highlight",
                json!({"selector": "#order"}),
            )]))
            .wait_for("toolResponse", 1)
            .wait_for("never", 1),
    )
    .await
    .unwrap();
    let relay = relay(&model, |config| {
        let registry = registry();
        let mut session = SessionConfig::for_provider(&registry, RealtimeProvider::GeminiLive);
        session.filler_delay = None;
        config.session = Arc::new(session);
    })
    .await;
    let mut first = page(&relay.url, ALICE).await;
    let token = session_event(&mut first).await["resume_token"]
        .as_str()
        .unwrap()
        .to_owned();
    // The page drops before the call reaches it.
    first.abort();
    let deadline = Instant::now() + LIMIT;
    while relay.service.pages_away() == 0 {
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut second = page(&resume_url(&relay, &token), ALICE).await;
    session_event(&mut second).await;
    let (call, _) = second
        .next_matching(LIMIT, |e| e["type"] == "function_call")
        .await;
    assert_eq!(call.expect("the call again")["call_id"], "c1");
    let (more, _) = second
        .next_matching(Duration::from_millis(300), |e| e["type"] == "function_call")
        .await;
    assert!(more.is_none(), "delivered once: {more:?}");
    assert!(
        second
            .send(&json!({"type": "function_call.result", "call_id": "c1", "output": "{}"}))
            .await
    );
    let conn = model.connection(0, LIMIT).await.unwrap();
    assert!(conn.wait_for("toolResponse", 1, LIMIT).await);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(conn.events_of("toolResponse").len(), 1);
}
