//! Tools derived from Rust fn signatures (the `#[tool]` macro's logic, beside the macros and
//! unit tested here; the manifest side comes from `toolc-core`): the syntactic mapping of parameter types to JSON Schema, doc-comment
//! parsing, and the comparison of a signature with a manifest tool, with the manifest file and
//! line in every message.
//!
//! The macros only parse with syn, call into this module and turn each [`Problem`] into a
//! `syn::Error` on the span its [`Target`] names.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{json, Map, Value};

use toolc_core::definition::Location;
use toolc_core::ir::{Ir, IrTool};
use toolc_core::schema_util::escape_segment as escape_pointer;
use toolc_core::source::{SourceMap, Span};
use toolc_core::suggest::did_you_mean;
use toolc_core::Session;

/// What a Rust parameter type means as JSON, decided from its syntax alone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RustType {
    /// `String`, `&str`, `str`.
    String,
    /// A primitive integer; `min` and `max` are the bounds of the Rust type.
    Integer {
        rust: &'static str,
        min: i128,
        max: i128,
    },
    /// `f32`, `f64`.
    Number,
    /// `bool`.
    Boolean,
    /// `Vec<T>`, `&[T]`.
    Array(Box<RustType>),
    /// `Option<T>`: an optional property, or a nullable item inside an array.
    Optional(Box<RustType>),
    /// `serde_json::Value`: any JSON.
    Json,
    /// `()`.
    Unit,
    /// Anything else: its schema comes from `schemars::JsonSchema` at run time.
    Other,
}

const INTEGERS: &[(&str, i128, i128)] = &[
    ("i8", i8::MIN as i128, i8::MAX as i128),
    ("i16", i16::MIN as i128, i16::MAX as i128),
    ("i32", i32::MIN as i128, i32::MAX as i128),
    ("i64", i64::MIN as i128, i64::MAX as i128),
    ("i128", i128::MIN, i128::MAX),
    ("isize", i64::MIN as i128, i64::MAX as i128),
    ("u8", 0, u8::MAX as i128),
    ("u16", 0, u16::MAX as i128),
    ("u32", 0, u32::MAX as i128),
    ("u64", 0, u64::MAX as i128),
    ("u128", 0, i128::MAX),
    ("usize", 0, u64::MAX as i128),
];

impl RustType {
    /// Maps a type by its syntax. Paths are matched on their last segment (`std::string::String`
    /// and `String` alike), except `Value`, which must be spelt with `serde_json`.
    pub fn classify(ty: &syn::Type) -> RustType {
        match ty {
            syn::Type::Reference(r) => match &*r.elem {
                syn::Type::Slice(s) => RustType::Array(Box::new(RustType::classify(&s.elem))),
                inner => RustType::classify(inner),
            },
            syn::Type::Paren(p) => RustType::classify(&p.elem),
            syn::Type::Group(g) => RustType::classify(&g.elem),
            syn::Type::Tuple(t) if t.elems.is_empty() => RustType::Unit,
            syn::Type::Path(p) if p.qself.is_none() => {
                let Some(last) = p.path.segments.last() else {
                    return RustType::Other;
                };
                let ident = last.ident.to_string();
                let single_arg = || match &last.arguments {
                    syn::PathArguments::AngleBracketed(a) if a.args.len() == 1 => {
                        match a.args.first() {
                            Some(syn::GenericArgument::Type(t)) => Some(t),
                            _ => None,
                        }
                    }
                    _ => None,
                };
                let plain = matches!(last.arguments, syn::PathArguments::None);
                match ident.as_str() {
                    "String" | "str" if plain => RustType::String,
                    "bool" if plain => RustType::Boolean,
                    "f32" | "f64" if plain => RustType::Number,
                    "Vec" => single_arg().map_or(RustType::Other, |t| {
                        RustType::Array(Box::new(RustType::classify(t)))
                    }),
                    "Option" => single_arg().map_or(RustType::Other, |t| {
                        RustType::Optional(Box::new(RustType::classify(t)))
                    }),
                    "Value"
                        if plain
                            && p.path.segments.len() >= 2
                            && p.path.segments[p.path.segments.len() - 2].ident == "serde_json" =>
                    {
                        RustType::Json
                    }
                    name if plain => INTEGERS.iter().find(|(n, _, _)| *n == name).map_or(
                        RustType::Other,
                        |&(rust, min, max)| RustType::Integer { rust, min, max },
                    ),
                    _ => RustType::Other,
                }
            }
            _ => RustType::Other,
        }
    }

