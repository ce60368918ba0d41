//! The `toolc` command line: a thin shim over the library.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use toolc::diagnostic::count;
use toolc::emit::providers::{self, Provider};
use toolc::emit::{self, Kind};
use toolc::output::Created;
use toolc::{Ir, Session};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser, Debug)]
#[command(
    name = "toolc",
    version,
    about = "Checks tool manifests and compiles them into Rust, TypeScript, JSON Schemas and provider declarations."
)]
struct Cli {
    /// How to print diagnostics.
    #[arg(long, global = true, value_enum, default_value_t = MessageFormat::Human)]
    message_format: MessageFormat,
    /// Treat warnings as errors: exit 1, and `build` writes nothing (for CI).
    #[arg(long, global = true)]
    deny_warnings: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum MessageFormat {
    Human,
    Json,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Check manifests and report every problem; writes nothing.
    Check {
        /// Manifest files, or folders searched for `*.tools.yaml`.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// How Gemini's declarations carry schemas, for its warnings: `subset` (Gemini's
        /// OpenAPI subset, the default) or `json-schema` (`parametersJsonSchema`, as written).
        #[arg(long, value_name = "FORM", value_parser = gemini_schema)]
        gemini_schema: Option<providers::GeminiSchema>,
    },
    /// Check manifests and write the outputs into a folder (nothing is written if there are errors).
    Build {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Output folder.
        #[arg(long)]
        out: PathBuf,
        /// Comma-separated outputs: schemas, providers, rust, typescript (default: all).
        #[arg(long, value_delimiter = ',')]
        emit: Vec<String>,
        /// Also write one TypeScript handler stub per client tool into this folder (never overwrites).
        #[arg(long)]
        ts_stubs: Option<PathBuf>,
        /// The path through which the generated Rust reaches the runtime (default
        /// `::toolc_runtime`), for crates that rename or re-export it.
        #[arg(long, value_name = "PATH")]
        runtime_path: Option<String>,
        /// How `providers/gemini.json` carries schemas: `subset` (Gemini's OpenAPI subset,
        /// lowered with warnings; every model accepts it; the default) or `json-schema`
        /// (`parametersJsonSchema` / `responseJsonSchema` as written, for current models).
        #[arg(long, value_name = "FORM", value_parser = gemini_schema)]
        gemini_schema: Option<providers::GeminiSchema>,
        /// How the schemas are written: `files` (`schemas/<tool>.parameters.json` and
        /// `.returns.json`, the default) or `bundle` (one `schemas/tools.json` holding them all
        /// under `$defs`, each with its file's `$id`: for catalogs of thousands of tools).
        #[arg(long, value_name = "LAYOUT", value_parser = schema_layout)]
        schemas: Option<emit::schemas::SchemaLayout>,
    },
    /// Print one provider's declarations to stdout.
    Schema {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// openai-realtime, openai-chat, openai-responses, anthropic, gemini or mcp.
        #[arg(long)]
        provider: String,
        /// With `--provider gemini`: `subset` (the default) or `json-schema`.
        #[arg(long, value_name = "FORM", value_parser = gemini_schema)]
        gemini_schema: Option<providers::GeminiSchema>,
    },
    /// Print the JSON Schema of the manifest format (the content of `toolc.schema.json`).
    ManifestSchema,
    /// Compare two versions of the tools and report every change, and whom it breaks.
    ///
    /// `toolc diff OLD... --against NEW...` compares files or folders; `toolc diff FILES...
    /// --against-git REF` compares the files as they were at REF (old) with the working tree
    /// (new). Exits 1 when a change breaks the audiences looked at, 0 otherwise, 2 when the
    /// versions cannot be read or checked.
    #[command(verbatim_doc_comment)]
    Diff {
        /// The old version (with `--against-git`: the files in the working tree, the new version).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// The new version: manifest files or folders.
        #[arg(
            long,
            num_args = 1..,
            conflicts_with = "against_git",
            required_unless_present = "against_git"
        )]
        against: Vec<PathBuf>,
        /// Compare with FILES as they were at this git revision (a branch, tag or commit).
        #[arg(long, value_name = "REF")]
        against_git: Option<String>,
        /// Judge changes for one audience only: `model` (the arguments it writes) or `code`
        /// (executors, handlers, readers of results, generated names).
        #[arg(long, value_enum)]
        only: Option<OnlyAudience>,
    },
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum OnlyAudience {
    Model,
    Code,
}

/// Exit statuses: 0 success, 1 a manifest has errors, 2 usage or I/O error.
const MANIFEST_ERRORS: u8 = 1;
const USAGE_OR_IO: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(code) => ExitCode::from(code),
    }
}

/// Below this much manifest text, `toolc build` runs without transparent huge pages.
///
/// mimalloc backs its heap with 2 MiB huge pages. A small build's heap is a few tens of MiB
/// spread thinly over them, and they doubled its peak RSS (90 MiB instead of 46 at 1,000 tools,
/// 0.76 MB of YAML) for a few percent of time. A large build's heap fills its huge pages, and
/// they save more time: `check` of 10,000 tools ran 18% slower without them. So they are
/// turned off for builds of fewer than about 5,000 tools.
const SMALL_BUILD_BYTES: u64 = 4 << 20;

