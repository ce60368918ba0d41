//! `#[tool]`: parse the fn and its options, ask the core, generate the companion type.

use crate::fn_tools::{self, FnParam, FnTool, RustType, Target};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;
use syn::{Attribute, Block, FnArg, Pat, Signature, Token, Type, Visibility};
use toolc_core::Location;

use crate::common::{self, Bound, Errors};

/// `#[tool(...)]` options.
struct Options {
    name: Option<syn::LitStr>,
    client: Option<Span>,
    manifest: Option<syn::LitStr>,
    description: Option<syn::LitStr>,
    timeout: Option<(syn::LitStr, u64)>,
    wait_for_response: Option<syn::LitBool>,
    approval: Option<syn::LitStr>,
    mode: Option<syn::LitStr>,
    krate: syn::Path,
}

fn parse_options(attr: TokenStream, errors: &mut Errors) -> Options {
    let mut o = Options {
        name: None,
        client: None,
        manifest: None,
        description: None,
        timeout: None,
        wait_for_response: None,
        approval: None,
        mode: None,
        krate: common::default_crate(),
    };
    let mut late = Vec::new();
    let parser = syn::meta::parser(|meta| {
        let key = meta
            .path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        match key.as_str() {
            "name" => o.name = Some(meta.value()?.parse()?),
            "client" => o.client = Some(meta.path.span()),
            "server" => {}
            "manifest" => o.manifest = Some(meta.value()?.parse()?),
            "description" => o.description = Some(meta.value()?.parse()?),
            "crate" => o.krate = common::parse_crate(&meta)?,
            "wait_for_response" => o.wait_for_response = Some(meta.value()?.parse()?),
            "approval" => {
                let lit: syn::LitStr = meta.value()?.parse()?;
                if !toolc_core::manifest::APPROVAL_VALUES.contains(&lit.value().as_str()) {
                    late.push(syn::Error::new(
                        lit.span(),
                        format!("`approval` is `\"required\"` or `\"none\"`, not `{}`", lit.value()),
                    ));
                }
                o.approval = Some(lit);
            }
            "mode" => {
                let lit: syn::LitStr = meta.value()?.parse()?;
                if !toolc_core::manifest::MODE_VALUES.contains(&lit.value().as_str()) {
                    late.push(syn::Error::new(
                        lit.span(),
                        format!("`mode` is `\"sync\"` or `\"async\"`, not `{}`", lit.value()),
                    ));
                }
                o.mode = Some(lit);
            }
            "timeout" => {
                let lit: syn::LitStr = meta.value()?.parse()?;
                // The manifests' grammar and range, so a timeout means the same in both.
                match toolc_core::manifest::parse_timeout(&lit.value()) {
                    Ok(d) => o.timeout = Some((lit, d.as_millis() as u64)),
                    // Reported without stopping, so the other options are still checked.
                    Err(toolc_core::manifest::TimeoutError::Invalid(why)) => late.push(syn::Error::new(
                        lit.span(),
                        format!(
                            "invalid timeout `{}`: {why}; write {}",
                            lit.value(),
                            toolc_core::manifest::TIMEOUT_GRAMMAR
                        ),
                    )),
                    Err(toolc_core::manifest::TimeoutError::OutOfRange) => late.push(syn::Error::new(
                        lit.span(),
                        format!(
                            "timeout `{}` is out of range: it must be more than 0 and at most 1h",
                            lit.value()
                        ),
                    )),
                }
            }
            _ => {
                return Err(meta.error(
                    "unknown `#[tool]` option; the options are `name`, `client`, `manifest`, `description`, `timeout`, `wait_for_response`, `approval`, `mode` and `crate`",
                ))
            }
        }
        Ok(())
    });
    if let Err(e) = syn::parse::Parser::parse2(parser, attr) {
        errors.push(e);
    }
    for e in late {
        errors.push(e);
    }
    o
}

/// A fn with or without a body: client declarations are `fn name(...);`, which is not an
/// `ItemFn`, so the item is parsed piece by piece.
struct ToolItem {
    attrs: Vec<Attribute>,
    vis: Visibility,
    sig: Signature,
    body: Option<Box<Block>>,
    semi: Option<Token![;]>,
}

