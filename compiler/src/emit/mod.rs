//! Emitters: pure functions from the IR to file contents.

pub mod providers;
pub mod rust;
pub mod schemas;
pub use toolc_core::strict;
pub mod typescript;

use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::ir::Ir;
use std::collections::BTreeSet;

use crate::output::{self, OutputWriter, Outputs, WriteReport};

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
    /// Every kind: what `toolc build` emits when `--emit` names none.
    pub const ALL: [Kind; 4] = [Kind::Schemas, Kind::Providers, Kind::Rust, Kind::TypeScript];

    /// The kind's name as `--emit` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Schemas => "schemas",
            Kind::Providers => "providers",
            Kind::Rust => "rust",
            Kind::TypeScript => "typescript",
        }
    }

    /// The kind whose emitter writes the output at `path` (relative, with `/`).
    pub fn of_output(path: &str) -> Option<Kind> {
        match path {
            "tools.rs" => Some(Kind::Rust),
            "tools.ts" => Some(Kind::TypeScript),
            p if p.starts_with("schemas/") => Some(Kind::Schemas),
            p if p.starts_with("providers/") => Some(Kind::Providers),
            _ => None,
        }
    }

    /// The kind `--emit` names, by its name or as `ts` or `rs`; `None` for other text.
    pub fn parse(name: &str) -> Option<Kind> {
        match name {
            "ts" => Some(Kind::TypeScript),
            "rs" => Some(Kind::Rust),
            _ => Kind::ALL.into_iter().find(|k| k.name() == name),
        }
    }
}

/// How the outputs are written beyond what the manifests say: one set of settings for the CLI
/// (`--runtime-path`), the build.rs [`crate::Builder`] and the library's emit functions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// The path through which generated Rust reaches the runtime: `::toolc_runtime` (the
    /// default), or where a crate re-exports it (`crate::rt`, `::my_sdk::toolc_runtime`).
    pub runtime_path: String,
    /// How Gemini's declarations carry schemas (`--gemini-schema`): its OpenAPI subset (the
    /// default) or JSON Schema as written.
    pub gemini_schema: providers::GeminiSchema,
    /// How the schemas are written (`--schemas`): a file per schema (the default) or one
    /// bundle.
    pub schema_layout: schemas::SchemaLayout,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            runtime_path: "::toolc_runtime".into(),
            gemini_schema: providers::GeminiSchema::default(),
            schema_layout: schemas::SchemaLayout::default(),
        }
    }
}

impl Config {
    /// The settings' problems, as diagnostics (`toolc::invalid-config`); none when they are
    /// usable. Emitting with an invalid config writes nothing.
    pub fn check(&self) -> Vec<Diagnostic> {
        let mut problems = Vec::new();
        let path = self.runtime_path.trim();
        let plain = syn::parse_str::<syn::Path>(path).is_ok_and(|p| {
            p.segments
                .iter()
                .all(|s| matches!(s.arguments, syn::PathArguments::None))
        });
        if !plain {
            problems.push(
                Diagnostic::error(
                    toolc_core::codes::INVALID_CONFIG,
                    format!("the runtime path `{path}` is not a plain Rust path"),
                )
                .help("give the path through which generated code reaches toolc_runtime, such as `::toolc_runtime` or `crate::rt` (no generics, no spaces inside a name)"),
            );
        }
        problems
    }

    /// The Rust emitter's options for one module.
    pub fn rust_options(&self, server_trait: &str, source: Option<String>) -> rust::RustOptions {
        rust::RustOptions {
            runtime_path: self.runtime_path.trim().to_owned(),
            server_trait: server_trait.to_owned(),
            source,
            gemini_schema: self.gemini_schema,
        }
    }
}

/// Runs the emitters for `kinds`, each on its own thread (they only read the IR). Provider
/// warnings are merged in the order of `kinds`; the outputs are keyed by path, so the result does
/// not depend on which thread finishes first. With an invalid `config` nothing is emitted and
/// its problems are in `diags`.
pub fn emit(ir: &Ir, kinds: &[Kind], config: &Config, diags: &mut Diagnostics) -> Outputs {
    let mut outputs = Outputs::new();
    let collected: Result<(), std::convert::Infallible> =
        emit_each(ir, kinds, config, diags, |out| {
            outputs.extend(out);
            Ok(())
        });
    let Ok(()) = collected;
    outputs
}

