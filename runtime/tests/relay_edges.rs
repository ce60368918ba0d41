//! The relay's edges against a hostile or broken browser: authentication and Origin at the
//! handshake (refused browsers cost no model connection), the principal reaching executors,
//! session limits, oversized messages, and a browser that stops reading.
#![cfg(feature = "testing")]

mod common {
    pub mod relay;
}

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use toolc_runtime::realtime::script;
use toolc_runtime::relay::testing::{FakeModel, Script};
use toolc_runtime::relay::{RelayConfig, RelayStats, StaticTokens};
use toolc_runtime::{definitions_from_str, executor_fn_with_context, CallContext, Registry};

const MANIFEST: &str = r#"
version: 1
tools:
  - name: whoami
    description: Say who the caller is.
    location: server
  - name: highlight
    description: Highlight an element.
    location: client
    timeout: 300ms
    parameters:
      type: object
      properties: { selector: { type: string } }
      required: [selector]
"#;

const LIMIT: Duration = Duration::from_secs(20);
const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-0123456789ab";

fn registry() -> Arc<Registry> {
    let defs = definitions_from_str("edges.tools.yaml", MANIFEST).unwrap();
    Arc::new(
        Registry::builder()
            .definitions(defs)
            .executor(
                "whoami",
                executor_fn_with_context(|ctx: CallContext, _| async move {
                    Ok(json!({
                        "user": ctx.principal().map(|p| p.id().to_owned()),
                        "call": ctx.call_id(),
                    }))
                }),
            )
            .build()
            .unwrap(),
    )
}