    /// Whether a schema can be written at compile time (no part asks schemars).
    #[cfg(test)]
    pub fn is_static(&self) -> bool {
        match self {
            RustType::Array(t) | RustType::Optional(t) => t.is_static(),
            RustType::Other => false,
            _ => true,
        }
    }

    /// The JSON Schema of this type, when it is static (no part asks schemars). Unsigned and
    /// narrow integers carry their bounds, so that the validator refuses what would not fit.
    pub fn schema(&self) -> Option<Value> {
        Some(match self {
            RustType::String => json!({ "type": "string" }),
            RustType::Integer { rust, min, max } => {
                let mut s = Map::new();
                s.insert("type".into(), json!("integer"));
                let narrow = !matches!(*rust, "i64" | "isize" | "i128" | "u64" | "usize" | "u128");
                if *min == 0 || narrow {
                    s.insert("minimum".into(), json!(*min as i64));
                }
                if narrow {
                    s.insert("maximum".into(), json!(*max as i64));
                }
                Value::Object(s)
            }
            RustType::Number => json!({ "type": "number" }),
            RustType::Boolean => json!({ "type": "boolean" }),
            RustType::Array(t) => json!({ "type": "array", "items": t.schema()? }),
            RustType::Optional(t) => nullable(t.schema()?),
            RustType::Json => json!({}),
            RustType::Unit => json!({ "type": "null" }),
            RustType::Other => return None,
        })
    }

    /// How a manifest type would be written in Rust, for help texts.
    fn suggest(schema: &Value, defs: &Value) -> String {
        let schema = resolve(schema, defs);
        let types = types_of(schema);
        let t = types.iter().find(|t| *t != "null").map(String::as_str);
        let base = match t {
            Some("string") => "String".to_owned(),
            Some("integer") => {
                if bound(schema, "minimum").or_else(|| bound(schema, "exclusiveMinimum"))
                    >= Some(0.0)
                {
                    "u32".to_owned()
                } else {
                    "i64".to_owned()
                }
            }
            Some("number") => "f64".to_owned(),
            Some("boolean") => "bool".to_owned(),
            Some("array") => match schema.get("items") {
                Some(items) => format!("Vec<{}>", RustType::suggest(items, defs)),
                None => "Vec<serde_json::Value>".to_owned(),
            },
            Some("object") => "a struct deriving JsonSchema + Deserialize".to_owned(),
            _ => "serde_json::Value".to_owned(),
        };
        if types.iter().any(|t| t == "null") {
            format!("Option<{base}>")
        } else {
            base
        }
    }
}

fn nullable(schema: Value) -> Value {
    match schema.get("type") {
        Some(Value::String(t)) if t != "null" => {
            let mut s = schema.clone();
            s["type"] = json!([t, "null"]);
            s
        }
        _ => json!({ "anyOf": [schema, { "type": "null" }] }),
    }
}

