//! Rust registry code: an args type and an output type per tool, a marker type per tool with its
//! typed definition, a server trait with one method per server tool (no default bodies, so a
//! missing executor does not compile), `definitions()`, `registry_builder(server)`,
//! `registry(server)`, and `declarations(provider)`: the provider files of `toolc build`
//! (made by the providers' emitter, [`crate::emit::providers`]) as strings.
//!
//! # Schema → Rust types
//!
//! The mapping covers an explicit subset of JSON Schema; everything else becomes
//! `serde_json::Value` (documented on the field), which is still validated against the schema at
//! run time before any executor sees it.
//!
//! | schema | Rust |
//! | --- | --- |
//! | `type: object` with `properties` | a struct; fields in declaration order, doc comments from `description` |
//! | non-required property | `Option<T>` (absent and `null` are both `None`) |
//! | non-required property with a scalar `default` | `T` with `#[serde(default = ...)]` |
//! | `type: string` with a string `enum` | an enum with `#[serde(rename)]` per value |
//! | `type: [T, "null"]`, `anyOf: [T, {type: null}]` | `Option<T>` |
//! | `type: array` with `items` | `Vec<T>` |
//! | `$ref: "#/$defs/Name"` | a named type `{Tool}{Name}` (boxed where it is recursive) |
//! | `type: object` without `properties` | `serde_json::Map<String, Value>` |
//! | `string` / `integer` / `number` / `boolean` | `String` / `i64` / `f64` / `bool` |
//! | `anyOf`, `oneOf`, `allOf`, `if`, `not`, `prefixItems`, `patternProperties`, other `$ref`s, mixed enums | `serde_json::Value` |
//!
//! Names of nested types are derived from their position: `{Tool}Args{Property}`,
//! `{Tool}Output{Property}Item`, `{Tool}{Def}`. A name that is already taken gets a numeric suffix,
//! so output is deterministic and never has duplicate items; field and variant names that collide
//! after conversion to Rust identifiers are disambiguated the same way, keeping their wire names
//! through `#[serde(rename)]`.
//!
//! # Layout
//!
//! `plan` decides the items (types, names, serde attributes, docs) from the IR; `tokens`
//! prints any item as tokens through prettyplease; `text` writes the common items straight as
//! text in prettyplease's exact layout, which is twenty times faster, and its test holds it to
//! that. This module splits the file into parts printed on all cores.

use std::collections::{BTreeMap, BTreeSet};

use foldhash::{HashSet, HashSetExt};

use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::quote;
use serde_json::Value;

use crate::definition::{Approval, Location, Mode};
use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::emit::providers::{self, GeminiSchema, Provider};
use crate::ident::{pascal_case, rust_field, snake_case};
use crate::ir::{Ir, IrTool};

mod plan;
mod text;
mod tokens;
mod untyped;

use text::Text;

/// How the Rust emitter writes one module, beyond what the manifests say.
#[derive(Debug, Clone)]
pub struct RustOptions {
    /// Path through which generated code reaches the runtime.
    pub runtime_path: String,
    /// Name of the generated server trait.
    pub server_trait: String,
    /// The manifest path shown in the `@generated` header.
    pub source: Option<String>,
    /// How the Gemini declarations that `declarations()` gives carry schemas (the same setting
    /// as `providers/gemini.json`'s).
    pub gemini_schema: GeminiSchema,
}

impl Default for RustOptions {
    fn default() -> RustOptions {
        RustOptions {
            runtime_path: "::toolc_runtime".into(),
            server_trait: "ToolServer".into(),
            source: None,
            gemini_schema: GeminiSchema::default(),
        }
    }
}

