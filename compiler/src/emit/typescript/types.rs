//! JSON Schema → TypeScript types, over the subset that has a faithful TypeScript form.
//!
//! Mapped: `type` (one or a list; `integer` → `number`), `properties`/`required`,
//! `additionalProperties`, `items`/`prefixItems`, `enum`, `const`, OpenAPI-style `nullable`,
//! `anyOf`/`oneOf` (unions), `allOf` (intersections), `$ref` to `#`, to `#/$defs/X` or
//! `#/definitions/X` (named types) and to any other pointer inside the schema (inlined).
//! Everything else (`not`, `if`/`then`/`else`, numeric and string constraints) has no TypeScript
//! form and is left to the runtime's validation: such a schema widens to `unknown` rather than to
//! a type that would reject valid values.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::ident::is_ts_identifier;
use toolc_core::schema_util::{local_pointer, unescape_segment};

/// Inlined (non-`$defs`) references can form cycles; past this depth a type becomes `unknown`.
const MAX_INLINE_DEPTH: usize = 32;

/// A TypeScript type, as the emitter writes it for a schema.
#[derive(Debug, Clone, PartialEq)]
pub enum TsType {
    /// `unknown`: any value; a schema without a TypeScript form widens to it.
    Unknown,
    /// `never`: no value (a `false` schema).
    Never,
    /// `null`.
    Null,
    /// `string`.
    String,
    /// `number`, for JSON Schema's `integer` too.
    Number,
    /// `boolean`.
    Boolean,
    /// A literal type written as JSON text (a string, number or boolean).
    Literal(String),
    /// An exported type by its name (a `$defs` entry, or the root for `$ref: "#"`).
    Named(String),
    /// `T[]`: an array whose items all have one type.
    Array(Box<TsType>),
    /// A tuple (`prefixItems`, or an array `const`), such as `[string, number?, ...boolean[]]`.
    Tuple {
        /// The types of the leading elements, in order.
        items: Vec<TsType>,
        /// Elements from this index on are optional (`minItems`).
        required: usize,
        /// The type of every element after `items`; `None` when there may be none.
        rest: Option<Box<TsType>>,
    },
    /// An object type with its properties.
    Object(ObjectType),
    /// `A | B`; `TsType::union` builds one flattened.
    Union(Vec<TsType>),
    /// `A & B` (`allOf`); `TsType::intersection` builds one flattened.
    Intersection(Vec<TsType>),
}

/// An object type literal: `{ a: string; b?: number; [key: string]: unknown }`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ObjectType {
    /// The declared properties, in the schema's order.
    pub properties: Vec<Property>,
    /// The type of properties not listed; `None` when the schema forbids them.
    pub index: Option<Box<TsType>>,
}

/// One property of an [`ObjectType`].
#[derive(Debug, Clone, PartialEq)]
pub struct Property {
    /// The property's name as the wire has it (quoted when it is no identifier).
    pub name: String,
    /// The property's type.
    pub ty: TsType,
    /// `true` when the schema does not require it (`name?:`).
    pub optional: bool,
    /// Its `description`, written as a doc comment.
    pub doc: Option<String>,
}

impl TsType {
    /// A union, flattened: `unknown` absorbs everything, `never` disappears, duplicates go.
    pub fn union(parts: impl IntoIterator<Item = TsType>) -> TsType {
        let mut out: Vec<TsType> = Vec::new();
        // Members already in `out`, by rendering, once there are many (an `enum` of thousands
        // of values would otherwise compare every value with every other).
        let mut rendered: Option<foldhash::HashSet<String>> = None;
        let mut add = |p: TsType, out: &mut Vec<TsType>| {
            if out.len() >= 16 && rendered.is_none() {
                rendered = Some(out.iter().map(TsType::to_text).collect());
            }
            let fresh = match &mut rendered {
                Some(seen) => seen.insert(p.to_text()),
                None => !out.contains(&p),
            };
            if fresh {
                out.push(p);
            }
        };
        for part in parts {
            match part {
                TsType::Unknown => return TsType::Unknown,
                TsType::Never => {}
                TsType::Union(inner) => {
                    for p in inner {
                        add(p, &mut out);
                    }
                }
                p => add(p, &mut out),
            }
        }
        match out.len() {
            0 => TsType::Never,
            1 => out.pop().unwrap_or(TsType::Never),
            _ => TsType::Union(out),
        }
    }

