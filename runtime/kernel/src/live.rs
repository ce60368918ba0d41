//! Tools that come and go while sessions run, such as a remote catalog's
//! (the catalog crate's `LiveCatalog`). A realtime session with [`LiveTools`]
//! (`SessionConfig::live_tools`) sends a call of a name its registry does not know to them
//! instead of failing it as `unknown_tool`, and when their declarations change it declares the
//! new set to the model at the next safe point: a `session.update` between responses, before
//! the next `response.create`.

use std::sync::Arc;

use serde_json::Value;

use crate::{CallContext, ToolDefinition, ToolFuture};

/// A source of server tools that may change while sessions run.
pub trait LiveTools: Send + Sync + 'static {
    /// The tools' definitions now, and a generation number that changes whenever they do.
    /// Each session declares them in its provider's shape.
    fn current(&self) -> (u64, Arc<Vec<ToolDefinition>>);

    /// Whether `name` is or was one of these tools: its declaration in the session is theirs to
    /// replace or remove.
    fn is_live(&self, name: &str) -> bool;

    /// Whether the live tool `name` runs only for a signed-in user; the text-marker catalog
    /// says so to the model. The default: none does.
    fn requires_auth(&self, name: &str) -> bool {
        let _ = name;
        false
    }

    /// Runs a call of a tool the registry does not know, with arguments that are JSON but not
    /// yet checked (the source validates them against its own schema). A tool it does not have
    /// either fails with a readable error.
    fn call(&self, ctx: CallContext, name: &str, arguments: Value) -> ToolFuture;
}