/// The owned type an argument struct stores for a parameter: `&str` → `String`, `&[T]` →
/// `Vec<T>`, `&T` → `T`. `None` when the type is already owned.
pub fn owned_type(ty: &syn::Type) -> Option<syn::Type> {
    let syn::Type::Reference(r) = ty else {
        return None;
    };
    Some(match &*r.elem {
        syn::Type::Path(p) if p.qself.is_none() && p.path.is_ident("str") => {
            syn::parse_quote!(::std::string::String)
        }
        syn::Type::Slice(s) => {
            let elem = &s.elem;
            syn::parse_quote!(::std::vec::Vec<#elem>)
        }
        inner => inner.clone(),
    })
}

/// The type inside a top-level `Option<T>`, if the type is one.
pub fn option_inner(ty: &syn::Type) -> Option<&syn::Type> {
    let syn::Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    if last.ident != "Option" {
        return None;
    }
    match &last.arguments {
        syn::PathArguments::AngleBracketed(a) if a.args.len() == 1 => match a.args.first()? {
            syn::GenericArgument::Type(t) => Some(t),
            _ => None,
        },
        _ => None,
    }
}

/// The success type of a return type: `T` for `Result<T, E>` (any path ending in `Result`,
/// aliases such as `io::Result<T>` included), the type itself otherwise. The flag says whether it
/// was a `Result`.
pub fn success_type(ty: &syn::Type) -> (&syn::Type, bool) {
    if let syn::Type::Path(p) = ty {
        if let Some(last) = p.path.segments.last() {
            if last.ident == "Result" {
                if let syn::PathArguments::AngleBracketed(a) = &last.arguments {
                    if let Some(syn::GenericArgument::Type(t)) = a.args.first() {
                        return (t, true);
                    }
                }
            }
        }
    }
    (ty, false)
}

/// A tool description and per-argument descriptions, from a doc comment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Doc {
    pub description: String,
    /// From an `# Arguments` section: `* `name` - text` or `- name: text` items.
    pub arguments: Vec<(String, String)>,
}

/// Parses the lines of a doc comment (each `#[doc = "..."]` value). The description is the text
/// before the first `#` heading, with lines of a paragraph joined by spaces; other sections
/// (`# Errors`, `# Examples`) are for Rust readers and are left out.
pub fn parse_doc(lines: &[String]) -> Doc {
    let mut doc = Doc::default();
    let mut paragraphs: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut section: Option<String> = None;
    let mut last_arg: Option<usize> = None;
    for raw in lines.iter().flat_map(|l| l.split('\n')) {
        let raw = raw.trim_end_matches('\r');
        let line = raw.strip_prefix(' ').unwrap_or(raw).trim_end();
        if let Some(heading) = line.trim_start().strip_prefix('#') {
            section = Some(heading.trim_start_matches('#').trim().to_lowercase());
            last_arg = None;
            continue;
        }
        match section.as_deref() {
            None => {
                if line.trim().is_empty() {
                    if !current.is_empty() {
                        paragraphs.push(std::mem::take(&mut current));
                    }
                } else {
                    if !current.is_empty() {
                        current.push(' ');
                    }
                    current.push_str(line.trim());
                }
            }
            Some("arguments" | "parameters" | "args") => {
                let trimmed = line.trim();
                if let Some(item) = trimmed
                    .strip_prefix("* ")
                    .or_else(|| trimmed.strip_prefix("- "))
                {
                    if let Some((name, text)) = split_argument(item) {
                        doc.arguments.push((name, text));
                        last_arg = Some(doc.arguments.len() - 1);
                    }
                } else if !trimmed.is_empty() {
                    // A continuation line of the previous item.
                    if let Some(i) = last_arg {
                        let text = &mut doc.arguments[i].1;
                        text.push(' ');
                        text.push_str(trimmed);
                    }
                }
            }
            Some(_) => {}
        }
    }
    if !current.is_empty() {
        paragraphs.push(current);
    }
    doc.description = paragraphs.join("\n\n");
    doc
}

fn split_argument(item: &str) -> Option<(String, String)> {
    let item = item.trim();
    let (name, rest) = if let Some(rest) = item.strip_prefix('`') {
        let end = rest.find('`')?;
        (&rest[..end], &rest[end + 1..])
    } else {
        let end = item.find([' ', ':', '-']).unwrap_or(item.len());
        (&item[..end], &item[end..])
    };
    let text = rest
        .trim_start()
        .trim_start_matches([':', '-', '—', '–'])
        .trim();
    let name = name.trim().trim_start_matches("r#");
    if name.is_empty() {
        return None;
    }
    Some((name.to_owned(), text.to_owned()))
}

