//! The type planner: from each tool's schemas to the items of the module (structs, enums,
//! aliases, with their names, serde attributes and docs), before anything is printed.

use super::*;

impl<'a> Gen<'a> {
    pub(super) fn new(ir: &'a Ir, trait_name: &str) -> Gen<'a> {
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

    pub(super) fn unique_type(&mut self, wanted: &str) -> String {
        let mut name = wanted.to_owned();
        let mut n = 2;
        while self.types.contains(&name) {
            name = format!("{wanted}{n}");
            n += 1;
        }
        self.types.insert(name.clone());
        name
    }

    pub(super) fn unique_fn(&mut self, wanted: &str) -> String {
        let mut name = wanted.to_owned();
        let mut n = 2;
        while self.fns.contains(&name) {
            name = format!("{wanted}_{n}");
            n += 1;
        }
        self.fns.insert(name.clone());
        name
    }

    pub(super) fn plan(self) -> Plan {
        let tools = self.ir.tools.len();
        self.plan_first(tools)
    }

    /// The names of every tool, and the items of the first `tools` tools only: a tool's items
    /// depend on the tools before it, never on those after.
    pub(super) fn plan_first(mut self, tools: usize) -> Plan {
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
            .take(tools)
            .zip(&names)
            .map(|(tool, names)| {
                self.tool_types(tool, names);
                std::mem::take(&mut self.items)
            })
            .collect();
        Plan { names, items }
    }

    pub(super) fn tool_types(&mut self, tool: &IrTool, names: &ToolNames) {
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
            Some(_) if def.returns_content() => self.items.push(Item::Alias {
                name: names.output.clone(),
                docs: vec![
                    format!("Result of the {which} tool `{}`.", def.name),
                    String::new(),
                    "The manifest says `returns: content`: content blocks (text, images, audio,"
                        .into(),
                    "embedded resources).".into(),
                ],
                ty: Ty::Content,
            }),
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
    pub(super) fn root_with_defs(
        &mut self,
        root: &Value,
        name: &str,
        docs: Vec<String>,
        tool_base: &str,
    ) {
        let defs = self.defs(root, tool_base);
        let start = self.items.len();
        self.emit_defs(root, &defs);
        let def_items = self.items.split_off(start);
        self.named_root(root, name, docs, &defs);
        self.items.extend(def_items);
    }

    /// Allocates names for a root's `$defs` and finds the recursive ones.
    pub(super) fn defs(&mut self, root: &Value, tool_base: &str) -> Defs {
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
    pub(super) fn emit_defs(&mut self, root: &Value, defs: &Defs) {
        for key in ["$defs", "definitions"] {
            let Some(map) = root.get(key).and_then(Value::as_object) else {
                continue;
            };
            for (name, schema) in map {
                self.emit_def(name, schema, defs);
            }
        }
    }

    pub(super) fn emit_def(&mut self, name: &str, schema: &Value, defs: &Defs) {
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
    pub(super) fn named_root(
        &mut self,
        schema: &Value,
        name: &str,
        docs: Vec<String>,
        defs: &Defs,
    ) {
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
    pub(super) fn map(
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
                match alternatives(obj, branches) {
                    Alternatives::PresenceOnly => continue,
                    Alternatives::Optional(inner) => {
                        return optional(self.map(inner, hint, defs, own_docs))
                    }
                    Alternatives::Untyped => return Ty::Value("`anyOf`/`oneOf`"),
                }
            }
        }
        if OUTSIDE_THE_TYPED_SUBSET
            .iter()
            .any(|key| member(obj, key).is_some())
        {
            return Ty::Value("a keyword outside the typed subset");
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

    pub(super) fn map_untyped(
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

    pub(super) fn map_type(
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

    pub(super) fn name_for(&mut self, hint: &str, reserved: bool) -> String {
        if reserved {
            hint.to_owned()
        } else {
            self.unique_type(hint)
        }
    }

    pub(super) fn enum_item(&mut self, name: &str, docs: Vec<String>, values: &[&str]) {
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

    pub(super) fn struct_item(
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
    pub(super) fn default_value(&self, ty: &Ty, value: &Value) -> Option<DefaultExpr> {
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

pub(super) fn optional(ty: Ty) -> Ty {
    if ty.is_option() {
        ty
    } else {
        Ty::Option(Box::new(ty))
    }
}

pub(super) fn box_recursive(ty: Ty, defs: &Defs) -> Ty {
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

/// What an `anyOf`/`oneOf` of a schema object means to the typed mapping.
pub(super) enum Alternatives<'a> {
    /// `anyOf: [{required: [a]}, {required: [b]}]` over declared properties says which of them
    /// must be present, not what they are: the object keeps its type (with those fields
    /// optional), and the registry's validation enforces the rule.
    PresenceOnly,
    /// `null` or one schema, and nothing else beside them: an `Option` of that schema's type.
    Optional(&'a Value),
    /// Anything else: `serde_json::Value`.
    Untyped,
}

pub(super) fn alternatives<'a>(
    obj: &serde_json::Map<String, Value>,
    branches: &'a [Value],
) -> Alternatives<'a> {
    if presence_only(obj, branches) {
        return Alternatives::PresenceOnly;
    }
    let (nulls, others): (Vec<&Value>, Vec<&Value>) =
        branches.iter().partition(|b| is_null_schema(b));
    if nulls.len() == 1 && others.len() == 1 && obj.len() <= 2 {
        Alternatives::Optional(others[0])
    } else {
        Alternatives::Untyped
    }
}

/// Keywords whose schema the generated Rust leaves as `serde_json::Value`.
pub(super) const OUTSIDE_THE_TYPED_SUBSET: [&str; 8] = [
    "allOf",
    "if",
    "not",
    "prefixItems",
    "patternProperties",
    "dependentSchemas",
    "unevaluatedProperties",
    "$dynamicRef",
];

/// `map.get(key)` by a scan. Schema objects hold a handful of keywords, and serde_json's maps
/// hash every key looked up with SipHash, which was the largest single cost of planning types.
pub(super) fn member<'a>(map: &'a serde_json::Map<String, Value>, key: &str) -> Option<&'a Value> {
    if map.len() <= 16 {
        map.iter().find(|(k, _)| k.as_str() == key).map(|(_, v)| v)
    } else {
        map.get(key)
    }
}

/// [`member`] of a schema that is an object.
pub(super) fn keyword<'a>(schema: &'a Value, key: &str) -> Option<&'a Value> {
    schema.as_object().and_then(|map| member(map, key))
}

pub(super) fn is_null_schema(schema: &Value) -> bool {
    keyword(schema, "type").and_then(Value::as_str) == Some("null")
}

/// Whether every branch of an `anyOf`/`oneOf` only lists `required` properties that `obj`
/// declares.
pub(super) fn presence_only(obj: &serde_json::Map<String, Value>, branches: &[Value]) -> bool {
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

pub(super) fn additional_is_schema(obj: &serde_json::Map<String, Value>) -> bool {
    matches!(member(obj, "additionalProperties"), Some(Value::Object(o)) if !o.is_empty())
}

/// `#/$defs/Name` or `#/definitions/Name` → `Name` (JSON-pointer unescaped).
pub(super) fn local_def(reference: &str) -> Option<String> {
    let rest = reference
        .strip_prefix("#/$defs/")
        .or_else(|| reference.strip_prefix("#/definitions/"))?;
    if rest.contains('/') {
        return None;
    }
    Some(toolc_core::schema_util::unescape_segment(rest).into_owned())
}

/// The definitions that can reach themselves through `$ref`s: those in a cycle of the reference
/// graph (a strongly connected component of more than one, or with a reference to itself).
/// Tarjan's algorithm without recursion: linear in the references, however long a chain of
/// definitions is.
pub(super) fn recursive_defs(edges: &BTreeMap<&str, BTreeSet<String>>) -> BTreeSet<String> {
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

pub(super) fn collect_def_refs(schema: &Value, out: &mut BTreeSet<String>) {
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

pub(super) fn docs_of(obj: &serde_json::Map<String, Value>) -> Vec<String> {
    member(obj, "description")
        .and_then(Value::as_str)
        .map(doc_lines)
        .unwrap_or_default()
}

pub(super) fn doc_lines(text: &str) -> Vec<String> {
    text.trim()
        .lines()
        .map(|l| l.trim_end().to_owned())
        .collect()
}

pub(super) fn push_doc(docs: &mut Vec<String>, line: String) {
    if !docs.is_empty() {
        docs.push(String::new());
    }
    docs.push(line);
}

pub(super) fn push_untyped_doc(docs: &mut Vec<String>, reason: &str) {
    push_doc(
        docs,
        format!(
            "Untyped (`serde_json::Value`): outside the typed subset ({reason}). The registry still validates it against the schema."
        ),
    );
}
