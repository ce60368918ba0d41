//! Shared fixtures of the chat tests: a registry with every kind of tool, a scripted client and
//! validators for the OpenAI schemas in `../shared/specs`.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use toolc_runtime::chat::client_fn;
use toolc_runtime::dispatch::{ClientFailure, ClientPath};
use toolc_runtime::{executor_fn, Location, Registry, ToolDefinition, ToolError};

pub fn def(name: &str, location: Location, parameters: Value) -> ToolDefinition {
    ToolDefinition {
        name: name.into(),
        description: format!("The {name} tool."),
        location,
        parameters,
        ..Default::default()
    }
}

/// Counts executor runs, so tests can prove what ran and what did not.
#[derive(Debug, Default)]
pub struct Counters {
    pub search: AtomicUsize,
}

/// Tools:
/// - `search` (server): `{query: string, limit?: integer}`; returns the arguments it received.
/// - `fail` (server): always fails with code `nope`.
/// - `boom` (server): panics.
/// - `ask` (client, waits, 200 ms): `{mode: "answer" | "hang" | "gone" | "panic"}` — how the
///   scripted client behaves.
/// - `toast` (client, fire-and-forget): `{message: string}`.
pub fn registry(counters: Arc<Counters>) -> Arc<Registry> {
    let search = def(
        "search",
        Location::Server,
        json!({
            "type": "object",
            "properties": {
                "query": { "type": "string", "minLength": 1 },
                "limit": { "type": "integer", "minimum": 1 }
            },
            "required": ["query"],
            "additionalProperties": false
        }),
    );
    let empty = json!({ "type": "object", "properties": {}, "additionalProperties": false });
    let mut ask = def(
        "ask",
        Location::Client,
        json!({
            "type": "object",
            "properties": { "mode": { "enum": ["answer", "hang", "gone", "panic"] } },
            "required": ["mode"],
            "additionalProperties": false
        }),
    );
    ask.timeout = Some(Duration::from_millis(200));
    let mut toast = def(
        "toast",
        Location::Client,
        json!({
            "type": "object",
            "properties": { "message": { "type": "string" } },
            "required": ["message"]
        }),
    );
    toast.wait_for_response = false;
    let c = counters.clone();
    Arc::new(
        Registry::builder()
            .definitions([
                search,
                def("fail", Location::Server, empty.clone()),
                def("boom", Location::Server, empty),
                ask,
                toast,
            ])
            .executor(
                "search",
                executor_fn(move |args| {
                    c.search.fetch_add(1, Ordering::SeqCst);
                    async move { Ok(json!({ "received": args })) }
                }),
            )
            .executor(
                "fail",
                executor_fn(|_| async { Err(ToolError::new("no such order").with_code("nope")) }),
            )
            .executor(
                "boom",
                executor_fn(|_| async {
                    if true {
                        panic!("executor bug");
                    }
                    Ok(json!(null))
                }),
            )
            .build()
            .expect("test registry"),
    )
}

/// A client that behaves as `ask`'s `mode` says; fire-and-forget calls are counted.
pub fn scripted_client(notified: Arc<AtomicUsize>) -> Arc<dyn ClientPath> {
    Arc::new(client_fn(move |call| {
        let notified = notified.clone();
        async move {
            if call.deadline.is_none() {
                notified.fetch_add(1, Ordering::SeqCst);
                return Ok(r#"{"ignored":true}"#.to_owned());
            }
            let args: Value =
                serde_json::from_str(&call.tool_call.arguments).unwrap_or(Value::Null);
            match args["mode"].as_str() {
                Some("answer") => Ok(json!({ "answered": call.tool_call.call_id }).to_string()),
                Some("gone") => Err(ClientFailure::Disconnected),
                Some("panic") => panic!("client path bug"),
                _ => std::future::pending().await,
            }
        }
    }))
}

pub fn specs_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/specs")
}

/// The OpenAI OpenAPI extract, loaded once per test binary.
pub fn openai_document() -> &'static Value {
    static DOC: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    DOC.get_or_init(|| {
        let path = specs_dir().join("openai/openai-tool-calling-schemas.extract.json");
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        serde_json::from_str(&text).expect("the OpenAI extract is JSON")
    })
}

/// A validator for `#/components/schemas/NAME`: the whole document with a root `$ref`, so that
/// every `$ref` inside the component resolves against the document.
pub fn openai_validator(name: &str) -> jsonschema::Validator {
    let mut doc = openai_document().clone();
    assert!(
        doc.pointer(&format!("/components/schemas/{name}"))
            .is_some(),
        "{name} is not in the OpenAI extract"
    );
    doc["$ref"] = Value::String(format!("#/components/schemas/{name}"));
    jsonschema::draft202012::new(&doc).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Every validation error of `value` against `name`, as readable lines.
pub fn openai_errors(validator: &jsonschema::Validator, value: &Value) -> Vec<String> {
    validator
        .iter_errors(value)
        .map(|e| format!("{}: {e}", e.instance_path().as_str()))
        .collect()
}

pub fn assert_valid(validator: &jsonschema::Validator, name: &str, value: &Value) {
    let errors = openai_errors(validator, value);
    assert!(
        errors.is_empty(),
        "{name} rejects {value}:\n{}",
        errors.join("\n")
    );
}

/// The `error.kind` inside a result's JSON text.
pub fn error_kind(output: &str) -> Option<String> {
    let v: Value = serde_json::from_str(output).ok()?;
    v.pointer("/error/kind")?.as_str().map(str::to_owned)
}

/// Splits `text` into pieces at the given char positions (sorted, deduplicated, in range).
pub fn split_at_chars(text: &str, cuts: &[usize]) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut cuts: Vec<usize> = cuts.iter().map(|&c| c.min(chars.len())).collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut pieces = Vec::new();
    let mut start = 0;
    for cut in cuts.into_iter().chain([chars.len()]) {
        pieces.push(chars[start..cut].iter().collect());
        start = cut;
    }
    pieces
}
