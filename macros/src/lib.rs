//! Proc macros for toolc: thin shims over the `toolc` core. (The `#[tool]` attribute is built by
//! the macro work.)
