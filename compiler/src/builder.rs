//! The build.rs entry point, in the style of prost-build:
//!
//! ```no_run
//! // In build.rs's `fn main()`:
//! toolc::Builder::new()
//!     .manifest("../manifests/support.tools.yaml")
//!     .compile_for_cargo();
//! ```
//!
//! (`fn main() -> Result<(), BuildError>` with `.compile()` works as well, prost-style.)
//!
//! Each manifest becomes `OUT_DIR/<stem>.rs` (`support.tools.yaml` → `support.rs`), which
//! `toolc_runtime::include_tools!("support")` pulls in. Files are rewritten only when their content
//! changes, `cargo::rerun-if-changed` is printed for every file read, and diagnostics are printed
//! as `cargo::error=` / `cargo::warning=` lines so that cargo shows them cleanly.
//!
//! The module is the one `toolc build` writes as `tools.rs`, its server trait named after the
//! manifest: the argument and output types, the server trait, `definitions()`,
//! `registry_builder(server)` (the manifest's tools and typed executors, for other tool sources
//! to join before `.build()`), `registry(server)`, and `declarations(provider)`: each provider
//! file of `toolc build` (`providers/*.json`), byte for byte, as a string. Its warnings are
//! those of `toolc build` for the module and the provider files.

use std::path::{Path, PathBuf};

use crate::emit::rust::{generate_with_warnings, server_trait_for};
use crate::emit::Config;
use crate::output::write_if_changed;
use crate::Session;

/// Compiles manifests from a build script into Rust modules in `OUT_DIR`.
#[derive(Debug, Clone)]
pub struct Builder {
    manifests: Vec<PathBuf>,
    out_dir: Option<PathBuf>,
    config: Config,
    cargo_directives: bool,
    baseline: Option<String>,
    deny_breaking: bool,
}

impl Default for Builder {
    fn default() -> Builder {
        Builder {
            manifests: Vec::new(),
            out_dir: None,
            config: Config::default(),
            cargo_directives: true,
            baseline: None,
            deny_breaking: false,
        }
    }
}

/// What one compiled manifest produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generated {
    /// The manifest's path, as given to the builder.
    pub manifest: PathBuf,
    /// The module name `include_tools!` takes.
    pub module: String,
    /// The generated Rust file, `<module>.rs` in the output folder.
    pub path: PathBuf,
    /// Whether the file was (re)written; `false` when its content was already up to date.
    pub written: bool,
}

/// A failed build: every diagnostic, rendered as text (toolc's one error type).
pub type BuildError = toolc_core::Error;

impl Builder {
    /// A builder with no manifests that writes to `$OUT_DIR` and prints cargo directives.
    pub fn new() -> Builder {
        Builder::default()
    }

    /// Adds a manifest; relative paths are relative to the package (build scripts run there).
    pub fn manifest(mut self, path: impl Into<PathBuf>) -> Builder {
        self.manifests.push(path.into());
        self
    }

    /// Adds each of `paths` as a manifest (see `Builder::manifest`).
    pub fn manifests<P: Into<PathBuf>>(mut self, paths: impl IntoIterator<Item = P>) -> Builder {
        self.manifests.extend(paths.into_iter().map(Into::into));
        self
    }

    /// Where to write the modules; defaults to `$OUT_DIR`.
    pub fn out_dir(mut self, dir: impl Into<PathBuf>) -> Builder {
        self.out_dir = Some(dir.into());
        self
    }

    /// How `providers/gemini.json` carries schemas: Gemini's OpenAPI subset (the default,
    /// lowered with warnings) or JSON Schema as written (`parametersJsonSchema`), which current
    /// models accept (the CLI's `--gemini-schema`).
    pub fn gemini_schema(mut self, form: crate::emit::providers::GeminiSchema) -> Builder {
        self.config.gemini_schema = form;
        self
    }

    /// The path through which generated code reaches the runtime (default `::toolc_runtime`),
    /// for crates that rename or re-export it.
    pub fn runtime_path(mut self, path: impl Into<String>) -> Builder {
        self.config.runtime_path = path.into();
        self
    }

    /// The settings the CLI and the library's emitters share ([`Config`]); an invalid one fails
    /// the build with its diagnostics.
    pub fn config(mut self, config: Config) -> Builder {
        self.config = config;
        self
    }

    /// Whether to print `cargo::` directives (default `true`; turn off outside build scripts).
    pub fn cargo_directives(mut self, on: bool) -> Builder {
        self.cargo_directives = on;
        self
    }

    /// Compares each manifest with itself as it was at a git revision (a branch, tag or
    /// commit; see `toolc diff --against-git`) and reports the changes that break the model or
    /// code as warnings, or as errors with [`Builder::deny_breaking_changes`]. A manifest that
    /// did not exist at the revision is all new, which breaks nothing.
    pub fn baseline_git(mut self, revision: impl Into<String>) -> Builder {
        self.baseline = Some(revision.into());
        self
    }

    /// With a baseline, a breaking change fails the build instead of warning.
    pub fn deny_breaking_changes(mut self, deny: bool) -> Builder {
        self.deny_breaking = deny;
        self
    }

    /// Compiles every manifest. Each is checked on its own (each becomes its own module), and
    /// all problems of all manifests are reported before failing.
    pub fn compile(self) -> Result<(), BuildError> {
        self.compile_report().map(|_| ())
    }