/// Like [`emit`], but hands each emitter's outputs to `each` on the calling thread as soon as
/// they are made (an emitter's all at once when it finishes; the provider files one by one), so
/// that they can be written and freed while the others still run. Warnings are
/// merged in the order of `kinds`. The first error of `each` is returned once every emitter has
/// finished; `each` is not called again after it.
pub fn emit_each<E>(
    ir: &Ir,
    kinds: &[Kind],
    config: &Config,
    diags: &mut Diagnostics,
    mut each: impl FnMut(Outputs) -> Result<(), E>,
) -> Result<(), E> {
    emit_made(ir, kinds, config, diags, |made| match made {
        Made::Files(files) => each(files),
        Made::Pieces(path, pieces) => each(Outputs::from([(path, pieces.concat())])),
    })
}

/// Files an emitter made.
enum Made {
    /// Whole files.
    Files(Outputs),
    /// One file (its path) as pieces, written one after the other: `tools.rs` is printed in
    /// parts, and copying them into one string doubled its memory.
    Pieces(String, Vec<String>),
}

/// [`emit_each`], with files as the emitters made them.
fn emit_made<E>(
    ir: &Ir,
    kinds: &[Kind],
    config: &Config,
    diags: &mut Diagnostics,
    mut each: impl FnMut(Made) -> Result<(), E>,
) -> Result<(), E> {
    let problems = config.check();
    if !problems.is_empty() {
        for problem in problems {
            diags.push(problem);
        }
        return Ok(());
    }
    let mut kind_diags: Vec<Option<Diagnostics>> = kinds.iter().map(|_| None).collect();
    let mut result = Ok(());
    // `tools.rs` embeds the provider files: when both are emitted, the providers' emitter hands
    // its texts to the Rust emitter's thread, and they are lowered once.
    let (files_sender, files_receiver) = std::sync::mpsc::channel();
    let mut files_sender = Some(files_sender);
    let mut files_receiver = Some(files_receiver);
    let linked = kinds.contains(&Kind::Rust) && kinds.contains(&Kind::Providers);
    std::thread::scope(|scope| {
        let (sender, receiver) = std::sync::mpsc::channel();
        let handles: Vec<_> = kinds
            .iter()
            .enumerate()
            .map(|(index, &kind)| {
                let sender = sender.clone();
                let link = match kind {
                    Kind::Providers if linked => files_sender.take().map(Link::Give),
                    Kind::Rust if linked => files_receiver.take().map(Link::Take),
                    _ => None,
                };
                scope.spawn(move || {
                    // The receiver outlives every sender: it is dropped after the scope.
                    let send = |made: Made| {
                        let _ = sender.send(Emitted::Made(made));
                    };
                    let diags = emit_one(ir, kind, config, &send, link);
                    let _ = sender.send(Emitted::Finished(index, diags));
                })
            })
            .collect();
        drop(sender);
        for emitted in receiver {
            match emitted {
                Emitted::Made(made) => {
                    if result.is_ok() {
                        result = each(made);
                    }
                }
                Emitted::Finished(index, diags) => kind_diags[index] = Some(diags),
            }
        }
        for handle in handles {
            if let Err(panic) = handle.join() {
                std::panic::resume_unwind(panic);
            }
        }
    });
    for kind_diags in kind_diags.into_iter().flatten() {
        diags.extend(kind_diags);
    }
    result
}

/// `toolc build`: runs the emitters for `kinds` and writes their files under `dir`, each
/// emitter's files as soon as it finishes (while the others still run), all put in place at
/// once at the end ([`OutputWriter`]). Returns what was written, left unchanged and removed; each
/// emitter's text is freed once written (use [`emit_each`] to keep the texts).
///
/// The build owns what it wrote: the folder's record ([`output::RECORD`]) lists the files of
/// the last build, and a file listed there that an emitter of `kinds` no longer writes (the
/// schema of a renamed tool) is removed. Nothing the record does not list is touched.
pub fn emit_into(
    ir: &Ir,
    kinds: &[Kind],
    config: &Config,
    dir: &std::path::Path,
    diags: &mut Diagnostics,
) -> std::io::Result<WriteReport> {
    let problems = config.check();
    if !problems.is_empty() {
        for problem in problems {
            diags.push(problem);
        }
        return Ok(WriteReport::default());
    }
    let previous = output::read_record(dir);
    let mut writer = OutputWriter::begin(dir)?;
    // Only the paths are kept: each emitter's text is freed as soon as it is written, so the
    // largest files (tools.rs, the provider files) are not all held at once.
    let mut paths: BTreeSet<String> = BTreeSet::new();
    emit_made(ir, kinds, config, diags, |made| {
        match made {
            Made::Files(files) => {
                writer.add(&files)?;
                paths.extend(files.into_keys());
            }
            Made::Pieces(path, pieces) => {
                writer.add_pieces(&path, &pieces)?;
                paths.insert(path);
            }
        }
        Ok::<(), std::io::Error>(())
    })?;
    let emitted_now = |path: &str| Kind::of_output(path).is_some_and(|k| kinds.contains(&k));
    let (stale, kept): (Vec<String>, Vec<String>) = previous
        .into_iter()
        .filter(|path| !paths.contains(path))
        .partition(|path| emitted_now(path));
    let mut record: Vec<&str> = paths.iter().map(String::as_str).collect();
    record.extend(kept.iter().map(String::as_str));
    let mut record_file = Outputs::new();
    record_file.insert(output::RECORD.to_owned(), output::record_text(record));
    writer.add(&record_file)?;
    let mut report = writer.commit()?;
    report.written.retain(|p| !p.ends_with(output::RECORD));
    report.unchanged.retain(|p| !p.ends_with(output::RECORD));
    report.removed = output::remove_outputs(dir, &stale);
    Ok(report)
}

