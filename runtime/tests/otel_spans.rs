//! The spans a tracing backend sees, exported through `tracing-opentelemetry` to an in-memory
//! OpenTelemetry exporter: a realtime call through the relay (session → response → call, the
//! page handed the trace context), a chat turn (turn → call) and an MCP call, named and
//! attributed as the GenAI semantic conventions say; arguments and results only after the
//! application opted in.
//!
//! One test: the subscriber and the payload opt-in are process-wide.
#![cfg(all(feature = "testing", feature = "mcp", feature = "otel"))]

mod common {
    pub mod mcp;
    pub mod relay;
}

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use common::mcp::Pipe;
use opentelemetry::trace::{SpanId, SpanKind, Status, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::{json, Value};
use toolc_runtime::chat::{ToolCall, TurnRunner};
use toolc_runtime::mcp::McpServer;
use toolc_runtime::realtime::script;
use toolc_runtime::relay::testing::{FakeModel, Script, TestBrowser};
use toolc_runtime::{definitions_from_str, executor_fn, telemetry, Registry, ToolError};
use tracing_subscriber::prelude::*;

const LIMIT: Duration = Duration::from_secs(20);
const SECRET: &str = "hunter2-in-the-arguments";

fn registry() -> Arc<Registry> {
    let defs = definitions_from_str(
        "t.tools.yaml",
        r#"
version: 1
tools:
  - name: lookup
    description: A server tool.
    location: server
    parameters: { type: object, properties: { q: { type: string } } }
  - name: broken
    description: A server tool that fails.
    location: server
  - name: highlight
    description: A client tool.
    location: client
    timeout: 5s
    parameters: { type: object, properties: { selector: { type: string } } }
"#,
    )
    .unwrap();
    Arc::new(
        Registry::builder()
            .definitions(defs)
            .executor(
                "lookup",
                executor_fn(|args| async move { Ok(json!({"found": args["q"]})) }),
            )
            .executor(
                "broken",
                executor_fn(|_args| async move {
                    Err::<Value, _>(ToolError::new("the index is offline"))
                }),
            )
            .build()
            .unwrap(),
    )
}

fn attributes(span: &SpanData) -> BTreeMap<String, String> {
    span.attributes
        .iter()
        .map(|kv| (kv.key.as_str().to_owned(), kv.value.to_string()))
        .collect()
}

fn parent_of<'a>(spans: &'a [SpanData], span: &SpanData) -> Option<&'a SpanData> {
    (span.parent_span_id != SpanId::INVALID).then(|| {
        spans
            .iter()
            .find(|s| s.span_context.span_id() == span.parent_span_id)
            .unwrap_or_else(|| panic!("the parent of {} was not exported", span.name))
    })
}

