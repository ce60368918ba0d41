//! What the runtime traces, captured by a subscriber layer of the test's own: a `toolc.session`
//! span per relay session, a `toolc.response` per model response in it, and a `toolc.call` span
//! per call inside that (tool, call id, location, outcome, error kind, duration), warnings for refusals and timeouts, and never a call's
//! arguments or results outside the opt-in `toolc::payloads` target.
#![cfg(feature = "testing")]

mod common {
    pub mod relay;
}

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use toolc_runtime::realtime::script;
use toolc_runtime::relay::testing::{FakeModel, Script, TestBrowser};
use toolc_runtime::{definitions_from_str, executor_fn, Registry};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

const SECRET: &str = "hunter2-the-secret-argument";
const LIMIT: Duration = Duration::from_secs(20);

type FieldMap = BTreeMap<String, String>;
/// (target, level, fields, enclosing span names from the root)
type CapturedEvent = (String, String, FieldMap, Vec<String>);

#[derive(Clone, Debug, Default)]
struct Captured {
    /// (span name, fields, parent span name)
    spans: Vec<(String, FieldMap, Option<String>)>,
    events: Vec<CapturedEvent>,
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

struct Capture(Arc<Mutex<Captured>>);

/// The index of a span in `Captured::spans`, kept in the span's extensions.
struct Index(usize);

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        let span = ctx.span(id).unwrap();
        let parent = span.parent().map(|p| p.name().to_owned());
        let mut captured = self.0.lock().unwrap();
        captured
            .spans
            .push((attrs.metadata().name().to_owned(), fields, parent));
        span.extensions_mut()
            .insert(Index(captured.spans.len() - 1));
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let span = ctx.span(id).unwrap();
        let extensions = span.extensions();
        let Some(Index(i)) = extensions.get::<Index>() else {
            return;
        };
        let mut captured = self.0.lock().unwrap();
        values.record(&mut Fields(&mut captured.spans[*i].1));
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        let scope: Vec<String> = ctx
            .event_scope(event)
            .map(|s| s.from_root().map(|span| span.name().to_owned()).collect())
            .unwrap_or_default();
        self.0.lock().unwrap().events.push((
            event.metadata().target().to_owned(),
            event.metadata().level().to_string(),
            fields,
            scope,
        ));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_and_calls_are_spans_and_arguments_stay_out_of_them() {
    let captured = Arc::new(Mutex::new(Captured::default()));
    let subscriber = tracing_subscriber::registry().with(Capture(captured.clone()));
    tracing::subscriber::set_global_default(subscriber).unwrap();

    let defs = definitions_from_str(
        "t.tools.yaml",
        r#"
version: 1
tools:
  - name: lookup
    description: A server tool.
    location: server
    parameters: { type: object, properties: { q: { type: string } } }
  - name: highlight
    description: A client tool the browser never answers.
    location: client
    timeout: 200ms
    parameters: { type: object, properties: { selector: { type: string } } }
"#,
    )
    .unwrap();
    let registry = Arc::new(
        Registry::builder()
            .definitions(defs)
            .executor(
                "lookup",
                executor_fn(|args| async move {
                    tracing::info!("inside the executor");
                    Ok(json!({"echo": args["q"]}))
                }),
            )
            .build()
            .unwrap(),
    );
    let arguments = json!({"q": SECRET}).to_string();
    let selector = json!({"selector": SECRET}).to_string();
    let model = FakeModel::start(
        Script::new()
            .wait_for("session.update", 1)
            .send_all(script::response_with_calls(
                "r1",
                &[
                    ("call_l", "lookup", &arguments),
                    ("call_h", "highlight", &selector),
                ],
            ))
            .wait_for("response.create", 1),
    )
    .await
    .unwrap();
    let relay = common::relay::start(registry, model.url(), |_| {}).await;
    let mut browser = TestBrowser::connect(&relay.url).await.unwrap();
    let conn = model.connection(0, LIMIT).await.unwrap();
    assert!(conn.wait_for("response.create", 1, LIMIT).await);
    // A browser event the relay refuses.
    assert!(browser.send_text(r#"{"type":"x","type":"y"}"#).await);
    let _ = browser.next_matching(LIMIT, |e| e["type"] == "error").await;
    // The page hangs up (a close handshake): the relay does not hold the session for a
    // resume, it ends it.
    browser.close().await;
    tokio::time::sleep(Duration::from_millis(300)).await;

    let captured = captured.lock().unwrap().clone();
    let session = captured
        .spans
        .iter()
        .find(|(name, ..)| name == "toolc.session")
        .expect("a session span");
    assert!(session.1.contains_key("session"), "{session:?}");
    let call = |tool: &str| {
        captured
            .spans
            .iter()
            .find(|(name, f, _)| {
                name == "toolc.call" && f.get("tool").map(String::as_str) == Some(tool)
            })
            .unwrap_or_else(|| panic!("a call span for {tool}: {:?}", captured.spans))
            .clone()
    };
    let lookup = call("lookup");
    assert_eq!(lookup.1["call_id"], "call_l");
    assert_eq!(lookup.1["location"], "server");
    assert_eq!(lookup.1["outcome"], "ok");
    assert!(lookup.1.contains_key("duration_ms"));
    assert_eq!(
        lookup.2.as_deref(),
        Some("toolc.response"),
        "calls nest in their response"
    );
    let response = captured
        .spans
        .iter()
        .find(|(name, ..)| name == "toolc.response")
        .expect("a response span");
    assert_eq!(response.1["gen_ai.response.id"], "r1");
    assert_eq!(
        response.2.as_deref(),
        Some("toolc.session"),
        "responses nest in the session"
    );
    assert_eq!(lookup.1["gen_ai.tool.name"], "lookup");
    assert_eq!(lookup.1["gen_ai.operation.name"], "execute_tool");
    let highlight = call("highlight");
    assert_eq!(highlight.1["location"], "client");
    assert_eq!(highlight.1["outcome"], "error");
    assert_eq!(highlight.1["error"], "timeout");
    // The executor's own event is inside its call's span.
    assert!(captured.events.iter().any(|(_, _, f, scope)| {
        f.get("message").is_some_and(|m| m == "inside the executor")
            && scope.ends_with(&["toolc.call".to_owned()])
    }));
    // Refusals and timeouts are warnings.
    let warned = |needle: &str| {
        captured.events.iter().any(|(_, level, f, _)| {
            level == "WARN" && f.get("message").is_some_and(|m| m.contains(needle))
        })
    };
    assert!(warned("timed out"), "{:?}", captured.events);
    assert!(warned("refused"), "{:?}", captured.events);
    // Arguments and results only at the opt-in payload target.
    for (name, fields, _) in &captured.spans {
        assert!(
            !format!("{fields:?}").contains(SECRET),
            "{name}: {fields:?}"
        );
    }
    for (target, _, fields, _) in &captured.events {
        if target != "toolc::payloads" {
            assert!(
                !format!("{fields:?}").contains(SECRET),
                "{target}: {fields:?}"
            );
        }
    }
    assert!(captured
        .events
        .iter()
        .any(|(target, ..)| target == "toolc::payloads"));
}
