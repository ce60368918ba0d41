//! What tracing costs per call: one no-op server call through the chat runner (plan, validate,
//! run, its `execute_tool` span inside a turn span), with no subscriber (tracing off, as an
//! application that sets none), with an OpenTelemetry layer (tracing-opentelemetry and the
//! SDK's tracer, spans built and ended; no exporter, so export is not measured), and with the
//! same layer capturing arguments and results.
//!
//! `cargo bench -p toolc-runtime --bench tracing_cost -- --warm-up-time 1 --measurement-time 3`

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use opentelemetry::trace::TracerProvider as _;
use serde_json::json;
use toolc_runtime::chat::{ToolCall, TurnRunner};
use toolc_runtime::{definitions_from_str, executor_fn, telemetry, Registry};
use tracing_subscriber::prelude::*;

fn runner() -> TurnRunner {
    let defs = definitions_from_str(
        "b.tools.yaml",
        r#"
version: 1
tools:
  - name: lookup
    description: No-op.
    location: server
    parameters:
      type: object
      properties: { query: { type: string, minLength: 1 }, limit: { type: integer } }
      required: [query]
"#,
    )
    .unwrap();
    let registry = Registry::builder()
        .definitions(defs)
        .executor(
            "lookup",
            executor_fn(|_| async { Ok(json!({ "ok": true })) }),
        )
        .build()
        .unwrap();
    TurnRunner::new(Arc::new(registry))
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let runner = runner();
    let calls = [ToolCall::new(
        "call_1",
        "lookup",
        json!({ "query": "order status", "limit": 5 }).to_string(),
    )];
    let mut one_call =
        |b: &mut criterion::Bencher<'_>| b.iter(|| rt.block_on(runner.run(&calls)).results.len());

    telemetry::capture_payloads(false);
    c.bench_function("tracing/off", &mut one_call);

    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_subscriber::filter::LevelFilter::INFO)
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("bench")));
    tracing::subscriber::with_default(subscriber, || {
        c.bench_function("tracing/opentelemetry", &mut one_call);
        telemetry::capture_payloads(true);
        c.bench_function("tracing/opentelemetry_with_payloads", &mut one_call);
        telemetry::capture_payloads(false);
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
