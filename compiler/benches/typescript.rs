//! TypeScript generation for 1,000 synthetic tools (issue 5), measured two ways:
//! `generate` alone (IR → `tools.ts`), and what `toolc build --emit typescript` does in memory
//! (load and check the manifest, then generate). Writes the same 1,000 parameter schemas to
//! `target/toolc-ts-bench/parameters.json` for the side-by-side run of the npm package
//! `json-schema-to-typescript` (`node tests/ts/bench/jstt.mjs`).
//!
//! Run: `cargo bench -p toolc --bench typescript -- --warm-up-time 1 --measurement-time 3`

use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion};
use toolc::emit::{self, typescript, Kind};
use toolc::Session;

const TOOLS: usize = 1_000;

fn write_parameter_schemas(ir: &toolc::Ir) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/toolc-ts-bench");
    let schemas: Vec<serde_json::Value> = ir
        .tools
        .iter()
        .map(|t| {
            serde_json::json!({
                "name": format!("{}Args", toolc::ident::pascal_case(&t.def.name)),
                "schema": t.def.parameters,
            })
        })
        .collect();
    let written = std::fs::create_dir_all(&dir).and_then(|()| {
        std::fs::write(
            dir.join("parameters.json"),
            serde_json::to_string(&schemas).unwrap_or_default(),
        )
    });
    if let Err(e) = written {
        eprintln!("could not write the schemas for json-schema-to-typescript: {e}");
    }
}

fn bench_typescript(c: &mut Criterion) {
    let text = toolc::synthetic::manifest(TOOLS);
    let mut session = Session::new();
    session.add_manifest("bench.tools.yaml", text.as_bytes());
    let ir = session.check().expect("synthetic manifests are valid");
    assert_eq!(ir.tools.len(), TOOLS);
    write_parameter_schemas(&ir);

    let mut group = c.benchmark_group("typescript");
    group.sample_size(20);
    group.bench_function("generate tools.ts, 1000 tools", |b| {
        b.iter(|| typescript::generate(std::hint::black_box(&ir)).len())
    });
    group.bench_function("load + check + emit typescript, 1000 tools", |b| {
        b.iter(|| {
            let mut session = Session::new();
            session.add_manifest("bench.tools.yaml", text.as_bytes());
            let ir = session.check().expect("valid");
            let outputs = emit::emit(
                &ir,
                &[Kind::TypeScript],
                &emit::Config::default(),
                &mut session.diagnostics,
            );
            outputs.values().map(String::len).sum::<usize>()
        })
    });
    group.finish();
}

criterion_group!(benches, bench_typescript);
criterion_main!(benches);
