//! The registry's overhead as a ratio that survives a busy machine: the bare path and the
//! registry call are timed in alternating rounds in one process, and each keeps its fastest
//! round (interference only ever adds time). Same input and schema as `benches/registry.rs`.
//!
//! cargo bench -p toolc-runtime --bench registry_ratio

mod common;

use std::hint::black_box;
use std::time::{Duration, Instant};

use common::{parameters, poll_once, registry, ARGS};
use serde_json::Value;

const ROUNDS: usize = 200;
const PER_ROUND: u32 = 2_000;

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
    let registry = registry(None);
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
