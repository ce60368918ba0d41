//! One server call through the registry (parse, validate, deserialize into the typed args, a
//! no-op executor, serialize the result) against the bare cost of `serde_json::from_str` plus a
//! compiled `jsonschema` `is_valid` on the same 5-property input, in the same run.
//!
//! cargo bench -p toolc-runtime --bench registry -- --warm-up-time 1 --measurement-time 3

mod common;

use std::hint::black_box;
use std::time::Duration;

use common::{parameters, poll_once, registry, SearchArgs, ARGS};
use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::Value;

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
