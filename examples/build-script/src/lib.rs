//! A support desk's server tools, compiled from `manifests/support.tools.yaml` by `build.rs`.
//!
//! `support::SupportServer` has one method per server tool of the manifest; `SupportDesk`
//! implements it, so a server tool without an executor (or an executor for a tool that became a
//! client tool) does not compile. `support::registry(SupportDesk::new())` is the runtime registry
//! that routes the model's calls.

pub mod support {
    toolc_runtime::include_tools!("support");
}

mod server;

pub use server::SupportDesk;