/// Turns transparent huge pages off for the rest of the process (see [`SMALL_BUILD_BYTES`]),
/// when the manifests are small. Where the kernel cannot, nothing changes.
fn small_builds_without_huge_pages(files: &[PathBuf]) {
    let bytes: u64 = files
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum();
    if bytes < SMALL_BUILD_BYTES {
        #[cfg(target_os = "linux")]
        let _ = rustix::thread::disable_transparent_huge_pages(true);
    }
}

fn run(cli: &Cli) -> Result<(), u8> {
    match &cli.command {
        Command::Check {
            files,
            gemini_schema,
        } => {
            let (mut session, ir) = compile(cli, files)?;
            let config = emit::Config {
                gemini_schema: gemini_schema.unwrap_or_default(),
                ..emit::Config::default()
            };
            emit::output_warnings_with(&ir, &config, &mut session.diagnostics);
            print_diagnostics(cli, &session);
            let tools = count(ir.tools.len(), "tool");
            let outcome = denied(cli, &session);
            match outcome {
                Ok(()) => eprintln!("checked {tools}: ok"),
                Err(_) => eprintln!("checked {tools}: warnings denied by --deny-warnings"),
            }
            exit_without_freeing((session, ir));
            outcome
        }
        Command::Build {
            files,
            out,
            emit: kinds,
            ts_stubs,
            runtime_path,
            gemini_schema,
            schemas,
        } => {
            small_builds_without_huge_pages(files);
            let kinds = parse_kinds(kinds)?;
            let mut config = emit::Config::default();
            if let Some(path) = runtime_path {
                config.runtime_path = path.clone();
            }
            config.gemini_schema = gemini_schema.unwrap_or_default();
            config.schema_layout = schemas.unwrap_or_default();
            let problems = config.check();
            if !problems.is_empty() {
                let mut session = toolc::Session::new();
                for problem in problems {
                    session.diagnostics.push(problem);
                }
                print_diagnostics(cli, &session);
                return Err(USAGE_OR_IO);
            }
            let (mut session, ir) = compile(cli, files)?;
            if cli.deny_warnings {
                // Nothing is written when a warning is denied, so they are found first.
                emit::output_warnings(&ir, &mut session.diagnostics);
                if let Err(code) = denied(cli, &session) {
                    print_diagnostics(cli, &session);
                    eprintln!("nothing written: warnings denied by --deny-warnings");
                    return Err(code);
                }
            }
            let built = emit::emit_into(&ir, &kinds, &config, out, &mut session.diagnostics);
            print_diagnostics(cli, &session);
            let report = built.map_err(|e| {
                eprintln!("error: cannot write to {}: {e}", out.display());
                USAGE_OR_IO
            })?;
            let mut summary = format!(
                "built {} into {}: {} written, {} unchanged",
                count(ir.tools.len(), "tool"),
                out.display(),
                count(report.written.len(), "file"),
                report.unchanged.len()
            );
            if !report.removed.is_empty() {
                summary.push_str(&format!(
                    ", {} of an earlier build removed",
                    count(report.removed.len(), "file")
                ));
            }
            eprintln!("{summary}");
            if let Some(dir) = ts_stubs {
                let import = toolc::output::relative_import(dir, &out.join("tools.js"));
                write_stubs(&ir, dir, &import)?;
            }
            exit_without_freeing((session, ir));
            Ok(())
        }
        Command::Diff {
            files,
            against,
            against_git,
            only,
        } => diff(cli, files, against, against_git.as_deref(), *only),
        Command::ManifestSchema => {
            let text = toolc::manifest_schema::manifest_json_schema_text();
            std::io::stdout()
                .write_all(text.as_bytes())
                .map_err(|_| USAGE_OR_IO)?;
            Ok(())
        }
        Command::Schema {
            files,
            provider,
            gemini_schema,
        } => {
            let Some(provider) = Provider::parse(provider) else {
                let names: Vec<&str> = Provider::ALL.iter().map(|p| p.name()).collect();
                eprintln!(
                    "error: unknown provider `{provider}`; the providers are {}",
                    names.join(", ")
                );
                return Err(USAGE_OR_IO);
            };
            let (mut session, ir) = compile(cli, files)?;
            let gemini = gemini_schema.unwrap_or_default();
            let text = providers::file_text_with(&ir, provider, gemini, &mut session.diagnostics);
            print_diagnostics(cli, &session);
            std::io::stdout()
                .write_all(text.as_bytes())
                .map_err(|_| USAGE_OR_IO)?;
            Ok(())
        }
    }
}

/// `--gemini-schema`'s value.
fn gemini_schema(name: &str) -> Result<providers::GeminiSchema, String> {
    providers::GeminiSchema::parse(name).ok_or_else(|| {
        format!(
            "`{name}` is not a Gemini schema form; use {}",
            providers::GeminiSchema::NAMES.join(" or ")
        )
    })
}

