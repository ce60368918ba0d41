//! toolc-core: what every part of toolc shares, and all the runtime needs of the compiler.
//!
//! The front end in layers: YAML with spans ([`yaml`]) → validated tools ([`manifest`],
//! `schema_check`, `schema_semantics`) → cross-item checks (`checks`) → the [`ir::Ir`].
//! Every stage pushes problems into one [`Diagnostics`] context, so a user sees all of them at
//! once. The code generators live in the `toolc` crate; the runtime (`toolc-runtime`) and the
//! macros (`toolc-macros`) depend on this crate only, so an application that routes calls does
//! not build them.
#![warn(missing_docs)]

mod checks;
pub mod codes;
pub mod content;
pub mod declare;
pub mod definition;
pub mod diagnostic;
pub mod ident;
pub mod ir;
pub mod manifest;
pub mod manifest_schema;
#[doc(hidden)]
pub mod name_set;
#[doc(hidden)]
pub mod parallel;
pub mod provider;
mod schema_check;
mod schema_semantics;
pub mod schema_util;
pub mod source;
pub mod strict;
pub mod suggest;
#[doc(hidden)]
pub mod synthetic;
pub mod yaml;

use std::path::Path;

pub use definition::{
    Annotations, Approval, CallPolicy, Location, Mode, OnDuplicate, RateLimit, RateScope,
    RetryPolicy, Scheduling, ToolDefinition, DEFAULT_CLIENT_TIMEOUT, DEFAULT_DUPLICATE_WINDOW,
};
pub use diagnostic::{Diagnostic, Diagnostics, HumanRenderer, Severity};
pub use ir::{Ir, IrTool};
pub use source::{FileId, SourceMap, Span};

/// "It failed": every diagnostic of a failed load or build, rendered as text. The one error
/// type of toolc's entry points (`toolc::Builder`, `toolc_runtime::load_definitions`).
#[derive(Clone, PartialEq, Eq)]
pub struct Error {
    /// Every diagnostic of the failure, as plain text without colour.
    pub rendered: String,
}

// `fn main() -> Result<(), Error>` prints the error with `Debug`: the rendered text, not a struct.
impl std::fmt::Debug for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.rendered.trim_end())
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.rendered.trim_end())
    }
}

impl std::error::Error for Error {}

/// Pretty JSON with a final newline; key order is the IR's (source order), so it is deterministic.
pub fn to_json_text(value: &serde_json::Value) -> String {
    let mut text = serde_json::to_string_pretty(value).expect("JSON values always serialise");
    text.push('\n');
    text
}

/// One compilation: the files read, the problems found, and (when there were no errors) the IR.
#[derive(Debug, Default)]
pub struct Session {
    /// Every file read, so that diagnostics can quote them.
    pub sources: SourceMap,
    /// Every problem found so far, errors and warnings.
    pub diagnostics: Diagnostics,
    /// The limits each manifest is parsed under; set them before `check`.
    pub limits: yaml::Limits,
    manifests: Vec<FileId>,
}

impl Session {
    /// An empty session with the default limits.
    pub fn new() -> Session {
        Session::default()
    }

    /// Adds a manifest from memory. Bytes that are not UTF-8 are reported with their position.
    pub fn add_manifest(&mut self, name: &str, bytes: &[u8]) -> Option<FileId> {
        match std::str::from_utf8(bytes) {
            Ok(text) => Some(self.add_text(name.to_owned(), text.to_owned())),
            Err(e) => {
                let valid = &bytes[..e.valid_up_to()];
                let text = String::from_utf8_lossy(valid).into_owned();
                let at = text.len();
                let id = self.sources.add(name, text);
                self.diagnostics.push(
                    Diagnostic::error("toolc::invalid-utf8", "the manifest is not valid UTF-8")
                        .at(
                            Span::new(id, at, at),
                            "invalid byte sequence after this point",
                        )
                        .help("save the file as UTF-8"),
                );
                None
            }
        }
    }

