//! toolc: the one core behind the `toolc` CLI, the build.rs [`Builder`] and the `#[tool]` macros.
//!
//! The front end (YAML with spans, manifest loading, schema checks, cross-item checks, the IR)
//! is the `toolc-core` crate, re-exported here under the same paths; this crate adds the
//! emitters ([`emit`]), output writing ([`output`]), [`diff`] and the [`Builder`]. Every stage
//! pushes problems into one [`Diagnostics`] context, so a user sees all of them at once.
#![warn(missing_docs)]

pub mod builder;
pub mod diff;
pub mod emit;
pub mod output;

pub use toolc_core::{
    definition, diagnostic, ident, ir, manifest, manifest_paths, manifest_schema, yaml, Error,
    Session,
};
#[doc(hidden)]
pub use toolc_core::{name_set, parallel, synthetic};

pub use builder::Builder;
pub use definition::{
    Annotations, Approval, CallPolicy, Location, Mode, ToolDefinition, DEFAULT_CLIENT_TIMEOUT,
};
pub use diagnostic::{Diagnostic, Diagnostics, HumanRenderer, Severity};
pub use ir::{Ir, IrTool};
pub use toolc_core::{FileId, SourceMap, Span};
