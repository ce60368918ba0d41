//! toolc-runtime: what generated code and applications link.
//!
//! - [`Registry`]: tool definitions plus one executor per server tool, checked against the
//!   location rule when it is built; calls are parsed, validated against schemas compiled once,
//!   deserialized, run under the tool's timeout with panics caught, checked against `returns`
//!   and serialized. Every failure is a [`CallError`] that reads well to a model.
//! - [`include_tools!`]: pulls in the module that `toolc::Builder` generated in a build script.
//! - [`load_definitions`]: manifests loaded at run time, for registries assembled dynamically.
#![warn(missing_docs)]

#[cfg(feature = "catalog")]
pub mod catalog;
pub mod chat;
mod content;
pub mod context;
pub mod dispatch;
pub mod engine;
pub mod error;
pub mod executor;
pub mod live;
#[doc(hidden)]
pub mod macro_support;
pub mod markers;
#[cfg(any(feature = "mcp", feature = "mcp-client"))]
pub mod mcp;
pub mod realtime;
pub mod registry;
#[cfg(feature = "relay")]
pub mod relay;
pub mod telemetry;
pub mod tool;
mod toolsets;

use std::path::Path;

pub use content::{ContentBlock, EmbeddedResource, ToolContent};
pub use context::{ApprovalGrant, CallContext, Principal, Progress, ProgressSink, SessionScope};
pub use error::{CallError, CallErrorKind, Problem, RegistryError, ToolError, Violation};
pub use executor::{
    executor_fn, executor_fn_with_context, typed_executor, typed_executor_with_context, Executor,
    ToolFuture,
};
pub use registry::{Registry, RegistryBuilder};
pub use tool::Tool;
pub use toolc_core::definition::{
    Annotations, Approval, CallPolicy, Location, Mode, OnDuplicate, Scheduling, ToolDefinition,
    DEFAULT_CLIENT_TIMEOUT, DEFAULT_DUPLICATE_WINDOW,
};
/// `#[tool]` derives a tool from a fn signature; `tools![...]` assembles a registry builder.
pub use toolc_macros::{tool, tools};
pub use toolsets::{ToolSelection, Toolset, UnknownToolset};

/// Includes the Rust module that `toolc::Builder` wrote to `OUT_DIR` for a manifest:
/// `mod support { toolc_runtime::include_tools!("support"); }` for `support.tools.yaml`.
#[macro_export]
macro_rules! include_tools {
    ($name:literal) => {
        ::core::include!(::core::concat!(::core::env!("OUT_DIR"), "/", $name, ".rs"));
    };
}

/// Manifests that failed to load at run time; `rendered` holds every diagnostic as text. The
/// same type as a failed build's (`toolc::BuildError`).
pub type LoadError = toolc_core::Error;

/// Loads and checks manifests at run time (the same checks as the build), returning the tool
/// definitions in declaration order. A folder stands for its `*.tools.yaml` files, as for the
/// CLI.
pub fn load_definitions<P: AsRef<Path>>(
    paths: impl IntoIterator<Item = P>,
) -> Result<Vec<ToolDefinition>, LoadError> {
    let mut session = toolc_core::Session::new();
    let given: Vec<std::path::PathBuf> = paths.into_iter().map(|p| p.as_ref().to_owned()).collect();
    let files = toolc_core::manifest_paths(&given).map_err(|e| LoadError {
        rendered: format!("error: {e}\n"),
    })?;
    for path in &files {
        if let Err(e) = session.add_path(path) {
            return Err(LoadError {
                rendered: format!("error: cannot read {}: {e}\n", path.display()),
            });
        }
    }
    finish(session)
}

/// Loads one manifest from memory; `name` is used in diagnostics.
pub fn definitions_from_str(name: &str, yaml: &str) -> Result<Vec<ToolDefinition>, LoadError> {
    let mut session = toolc_core::Session::new();
    session.add_manifest(name, yaml.as_bytes());
    finish(session)
}

fn finish(mut session: toolc_core::Session) -> Result<Vec<ToolDefinition>, LoadError> {
    match session.check() {
        Some(ir) => Ok(ir.definitions()),
        None => Err(LoadError {
            rendered: session.render(false),
        }),
    }
}

/// What generated code reaches through one path, so users depend on `toolc-runtime` alone.
#[doc(hidden)]
pub mod __private {
    /// What `#[tool]` and `tools!` expand to.
    pub use crate::macro_support as fns;
    pub use serde;
    pub use serde_json;
    pub use std;

    pub use crate::context::CallContext;
    pub use crate::executor::{typed_executor, typed_executor_with_context};

    /// Parses a schema literal that toolc generated from a checked manifest.
    pub fn schema(text: &str) -> serde_json::Value {
        match serde_json::from_str(text) {
            Ok(value) => value,
            // toolc writes these literals with serde_json from values it parsed; failing here is
            // a toolc bug, not a user or model error.
            Err(e) => panic!("toolc generated an invalid schema literal: {e}"),
        }
    }
}