/// Runs one realtime call of each location through the relay; returns the page's `function_call`.
async fn realtime_calls(registry: Arc<Registry>) -> Value {
    let model = FakeModel::start(
        Script::new()
            .wait_for("session.update", 1)
            .send_all(script::response_with_calls(
                "resp_1",
                &[
                    ("call_lookup", "lookup", &json!({"q": SECRET}).to_string()),
                    ("call_hl", "highlight", r##"{"selector":"#buy"}"##),
                ],
            ))
            .wait_for("response.create", 1),
    )
    .await
    .unwrap();
    let relay = common::relay::start(registry, model.url(), |_| {}).await;
    let mut browser = TestBrowser::connect(&relay.url).await.unwrap();
    let (call, _) = browser
        .next_matching(LIMIT, |e| e["type"] == "function_call")
        .await;
    let call = call.expect("the client call reaches the page");
    let reply =
        json!({"type": "function_call.result", "call_id": "call_hl", "output": "{\"ok\":true}"});
    assert!(browser.send(&reply).await);
    let conn = model.connection(0, LIMIT).await.unwrap();
    assert!(conn.wait_for("response.create", 1, LIMIT).await);
    // The page hangs up (a close handshake): the relay does not hold the session for a
    // resume, it ends it.
    browser.close().await;
    // The relay notices the page left and ends the session (and its span).
    assert!(conn.wait_closed(LIMIT).await);
    tokio::time::sleep(Duration::from_millis(200)).await;
    call
}

async fn mcp_call(registry: Arc<Registry>) {
    let (mut pipe, _) = Pipe::open(McpServer::new(registry), json!({})).await;
    let result = pipe.call(2, "lookup", json!({"q": SECRET})).await;
    assert_eq!(result["isError"], json!(false), "{result}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_are_genai_execute_tool_spans_in_their_session_response_or_turn() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    tracing_subscriber::registry()
        .with(tracing_subscriber::filter::LevelFilter::INFO)
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("otel-test")))
        .init();
    telemetry::capture_payloads(false);
    let registry = registry();

    // Realtime: session → response → one span per call.
    let page_call = realtime_calls(registry.clone()).await;
    // Chat: turn → one span per call, a failing one included.
    let runner = TurnRunner::new(registry.clone());
    let calls = [
        ToolCall::new("chat_1", "lookup", json!({"q": SECRET}).to_string()),
        ToolCall::new("chat_2", "broken", "{}"),
    ];
    assert_eq!(runner.run(&calls).await.results.len(), 2);
    // MCP: one span per tools/call.
    mcp_call(registry.clone()).await;

    provider.force_flush().unwrap();
    let spans = exporter.get_finished_spans().unwrap();
    let tools: Vec<&SpanData> = spans
        .iter()
        .filter(|s| s.name.starts_with("execute_tool "))
        .collect();
    assert_eq!(
        tools.len(),
        5,
        "{:#?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    for span in &tools {
        let a = attributes(span);
        assert_eq!(span.span_kind, SpanKind::Internal);
        assert_eq!(a["gen_ai.operation.name"], "execute_tool");
        assert_eq!(span.name, format!("execute_tool {}", a["gen_ai.tool.name"]));
        assert_eq!(a["gen_ai.tool.type"], "function");
        assert!(a.contains_key("gen_ai.tool.call.id"), "{a:?}");
        // Personal data stays out unless the application opted in.
        assert!(!a.contains_key("gen_ai.tool.call.arguments"), "{a:?}");
        assert!(!a.contains_key("gen_ai.tool.call.result"), "{a:?}");
        assert!(!format!("{a:?}").contains(SECRET), "{a:?}");
    }
    let by_id = |id: &str| {
        *tools
            .iter()
            .find(|s| attributes(s)["gen_ai.tool.call.id"] == id)
            .unwrap_or_else(|| panic!("no span for call {id}"))
    };

    // The realtime tree: both calls in the response's span, in the session's.
    let lookup = by_id("call_lookup");
    let highlight = by_id("call_hl");
    let response = parent_of(&spans, lookup).expect("a realtime call has a parent");
    assert_eq!(response.name, "realtime response");
    assert_eq!(attributes(response)["gen_ai.response.id"], "resp_1");
    assert_eq!(
        parent_of(&spans, highlight).map(|s| s.span_context.span_id()),
        Some(response.span_context.span_id())
    );
    let session = parent_of(&spans, response).expect("the response is in the session");
    assert_eq!(session.name, "realtime session");
    let s = attributes(session);
    assert_eq!(s["gen_ai.provider.name"], "openai");
    assert!(s.contains_key("gen_ai.conversation.id"));
    assert_eq!(attributes(highlight)["location"], "client");
    assert_eq!(attributes(highlight)["outcome"], "ok");
    assert_eq!(attributes(lookup)["location"], "server");
    assert_eq!(attributes(lookup)["outcome"], "ok");
    assert_eq!(lookup.name, "execute_tool lookup");
    // The page was handed the trace: its own span can join it as a child of the response.
    let traceparent = page_call["traceparent"].as_str().expect("a traceparent");
    assert_eq!(
        traceparent,
        format!(
            "00-{}-{}-01",
            response.span_context.trace_id(),
            response.span_context.span_id()
        )
    );

    // The chat tree, and a failure as the conventions record it.
    let chat_1 = by_id("chat_1");
    let turn = parent_of(&spans, chat_1).expect("a chat call has a parent");
    assert_eq!(turn.name, "tool turn");
    let broken = by_id("chat_2");
    assert_eq!(
        parent_of(&spans, broken).map(|s| s.span_context.span_id()),
        Some(turn.span_context.span_id())
    );
    assert_eq!(attributes(broken)["error.type"], "tool_failed");
    assert!(
        matches!(broken.status, Status::Error { .. }),
        "{:?}",
        broken.status
    );
    assert_eq!(chat_1.status, Status::Unset);

    // MCP: the call's own span.
    let mcp = tools
        .iter()
        .find(|s| attributes(s)["location"] == "mcp")
        .expect("an MCP call span");
    assert_eq!(attributes(mcp)["gen_ai.tool.name"], "lookup");

    // Opted in: arguments and result are on the span.
    exporter.reset();
    telemetry::capture_payloads(true);
    let call = ToolCall::new("chat_3", "lookup", json!({"q": SECRET}).to_string());
    runner.run(&[call]).await;
    telemetry::capture_payloads(false);
    provider.force_flush().unwrap();
    let spans = exporter.get_finished_spans().unwrap();
    let span = spans
        .iter()
        .find(|s| s.name == "execute_tool lookup")
        .expect("the opted-in call's span");
    let a = attributes(span);
    assert_eq!(
        serde_json::from_str::<Value>(&a["gen_ai.tool.call.arguments"]).unwrap(),
        json!({"q": SECRET})
    );
    assert_eq!(
        serde_json::from_str::<Value>(&a["gen_ai.tool.call.result"]).unwrap(),
        json!({"found": SECRET})
    );
    provider.shutdown().unwrap();
}