/// The names the generated module gives each tool's types and its server trait method, in tool
/// order: what code that uses the module depends on. (Fields and variants are named after
/// properties and enum values, which a schema comparison reports on its own.)
pub(crate) fn public_names(ir: &Ir) -> Vec<Vec<String>> {
    let plan = Gen::new(ir, "Server").plan();
    plan.names
        .iter()
        .zip(&plan.items)
        .zip(&ir.tools)
        .map(|((names, items), tool)| {
            let mut out = vec![format!("type `{}`", names.marker)];
            for item in items {
                match item {
                    Item::Struct { name, .. }
                    | Item::Enum { name, .. }
                    | Item::Alias { name, .. } => out.push(format!("type `{name}`")),
                    Item::DefaultFn { .. } => {}
                }
            }
            if tool.def.location == Location::Server {
                out.push(format!(
                    "trait method `{}`",
                    field_ident_text(&tool.def.name)
                ));
            }
            out
        })
        .collect()
}

/// Warns, per tool, of every generated type or field that is `serde_json::Value` because its
/// schema is outside the typed subset (TypeScript types more of them): the user should know
/// where the compiler cannot help. A tool without `returns` is untyped on purpose and not
/// reported.
pub fn untyped_warnings(ir: &Ir, diags: &mut Diagnostics) {
    let Some(last) = ir
        .tools
        .iter()
        .rposition(|tool| untyped::may_be_untyped(&tool.def))
    else {
        return;
    };
    let plan = Gen::new(ir, "Server").plan_first(last + 1);
    warn_untyped(ir, &plan, diags);
}

/// [`generate`], with the warnings of what it writes: the places it leaves untyped
/// ([`untyped_warnings`], from the same plan) and the provider files' (the lowering of
/// `declarations()`, as `toolc build` reports them for `providers/`).
pub fn generate_with_warnings(ir: &Ir, options: &RustOptions, diags: &mut Diagnostics) -> String {
    let gemini = options.gemini_schema;
    generate_in_pieces(ir, options, diags, |diags| {
        providers::files(ir, gemini, diags)
    })
    .concat()
}