/// A manifest a `#[tool]` or `tools!` is bound to, loaded and checked.
#[derive(Debug)]
pub struct Manifest {
    /// The path as the user wrote it; shown in messages.
    pub display: String,
    pub sources: SourceMap,
    pub ir: Ir,
}

/// Why a manifest could not be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ManifestError {
    /// The file could not be read.
    Read(String),
    /// The manifest has errors: every diagnostic, rendered.
    Invalid(String),
}

/// One proc-macro process expands every `#[tool]` of a crate: parse each manifest once.
/// Entries are keyed by path and re-validated against the file's bytes, so an edited manifest is
/// never served stale (rust-analyzer keeps the process alive across edits).
type Cache = HashMap<PathBuf, (Vec<u8>, Arc<Manifest>)>;

static CACHE: Mutex<Option<Cache>> = Mutex::new(None);

impl Manifest {
    /// Reads and checks a manifest; `display` is the path as the user wrote it.
    pub fn load(path: &Path, display: &str) -> Result<Arc<Manifest>, ManifestError> {
        let bytes = std::fs::read(path).map_err(|e| {
            ManifestError::Read(format!(
                "cannot read the manifest `{display}` (looked for {}): {e}",
                path.display()
            ))
        })?;
        let mut cache = CACHE
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let map = cache.get_or_insert_with(HashMap::new);
        if let Some((cached, manifest)) = map.get(path) {
            if *cached == bytes && manifest.display == display {
                return Ok(manifest.clone());
            }
        }
        let manifest = Arc::new(Manifest::from_bytes(display, &bytes)?);
        map.insert(path.to_owned(), (bytes, manifest.clone()));
        Ok(manifest)
    }

    /// Checks a manifest from memory (what [`Manifest::load`] does after reading).
    pub fn from_bytes(display: &str, bytes: &[u8]) -> Result<Manifest, ManifestError> {
        let mut session = Session::new();
        session.add_manifest(display, bytes);
        match session.check() {
            Some(ir) => Ok(Manifest {
                display: display.to_owned(),
                sources: session.sources,
                ir,
            }),
            None => Err(ManifestError::Invalid(session.render(false))),
        }
    }

    pub fn tool(&self, name: &str) -> Option<&IrTool> {
        self.ir.get(name)
    }

    fn line(&self, span: Span) -> usize {
        self.sources.get(span.file).line_col(span.start).0
    }

    /// `manifests/x.tools.yaml:12`, the place of a tool's name.
    pub fn place(&self, tool: &IrTool) -> String {
        format!("{}:{}", self.display, tool.origin.line)
    }

    fn place_of(&self, tool: &IrTool, pointer: &str) -> String {
        match tool.parameters_span(pointer) {
            Some(span) => format!("{}:{}", self.display, self.line(span)),
            None => self.place(tool),
        }
    }

    /// Server tools with the line of their name: what a `tools!` bound to this manifest must
    /// provide executors for.
    pub fn server_tools(&self) -> Vec<(&str, String)> {
        self.ir
            .tools
            .iter()
            .filter(|t| t.def.location == Location::Server)
            .map(|t| (t.def.name.as_str(), self.place(t)))
            .collect()
    }

    /// Every definition as JSON text, for generated code to embed.
    pub fn definitions_json(&self) -> String {
        serde_json::to_string(&self.ir.definitions()).unwrap_or_else(|_| "[]".to_owned())
    }

