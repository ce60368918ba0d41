//! Property: random argument strings never panic the registry and never reach an executor
//! unless they satisfy the tool's schema; those that do satisfy it always do reach it.

use std::sync::{Arc, Mutex};

use proptest::prelude::*;
use serde_json::{json, Value};
use toolc_runtime::{executor_fn, Location, Registry, ToolDefinition};

fn parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": { "type": "string", "minLength": 1, "maxLength": 8 },
            "limit": { "type": "integer", "minimum": 1, "maximum": 10 },
            "mode": { "type": "string", "enum": ["fast", "exact"] },
            "tags": { "type": "array", "items": { "type": "string" }, "maxItems": 3 },
            "strict": { "type": ["boolean", "null"] }
        },
        "required": ["query"],
        "additionalProperties": false
    })
}

fn registry(seen: Arc<Mutex<Vec<Value>>>) -> Registry {
    Registry::builder()
        .definition(ToolDefinition {
            name: "search".into(),
            description: "Search.".into(),
            location: Location::Server,
            parameters: parameters(),
            returns: Some(json!({ "type": "object", "required": ["ok"] })),
            ..Default::default()
        })
        .executor(
            "search",
            executor_fn(move |args| {
                seen.lock().unwrap().push(args);
                async { Ok(json!({ "ok": true })) }
            }),
        )
        .build()
        .unwrap()
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-20i64..20).prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        "[a-z]{0,10}".prop_map(Value::String),
        prop_oneof![Just("fast"), Just("exact"), Just("slow")].prop_map(|s| json!(s)),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{1,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Objects over the schema's own keys (so a good share are valid), plain JSON, and raw text.
fn object_text() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        Just("query".to_string()),
        Just("limit".to_string()),
        Just("mode".to_string()),
        Just("tags".to_string()),
        Just("strict".to_string()),
        "[a-z]{1,6}",
    ];
    prop::collection::btree_map(key, json_value(), 0..5)
        .prop_map(|m| Value::Object(m.into_iter().collect()).to_string())
}

/// Objects shaped like the schema, each property mostly but not always within its constraints.
fn near_valid_text() -> impl Strategy<Value = String> {
    (
        prop::option::weighted(0.9, "[a-z]{0,9}"),
        prop::option::of(-2i64..13),
        prop::option::of(prop_oneof![Just("fast"), Just("exact"), Just("slow")]),
        prop::option::of(prop::collection::vec("[a-z]{0,3}", 0..5)),
        prop::option::of(prop_oneof![
            Just(json!(true)),
            Just(Value::Null),
            Just(json!("x"))
        ]),
        prop::option::weighted(0.1, json_value()),
    )
        .prop_map(|(query, limit, mode, tags, strict, extra)| {
            let mut object = serde_json::Map::new();
            if let Some(q) = query {
                object.insert("query".into(), json!(q));
            }
            if let Some(l) = limit {
                object.insert("limit".into(), json!(l));
            }
            if let Some(m) = mode {
                object.insert("mode".into(), json!(m));
            }
            if let Some(t) = tags {
                object.insert("tags".into(), json!(t));
            }
            if let Some(s) = strict {
                object.insert("strict".into(), s);
            }
            if let Some(e) = extra {
                object.insert("extra".into(), e);
            }
            Value::Object(object).to_string()
        })
}

fn argument_text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => near_valid_text(),
        2 => object_text(),
        1 => object_text().prop_flat_map(|s| {
            let len = s.len();
            (Just(s), 0..=len).prop_map(|(s, cut)| s.get(..cut).unwrap_or("").to_string())
        }),
        1 => json_value().prop_map(|v| v.to_string()),
        1 => any::<String>(),
    ]
}

fn poll_once<T>(fut: impl std::future::Future<Output = T>) -> T {
    let mut fut = std::pin::pin!(fut);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match fut.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(v) => v,
        std::task::Poll::Pending => panic!("a ready executor finishes in one poll"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn only_schema_valid_arguments_reach_the_executor(text in argument_text()) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let registry = registry(seen.clone());
        let validator = jsonschema::draft202012::new(&parameters()).unwrap();
        let result = poll_once(registry.call("search", &text));
        let parsed: Option<Value> = if text.trim().is_empty() {
            Some(json!({}))
        } else {
            serde_json::from_str(&text).ok()
        };
        let valid = parsed.as_ref().is_some_and(|v| validator.is_valid(v));
        let seen = seen.lock().unwrap();
        if valid {
            prop_assert!(result.is_ok(), "{text}: {result:?}");
            prop_assert_eq!(seen.len(), 1);
            prop_assert_eq!(Some(&seen[0]), parsed.as_ref());
        } else {
            prop_assert!(seen.is_empty(), "invalid {text} reached the executor");
            let err = result.unwrap_err();
            prop_assert!(err.kind().is_model_error(), "{err}");
            // The model always gets JSON text it can read.
            let model: Value = serde_json::from_str(&err.model_text()).unwrap();
            prop_assert!(model["error"]["message"].is_string());
        }
    }
}

/// The property above is only meaningful if the generator produces both kinds of input.
#[test]
fn the_generator_produces_valid_and_invalid_arguments() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let validator = jsonschema::draft202012::new(&parameters()).unwrap();
    let mut runner = TestRunner::deterministic();
    let strategy = argument_text();
    let total = 2000;
    let valid = (0..total)
        .filter(|_| {
            let text = strategy.new_tree(&mut runner).unwrap().current();
            serde_json::from_str::<Value>(&text).is_ok_and(|v| validator.is_valid(&v))
        })
        .count();
    assert!(valid * 20 >= total, "only {valid} of {total} valid");
    assert!(
        valid * 5 <= total * 4,
        "{valid} of {total} valid: too few invalid"
    );
}
