//! `tools![...]`: a `RegistryBuilder` from `#[tool]` fns, optionally checked against a manifest.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::Token;

use crate::common::{self, Errors};

struct Input {
    manifest: Option<syn::LitStr>,
    krate: Option<syn::Path>,
    /// The builder the tools are added to (`builder = expr`); a new one without it.
    builder: Option<syn::Expr>,
    items: Punctuated<syn::Path, Token![,]>,
}

impl Parse for Input {
    fn parse(input: ParseStream) -> syn::Result<Input> {
        let mut manifest = None;
        let mut krate = None;
        let mut builder = None;
        // Options come first, as `key = value` pairs ended by `;`.
        let has_options =
            (input.peek(syn::Ident) || input.peek(Token![crate])) && input.peek2(Token![=]);
        if has_options {
            loop {
                if input.peek(Token![crate]) {
                    input.parse::<Token![crate]>()?;
                    input.parse::<Token![=]>()?;
                    krate = Some(if input.peek(syn::LitStr) {
                        input.parse::<syn::LitStr>()?.parse()?
                    } else {
                        input.parse()?
                    });
                } else {
                    let key: syn::Ident = input.parse()?;
                    input.parse::<Token![=]>()?;
                    if key == "manifest" {
                        manifest = Some(input.parse()?);
                    } else if key == "builder" {
                        builder = Some(input.parse()?);
                    } else {
                        return Err(syn::Error::new(
                            key.span(),
                            "unknown `tools!` option; the options are `manifest = \"path\"`, `builder = expression` and `crate = path`, followed by `;` and the list of `#[tool]` fns",
                        ));
                    }
                }
                if input.peek(Token![;]) {
                    input.parse::<Token![;]>()?;
                    break;
                }
                input.parse::<Token![,]>()?;
            }
        }
        let items = Punctuated::parse_terminated(input)?;
        Ok(Input {
            manifest,
            krate,
            builder,
            items,
        })
    }
}

pub fn expand(input: TokenStream) -> TokenStream {
    let input: Input = match syn::parse2(input) {
        Ok(input) => input,
        Err(e) => return e.to_compile_error(),
    };
    let mut errors = Errors::default();
    let krate = input.krate.clone().unwrap_or_else(common::default_crate);
    let fns = quote!(#krate::__private::fns);
    // The builder the tools join: one given (a generated module's `registry_builder(..)`, say),
    // or a new one.
    let start = match &input.builder {
        Some(builder) => quote_spanned!(builder.span()=> {
            let __builder: #fns::RegistryBuilder = #builder;
            __builder
        }),
        None => quote!(#fns::RegistryBuilder::default()),
    };
    let items: Vec<&syn::Path> = input.items.iter().collect();
    for (i, item) in items.iter().enumerate() {
        if items[..i].iter().any(|earlier| earlier == item) {
            errors.on(item, "this tool is listed twice; remove one");
        }
    }
    let bound = input
        .manifest
        .as_ref()
        .and_then(|lit| common::load_manifest(lit, &mut errors));
    if !errors.is_empty() {
        return errors.into_compile_errors();
    }

    let Some(bound) = bound else {
        let adds = items.iter().map(
            |item| quote_spanned!(item.span()=> let __builder = #fns::add::<#item>(__builder);),
        );
        return quote! {{
            let __builder = #start;
            #(#adds)*
            __builder
        }};
    };

    let written = input
        .manifest
        .as_ref()
        .map(syn::LitStr::value)
        .unwrap_or_default();
    let lit_span = input
        .manifest
        .as_ref()
        .map_or(Span::call_site(), syn::LitStr::span);
    let absolute = &bound.absolute;
    // Each listed tool must be bound to this manifest, so that its signature was checked
    // against the same tool the registry will declare.
    let bound_checks = items.iter().map(|item| {
        let shown = quote!(#item).to_string().replace(' ', "");
        let text = format!(
            "toolc: `{shown}` is listed in a `tools!` bound to `{written}`, but its #[tool] is not bound to that manifest\n= help: write `#[tool(manifest = \"{written}\")]` on `{shown}` so that its signature is checked against the manifest"
        );
        let label = format!("`{shown}` is not bound to `{written}`");
        let holds = quote!(#fns::str_eq(<#item as #fns::ToolFn>::MANIFEST, #absolute));
        compile_time_check(&fns, item.span(), holds, &text, &label)
    });
    // Every server tool of the manifest needs one listed executor.
    let server_checks = bound.manifest.server_tools().into_iter().map(|(name, place)| {
        let text = format!(
            "toolc: server tool `{name}` ({place}) has no executor in this `tools!` list\n= help: write `#[tool(manifest = \"{written}\")] async fn {name}(...) {{ ... }}` and add `{name}` to the list, or change its `location` to `client` in {place}"
        );
        let label = format!("no executor for `{name}`");
        let holds = quote!(#fns::names_contain(__TOOLC_NAMES, #name));
        compile_time_check(&fns, lit_span, holds, &text, &label)
    });
    let definitions = bound.manifest.definitions_json();
    let adds = items.iter().map(|item| {
        quote_spanned!(item.span()=> let __builder = #fns::add_executor::<#item>(__builder);)
    });
    // The names once, in one array, so that each server tool's check is a single call rather
    // than one comparison expression per listed item (quadratic code for rustc to check).
    let names = items
        .iter()
        .map(|item| quote!(<#item as #fns::ToolFn>::NAME));
    quote! {{
        const _: &[u8] = ::core::include_bytes!(#absolute);
        const __TOOLC_NAMES: &[&str] = &[#(#names),*];
        #(#bound_checks)*
        #(#server_checks)*
        let __builder = #start.definitions(#fns::definitions_from_json(#definitions));
        #(#adds)*
        __builder
    }}
}

/// A check of `holds` (a `const` expression) that fails to compile with `message` as rustc's
/// own headline. A failed `const` assertion would read "evaluation panicked" (E0080) and point
/// at generated code; an unmet trait bound shows the `#[diagnostic::on_unimplemented]` text of a
/// trait made for this one check.
fn compile_time_check(
    fns: &TokenStream,
    span: Span,
    holds: TokenStream,
    message: &str,
    label: &str,
) -> TokenStream {
    // `{` and `}` are format syntax in diagnostic attributes.
    let escape = |text: &str| text.replace('{', "{{").replace('}', "}}");
    let (headline, help) = match message.split_once('\n') {
        Some((headline, help)) => (headline, help.trim_start_matches("= help: ")),
        None => (message, ""),
    };
    let (headline, help, label) = (escape(headline), escape(help), escape(label));
    quote_spanned! {span=>
        const _: () = {
            #[diagnostic::on_unimplemented(message = #headline, label = #label, note = #help)]
            trait Satisfied {}
            #[diagnostic::do_not_recommend]
            impl Satisfied for #fns::Holds<true> {}
            const fn check<T: Satisfied>() {}
            check::<#fns::Holds<{ #holds }>>()
        };
    }
}