/// [`generate_with_warnings`] as the pieces that, concatenated in order, are the file: `toolc
/// build` writes them one after the other instead of copying them into one string first. The
/// provider files come from `files` (run on another thread while the module is planned and
/// printed: `toolc build` hands over the ones its providers' emitter made), which pushes its
/// warnings to the diagnostics it is given.
pub(crate) fn generate_in_pieces(
    ir: &Ir,
    options: &RustOptions,
    diags: &mut Diagnostics,
    files: impl FnOnce(&mut Diagnostics) -> Vec<(Provider, String)> + Send,
) -> Vec<String> {
    let (mut pieces, files, provider_diags) = std::thread::scope(|scope| {
        let lowering = scope.spawn(move || {
            let mut provider_diags = Diagnostics::default();
            let files = files(&mut provider_diags);
            (files, provider_diags)
        });
        let plan = Gen::new(ir, &type_ident_text(&options.server_trait)).plan();
        let mut untyped = Diagnostics::default();
        warn_untyped(ir, &plan, &mut untyped);
        let pieces =
            render_plan_pieces(ir, options, plan, TOOLS_PER_PART, crate::parallel::cores());
        match lowering.join() {
            Ok((files, provider_diags)) => (pieces, files, (provider_diags, untyped)),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    });
    // The providers' warnings come before the Rust plan's, as in `toolc check`.
    let (provider_diags, untyped) = provider_diags;
    diags.extend(provider_diags);
    diags.extend(untyped);
    pieces.push(declarations_piece(ir, options, &files));
    pieces
}

/// `declarations()` and the provider files it gives: the file's last piece.
fn declarations_piece(ir: &Ir, options: &RustOptions, files: &[(Provider, String)]) -> String {
    let trait_name = type_ident_text(&options.server_trait);
    match Text::new(ir, options, &trait_name).and_then(|mut text| text.declarations(files)) {
        Some(written) => written,
        None => pretty(Tokens::new(ir, options, &trait_name).declarations(files)),
    }
}

fn warn_untyped(ir: &Ir, plan: &Plan, diags: &mut Diagnostics) {
    for (tool, items) in ir.tools.iter().zip(&plan.items) {
        let mut places: Vec<(String, &'static str)> = Vec::new();
        for item in items {
            match item {
                Item::Struct { name, fields, .. } => {
                    for field in fields {
                        if let Some(reason) = field.ty.untyped_reason() {
                            places.push((format!("field `{name}::{}`", field.rust), reason));
                        }
                    }
                }
                Item::Alias { name, ty, .. } => match ty.untyped_reason() {
                    Some("no `returns` schema") | None => {}
                    Some(reason) => places.push((format!("type `{name}`"), reason)),
                },
                Item::Enum { .. } | Item::DefaultFn { .. } => {}
            }
        }
        if places.is_empty() {
            continue;
        }
        let list: Vec<String> = places
            .iter()
            .map(|(place, reason)| format!("{place} ({reason})"))
            .collect();
        let mut warning = Diagnostic::warning(
            toolc_core::codes::UNTYPED_RUST,
            format!(
                "`{}` has {} the generated Rust leaves as `serde_json::Value`: {}",
                tool.def.name,
                crate::diagnostic::count(places.len(), "place"),
                list.join(", ")
            ),
        )
        .help(
            "the registry still validates these values against the schema; to type them, use \
             one `type` per value, `$ref`s into `#/$defs`, and an `anyOf` only of `null` and one \
             schema (or of `required` lists over declared properties)",
        );
        if let Some(span) = tool.origin.name {
            warning = warning.at(span, "this tool");
        }
        diags.push(warning);
    }
}

/// The server trait's name for a manifest: `support.tools.yaml` → `SupportServer`.
pub fn server_trait_for(manifest_stem: &str) -> String {
    format!("{}Server", type_ident_text(manifest_stem))
}

/// The Rust module for the IR, as text; [`generate_with_warnings`] also reports the
/// places it leaves untyped and the provider files' warnings.
pub fn generate(ir: &Ir, options: &RustOptions) -> String {
    generate_with_warnings(ir, options, &mut Diagnostics::default())
}

/// Tools pretty-printed together. Printing one huge file costs more per item than printing small
/// ones (the token buffers outgrow the caches), and small parts spread well across threads.
const TOOLS_PER_PART: usize = 16;

/// Names and types are planned over the whole manifest first, in tool order, because a nested
/// type's name depends on every name taken before it. The planned items are then turned into
/// tokens and pretty-printed in parts of `per_part` tools (the server trait, `definitions` and
/// `registry` form one more part) on up to `threads` threads. A file's items are printed one after
/// the other with nothing carried from one to the next, so the parts concatenated in order are
/// exactly the file printed whole. (Without `declarations()`, the piece that follows them.)
#[cfg(test)]
fn generate_in_parts(ir: &Ir, options: &RustOptions, per_part: usize, threads: usize) -> String {
    let plan = Gen::new(ir, &type_ident_text(&options.server_trait)).plan();
    render_plan(ir, options, plan, per_part, threads)
}

/// The file of a [`Gen::plan`], printed in parts (see [`generate_in_parts`]).
#[cfg(test)]
fn render_plan(
    ir: &Ir,
    options: &RustOptions,
    plan: Plan,
    per_part: usize,
    threads: usize,
) -> String {
    render_plan_pieces(ir, options, plan, per_part, threads).concat()
}

/// [`render_plan`] as its pieces in file order: the header, then the printed parts.
fn render_plan_pieces(
    ir: &Ir,
    options: &RustOptions,
    plan: Plan,
    per_part: usize,
    threads: usize,
) -> Vec<String> {
    let trait_name = type_ident_text(&options.server_trait);
    let tool_parts: Vec<std::ops::Range<usize>> = (0..ir.tools.len())
        .step_by(per_part.max(1))
        .map(|start| start..start.saturating_add(per_part).min(ir.tools.len()))
        .collect();
    // The closing part is the largest single one: it goes first, so that it does not finish last.
    let mut order: Vec<Option<usize>> = vec![None];
    order.extend((0..tool_parts.len()).map(Some));
    let render = |tokens: &Tokens, text: &mut Option<Text>, part: Option<usize>| -> String {
        let mut out = String::new();
        match part {
            Some(i) => {
                for t in tool_parts[i].clone() {
                    for item in &plan.items[t] {
                        match text.as_mut().and_then(|text| text.item(item)) {
                            Some(written) => out.push_str(&written),
                            None => out.push_str(&pretty(tokens.item(item))),
                        }
                    }
                    let (tool, names) = (&ir.tools[t], &plan.names[t]);
                    match text.as_mut().and_then(|text| text.marker(tool, names)) {
                        Some(written) => out.push_str(&written),
                        None => out.push_str(&pretty(tokens.marker(tool, names))),
                    }
                }
            }
            None => match text.as_mut().and_then(|text| text.closing(&plan.names)) {
                Some(written) => out.push_str(&written),
                None => out.push_str(&pretty(tokens.closing(&plan.names))),
            },
        }
        out
    };
    // Token streams cannot cross threads: each thread makes its own.
    let printed = crate::parallel::each_index(
        order.len(),
        threads.min(8),
        || {
            (
                Tokens::new(ir, options, &trait_name),
                Text::new(ir, options, &trait_name),
            )
        },
        |(tokens, text), i, _| (order[i], render(tokens, text, order[i])),
    );
    let mut printed: Vec<(Option<usize>, String)> =
        printed.into_iter().map(|(_, part)| part).collect();
    // Tool parts in tool order, then the closing part (`None` sorts first, hence the key).
    printed.sort_by_key(|(part, _)| part.map_or(usize::MAX, |i| i));
    let mut header = String::from("// @generated by toolc");
    if let Some(source) = &options.source {
        header.push_str(" from ");
        header.push_str(source);
    }
    header.push_str(". Do not edit.\n\n");
    std::iter::once(header)
        .chain(printed.into_iter().map(|(_, text)| text))
        .collect()
}

/// A Rust type as the generator sees it.
#[derive(Clone, Debug, PartialEq)]
enum Ty {
    String,
    I64,
    F64,
    Bool,
    /// `serde_json::Value`, with the reason it is not typed.
    Value(&'static str),
    Map,
    /// `BTreeMap<String, T>`: an object of any keys whose values have one typed schema.
    MapOf(Box<Ty>),
    Vec(Box<Ty>),
    Option(Box<Ty>),
    Boxed(Box<Ty>),
    Named(String),
    /// The runtime's `ToolContent` (`returns: content`).
    Content,
}

impl Ty {
    fn is_option(&self) -> bool {
        matches!(self, Ty::Option(_))
    }

    fn untyped_reason(&self) -> Option<&'static str> {
        match self {
            Ty::Value(reason) => Some(reason),
            Ty::Vec(t) | Ty::Option(t) | Ty::Boxed(t) | Ty::MapOf(t) => t.untyped_reason(),
            _ => None,
        }
    }
}

struct Field {
    rust: String,
    ty: Ty,
    docs: Vec<String>,
    /// `#[serde(...)]` contents.
    serde: Vec<SerdeArg>,
}

/// One argument of a field's `#[serde(...)]`.
enum SerdeArg {
    Rename(String),
    DefaultFn(String),
    Default,
    SkipIfNone,
}

/// The value a default fn returns.
enum DefaultExpr {
    I64(i64),
    F64(f64),
    Bool(bool),
    String(String),
    Variant { ty: String, variant: String },
}

enum Item {
    Struct {
        name: String,
        docs: Vec<String>,
        fields: Vec<Field>,
    },
    Enum {
        name: String,
        docs: Vec<String>,
        /// (variant, wire value)
        variants: Vec<(String, String)>,
    },
    Alias {
        name: String,
        docs: Vec<String>,
        ty: Ty,
    },
    DefaultFn {
        name: String,
        ty: Ty,
        value: DefaultExpr,
    },
}

/// The `$defs` of one root schema: def name → Rust type name, and the Rust names of the defs
/// that are recursive (held in a `Box`).
#[derive(Default)]
struct Defs {
    names: BTreeMap<String, String>,
    recursive_types: BTreeSet<String>,
}

/// What the file will hold, decided over the whole manifest: every name, every item.
struct Plan {
    names: Vec<ToolNames>,
    /// The types of each tool, in file order (its marker follows them).
    items: Vec<Vec<Item>>,
}

struct Gen<'a> {
    ir: &'a Ir,
    trait_name: String,
    /// Every type name in the file, so nested types never collide.
    types: HashSet<String>,
    fns: HashSet<String>,
    items: Vec<Item>,
    /// Enum name → (wire value → variant), for typed defaults.
    enums: BTreeMap<String, BTreeMap<String, String>>,
    emitted_defs: BTreeSet<String>,
}

struct ToolNames {
    marker: String,
    args: String,
    output: String,
}

/// Turns planned items into tokens. Token streams cannot be sent to another thread, so every
/// thread that prints a part of the file has its own.
struct Tokens<'a> {
    ir: &'a Ir,
    rt: TokenStream,
    serde_crate: String,
    trait_name: &'a str,
}

