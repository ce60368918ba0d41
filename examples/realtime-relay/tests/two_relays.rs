//! Two relay processes behind a routing proxy on loopback, as behind a sticky load balancer: a
//! new page goes to either relay; a page that resumes goes to the relay its token names (the
//! `RELAYID.` prefix of the `resume` query parameter) and finds its conversation there. A token
//! brought to the other relay, or to a relay that is gone, is refused with a close code that
//! says to start a new conversation.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::Child;
use toolc_runtime::realtime::script;
use toolc_runtime::relay::testing::{FakeModel, Script, TestBrowser};

mod common;

const LIMIT: Duration = Duration::from_secs(20);

async fn start_relay(model: &FakeModel, relay_id: &str) -> (Child, String) {
    let upstream = model.url();
    let (child, url) = common::start_relay(&[
        "--listen",
        "127.0.0.1:0",
        "--upstream",
        &upstream,
        "--filler-delay-ms",
        "0",
        "--relay-id",
        relay_id,
    ])
    .await;
    // The proxy wants `host:port`.
    let address = url.strip_prefix("ws://").expect(&url);
    (child, address.trim_end_matches('/').to_owned())
}

/// The proxy: reads the request head, routes `?resume=ID.…` to the relay named `ID`, anything
/// else round robin, then copies bytes both ways. Returns its `ws://` URL.
async fn routing_proxy(backends: Vec<(String, String)>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/", listener.local_addr().unwrap());
    let backends = Arc::new(backends);
    let next = Arc::new(AtomicUsize::new(0));
    tokio::spawn(async move {
        while let Ok((mut page, _)) = listener.accept().await {
            let (backends, next) = (backends.clone(), next.clone());
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if page.read(&mut byte).await.unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let text = String::from_utf8_lossy(&head).into_owned();
                let path = text.split(' ').nth(1).unwrap_or("/");
                let resume_to = path
                    .split_once("resume=")
                    .and_then(|(_, token)| token.split_once('.'))
                    .map(|(id, _)| id.to_owned());
                let addr = match resume_to {
                    Some(id) => match backends.iter().find(|(name, _)| *name == id) {
                        Some((_, addr)) => addr.clone(),
                        // No such relay (any more): let the first one say so.
                        None => backends[0].1.clone(),
                    },
                    None => {
                        let i = next.fetch_add(1, Ordering::Relaxed) % backends.len();
                        backends[i].1.clone()
                    }
                };
                let Ok(mut relay) = TcpStream::connect(&addr).await else {
                    return;
                };
                if relay.write_all(&head).await.is_err() {
                    return;
                }
                let _ = tokio::io::copy_bidirectional(&mut page, &mut relay).await;
            });
        }
    });
    url
}

async fn token_of(page: &mut TestBrowser) -> String {
    let first = page.next_event(LIMIT).await.expect("the session event");
    assert_eq!(first["type"], "toolc.session", "{first}");
    first["resume_token"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_resumes_on_the_relay_that_holds_its_session() {
    let model = FakeModel::start(
        Script::new()
            .wait_for("session.update", 1)
            .send_all(script::response_with_calls(
                "r1",
                &[("c1", "highlight_element", r##"{"selector":"#refund"}"##)],
            ))
            .wait_for("response.create", 1)
            .wait_for("never", 1),
    )
    .await
    .unwrap();
    let (_a, addr_a) = start_relay(&model, "relay-a").await;
    let (_b, addr_b) = start_relay(&model, "relay-b").await;
    let proxy = routing_proxy(vec![
        ("relay-a".into(), addr_a.clone()),
        ("relay-b".into(), addr_b.clone()),
    ])
    .await;
    // Two pages: round robin puts one on each relay.
    let mut one = TestBrowser::connect(&proxy).await.unwrap();
    let mut two = TestBrowser::connect(&proxy).await.unwrap();
    let (token_one, token_two) = (token_of(&mut one).await, token_of(&mut two).await);
    assert!(token_one.starts_with("relay-a."), "{token_one}");
    assert!(token_two.starts_with("relay-b."), "{token_two}");
    // The page on relay b gets its call, then its connection drops.
    let (call, _) = two
        .next_matching(LIMIT, |e| e["type"] == "function_call")
        .await;
    assert_eq!(call.unwrap()["call_id"], "c1");
    two.abort();
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Its token brought straight to relay a is refused there: a's does not hold it.
    let mut lost = TestBrowser::connect(&format!("ws://{addr_a}/?resume={token_two}"))
        .await
        .unwrap();
    let (code, reason) = lost.next_close(LIMIT).await.unwrap();
    assert_eq!(code, 4404, "{reason}");
    assert!(reason.contains("held by relay relay-b"), "{reason}");
    // Through the proxy it reaches relay b and resumes: the call arrives again, answered once.
    let mut back = TestBrowser::connect(&format!("{proxy}?resume={token_two}"))
        .await
        .unwrap();
    let resumed = back.next_event(LIMIT).await.unwrap();
    assert_eq!(resumed["type"], "toolc.session");
    assert_eq!(resumed["resumed"], true);
    assert_eq!(resumed["relay"], "relay-b");
    let (again, _) = back
        .next_matching(LIMIT, |e| e["type"] == "function_call")
        .await;
    assert_eq!(again.unwrap()["call_id"], "c1");
    assert!(
        back.send(
            &json!({"type": "function_call.result", "call_id": "c1", "output": "{\"found\":true}"})
        )
        .await
    );
    // The model connection of relay b's session got the one result.
    let mut answered = 0;
    for i in 0..model.connection_count() {
        let conn = model.connection(i, LIMIT).await.unwrap();
        if conn
            .wait_for("response.create", 1, Duration::from_secs(2))
            .await
        {
            let outputs = conn.events_of("conversation.item.create");
            assert!(outputs.len() <= 1, "{outputs:#?}");
            if outputs.len() == 1 && outputs[0]["item"]["output"] == "{\"found\":true}" {
                answered += 1;
            }
        }
    }
    assert_eq!(answered, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_whose_relay_is_gone_is_told_to_start_a_new_conversation() {
    let model = FakeModel::start(Script::new().wait_for("never", 1))
        .await
        .unwrap();
    let (_a, addr_a) = start_relay(&model, "relay-a").await;
    let (mut b, addr_b) = start_relay(&model, "relay-b").await;
    let proxy = routing_proxy(vec![
        ("relay-a".into(), addr_a.clone()),
        ("relay-b".into(), addr_b),
    ])
    .await;
    let _first = TestBrowser::connect(&proxy).await.unwrap();
    let mut page = TestBrowser::connect(&proxy).await.unwrap();
    let token = token_of(&mut page).await;
    assert!(token.starts_with("relay-b."), "{token}");
    // Relay b dies (no drain); the balancer takes it out and routes the resume elsewhere.
    b.kill().await.unwrap();
    let _ = page.next_close(LIMIT).await;
    let proxy = routing_proxy(vec![("relay-a".into(), addr_a)]).await;
    let mut again = TestBrowser::connect(&format!("{proxy}?resume={token}"))
        .await
        .unwrap();
    let (code, reason) = again.next_close(LIMIT).await.unwrap();
    assert_eq!(code, 4404, "{reason}");
    assert!(reason.contains("start a new conversation"), "{reason}");
}
