//! Rust registry code: an args type and an output type per tool, a marker type per tool with its
//! typed definition, a server trait with one method per server tool (no default bodies, so a
//! missing executor does not compile), `definitions()` and `registry(server)`.
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

use std::collections::{BTreeMap, BTreeSet};

use foldhash::{HashSet, HashSetExt};

use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::quote;
use serde_json::Value;

use crate::definition::{Approval, Location, Mode};
use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::ident::{pascal_case, rust_field, snake_case};
use crate::ir::{Ir, IrTool};

#[derive(Debug, Clone)]
pub struct RustOptions {
    /// Path through which generated code reaches the runtime.
    pub runtime_path: String,
    /// Name of the generated server trait.
    pub server_trait: String,
    /// The manifest path shown in the `@generated` header.
    pub source: Option<String>,
}

impl Default for RustOptions {
    fn default() -> RustOptions {
        RustOptions {
            runtime_path: "::toolc_runtime".into(),
            server_trait: "ToolServer".into(),
            source: None,
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
    let plan = Gen::new(ir, "Server").plan();
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

pub fn generate(ir: &Ir, options: &RustOptions) -> String {
    generate_in_parts(ir, options, TOOLS_PER_PART, crate::parallel::cores())
}

/// Tools pretty-printed together. Printing one huge file costs more per item than printing small
/// ones (the token buffers outgrow the caches), and small parts spread well across threads.
const TOOLS_PER_PART: usize = 16;

/// Names and types are planned over the whole manifest first, in tool order, because a nested
/// type's name depends on every name taken before it. The planned items are then turned into
/// tokens and pretty-printed in parts of `per_part` tools (the server trait, `definitions` and
/// `registry` form one more part) on up to `threads` threads. A file's items are printed one after
/// the other with nothing carried from one to the next, so the parts concatenated in order are
/// exactly the file printed whole.
fn generate_in_parts(ir: &Ir, options: &RustOptions, per_part: usize, threads: usize) -> String {
    let trait_name = type_ident_text(&options.server_trait);
    let plan = Gen::new(ir, &trait_name).plan();
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
                None => {
                    let mut stream = tokens.server_trait(&plan.names);
                    stream.extend(tokens.definitions_fn(&plan.names));
                    stream.extend(tokens.registry_fn(&plan.names));
                    out.push_str(&pretty(stream));
                }
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
    let mut out = String::from("// @generated by toolc");
    if let Some(source) = &options.source {
        out.push_str(" from ");
        out.push_str(source);
    }
    out.push_str(". Do not edit.\n\n");
    out.reserve(printed.iter().map(|(_, text)| text.len()).sum());
    for (_, text) in printed {
        out.push_str(&text);
    }
    out
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

impl<'a> Gen<'a> {
    fn new(ir: &'a Ir, trait_name: &str) -> Gen<'a> {
        Gen {
            ir,
            trait_name: trait_name.to_owned(),
            types: HashSet::new(),
            fns: HashSet::new(),
            items: Vec::new(),
            enums: BTreeMap::new(),
            emitted_defs: BTreeSet::new(),
        }
    }

    fn unique_type(&mut self, wanted: &str) -> String {
        let mut name = wanted.to_owned();
        let mut n = 2;
        while self.types.contains(&name) {
            name = format!("{wanted}{n}");
            n += 1;
        }
        self.types.insert(name.clone());
        name
    }

    fn unique_fn(&mut self, wanted: &str) -> String {
        let mut name = wanted.to_owned();
        let mut n = 2;
        while self.fns.contains(&name) {
            name = format!("{wanted}_{n}");
            n += 1;
        }
        self.fns.insert(name.clone());
        name
    }

    fn plan(mut self) -> Plan {
        // Top-level names are reserved first, in tool order, so they never get a suffix because
        // of some nested type.
        self.types.insert(self.trait_name.clone());
        let ir = self.ir;
        let names: Vec<ToolNames> = ir
            .tools
            .iter()
            .map(|t| {
                let base = type_ident_text(&t.def.name);
                ToolNames {
                    marker: self.unique_type(&base),
                    args: self.unique_type(&format!("{base}Args")),
                    output: self.unique_type(&format!("{base}Output")),
                }
            })
            .collect();
        let items = ir
            .tools
            .iter()
            .zip(&names)
            .map(|(tool, names)| {
                self.tool_types(tool, names);
                std::mem::take(&mut self.items)
            })
            .collect();
        Plan { names, items }
    }

    fn tool_types(&mut self, tool: &IrTool, names: &ToolNames) {
        let def = &tool.def;
        let base = type_ident_text(&def.name);
        let which = match def.location {
            Location::Server => "server",
            Location::Client => "client",
        };
        let mut args_docs = vec![format!("Arguments of the {which} tool `{}`.", def.name)];
        args_docs.push(String::new());
        args_docs.extend(doc_lines(&def.description));
        self.root_with_defs(&def.parameters, &names.args, args_docs, &base);
        match &def.returns {
            Some(returns) => {
                let docs = vec![format!("Result of the {which} tool `{}`.", def.name)];
                self.root_with_defs(returns, &names.output, docs, &base);
            }
            None => self.items.push(Item::Alias {
                name: names.output.clone(),
                docs: vec![
                    format!("Result of the {which} tool `{}`.", def.name),
                    String::new(),
                    "The manifest declares no `returns` schema, so any JSON value is accepted."
                        .into(),
                ],
                ty: Ty::Value("no `returns` schema"),
            }),
        }
    }

    /// A root schema's type, followed in the file by its `$defs`. The defs are generated first
    /// (a field's default may name a variant of a def's enum) and moved after the root.
    fn root_with_defs(&mut self, root: &Value, name: &str, docs: Vec<String>, tool_base: &str) {
        let defs = self.defs(root, tool_base);
        let start = self.items.len();
        self.emit_defs(root, &defs);
        let def_items = self.items.split_off(start);
        self.named_root(root, name, docs, &defs);
        self.items.extend(def_items);
    }

    /// Allocates names for a root's `$defs` and finds the recursive ones.
    fn defs(&mut self, root: &Value, tool_base: &str) -> Defs {
        let mut defs = Defs::default();
        let mut schemas: Vec<(String, &Value)> = Vec::new();
        for key in ["$defs", "definitions"] {
            if let Some(map) = root.get(key).and_then(Value::as_object) {
                for (name, schema) in map {
                    if defs.names.contains_key(name) {
                        continue;
                    }
                    let rust = self.unique_type(&format!("{tool_base}{}", type_ident_text(name)));
                    defs.names.insert(name.clone(), rust);
                    schemas.push((name.clone(), schema));
                }
            }
        }
        // A def that can reach itself through `$ref`s needs a `Box` where it is held directly.
        let edges: BTreeMap<&str, BTreeSet<String>> = schemas
            .iter()
            .map(|(name, schema)| {
                let mut refs = BTreeSet::new();
                collect_def_refs(schema, &mut refs);
                (name.as_str(), refs)
            })
            .collect();
        defs.recursive_types = recursive_defs(&edges)
            .iter()
            .filter_map(|def| defs.names.get(def).cloned())
            .collect();
        defs
    }

    /// Generates the types of a root's `$defs`, after the root's own type.
    fn emit_defs(&mut self, root: &Value, defs: &Defs) {
        for key in ["$defs", "definitions"] {
            let Some(map) = root.get(key).and_then(Value::as_object) else {
                continue;
            };
            for (name, schema) in map {
                self.emit_def(name, schema, defs);
            }
        }
    }

    fn emit_def(&mut self, name: &str, schema: &Value, defs: &Defs) {
        // `$defs` wins over `definitions` for a name in both (allocation keeps the first).
        if !self.emitted_defs.insert(defs.names[name].clone()) {
            return;
        }
        {
            let rust = defs.names[name].clone();
            let docs = keyword(schema, "description")
                .and_then(Value::as_str)
                .map(doc_lines)
                .unwrap_or_default();
            self.named_root(schema, &rust, docs, defs);
        }
    }

    /// Generates `schema` as the type `name`: a struct or enum when it maps to one, an alias
    /// otherwise.
    fn named_root(&mut self, schema: &Value, name: &str, docs: Vec<String>, defs: &Defs) {
        let ty = self.map(schema, name, defs, Some(docs.clone()));
        if ty != Ty::Named(name.to_owned()) {
            let mut docs = docs;
            if let Some(reason) = ty.untyped_reason() {
                push_untyped_doc(&mut docs, reason);
            }
            self.items.push(Item::Alias {
                name: name.to_owned(),
                docs,
                ty,
            });
        }
    }

    /// Maps a schema to a type. `hint` is the name a struct or enum made for it gets (already
    /// unique when `own_docs` is given, i.e. for roots and defs; otherwise made unique here).
    fn map(
        &mut self,
        schema: &Value,
        hint: &str,
        defs: &Defs,
        own_docs: Option<Vec<String>>,
    ) -> Ty {
        let obj = match schema {
            Value::Object(obj) => obj,
            Value::Bool(_) => return Ty::Value("a boolean schema"),
            _ => return Ty::Value("not a schema object"),
        };
        if let Some(reference) = member(obj, "$ref") {
            return match reference.as_str().and_then(local_def) {
                Some(def) => match defs.names.get(&def) {
                    Some(rust) => Ty::Named(rust.clone()),
                    None => Ty::Value("a `$ref` to a definition that is not there"),
                },
                None => Ty::Value("a `$ref` outside `#/$defs`"),
            };
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(branches) = member(obj, key).and_then(Value::as_array) {
                // `anyOf: [{required: [a]}, {required: [b]}]` over declared properties says
                // which of them must be present, not what they are: the object keeps its type
                // (with those fields optional), and the registry's validation enforces the rule.
                if presence_only(obj, branches) {
                    continue;
                }
                let (nulls, others): (Vec<&Value>, Vec<&Value>) =
                    branches.iter().partition(|b| is_null_schema(b));
                if nulls.len() == 1 && others.len() == 1 && obj.len() <= 2 {
                    let inner = self.map(others[0], hint, defs, own_docs);
                    return optional(inner);
                }
                return Ty::Value("`anyOf`/`oneOf`");
            }
        }
        for key in [
            "allOf",
            "if",
            "not",
            "prefixItems",
            "patternProperties",
            "dependentSchemas",
            "unevaluatedProperties",
            "$dynamicRef",
        ] {
            if member(obj, key).is_some() {
                return Ty::Value("a keyword outside the typed subset");
            }
        }
        let types: Vec<&str> = match member(obj, "type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            Some(_) => return Ty::Value("an unusual `type`"),
            None => Vec::new(),
        };
        let nullable = types.contains(&"null");
        let non_null: Vec<&str> = types.iter().copied().filter(|t| *t != "null").collect();
        let inner = match non_null.as_slice() {
            [] if nullable => return Ty::Value("a `null`-only type"),
            [] => self.map_untyped(obj, hint, defs, own_docs),
            [one] => self.map_type(one, obj, hint, defs, own_docs),
            _ => Ty::Value("several types"),
        };
        if nullable {
            optional(inner)
        } else {
            inner
        }
    }

    fn map_untyped(
        &mut self,
        obj: &serde_json::Map<String, Value>,
        hint: &str,
        defs: &Defs,
        own_docs: Option<Vec<String>>,
    ) -> Ty {
        if member(obj, "properties").is_some() {
            return self.map_type("object", obj, hint, defs, own_docs);
        }
        if let Some(values) = member(obj, "enum").and_then(Value::as_array) {
            if values.iter().all(Value::is_string) {
                return self.map_type("string", obj, hint, defs, own_docs);
            }
        }
        Ty::Value("no `type`")
    }

    fn map_type(
        &mut self,
        ty: &str,
        obj: &serde_json::Map<String, Value>,
        hint: &str,
        defs: &Defs,
        own_docs: Option<Vec<String>>,
    ) -> Ty {
        match ty {
            "string" => match member(obj, "enum").and_then(Value::as_array) {
                Some(values) => {
                    let strings: Vec<&str> = values.iter().filter_map(Value::as_str).collect();
                    let has_null = values.iter().any(Value::is_null);
                    if strings.is_empty() || strings.len() + usize::from(has_null) != values.len() {
                        return Ty::Value("an `enum` with values that are not strings");
                    }
                    let name = self.name_for(hint, own_docs.is_some());
                    let docs = own_docs.unwrap_or_else(|| docs_of(obj));
                    self.enum_item(&name, docs, &strings);
                    let ty = Ty::Named(name);
                    if has_null {
                        optional(ty)
                    } else {
                        ty
                    }
                }
                None => Ty::String,
            },
            "integer" => Ty::I64,
            "number" => Ty::F64,
            "boolean" => Ty::Bool,
            "array" => match member(obj, "items") {
                Some(items) if items.is_object() => {
                    let item = self.map(items, &format!("{hint}Item"), defs, None);
                    Ty::Vec(Box::new(item))
                }
                Some(Value::Bool(false)) => Ty::Value("an array that must be empty"),
                _ => Ty::Vec(Box::new(Ty::Value("array items without a schema"))),
            },
            "object" => match member(obj, "properties").and_then(Value::as_object) {
                Some(properties) if !additional_is_schema(obj) => {
                    let name = self.name_for(hint, own_docs.is_some());
                    let docs = own_docs.unwrap_or_else(|| docs_of(obj));
                    self.struct_item(&name, docs, obj, properties, defs);
                    Ty::Named(name)
                }
                // Any keys, one schema for the values: a map of that type, as in TypeScript.
                None if additional_is_schema(obj) => {
                    let values = member(obj, "additionalProperties").unwrap_or(&Value::Null);
                    match self.map(values, &format!("{hint}Value"), defs, None) {
                        Ty::Value(_) => Ty::Map,
                        value => Ty::MapOf(Box::new(box_recursive(value, defs))),
                    }
                }
                _ => Ty::Map,
            },
            _ => Ty::Value("an unknown `type`"),
        }
    }

    fn name_for(&mut self, hint: &str, reserved: bool) -> String {
        if reserved {
            hint.to_owned()
        } else {
            self.unique_type(hint)
        }
    }

    fn enum_item(&mut self, name: &str, docs: Vec<String>, values: &[&str]) {
        let mut used = BTreeSet::new();
        let mut variants = Vec::new();
        let mut by_wire = BTreeMap::new();
        for value in values {
            if by_wire.contains_key(*value) {
                continue;
            }
            let mut base = type_ident_text(value);
            if base == "Self" {
                base.push('_');
            }
            let mut variant = base.clone();
            let mut n = 2;
            while !used.insert(variant.clone()) {
                variant = format!("{base}{n}");
                n += 1;
            }
            by_wire.insert((*value).to_owned(), variant.clone());
            variants.push((variant, (*value).to_owned()));
        }
        self.enums.insert(name.to_owned(), by_wire);
        self.items.push(Item::Enum {
            name: name.to_owned(),
            docs,
            variants,
        });
    }

    fn struct_item(
        &mut self,
        name: &str,
        docs: Vec<String>,
        obj: &serde_json::Map<String, Value>,
        properties: &serde_json::Map<String, Value>,
        defs: &Defs,
    ) {
        let required: crate::name_set::NameSet = member(obj, "required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        // Reserve the struct's slot first so nested types come after it in the file.
        let slot = self.items.len();
        self.items.push(Item::Alias {
            name: String::new(),
            docs: Vec::new(),
            ty: Ty::Bool,
        });
        // A property whose name already is its Rust name keeps it; others that convert to the
        // same name get a suffix, in declaration order.
        let bases: Vec<String> = properties.keys().map(|w| field_ident_text(w)).collect();
        let mut used: BTreeSet<String> = properties
            .keys()
            .zip(&bases)
            .filter(|(wire, base)| unraw(base) == wire.as_str())
            .map(|(wire, _)| wire.clone())
            .collect();
        let mut fields = Vec::new();
        for ((wire, schema), base) in properties.iter().zip(bases) {
            let mut rust = base.clone();
            if unraw(&base) != wire.as_str() {
                let mut n = 2;
                while !used.insert(unraw(&rust).to_owned()) {
                    rust = format!("{}_{n}", unraw(&base));
                    n += 1;
                }
            }
            let hint = format!("{name}{}", type_ident_text(wire));
            let mut ty = self.map(schema, &hint, defs, None);
            ty = box_recursive(ty, defs);
            let mut docs = keyword(schema, "description")
                .and_then(Value::as_str)
                .map(doc_lines)
                .unwrap_or_default();
            let mut serde = Vec::new();
            if unraw(&rust) != wire {
                serde.push(SerdeArg::Rename(wire.clone()));
            }
            let default = keyword(schema, "default");
            if required.contains(wire) {
                // A required nullable property is written as `null`, never skipped.
            } else if let Some(value) = default.and_then(|d| self.default_value(&ty, d)) {
                let fn_name = self.unique_fn(&format!(
                    "__toolc_default_{}_{}",
                    snake_case(name),
                    unraw(&rust)
                ));
                serde.push(SerdeArg::DefaultFn(fn_name.clone()));
                self.items.push(Item::DefaultFn {
                    name: fn_name,
                    ty: ty.clone(),
                    value,
                });
                if let Some(d) = default {
                    push_doc(&mut docs, format!("Default: `{d}`."));
                }
            } else {
                ty = optional(ty);
                serde.push(SerdeArg::Default);
                serde.push(SerdeArg::SkipIfNone);
                if let Some(d) = default {
                    push_doc(
                        &mut docs,
                        format!(
                            "Default when absent: `{d}` (applied by the tool, not by this type)."
                        ),
                    );
                }
            }
            if let Some(reason) = ty.untyped_reason() {
                push_untyped_doc(&mut docs, reason);
            }
            fields.push(Field {
                rust,
                ty,
                docs,
                serde,
            });
        }
        self.items[slot] = Item::Struct {
            name: name.to_owned(),
            docs,
            fields,
        };
    }

    /// The Rust expression of a default value, when it fits the field's type.
    fn default_value(&self, ty: &Ty, value: &Value) -> Option<DefaultExpr> {
        match ty {
            Ty::I64 => value.as_i64().map(DefaultExpr::I64),
            Ty::F64 => value
                .as_f64()
                .filter(|f| f.is_finite())
                .map(DefaultExpr::F64),
            Ty::Bool => value.as_bool().map(DefaultExpr::Bool),
            Ty::String => value.as_str().map(|s| DefaultExpr::String(s.to_owned())),
            Ty::Named(name) => {
                let variant = self.enums.get(name)?.get(value.as_str()?)?;
                Some(DefaultExpr::Variant {
                    ty: name.clone(),
                    variant: variant.clone(),
                })
            }
            _ => None,
        }
    }
}

/// Turns planned items into tokens. Token streams cannot be sent to another thread, so every
/// thread that prints a part of the file has its own.
struct Tokens<'a> {
    ir: &'a Ir,
    rt: TokenStream,
    serde_crate: String,
    trait_name: &'a str,
}

impl<'a> Tokens<'a> {
    fn new(ir: &'a Ir, options: &RustOptions, trait_name: &'a str) -> Tokens<'a> {
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

    fn serde_arg(arg: &SerdeArg) -> TokenStream {
        match arg {
            SerdeArg::Rename(wire) => quote!(rename = #wire),
            SerdeArg::DefaultFn(path) => quote!(default = #path),
            SerdeArg::Default => quote!(default),
            SerdeArg::SkipIfNone => quote!(skip_serializing_if = "::std::option::Option::is_none"),
        }
    }

    fn default_expr(value: &DefaultExpr) -> TokenStream {
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

    fn ty(&self, ty: &Ty) -> TokenStream {
        let rt = &self.rt;
        match ty {
            Ty::String => quote!(::std::string::String),
            Ty::I64 => quote!(i64),
            Ty::F64 => quote!(f64),
            Ty::Bool => quote!(bool),
            Ty::Value(_) => quote!(#rt::__private::serde_json::Value),
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

    fn derives(&self, extra: TokenStream) -> TokenStream {
        let rt = &self.rt;
        let serde_crate = &self.serde_crate;
        quote! {
            #[derive(Debug, Clone, #extra #rt::__private::serde::Serialize, #rt::__private::serde::Deserialize)]
            #[serde(crate = #serde_crate)]
        }
    }

    fn item(&self, item: &Item) -> TokenStream {
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

    fn marker(&self, tool: &IrTool, names: &ToolNames) -> TokenStream {
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
        let returns = match &def.returns {
            Some(r) => {
                let lit = raw_string(&r.to_string());
                quote!(::std::option::Option::Some(#rt::__private::schema(#lit)))
            }
            None => quote!(::std::option::Option::None),
        };
        let timeout = match def.timeout {
            Some(d) => {
                let ms = Literal::u64_suffixed(d.as_millis() as u64);
                quote!(::std::option::Option::Some(::std::time::Duration::from_millis(#ms)))
            }
            None => quote!(::std::option::Option::None),
        };
        let wait = def.wait_for_response;
        let filler = if def.filler.is_empty() {
            quote!(::std::vec::Vec::new())
        } else {
            let phrases = def.filler.iter();
            quote!(::std::vec::Vec::from([#(::std::string::String::from(#phrases)),*]))
        };
        let title = match &def.title {
            Some(t) => quote!(::std::option::Option::Some(::std::string::String::from(#t))),
            None => quote!(::std::option::Option::None),
        };
        let annotations = if def.annotations.is_empty() {
            quote!(#rt::Annotations::NONE)
        } else {
            let hint = |h: Option<bool>| match h {
                Some(b) => quote!(::std::option::Option::Some(#b)),
                None => quote!(::std::option::Option::None),
            };
            let a = &def.annotations;
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
        };
        let policy = if def.policy.is_default() {
            quote!(#rt::CallPolicy::DEFAULT)
        } else {
            let p = &def.policy;
            let approval = match p.approval {
                Approval::None => quote!(#rt::Approval::None),
                Approval::Required => quote!(#rt::Approval::Required),
            };
            let mode = match p.mode {
                Mode::Sync => quote!(#rt::Mode::Sync),
                Mode::Async => quote!(#rt::Mode::Async),
            };
            let cancel = match p.cancel_on_interruption {
                Some(b) => quote!(::std::option::Option::Some(#b)),
                None => quote!(::std::option::Option::None),
            };
            let stream = p.stream_arguments;
            quote!(#rt::CallPolicy {
                approval: #approval,
                mode: #mode,
                cancel_on_interruption: #cancel,
                stream_arguments: #stream,
            })
        };
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
                        returns: #returns,
                        timeout: #timeout,
                        wait_for_response: #wait,
                        filler: #filler,
                        title: #title,
                        annotations: #annotations,
                        policy: #policy,
                    }
                }
            }
        }
    }

    fn server_tools<'n>(&self, names: &'n [ToolNames]) -> Vec<(&'a IrTool, &'n ToolNames)> {
        self.ir
            .tools
            .iter()
            .zip(names)
            .filter(|(t, _)| t.def.location == Location::Server)
            .collect()
    }

    fn server_trait(&self, names: &[ToolNames]) -> TokenStream {
        let rt = &self.rt;
        let trait_name = ident(self.trait_name);
        let server = self.server_tools(names);
        let tools: Vec<&IrTool> = server.iter().map(|(t, _)| *t).collect();
        let (docs, [message, label, note]) = server_trait_texts(self.trait_name, &tools);
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

    fn definitions_fn(&self, names: &[ToolNames]) -> TokenStream {
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

    fn registry_fn(&self, names: &[ToolNames]) -> TokenStream {
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
        quote! {
            /// The runtime registry of this manifest, with `server` as the executor of every server
            /// tool. It fails only if a schema cannot be compiled, which the toolc checks rule out.
            #[allow(dead_code)]
            pub fn registry<S: #trait_name>(
                server: S,
            ) -> ::std::result::Result<#rt::Registry, #rt::RegistryError> {
                #setup
                #rt::Registry::builder()
                    .definitions(definitions())
                    #(#executors)*
                    .build()
            }
        }
    }
}

fn marker_docs(tool: &IrTool) -> Vec<String> {
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

fn executor_docs(tool: &IrTool) -> Vec<String> {
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
fn server_trait_texts(trait_name: &str, server: &[&IrTool]) -> (Vec<String>, [String; 3]) {
    let list = if server.is_empty() {
        "none: this manifest has no server tools".to_owned()
    } else {
        server
            .iter()
            .map(|t| format!("`{}`", t.def.name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let message =
        format!("`{{Self}}` is not the executor of this manifest's server tools ({list})");
    let label = format!("`{{Self}}` does not implement `{trait_name}`");
    let note =
        format!("add `impl {trait_name} for {{Self}}` with one `async fn` per server tool: {list}");
    let docs = vec![
        "The executors of the server tools: one method per server tool, none with a default body,"
            .to_owned(),
        "so a server tool without an executor does not compile. Client tools are not here: they run"
            .to_owned(),
        "in the browser and may not have an executor.".to_owned(),
        String::new(),
        format!("Server tools: {list}."),
    ];
    (docs, [message, label, note])
}

fn optional(ty: Ty) -> Ty {
    if ty.is_option() {
        ty
    } else {
        Ty::Option(Box::new(ty))
    }
}

fn box_recursive(ty: Ty, defs: &Defs) -> Ty {
    let recursive = |name: &str| defs.recursive_types.contains(name);
    match ty {
        Ty::Named(ref n) if recursive(n) => Ty::Boxed(Box::new(ty)),
        Ty::Option(inner) => match *inner {
            Ty::Named(ref n) if recursive(n) => Ty::Option(Box::new(Ty::Boxed(inner))),
            other => Ty::Option(Box::new(other)),
        },
        other => other,
    }
}

/// `map.get(key)` by a scan. Schema objects hold a handful of keywords, and serde_json's maps
/// hash every key looked up with SipHash, which was the largest single cost of planning types.
fn member<'a>(map: &'a serde_json::Map<String, Value>, key: &str) -> Option<&'a Value> {
    if map.len() <= 16 {
        map.iter().find(|(k, _)| k.as_str() == key).map(|(_, v)| v)
    } else {
        map.get(key)
    }
}

/// [`member`] of a schema that is an object.
fn keyword<'a>(schema: &'a Value, key: &str) -> Option<&'a Value> {
    schema.as_object().and_then(|map| member(map, key))
}

fn is_null_schema(schema: &Value) -> bool {
    keyword(schema, "type").and_then(Value::as_str) == Some("null")
}

/// Whether every branch of an `anyOf`/`oneOf` only lists `required` properties that `obj`
/// declares.
fn presence_only(obj: &serde_json::Map<String, Value>, branches: &[Value]) -> bool {
    let Some(properties) = member(obj, "properties").and_then(Value::as_object) else {
        return false;
    };
    !branches.is_empty()
        && branches.iter().all(|branch| {
            let Some(branch) = branch.as_object() else {
                return false;
            };
            branch.len() == 1
                && branch
                    .get("required")
                    .and_then(Value::as_array)
                    .is_some_and(|names| {
                        names
                            .iter()
                            .all(|n| n.as_str().is_some_and(|n| properties.contains_key(n)))
                    })
        })
}

fn additional_is_schema(obj: &serde_json::Map<String, Value>) -> bool {
    matches!(member(obj, "additionalProperties"), Some(Value::Object(o)) if !o.is_empty())
}

/// `#/$defs/Name` or `#/definitions/Name` → `Name` (JSON-pointer unescaped).
fn local_def(reference: &str) -> Option<String> {
    let rest = reference
        .strip_prefix("#/$defs/")
        .or_else(|| reference.strip_prefix("#/definitions/"))?;
    if rest.contains('/') {
        return None;
    }
    Some(crate::schema_util::unescape_segment(rest).into_owned())
}

/// The definitions that can reach themselves through `$ref`s: those in a cycle of the reference
/// graph (a strongly connected component of more than one, or with a reference to itself).
/// Tarjan's algorithm without recursion: linear in the references, however long a chain of
/// definitions is.
fn recursive_defs(edges: &BTreeMap<&str, BTreeSet<String>>) -> BTreeSet<String> {
    let names: Vec<&str> = edges.keys().copied().collect();
    let position: std::collections::HashMap<&str, usize> =
        names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let adjacent: Vec<Vec<usize>> = names
        .iter()
        .map(|n| {
            edges[n]
                .iter()
                .filter_map(|target| position.get(target.as_str()).copied())
                .collect()
        })
        .collect();
    const UNSEEN: usize = usize::MAX;
    let mut order = vec![UNSEEN; names.len()];
    let mut low = vec![0; names.len()];
    let mut on_stack = vec![false; names.len()];
    let mut stack: Vec<usize> = Vec::new();
    let mut next_order = 0;
    let mut recursive = BTreeSet::new();
    for start in 0..names.len() {
        if order[start] != UNSEEN {
            continue;
        }
        // (definition, how many of its references were followed)
        let mut calls = vec![(start, 0)];
        order[start] = next_order;
        low[start] = next_order;
        next_order += 1;
        stack.push(start);
        on_stack[start] = true;
        while let Some((v, followed)) = calls.last_mut() {
            let v = *v;
            if let Some(&w) = adjacent[v].get(*followed) {
                *followed += 1;
                if order[w] == UNSEEN {
                    order[w] = next_order;
                    low[w] = next_order;
                    next_order += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    calls.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(order[w]);
                }
                continue;
            }
            calls.pop();
            if let Some(&(parent, _)) = calls.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == order[v] {
                let mut component = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 || adjacent[v].contains(&v) {
                    recursive.extend(component.iter().map(|&w| names[w].to_owned()));
                }
            }
        }
    }
    recursive
}

fn collect_def_refs(schema: &Value, out: &mut BTreeSet<String>) {
    match schema {
        Value::Object(obj) => {
            for (key, value) in obj {
                if key == "$ref" {
                    if let Some(def) = value.as_str().and_then(local_def) {
                        out.insert(def);
                    }
                } else {
                    collect_def_refs(value, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_def_refs(v, out)),
        _ => {}
    }
}

fn docs_of(obj: &serde_json::Map<String, Value>) -> Vec<String> {
    member(obj, "description")
        .and_then(Value::as_str)
        .map(doc_lines)
        .unwrap_or_default()
}

fn doc_lines(text: &str) -> Vec<String> {
    text.trim()
        .lines()
        .map(|l| l.trim_end().to_owned())
        .collect()
}

fn push_doc(docs: &mut Vec<String>, line: String) {
    if !docs.is_empty() {
        docs.push(String::new());
    }
    docs.push(line);
}

fn push_untyped_doc(docs: &mut Vec<String>, reason: &str) {
    push_doc(
        docs,
        format!(
            "Untyped (`serde_json::Value`): outside the typed subset ({reason}). The registry still validates it against the schema."
        ),
    );
}

fn doc_attrs(lines: &[String]) -> TokenStream {
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

/// The column prettyplease keeps lines within: a group whose text would end past it is broken.
const MARGIN: usize = 89;

/// Writes planned items straight as text, in exactly the layout prettyplease gives them, for the
/// common case: the default runtime path and lines that either fit within the margin or break in
/// one of the few known ways (a call's argument on its own line, a list one element per line).
/// Every method returns `None` where the layout is not certain, and the caller prints that item
/// through tokens and prettyplease instead. Going through tokens, `syn` and prettyplease costs
/// about twenty times as much as writing the text, and the generated file is megabytes for large
/// manifests. `fast_path_matches_prettyplease` compares the two on thousands of items.
struct Text<'a> {
    ir: &'a Ir,
    trait_name: &'a str,
    out: String,
}

const RT: &str = "::toolc_runtime";

const STRUCT_DERIVES: &str = "#[derive(\n    Debug,\n    Clone,\n    PartialEq,\n    ::toolc_runtime::__private::serde::Serialize,\n    ::toolc_runtime::__private::serde::Deserialize\n)]\n#[serde(crate = \"::toolc_runtime::__private::serde\")]\n#[allow(dead_code)]\n";
const ENUM_DERIVES: &str = "#[derive(\n    Debug,\n    Clone,\n    Copy,\n    PartialEq,\n    Eq,\n    Hash,\n    ::toolc_runtime::__private::serde::Serialize,\n    ::toolc_runtime::__private::serde::Deserialize\n)]\n#[serde(crate = \"::toolc_runtime::__private::serde\")]\n#[allow(dead_code)]\n";

impl<'a> Text<'a> {
    /// `None` unless the runtime path is the default one, the only one the layout is known for.
    fn new(ir: &'a Ir, options: &RustOptions, trait_name: &'a str) -> Option<Text<'a>> {
        (options.runtime_path.trim() == RT).then(|| Text {
            ir,
            trait_name,
            out: String::new(),
        })
    }

    /// Runs `write` on a scratch buffer and returns what it wrote, or `None` (and nothing
    /// written) when it gave up.
    fn attempt(&mut self, write: impl FnOnce(&mut Self) -> Option<()>) -> Option<String> {
        self.out.clear();
        write(self).map(|()| std::mem::take(&mut self.out))
    }

    fn indent(&mut self, indent: usize) {
        self.out.extend(std::iter::repeat_n(' ', indent));
    }

    /// A line that prettyplease never breaks, however long.
    fn line(&mut self, indent: usize, parts: &[&str]) {
        self.indent(indent);
        for part in parts {
            self.out.push_str(part);
        }
        self.out.push('\n');
    }

    /// A line that stays whole only while it fits; past the margin the caller falls back.
    /// `pre_break` is a comma that prettyplease writes only when the enclosing list is broken,
    /// which it does not count when it decides.
    fn fitting_line(&mut self, indent: usize, parts: &[&str], pre_break: &str) -> Option<()> {
        let len = indent + parts.iter().map(|p| p.len()).sum::<usize>();
        if len > MARGIN {
            return None;
        }
        self.line(indent, &[parts, &[pre_break]].concat());
        Some(())
    }

    fn docs(&mut self, indent: usize, lines: &[String]) -> Option<()> {
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
    fn attr(&mut self, indent: usize, path: &str, args: &[String]) {
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
    fn call(
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

    fn ty(&self, ty: &Ty) -> String {
        match ty {
            Ty::String => "::std::string::String".into(),
            Ty::I64 => "i64".into(),
            Ty::F64 => "f64".into(),
            Ty::Bool => "bool".into(),
            Ty::Value(_) => "::toolc_runtime::__private::serde_json::Value".into(),
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

    fn item(&mut self, item: &Item) -> Option<String> {
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

    fn marker(&mut self, tool: &IrTool, names: &ToolNames) -> Option<String> {
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
            match &def.returns {
                Some(r) => {
                    let lit = raw_string_text(&r.to_string());
                    t.some(12, "returns: ", schema, &lit)?;
                }
                None => t.line(12, &["returns: ::std::option::Option::None,"]),
            }
            match def.timeout {
                Some(d) => {
                    let ms = Literal::u64_suffixed(d.as_millis() as u64).to_string();
                    t.some(12, "timeout: ", "::std::time::Duration::from_millis", &ms)?;
                }
                None => t.line(12, &["timeout: ::std::option::Option::None,"]),
            }
            let wait = if def.wait_for_response {
                "true"
            } else {
                "false"
            };
            t.line(12, &["wait_for_response: ", wait, ","]);
            if def.filler.is_empty() {
                t.line(12, &["filler: ::std::vec::Vec::new(),"]);
            } else {
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
            // A title, hints or a call policy are rare: prettyplease prints those.
            if def.title.is_some() || !def.annotations.is_empty() || !def.policy.is_default() {
                return None;
            }
            t.line(12, &["title: ::std::option::Option::None,"]);
            t.line(12, &["annotations: ::toolc_runtime::Annotations::NONE,"]);
            t.line(12, &["policy: ::toolc_runtime::CallPolicy::DEFAULT,"]);
            t.line(8, &["}"]);
            t.line(4, &["}"]);
            t.line(0, &["}"]);
            Some(())
        })
    }

    /// A struct field `prefix ::std::option::Option::Some(callee(arg)),` (not the last field),
    /// broken from the outside in as far as it has to be.
    fn some(&mut self, indent: usize, prefix: &str, callee: &str, arg: &str) -> Option<()> {
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

    /// The server trait, `definitions()` and `registry()`.
    fn closing(&mut self, names: &[ToolNames]) -> Option<String> {
        let server: Vec<(&IrTool, &ToolNames)> = self
            .ir
            .tools
            .iter()
            .zip(names)
            .filter(|(t, _)| t.def.location == Location::Server)
            .collect();
        let trait_name = self.trait_name;
        self.attempt(|t| {
            let tools: Vec<&IrTool> = server.iter().map(|(tool, _)| *tool).collect();
            let (docs, [message, label, note]) = server_trait_texts(trait_name, &tools);
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

            t.line(0, &["/// The runtime registry of this manifest, with `server` as the executor of every server"]);
            t.line(0, &["/// tool. It fails only if a schema cannot be compiled, which the toolc checks rule out."]);
            t.line(0, &["#[allow(dead_code)]"]);
            t.fitting_line(0, &["pub fn registry<S: ", trait_name, ">("], "")?;
            t.line(4, &["server: S,"]);
            t.line(0, &[") -> ::std::result::Result<::toolc_runtime::Registry, ::toolc_runtime::RegistryError> {"]);
            if server.is_empty() {
                t.line(4, &["let _ = server;"]);
                t.line(
                    4,
                    &["::toolc_runtime::Registry::builder().definitions(definitions()).build()"],
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
                t.line(8, &[".build()"]);
            }
            t.line(0, &["}"]);
            Some(())
        })
    }
}

#[cfg(test)]
mod tests {
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
        stream.extend(tokens.server_trait(&plan.names));
        stream.extend(tokens.definitions_fn(&plan.names));
        stream.extend(tokens.registry_fn(&plan.names));
        let file: syn::File = syn::parse2(stream).expect("generated Rust parses");
        let mut out = format!(
            "// @generated by toolc from {}. Do not edit.\n\n",
            options.source.as_deref().unwrap_or_default()
        );
        out.push_str(&prettyplease::unparse(&file));
        out
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
            }
        });
        Ir::from_definitions(defs.collect::<Vec<_>>())
    }

    /// Every item the text writer accepts is byte for byte what prettyplease prints for it, on
    /// tools with names, descriptions, property names, enum values, defaults and filler phrases
    /// of lengths on both sides of the margin.
    #[test]
    fn fast_path_matches_prettyplease() {
        let options = RustOptions::default();
        let trait_name = type_ident_text(&options.server_trait);
        let (mut written, mut total) = (0, 0);
        for seed in 1..=150u64 {
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
            let mut closing = tokens.server_trait(&plan.names);
            closing.extend(tokens.definitions_fn(&plan.names));
            closing.extend(tokens.registry_fn(&plan.names));
            compare(text.closing(&plan.names), closing, "closing items");
        }
        // The writer must carry most of the file, or it would not be worth having.
        assert!(
            written * 10 > total * 7,
            "{written} of {total} written as text"
        );
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