    /// Defaults of a tool's top-level properties, as (property, JSON text).
    pub fn defaults(&self, tool: &IrTool) -> Vec<(String, String)> {
        properties(&tool.def.parameters)
            .map(|props| {
                props
                    .iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.get("default")?.to_string())))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// The signature of a `#[tool]` fn, as the macro parsed it.
#[derive(Clone, Debug)]
pub struct FnTool {
    pub name: String,
    pub location: Location,
    /// Empty for the argument-struct form.
    pub params: Vec<FnParam>,
    /// The fn takes one struct that derives `JsonSchema` + `Deserialize`.
    pub args_struct: bool,
}

#[derive(Clone, Debug)]
pub struct FnParam {
    /// The property name (the parameter's name, or its `#[arg(name = "...")]`).
    pub name: String,
    pub ty: RustType,
    /// The type as written, for messages.
    pub rust: String,
}

/// Where a problem should put its caret.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// The fn's name.
    Tool,
    /// The whole parameter list (a parameter is missing).
    Params,
    /// The n-th parameter's name.
    Param(usize),
    /// The n-th parameter's type.
    ParamType(usize),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub target: Target,
    pub message: String,
    pub help: String,
}

impl Problem {
    fn new(target: Target, message: impl Into<String>, help: impl Into<String>) -> Problem {
        Problem {
            target,
            message: message.into(),
            help: help.into(),
        }
    }
}

/// Compares a `#[tool]` fn with the manifest it is bound to. Every disagreement is returned, in
/// parameter order.
pub fn check_binding(f: &FnTool, manifest: &Manifest) -> Vec<Problem> {
    let name = &f.name;
    let file = &manifest.display;
    let Some(tool) = manifest.tool(name) else {
        let names = manifest.ir.tools.iter().map(|t| t.def.name.as_str());
        return vec![Problem::new(
            Target::Tool,
            format!("tool `{name}` is not declared in the manifest `{file}`"),
            format!(
                "{}add `{name}` to `{file}`, set `name = \"...\"` to the manifest's name for it, or remove `manifest = ...` to define the tool from Rust alone",
                did_you_mean(name, names)
            ),
        )];
    };
    let place = manifest.place(tool);
    match (f.location, tool.def.location) {
        (Location::Server, Location::Client) => {
            return vec![Problem::new(
                Target::Tool,
                format!("tool `{name}` is declared `location: client` in {place}, so it may not have a server executor"),
                format!("client tools run in the browser: declare it without a body as `#[tool(client, manifest = \"{file}\")] fn {name}(...);`, or change its `location` to `server` in {place}"),
            )];
        }
        (Location::Client, Location::Server) => {
            return vec![Problem::new(
                Target::Tool,
                format!("tool `{name}` is declared `location: server` in {place}, but this is a client declaration"),
                format!("a server tool needs an executor: remove `client` and give the fn a body, or change its `location` to `client` in {place}"),
            )];
        }
        _ => {}
    }
    if f.args_struct {
        // The struct's fields are not visible to an attribute on the fn; the manifest's schema
        // is used as is and arguments are validated against it before they are deserialized.
        return Vec::new();
    }
    let params = &tool.def.parameters;
    let empty = Map::new();
    let props = properties(params).unwrap_or(&empty);
    let required: Vec<&str> = params
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut problems = Vec::new();
    for (i, p) in f.params.iter().enumerate() {
        let pointer = format!("/properties/{}", escape_pointer(&p.name));
        let Some(schema) = props.get(&p.name) else {
            problems.push(Problem::new(
                Target::Param(i),
                format!("tool `{name}` has no parameter `{}` in {place}", p.name),
                format!(
                    "{}remove this parameter, or add `{}` to the tool's `parameters` in {file}",
                    extra_hint(&p.name, props, &f.params),
                    p.name
                ),
            ));
            continue;
        };
        let at = manifest.place_of(tool, &pointer);
        let is_required = required.contains(&p.name.as_str());
        let resolved = resolve(schema, params);
        let nullable = types_of(resolved).iter().any(|t| t == "null");
        let has_default = schema.get("default").is_some();
        let (optional, inner) = match &p.ty {
            RustType::Optional(t) => (true, &**t),
            t => (false, t),
        };
        let suggestion = RustType::suggest(schema, params);
        if optional && is_required && !nullable {
            problems.push(Problem::new(
                Target::ParamType(i),
                format!(
                    "parameter `{}` of tool `{name}` is required in {at}, but its type is `{}`",
                    p.name, p.rust
                ),
                format!("use `{suggestion}` (the model always sends it), or remove `{}` from `required` in {file}", p.name),
            ));
            continue;
        }
        if !optional && nullable {
            problems.push(Problem::new(
                Target::ParamType(i),
                format!(
                    "parameter `{}` of tool `{name}` may be null in {at}, but its type `{}` cannot hold null",
                    p.name, p.rust
                ),
                format!("use `Option<{}>`", p.rust),
            ));
            continue;
        }
        if !optional && !is_required && !has_default {
            problems.push(Problem::new(
                Target::ParamType(i),
                format!(
                    "parameter `{}` of tool `{name}` is optional in {at}, but its type `{}` is not an `Option`",
                    p.name, p.rust
                ),
                format!(
                    "use `Option<{}>`, add `{}` to `required`, or give it a `default` in {file}",
                    p.rust, p.name
                ),
            ));
            continue;
        }
        if let Err(why) = compatible(inner, resolved, params, true) {
            problems.push(Problem::new(
                Target::ParamType(i),
                format!(
                    "parameter `{}` of tool `{name}` has type `{}`, but {at} says {why}",
                    p.name, p.rust
                ),
                format!(
                    "use `{suggestion}`, or change the schema of `{}` in {file}",
                    p.name
                ),
            ));
        }
    }
    let missing: Vec<(&String, &Value)> = props
        .iter()
        .filter(|(k, _)| !f.params.iter().any(|p| &p.name == *k))
        .collect();
    for (prop, schema) in missing {
        let at = manifest.place_of(tool, &format!("/properties/{}", escape_pointer(prop)));
        let suggestion = RustType::suggest(schema, params);
        let is_required = required.contains(&prop.as_str());
        let ty = if is_required
            || suggestion.starts_with("Option<")
            || schema.get("default").is_some()
        {
            suggestion
        } else {
            format!("Option<{suggestion}>")
        };
        problems.push(Problem::new(
            Target::Params,
            format!(
                "tool `{name}` is missing parameter `{prop}`, which {at} declares{}",
                if is_required { " as required" } else { "" }
            ),
            format!("add the parameter `{}: {ty}`", rust_ident(prop)),
        ));
    }
    problems
}