/// A raw string literal for `text`, with enough `#`s that it cannot end early.
fn raw_string(text: &str) -> Literal {
    let mut hashes = String::from("#");
    while text.contains(&format!("\"{hashes}")) {
        hashes.push('#');
    }
    format!("r{hashes}\"{text}\"{hashes}")
        .parse()
        .unwrap_or_else(|_| Literal::string(text))
}

/// `Literal::string(text).to_string()`, without building the literal where the text needs no
/// escaping (printable ASCII other than `"` and `\`), which is nearly every name and description.
fn string_literal_text(text: &str) -> String {
    if text
        .bytes()
        .all(|b| (b' '..=b'~').contains(&b) && b != b'"' && b != b'\\')
    {
        let mut out = String::with_capacity(text.len() + 2);
        out.push('"');
        out.push_str(text);
        out.push('"');
        out
    } else {
        Literal::string(text).to_string()
    }
}

/// [`raw_string`] as text, without building the literal: schemas are the largest part of the file.
fn raw_string_text(text: &str) -> String {
    if text.contains('\r') {
        return raw_string(text).to_string(); // a raw string cannot hold a bare CR
    }
    let mut hashes = String::from("#");
    while text.contains(&format!("\"{hashes}")) {
        hashes.push('#');
    }
    format!("r{hashes}\"{text}\"{hashes}")
}

