//! `toolc build` of N synthetic tools, every output: load, check, emit, write; then each phase of
//! it alone, so that a regression can be traced to the stage that caused it.
//!
//! Target (issue 2): 1,000 tools under 100 ms; 10,000 tools under 12× the 1,000-tool time.
//! Run: `cargo bench -p toolc --bench build -- --warm-up-time 1 --measurement-time 3`
//! (append a filter such as `phase` or `10000` to run a subset; set `TOOLC_BENCH_DIR=/dev/shm`
//! to write the outputs to memory instead of the disk).

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
    let report = emit::emit_into(
        &ir,
        &Kind::ALL,
        &emit::Config::default(),
        out,
        &mut session.diagnostics,
    )
    .expect("temp dir is writable");
    report.written.len()
}

fn check(text: &str) -> toolc::Ir {
    let mut session = Session::new();
    session.add_manifest("bench.tools.yaml", text.as_bytes());
    session.check().expect("synthetic manifests are valid")
}

/// A new output folder for every iteration, all under one root that is removed at the end.
/// Removing the previous iteration's folder instead would measure ext4 more than toolc: right
/// after thousands of files are deleted, creating files scans past the deleted inodes and can
/// take ten times as long.
struct FreshFolders {
    root: std::path::PathBuf,
    next: std::cell::Cell<usize>,
}

impl FreshFolders {
    fn new(name: &str) -> FreshFolders {
        // `TOOLC_BENCH_DIR=/dev/shm` measures toolc without the disk's file system.
        let base = std::env::var_os("TOOLC_BENCH_DIR")
            .map_or_else(std::env::temp_dir, std::path::PathBuf::from);
        let root = base.join(format!("toolc-bench-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        FreshFolders {
            root,
            next: std::cell::Cell::new(0),
        }
    }

    fn next(&self) -> std::path::PathBuf {
        self.next.set(self.next.get() + 1);
        self.root.join(self.next.get().to_string())
    }
}

impl Drop for FreshFolders {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Both groups in one function, so that the output folders are removed only at the very end:
/// deleting them between measurements would slow the next ones down.
fn bench_all(c: &mut Criterion) {
    let folders = FreshFolders::new("build");
    bench_phases(c, &folders);
    bench_build(c, &folders);
}

fn bench_build(c: &mut Criterion, folders: &FreshFolders) {
    let mut group = c.benchmark_group("toolc build");
    group.sample_size(10);
    for n in [1_000usize, 10_000] {
        let text = toolc::synthetic::manifest(n);
        group.bench_function(format!("{n} tools, all outputs, fresh folder"), |b| {
            b.iter_batched(
                || folders.next(),
                |out| build(&text, &out),
                BatchSize::PerIteration,
            )
        });
        group.bench_function(format!("{n} tools, check only"), |b| {
            b.iter(|| check(&text).tools.len())
        });
    }
    group.finish();
}

/// The stages of the 1,000-tool build one by one: YAML to nodes, the whole check, each emitter on
/// its own (one thread each, as `emit` runs them side by side), and the write of every output.
fn bench_phases(c: &mut Criterion, folders: &FreshFolders) {
    let mut group = c.benchmark_group("toolc build phase, 1000 tools");
    group.sample_size(10);
    let text = toolc::synthetic::manifest(1_000);
    group.bench_function("yaml parse", |b| {
        b.iter(|| {
            let mut errors = Vec::new();
            toolc::yaml::parse(
                toolc::FileId(0),
                &text,
                toolc::yaml::Limits::default(),
                &mut errors,
            )
            .is_some()
        })
    });
    // The yardstick of the speed guard: saphyr's event loop alone, no tree (what `yaml parse`
    // cost before the fast scanner, less the tree).
    group.bench_function("saphyr events alone", |b| {
        b.iter(|| {
            let mut parser = saphyr_parser::Parser::new_from_str(&text);
            let mut events = 0usize;
            while let Some(Ok(_)) = parser.next_event() {
                events += 1;
            }
            events
        })
    });
    group.bench_function("check", |b| b.iter(|| check(&text).tools.len()));
    let ir = check(&text);
    for kind in Kind::ALL {
        group.bench_function(format!("emit {}", kind.name()), |b| {
            b.iter(|| {
                let mut diags = toolc::Diagnostics::default();
                emit::emit(&ir, &[kind], &emit::Config::default(), &mut diags).len()
            })
        });
    }
    let mut diags = toolc::Diagnostics::default();
    let outputs = emit::emit(&ir, &Kind::ALL, &emit::Config::default(), &mut diags);
    group.bench_function("write, fresh folder", |b| {
        b.iter_batched(
            || folders.next(),
            |out| {
                toolc::output::write_outputs(&out, &outputs)
                    .expect("temp dir is writable")
                    .written
                    .len()
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

criterion_group!(benches, bench_all);
criterion_main!(benches);