/// The warnings that `toolc build` would report for `ir` (a tool that loses strict mode, a
/// keyword a provider drops), without writing anything: what `toolc check` adds to the loader's
/// diagnostics. Only the provider emitters warn.
pub fn output_warnings(ir: &Ir, diags: &mut Diagnostics) {
    output_warnings_with(ir, &Config::default(), diags)
}

/// [`output_warnings`] for outputs written with `config`.
pub fn output_warnings_with(ir: &Ir, config: &Config, diags: &mut Diagnostics) {
    // The Rust plan is one serial pass over every tool: it runs beside the providers' (which
    // take the other cores), and its warnings come after theirs, as in `toolc build`.
    let rust_warnings = std::thread::scope(|scope| {
        let rust = scope.spawn(|| {
            let mut rust_diags = Diagnostics::default();
            rust::untyped_warnings(ir, &mut rust_diags);
            rust_diags
        });
        providers::warnings_with(ir, config.gemini_schema, diags);
        rust.join()
    });
    match rust_warnings {
        Ok(rust_diags) => diags.extend(rust_diags),
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// What an emitter's thread sends to the thread that writes.
enum Emitted {
    /// Files made, to be written.
    Made(Made),
    /// The emitter at this index of `kinds` is done, with these warnings.
    Finished(usize, Diagnostics),
}

/// The provider files passing from the providers' emitter to the Rust emitter, which embeds
/// them in `tools.rs` (`declarations()`).
enum Link {
    /// The providers' end: a copy of every file, in [`providers::Provider::ALL`] order.
    Give(std::sync::mpsc::Sender<Vec<(providers::Provider, String)>>),
    /// The Rust emitter's end.
    Take(std::sync::mpsc::Receiver<Vec<(providers::Provider, String)>>),
}

/// Runs one emitter, handing its files to `send` (the provider files one by one as each is
/// made, so that each is written and freed while the next is made; `tools.rs` in pieces);
/// returns its warnings. The Rust emitter lowers the provider files itself (with their
/// warnings) unless `link` hands it those of the providers' emitter.
fn emit_one(
    ir: &Ir,
    kind: Kind,
    config: &Config,
    send: &(dyn Fn(Made) + Sync),
    link: Option<Link>,
) -> Diagnostics {
    let mut outputs = Outputs::new();
    let mut diags = Diagnostics::default();
    match kind {
        Kind::Schemas => schemas::emit_with(ir, config.schema_layout, &mut outputs),
        Kind::Providers => {
            let copies = match link {
                Some(Link::Give(sender)) => Some((sender, std::sync::Mutex::new(Vec::new()))),
                _ => None,
            };
            providers::emit_each_provider(
                ir,
                config.gemini_schema,
                &mut diags,
                &|provider, text| {
                    if let Some((_, kept)) = &copies {
                        kept.lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .push((provider, text.clone()));
                    }
                    send(Made::Files(Outputs::from([(
                        providers::path(provider),
                        text,
                    )])))
                },
            );
            if let Some((sender, kept)) = copies {
                let mut files = kept
                    .into_inner()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                files.sort_by_key(|(provider, _)| *provider);
                let _ = sender.send(files);
            }
        }
        Kind::Rust => {
            let options = config.rust_options("ToolServer", None);
            let gemini = config.gemini_schema;
            let pieces = rust::generate_in_pieces(ir, &options, &mut diags, |provider_diags| {
                let given = match link {
                    Some(Link::Take(receiver)) => receiver.recv().ok(),
                    _ => None,
                };
                // Lowered here when the providers' emitter does not run (`--emit rust`).
                given.unwrap_or_else(|| providers::files(ir, gemini, provider_diags))
            });
            send(Made::Pieces("tools.rs".into(), pieces));
        }
        Kind::TypeScript => {
            outputs.insert("tools.ts".into(), typescript::generate(ir));
        }
    }
    if !outputs.is_empty() {
        send(Made::Files(outputs));
    }
    diags
}

pub use toolc_core::to_json_text;
