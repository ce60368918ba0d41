//! The runtime registry: the location rule at construction, and every failure kind of a call.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use toolc_runtime::{
    executor_fn, typed_executor, CallErrorKind, Executor, Location, Problem, Registry,
    ToolDefinition, ToolError,
};

fn def(name: &str, location: Location) -> ToolDefinition {
    ToolDefinition {
        name: name.into(),
        description: format!("The {name} tool."),
        location,
        parameters: json!({
            "type": "object",
            "properties": {
                "query": { "type": "string", "minLength": 1 },
                "limit": { "type": "integer", "minimum": 1, "maximum": 10 }
            },
            "required": ["query"],
            "additionalProperties": false
        }),
        returns: Some(json!({
            "type": "object",
            "properties": { "hits": { "type": "array", "items": { "type": "string" } } },
            "required": ["hits"],
            "additionalProperties": false
        })),
        ..Default::default()
    }
}

#[derive(Deserialize)]
struct SearchArgs {
    query: String,
    #[serde(default)]
    limit: Option<i64>,
}

#[derive(Serialize)]
struct SearchOutput {
    hits: Vec<String>,
}

fn search() -> impl Executor {
    typed_executor(|args: SearchArgs| async move {
        let n = args.limit.unwrap_or(2) as usize;
        Ok::<_, ToolError>(SearchOutput {
            hits: (1..=n).map(|i| format!("{} #{i}", args.query)).collect(),
        })
    })
}

fn registry_with(name: &str, executor: impl Executor, timeout: Option<Duration>) -> Registry {
    let mut d = def(name, Location::Server);
    d.timeout = timeout;
    Registry::builder()
        .definition(d)
        .definition(def("highlight", Location::Client))
        .executor(name, executor)
        .build()
        .unwrap()
}

