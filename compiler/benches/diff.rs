//! `toolc diff` at scale: two versions of a 10,000-tool manifest, the new one with a change in
//! every tenth tool (a bound lowered, an enum value removed, a description edited).
//!
//! `cargo bench -p toolc --bench diff`

use criterion::{criterion_group, criterion_main, Criterion};

fn versions(n: usize) -> (String, String) {
    let old = toolc::synthetic::manifest(n);
    let mut new = String::with_capacity(old.len());
    for (i, tool) in old.split("\n  - name: ").enumerate() {
        if i > 0 {
            new.push_str("\n  - name: ");
        }
        if i % 10 == 1 {
            new.push_str(
                &tool
                    .replacen("maximum: 50", "maximum: 40", 1)
                    .replacen("[open, closed, archived]", "[open, closed]", 1)
                    .replacen("description: ", "description: Revised. ", 1),
            );
        } else {
            new.push_str(tool);
        }
    }
    (old, new)
}

fn bench_diff(c: &mut Criterion) {
    let mut group = c.benchmark_group("toolc diff");
    group.sample_size(10);
    let (old, new) = versions(10_000);
    let sources = || {
        (
            vec![("old.tools.yaml".to_owned(), old.as_bytes().to_vec())],
            vec![("new.tools.yaml".to_owned(), new.as_bytes().to_vec())],
        )
    };
    let (o, n) = sources();
    let loaded = toolc::diff::compare_sources(o, n);
    let Some(changes) = loaded.changes.as_ref() else {
        panic!(
            "the versions do not load:\n{}",
            loaded.session.render(false)
        );
    };
    assert!(changes.len() >= 1_000, "{} changes", changes.len());
    // The IRs on their own, to time the comparison without the loading.
    let mut session = toolc::Session::new();
    let old_id = session
        .add_manifest("old.tools.yaml", old.as_bytes())
        .unwrap();
    let new_id = session
        .add_manifest("new.tools.yaml", new.as_bytes())
        .unwrap();
    let old_ir = session.check_files(&[old_id]).unwrap();
    let new_ir = session.check_files(&[new_id]).unwrap();

    group.bench_function("compare 10,000 tools (loaded)", |b| {
        b.iter(|| toolc::diff::diff(&old_ir, &new_ir))
    });
    group.bench_function("load, check and compare 10,000 tools", |b| {
        b.iter(|| {
            let (o, n) = sources();
            toolc::diff::compare_sources(o, n)
        })
    });
    group.bench_function("render 10,000 tools' changes", |b| {
        b.iter(|| toolc::diff::render_human(&loaded.session.sources, changes, None, false))
    });
    group.finish();
}

criterion_group!(benches, bench_diff);
criterion_main!(benches);
