//! toolc from Rust fns, two ways:
//!
//! - [`support`]: executors for the server tools of `manifests/support.tools.yaml`, checked
//!   against the manifest at compile time, and declarations of its client tools;
//! - [`notes`]: a tool set defined in Rust alone, whose definitions reach every output the
//!   manifest path has (see `src/bin/emit_notes.rs`).

pub mod notes;
pub mod support;