/// "Did you mean" for a parameter the manifest does not have: the closest property name, or,
/// when this is the only such parameter and one property is not taken, that property (a rename
/// or typo the edit distance cannot see).
fn extra_hint(param: &str, props: &Map<String, Value>, params: &[FnParam]) -> String {
    let suggestion = did_you_mean(param, props.keys().map(String::as_str));
    if !suggestion.is_empty() {
        return suggestion;
    }
    let untaken: Vec<&String> = props
        .keys()
        .filter(|k| !params.iter().any(|p| &p.name == *k))
        .collect();
    let extra = params
        .iter()
        .filter(|p| !props.contains_key(&p.name))
        .count();
    match untaken.as_slice() {
        [only] if extra == 1 => format!("did you mean `{only}`? "),
        _ => String::new(),
    }
}

fn rust_ident(name: &str) -> String {
    if toolc_core::ident::is_rust_keyword(name) {
        format!("r#{name}")
    } else if name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit())
    {
        name.to_owned()
    } else {
        format!(
            "#[arg(name = \"{name}\")] {}",
            toolc_core::ident::snake_case(name)
        )
    }
}

fn properties(schema: &Value) -> Option<&Map<String, Value>> {
    schema.get("properties")?.as_object()
}

/// Follows a local `$ref` (a few hops at most, so a cycle cannot hang the compiler).
fn resolve<'a>(mut schema: &'a Value, root: &'a Value) -> &'a Value {
    for _ in 0..8 {
        match schema.get("$ref").and_then(Value::as_str) {
            Some(r) => match r.strip_prefix('#').and_then(|p| root.pointer(p)) {
                Some(target) => schema = target,
                None => return schema,
            },
            None => return schema,
        }
    }
    schema
}