async fn relay(
    model: &FakeModel,
    edit: impl FnOnce(&mut RelayConfig),
) -> (String, Arc<RelayStats>) {
    let relay = common::relay::start(registry(), model.url(), |config| {
        config.authorizer = Some(Arc::new(
            StaticTokens::parse(&format!("{ALICE} alice\n{BOB} bob\n")).unwrap(),
        ));
        config.allowed_origins = Some(vec!["https://app.example".into()]);
        edit(config);
    })
    .await;
    (relay.url, relay.stats)
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn connect(url: &str, headers: &[(&str, &str)]) -> Result<Ws, WsError> {
    let mut request = url.into_client_request().unwrap();
    for (name, value) in headers {
        request.headers_mut().insert(
            tokio_tungstenite::tungstenite::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_str(value).unwrap(),
        );
    }
    tokio_tungstenite::connect_async(request)
        .await
        .map(|(ws, _)| ws)
}

fn status(result: Result<Ws, WsError>) -> u16 {
    match result {
        Err(WsError::Http(response)) => response.status().as_u16(),
        Err(e) => panic!("expected an HTTP refusal, got {e}"),
        Ok(_) => panic!("expected an HTTP refusal, got a websocket"),
    }
}

async fn next_event(ws: &mut Ws, limit: Duration) -> Option<Value> {
    let until = Instant::now() + limit;
    loop {
        let left = until.checked_duration_since(Instant::now())?;
        match tokio::time::timeout(left, ws.next()).await.ok()?? {
            Ok(Message::Text(t)) => return serde_json::from_str(t.as_str()).ok(),
            Ok(Message::Close(_)) | Err(_) => return None,
            Ok(_) => continue,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_browsers_get_401_or_403_and_no_model_connection() {
    let model = FakeModel::start(Script::new()).await.unwrap();
    let (url, stats) = relay(&model, |_| {}).await;

    // No token, a wrong token, a token in the wrong scheme.
    assert_eq!(status(connect(&url, &[]).await), 401);
    let wrong = format!("Bearer {ALICE}x");
    assert_eq!(
        status(connect(&url, &[("authorization", &wrong)]).await),
        401
    );
    let basic = format!("Basic {ALICE}");
    assert_eq!(
        status(connect(&url, &[("authorization", &basic)]).await),
        401
    );
    // A good token from a page of another origin.
    let bearer = format!("Bearer {ALICE}");
    let evil = [
        ("authorization", bearer.as_str()),
        ("origin", "https://evil.example"),
    ];
    assert_eq!(status(connect(&url, &evil).await), 403);
    // Not a websocket at all, or the wrong path.
    let plain = reqwest_like_get(&url).await;
    assert!(plain.starts_with("HTTP/1.1 426"), "{plain}");
    assert_eq!(status(connect(&format!("{url}admin"), &[]).await), 404);

    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        model.connection_count(),
        0,
        "a refused browser opened a model session"
    );
    assert_eq!(stats.refused_unauthorized.load(Ordering::Relaxed), 3);
    assert_eq!(stats.refused_origin.load(Ordering::Relaxed), 1);
    assert_eq!(stats.refused_not_websocket.load(Ordering::Relaxed), 2);
    assert_eq!(stats.handshakes_refused.load(Ordering::Relaxed), 6);
    assert_eq!(stats.sessions_active.load(Ordering::Relaxed), 0);
}

/// A GET without the upgrade headers, over a raw socket (what a curl or a crawler sends).
async fn reqwest_like_get(url: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = url.trim_start_matches("ws://").trim_end_matches('/');
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut out = String::new();
    let _ = tokio::time::timeout(LIMIT, tcp.read_to_string(&mut out)).await;
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_principal_of_the_token_reaches_the_executor_through_header_or_subprotocol() {
    for (header, value) in [
        ("authorization", format!("Bearer {ALICE}")),
        (
            "sec-websocket-protocol",
            format!("toolc, toolc.bearer.{ALICE}"),
        ),
    ] {
        let model = FakeModel::start(
            Script::new()
                .wait_for("session.update", 1)
                .send_all(script::response_with_calls(
                    "r1",
                    &[("call_1", "whoami", "{}")],
                ))
                .wait_for("response.create", 1),
        )
        .await
        .unwrap();
        let (url, _) = relay(&model, |_| {}).await;
        let origin = ("origin", "https://app.example");
        let ws = connect(&url, &[(header, value.as_str()), origin])
            .await
            .unwrap();
        let conn = model.connection(0, LIMIT).await.unwrap();
        assert!(conn.wait_for("response.create", 1, LIMIT).await);
        let outputs = conn.events_of("conversation.item.create");
        let output: Value =
            serde_json::from_str(outputs[0]["item"]["output"].as_str().unwrap()).unwrap();
        assert_eq!(
            output,
            json!({"user": "alice", "call": "call_1"}),
            "{header}"
        );
        drop(ws);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_limited_per_principal_and_in_all() {
    let model = FakeModel::start(Script::new().wait_for("never", 1))
        .await
        .unwrap();
    let (url, stats) = relay(&model, |c| {
        c.limits.max_sessions_per_principal = 2;
        c.limits.max_sessions = 3;
    })
    .await;
    let alice = format!("Bearer {ALICE}");
    let bob = format!("Bearer {BOB}");
    let a1 = connect(&url, &[("authorization", &alice)]).await.unwrap();
    let _a2 = connect(&url, &[("authorization", &alice)]).await.unwrap();
    assert_eq!(
        status(connect(&url, &[("authorization", &alice)]).await),
        429
    );
    let _b1 = connect(&url, &[("authorization", &bob)]).await.unwrap();
    assert_eq!(status(connect(&url, &[("authorization", &bob)]).await), 503);
    // A session that ends (its page hangs up) gives its place back. (A page whose connection
    // drops keeps its place while the relay holds its session for it: `relay_resume.rs`.)
    let mut a1 = a1;
    let _ = a1.close(None).await;
    let deadline = Instant::now() + LIMIT;
    loop {
        if let Ok(ws) = connect(&url, &[("authorization", &alice)]).await {
            drop(ws);
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the ended session kept its place"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(stats.refused_capacity.load(Ordering::Relaxed) >= 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_message_closes_that_session_with_1009_and_no_other() {
    let model = FakeModel::start(Script::new().wait_for("never", 1))
        .await
        .unwrap();
    let (url, stats) = relay(&model, |c| c.limits.max_message_size = 64 * 1024).await;
    let auth = format!("Bearer {ALICE}");
    let mut victim = connect(&url, &[("authorization", &auth)]).await.unwrap();
    let mut attacker = connect(&url, &[("authorization", &auth)]).await.unwrap();
    let huge = json!({"type": "session.update", "session": {"instructions": "x".repeat(1 << 20)}});
    let _ = attacker.send(Message::text(huge.to_string())).await;
    let mut code = None;
    while let Ok(Some(frame)) = tokio::time::timeout(LIMIT, attacker.next()).await {
        match frame {
            Ok(Message::Close(Some(f))) => {
                code = Some(u16::from(f.code));
                break;
            }
            Ok(_) => continue,
            Err(_) => break,
        }
    }
    assert_eq!(code, Some(1009));
    assert_eq!(stats.browser_protocol_errors.load(Ordering::Relaxed), 1);
    // The other session still relays.
    victim
        .send(Message::text(
            json!({"type": "input_audio_buffer.commit"}).to_string(),
        ))
        .await
        .unwrap();
    let conn = model.connection(0, LIMIT).await.unwrap();
    let other = model.connection(1, LIMIT).await.unwrap();
    let relayed = conn.wait_for("input_audio_buffer.commit", 1, LIMIT).await
        || other.wait_for("input_audio_buffer.commit", 1, LIMIT).await;
    assert!(relayed);
    assert!(conn.count("session.update") + other.count("session.update") == 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_that_stops_reading_does_not_delay_the_models_timeout_result() {
    // 24 MiB of audio for the browser, more than loopback's socket buffers hold, then a client
    // call with a 300 ms deadline. The browser reads nothing.
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
                &[("call_hl", "highlight", r##"{"selector":"#buy"}"##)],
            ))
            .wait_for("response.create", 1),
    )
    .await
    .unwrap();
    let (url, stats) = relay(&model, |c| c.limits.write_timeout = Duration::from_secs(6)).await;
    let auth = format!("Bearer {ALICE}");
    let browser = connect(&url, &[("authorization", &auth)]).await.unwrap();
    let conn = model.connection(0, LIMIT).await.unwrap();
    let started = Instant::now();
    assert!(conn.wait_for("response.create", 1, LIMIT).await);
    let waited = started.elapsed();
    let outputs = conn.events_of("conversation.item.create");
    let output = outputs[0]["item"]["output"].as_str().unwrap();
    assert!(
        output.contains("timeout") || output.contains("did not answer"),
        "{output}"
    );
    // The script sends everything at once; the result is due 300 ms after the call (plus the
    // time a debug build takes to relay 24 MiB), and must not wait for the stalled browser's
    // 6 s write deadline.
    assert!(
        waited < Duration::from_secs(4),
        "the timeout result took {waited:?}"
    );
    // The stalled browser is then disconnected.
    let deadline = Instant::now() + LIMIT;
    while stats.stalled_browsers.load(Ordering::Relaxed) == 0 {
        assert!(
            Instant::now() < deadline,
            "the stalled browser was never disconnected"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(browser);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_models_close_code_reaches_the_browser() {
    let model = FakeModel::start(
        Script::new()
            .wait_for("session.update", 1)
            .close_with(1008, "policy violation"),
    )
    .await
    .unwrap();
    let (url, _) = relay(&model, |_| {}).await;
    let auth = format!("Bearer {ALICE}");
    let mut browser = connect(&url, &[("authorization", &auth)]).await.unwrap();
    let mut code = None;
    while let Ok(Some(frame)) = tokio::time::timeout(LIMIT, browser.next()).await {
        if let Ok(Message::Close(f)) = frame {
            code = f.map(|f| u16::from(f.code));
            break;
        }
    }
    assert!(next_event(&mut browser, Duration::from_millis(10))
        .await
        .is_none());
    assert_eq!(code, Some(1008));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_the_model_must_not_see_are_answered_with_an_error_and_never_relayed() {
    let model = FakeModel::start(Script::new().wait_for("never", 1))
        .await
        .unwrap();
    let (url, _) = relay(&model, |_| {}).await;
    let auth = format!("Bearer {ALICE}");
    let mut browser = connect(&url, &[("authorization", &auth)]).await.unwrap();
    let conn = model.connection(0, LIMIT).await.unwrap();
    let refused = [
        (
            r#"{"type":"input_audio_buffer.append","type":"response.create","audio":""}"#,
            "duplicate_key",
        ),
        (
            r#"{"type":"session.update","session":{"x":1e999}}"#,
            "unparsable_event",
        ),
        (
            r#"{"type":"response.create","response":{"tools":[{"type":"function","name":"whoami"}]}}"#,
            "tools_not_allowed",
        ),
    ];
    for (text, _) in refused {
        browser.send(Message::text(text)).await.unwrap();
    }
    browser
        .send(Message::binary(br#"{"type":"response.create"}"#.to_vec()))
        .await
        .unwrap();
    browser
        .send(Message::text(r#"{"type":"input_audio_buffer.commit"}"#))
        .await
        .unwrap();
    let codes: Vec<String> = {
        let mut codes = Vec::new();
        while codes.len() < 4 {
            let event = next_event(&mut browser, LIMIT)
                .await
                .expect("an error event");
            if event["type"] == "error" {
                codes.push(event["error"]["code"].as_str().unwrap().to_owned());
            }
        }
        codes
    };
    let mut expected: Vec<&str> = refused.iter().map(|(_, code)| *code).collect();
    expected.push("binary_frame");
    assert_eq!(codes, expected);
    // Only the session.update the relay made and the good event reached the model.
    assert!(conn.wait_for("input_audio_buffer.commit", 1, LIMIT).await);
    let seen: Vec<String> = conn
        .events()
        .iter()
        .map(|e| e["type"].as_str().unwrap_or("?").to_owned())
        .collect();
    assert_eq!(seen, ["session.update", "input_audio_buffer.commit"]);
    assert!(conn.binary().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_from_the_model_waits_for_a_slow_browser_instead_of_dropping_it() {
    // 2,000 audio deltas at once (well within the page's byte bound), read by a browser that
    // takes its time: every frame arrives, in order, and nobody is disconnected.
    let model = FakeModel::start(
        Script::new()
            .wait_for("session.update", 1)
            .send_all((0..2000).map(|i| {
                json!({"type": "response.output_audio.delta", "delta": "QUJD", "event_id": format!("e{i}")})
            }))
            .wait_for("never", 1),
    )
    .await
    .unwrap();
    let (url, stats) = relay(&model, |_| {}).await;
    let auth = format!("Bearer {ALICE}");
    let mut browser = connect(&url, &[("authorization", &auth)]).await.unwrap();
    let first = next_event(&mut browser, LIMIT).await.unwrap();
    assert_eq!(first["type"], "toolc.session");
    for i in 0..2000 {
        if i % 200 == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let event = next_event(&mut browser, LIMIT)
            .await
            .unwrap_or_else(|| panic!("disconnected after {i} frames"));
        assert_eq!(event["event_id"], format!("e{i}"));
    }
    assert_eq!(stats.stalled_browsers.load(Ordering::Relaxed), 0);
}

/// A browser that keeps talking stays past the first idle deadline; one that falls silent is
/// closed with a policy close ("idle") once `idle_timeout` has passed since its last frame.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_browser_is_closed_after_the_idle_timeout_and_a_talking_one_is_not() {
    let model = FakeModel::start(Script::new().wait_for("never", 1))
        .await
        .unwrap();
    let (url, stats) = relay(&model, |config| {
        config.limits.idle_timeout = Duration::from_millis(300);
    })
    .await;
    let mut ws = connect(
        &url,
        &[
            ("authorization", &format!("Bearer {ALICE}")),
            ("origin", "https://app.example"),
        ],
    )
    .await
    .unwrap();
    // Talk every 100 ms for a second: more than three idle timeouts in all.
    let audio = json!({"type": "input_audio_buffer.append", "audio": "AAAA"}).to_string();
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        ws.send(Message::text(audio.clone())).await.unwrap();
    }
    assert_eq!(
        stats.idle_browsers.load(Ordering::Relaxed),
        0,
        "still talking"
    );
    // Then silence: closed about 300 ms after the last frame.
    let silent_since = Instant::now();
    let closed = loop {
        match tokio::time::timeout(LIMIT, ws.next()).await.unwrap() {
            Some(Ok(Message::Close(frame))) => break frame,
            Some(Ok(_)) => continue,
            None | Some(Err(_)) => break None,
        }
    };
    let after = silent_since.elapsed();
    assert!(
        after >= Duration::from_millis(250),
        "closed too early: {after:?}"
    );
    assert!(after < Duration::from_secs(5), "closed too late: {after:?}");
    assert_eq!(
        closed.map(|f| f.reason.to_string()).as_deref(),
        Some("idle")
    );
    assert_eq!(stats.idle_browsers.load(Ordering::Relaxed), 1);
}