/// Items as prettyplease prints them.
fn pretty(tokens: TokenStream) -> String {
    match syn::parse2::<syn::File>(tokens) {
        Ok(file) => prettyplease::unparse(&file),
        Err(e) => panic!("toolc generated Rust that does not parse (a toolc bug): {e}"),
    }
}

/// A PascalCase type name made of ASCII letters and digits only.
fn type_ident_text(name: &str) -> String {
    let pascal: String = pascal_case(name)
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    match pascal.chars().next() {
        None => "Unnamed".to_owned(),
        Some(c) if c.is_ascii_digit() => format!("V{pascal}"),
        Some(_) => pascal,
    }
}

/// A snake_case field or method name made of ASCII characters, raw where it is a keyword.
fn field_ident_text(name: &str) -> String {
    let field = rust_field(name);
    let (raw, bare) = match field.strip_prefix("r#") {
        Some(bare) => (true, bare.to_owned()),
        None => (false, field),
    };
    let ascii: String = bare
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    let ascii = ascii.trim_matches('_').to_owned();
    let ascii = match ascii.chars().next() {
        None => "field".to_owned(),
        Some(c) if c.is_ascii_digit() => format!("f_{ascii}"),
        Some(_) => ascii,
    };
    if raw && ascii == bare {
        format!("r#{ascii}")
    } else if crate::ident::is_rust_keyword(&ascii) {
        if matches!(ascii.as_str(), "self" | "super" | "crate" | "Self") {
            format!("{ascii}_")
        } else {
            format!("r#{ascii}")
        }
    } else {
        ascii
    }
}

