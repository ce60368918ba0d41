//! The example relay on SIGTERM (a deploy): a server call in flight finishes and its result
//! reaches the model before the process exits, within the drain deadline; a second SIGTERM
//! ends the process at once. The slow server tool is a remote catalog's, served here.
#![cfg(unix)]

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::Child;
use toolc_runtime::realtime::script;
use toolc_runtime::relay::testing::{FakeModel, Script, TestBrowser};

mod common;

const LIMIT: Duration = Duration::from_secs(20);

/// A catalog with one tool, `slow_report`, whose execution takes `{"ms": N}` milliseconds.
async fn slow_catalog() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/api", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve(stream));
        }
    });
    base
}

async fn serve(mut stream: TcpStream) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let path = head.split(' ').nth(1).unwrap_or("").to_owned();
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => body.extend_from_slice(&chunk[..n]),
        }
    }
    let reply = if path.ends_with("/tools") {
        json!({"success": true, "data": {"tools": [{
            "name": "slow_report",
            "description": "A report that takes a while.",
            "parameters": {"type": "object", "properties": {"ms": {"type": "integer"}}, "required": ["ms"]},
            "requires_auth": false
        }], "count": 1, "include_unauthorized": false}})
    } else {
        let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let ms = request["arguments"]["ms"].as_u64().unwrap_or(0);
        tokio::time::sleep(Duration::from_millis(ms)).await;
        json!({"success": true, "data": {"report": "ready", "took_ms": ms}, "error": null})
    };
    let body = reply.to_string();
    let out = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(out.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// The example relay with the catalog, relaying to `model`; its URL.
async fn start(model: &FakeModel, catalog: &str, drain_secs: u64) -> (Child, String) {
    let (upstream, drain) = (model.url(), drain_secs.to_string());
    common::start_relay(&[
        "--listen",
        "127.0.0.1:0",
        "--upstream",
        &upstream,
        "--catalog",
        catalog,
        "--filler-delay-ms",
        "0",
        "--drain-secs",
        &drain,
    ])
    .await
}

fn sigterm(child: &Child) {
    let pid = child.id().expect("the relay runs").to_string();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill runs");
    assert!(status.success());
}

/// A model that calls `slow_report` taking `ms`, then waits for the result.
async fn model_calling(ms: u64) -> FakeModel {
    FakeModel::start(
        Script::new()
            .wait_for("session.update", 1)
            .send_all(script::response_with_calls(
                "r1",
                &[("c1", "slow_report", &format!(r#"{{"ms":{ms}}}"#))],
            ))
            .wait_for("response.create", 1),
    )
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_the_slow_call_answer_the_model_then_exits_within_the_deadline() {
    let catalog = slow_catalog().await;
    let model = model_calling(1500).await;
    let (mut child, url) = start(&model, &catalog, 8).await;
    let mut browser = TestBrowser::connect(&url).await.unwrap();
    let conn = model.connection(0, LIMIT).await.unwrap();
    assert!(conn.wait_for("session.update", 1, LIMIT).await);
    // The call is running when the deploy begins.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let signalled = Instant::now();
    sigterm(&child);
    let (notice, _) = browser
        .next_matching(LIMIT, |e| e["type"] == "toolc.drain")
        .await;
    assert!(notice.is_some(), "the page is told to reconnect elsewhere");
    let status = tokio::time::timeout(LIMIT, child.wait())
        .await
        .expect("the relay exits")
        .unwrap();
    let took = signalled.elapsed();
    assert!(status.success(), "{status:?}");
    assert!(took < Duration::from_secs(8), "exited after {took:?}");
    // The result reached the model before the process exited.
    let outputs = conn.events_of("conversation.item.create");
    assert_eq!(outputs.len(), 1, "{:#?}", conn.events());
    assert_eq!(outputs[0]["item"]["call_id"], "c1");
    let output = outputs[0]["item"]["output"].as_str().unwrap();
    assert!(output.contains("ready"), "{output}");
    // The page was closed with 1012 (the service restarts).
    let close = browser.next_close(LIMIT).await;
    assert_eq!(close.map(|c| c.0), Some(1012));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_sigterm_ends_the_relay_at_once() {
    let catalog = slow_catalog().await;
    let model = model_calling(30_000).await;
    let (mut child, url) = start(&model, &catalog, 20).await;
    let _browser = TestBrowser::connect(&url).await.unwrap();
    let conn = model.connection(0, LIMIT).await.unwrap();
    assert!(conn.wait_for("session.update", 1, LIMIT).await);
    tokio::time::sleep(Duration::from_millis(300)).await;
    sigterm(&child);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        child.try_wait().unwrap().is_none(),
        "the first SIGTERM drains"
    );
    let second = Instant::now();
    sigterm(&child);
    tokio::time::timeout(Duration::from_secs(3), child.wait())
        .await
        .expect("the second SIGTERM ends the relay at once")
        .unwrap();
    assert!(second.elapsed() < Duration::from_secs(3));
}