#[test]
fn construction_lists_every_location_rule_violation_at_once() {
    let err = Registry::builder()
        .definition(def("search", Location::Server))
        .definition(def("lookup", Location::Server))
        .definition(def("highlight", Location::Client))
        .definition(def("highlight", Location::Client))
        .executor("highlight", search())
        .executor("summarize", search())
        .executor("lookup", search())
        .executor("lookup", search())
        .build()
        .unwrap_err();
    assert_eq!(
        err.problems(),
        [
            Problem::MissingExecutor("search".into()),
            Problem::ClientExecutor("highlight".into()),
            Problem::UnknownExecutor("summarize".into()),
            Problem::DuplicateExecutor("lookup".into()),
            Problem::DuplicateDefinition("highlight".into()),
        ]
    );
    assert_eq!(err.missing_executors(), ["search"]);
    assert_eq!(err.client_executors(), ["highlight"]);
    assert_eq!(err.unknown_executors(), ["summarize"]);
    let text = err.to_string();
    assert!(
        text.starts_with("the tool registry breaks the location rule (5 problems):"),
        "{text}"
    );
    for needle in [
        "server tool `search` has no executor",
        "client tool `highlight` was given an executor",
        "executor `summarize` matches no tool definition",
        "tool `lookup` was given more than one executor",
        "tool `highlight` is defined more than once",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
}

#[test]
fn schemas_that_cannot_compile_are_reported_with_the_tool() {
    let mut d = def("search", Location::Server);
    d.parameters = json!({ "type": "object", "properties": { "q": { "pattern": "([" } } });
    let err = Registry::builder()
        .definition(d)
        .executor("search", search())
        .build()
        .unwrap_err();
    // Its executor is neither unknown nor missing: the one problem is the schema.
    assert_eq!(err.problems().len(), 1, "{err}");
    assert!(
        matches!(&err.problems()[0], Problem::InvalidSchema { tool, problem } if tool == "search" && problem.starts_with("parameters:")),
        "{err}"
    );
}

#[test]
fn schemas_that_multiply_when_written_out_are_refused() {
    // Each definition uses the next twice: 2^40 schemas for a validator to try on `x: 5`.
    let mut defs = serde_json::Map::new();
    for k in 0..40 {
        let next = json!({ "$ref": format!("#/$defs/D{}", k + 1) });
        defs.insert(format!("D{k}"), json!({ "anyOf": [next.clone(), next] }));
    }
    defs.insert("D40".into(), json!({ "type": "string" }));
    let mut d = def("search", Location::Server);
    d.parameters = json!({ "type": "object", "properties": { "x": { "$ref": "#/$defs/D0" } },
                           "$defs": defs });
    let err = Registry::builder()
        .definition(d)
        .executor("search", search())
        .build()
        .unwrap_err();
    assert!(
        matches!(&err.problems()[0], Problem::InvalidSchema { tool, problem }
            if tool == "search" && problem.contains("more than 100000 schemas")),
        "{err}"
    );
}

#[tokio::test]
async fn a_valid_call_returns_json_text() {
    let r = registry_with("search", search(), None);
    let out = r
        .call("search", r#"{"query":"rust","limit":3}"#)
        .await
        .unwrap();
    assert_eq!(out, r#"{"hits":["rust #1","rust #2","rust #3"]}"#);
    let value = r.call_value("search", json!({"query": "x"})).await.unwrap();
    assert_eq!(value, json!({"hits": ["x #1", "x #2"]}));
}

#[tokio::test]
async fn unknown_tool_suggests_the_closest_name() {
    let r = registry_with("search", search(), None);
    let err = r.call("serch", "{}").await.unwrap_err();
    assert_eq!(err.kind(), CallErrorKind::UnknownTool);
    assert_eq!(err.kind().as_str(), "unknown_tool");
    assert!(err.message().contains("Did you mean `search`?"), "{err}");
    assert!(
        err.message()
            .contains("Available tools: search, highlight."),
        "{err}"
    );
    assert!(r.validate_arguments("nope", "{}").is_err());
}

#[tokio::test]
async fn client_tools_cannot_be_called_on_the_server() {
    let r = registry_with("search", search(), None);
    let err = r.call("highlight", r#"{"query":"x"}"#).await.unwrap_err();
    assert_eq!(err.kind(), CallErrorKind::ClientTool);
    assert!(err.message().contains("runs in the user's client"), "{err}");
}

#[tokio::test]
async fn malformed_json_is_reported_with_its_position() {
    let r = registry_with("search", search(), None);
    let err = r.call("search", r#"{"query": "x""#).await.unwrap_err();
    assert_eq!(err.kind(), CallErrorKind::InvalidJson);
    assert!(err.message().contains("line 1"), "{err}");
    let model: Value = serde_json::from_str(&err.model_text()).unwrap();
    assert_eq!(model["error"]["kind"], "invalid_json");
}

#[tokio::test]
async fn a_value_outside_an_enum_or_const_names_the_valid_ones() {
    let mut d = def("paint", Location::Server);
    d.parameters = json!({
        "type": "object",
        "properties": {
            "color": { "enum": ["red", "green", 3] },
            "version": { "const": 2 },
            "note": { "type": "string" }
        },
        "additionalProperties": false
    });
    d.returns = None;
    let r = Registry::builder()
        .definition(d)
        .executor("paint", executor_fn(|_| async { Ok(json!({})) }))
        .build()
        .unwrap();
    let err = r
        .call("paint", r#"{"color":"blue","version":1,"note":4}"#)
        .await
        .unwrap_err();
    let valid = |pointer: &str| {
        err.violations()
            .iter()
            .find(|v| v.pointer == pointer)
            .unwrap_or_else(|| panic!("no violation at {pointer}: {err}"))
            .valid
            .clone()
    };
    assert_eq!(
        valid("/color"),
        Some(vec![json!("red"), json!("green"), json!(3)])
    );
    assert_eq!(valid("/version"), Some(vec![json!(2)]));
    assert_eq!(valid("/note"), None, "a type error lists no values");
    // The model reads them in the result.
    let model = err.to_model_json();
    let violations = model["error"]["violations"].as_array().unwrap();
    let color = violations
        .iter()
        .find(|v| v["pointer"] == "/color")
        .unwrap();
    assert_eq!(color["valid"], json!(["red", "green", 3]));
    let note = violations.iter().find(|v| v["pointer"] == "/note").unwrap();
    assert!(note.get("valid").is_none());
}

#[tokio::test]
async fn schema_violations_are_listed_with_json_pointers() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let r = registry_with(
        "search",
        executor_fn(move |_| {
            counter.fetch_add(1, Ordering::SeqCst);
            async { Ok(json!({"hits": []})) }
        }),
        None,
    );
    let err = r
        .call("search", r#"{"query":"","limit":99,"extra":1}"#)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), CallErrorKind::InvalidArguments);
    let pointers: Vec<&str> = err
        .violations()
        .iter()
        .map(|v| v.pointer.as_str())
        .collect();
    assert_eq!(pointers.len(), 3, "{err}");
    assert!(
        pointers.contains(&"/query") && pointers.contains(&"/limit"),
        "{pointers:?}"
    );
    // additionalProperties is reported at the object, naming the key.
    assert!(err.message().contains("extra"), "{err}");
    let model = err.to_model_json();
    assert_eq!(model["error"]["violations"].as_array().unwrap().len(), 3);
    let err = r.call("search", "[1,2]").await.unwrap_err();
    assert_eq!(err.violations()[0].pointer, "");
    assert!(err.to_string().contains("(root)"), "{err}");
    assert_eq!(calls.load(Ordering::SeqCst), 0, "the executor never ran");
}

#[tokio::test]
async fn empty_arguments_mean_an_empty_object() {
    let r = registry_with("search", search(), None);
    let err = r.call("search", "  ").await.unwrap_err();
    // `{}` misses `query`: a schema violation, not a JSON error.
    assert_eq!(err.kind(), CallErrorKind::InvalidArguments);
}

#[tokio::test]
async fn hostile_arguments_get_a_bounded_report() {
    let mut d = def("search", Location::Server);
    d.parameters = json!({ "type": "object", "additionalProperties": { "type": "integer" } });
    let r = Registry::builder()
        .definition(d)
        .executor("search", search())
        .build()
        .unwrap();
    let args: serde_json::Map<String, Value> = (0..500)
        .map(|i| (format!("k{i}"), json!("not a number")))
        .collect();
    let err = r
        .call("search", &Value::Object(args).to_string())
        .await
        .unwrap_err();
    assert_eq!(err.violations().len(), 17);
    assert_eq!(err.violations()[16].message, "and 484 more problems");
}

#[tokio::test]
async fn executor_errors_keep_their_message_and_code() {
    let r = registry_with(
        "search",
        executor_fn(|_| async { Err(ToolError::new("the index is rebuilding").with_code("busy")) }),
        None,
    );
    let err = r.call("search", r#"{"query":"x"}"#).await.unwrap_err();
    assert_eq!(err.kind(), CallErrorKind::ToolFailed);
    assert_eq!(err.code(), Some("busy"));
    assert_eq!(
        err.to_model_json(),
        json!({"error": {
            "kind": "tool_failed",
            "message": "The tool `search` failed: the index is rebuilding",
            "code": "busy",
            "status": "error",
            "reason": "busy",
            "retryable": false
        }})
    );
}

#[tokio::test]
async fn question_mark_converts_any_error() {
    let r = registry_with(
        "search",
        executor_fn(|_| async {
            let n: i64 = "twelve".parse()?;
            Ok(json!({ "hits": [n.to_string()] }))
        }),
        None,
    );
    let err = r.call("search", r#"{"query":"x"}"#).await.unwrap_err();
    assert_eq!(err.kind(), CallErrorKind::ToolFailed);
    assert!(err.message().contains("invalid digit"), "{err}");
}

#[tokio::test]
async fn panics_are_caught_before_and_after_the_first_await() {
    let sync_panic = registry_with(
        "search",
        executor_fn(|_| -> std::future::Ready<Result<Value, ToolError>> {
            panic!("boom in setup")
        }),
        None,
    );
    let err = sync_panic
        .call("search", r#"{"query":"x"}"#)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), CallErrorKind::Panic);
    assert_eq!(err.detail(), Some("boom in setup"));
    assert!(
        !err.model_text().contains("boom"),
        "panic text stays out of the model's view"
    );

    let async_panic = registry_with(
        "search",
        executor_fn(|_| async {
            tokio::task::yield_now().await;
            let index: Vec<u8> = Vec::new();
            Ok(json!({ "hits": [index[3].to_string()] }))
        }),
        None,
    );
    let err = async_panic
        .call("search", r#"{"query":"x"}"#)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), CallErrorKind::Panic);
    assert!(
        err.detail().unwrap().contains("index out of bounds"),
        "{err}"
    );
    // The registry is still usable afterwards.
    assert!(async_panic
        .call("search", r#"{"query":"x"}"#)
        .await
        .is_err());
}

#[tokio::test(start_paused = true)]
async fn slow_executors_time_out() {
    let r = registry_with(
        "search",
        executor_fn(|_| async {
            tokio::time::sleep(Duration::from_secs(60)).await;
            Ok(json!({ "hits": [] }))
        }),
        Some(Duration::from_millis(1500)),
    );
    let err = r.call("search", r#"{"query":"x"}"#).await.unwrap_err();
    assert_eq!(err.kind(), CallErrorKind::Timeout);
    assert!(err.message().contains("within 1500 ms"), "{err}");
    let fast = registry_with("search", search(), Some(Duration::from_secs(2)));
    assert!(fast.call("search", r#"{"query":"x"}"#).await.is_ok());
}

#[test]
fn a_timeout_outside_a_runtime_is_a_configuration_error() {
    let r = registry_with("search", search(), Some(Duration::from_secs(1)));
    let fut = r.call("search", r#"{"query":"x"}"#);
    let err = poll_once(fut).unwrap_err();
    assert_eq!(err.kind(), CallErrorKind::NoRuntime);
    // Without a timeout no runtime is needed at all.
    let r = registry_with("search", search(), None);
    assert!(poll_once(r.call("search", r#"{"query":"x"}"#)).is_ok());
}

fn poll_once<T>(fut: impl std::future::Future<Output = T>) -> T {
    let mut fut = std::pin::pin!(fut);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match fut.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(v) => v,
        std::task::Poll::Pending => panic!("expected the call to finish in one poll"),
    }
}

#[tokio::test]
async fn results_that_break_returns_are_withheld() {
    let r = registry_with(
        "search",
        executor_fn(|_| async { Ok(json!({ "hits": "not a list", "debug": "secret" })) }),
        None,
    );
    let err = r.call("search", r#"{"query":"x"}"#).await.unwrap_err();
    assert_eq!(err.kind(), CallErrorKind::InvalidOutput);
    assert_eq!(err.violations().len(), 2, "{err}");
    assert!(!err.model_text().contains("secret"));
    assert!(r.check_output("search", &json!({"hits": ["a"]})).is_ok());
}

#[tokio::test]
async fn validated_arguments_that_do_not_fit_the_type_are_invalid_arguments() {
    // The schema allows any integer; the executor's type only up to u8.
    #[derive(Deserialize)]
    struct Small {
        #[allow(dead_code)]
        query: String,
        limit: Option<u8>,
    }
    let r = registry_with(
        "search",
        typed_executor(|a: Small| async move {
            Ok::<_, ToolError>(json!({ "hits": [a.limit.unwrap_or(0).to_string()] }))
        }),
        None,
    );
    let mut d = def("search", Location::Server);
    d.parameters["properties"]["limit"] = json!({ "type": "integer" });
    let wide = Registry::builder()
        .definition(d)
        .executor(
            "search",
            typed_executor(|a: Small| async move {
                Ok::<_, ToolError>(json!({ "hits": [a.limit.unwrap_or(0).to_string()] }))
            }),
        )
        .build()
        .unwrap();
    assert!(r.call("search", r#"{"query":"x","limit":5}"#).await.is_ok());
    let err = wide
        .call("search", r#"{"query":"x","limit":300}"#)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), CallErrorKind::InvalidArguments);
}

#[test]
fn definitions_load_at_run_time_and_build_a_registry() {
    let yaml = r#"
version: 1
tools:
  - name: lookup
    description: Look something up.
    location: server
    timeout: 2s
    parameters:
      type: object
      properties: { key: { type: string } }
      required: [key]
  - name: show
    description: Show something.
    location: client
"#;
    let defs = toolc_runtime::definitions_from_str("inline.tools.yaml", yaml).unwrap();
    assert_eq!(defs.len(), 2);
    let missing = Registry::new(defs.clone(), []).unwrap_err();
    assert_eq!(missing.missing_executors(), ["lookup"]);
    let executor: Arc<dyn Executor> = Arc::new(search());
    let r = Registry::new(defs, [("lookup".to_string(), executor)]).unwrap();
    assert_eq!(r.timeout("lookup"), Some(Duration::from_secs(2)));
    assert_eq!(
        r.timeout("show"),
        Some(toolc_runtime::DEFAULT_CLIENT_TIMEOUT)
    );
    assert_eq!(r.names().collect::<Vec<_>>(), ["lookup", "show"]);

    let bad = toolc_runtime::definitions_from_str(
        "bad.tools.yaml",
        "version: 1\ntools:\n  - name: x\n    location: servr\n",
    );
    let err = bad.unwrap_err();
    assert!(err.to_string().contains("bad.tools.yaml:4"), "{err}");
    let io = toolc_runtime::load_definitions(["/nonexistent/x.tools.yaml"]).unwrap_err();
    assert!(io.to_string().contains("cannot read"), "{io}");
}

#[test]
fn registries_and_calls_can_cross_threads() {
    fn send_sync<T: Send + Sync>(_: &T) {}
    fn send<T: Send>(_: &T) {}
    let r = registry_with("search", search(), Some(Duration::from_secs(1)));
    send_sync(&r);
    let call = r.call("search", "{}");
    send(&call);
    // Never polled: this only proves the future is `Send`.
    drop(call);
}

/// A server tool with `approval: required` whose executor counts its runs.
fn refund_registry() -> (Registry, Arc<AtomicUsize>) {
    let mut refund = def("refund_order", Location::Server);
    refund.policy.approval = toolc_runtime::Approval::Required;
    refund.returns = None;
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let registry = Registry::builder()
        .definition(refund)
        .executor(
            "refund_order",
            executor_fn(move |args: Value| {
                let counted = counted.clone();
                async move {
                    counted.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, ToolError>(json!({ "refunded": args["query"] }))
                }
            }),
        )
        .build()
        .unwrap();
    (registry, runs)
}

fn assert_approval_required(error: &toolc_runtime::CallError, why: &str) {
    assert_eq!(error.kind(), CallErrorKind::NotApproved);
    assert_eq!(error.code(), Some("approval_required"));
    assert!(
        error.detail().unwrap_or_default().contains(why),
        "{error:?}"
    );
    // The model reads the same `{"error": ...}` shape as on every other path.
    let text: Value = serde_json::from_str(&error.model_text()).unwrap();
    assert_eq!(text["error"]["kind"], "not_approved");
    assert_eq!(text["error"]["code"], "approval_required");
}

#[tokio::test]
async fn a_tool_that_needs_approval_does_not_run_from_any_plain_call_method() {
    let (registry, runs) = refund_registry();
    let args = r#"{"query":"AB-123456"}"#;
    let e = registry.call("refund_order", args).await.unwrap_err();
    assert_approval_required(&e, "no approval was given");
    let e = registry
        .call_value("refund_order", json!({ "query": "AB-123456" }))
        .await
        .unwrap_err();
    assert_approval_required(&e, "no approval was given");
    let ctx = toolc_runtime::SessionScope::new().call("refund_order", "call_1");
    let e = registry.call_with_context(ctx, args).await.unwrap_err();
    assert_approval_required(&e, "no approval was given");
    assert_eq!(runs.load(Ordering::SeqCst), 0, "the executor never ran");
}

#[tokio::test]
async fn an_approval_runs_exactly_the_call_it_names_once() {
    let (registry, runs) = refund_registry();
    let approved = json!({ "query": "AB-123456" });
    let grant = toolc_runtime::ApprovalGrant::new("refund_order", "call_1", approved.clone());
    let scope = toolc_runtime::SessionScope::new();

    // Other arguments, another call id, another tool: refused, nothing runs, the grant unused.
    let other_args = scope
        .call("refund_order", "call_1")
        .with_approval(grant.clone());
    let e = registry
        .call_with_context(other_args, r#"{"query":"ZZ-999999"}"#)
        .await
        .unwrap_err();
    assert_approval_required(&e, "other arguments");
    let other_call = scope
        .call("refund_order", "call_2")
        .with_approval(grant.clone());
    let e = registry
        .call_value_with_context(other_call, approved.clone())
        .await
        .unwrap_err();
    assert_approval_required(&e, "another call id");
    let mut other = def("refund_other", Location::Server);
    other.policy.approval = toolc_runtime::Approval::Required;
    let wrong_tool = toolc_runtime::ApprovalGrant::new("refund_other", "call_1", approved.clone());
    let e = registry
        .call_with_context(
            scope
                .call("refund_order", "call_1")
                .with_approval(wrong_tool),
            r#"{"query":"AB-123456"}"#,
        )
        .await
        .unwrap_err();
    assert_approval_required(&e, "another tool");
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert!(!grant.is_used());

    // The approved call runs (key order does not matter: the arguments are compared as JSON).
    let ctx = scope
        .call("refund_order", "call_1")
        .with_approval(grant.clone());
    let out = registry
        .call_with_context(ctx.clone(), r#" { "query" : "AB-123456" } "#)
        .await
        .unwrap();
    assert_eq!(out, r#"{"refunded":"AB-123456"}"#);
    assert!(grant.is_used());
    // A replay of the same context (or any clone of the grant) is refused.
    let e = registry
        .call_with_context(ctx, r#"{"query":"AB-123456"}"#)
        .await
        .unwrap_err();
    assert_approval_required(&e, "already used");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "ran exactly once");
}

#[tokio::test]
async fn tools_without_approval_ignore_a_missing_grant() {
    let registry = Registry::builder()
        .definition(def("search", Location::Server))
        .executor("search", search())
        .build()
        .unwrap();
    assert!(registry
        .call("search", r#"{"query":"x","limit":1}"#)
        .await
        .is_ok());
}
