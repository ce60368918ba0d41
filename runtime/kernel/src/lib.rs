//! toolc-kernel: what every toolc adapter shares; `toolc-runtime` re-exports it whole.
//!
//! - [`Registry`]: tool definitions plus one executor per server tool, checked against the
//!   location rule when it is built; calls are parsed, validated against schemas compiled once,
//!   deserialized, run under the tool's timeout with panics caught, checked against `returns`
//!   and serialized. Every failure is a [`CallError`] that reads well to a model.
//! - [`load_definitions`]: manifests loaded at run time, for registries assembled dynamically.
//! - [`engine`]: the call engine, where every rule a call goes through is written once (toolsets,
//!   validation, repeats, approval, background), and [`dispatch`], its vocabulary (calls, routes,
//!   outcomes, the client path). The realtime session, the chat runner and the MCP server are
//!   adapters over it, each in its own crate.
#![warn(missing_docs)]

mod content;
pub mod context;
pub mod dispatch;
pub mod engine;
pub mod error;
pub mod executor;
pub mod live;
#[doc(hidden)]
pub mod macro_support;
pub mod registry;
pub mod telemetry;
pub mod tool;
mod toolsets;

use std::path::Path;

pub use content::{ContentBlock, EmbeddedResource, ToolContent};
pub use context::{ApprovalGrant, CallContext, Principal, Progress, ProgressSink, SessionScope};
pub use error::{
    CallError, CallErrorKind, Problem, RegistryError, ToolError, Violation,
    LIMITS_UNAVAILABLE_RETRY_AFTER,
};
pub use executor::{
    executor_fn, executor_fn_with_context, typed_executor, typed_executor_with_context, Executor,
    ToolFuture,
};
pub use registry::{Registry, RegistryBuilder};
pub use tool::Tool;
pub use toolc_core::definition::{
    Annotations, Approval, CallPolicy, Location, Mode, OnDuplicate, RateLimit, RateScope,
    RetryPolicy, Scheduling, ToolDefinition, DEFAULT_CLIENT_TIMEOUT, DEFAULT_DUPLICATE_WINDOW,
};
/// The APIs whose tool declarations toolc writes (the CLI's provider files, a generated module's
/// `declarations(..)`) and whose chat messages it speaks.
pub use toolc_core::provider::Provider;
pub use toolsets::{ToolSelection, Toolset, UnknownToolset};

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
