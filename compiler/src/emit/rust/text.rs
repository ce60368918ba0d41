//! The text printer: planned items written straight as text in exactly prettyplease's layout,
//! for the common case. Its contract is its test, `fast_path_matches_prettyplease`: every item
//! it writes is byte for byte what the token printer gives; anything it is not sure of it leaves
//! to the token printer (`None`).

use super::tokens::*;
use super::*;

/// The column prettyplease keeps lines within: a group whose text would end past it is broken.
const MARGIN: usize = 89;

/// Writes planned items straight as text, in exactly the layout prettyplease gives them, for the
/// common case: the default runtime path and lines that either fit within the margin or break in
/// one of the few known ways (a call's argument on its own line, a list one element per line).
/// Every method returns `None` where the layout is not certain, and the caller prints that item
/// through tokens and prettyplease instead. Going through tokens, `syn` and prettyplease costs
/// about twenty times as much as writing the text, and the generated file is megabytes for large
/// manifests. `fast_path_matches_prettyplease` compares the two on thousands of items.
pub(super) struct Text<'a> {
    ir: &'a Ir,
    trait_name: &'a str,
    out: String,
}

const RT: &str = "::toolc_runtime";

const STRUCT_DERIVES: &str = "#[derive(\n    Debug,\n    Clone,\n    PartialEq,\n    ::toolc_runtime::__private::serde::Serialize,\n    ::toolc_runtime::__private::serde::Deserialize\n)]\n#[serde(crate = \"::toolc_runtime::__private::serde\")]\n#[allow(dead_code)]\n";
const ENUM_DERIVES: &str = "#[derive(\n    Debug,\n    Clone,\n    Copy,\n    PartialEq,\n    Eq,\n    Hash,\n    ::toolc_runtime::__private::serde::Serialize,\n    ::toolc_runtime::__private::serde::Deserialize\n)]\n#[serde(crate = \"::toolc_runtime::__private::serde\")]\n#[allow(dead_code)]\n";

