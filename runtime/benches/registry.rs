//! One server call through the registry (parse, validate, deserialize into the typed args, a
//! no-op executor, serialize the result) against the bare cost of `serde_json::from_str` plus a
//! compiled `jsonschema` `is_valid` on the same 5-property input, in the same run.
//!
//! cargo bench -p toolc-runtime --bench registry -- --warm-up-time 1 --measurement-time 3

use std::future::Future;
use std::hint::black_box;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use toolc_runtime::{typed_executor, Location, Registry, ToolDefinition, ToolError};

const ARGS: &str = r#"{"query":"wireless headphones","limit":5,"category":"electronics","in_stock":true,"max_price":199.99}"#;

fn parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": { "type": "string", "minLength": 1, "maxLength": 200 },
            "limit": { "type": "integer", "minimum": 1, "maximum": 50 },
            "category": { "type": "string", "enum": ["electronics", "books", "garden", "toys"] },
            "in_stock": { "type": "boolean" },
            "max_price": { "type": "number", "minimum": 0 }
        },
        "required": ["query"],
        "additionalProperties": false
    })
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum Category {
    Electronics,
    Books,
    Garden,
    Toys,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct SearchArgs {
    query: String,
    #[serde(default = "ten")]
    limit: i64,
    category: Option<Category>,
    in_stock: Option<bool>,
    max_price: Option<f64>,
}

fn ten() -> i64 {
    10
}

#[derive(Serialize)]
struct SearchOutput {
    total: i64,
}

fn registry(timeout: Option<Duration>) -> Registry {
    Registry::builder()
        .definition(ToolDefinition {
            name: "search_products".into(),
            description: "Search the catalogue.".into(),
            location: Location::Server,
            parameters: parameters(),
            returns: None,
            timeout,
            wait_for_response: true,
            filler: Vec::new(),
        })
        .executor(
            "search_products",
            typed_executor(|args: SearchArgs| async move {
                Ok::<_, ToolError>(SearchOutput {
                    total: black_box(args.limit) - args.limit,
                })
            }),
        )
        .build()
        .unwrap()
}

/// Drives a future that is ready without waiting (the executor never yields).
fn poll_once<T>(fut: impl Future<Output = T>) -> T {
    let mut fut = std::pin::pin!(fut);
    match fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => unreachable!("the no-op executor never waits"),
    }
}

fn server_call(c: &mut Criterion) {
    let validator = jsonschema::draft202012::new(&parameters()).unwrap();
    let plain = registry(None);
    let timed = registry(Some(Duration::from_secs(5)));
    assert_eq!(
        poll_once(plain.call("search_products", ARGS)).unwrap(),
        r#"{"total":0}"#
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();

    let mut group = c.benchmark_group("server_call");
    group.bench_function("bare: from_str + is_valid", |b| {
        b.iter(|| {
            let value: Value = serde_json::from_str(black_box(ARGS)).unwrap();
            black_box(validator.is_valid(&value))
        })
    });
    // Reference: the bare cost plus deserializing into the typed args, which the registry adds.
    group.bench_function("bare + from_value into the args type", |b| {
        b.iter(|| {
            let value: Value = serde_json::from_str(black_box(ARGS)).unwrap();
            assert!(validator.is_valid(&value));
            let args: SearchArgs = serde_json::from_value(value).unwrap();
            black_box(args)
        })
    });
    group.bench_function("registry.call", |b| {
        b.iter(|| poll_once(plain.call("search_products", black_box(ARGS))).unwrap())
    });
    group.bench_function("registry.call in tokio block_on", |b| {
        b.iter(|| {
            rt.block_on(plain.call("search_products", black_box(ARGS)))
                .unwrap()
        })
    });
    group.bench_function("registry.call with a 5 s timeout, block_on", |b| {
        b.iter(|| {
            rt.block_on(timed.call("search_products", black_box(ARGS)))
                .unwrap()
        })
    });
    group.finish();
}

criterion_group!(benches, server_call);
criterion_main!(benches);