/// The JSON types a schema allows: its `type`, or what its `enum`/`const` values are.
fn types_of(schema: &Value) -> Vec<String> {
    match schema.get("type") {
        Some(Value::String(t)) => return vec![t.clone()],
        Some(Value::Array(ts)) => {
            return ts
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        }
        _ => {}
    }
    let values: Vec<&Value> = match (schema.get("enum"), schema.get("const")) {
        (Some(Value::Array(vs)), _) => vs.iter().collect(),
        (_, Some(v)) => vec![v],
        _ => return Vec::new(),
    };
    let mut types: Vec<String> = Vec::new();
    for v in values {
        let t = match v {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        if !types.iter().any(|x| x == t) {
            types.push(t.to_owned());
        }
    }
    types
}

fn bound(schema: &Value, key: &str) -> Option<f64> {
    schema.get(key).and_then(Value::as_f64)
}

/// Whether values valid under `schema` always deserialize into `ty`. `Err` says what the schema
/// allows instead, in words for the message.
fn compatible(ty: &RustType, schema: &Value, root: &Value, top: bool) -> Result<(), String> {
    let schema = resolve(schema, root);
    let all = types_of(schema);
    let nullable = all.iter().any(|t| t == "null");
    let types: Vec<&str> = all
        .iter()
        .map(String::as_str)
        .filter(|t| *t != "null")
        .collect();
    let described = || match types.as_slice() {
        [] if schema.get("anyOf").is_some() || schema.get("oneOf").is_some() => {
            "it is one of several schemas (`anyOf`/`oneOf`)".to_owned()
        }
        [] => "it may be any JSON value".to_owned(),
        [t] => format!("it is of type `{t}`"),
        ts => format!("it may be any of `{}`", ts.join("`, `")),
    };
    let only = |t: &str| types == [t];
    match ty {
        RustType::Json | RustType::Other => Ok(()),
        RustType::Optional(inner) => {
            if !nullable && !top {
                return Err(format!("{} and never null", described()));
            }
            compatible(inner, schema, root, false)
        }
        _ if nullable && !top => Err(format!("{}, or null", described())),
        RustType::String if only("string") => Ok(()),
        RustType::Boolean if only("boolean") => Ok(()),
        RustType::Number if only("number") || only("integer") => Ok(()),
        RustType::Integer { rust, min, max } if only("integer") => {
            let lo = bound(schema, "minimum").or_else(|| bound(schema, "exclusiveMinimum"));
            let hi = bound(schema, "maximum").or_else(|| bound(schema, "exclusiveMaximum"));
            match lo {
                None if *min == 0 => {
                    return Err(format!(
                        "it is an integer with no `minimum`, so it may be negative, which `{rust}` cannot hold"
                    ))
                }
                Some(lo) if lo < *min as f64 => {
                    return Err(format!(
                        "its `minimum` is {lo}, below the smallest `{rust}` ({min})"
                    ))
                }
                _ => {}
            }
            match hi {
                Some(hi) if hi > *max as f64 => Err(format!(
                    "its `maximum` is {hi}, above the largest `{rust}` ({max})"
                )),
                _ => Ok(()),
            }
        }
        RustType::Array(inner) if only("array") => match schema.get("items") {
            Some(items) => compatible(inner, items, root, false)
                .map_err(|why| format!("its items do not fit: {why}")),
            None if matches!(**inner, RustType::Json | RustType::Other) => Ok(()),
            None => {
                Err("it is an array with no `items` schema, so its items may be anything".into())
            }
        },
        RustType::Unit if types.is_empty() && nullable => Ok(()),
        _ => Err(described()),
    }
}

#[cfg(test)]
mod tests;
