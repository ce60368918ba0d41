//! Emitters: pure functions from the IR to file contents.

pub mod providers;
pub mod rust;
pub mod schemas;
pub mod strict;
pub mod typescript;

use crate::diagnostic::Diagnostics;
use crate::ir::Ir;
use crate::output::Outputs;

/// What `toolc build --emit` can produce.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// `schemas/<tool>.parameters.json`, `schemas/<tool>.returns.json`
    Schemas,
    /// `providers/*.json`
    Providers,
    /// `tools.rs`
    Rust,
    /// `tools.ts`
    TypeScript,
}

impl Kind {
    pub const ALL: [Kind; 4] = [Kind::Schemas, Kind::Providers, Kind::Rust, Kind::TypeScript];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Schemas => "schemas",
            Kind::Providers => "providers",
            Kind::Rust => "rust",
            Kind::TypeScript => "typescript",
        }
    }

    pub fn parse(name: &str) -> Option<Kind> {
        match name {
            "ts" => Some(Kind::TypeScript),
            "rs" => Some(Kind::Rust),
            _ => Kind::ALL.into_iter().find(|k| k.name() == name),
        }
    }
}

/// Runs the emitters for `kinds`, each on its own thread (they only read the IR). Outputs and
/// provider warnings are merged in the order of `kinds`, so the result does not depend on which
/// thread finishes first.
pub fn emit(ir: &Ir, kinds: &[Kind], diags: &mut Diagnostics) -> Outputs {
    let results: Vec<(Outputs, Diagnostics)> = std::thread::scope(|scope| {
        let handles: Vec<_> = kinds
            .iter()
            .map(|&kind| scope.spawn(move || emit_one(ir, kind)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    });
    let mut outputs = Outputs::new();
    for (kind_outputs, kind_diags) in results {
        outputs.extend(kind_outputs);
        diags.extend(kind_diags);
    }
    outputs
}

fn emit_one(ir: &Ir, kind: Kind) -> (Outputs, Diagnostics) {
    let mut outputs = Outputs::new();
    let mut diags = Diagnostics::default();
    match kind {
        Kind::Schemas => schemas::emit(ir, &mut outputs),
        Kind::Providers => providers::emit(ir, &mut diags, &mut outputs),
        Kind::Rust => {
            outputs.insert(
                "tools.rs".into(),
                rust::generate(ir, &rust::RustOptions::default()),
            );
        }
        Kind::TypeScript => {
            outputs.insert("tools.ts".into(), typescript::generate(ir));
        }
    }
    (outputs, diags)
}

/// Pretty JSON with a final newline; key order is the IR's (source order), so it is deterministic.
pub fn to_json_text(value: &serde_json::Value) -> String {
    let mut text = serde_json::to_string_pretty(value).expect("JSON values always serialise");
    text.push('\n');
    text
}
