//! `--markers TAG` and `--catalog URL`: the example binary between a scripted fake model that
//! writes call markers, a test browser, and a remote tool catalog served on loopback by the test.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::process::Command;
use toolc_runtime::markers::MarkerTag;
use toolc_runtime::realtime::script::text_response;
use toolc_runtime::relay::testing::{FakeModel, Script, TestBrowser};

const LIMIT: Duration = Duration::from_secs(20);

/// A request the catalog got: method, path, `Authorization`, body.
type Seen = (String, String, Option<String>, Value);

/// A catalog service on loopback that lists `tools` and answers every execution with the
/// arguments it got. Returns its base URL and what it saw.
async fn catalog(tools: Value) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let log = log.clone();
            let tools = tools.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                let (head, mut body) = loop {
                    if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&buf[..i]).into_owned();
                        break (head, buf[i + 4..].to_vec());
                    }
                    match stream.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                };
                let header = |name: &str| {
                    head.lines()
                        .filter_map(|l| l.split_once(':'))
                        .find(|(n, _)| n.eq_ignore_ascii_case(name))
                        .map(|(_, v)| v.trim().to_owned())
                };
                let length: usize = header("content-length")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                while body.len() < length {
                    match stream.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => body.extend_from_slice(&chunk[..n]),
                    }
                }
                let mut start = head.split(' ');
                let method = start.next().unwrap_or("").to_owned();
                let path = start.next().unwrap_or("").to_owned();
                let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                log.lock().unwrap().push((
                    method,
                    path.clone(),
                    header("authorization"),
                    request.clone(),
                ));
                let answer = if path == "/tools" {
                    json!({"success": true, "data": {"tools": tools, "count": 2, "include_unauthorized": true}})
                } else {
                    json!({"success": true, "data": {"catalog_ran": request["name"], "with": request["arguments"]}})
                };
                let text = answer.to_string();
                let out = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                    text.len()
                );
                let _ = stream.write_all(out.as_bytes()).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    (base, seen)
}

fn catalog_tools() -> Value {
    json!([
        {"name": "get_weather", "description": "The weather in a city.",
         "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
         "requires_auth": false},
        {"name": "get_loyalty_points", "description": "The signed-in customer's loyalty points.",
         "parameters": {"type": "object", "properties": {}}, "requires_auth": true},
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn markers_and_a_remote_catalog_through_the_example_relay() {
    let (catalog_url, catalog_seen) = catalog(catalog_tools()).await;
    let tag = MarkerTag::new("APIPILOT_CALL").unwrap();
    let first = format!(
        "Checking everything. {}{}{} One moment.",
        tag.render_call("get_order_status", r#"{"order_number":"AB-123456"}"#),
        tag.render_call("get_weather", r#"{"city":"Oslo"}"#),
        tag.render_call("get_loyalty_points", "{}"),
    );
    let pieces: Vec<&str> = first
        .as_bytes()
        .chunks(5)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    let model = FakeModel::start(
        Script::new()
            .wait_for("session.update", 1)
            .send_all(text_response("r1", "msg1", &pieces))
            .wait_for("response.create", 1)
            .send_all(text_response(
                "r2",
                "msg2",
                &["Shipped; ", "sunny in Oslo."],
            ))
            .send(json!({"type": "test.end"})),
    )
    .await
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_realtime-relay"))
        .args(["--listen", "127.0.0.1:0", "--upstream", &model.url()])
        .args(["--filler-delay-ms", "0", "--markers", "APIPILOT_CALL"])
        .args(["--catalog", &catalog_url])
        .args(["--catalog-auth-env", "RELAY_MARKERS_TEST_AUTH"])
        .env("RELAY_MARKERS_TEST_AUTH", "Bearer customer-42")
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the example binary starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first_line = tokio::time::timeout(LIMIT, lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let url = first_line
        .strip_prefix("listening on ")
        .expect(&first_line)
        .to_owned();
    let mut rest = Vec::new();
    while let Ok(Ok(Some(line))) = tokio::time::timeout(LIMIT, lines.next_line()).await {
        let done = line.starts_with("markers:");
        rest.push(line);
        if done {
            break;
        }
    }
    let tools_line = rest.iter().find(|l| l.starts_with("tools:")).unwrap();
    assert!(
        tools_line.ends_with("show_toast, get_weather, get_loyalty_points"),
        "{tools_line}"
    );
    assert_eq!(rest.last().unwrap(), "markers: APIPILOT_CALL");

    let mut browser = TestBrowser::connect(&url).await.unwrap();
    let (end, seen) = browser
        .next_matching(LIMIT, |e| e["type"] == "test.end")
        .await;
    assert!(end.is_some(), "the second response reaches the browser");
    let deltas = |rid: &str| -> String {
        seen.iter()
            .filter(|e| e["type"] == "response.output_text.delta" && e["response_id"] == rid)
            .map(|e| e["delta"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(deltas("r1"), "Checking everything.  One moment.");
    assert_eq!(deltas("r2"), "Shipped; sunny in Oslo.");
    let everything = serde_json::to_string(&seen).unwrap();
    assert!(!everything.contains("<<<"), "{everything}");
    assert!(!everything.contains("catalog_ran"), "{everything}");

    let upstream = model.connection(0, LIMIT).await.unwrap();
    let instructions = upstream.events_of("session.update")[0]["session"]["instructions"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(instructions.contains("## get_weather\n"), "{instructions}");
    let loyalty = instructions
        .split("## get_loyalty_points\n")
        .nth(1)
        .expect("the catalog tool is declared");
    assert!(loyalty.contains("Requires authorization: yes"), "{loyalty}");
    let texts: Vec<String> = upstream
        .events_of("conversation.item.create")
        .iter()
        .map(|e| e["item"]["content"][0]["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(texts.len(), 3, "{texts:?}");
    assert!(texts.iter().any(|t| t.contains(r#""status":"delivered""#)));
    assert!(texts
        .iter()
        .any(|t| t.contains(r#""catalog_ran":"get_weather""#)));
    assert!(texts
        .iter()
        .any(|t| t.contains(r#""catalog_ran":"get_loyalty_points""#)));
    assert_eq!(upstream.count("response.create"), 1);

    let catalog_seen = catalog_seen.lock().unwrap().clone();
    let executions: Vec<&Seen> = catalog_seen.iter().filter(|s| s.0 == "POST").collect();
    assert_eq!(executions.len(), 2);
    assert!(executions
        .iter()
        .all(|s| s.1 == "/execute" && s.2.as_deref() == Some("Bearer customer-42")));
    let _ = child.kill().await;
}

#[tokio::test]
async fn a_catalog_tool_named_like_a_local_tool_is_refused() {
    let (catalog_url, _) = catalog(json!([
        {"name": "search_help_articles", "description": "Also a search.", "parameters": {"type": "object"}}
    ]))
    .await;
    let out = Command::new(env!("CARGO_BIN_EXE_realtime-relay"))
        .args(["--listen", "127.0.0.1:0", "--catalog", &catalog_url])
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("already defined locally: search_help_articles"),
        "{err}"
    );
}

#[tokio::test]
async fn bad_marker_tags_and_catalog_urls_are_errors() {
    for (args, expected) in [
        (vec!["--markers", "NO SPACES"], "invalid marker tag"),
        (vec!["--catalog", "https://catalog.example"], "https"),
        (
            vec!["--catalog", "http://127.0.0.1:1"],
            "cannot read the tool catalog",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_realtime-relay"))
            .args(["--listen", "127.0.0.1:0"])
            .args(&args)
            .output()
            .await
            .unwrap();
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(expected), "{args:?}: {err}");
    }
}