impl<'a> Text<'a> {
    /// `None` unless the runtime path is the default one, the only one the layout is known for.
    pub(super) fn new(ir: &'a Ir, options: &RustOptions, trait_name: &'a str) -> Option<Text<'a>> {
        (options.runtime_path.trim() == RT).then(|| Text {
            ir,
            trait_name,
            out: String::new(),
        })
    }

    /// Runs `write` on a scratch buffer and returns what it wrote, or `None` (and nothing
    /// written) when it gave up.
    pub(super) fn attempt(
        &mut self,
        write: impl FnOnce(&mut Self) -> Option<()>,
    ) -> Option<String> {
        self.out.clear();
        write(self).map(|()| std::mem::take(&mut self.out))
    }

    pub(super) fn indent(&mut self, indent: usize) {
        self.out.extend(std::iter::repeat_n(' ', indent));
    }

    /// A line that prettyplease never breaks, however long.
    pub(super) fn line(&mut self, indent: usize, parts: &[&str]) {
        self.indent(indent);
        for part in parts {
            self.out.push_str(part);
        }
        self.out.push('\n');
    }

    /// A line that stays whole only while it fits; past the margin the caller falls back.
    /// `pre_break` is a comma that prettyplease writes only when the enclosing list is broken,
    /// which it does not count when it decides.
    pub(super) fn fitting_line(
        &mut self,
        indent: usize,
        parts: &[&str],
        pre_break: &str,
    ) -> Option<()> {
        let len = indent + parts.iter().map(|p| p.len()).sum::<usize>();
        if len > MARGIN {
            return None;
        }
        self.line(indent, &[parts, &[pre_break]].concat());
        Some(())
    }

    pub(super) fn docs(&mut self, indent: usize, lines: &[String]) -> Option<()> {
        for l in lines {
            // Multi-line or padded doc strings are printed in other forms.
            if l.contains(['\n', '\r']) || l.ends_with(char::is_whitespace) {
                return None;
            }
            if l.is_empty() {
                self.line(indent, &["///"]);
            } else {
                self.line(indent, &["/// ", l]);
            }
        }
        Some(())
    }

    /// `#[path(args)]`, on one line when it fits, else one argument per line.
    pub(super) fn attr(&mut self, indent: usize, path: &str, args: &[String]) {
        let flat = indent + path.len() + 5 + args.iter().map(|a| a.len() + 2).sum::<usize>() - 2;
        if flat <= MARGIN {
            self.line(indent, &["#[", path, "(", &args.join(", "), ")]"]);
            return;
        }
        self.line(indent, &["#[", path, "("]);
        for (i, arg) in args.iter().enumerate() {
            let sep = if i + 1 < args.len() { "," } else { "" };
            self.line(indent + 4, &[arg, sep]);
        }
        self.line(indent, &[")]"]);
    }

    /// `prefix callee(arg)suffix`, or the argument on its own line when that does not fit.
    /// `suffix` is `,` for a field that is not the last one (it counts), `pre_break` for the last
    /// one (it does not).
    pub(super) fn call(
        &mut self,
        indent: usize,
        prefix: &str,
        callee: &str,
        arg: &str,
        suffix: &str,
        pre_break: &str,
    ) -> Option<()> {
        let flat = indent + prefix.len() + callee.len() + arg.len() + 2 + suffix.len();
        if flat <= MARGIN {
            self.line(indent, &[prefix, callee, "(", arg, ")", suffix, pre_break]);
            return Some(());
        }
        if indent + prefix.len() + callee.len() + 1 > MARGIN {
            return None;
        }
        self.line(indent, &[prefix, callee, "("]);
        self.line(indent + 4, &[arg, ","]);
        self.line(indent, &[")", suffix, pre_break]);
        Some(())
    }

    pub(super) fn ty(&self, ty: &Ty) -> String {
        match ty {
            Ty::String => "::std::string::String".into(),
            Ty::I64 => "i64".into(),
            Ty::F64 => "f64".into(),
            Ty::Bool => "bool".into(),
            Ty::Value(_) => "::toolc_runtime::__private::serde_json::Value".into(),
            Ty::Content => "::toolc_runtime::ToolContent".into(),
            Ty::Map => "::toolc_runtime::__private::serde_json::Map<::std::string::String, ::toolc_runtime::__private::serde_json::Value>".into(),
            Ty::MapOf(t) => format!(
                "::std::collections::BTreeMap<::std::string::String, {}>",
                self.ty(t)
            ),
            Ty::Vec(t) => format!("::std::vec::Vec<{}>", self.ty(t)),
            Ty::Option(t) => format!("::std::option::Option<{}>", self.ty(t)),
            Ty::Boxed(t) => format!("::std::boxed::Box<{}>", self.ty(t)),
            Ty::Named(name) => name.clone(),
        }
    }

    pub(super) fn item(&mut self, item: &Item) -> Option<String> {
        self.attempt(|t| match item {
            Item::Struct { name, docs, fields } => {
                t.docs(0, docs)?;
                t.out.push_str(STRUCT_DERIVES);
                if fields.is_empty() {
                    t.line(0, &["pub struct ", name, " {}"]);
                    return Some(());
                }
                t.line(0, &["pub struct ", name, " {"]);
                for f in fields {
                    t.docs(4, &f.docs)?;
                    if !f.serde.is_empty() {
                        let args: Vec<String> = f
                            .serde
                            .iter()
                            .map(|a| match a {
                                SerdeArg::Rename(wire) => {
                                    format!("rename = {}", string_literal_text(wire))
                                }
                                SerdeArg::DefaultFn(path) => {
                                    format!("default = {}", string_literal_text(path))
                                }
                                SerdeArg::Default => "default".into(),
                                SerdeArg::SkipIfNone => {
                                    "skip_serializing_if = \"::std::option::Option::is_none\""
                                        .into()
                                }
                            })
                            .collect();
                        t.attr(4, "serde", &args);
                    }
                    let ty = t.ty(&f.ty);
                    t.fitting_line(4, &["pub ", &f.rust, ": ", &ty, ","], "")?;
                }
                t.line(0, &["}"]);
                Some(())
            }
            Item::Enum {
                name,
                docs,
                variants,
            } => {
                t.docs(0, docs)?;
                t.out.push_str(ENUM_DERIVES);
                t.line(0, &["pub enum ", name, " {"]);
                for (variant, wire) in variants {
                    t.docs(4, &[format!("`{wire}`")])?;
                    if variant != wire {
                        t.attr(
                            4,
                            "serde",
                            &[format!("rename = {}", string_literal_text(wire))],
                        );
                    }
                    t.line(4, &[variant, ","]);
                }
                t.line(0, &["}"]);
                Some(())
            }
            Item::Alias { name, docs, ty } => {
                t.docs(0, docs)?;
                t.line(0, &["#[allow(dead_code)]"]);
                let ty = t.ty(ty);
                t.fitting_line(0, &["pub type ", name, " = ", &ty, ";"], "")
            }
            Item::DefaultFn { name, ty, value } => {
                t.line(0, &["#[doc(hidden)]"]);
                let ty = t.ty(ty);
                t.fitting_line(0, &["fn ", name, "() -> ", &ty, " {"], "")?;
                match value {
                    DefaultExpr::String(s) => {
                        let lit = string_literal_text(s);
                        t.call(4, "", "::std::string::String::from", &lit, "", "")?;
                    }
                    other => {
                        let text = Tokens::default_expr(other).to_string();
                        let text = match other {
                            DefaultExpr::Variant { ty, variant } => format!("{ty}::{variant}"),
                            _ => text,
                        };
                        t.fitting_line(4, &[&text], "")?;
                    }
                }
                t.line(0, &["}"]);
                Some(())
            }
        })
    }

    pub(super) fn marker(&mut self, tool: &IrTool, names: &ToolNames) -> Option<String> {
        self.attempt(|t| {
            let def = &tool.def;
            t.docs(0, &marker_docs(tool))?;
            t.line(
                0,
                &["#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]"],
            );
            t.line(0, &["#[allow(dead_code)]"]);
            t.line(0, &["pub struct ", &names.marker, ";"]);
            t.line(0, &["impl ::toolc_runtime::Tool for ", &names.marker, " {"]);
            let name = string_literal_text(&def.name);
            t.fitting_line(4, &["const NAME: &'static str = ", &name, ";"], "")?;
            let location = match def.location {
                Location::Server => "::toolc_runtime::Location::Server",
                Location::Client => "::toolc_runtime::Location::Client",
            };
            t.line(
                4,
                &[
                    "const LOCATION: ::toolc_runtime::Location = ",
                    location,
                    ";",
                ],
            );
            t.fitting_line(4, &["type Args = ", &names.args, ";"], "")?;
            t.fitting_line(4, &["type Output = ", &names.output, ";"], "")?;
            t.line(4, &["fn definition() -> ::toolc_runtime::ToolDefinition {"]);
            t.line(8, &["::toolc_runtime::ToolDefinition {"]);
            let string_from = "::std::string::String::from";
            let schema = "::toolc_runtime::__private::schema";
            t.call(12, "name: ", string_from, &name, ",", "")?;
            let description = string_literal_text(&def.description);
            t.call(12, "description: ", string_from, &description, ",", "")?;
            t.line(12, &["location: ", location, ","]);
            let parameters = raw_string_text(&def.parameters.to_string());
            t.call(12, "parameters: ", schema, &parameters, ",", "")?;
            // Fields at their default are left to `..Default::default()` (see `Tokens::marker`).
            if let Some(r) = &def.returns {
                let lit = raw_string_text(&r.to_string());
                t.some(12, "returns: ", schema, &lit)?;
            }
            if let Some(d) = def.timeout {
                let ms = Literal::u64_suffixed(d.as_millis() as u64).to_string();
                t.some(12, "timeout: ", "::std::time::Duration::from_millis", &ms)?;
            }
            if !def.wait_for_response {
                t.line(12, &["wait_for_response: false,"]);
            }
            if !def.filler.is_empty() {
                let phrases: Vec<String> =
                    def.filler.iter().map(|p| string_literal_text(p)).collect();
                let flat: Vec<String> = phrases
                    .iter()
                    .map(|p| format!("{string_from}({p})"))
                    .collect();
                let flat = format!("[{}]", flat.join(", "));
                let prefix = "filler: ::std::vec::Vec::from(";
                // Not the last field: its comma counts.
                let width = 12 + prefix.len() + flat.len() + "),".len();
                if width <= MARGIN {
                    t.line(12, &[prefix, &flat, "),"]);
                } else {
                    t.line(12, &[prefix, "["]);
                    for (i, p) in phrases.iter().enumerate() {
                        let last = i + 1 == phrases.len();
                        let (suffix, pre_break) = if last { ("", ",") } else { (",", "") };
                        t.call(16, "", string_from, p, suffix, pre_break)?;
                    }
                    t.line(12, &["]),"]);
                }
            }
            // A title, hints, scopes or a call policy are rare: prettyplease prints those.
            if def.title.is_some()
                || !def.annotations.is_empty()
                || !def.scopes.is_empty()
                || !def.policy.is_default()
            {
                return None;
            }
            t.line(12, &["..::std::default::Default::default()"]);
            t.line(8, &["}"]);
            t.line(4, &["}"]);
            t.line(0, &["}"]);
            Some(())
        })
    }

    /// A struct field `prefix ::std::option::Option::Some(callee(arg)),` (not the last field),
    /// broken from the outside in as far as it has to be.
    pub(super) fn some(
        &mut self,
        indent: usize,
        prefix: &str,
        callee: &str,
        arg: &str,
    ) -> Option<()> {
        let some = "::std::option::Option::Some";
        let inner = format!("{callee}({arg})");
        if indent + prefix.len() + some.len() + inner.len() + 3 <= MARGIN {
            self.line(indent, &[prefix, some, "(", &inner, "),"]);
            return Some(());
        }
        self.line(indent, &[prefix, some, "("]);
        self.call(indent + 4, "", callee, arg, "", ",")?;
        self.line(indent, &["),"]);
        Some(())
    }

    /// The server trait, `definitions()`, `registry_builder()` and `registry()`.
    pub(super) fn closing(&mut self, names: &[ToolNames]) -> Option<String> {
        // A manifest `mcp.list_ttl` or toolsets are rare: prettyplease prints the registry that
        // carries them.
        if self.ir.mcp_list_ttl().is_some() || self.ir.tools.iter().any(|t| t.toolset.is_some()) {
            return None;
        }
        let server: Vec<(&IrTool, &ToolNames)> = self
            .ir
            .tools
            .iter()
            .zip(names)
            .filter(|(t, _)| t.def.location == Location::Server)
            .collect();
        let trait_name = self.trait_name;
        self.attempt(|t| {
            let (docs, [message, label, note]) = server_trait_texts(trait_name, &self.ir.tools);
            t.docs(0, &docs)?;
            let args = [
                format!("message = {}", string_literal_text(&message)),
                format!("label = {}", string_literal_text(&label)),
                format!("note = {}", string_literal_text(&note)),
            ];
            t.attr(0, "diagnostic::on_unimplemented", &args);
            let header = [
                "pub trait ",
                trait_name,
                ": ::std::marker::Send + ::std::marker::Sync + 'static {",
            ];
            if server.is_empty() {
                t.line(0, &[&header[..], &["}"]].concat());
            } else {
                t.line(0, &header);
                for (tool, n) in &server {
                    t.docs(4, &executor_docs(tool))?;
                    let method = field_ident_text(&tool.def.name);
                    t.line(4, &["fn ", &method, "("]);
                    t.line(8, &["&self,"]);
                    t.line(8, &["ctx: &::toolc_runtime::CallContext,"]);
                    t.line(8, &["args: ", &n.args, ","]);
                    t.line(4, &[") -> impl ::std::future::Future<"]);
                    let output = [
                        "Output = ::std::result::Result<",
                        &n.output,
                        ", ::toolc_runtime::ToolError>",
                    ];
                    if t.fitting_line(8, &output, ",").is_none() {
                        t.line(8, &["Output = ::std::result::Result<"]);
                        t.line(12, &[&n.output, ","]);
                        t.line(12, &["::toolc_runtime::ToolError,"]);
                        t.line(8, &[">,"]);
                    }
                    t.line(4, &["> + ::std::marker::Send;"]);
                }
                t.line(0, &["}"]);
            }

            t.line(
                0,
                &["/// The definitions of every tool of this manifest, in declaration order."],
            );
            t.line(0, &["#[allow(dead_code)]"]);
            t.line(
                0,
                &["pub fn definitions() -> ::std::vec::Vec<::toolc_runtime::ToolDefinition> {"],
            );
            let entries: Vec<String> = names
                .iter()
                .map(|n| format!("<{} as ::toolc_runtime::Tool>::definition()", n.marker))
                .collect();
            let flat = entries.iter().map(|e| e.len() + 2).sum::<usize>();
            if 4 + "::std::vec::Vec::from([])".len() + flat.saturating_sub(2) <= MARGIN {
                t.line(4, &["::std::vec::Vec::from([", &entries.join(", "), "])"]);
            } else {
                t.line(4, &["::std::vec::Vec::from(["]);
                for e in &entries {
                    t.line(8, &[e, ","]);
                }
                t.line(4, &["])"]);
            }
            t.line(0, &["}"]);

            t.docs(0, &registry_builder_docs())?;
            t.line(0, &["#[allow(dead_code)]"]);
            let signature = [
                "pub fn registry_builder<S: ",
                trait_name,
                ">(server: S) -> ::toolc_runtime::RegistryBuilder {",
            ];
            if t.fitting_line(0, &signature, "").is_none() {
                t.fitting_line(0, &["pub fn registry_builder<S: ", trait_name, ">("], "")?;
                t.line(4, &["server: S,"]);
                t.line(0, &[") -> ::toolc_runtime::RegistryBuilder {"]);
            }
            if server.is_empty() {
                t.line(4, &["let _ = server;"]);
                t.line(
                    4,
                    &["::toolc_runtime::Registry::builder().definitions(definitions())"],
                );
            } else {
                t.line(4, &["let server = ::std::sync::Arc::new(server);"]);
                t.line(4, &["::toolc_runtime::Registry::builder()"]);
                t.line(8, &[".definitions(definitions())"]);
                for (tool, n) in &server {
                    let method = field_ident_text(&tool.def.name);
                    let name = string_literal_text(&tool.def.name);
                    t.line(8, &[".executor("]);
                    t.line(12, &[&name, ","]);
                    t.line(12, &["::toolc_runtime::__private::typed_executor_with_context({"]);
                    t.line(16, &["let server = ::std::sync::Arc::clone(&server);"]);
                    t.fitting_line(16, &["move |ctx, args: ", &n.args, "| {"], "")?;
                    t.line(20, &["let server = ::std::sync::Arc::clone(&server);"]);
                    t.fitting_line(
                        20,
                        &["async move { server.", &method, "(&ctx, args).await }"],
                        "",
                    )?;
                    t.line(16, &["}"]);
                    t.line(12, &["}),"]);
                    t.line(8, &[")"]);
                }
            }
            t.line(0, &["}"]);

            t.docs(0, &registry_docs())?;
            t.line(0, &["#[allow(dead_code)]"]);
            t.fitting_line(0, &["pub fn registry<S: ", trait_name, ">("], "")?;
            t.line(4, &["server: S,"]);
            t.line(0, &[") -> ::std::result::Result<::toolc_runtime::Registry, ::toolc_runtime::RegistryError> {"]);
            t.line(4, &["registry_builder(server).build()"]);
            t.line(0, &["}"]);
            Some(())
        })
    }

    /// `declarations()` and the provider files it gives (see [`Tokens::declarations`]).
    pub(super) fn declarations(&mut self, files: &[(Provider, String)]) -> Option<String> {
        self.attempt(|t| {
            t.docs(0, &declarations_docs(files))?;
            t.line(0, &["#[allow(dead_code)]"]);
            t.line(
                0,
                &["pub fn declarations(provider: ::toolc_runtime::Provider) -> &'static str {"],
            );
            t.line(4, &["use ::toolc_runtime::Provider;"]);
            t.line(4, &["match provider {"]);
            for (provider, _) in files {
                let variant = format!("{provider:?}");
                let name = declarations_const(*provider);
                t.fitting_line(8, &["Provider::", &variant, " => ", &name, ","], "")?;
            }
            t.line(4, &["}"]);
            t.line(0, &["}"]);
            for (provider, text) in files {
                t.docs(0, &[format!("`providers/{}.json`.", provider.name())])?;
                let name = declarations_const(*provider);
                t.line(
                    0,
                    &["const ", &name, ": &str = ", &raw_string_text(text), ";"],
                );
            }
            Some(())
        })
    }
}

