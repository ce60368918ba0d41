//! The tool both registry benchmarks call: a catalogue search with a typical 5-property argument
//! object, a typed executor that does nothing, and its arguments as the model would send them.

use std::future::Future;
use std::hint::black_box;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use toolc_runtime::{typed_executor, Location, Registry, ToolDefinition, ToolError};

pub const ARGS: &str = r#"{"query":"wireless headphones","limit":5,"category":"electronics","in_stock":true,"max_price":199.99}"#;

pub fn parameters() -> Value {
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
pub enum Category {
    Electronics,
    Books,
    Garden,
    Toys,
}

#[derive(Deserialize)]
#[allow(dead_code)]
pub struct SearchArgs {
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

/// A registry with the search tool, with an optional deadline per call.
pub fn registry(timeout: Option<Duration>) -> Registry {
    Registry::builder()
        .definition(ToolDefinition {
            name: "search_products".into(),
            description: "Search the catalogue.".into(),
            location: Location::Server,
            parameters: parameters(),
            timeout,
            ..Default::default()
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
pub fn poll_once<T>(fut: impl Future<Output = T>) -> T {
    let mut fut = std::pin::pin!(fut);
    match fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => unreachable!("the no-op executor never waits"),
    }
}