impl Parse for ToolItem {
    fn parse(input: ParseStream) -> syn::Result<ToolItem> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis = input.parse()?;
        let sig = input.parse()?;
        if input.peek(Token![;]) {
            let semi = input.parse()?;
            Ok(ToolItem {
                attrs,
                vis,
                sig,
                body: None,
                semi: Some(semi),
            })
        } else {
            Ok(ToolItem {
                attrs,
                vis,
                sig,
                body: Some(input.parse()?),
                semi: None,
            })
        }
    }
}

/// One parameter as the macro understood it.
/// The `ctx: &CallContext` (or `CallContext`) parameter of a `#[tool]` fn.
#[derive(Clone, Copy)]
struct ContextParam {
    by_ref: bool,
    /// How many schema parameters come before it in the signature.
    position: usize,
}

/// `Some(by_ref)` when `ty` is `CallContext` or `&CallContext` (any path ending in it).
fn context_param(ty: &Type) -> Option<bool> {
    let (inner, by_ref) = match ty {
        Type::Reference(r) if r.mutability.is_none() => (&*r.elem, true),
        other => (other, false),
    };
    match inner {
        Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last()?;
            (last.ident == "CallContext" && last.arguments.is_empty()).then_some(by_ref)
        }
        _ => None,
    }
}

struct Param {
    ident: syn::Ident,
    name: String,
    ty: Type,
    rust: RustType,
    description: Option<String>,
    description_span: Option<Span>,
}

