//! Proc macros for toolc, as thin shims over the `toolc` core (`toolc::fn_tools`): they parse
//! with syn, ask the core what a signature means and whether it agrees with a manifest, turn
//! every problem into a `syn::Error` on the user's own tokens (all of them, not only the first),
//! and generate code that reaches the runtime only through `<crate>::__private::fns`.
//!
//! Use them through `toolc-runtime`, which re-exports them: `toolc_runtime::tool`,
//! `toolc_runtime::tools`.
#![warn(missing_docs)]

use proc_macro::TokenStream;

mod common;
mod fn_tools;
mod tool;
mod tools;

/// Derives a tool from a fn: its name is the fn's (or `name = "..."`), its description the doc
/// comment, its parameters the fn's parameters, its `returns` schema the success type.
///
/// Options: `name = "..."`, `client` (a bodiless declaration of a browser tool),
/// `manifest = "path"` (relative to `CARGO_MANIFEST_DIR`; the signature is checked against the
/// manifest's tool at compile time), `description = "..."`, `timeout = "5s"`,
/// `wait_for_response = false`, `approval = "required"`, `mode = "async"` (server tools; see
/// the README's call behaviours), `crate = path` (where `toolc_runtime` is).
///
/// On parameters: `#[arg(name = "...", description = "...")]`, or `#[args]` on the only
/// parameter to take one struct deriving `JsonSchema` + `Deserialize`.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    tool::expand(attr.into(), item.into()).into()
}

/// Assembles a `RegistryBuilder` from `#[tool]` fns: `tools![search, highlight]`.
///
/// `tools!(manifest = "path"; search, ...)` also adds every definition of the manifest and
/// fails to compile when a server tool of the manifest has no listed executor, or a listed tool
/// is not bound to that manifest.
///
/// `tools!(builder = expression; search, ...)` adds the tools to that `RegistryBuilder` instead
/// of a new one: `tools!(builder = orders::registry_builder(Shop); add)` puts `#[tool]` fns
/// beside a generated module's typed tools (options combine: `builder = b, manifest = "..."`).
#[proc_macro]
pub fn tools(input: TokenStream) -> TokenStream {
    tools::expand(input.into()).into()
}