    /// An intersection, flattened: `unknown` disappears, `never` absorbs everything.
    pub fn intersection(parts: impl IntoIterator<Item = TsType>) -> TsType {
        let mut out: Vec<TsType> = Vec::new();
        for part in parts {
            match part {
                TsType::Unknown => {}
                TsType::Never => return TsType::Never,
                TsType::Intersection(inner) => {
                    for p in inner {
                        if !out.contains(&p) {
                            out.push(p);
                        }
                    }
                }
                p => {
                    if !out.contains(&p) {
                        out.push(p);
                    }
                }
            }
        }
        match out.len() {
            0 => TsType::Unknown,
            1 => out.pop().unwrap_or(TsType::Unknown),
            _ => TsType::Intersection(out),
        }
    }

    /// The type's text; `indent` is the indentation of the line it starts on.
    /// The type as TypeScript text at indentation 0.
    fn to_text(&self) -> String {
        let mut text = String::new();
        self.render(0, &mut text);
        text
    }

    /// Appends the type's TypeScript text to `out`; `indent` is the indentation of the
    /// line it starts on.
    pub fn render(&self, indent: usize, out: &mut String) {
        self.render_in(Position::Top, indent, out);
    }

    fn render_in(&self, position: Position, indent: usize, out: &mut String) {
        match self {
            TsType::Unknown => out.push_str("unknown"),
            TsType::Never => out.push_str("never"),
            TsType::Null => out.push_str("null"),
            TsType::String => out.push_str("string"),
            TsType::Number => out.push_str("number"),
            TsType::Boolean => out.push_str("boolean"),
            TsType::Literal(text) | TsType::Named(text) => out.push_str(text),
            TsType::Array(item) => {
                item.render_in(Position::ArrayItem, indent, out);
                out.push_str("[]");
            }
            TsType::Tuple {
                items,
                required,
                rest,
            } => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    item.render_in(Position::Top, indent, out);
                    if i >= *required {
                        out.push('?');
                    }
                }
                if let Some(rest) = rest {
                    if !items.is_empty() {
                        out.push_str(", ");
                    }
                    out.push_str("...");
                    rest.render_in(Position::ArrayItem, indent, out);
                    out.push_str("[]");
                }
                out.push(']');
            }
            TsType::Object(object) => object.render(indent, out),
            TsType::Union(parts) => {
                let parens = matches!(position, Position::ArrayItem | Position::Intersection);
                if parens {
                    out.push('(');
                }
                for (i, part) in parts.iter().enumerate() {
                    if i > 0 {
                        out.push_str(" | ");
                    }
                    part.render_in(Position::Union, indent, out);
                }
                if parens {
                    out.push(')');
                }
            }
            TsType::Intersection(parts) => {
                let parens = matches!(position, Position::ArrayItem);
                if parens {
                    out.push('(');
                }
                for (i, part) in parts.iter().enumerate() {
                    if i > 0 {
                        out.push_str(" & ");
                    }
                    part.render_in(Position::Intersection, indent, out);
                }
                if parens {
                    out.push(')');
                }
            }
        }
    }

    /// The TypeScript type of one JSON value, as used by `const` and `enum`.
    fn of_value(value: &Value) -> TsType {
        match value {
            Value::Null => TsType::Null,
            Value::Bool(_) | Value::Number(_) | Value::String(_) => {
                TsType::Literal(json_text(value))
            }
            Value::Array(items) => TsType::Tuple {
                items: items.iter().map(TsType::of_value).collect(),
                required: items.len(),
                rest: None,
            },
            Value::Object(map) => TsType::Object(ObjectType {
                properties: map
                    .iter()
                    .map(|(k, v)| Property {
                        name: k.clone(),
                        ty: TsType::of_value(v),
                        optional: false,
                        doc: None,
                    })
                    .collect(),
                index: None,
            }),
        }
    }
}