pub fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let options = parse_options(attr, &mut errors);
    let mut item: ToolItem = match syn::parse2(item) {
        Ok(item) => item,
        Err(e) => {
            let mut e2 = syn::Error::new(
                e.span(),
                "`#[tool]` goes on a fn: `async fn name(...) -> Result<T, E> { ... }`, or `fn name(...);` with `#[tool(client)]`",
            );
            e2.combine(e);
            return e2.to_compile_error();
        }
    };
    let location = if options.client.is_some() {
        Location::Client
    } else {
        Location::Server
    };
    let fn_ident = item.sig.ident.clone();
    let name = match &options.name {
        Some(lit) => {
            let name = lit.value();
            if !toolc_core::manifest::is_valid_name(&name) {
                errors.at(
                    lit.span(),
                    common::message(
                        &format!("`{name}` is not a valid tool name"),
                        "tool names match ^[A-Za-z_][A-Za-z0-9_-]{0,63}$ so that every provider accepts them",
                    ),
                );
            }
            name
        }
        None => fn_ident.to_string().trim_start_matches("r#").to_owned(),
    };

    // Body versus location.
    match (location, &item.body, &item.semi) {
        (Location::Client, Some(body), _) => errors.at(
            body.brace_token.span.join(),
            common::message(
                &format!("client tool `{name}` may not have a body: client tools run in the browser and have no server executor"),
                &format!("write the declaration without a body: `#[tool(client)] fn {name}(...);`, or remove `client` to make it a server tool"),
            ),
        ),
        (Location::Server, None, Some(semi)) => errors.at(
            semi.span,
            common::message(
                &format!("server tool `{name}` has no body"),
                "give it a body (its executor), or write `#[tool(client)]` to declare a tool that runs in the browser",
            ),
        ),
        _ => {}
    }
    check_signature(&item.sig, location, &mut errors);

    // Parameters.
    let docs = doc_lines(&item.attrs);
    let doc = fn_tools::parse_doc(&docs);
    let mut params = Vec::new();
    let mut args_struct: Option<(syn::Ident, Type)> = None;
    // Where the `CallContext` parameter sits, if the fn takes one: it is passed by the runtime,
    // not by the model, so it is not part of the schema.
    let mut context: Option<ContextParam> = None;
    let mut schema_params_before_context = 0;
    let context_count = item
        .sig
        .inputs
        .iter()
        .filter(|i| matches!(i, FnArg::Typed(pt) if context_param(&pt.ty).is_some()))
        .count();
    let param_count = item.sig.inputs.len() - context_count;
    for input in item.sig.inputs.iter_mut() {
        let FnArg::Typed(pt) = input else {
            errors.on(
                &*input,
                "`#[tool]` goes on free fns, not methods: a tool's executor takes no `self`",
            );
            continue;
        };
        if let Some(by_ref) = context_param(&pt.ty) {
            if location == Location::Client {
                errors.on(
                    &pt.ty,
                    "a client tool has no executor on the server, so it cannot take a `CallContext`",
                );
            } else if context.is_some() {
                errors.on(&pt.ty, "a tool takes at most one `CallContext` parameter");
            } else {
                context = Some(ContextParam {
                    by_ref,
                    position: schema_params_before_context,
                });
            }
            continue;
        }
        if context.is_none() {
            schema_params_before_context += 1;
        }
        let mut rename: Option<syn::LitStr> = None;
        let mut description: Option<syn::LitStr> = None;
        let mut is_args = false;
        let mut kept = Vec::new();
        for attr in std::mem::take(&mut pt.attrs) {
            if attr.path().is_ident("args") {
                is_args = true;
            } else if attr.path().is_ident("arg") {
                let result = attr.parse_nested_meta(|meta| {
                    if meta.path.is_ident("name") {
                        rename = Some(meta.value()?.parse()?);
                    } else if meta.path.is_ident("description") {
                        description = Some(meta.value()?.parse()?);
                    } else {
                        return Err(meta.error(
                            "unknown `#[arg]` option; the options are `name` and `description`",
                        ));
                    }
                    Ok(())
                });
                if let Err(e) = result {
                    errors.push(e);
                }
            } else {
                kept.push(attr);
            }
        }
        pt.attrs = kept;
        let ident = match &*pt.pat {
            Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => p.ident.clone(),
            other => {
                errors.on(
                    other,
                    "a tool parameter must be a plain name (`query: String`): the name is the property's name",
                );
                continue;
            }
        };
        if is_args {
            if param_count != 1 {
                errors.on(
                    &*pt,
                    "`#[args]` takes the whole argument object as one struct, so it must be the only parameter",
                );
            }
            args_struct = Some((ident, (*pt.ty).clone()));
            continue;
        }
        if let Type::ImplTrait(_) = &*pt.ty {
            errors.on(
                &pt.ty,
                "a tool parameter needs a concrete type that can be deserialized, not `impl Trait`",
            );
            continue;
        }
        let name = rename
            .as_ref()
            .map(syn::LitStr::value)
            .unwrap_or_else(|| ident.to_string().trim_start_matches("r#").to_owned());
        let from_doc = doc
            .arguments
            .iter()
            .find(|(n, _)| *n == name || ident == n)
            .map(|(_, d)| d.clone());
        params.push(Param {
            rust: RustType::classify(&pt.ty),
            ty: (*pt.ty).clone(),
            description: description.as_ref().map(syn::LitStr::value).or(from_doc),
            description_span: description.as_ref().map(syn::LitStr::span),
            ident,
            name,
        });
    }
    for (documented, _) in &doc.arguments {
        if args_struct.is_none()
            && !params
                .iter()
                .any(|p| &p.name == documented || p.ident == documented)
        {
            errors.at(
                fn_ident.span(),
                common::message(
                    &format!("the doc comment of tool `{name}` describes an argument `{documented}`, which is not a parameter"),
                    "fix the name in the `# Arguments` list, or remove the entry",
                ),
            );
        }
    }

    // Binding to a manifest, or a definition from Rust alone.
    let bound = options
        .manifest
        .as_ref()
        .and_then(|lit| common::load_manifest(lit, &mut errors));
    if options.manifest.is_some() {
        for (what, span) in [
            (
                "description",
                options.description.as_ref().map(|l| l.span()),
            ),
            ("timeout", options.timeout.as_ref().map(|(l, _)| l.span())),
            (
                "wait_for_response",
                options.wait_for_response.as_ref().map(|l| l.span),
            ),
            ("approval", options.approval.as_ref().map(|l| l.span())),
            ("mode", options.mode.as_ref().map(|l| l.span())),
        ] {
            if let Some(span) = span {
                errors.at(span, common::message(
                    &format!("`{what}` of tool `{name}` comes from its manifest"),
                    &format!("set `{what}` in the manifest, or remove `manifest = ...` to define the tool from Rust alone"),
                ));
            }
        }
        for p in &params {
            if let Some(span) = p.description_span {
                errors.at(span, common::message(
                    &format!("the description of parameter `{}` of tool `{name}` comes from its manifest", p.name),
                    "set it in the manifest's schema, or remove `manifest = ...`",
                ));
            }
        }
    }
    if let (Location::Client, Some(mode)) = (location, &options.mode) {
        errors.at(
            mode.span(),
            common::message(
                &format!("`mode` is only for server tools, and `{name}` is a client tool"),
                "remove `mode`; a client tool that should not hold up the model can be `wait_for_response = false`",
            ),
        );
    }
    let fire_and_forget = options.wait_for_response.as_ref().is_some_and(|b| !b.value);
    if let Some(approval) = options
        .approval
        .as_ref()
        .filter(|l| l.value() == "required")
    {
        if fire_and_forget {
            errors.at(
                approval.span(),
                common::message(
                    &format!("tool `{name}` needs approval but is fire-and-forget (`wait_for_response = false`)"),
                    "remove `approval = \"required\"`, or `wait_for_response = false` so the model waits for the approved call",
                ),
            );
        }
    }
    if let Some(bound) = &bound {
        let sig = FnTool {
            name: name.clone(),
            location,
            params: params
                .iter()
                .map(|p| FnParam {
                    name: p.name.clone(),
                    ty: p.rust.clone(),
                    rust: type_text(&p.ty),
                })
                .collect(),
            args_struct: args_struct.is_some(),
        };
        for problem in fn_tools::check_binding(&sig, &bound.manifest) {
            let text = common::message(&problem.message, &problem.help);
            match problem.target {
                Target::Tool => errors.at(fn_ident.span(), text),
                Target::Params => errors.at(item.sig.paren_token.span.join(), text),
                Target::Param(i) => errors.at(params[i].ident.span(), text),
                Target::ParamType(i) => errors.on(&params[i].ty, text),
            }
        }
    }
    let description = options
        .description
        .as_ref()
        .map(syn::LitStr::value)
        .unwrap_or_else(|| doc.description.clone());
    if options.manifest.is_none() && description.trim().is_empty() {
        errors.at(
            fn_ident.span(),
            common::message(
                &format!("tool `{name}` has no description"),
                "add a doc comment (`/// ...`) saying what the tool does and when the model should call it; the model chooses tools by it",
            ),
        );
    }

    let vis = &item.vis;
    let companion = quote! {
        #[doc = ::core::concat!("The tool definition and executor of [`", ::core::stringify!(#fn_ident), "`].")]
        #[allow(non_camel_case_types, dead_code)]
        #[derive(::core::fmt::Debug)]
        #vis struct #fn_ident {}
    };
    // The fn as written (without our parameter attributes), so the user can still call it.
    let user_fn = match &item.body {
        Some(body) if location == Location::Server => {
            let attrs = &item.attrs;
            let sig = &item.sig;
            quote!(#(#attrs)* #vis #sig #body)
        }
        _ => TokenStream::new(),
    };
    let krate = &options.krate;
    let fns = quote!(#krate::__private::fns);
    let manifest_path = bound
        .as_ref()
        .map(|b| b.absolute.clone())
        .unwrap_or_default();
    let track = bound.as_ref().map(|Bound { absolute, .. }| {
        quote!(
            const _: &[u8] = ::core::include_bytes!(#absolute);
        )
    });
    let location_tokens = match location {
        Location::Server => quote!(#fns::Location::Server),
        Location::Client => quote!(#fns::Location::Client),
    };
    if !errors.is_empty() {
        // The companion still implements `ToolFn`, so that a `tools!` naming this fn adds no
        // errors of its own to the ones above; the crate does not compile, so the bodies never run.
        let errors = errors.into_compile_errors();
        return quote! {
            #errors
            #user_fn
            #companion
            const _: () = {
                impl #fns::ToolFn for #fn_ident {
                    const NAME: &'static str = #name;
                    const LOCATION: #fns::Location = #location_tokens;
                    const MANIFEST: &'static str = #manifest_path;
                    fn definition() -> #fns::ToolDefinition {
                        ::core::unreachable!()
                    }
                    fn executor() -> ::core::option::Option<::std::sync::Arc<dyn #fns::Executor>> {
                        ::core::unreachable!()
                    }
                }
            };
        };
    }
    let definition = match &bound {
        Some(bound) => {
            let def = bound
                .manifest
                .tool(&name)
                .map(|t| serde_json::to_string(&t.def).unwrap_or_default())
                .unwrap_or_default();
            quote!(#fns::definition_from_json(#def))
        }
        None => definition_from_rust(
            &fns,
            &name,
            &description,
            &location_tokens,
            &params,
            args_struct.as_ref().map(|(_, ty)| ty),
            &item.sig.output,
            &options,
        ),
    };
    let executor = match location {
        Location::Client => quote!(::core::option::Option::None),
        Location::Server => {
            let defaults: Vec<(String, String)> = bound
                .as_ref()
                .and_then(|b| b.manifest.tool(&name).map(|t| b.manifest.defaults(t)))
                .unwrap_or_default();
            executor(
                &fns,
                &item.sig,
                &params,
                args_struct.as_ref(),
                context,
                &defaults,
            )
        }
    };
    quote! {
        #user_fn
        #companion
        const _: () = {
            #track
            impl #fns::ToolFn for #fn_ident {
                const NAME: &'static str = #name;
                const LOCATION: #fns::Location = #location_tokens;
                const MANIFEST: &'static str = #manifest_path;
                fn definition() -> #fns::ToolDefinition {
                    #definition
                }
                fn executor() -> ::core::option::Option<::std::sync::Arc<dyn #fns::Executor>> {
                    #executor
                }
            }
        };
    }
}