fn schema_layout(name: &str) -> Result<emit::schemas::SchemaLayout, String> {
    emit::schemas::SchemaLayout::parse(name).ok_or_else(|| {
        format!(
            "`{name}` is not a schema layout; use {}",
            emit::schemas::SchemaLayout::NAMES.join(" or ")
        )
    })
}

/// Exit status of `toolc diff` when a change breaks the audiences looked at.
const BREAKING_CHANGES: u8 = 1;

fn diff(
    cli: &Cli,
    files: &[PathBuf],
    against: &[PathBuf],
    against_git: Option<&str>,
    only: Option<OnlyAudience>,
) -> Result<(), u8> {
    use toolc::diff::{self, Audience};
    let io_error = |e: &dyn std::fmt::Display| {
        eprintln!("error: {e}");
        USAGE_OR_IO
    };
    let (old, new) = match against_git {
        Some(revision) => (
            diff::files_at_revision(files, revision).map_err(|e| io_error(&e))?,
            diff::read_paths(files).map_err(|e| io_error(&e))?,
        ),
        None => (
            diff::read_paths(files).map_err(|e| io_error(&e))?,
            diff::read_paths(against).map_err(|e| io_error(&e))?,
        ),
    };
    let only = only.map(|o| match o {
        OnlyAudience::Model => Audience::Model,
        OnlyAudience::Code => Audience::Code,
    });
    let comparison = diff::compare_sources(old, new);
    let session = &comparison.session;
    let Some(changes) = &comparison.changes else {
        print_diagnostics(cli, session);
        eprintln!("cannot compare: a version has errors");
        return Err(USAGE_OR_IO);
    };
    // Warnings of either version are `toolc check`'s business: stdout holds only the changes.
    let summary = diff::Summary::of(changes, only);
    match cli.message_format {
        MessageFormat::Human => {
            let colour = std::io::stdout().is_terminal();
            let text = diff::render_human(&session.sources, changes, only, colour);
            print!("{text}");
        }
        MessageFormat::Json => print!("{}", diff::render_json(&session.sources, changes, only)),
    }
    if summary.breaking > 0 {
        Err(BREAKING_CHANGES)
    } else {
        Ok(())
    }
}

fn parse_kinds(names: &[String]) -> Result<Vec<Kind>, u8> {
    if names.is_empty() {
        return Ok(Kind::ALL.to_vec());
    }
    names
        .iter()
        .map(|n| {
            Kind::parse(n.trim()).ok_or_else(|| {
                let all: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
                eprintln!(
                    "error: unknown output kind `{n}`; the kinds are {}",
                    all.join(", ")
                );
                USAGE_OR_IO
            })
        })
        .collect()
}

/// Loads and checks; on errors prints them and fails. Warnings are printed by the caller, after
/// the emitters have added theirs.
fn compile(cli: &Cli, files: &[PathBuf]) -> Result<(Session, Ir), u8> {
    let mut session = Session::new();
    let paths = toolc::manifest_paths(files).map_err(|e| {
        eprintln!("error: {e}");
        USAGE_OR_IO
    })?;
    for path in paths {
        if let Err(e) = session.add_path(&path) {
            eprintln!("error: cannot read {}: {e}", path.display());
            return Err(USAGE_OR_IO);
        }
    }
    match session.check() {
        Some(ir) => Ok((session, ir)),
        None => {
            print_diagnostics(cli, &session);
            Err(MANIFEST_ERRORS)
        }
    }
}

/// With `--deny-warnings`, a warning fails the command like an error.
fn denied(cli: &Cli, session: &Session) -> Result<(), u8> {
    if cli.deny_warnings && session.diagnostics.warning_count() > 0 {
        Err(MANIFEST_ERRORS)
    } else {
        Ok(())
    }
}

fn print_diagnostics(cli: &Cli, session: &Session) {
    if session.diagnostics.is_empty() {
        return;
    }
    let text = match cli.message_format {
        MessageFormat::Human => session.render(std::io::stderr().is_terminal()),
        MessageFormat::Json => session.render_json(),
    };
    match cli.message_format {
        MessageFormat::Human => eprint!("{text}"),
        MessageFormat::Json => print!("{text}"),
    }
}

/// Writes each client tool's stub that does not exist yet; `import` is where the stubs find
/// `tools.ts` (compiled to `tools.js`) from `dir`.
fn write_stubs(ir: &Ir, dir: &Path, import: &str) -> Result<(), u8> {
    let stubs = emit::typescript::stubs_importing(ir, import);
    let done = toolc::output::write_missing(dir, &stubs).map_err(|e| {
        eprintln!("error: {e}");
        USAGE_OR_IO
    })?;
    for (path, created) in done {
        match created {
            Created::Written => eprintln!("wrote   {}", path.display()),
            Created::Kept => eprintln!("kept    {}", path.display()),
        }
    }
    Ok(())
}

/// Leaves the manifest's trees and the generated text to the operating system, which takes the
/// whole address space back at once when the process exits: freeing hundreds of thousands of
/// small allocations one by one was several milliseconds of a 1,000-tool build.
fn exit_without_freeing<T>(everything: T) {
    std::mem::forget(everything);
}