/// Where a type is written, which decides whether a union or intersection needs parentheses.
#[derive(Clone, Copy)]
enum Position {
    Top,
    Union,
    Intersection,
    ArrayItem,
}

impl ObjectType {
    fn render(&self, indent: usize, out: &mut String) {
        if self.properties.is_empty() {
            match &self.index {
                // `{}` would mean "any value but null"; this is the type of exactly `{}`.
                None => out.push_str("Record<string, never>"),
                Some(index) => {
                    out.push_str("{ [key: string]: ");
                    index.render(indent, out);
                    out.push_str(" }");
                }
            }
            return;
        }
        out.push_str("{\n");
        let inner = indent + 2;
        for property in &self.properties {
            if let Some(doc) = &property.doc {
                doc_comment(doc, inner, out);
            }
            push_indent(inner, out);
            property_name(&property.name, out);
            if property.optional {
                out.push('?');
            }
            out.push_str(": ");
            property.ty.render(inner, out);
            out.push_str(";\n");
        }
        if let Some(index) = &self.index {
            push_indent(inner, out);
            out.push_str("[key: string]: ");
            index.render(inner, out);
            out.push_str(";\n");
        }
        push_indent(indent, out);
        out.push('}');
    }
}

pub fn push_indent(indent: usize, out: &mut String) {
    for _ in 0..indent {
        out.push(' ');
    }
}

/// A property name: bare when it is an identifier, otherwise a quoted string.
pub fn property_name(name: &str, out: &mut String) {
    if is_ts_identifier(name) {
        out.push_str(name);
    } else {
        out.push_str(&json_text(&Value::String(name.to_owned())));
    }
}

/// A `/** ... */` comment on its own lines. `*/` inside the text would end the comment early, so
/// it is broken up; trailing spaces are dropped so that the output is stable under formatters.
pub fn doc_comment(text: &str, indent: usize, out: &mut String) {
    let text = text.trim().replace("*/", "*\\/");
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    if lines.is_empty() {
        return;
    }
    push_indent(indent, out);
    if lines.len() == 1 {
        out.push_str("/** ");
        out.push_str(lines[0]);
        out.push_str(" */\n");
        return;
    }
    out.push_str("/**\n");
    for line in lines {
        push_indent(indent, out);
        if line.is_empty() {
            out.push_str(" *\n");
        } else {
            out.push_str(" * ");
            out.push_str(line);
            out.push('\n');
        }
    }
    push_indent(indent, out);
    out.push_str(" */\n");
}

/// The keywords the mapping reads, found in one pass over a schema object: schemas are small
/// maps, and one walk is cheaper than a hashed lookup per keyword.
#[derive(Default)]
struct Keywords<'v> {
    reference: Option<&'v str>,
    constant: Option<&'v Value>,
    enumeration: Option<&'v Vec<Value>>,
    nullable: bool,
    any_of: Option<&'v Vec<Value>>,
    one_of: Option<&'v Vec<Value>>,
    all_of: Option<&'v Vec<Value>>,
    types: Option<&'v Value>,
    properties: Option<&'v Map<String, Value>>,
    required: Option<&'v Vec<Value>>,
    additional: Option<&'v Value>,
    unevaluated: Option<&'v Value>,
    patterns: bool,
    items: Option<&'v Value>,
    prefix_items: Option<&'v Vec<Value>>,
    min_items: Option<u64>,
    description: Option<&'v str>,
    title: Option<&'v str>,
    format: Option<&'v str>,
    default: Option<&'v Value>,
}