    /// Reads a manifest from disk.
    pub fn add_path(&mut self, path: &Path) -> std::io::Result<Option<FileId>> {
        let bytes = std::fs::read(path)?;
        // The text is kept as read, not copied: megabytes for a large catalog.
        Ok(match String::from_utf8(bytes) {
            Ok(text) => Some(self.add_text(path.display().to_string(), text)),
            Err(e) => self.add_manifest(&path.display().to_string(), e.as_bytes()),
        })
    }

    /// A manifest known to be text, to be checked with the others.
    fn add_text(&mut self, name: String, text: String) -> FileId {
        let id = self.sources.add(name, text);
        self.manifests.push(id);
        id
    }

    /// Loads and checks every manifest added. Returns the IR when there are no errors; warnings
    /// stay in [`Session::diagnostics`] either way.
    pub fn check(&mut self) -> Option<Ir> {
        let files = self.manifests.clone();
        let ir = self.check_files(&files);
        // A file that could not be added (not UTF-8) fails the compilation too.
        ir.filter(|_| !self.diagnostics.has_errors())
    }

    /// Loads and checks only `files` (each added before), as one set of tools: how `toolc diff`
    /// holds two versions in one session, so that diagnostics and changes can quote both.
    /// Returns the IR when these files have no errors.
    pub fn check_files(&mut self, files: &[FileId]) -> Option<Ir> {
        let errors_before = self.diagnostics.error_count();
        let mut tools = Vec::new();
        for &file in files {
            tools.extend(manifest::load_file(
                &self.sources,
                file,
                self.limits,
                &mut self.diagnostics,
            ));
        }
        checks::check_tools(&tools, &mut self.diagnostics);
        if self.diagnostics.error_count() > errors_before {
            None
        } else {
            Some(Ir { tools })
        }
    }

    /// The diagnostics as text; with `colour`, ANSI colours for a terminal.
    pub fn render(&self, colour: bool) -> String {
        HumanRenderer { colour }.render(&self.sources, &self.diagnostics)
    }

    /// The diagnostics as JSON, one object per diagnostic, for editors and CI.
    pub fn render_json(&self) -> String {
        diagnostic::render_json(&self.sources, &self.diagnostics)
    }
}

/// The manifest files that `paths` name: a file as it is, a folder as its `*.tools.yaml` files
/// (sorted, so that the order is stable). A folder without any is an error, since it is almost
/// always the wrong folder. A file named twice (`dir dir/a.tools.yaml`, `x ./x`, a symlink) is
/// read once, where it is first named: otherwise its tools would clash with themselves.
pub fn manifest_paths(paths: &[std::path::PathBuf]) -> std::io::Result<Vec<std::path::PathBuf>> {
    let mut seen = std::collections::HashSet::new();
    let mut unique = Vec::new();
    for path in expand_folders(paths)? {
        // A path that cannot be resolved (it does not exist) is kept, for its read to fail
        // with its own name.
        let key = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
        if seen.insert(key) {
            unique.push(path);
        }
    }
    Ok(unique)
}

fn expand_folders(paths: &[std::path::PathBuf]) -> std::io::Result<Vec<std::path::PathBuf>> {
    let mut out = Vec::new();
    for path in paths {
        if !path.is_dir() {
            out.push(path.clone());
            continue;
        }
        let cannot_read = |e: std::io::Error| {
            std::io::Error::new(e.kind(), format!("cannot read {}: {e}", path.display()))
        };
        let mut found = Vec::new();
        for entry in std::fs::read_dir(path).map_err(cannot_read)? {
            let entry_path = entry.map_err(cannot_read)?.path();
            if entry_path.to_string_lossy().ends_with(".tools.yaml") {
                found.push(entry_path);
            }
        }
        if found.is_empty() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("{} holds no *.tools.yaml files", path.display()),
            ));
        }
        found.sort();
        out.extend(found);
    }
    Ok(out)
}