    /// For `fn main()` of a build script: compiles, and on failure leaves the failing to cargo,
    /// which prints the `cargo::error=` lines cleanly and fails the build once the script exits.
    /// (`compile()?` fails it too, but cargo then also dumps the script's whole output.)
    pub fn compile_for_cargo(self) {
        let cargo_directives = self.cargo_directives;
        if let Err(e) = self.compile() {
            if !cargo_directives {
                eprintln!("{e}");
            }
        }
    }

    /// Like [`Builder::compile`], returning what was generated.
    pub fn compile_report(self) -> Result<Vec<Generated>, BuildError> {
        let out_dir = match self.out_dir.clone().or_else(|| std::env::var_os("OUT_DIR").map(PathBuf::from)) {
            Some(dir) => dir,
            None => {
                return Err(self.fail(
                    "error: OUT_DIR is not set: call toolc::Builder from a build script, or set `.out_dir(...)`\n"
                        .to_owned(),
                ))
            }
        };
        let problems = self.config.check();
        if !problems.is_empty() {
            let mut diagnostics = crate::Diagnostics::default();
            for problem in problems {
                diagnostics.push(problem);
            }
            let rendered = crate::HumanRenderer { colour: false }
                .render(&crate::SourceMap::default(), &diagnostics);
            return Err(self.fail(rendered));
        }
        let mut rendered = String::new();
        let mut generated = Vec::new();
        let mut modules: Vec<(String, &Path)> = Vec::new();
        for manifest in &self.manifests {
            if self.cargo_directives {
                println!("cargo::rerun-if-changed={}", manifest.display());
            }
            let module = module_name(manifest);
            if let Some((_, first)) = modules.iter().find(|(m, _)| *m == module) {
                rendered.push_str(&format!(
                    "error: `{}` and `{}` would both be written to `{module}.rs`: rename one of them\n",
                    first.display(),
                    manifest.display()
                ));
                continue;
            }
            modules.push((module.clone(), manifest));
            let mut session = Session::new();
            if let Err(e) = session.add_path(manifest) {
                rendered.push_str(&format!(
                    "error: cannot read manifest `{}`: {e}\n",
                    manifest.display()
                ));
                continue;
            }
            let ir = session.check();
            // The module, and with it the warnings of what it holds: the places it leaves
            // untyped and the provider files `declarations()` gives.
            let options = self.config.rust_options(
                &server_trait_for(&module),
                Some(manifest.display().to_string().replace('\\', "/")),
            );
            let code = ir
                .as_ref()
                .map(|ir| generate_with_warnings(ir, &options, &mut session.diagnostics));
            let text = session.render(false);
            match code {
                Some(code) => {
                    if !text.trim().is_empty() && self.cargo_directives {
                        for line in text.lines() {
                            println!("cargo::warning={line}");
                        }
                    }
                    if let Some(revision) = &self.baseline {
                        match self.breaking_changes(manifest, revision) {
                            Ok(report) if report.is_empty() => {}
                            Ok(report) if self.deny_breaking => {
                                rendered.push_str(&report);
                                continue;
                            }
                            Ok(report) => {
                                if self.cargo_directives {
                                    for line in report.lines() {
                                        println!("cargo::warning={line}");
                                    }
                                }
                            }
                            Err(e) => {
                                rendered.push_str(&format!("error: {e}\n"));
                                continue;
                            }
                        }
                    }
                    let path = out_dir.join(format!("{module}.rs"));
                    match write_if_changed(&path, &code) {
                        Ok(written) => generated.push(Generated {
                            manifest: manifest.clone(),
                            module,
                            path,
                            written,
                        }),
                        Err(e) => rendered
                            .push_str(&format!("error: cannot write `{}`: {e}\n", path.display())),
                    }
                }
                None => rendered.push_str(&text),
            }
        }
        if rendered.is_empty() {
            Ok(generated)
        } else {
            Err(self.fail(rendered))
        }
    }

    /// The breaking changes of `manifest` since `revision`, rendered; empty when there are none.
    fn breaking_changes(&self, manifest: &Path, revision: &str) -> Result<String, String> {
        let old = crate::diff::files_at_revision(&[manifest.to_path_buf()], revision)
            .map_err(|e| format!("cannot read the baseline of `{}`: {e}", manifest.display()))?;
        let new = crate::diff::read_paths(&[manifest.to_path_buf()]).map_err(|e| e.to_string())?;
        let comparison = crate::diff::compare_sources(old, new);
        let Some(changes) = comparison.changes else {
            return Err(format!(
                "the baseline of `{}` at `{revision}` has errors:\n{}",
                manifest.display(),
                comparison.session.render(false)
            ));
        };
        let breaking: Vec<_> = changes
            .into_iter()
            .filter(|c| c.is_breaking(None))
            .collect();
        if breaking.is_empty() {
            return Ok(String::new());
        }
        Ok(crate::diff::render_human(
            &comparison.session.sources,
            &breaking,
            None,
            false,
        ))
    }

    fn fail(&self, rendered: String) -> BuildError {
        if self.cargo_directives {
            // One directive per line: cargo shows each as `error: <line>` and fails the build.
            for line in rendered.lines() {
                println!("cargo::error={line}");
            }
        }
        BuildError { rendered }
    }
}

/// `manifests/support.tools.yaml` → `support`; also strips `.yaml`/`.yml` alone.
pub fn module_name(manifest: &Path) -> String {
    let file = manifest
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = [".tools.yaml", ".tools.yml", ".yaml", ".yml"]
        .iter()
        .find_map(|ext| file.strip_suffix(ext))
        .unwrap_or(&file);
    crate::ident::snake_case(stem)
}