impl<'v> Keywords<'v> {
    fn of(object: &'v Map<String, Value>) -> Keywords<'v> {
        let mut k = Keywords::default();
        for (key, value) in object {
            match key.as_str() {
                "$ref" => k.reference = value.as_str(),
                "const" => k.constant = Some(value),
                "enum" => k.enumeration = value.as_array(),
                "nullable" => k.nullable = value == &Value::Bool(true),
                "anyOf" => k.any_of = value.as_array(),
                "oneOf" => k.one_of = value.as_array(),
                "allOf" => k.all_of = value.as_array(),
                "type" => k.types = Some(value),
                "properties" => k.properties = value.as_object(),
                "required" => k.required = value.as_array(),
                "additionalProperties" => k.additional = Some(value),
                "unevaluatedProperties" => k.unevaluated = Some(value),
                "patternProperties" => {
                    k.patterns = value.as_object().is_some_and(|p| !p.is_empty());
                }
                "items" => k.items = Some(value),
                "prefixItems" => k.prefix_items = value.as_array(),
                "minItems" => k.min_items = value.as_u64(),
                "description" => k.description = value.as_str(),
                "title" => k.title = value.as_str(),
                "format" => k.format = value.as_str(),
                "default" => k.default = Some(value),
                _ => {}
            }
        }
        k
    }

    fn doc(&self) -> Option<String> {
        let mut doc = String::new();
        if let Some(text) = self.description.or(self.title) {
            doc.push_str(text.trim());
        }
        if let Some(format) = self.format {
            if !doc.is_empty() {
                doc.push('\n');
            }
            doc.push_str("@format ");
            doc.push_str(format);
        }
        if let Some(default) = self.default {
            if !doc.is_empty() {
                doc.push('\n');
            }
            doc.push_str("@default ");
            doc.push_str(&json_text(default));
        }
        (!doc.is_empty()).then_some(doc)
    }
}

/// Compact JSON text, without going through `Display`'s formatter adapter.
pub fn json_text(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned())
}

/// The documentation of a schema: its description (or title), its format and its default.
pub fn schema_doc(schema: &Value) -> Option<String> {
    Keywords::of(schema.as_object()?).doc()
}

/// Maps the schemas of one root (a tool's `parameters` or `returns`).
#[derive(Debug)]
pub struct Mapper<'a> {
    /// The root schema, which `$ref`s point into.
    pub root: &'a Value,
    /// The exported name of the root's type, for `$ref: "#"`.
    pub root_name: &'a str,
    /// `$defs/<name>` or `definitions/<name>` → the exported type name.
    pub defs: &'a BTreeMap<String, String>,
}

