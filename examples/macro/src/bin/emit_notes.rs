//! Writes every output toolc produces for a manifest — JSON Schemas, provider declarations,
//! TypeScript, Rust — for the tools defined in Rust alone in `src/notes.rs`:
//!
//! ```text
//! cargo run -p macro-example --bin emit_notes -- out/notes
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use toolc::emit::{self, Kind};
use toolc::{Diagnostics, Ir};

fn main() -> ExitCode {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "out/notes".into()),
    );
    let registry = match macro_example::notes::registry() {
        Ok(registry) => registry,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let ir = Ir::from_definitions(registry.definitions().cloned());
    let mut diagnostics = Diagnostics::default();
    let outputs = emit::emit(&ir, &Kind::ALL, &emit::Config::default(), &mut diagnostics);
    // Tools defined in Rust have no manifest to point into, so problems are printed by message.
    for d in diagnostics.iter() {
        eprintln!("{:?}[{}]: {}", d.severity, d.code, d.message);
        if let Some(help) = &d.help {
            eprintln!("  help: {help}");
        }
    }
    match toolc::output::write_outputs(&dir, &outputs) {
        Ok(report) => {
            println!(
                "{} files in {} ({} written, {} unchanged)",
                outputs.len(),
                dir.display(),
                report.written.len(),
                report.unchanged.len()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: cannot write {}: {e}", dir.display());
            ExitCode::FAILURE
        }
    }
}
