//! The token printer: planned items as `quote!` tokens, pretty-printed by prettyplease. Every
//! item can be printed this way; the text printer ([`super::text`]) is the fast path for the
//! common ones.

use super::plan::*;
use super::*;

impl<'a> Tokens<'a> {
    pub(super) fn new(ir: &'a Ir, options: &RustOptions, trait_name: &'a str) -> Tokens<'a> {
        let path = options.runtime_path.trim();
        let rt: syn::Path = syn::parse_str(path)
            .unwrap_or_else(|_| syn::parse_str("::toolc_runtime").expect("a literal path parses"));
        let serde_crate = format!(
            "{}::__private::serde",
            quote!(#rt).to_string().replace(' ', "")
        );
        Tokens {
            ir,
            rt: quote!(#rt),
            serde_crate,
            trait_name,
        }
    }

    pub(super) fn serde_arg(arg: &SerdeArg) -> TokenStream {
        match arg {
            SerdeArg::Rename(wire) => quote!(rename = #wire),
            SerdeArg::DefaultFn(path) => quote!(default = #path),
            SerdeArg::Default => quote!(default),
            SerdeArg::SkipIfNone => quote!(skip_serializing_if = "::std::option::Option::is_none"),
        }
    }

    pub(super) fn default_expr(value: &DefaultExpr) -> TokenStream {
        match value {
            DefaultExpr::I64(n) => {
                let lit = Literal::i64_suffixed(*n);
                quote!(#lit)
            }
            DefaultExpr::F64(f) => {
                let lit = Literal::f64_suffixed(*f);
                quote!(#lit)
            }
            DefaultExpr::Bool(b) => quote!(#b),
            DefaultExpr::String(s) => quote!(::std::string::String::from(#s)),
            DefaultExpr::Variant { ty, variant } => {
                let ty = ident(ty);
                let variant = ident(variant);
                quote!(#ty::#variant)
            }
        }
    }

    pub(super) fn ty(&self, ty: &Ty) -> TokenStream {
        let rt = &self.rt;
        match ty {
            Ty::String => quote!(::std::string::String),
            Ty::I64 => quote!(i64),
            Ty::F64 => quote!(f64),
            Ty::Bool => quote!(bool),
            Ty::Value(_) => quote!(#rt::__private::serde_json::Value),
            Ty::Content => quote!(#rt::ToolContent),
            Ty::Map => quote!(#rt::__private::serde_json::Map<
                ::std::string::String,
                #rt::__private::serde_json::Value
            >),
            Ty::MapOf(t) => {
                let t = self.ty(t);
                quote!(::std::collections::BTreeMap<::std::string::String, #t>)
            }
            Ty::Vec(t) => {
                let t = self.ty(t);
                quote!(::std::vec::Vec<#t>)
            }
            Ty::Option(t) => {
                let t = self.ty(t);
                quote!(::std::option::Option<#t>)
            }
            Ty::Boxed(t) => {
                let t = self.ty(t);
                quote!(::std::boxed::Box<#t>)
            }
            Ty::Named(name) => {
                let name = ident(name);
                quote!(#name)
            }
        }
    }

    pub(super) fn derives(&self, extra: TokenStream) -> TokenStream {
        let rt = &self.rt;
        let serde_crate = &self.serde_crate;
        quote! {
            #[derive(Debug, Clone, #extra #rt::__private::serde::Serialize, #rt::__private::serde::Deserialize)]
            #[serde(crate = #serde_crate)]
        }
    }

    pub(super) fn item(&self, item: &Item) -> TokenStream {
        match item {
            Item::Struct { name, docs, fields } => {
                let docs = doc_attrs(docs);
                let derives = self.derives(quote!(PartialEq,));
                let name = ident(name);
                let fields = fields.iter().map(|f| {
                    let docs = doc_attrs(&f.docs);
                    let rust = ident(&f.rust);
                    let ty = self.ty(&f.ty);
                    let serde = if f.serde.is_empty() {
                        quote!()
                    } else {
                        let args = f.serde.iter().map(Tokens::serde_arg);
                        quote!(#[serde(#(#args),*)])
                    };
                    quote! {
                        #docs
                        #serde
                        pub #rust: #ty,
                    }
                });
                quote! {
                    #docs
                    #derives
                    #[allow(dead_code)]
                    pub struct #name {
                        #(#fields)*
                    }
                }
            }
            Item::Enum {
                name,
                docs,
                variants,
            } => {
                let docs = doc_attrs(docs);
                let derives = self.derives(quote!(Copy, PartialEq, Eq, Hash,));
                let name = ident(name);
                let variants = variants.iter().map(|(variant, wire)| {
                    let v = ident(variant);
                    let doc = format!(" `{wire}`");
                    if variant == wire {
                        quote!(#[doc = #doc] #v,)
                    } else {
                        quote!(#[doc = #doc] #[serde(rename = #wire)] #v,)
                    }
                });
                quote! {
                    #docs
                    #derives
                    #[allow(dead_code)]
                    pub enum #name {
                        #(#variants)*
                    }
                }
            }
            Item::Alias { name, docs, ty } => {
                let docs = doc_attrs(docs);
                let name = ident(name);
                let ty = self.ty(ty);
                quote! {
                    #docs
                    #[allow(dead_code)]
                    pub type #name = #ty;
                }
            }
            Item::DefaultFn { name, ty, value } => {
                let name = ident(name);
                let ty = self.ty(ty);
                let value = Tokens::default_expr(value);
                quote! {
                    #[doc(hidden)]
                    fn #name() -> #ty {
                        #value
                    }
                }
            }
        }
    }

    pub(super) fn marker(&self, tool: &IrTool, names: &ToolNames) -> TokenStream {
        let rt = &self.rt;
        let def = &tool.def;
        let marker = ident(&names.marker);
        let args = ident(&names.args);
        let output = ident(&names.output);
        let name = &def.name;
        let description = &def.description;
        let location = match def.location {
            Location::Server => quote!(#rt::Location::Server),
            Location::Client => quote!(#rt::Location::Client),
        };
        let parameters = raw_string(&def.parameters.to_string());
        // Only the fields that differ from their default are written, the rest left to
        // `..Default::default()`: a definition then reads as what its manifest says, and a field
        // the runtime adds later (with a default) changes no generated file that does not use it.
        // Naming every field here makes a field added to `ToolDefinition` fail to compile until
        // it is written below and counted in `OPTIONAL_FIELDS`.
        let toolc_core::ToolDefinition {
            name: _,
            description: _,
            location: _,
            parameters: _,
            returns: _,
            timeout: _,
            wait_for_response: _,
            filler: _,
            title: _,
            annotations: _,
            scopes: _,
            policy: _,
        } = def;
        const OPTIONAL_FIELDS: usize = 8;
        let mut fields = Vec::new();
        if let Some(r) = &def.returns {
            let lit = raw_string(&r.to_string());
            fields.push(quote!(returns: ::std::option::Option::Some(#rt::__private::schema(#lit))));
        }
        if let Some(d) = def.timeout {
            let ms = Literal::u64_suffixed(d.as_millis() as u64);
            fields.push(quote!(
                timeout: ::std::option::Option::Some(::std::time::Duration::from_millis(#ms))
            ));
        }
        if !def.wait_for_response {
            fields.push(quote!(wait_for_response: false));
        }
        if !def.filler.is_empty() {
            let phrases = def.filler.iter();
            fields.push(quote!(
                filler: ::std::vec::Vec::from([#(::std::string::String::from(#phrases)),*])
            ));
        }
        if let Some(t) = &def.title {
            fields.push(quote!(
                title: ::std::option::Option::Some(::std::string::String::from(#t))
            ));
        }
        if !def.annotations.is_empty() {
            let annotations = self.annotations(&def.annotations);
            fields.push(quote!(annotations: #annotations));
        }
        if !def.scopes.is_empty() {
            let scopes = def.scopes.iter();
            fields.push(quote!(
                scopes: ::std::vec::Vec::from([#(::std::string::String::from(#scopes)),*])
            ));
        }
        if !def.policy.is_default() {
            let policy = self.policy(&def.policy);
            fields.push(quote!(policy: #policy));
        }
        // With every field written, a base would be clippy's `needless_update`.
        let rest =
            (fields.len() < OPTIONAL_FIELDS).then(|| quote!(..::std::default::Default::default()));
        let docs = doc_attrs(&marker_docs(tool));
        quote! {
            #docs
            #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
            #[allow(dead_code)]
            pub struct #marker;

            impl #rt::Tool for #marker {
                const NAME: &'static str = #name;
                const LOCATION: #rt::Location = #location;
                type Args = #args;
                type Output = #output;

                fn definition() -> #rt::ToolDefinition {
                    #rt::ToolDefinition {
                        name: ::std::string::String::from(#name),
                        description: ::std::string::String::from(#description),
                        location: #location,
                        parameters: #rt::__private::schema(#parameters),
                        #(#fields,)*
                        #rest
                    }
                }
            }
        }
    }

    /// A tool's MCP annotations as tokens (only written when it has some).
    fn annotations(&self, a: &toolc_core::Annotations) -> TokenStream {
        let rt = &self.rt;
        let hint = |h: Option<bool>| match h {
            Some(b) => quote!(::std::option::Option::Some(#b)),
            None => quote!(::std::option::Option::None),
        };
        let (r, d, i, o) = (
            hint(a.read_only),
            hint(a.destructive),
            hint(a.idempotent),
            hint(a.open_world),
        );
        quote!(#rt::Annotations {
            read_only: #r,
            destructive: #d,
            idempotent: #i,
            open_world: #o,
        })
    }

    /// A tool's call policy as tokens (only written when it is not the default).
    fn policy(&self, p: &toolc_core::CallPolicy) -> TokenStream {
        let rt = &self.rt;
        let approval = match p.approval {
            Approval::None => quote!(#rt::Approval::None),
            Approval::Required => quote!(#rt::Approval::Required),
        };
        let mode = match p.mode {
            Mode::Sync => quote!(#rt::Mode::Sync),
            Mode::Async => quote!(#rt::Mode::Async),
        };
        let scheduling = match p.scheduling {
            Some(toolc_core::Scheduling::WhenIdle) => {
                quote!(::std::option::Option::Some(#rt::Scheduling::WhenIdle))
            }
            Some(toolc_core::Scheduling::Interrupt) => {
                quote!(::std::option::Option::Some(#rt::Scheduling::Interrupt))
            }
            Some(toolc_core::Scheduling::Silent) => {
                quote!(::std::option::Option::Some(#rt::Scheduling::Silent))
            }
            None => quote!(::std::option::Option::None),
        };
        let cancel = match p.cancel_on_interruption {
            Some(b) => quote!(::std::option::Option::Some(#b)),
            None => quote!(::std::option::Option::None),
        };
        let stream = p.stream_arguments;
        let on_duplicate = match p.on_duplicate {
            Some(toolc_core::OnDuplicate::Run) => {
                quote!(::std::option::Option::Some(#rt::OnDuplicate::Run))
            }
            Some(toolc_core::OnDuplicate::Reuse) => {
                quote!(::std::option::Option::Some(#rt::OnDuplicate::Reuse))
            }
            Some(toolc_core::OnDuplicate::Refuse) => {
                quote!(::std::option::Option::Some(#rt::OnDuplicate::Refuse))
            }
            None => quote!(::std::option::Option::None),
        };
        let window = match p.duplicate_window_ms {
            Some(ms) => {
                let ms = Literal::u64_suffixed(ms);
                quote!(::std::option::Option::Some(#ms))
            }
            None => quote!(::std::option::Option::None),
        };
        let rate_limit = self.rate_limit(p.rate_limit);
        let retry = self.retry(p.retry);
        quote!(#rt::CallPolicy {
            approval: #approval,
            mode: #mode,
            scheduling: #scheduling,
            cancel_on_interruption: #cancel,
            stream_arguments: #stream,
            on_duplicate: #on_duplicate,
            duplicate_window_ms: #window,
            rate_limit: #rate_limit,
            retry: #retry,
        })
    }

    /// `Option<RateLimit>` as tokens.
    fn rate_limit(&self, limit: Option<toolc_core::RateLimit>) -> TokenStream {
        let rt = &self.rt;
        match limit {
            Some(l) => {
                let calls = Literal::u32_suffixed(l.calls);
                let window = Literal::u64_suffixed(l.window_ms);
                let per = match l.per {
                    toolc_core::RateScope::Principal => quote!(#rt::RateScope::Principal),
                    toolc_core::RateScope::Conversation => {
                        quote!(#rt::RateScope::Conversation)
                    }
                };
                quote!(::std::option::Option::Some(#rt::RateLimit {
                    calls: #calls,
                    window_ms: #window,
                    per: #per,
                }))
            }
            None => quote!(::std::option::Option::None),
        }
    }

    /// `Option<RetryPolicy>` as tokens.
    fn retry(&self, retry: Option<toolc_core::RetryPolicy>) -> TokenStream {
        let rt = &self.rt;
        match retry {
            Some(r) => {
                let attempts = Literal::u32_suffixed(r.attempts);
                let backoff = Literal::u64_suffixed(r.backoff_ms);
                let (t, f) = (r.on_timeout, r.on_tool_failed);
                quote!(::std::option::Option::Some(#rt::RetryPolicy {
                    attempts: #attempts,
                    backoff_ms: #backoff,
                    on_timeout: #t,
                    on_tool_failed: #f,
                }))
            }
            None => quote!(::std::option::Option::None),
        }
    }

    pub(super) fn server_tools<'n>(
        &self,
        names: &'n [ToolNames],
    ) -> Vec<(&'a IrTool, &'n ToolNames)> {
        self.ir
            .tools
            .iter()
            .zip(names)
            .filter(|(t, _)| t.def.location == Location::Server)
            .collect()
    }

    pub(super) fn server_trait(&self, names: &[ToolNames]) -> TokenStream {
        let rt = &self.rt;
        let trait_name = ident(self.trait_name);
        let server = self.server_tools(names);
        let (docs, [message, label, note]) = server_trait_texts(self.trait_name, &self.ir.tools);
        let methods = server.iter().map(|(tool, n)| {
            let method = ident(&field_ident_text(&tool.def.name));
            let args = ident(&n.args);
            let output = ident(&n.output);
            let docs = doc_attrs(&executor_docs(tool));
            quote! {
                #docs
                fn #method(&self, ctx: &#rt::CallContext, args: #args) -> impl ::std::future::Future<
                    Output = ::std::result::Result<#output, #rt::ToolError>
                > + ::std::marker::Send;
            }
        });
        let docs = doc_attrs(&docs);
        quote! {
            #docs
            #[diagnostic::on_unimplemented(message = #message, label = #label, note = #note)]
            pub trait #trait_name: ::std::marker::Send + ::std::marker::Sync + 'static {
                #(#methods)*
            }
        }
    }

    pub(super) fn definitions_fn(&self, names: &[ToolNames]) -> TokenStream {
        let rt = &self.rt;
        let markers = names.iter().map(|n| ident(&n.marker));
        quote! {
            /// The definitions of every tool of this manifest, in declaration order.
            #[allow(dead_code)]
            pub fn definitions() -> ::std::vec::Vec<#rt::ToolDefinition> {
                ::std::vec::Vec::from([#(<#markers as #rt::Tool>::definition()),*])
            }
        }
    }

    /// The items after the tools: the server trait, `definitions()`, `registry_builder()` and
    /// `registry()`.
    pub(super) fn closing(&self, names: &[ToolNames]) -> TokenStream {
        let mut stream = self.server_trait(names);
        stream.extend(self.definitions_fn(names));
        stream.extend(self.registry_builder_fn(names));
        stream.extend(self.registry_fn());
        stream
    }

    pub(super) fn registry_builder_fn(&self, names: &[ToolNames]) -> TokenStream {
        let rt = &self.rt;
        let trait_name = ident(self.trait_name);
        let server = self.server_tools(names);
        let executors = server.iter().map(|(tool, n)| {
            let name = &tool.def.name;
            let method = ident(&field_ident_text(name));
            let args = ident(&n.args);
            quote! {
                .executor(#name, #rt::__private::typed_executor_with_context({
                    let server = ::std::sync::Arc::clone(&server);
                    move |ctx, args: #args| {
                        let server = ::std::sync::Arc::clone(&server);
                        async move { server.#method(&ctx, args).await }
                    }
                }))
            }
        });
        let setup = if server.is_empty() {
            quote!(let _ = server;)
        } else {
            quote!(let server = ::std::sync::Arc::new(server);)
        };
        // The manifests' `mcp.list_ttl`, which `McpServer` answers `tools/list` with.
        let list_ttl = self.ir.mcp_list_ttl().map(|(ttl, _)| {
            let ms = proc_macro2::Literal::u64_suffixed(ttl.as_millis() as u64);
            quote!(.mcp_list_ttl(::std::time::Duration::from_millis(#ms)))
        });
        // The toolsets, in the order their first tools come, each with its tools.
        let mut toolsets: Vec<(&crate::ir::Toolset, Vec<&str>)> = Vec::new();
        for tool in &self.ir.tools {
            let Some(set) = &tool.toolset else { continue };
            match toolsets.iter_mut().find(|(t, _)| t.name == set.name) {
                Some((_, tools)) => tools.push(&tool.def.name),
                None => toolsets.push((set, vec![tool.def.name.as_str()])),
            }
        }
        let toolsets = toolsets.iter().map(|(set, tools)| {
            let (name, description) = (&set.name, &set.description);
            quote!(.toolset(#name, #description, [#(#tools),*]))
        });
        let docs = doc_attrs(&registry_builder_docs());
        quote! {
            #docs
            #[allow(dead_code)]
            pub fn registry_builder<S: #trait_name>(server: S) -> #rt::RegistryBuilder {
                #setup
                #rt::Registry::builder()
                    .definitions(definitions())
                    #list_ttl
                    #(#toolsets)*
                    #(#executors)*
            }
        }
    }

    pub(super) fn registry_fn(&self) -> TokenStream {
        let rt = &self.rt;
        let trait_name = ident(self.trait_name);
        let docs = doc_attrs(&registry_docs());
        quote! {
            #docs
            #[allow(dead_code)]
            pub fn registry<S: #trait_name>(
                server: S,
            ) -> ::std::result::Result<#rt::Registry, #rt::RegistryError> {
                registry_builder(server).build()
            }
        }
    }

    /// `declarations(provider)` and the provider files it gives, one private const each.
    pub(super) fn declarations(&self, files: &[(Provider, String)]) -> TokenStream {
        let rt = &self.rt;
        let arms = files.iter().map(|(provider, _)| {
            let variant = ident(&format!("{provider:?}"));
            let name = ident(&declarations_const(*provider));
            quote!(Provider::#variant => #name,)
        });
        let consts = files.iter().map(|(provider, text)| {
            let name = ident(&declarations_const(*provider));
            let docs = doc_attrs(&[format!("`providers/{}.json`.", provider.name())]);
            let text = raw_string(text);
            quote! {
                #docs
                const #name: &str = #text;
            }
        });
        let docs = doc_attrs(&declarations_docs(files));
        quote! {
            #docs
            #[allow(dead_code)]
            pub fn declarations(provider: #rt::Provider) -> &'static str {
                use #rt::Provider;
                match provider {
                    #(#arms)*
                }
            }
            #(#consts)*
        }
    }
}

/// The name of the const that holds `provider`'s file: `DECLARATIONS_OPENAI_CHAT`.
pub(super) fn declarations_const(provider: Provider) -> String {
    format!(
        "DECLARATIONS_{}",
        provider.name().replace('-', "_").to_ascii_uppercase()
    )
}

pub(super) fn registry_builder_docs() -> Vec<String> {
    [
        "A registry builder holding every tool of this manifest, with `server` as the executor of",
        "every server tool (and the manifest's toolsets and `mcp.list_ttl`). Add other tool",
        "sources before `.build()`: an MCP server's tools (`McpTools::merge_into`), a remote",
        "catalog's (`CatalogTools::merge_into`), `#[tool]` fns (`tools!(builder = ...; f)`),",
        "state (`.state(..)`). [`registry`] is this, built.",
    ]
    .map(String::from)
    .to_vec()
}

pub(super) fn registry_docs() -> Vec<String> {
    [
        "The runtime registry of this manifest, with `server` as the executor of every server",
        "tool: [`registry_builder`], built. It fails only if a schema cannot be compiled, which",
        "the toolc checks rule out.",
    ]
    .map(String::from)
    .to_vec()
}

pub(super) fn declarations_docs(files: &[(Provider, String)]) -> Vec<String> {
    let mut docs: Vec<String> = [
        "The tool declarations of this manifest for `provider`: byte for byte the file that",
        "`toolc build` writes as `providers/<provider.name()>.json`, from the same emitter and",
        "settings. For a chat codec, `declarations(codec.provider())` is its request's tools:",
        "",
    ]
    .map(String::from)
    .to_vec();
    for (provider, _) in files {
        docs.push(format!(
            "- `Provider::{provider:?}`: {}",
            provider_shape(*provider)
        ));
    }
    docs
}

/// What one provider file holds, for the docs of `declarations`.
fn provider_shape(provider: Provider) -> &'static str {
    match provider {
        Provider::OpenaiRealtime => "the Realtime `session.tools` array",
        Provider::OpenaiChat => "Chat Completions `tools`",
        Provider::OpenaiResponses => "Responses `tools`",
        Provider::Anthropic => "Anthropic Messages `tools`",
        Provider::Gemini => "Gemini's `{\"functionDeclarations\": [...]}`",
        Provider::Mcp => "an MCP `tools/list` result of the server tools",
    }
}

pub(super) fn marker_docs(tool: &IrTool) -> Vec<String> {
    let def = &tool.def;
    let mut docs = vec![format!("The {} tool `{}`.", def.location, def.name)];
    docs.push(String::new());
    docs.extend(doc_lines(&def.description));
    if let Some(file) = &tool.origin.file {
        docs.push(String::new());
        docs.push(format!("Declared in `{file}`, line {}.", tool.origin.line));
    }
    docs
}

pub(super) fn executor_docs(tool: &IrTool) -> Vec<String> {
    let mut docs = vec![format!("Executor of the server tool `{}`.", tool.def.name)];
    docs.push(String::new());
    docs.extend(doc_lines(&tool.def.description));
    if let Some(t) = tool.def.timeout {
        docs.push(String::new());
        docs.push(format!(
            "The registry stops the call after {} ms.",
            t.as_millis()
        ));
    }
    docs
}

/// The server trait's docs and its `on_unimplemented` message, label and note.
pub(super) fn server_trait_texts(trait_name: &str, tools: &[IrTool]) -> (Vec<String>, [String; 3]) {
    let named = |location: Location| {
        tools
            .iter()
            .filter(move |t| t.def.location == location)
            .map(|t| format!("`{}`", t.def.name))
    };
    let server: Vec<String> = named(Location::Server).collect();
    let client: Vec<String> = named(Location::Client).collect();
    let list = if server.is_empty() {
        "none: this manifest has no server tools".to_owned()
    } else {
        server.join(", ")
    };
    let message =
        format!("`{{Self}}` is not the executor of this manifest's server tools ({list})");
    let label = format!("`{{Self}}` does not implement `{trait_name}`");
    let note =
        format!("add `impl {trait_name} for {{Self}}` with one `async fn` per server tool: {list}");
    let mut docs = vec![
        "The executors of the server tools: one method per server tool, none with a default body,"
            .to_owned(),
        "so a server tool without an executor does not compile. Client tools are not here: they run"
            .to_owned(),
        "in the browser and may not have an executor.".to_owned(),
        String::new(),
        format!("Server tools: {list}."),
    ];
    if !client.is_empty() {
        // rustc's E0407 ("method is not a member of trait") cannot be reworded; this is the
        // text an editor shows beside it.
        docs.push(String::new());
        docs.push(format!(
            "Client tools, which have no method here (writing one is error E0407): {}.",
            client.join(", ")
        ));
    }
    (docs, [message, label, note])
}

pub(super) fn doc_attrs(lines: &[String]) -> TokenStream {
    let lines = lines.iter().map(|l| {
        let l = if l.is_empty() {
            String::new()
        } else {
            format!(" {l}")
        };
        quote!(#[doc = #l])
    });
    quote!(#(#lines)*)
}
