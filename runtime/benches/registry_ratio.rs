//! The registry's overhead as a ratio that survives a busy machine: the bare path and the
//! registry call are timed in alternating rounds in one process, and each keeps its fastest
//! round (interference only ever adds time). Same input and schema as `benches/registry.rs`.
//!
//! cargo bench -p toolc-runtime --bench registry_ratio

use std::future::Future;
use std::hint::black_box;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use toolc_runtime::{typed_executor, Location, Registry, ToolDefinition, ToolError};

const ARGS: &str = r#"{"query":"wireless headphones","limit":5,"category":"electronics","in_stock":true,"max_price":199.99}"#;
const ROUNDS: usize = 200;
const PER_ROUND: u32 = 2_000;

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
    limit: Option<i64>,
    category: Option<Category>,
    in_stock: Option<bool>,
    max_price: Option<f64>,
}

#[derive(Serialize)]
struct SearchOutput {
    total: i64,
}

fn poll_once<T>(fut: impl Future<Output = T>) -> T {
    let mut fut = std::pin::pin!(fut);
    match fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => unreachable!("the no-op executor never waits"),
    }
}

fn round(f: &mut dyn FnMut()) -> Duration {
    let start = Instant::now();
    for _ in 0..PER_ROUND {
        f();
    }
    start.elapsed() / PER_ROUND
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` does not: keep that run short.
    let rounds = if std::env::args().any(|a| a == "--bench") {
        ROUNDS
    } else {
        2
    };
    let validator = jsonschema::draft202012::new(&parameters()).unwrap();
    let registry = Registry::builder()
        .definition(ToolDefinition {
            name: "search_products".into(),
            description: "Search the catalogue.".into(),
            location: Location::Server,
            parameters: parameters(),
            returns: None,
            timeout: None,
            wait_for_response: true,
            filler: Vec::new(),
        })
        .executor(
            "search_products",
            typed_executor(|args: SearchArgs| async move {
                Ok::<_, ToolError>(SearchOutput {
                    total: black_box(args.limit.unwrap_or(0)).min(0),
                })
            }),
        )
        .build()
        .unwrap();
    let mut bare = || {
        let value: Value = serde_json::from_str(black_box(ARGS)).unwrap();
        black_box(validator.is_valid(&value));
    };
    let mut call = || {
        black_box(poll_once(registry.call("search_products", black_box(ARGS))).unwrap());
    };
    let (mut best_bare, mut best_call) = (Duration::MAX, Duration::MAX);
    for _ in 0..rounds {
        best_bare = best_bare.min(round(&mut bare));
        best_call = best_call.min(round(&mut call));
    }
    println!(
        "bare from_str + is_valid: {best_bare:?}/call; registry.call: {best_call:?}/call; ratio {:.2}x (fastest of {rounds} alternating rounds of {PER_ROUND})",
        best_call.as_secs_f64() / best_bare.as_secs_f64()
    );
}
