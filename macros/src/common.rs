//! What both macros share: the error accumulator, the runtime path, and manifest resolution.

use std::path::PathBuf;
use std::sync::Arc;

use crate::fn_tools::{Manifest, ManifestError};
use proc_macro2::{Span, TokenStream};
use quote::ToTokens;

/// Errors pushed as they are found and reported together, in the style of serde_derive's `Ctxt`.
#[derive(Default)]
pub struct Errors {
    errors: Vec<syn::Error>,
}

impl Errors {
    pub fn push(&mut self, error: syn::Error) {
        self.errors.push(error);
    }

    pub fn at(&mut self, span: Span, message: impl std::fmt::Display) {
        self.push(syn::Error::new(span, message));
    }

    pub fn on(&mut self, tokens: impl ToTokens, message: impl std::fmt::Display) {
        self.push(syn::Error::new_spanned(tokens, message));
    }

    pub fn is_empty(&self) -> bool {
        self.errors.is_empty()
    }

    pub fn into_compile_errors(self) -> TokenStream {
        self.errors
            .iter()
            .map(syn::Error::to_compile_error)
            .collect()
    }
}

/// A problem from the core, with its help on the next line (rustc shows the message verbatim).
pub fn message(message: &str, help: &str) -> String {
    format!("{message}\n= help: {help}")
}

/// The path generated code uses for the runtime crate: `::toolc_runtime` unless `crate = ...`.
pub fn default_crate() -> syn::Path {
    syn::parse_quote!(::toolc_runtime)
}

/// Parses `crate = path` or `crate = "path"`.
pub fn parse_crate(meta: &syn::meta::ParseNestedMeta) -> syn::Result<syn::Path> {
    let value = meta.value()?;
    if value.peek(syn::LitStr) {
        let lit: syn::LitStr = value.parse()?;
        lit.parse()
    } else {
        value.parse()
    }
}

/// A manifest named by a macro argument, resolved and loaded.
pub struct Bound {
    pub manifest: Arc<Manifest>,
    /// Absolute path, for `include_bytes!` (so that edits recompile) and for identity.
    pub absolute: String,
}

/// Resolves `manifest = "..."` against the crate's directory, loads and checks it.
///
/// Relative paths are relative to `CARGO_MANIFEST_DIR` (the crate's directory), unless
/// `TOOLC_MANIFEST_DIR` is `PACKAGE=DIR` and this crate is `PACKAGE`: then to `DIR`. The override
/// is for builds whose crate directory is not where the manifests are (trybuild's generated
/// packages); it names the one package it is for, so the other crates of the same build keep
/// their own manifests.
pub fn load_manifest(lit: &syn::LitStr, errors: &mut Errors) -> Option<Bound> {
    let written = lit.value();
    let package = std::env::var("CARGO_PKG_NAME").unwrap_or_default();
    let base = std::env::var("TOOLC_MANIFEST_DIR")
        .ok()
        .and_then(|v| {
            let (for_package, dir) = v.split_once('=')?;
            (for_package == package).then(|| std::ffi::OsString::from(dir))
        })
        .or_else(|| std::env::var_os("CARGO_MANIFEST_DIR"))
        .map(PathBuf::from)
        .unwrap_or_default();
    let joined = base.join(&written);
    let path = std::fs::canonicalize(&joined).unwrap_or(joined);
    match Manifest::load(&path, &written) {
        Ok(manifest) => Some(Bound {
            manifest,
            absolute: path.display().to_string(),
        }),
        Err(ManifestError::Read(why)) => {
            errors.at(
                lit.span(),
                message(
                    &why,
                    "manifest paths are relative to the crate's directory (where its Cargo.toml is)",
                ),
            );
            None
        }
        Err(ManifestError::Invalid(rendered)) => {
            errors.at(
                lit.span(),
                format!(
                    "the manifest `{written}` has errors:\n\n{}",
                    rendered.trim_end()
                ),
            );
            None
        }
    }
}