#[cfg(test)]
mod fast_path_tests {
    use super::*;
    use serde_json::json;

    /// A small deterministic generator (xorshift), so the corpus is the same on every run.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }

        /// A length from 1 to `short`, or one time in four from 1 to `long`.
        fn len(&mut self, short: usize, long: usize) -> usize {
            let max = if self.below(4) == 0 { long } else { short };
            1 + self.below(max)
        }

        fn text(&mut self, len: usize, alphabet: &[&str]) -> String {
            (0..len)
                .map(|_| alphabet[self.below(alphabet.len())])
                .collect()
        }

        fn prose(&mut self, max: usize) -> String {
            let len = self.below(max);
            self.text(len, PROSE)
        }
    }

    const WORDS: &[&str] = &["a", "b", "z", "_", "1", "x"];
    const PROSE: &[&str] = &[
        "a", " ", "é", "\"", "\\", "`", "{", "#", "日", "o", "n", "'",
    ];

    fn schema(rng: &mut Rng, depth: usize) -> serde_json::Value {
        let mut properties = serde_json::Map::new();
        for _ in 0..rng.below(5) {
            let key_len = rng.len(12, 70);
            let key = rng.text(key_len, &["a", "b", "_", "-", "A", "9", " "]);
            let value = match rng.below(9) {
                0 => json!({"type": "string", "description": rng.prose(120)}),
                1 => json!({"type": "integer", "default": rng.below(1000)}),
                2 => json!({"type": "number", "default": 0.5}),
                3 => json!({"type": "boolean", "default": true}),
                4 => {
                    let values: Vec<String> = (0..1 + rng.below(4))
                        .map(|_| {
                            let len = rng.len(8, 90);
                            rng.text(len, &["a", "B", "-", " ", "x", "\""])
                        })
                        .collect();
                    let default = values[0].clone();
                    json!({"type": "string", "enum": values, "default": default})
                }
                5 => json!({"type": "string", "default": rng.prose(100)}),
                6 => json!({"type": "array", "items": {"type": "string"}}),
                7 => json!({"type": "object"}),
                _ if depth < 2 => schema(rng, depth + 1),
                _ => json!({"anyOf": [{"type": "string"}, {"type": "integer"}]}),
            };
            properties.insert(key, value);
        }
        let mut root = json!({"type": "object", "properties": properties});
        if rng.below(3) == 0 {
            root["required"] = json!([]);
        }
        root
    }

    fn corpus(seed: u64, tools: usize) -> Ir {
        let mut rng = Rng(seed);
        let defs = (0..tools).map(|i| {
            let name_len = rng.len(20, 60);
            let name = format!("t{}_{i}", rng.text(name_len, WORDS));
            let client = rng.below(3) == 0;
            crate::ToolDefinition {
                name,
                description: rng.prose(160).trim().to_owned(),
                location: if client {
                    Location::Client
                } else {
                    Location::Server
                },
                parameters: schema(&mut rng, 0),
                returns: (rng.below(2) == 0).then(|| schema(&mut rng, 1)),
                timeout: (rng.below(2) == 0)
                    .then(|| std::time::Duration::from_millis(1 + rng.next() % 3_600_000)),
                wait_for_response: rng.below(4) != 0,
                filler: if client {
                    (0..rng.below(4))
                        .map(|_| format!("p{}", rng.prose(70)))
                        .collect()
                } else {
                    Vec::new()
                },
                title: (rng.below(8) == 0).then(|| rng.prose(40)),
                annotations: crate::definition::Annotations {
                    read_only: (rng.below(8) == 0).then_some(true),
                    ..Default::default()
                },
                policy: crate::definition::CallPolicy::DEFAULT,
                ..Default::default()
            }
        });
        Ir::from_definitions(defs.collect::<Vec<_>>())
    }

    /// Every item the text writer accepts is byte for byte what prettyplease prints for it, on
    /// tools with names, descriptions, property names, enum values, defaults and filler phrases
    /// of lengths on both sides of the margin.
    #[test]
    fn fast_path_matches_prettyplease() {
        let (mut written, mut total) = (0, 0);
        for seed in 1..=150u64 {
            // Server trait names that keep `registry_builder`'s signature on one line, that
            // break it, and that do not fit even broken.
            let server_trait = match seed % 4 {
                0 => "ToolServer".to_owned(),
                1 => "SupportServer".to_owned(),
                2 => format!("{}Server", "Long".repeat(seed as usize % 13)),
                _ => format!("{}Server", "Longer".repeat(12)),
            };
            let options = RustOptions {
                server_trait,
                ..RustOptions::default()
            };
            let trait_name = type_ident_text(&options.server_trait);
            let ir = corpus(seed * 7919, 1 + (seed as usize % 9));
            let plan = Gen::new(&ir, &trait_name).plan();
            let tokens = Tokens::new(&ir, &options, &trait_name);
            let mut text = Text::new(&ir, &options, &trait_name).expect("default runtime path");
            let mut compare = |fast: Option<String>, slow: TokenStream, what: &str| {
                total += 1;
                if let Some(fast) = fast {
                    written += 1;
                    let slow = pretty(slow);
                    assert!(
                        fast == slow,
                        "seed {seed}, {what}:\n{fast}\n---- prettyplease:\n{slow}"
                    );
                }
            };
            for (t, tool) in ir.tools.iter().enumerate() {
                for item in &plan.items[t] {
                    compare(text.item(item), tokens.item(item), "item");
                }
                compare(
                    text.marker(tool, &plan.names[t]),
                    tokens.marker(tool, &plan.names[t]),
                    "marker",
                );
            }
            compare(
                text.closing(&plan.names),
                tokens.closing(&plan.names),
                "closing items",
            );
        }
        // The writer must carry most of the file, or it would not be worth having.
        assert!(
            written * 10 > total * 7,
            "{written} of {total} written as text"
        );
    }

    /// `declarations()` and its consts, written as text, are what prettyplease prints, on the
    /// provider files of random tools (quotes and `#` in descriptions and names, so the raw
    /// strings need several `#`s) and of a manifest with no tools.
    #[test]
    fn declarations_match_prettyplease() {
        let options = RustOptions::default();
        let trait_name = type_ident_text(&options.server_trait);
        let mut irs: Vec<Ir> = (1..=20u64)
            .map(|seed| corpus(seed * 104_729, 1 + (seed as usize % 5)))
            .collect();
        irs.push(Ir::default());
        for (i, ir) in irs.iter().enumerate() {
            for gemini in [GeminiSchema::Subset, GeminiSchema::JsonSchema] {
                let files = providers::files(ir, gemini, &mut Diagnostics::default());
                assert_eq!(files.len(), Provider::ALL.len());
                let tokens = Tokens::new(ir, &options, &trait_name);
                let mut text = Text::new(ir, &options, &trait_name).expect("default path");
                let fast = text.declarations(&files).expect("always written as text");
                let slow = pretty(tokens.declarations(&files));
                assert!(
                    fast == slow,
                    "corpus {i}:\n{fast}\n---- prettyplease:\n{slow}"
                );
            }
        }
    }

    #[test]
    fn other_runtime_paths_go_through_prettyplease() {
        let options = RustOptions {
            runtime_path: "crate::rt".into(),
            ..RustOptions::default()
        };
        assert!(Text::new(&Ir::default(), &options, "S").is_none());
    }
}
