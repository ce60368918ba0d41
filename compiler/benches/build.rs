//! `toolc build` of N synthetic tools, every output: load, check, emit, write.
//!
//! Target (issue 2): 1,000 tools under 100 ms; 10,000 tools under 12× the 1,000-tool time.
//! Run: `cargo bench -p toolc --bench build`

use std::path::Path;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use toolc::emit::{self, Kind};
use toolc::Session;

// The same allocator as the `toolc` binary, so the figures are those of `toolc build`.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn build(text: &str, out: &Path) -> usize {
    let mut session = Session::new();
    session.add_manifest("bench.tools.yaml", text.as_bytes());
    let ir = session.check().expect("synthetic manifests are valid");
    let outputs = emit::emit(&ir, &Kind::ALL, &mut session.diagnostics);
    let report = toolc::output::write_outputs(out, &outputs).expect("temp dir is writable");
    report.written.len()
}

fn bench_build(c: &mut Criterion) {
    let mut group = c.benchmark_group("toolc build");
    group.sample_size(10);
    for n in [1_000usize, 10_000] {
        let text = toolc::synthetic::manifest(n);
        let out = std::env::temp_dir().join(format!("toolc-bench-build-{n}"));
        group.bench_function(format!("{n} tools, all outputs, fresh folder"), |b| {
            b.iter_batched(
                || {
                    let _ = std::fs::remove_dir_all(&out);
                },
                |()| build(&text, &out),
                BatchSize::PerIteration,
            )
        });
        group.bench_function(format!("{n} tools, check only"), |b| {
            b.iter(|| {
                let mut session = Session::new();
                session.add_manifest("bench.tools.yaml", text.as_bytes());
                session.check().expect("valid").tools.len()
            })
        });
        let _ = std::fs::remove_dir_all(&out);
    }
    group.finish();
}

criterion_group!(benches, bench_build);
criterion_main!(benches);