fn unraw(name: &str) -> &str {
    name.strip_prefix("r#").unwrap_or(name)
}

fn ident(name: &str) -> Ident {
    match name.strip_prefix("r#") {
        Some(bare) => Ident::new_raw(bare, Span::call_site()),
        None => Ident::new(name, Span::call_site()),
    }
}

#[cfg(test)]
mod tests {
    use super::plan::recursive_defs;
    use super::*;

    #[test]
    fn recursive_definitions_are_the_ones_on_a_cycle() {
        let graph =
            |pairs: &[(&'static str, &[&str])]| -> BTreeMap<&'static str, BTreeSet<String>> {
                pairs
                    .iter()
                    .map(|(n, to)| (*n, to.iter().map(|t| (*t).to_owned()).collect()))
                    .collect()
            };
        let found = recursive_defs(&graph(&[
            ("Tree", &["Tree"]),
            ("A", &["B"]),
            ("B", &["C", "Leaf"]),
            ("C", &["A"]),
            ("Entry", &["A", "Missing"]),
            ("Leaf", &[]),
        ]));
        let expected: BTreeSet<String> = ["A", "B", "C", "Tree"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        assert_eq!(found, expected);
        // A chain as long as a manifest allows: no cycle, and no recursion to overflow.
        let names: Vec<String> = (0..100_000).map(|i| format!("D{i}")).collect();
        let chain: BTreeMap<&str, BTreeSet<String>> = names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let next = names.get(i + 1).cloned().into_iter().collect();
                (n.as_str(), next)
            })
            .collect();
        assert!(recursive_defs(&chain).is_empty());
    }

    /// The file printed in parts, on any number of threads, is the file printed whole.
    #[test]
    fn parts_concatenate_to_the_whole_file() {
        let mut session = crate::Session::new();
        session.add_manifest(
            "synthetic.tools.yaml",
            crate::synthetic::manifest(23).as_bytes(),
        );
        let ir = session.check().expect("valid");
        let options = RustOptions {
            source: Some("synthetic.tools.yaml".into()),
            ..RustOptions::default()
        };
        let whole = printed_whole(&ir, &options);
        assert!(whole.contains("pub fn registry<S: ToolServer>"));
        for (per_part, threads) in [(1, 1), (1, 2), (4, 3), (7, 2), (16, 8)] {
            assert!(
                generate_in_parts(&ir, &options, per_part, threads) == whole,
                "{per_part} tools per part on {threads} threads"
            );
        }
        let empty = crate::Ir::default();
        assert_eq!(
            generate_in_parts(&empty, &options, 1, 2),
            printed_whole(&empty, &options)
        );
    }

    /// The whole file as one token stream, parsed and printed once.
    fn printed_whole(ir: &Ir, options: &RustOptions) -> String {
        let trait_name = type_ident_text(&options.server_trait);
        let plan = Gen::new(ir, &trait_name).plan();
        let tokens = Tokens::new(ir, options, &trait_name);
        let mut stream = TokenStream::new();
        for (t, tool) in ir.tools.iter().enumerate() {
            for item in &plan.items[t] {
                stream.extend(tokens.item(item));
            }
            stream.extend(tokens.marker(tool, &plan.names[t]));
        }
        stream.extend(tokens.closing(&plan.names));
        let file: syn::File = syn::parse2(stream).expect("generated Rust parses");
        let mut out = format!(
            "// @generated by toolc from {}. Do not edit.\n\n",
            options.source.as_deref().unwrap_or_default()
        );
        out.push_str(&prettyplease::unparse(&file));
        out
    }
}