impl Mapper<'_> {
    /// The TypeScript type of `schema`, a schema inside the root.
    pub fn map(&self, schema: &Value) -> TsType {
        self.map_at(schema, 0)
    }

    fn map_at(&self, schema: &Value, depth: usize) -> TsType {
        let object = match schema {
            Value::Bool(true) => return TsType::Unknown,
            Value::Bool(false) => return TsType::Never,
            Value::Object(object) => object,
            _ => return TsType::Unknown,
        };
        if depth > MAX_INLINE_DEPTH {
            return TsType::Unknown;
        }
        let k = Keywords::of(object);
        if let Some(target) = k.reference {
            // 2020-12 allows keywords beside `$ref`; in practice they are annotations
            // (description, default), so the referenced type alone is the type.
            return self.reference(target, depth);
        }

        let mut base = if let Some(value) = k.constant {
            Some(TsType::of_value(value))
        } else if let Some(values) = k.enumeration {
            Some(TsType::union(values.iter().map(TsType::of_value)))
        } else {
            self.typed(&k, depth)
        };
        if k.nullable {
            base = base.map(|b| TsType::union([b, TsType::Null]));
        }

        let mut parts: Vec<TsType> = base.into_iter().collect();
        for alternatives in [k.any_of, k.one_of].into_iter().flatten() {
            parts.push(TsType::union(
                alternatives.iter().map(|s| self.map_at(s, depth + 1)),
            ));
        }
        if let Some(all) = k.all_of {
            parts.extend(all.iter().map(|s| self.map_at(s, depth + 1)));
        }
        TsType::intersection(parts)
    }

    /// The type from `type` (or implied by object/array keywords); `None` when unconstrained.
    fn typed(&self, k: &Keywords<'_>, depth: usize) -> Option<TsType> {
        let one;
        let names: &[Value] = match k.types {
            Some(Value::Array(names)) => names,
            Some(name @ Value::String(_)) => {
                one = [name.clone()];
                &one
            }
            _ if k.properties.is_some() || k.additional.is_some() || k.patterns => {
                return Some(self.object(k, depth));
            }
            _ if k.items.is_some() || k.prefix_items.is_some() => {
                return Some(self.array(k, depth));
            }
            _ => return None,
        };
        Some(TsType::union(names.iter().map(
            |name| match name.as_str().unwrap_or("") {
                "string" => TsType::String,
                "number" | "integer" => TsType::Number,
                "boolean" => TsType::Boolean,
                "null" => TsType::Null,
                "object" => self.object(k, depth),
                "array" => self.array(k, depth),
                _ => TsType::Unknown,
            },
        )))
    }

    fn object(&self, k: &Keywords<'_>, depth: usize) -> TsType {
        let required: crate::name_set::NameSet = k
            .required
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let is_required = |name: &str| required.contains(name);
        let properties: Vec<Property> = k
            .properties
            .map(|props| {
                props
                    .iter()
                    .map(|(name, schema)| Property {
                        name: name.clone(),
                        ty: self.map_at(schema, depth + 1),
                        optional: !is_required(name),
                        doc: schema_doc(schema),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let index = match k.additional.or(k.unevaluated) {
            Some(Value::Bool(false)) if !k.patterns => None,
            // A typed index signature must also admit every listed property's type; with
            // properties beside it, `unknown` is the honest common type.
            Some(schema) if properties.is_empty() && !k.patterns => {
                Some(Box::new(self.map_at(schema, depth + 1)))
            }
            _ => Some(Box::new(TsType::Unknown)),
        };
        TsType::Object(ObjectType { properties, index })
    }

    fn array(&self, k: &Keywords<'_>, depth: usize) -> TsType {
        match k.prefix_items {
            Some(prefix) => {
                let min = k.min_items.unwrap_or(0).min(prefix.len() as u64) as usize;
                let rest = match k.items {
                    Some(Value::Bool(false)) => None,
                    Some(schema) => Some(Box::new(self.map_at(schema, depth + 1))),
                    None => Some(Box::new(TsType::Unknown)),
                };
                TsType::Tuple {
                    items: prefix.iter().map(|s| self.map_at(s, depth + 1)).collect(),
                    required: min,
                    rest,
                }
            }
            None => match k.items {
                Some(Value::Bool(false)) => TsType::Tuple {
                    items: Vec::new(),
                    required: 0,
                    rest: None,
                },
                Some(schema) => TsType::Array(Box::new(self.map_at(schema, depth + 1))),
                None => TsType::Array(Box::new(TsType::Unknown)),
            },
        }
    }

    fn reference(&self, target: &str, depth: usize) -> TsType {
        let Some(pointer) = local_pointer(target) else {
            // The manifest check only admits references inside the same schema.
            return TsType::Unknown;
        };
        if pointer.is_empty() {
            return TsType::Named(self.root_name.to_owned());
        }
        if let Some(name) = def_key(&pointer).and_then(|key| self.defs.get(&key)) {
            return TsType::Named(name.clone());
        }
        match self.root.pointer(&pointer) {
            Some(schema) => self.map_at(schema, depth + 1),
            None => TsType::Unknown,
        }
    }
}

/// `/$defs/A~1B` → `$defs/A/B`: the key of a named definition, or `None` for deeper pointers.
fn def_key(pointer: &str) -> Option<String> {
    let rest = pointer.strip_prefix('/')?;
    let (container, name) = rest.split_once('/')?;
    if !matches!(container, "$defs" | "definitions") || name.contains('/') {
        return None;
    }
    Some(format!("{container}/{}", unescape_segment(name)))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn ts(schema: Value) -> String {
        let defs = BTreeMap::from([("$defs/Item".to_owned(), "ToolItem".to_owned())]);
        let mapper = Mapper {
            root: &schema,
            root_name: "ToolArgs",
            defs: &defs,
        };
        let mut out = String::new();
        mapper.map(&schema).render(0, &mut out);
        out
    }

    #[test]
    fn scalars_and_unions() {
        assert_eq!(ts(json!({"type": "string"})), "string");
        assert_eq!(ts(json!({"type": "integer"})), "number");
        assert_eq!(ts(json!({"type": ["string", "null"]})), "string | null");
        assert_eq!(
            ts(json!({"type": "string", "nullable": true})),
            "string | null"
        );
        assert_eq!(ts(json!({"enum": ["a", "b\"c"]})), "\"a\" | \"b\\\"c\"");
        assert_eq!(ts(json!({"const": 3})), "3");
        assert_eq!(ts(json!({})), "unknown");
        assert_eq!(ts(json!(false)), "never");
        assert_eq!(
            ts(json!({"anyOf": [{"type": "string"}, {"type": "number"}]})),
            "string | number"
        );
        // An alternative without a type widens the union to `unknown`.
        assert_eq!(
            ts(json!({"oneOf": [{"type": "string"}, {"minLength": 2}]})),
            "unknown"
        );
    }

    #[test]
    fn arrays_need_parentheses_around_unions() {
        assert_eq!(
            ts(json!({"type": "array", "items": {"type": ["string", "number"]}})),
            "(string | number)[]"
        );
        assert_eq!(ts(json!({"type": "array"})), "unknown[]");
        assert_eq!(
            ts(
                json!({"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}], "minItems": 1, "items": false})
            ),
            "[string, number?]"
        );
    }

    #[test]
    fn objects() {
        assert_eq!(
            ts(
                json!({"type": "object", "properties": {"a b": {"type": "string", "description": "x */ y"}, "c": {"$ref": "#/$defs/Item"}}, "required": ["c"], "additionalProperties": false})
            ),
            "{\n  /** x *\\/ y */\n  \"a b\"?: string;\n  c: ToolItem;\n}"
        );
        assert_eq!(ts(json!({"type": "object"})), "{ [key: string]: unknown }");
        assert_eq!(
            ts(json!({"type": "object", "additionalProperties": {"type": "number"}})),
            "{ [key: string]: number }"
        );
        assert_eq!(
            ts(json!({"type": "object", "properties": {}, "additionalProperties": false})),
            "Record<string, never>"
        );
    }

    #[test]
    fn references() {
        assert_eq!(
            ts(
                json!({"type": "object", "properties": {"next": {"$ref": "#"}}, "additionalProperties": false})
            ),
            "{\n  next?: ToolArgs;\n}"
        );
        assert_eq!(
            ts(
                json!({"type": "object", "properties": {"a": {"type": "boolean"}, "b": {"$ref": "#/properties/a"}}, "additionalProperties": false})
            ),
            "{\n  a?: boolean;\n  b?: boolean;\n}"
        );
        // A pointer cycle that never reaches a named type stops at the depth limit.
        assert_eq!(
            ts(
                json!({"type": "object", "properties": {"a": {"$ref": "#/properties/a"}}, "additionalProperties": false})
            ),
            "{\n  a?: unknown;\n}"
        );
        assert_eq!(def_key("/$defs/A~1B").as_deref(), Some("$defs/A/B"));
        assert_eq!(def_key("/$defs/A/properties/x"), None);
    }
}