fn check_signature(sig: &Signature, location: Location, errors: &mut Errors) {
    for param in &sig.generics.params {
        if !matches!(param, syn::GenericParam::Lifetime(_)) {
            errors.on(
                param,
                "a tool cannot be generic: its schema must be known, so give the parameter a concrete type",
            );
        }
    }
    if let Some(variadic) = &sig.variadic {
        errors.on(variadic, "a tool cannot be variadic");
    }
    if location == Location::Client && sig.asyncness.is_some() {
        errors.on(
            sig.asyncness,
            "a client tool declaration has no body, so it cannot be `async`; remove `async`",
        );
    }
}

fn doc_lines(attrs: &[Attribute]) -> Vec<String> {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

fn type_text(ty: &Type) -> String {
    // `quote` spaces every token; messages read better with Rust's own spacing.
    quote!(#ty)
        .to_string()
        .replace(" < ", "<")
        .replace("< ", "<")
        .replace(" >", ">")
        .replace(" :: ", "::")
        .replace(":: ", "::")
        .replace("& ", "&")
        .replace(" ,", ",")
}

/// The schema source of a type: JSON written now when the type is primitive, otherwise a call
/// to schemars at run time.
fn schema_source(fns: &TokenStream, rust: &RustType, ty: &Type) -> TokenStream {
    match rust.schema() {
        Some(schema) => {
            let text = schema.to_string();
            quote!(#fns::SchemaSource::Static(#text))
        }
        None => {
            let owned = fn_tools::owned_type(ty).unwrap_or_else(|| ty.clone());
            quote_spanned!(ty.span()=> #fns::SchemaSource::Typed(#fns::subschema::<#owned>))
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn definition_from_rust(
    fns: &TokenStream,
    name: &str,
    description: &str,
    location: &TokenStream,
    params: &[Param],
    args_struct: Option<&Type>,
    output: &syn::ReturnType,
    options: &Options,
) -> TokenStream {
    let param_items = params.iter().map(|p| {
        let pname = &p.name;
        let (required, rust, ty) = match (&p.rust, fn_tools::option_inner(&p.ty)) {
            (RustType::Optional(inner), Some(inner_ty)) => (false, (**inner).clone(), inner_ty.clone()),
            _ => (true, p.rust.clone(), p.ty.clone()),
        };
        let schema = schema_source(fns, &rust, &ty);
        let description = match &p.description {
            Some(d) => quote!(::core::option::Option::Some(#d)),
            None => quote!(::core::option::Option::None),
        };
        quote!(#fns::Param { name: #pname, description: #description, required: #required, schema: #schema })
    });
    let args = match args_struct {
        Some(ty) => {
            let source = schema_source(fns, &RustType::Other, ty);
            quote!(::core::option::Option::Some(#source))
        }
        None => quote!(::core::option::Option::None),
    };
    let returns = match output {
        syn::ReturnType::Default => quote!(::core::option::Option::None),
        syn::ReturnType::Type(_, ty) => {
            let (ok, _) = fn_tools::success_type(ty);
            let rust = RustType::classify(ok);
            if rust == RustType::Unit {
                quote!(::core::option::Option::None)
            } else {
                let source = schema_source(fns, &rust, ok);
                quote!(::core::option::Option::Some(#source))
            }
        }
    };
    let timeout = match &options.timeout {
        Some((_, ms)) => quote!(::core::option::Option::Some(#ms)),
        None => quote!(::core::option::Option::None),
    };
    let wait = options.wait_for_response.as_ref().is_none_or(|b| b.value);
    let approval = match options.approval.as_ref().map(|l| l.value()).as_deref() {
        Some("required") => quote!(#fns::Approval::Required),
        _ => quote!(#fns::Approval::None),
    };
    let mode = match options.mode.as_ref().map(|l| l.value()).as_deref() {
        Some("async") => quote!(#fns::Mode::Async),
        _ => quote!(#fns::Mode::Sync),
    };
    quote! {
        #fns::FnDefinition {
            name: #name,
            description: #description,
            location: #location,
            params: &[#(#param_items),*],
            args: #args,
            returns: #returns,
            timeout_ms: #timeout,
            wait_for_response: #wait,
            policy: #fns::CallPolicy {
                approval: #approval,
                mode: #mode,
                scheduling: ::core::option::Option::None,
                cancel_on_interruption: ::core::option::Option::None,
                stream_arguments: false,
                on_duplicate: ::core::option::Option::None,
                duplicate_window_ms: ::core::option::Option::None,
                rate_limit: ::core::option::Option::None,
                retry: ::core::option::Option::None,
            },
        }
        .build()
    }
}

fn executor(
    fns: &TokenStream,
    sig: &Signature,
    params: &[Param],
    args_struct: Option<&(syn::Ident, Type)>,
    context: Option<ContextParam>,
    defaults: &[(String, String)],
) -> TokenStream {
    let fn_ident = &sig.ident;
    // Each parameter is taken out of the argument object into a local with its owned type;
    // the call borrows those locals where the fn takes references.
    let context_arg = context.map(|c| {
        if c.by_ref {
            quote!(&__ctx)
        } else {
            quote!(__ctx)
        }
    });
    let (takes, call_args) = match args_struct {
        Some((_, ty)) => {
            let passes = match (context, &context_arg) {
                (Some(c), Some(ctx)) if c.position == 0 => quote!(#ctx, __a0),
                (_, Some(ctx)) => quote!(__a0, #ctx),
                _ => quote!(__a0),
            };
            (
                quote_spanned!(ty.span()=> let __a0: #ty = #fns::args(__args)?;),
                passes,
            )
        }
        None => {
            let takes = params.iter().enumerate().map(|(i, p)| {
                let local = format_ident!("__a{}", i);
                let name = &p.name;
                let ty = fn_tools::owned_type(&p.ty).unwrap_or_else(|| p.ty.clone());
                quote_spanned!(p.ty.span()=> let #local: #ty = #fns::arg(&mut __args, #name)?;)
            });
            let mut passes: Vec<TokenStream> = params
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let local = format_ident!("__a{}", i);
                    if matches!(p.ty, Type::Reference(_)) {
                        quote!(&#local)
                    } else {
                        quote!(#local)
                    }
                })
                .collect();
            if let (Some(c), Some(ctx)) = (context, context_arg) {
                passes.insert(c.position.min(passes.len()), ctx);
            }
            (quote!(#(#takes)*), quote!(#(#passes),*))
        }
    };
    let call = match sig.asyncness {
        Some(_) => quote!(#fn_ident(#call_args).await),
        None => quote!(#fn_ident(#call_args)),
    };
    let is_result = match &sig.output {
        syn::ReturnType::Type(_, ty) => fn_tools::success_type(ty).1,
        syn::ReturnType::Default => false,
    };
    let wrapped = if is_result {
        quote_spanned!(sig.output.span()=> #fns::IntoToolResult::into_tool_result(#call))
    } else {
        quote_spanned!(sig.output.span()=> #fns::ok(#call))
    };
    let default_items = defaults.iter().map(|(k, v)| quote!((#k, #v)));
    let mutable = (args_struct.is_none() && !params.is_empty()).then(|| quote!(mut));
    quote! {
        ::core::option::Option::Some(#fns::executor(
            &[#(#default_items),*],
            |__ctx: #fns::CallContext, #mutable __args: #fns::Args| {
                #takes
                ::core::result::Result::Ok(async move { #wrapped })
            },
        ))
    }
}
