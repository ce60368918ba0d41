//! OpenAI strict mode (Structured Outputs for function calling), and its inverse for the runtime.
//!
//! Strict mode constrains decoding to the schema, but only for a subset of JSON Schema: every
//! object closed (`additionalProperties: false`) with every property listed in `required`;
//! `anyOf` but not `allOf`/`oneOf`/`not`/`if`; for strings only `pattern` and a list of `format`s,
//! for numbers `minimum`/`maximum`/`exclusive*`/`multipleOf`, for arrays `minItems`/`maxItems`;
//! `$defs`/`$ref` (also recursive), `enum`, `const`; no `default`. The root must be an object,
//! not a composition. Nesting is limited to 10 levels and 5,000 properties, enums to 1,000 values.
//!
//! [`to_strict`] rewrites a schema into that subset where it can do so without changing what the
//! model may send (optional properties become required-but-nullable, `default` moves into the
//! description). Length limits and unsupported `format`s are also stated in the description rather
//! than given up on strict mode: the runtime validates every call against the original schema, so
//! the constraint still holds, and structural guarantees are worth more. Anything else is reported as a [`StrictIssue`] and the caller keeps the original
//! schema with `strict: false`. [`strip_strict_nulls`] maps the nulls that strict mode makes the
//! model send for omitted optional arguments back to "absent" before an executor sees them.

use serde_json::{Map, Value};

/// Object nesting that strict mode accepts.
pub const MAX_DEPTH: usize = 10;
/// Properties across the whole schema that strict mode accepts.
pub const MAX_PROPERTIES: usize = 5000;
/// Enum values across the whole schema that strict mode accepts.
pub const MAX_ENUM_VALUES: usize = 1000;

/// String formats that strict mode accepts.
pub const STRICT_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Keywords kept as they are in a strict schema.
const KEPT: &[&str] = &[
    "type",
    "description",
    "title",
    "enum",
    "const",
    "pattern",
    "format",
    "multipleOf",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minItems",
    "maxItems",
];

/// Annotations without any effect on which values are valid; strict mode does not take them, and
/// dropping them changes nothing the model may send.
const DROPPED: &[&str] = &[
    "$schema",
    "$id",
    "$comment",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// Why a schema cannot be made strict: the keyword at `pointer` (a JSON pointer into the
/// original schema, to the schema object that holds the keyword).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StrictIssue {
    /// JSON pointer to the schema object that holds the keyword.
    pub pointer: String,
    /// The keyword strict mode cannot take.
    pub keyword: String,
    /// Why not, in words for a diagnostic.
    pub reason: String,
}

impl StrictIssue {
    /// The pointer of the keyword's own value, for a span as precise as the manifest allows.
    pub fn keyword_pointer(&self) -> String {
        format!("{}/{}", self.pointer, escape_pointer(&self.keyword))
    }

    /// What the author can change to get strict mode.
    pub fn fix(&self) -> String {
        match self.keyword.as_str() {
            "oneOf" => "use `anyOf` when the alternatives cannot both match".into(),
            "allOf" => "merge the `allOf` members into one schema".into(),
            "additionalProperties" => "declare every key under `properties` and set `additionalProperties: false`".into(),
            "properties" => "declare the object's keys under `properties`".into(),
            "type" => "give the schema a `type`".into(),
            "pattern" => "write the pattern without look-around (`(?=`, `(?!`, `(?<=`, `(?<!`)".into(),
            "anyOf" => "put the alternatives inside a property; the root of `parameters` must be a plain object".into(),
            _ => format!("remove `{}` or express it in `description`", self.keyword),
        }
    }
}

/// Rewrites `schema` (a `parameters` schema, root an object) for strict mode, or says why not.
pub fn to_strict(schema: &Value) -> Result<Value, Vec<StrictIssue>> {
    strict(schema, true)
}

/// Why `schema` cannot be made strict, as [`to_strict`] would say, without building the strict
/// schema: `toolc check` asks this of every tool and throws the schema away. Empty when it can.
pub fn strict_issues(schema: &Value) -> Vec<StrictIssue> {
    strict(schema, false).err().unwrap_or_default()
}

/// The one walk behind [`to_strict`] and [`strict_issues`]: with `build` false no output is
/// built (the result is then `Value::Null`), and the issues are the same, as they depend only
/// on the schema as written.
fn strict(schema: &Value, build: bool) -> Result<Value, Vec<StrictIssue>> {
    let mut cx = Strict {
        root: schema,
        build,
        issues: Vec::new(),
        properties: 0,
        enum_values: 0,
    };
    if let Value::Object(map) = schema {
        for key in ["anyOf", "oneOf", "allOf"] {
            if map.contains_key(key) {
                cx.issue(
                    "",
                    key,
                    "is not allowed: in strict mode the root is a plain object",
                );
            }
        }
        if map.get("type").and_then(Value::as_str) != Some("object") {
            cx.issue("", "type", "must be `object` at the root");
        }
    }
    let out = cx.convert(schema, "", 0);
    if cx.properties > MAX_PROPERTIES {
        cx.issue(
            "",
            "properties",
            &format!(
                "declares {} properties in all; strict mode allows {MAX_PROPERTIES}",
                cx.properties
            ),
        );
    }
    if cx.enum_values > MAX_ENUM_VALUES {
        cx.issue(
            "",
            "enum",
            &format!(
                "lists {} enum values in all; strict mode allows {MAX_ENUM_VALUES}",
                cx.enum_values
            ),
        );
    }
    if cx.issues.is_empty() {
        Ok(out)
    } else {
        Err(cx.issues)
    }
}

struct Strict<'a> {
    root: &'a Value,
    /// Whether to build the strict schema, or only to find the issues.
    build: bool,
    issues: Vec<StrictIssue>,
    properties: usize,
    enum_values: usize,
}

impl Strict<'_> {
    fn issue(&mut self, pointer: &str, keyword: &str, reason: &str) {
        let issue = StrictIssue {
            pointer: pointer.to_owned(),
            keyword: keyword.to_owned(),
            reason: reason.to_owned(),
        };
        if !self.issues.contains(&issue) {
            self.issues.push(issue);
        }
    }

    /// `depth` counts the objects around this schema.
    fn convert(&mut self, schema: &Value, pointer: &str, depth: usize) -> Value {
        let Value::Object(map) = schema else {
            self.issue(
                pointer,
                "type",
                "is a boolean schema; strict mode needs a schema with a `type`",
            );
            return if self.build {
                schema.clone()
            } else {
                Value::Null
            };
        };
        let build = self.build;
        let mut out = Map::new();
        let mut notes: Vec<String> = Vec::new();
        let is_object = map.get("type").is_some_and(|t| type_includes(t, "object"))
            || map.contains_key("properties");
        let depth = if is_object { depth + 1 } else { depth };
        if is_object && depth > MAX_DEPTH {
            self.issue(
                pointer,
                "properties",
                &format!("nests objects {depth} levels deep; strict mode allows {MAX_DEPTH}"),
            );
        }
        for (key, value) in map {
            self.convert_keyword(pointer, depth, key, value, &mut out, &mut notes);
        }
        if build && !notes.is_empty() {
            append_description(&mut out, &notes.join(" "));
        }
        // Keywords that already constrain the type, or were reported above.
        let untyped = ![
            "type",
            "$ref",
            "anyOf",
            "oneOf",
            "allOf",
            "not",
            "enum",
            "const",
            "properties",
        ]
        .iter()
        .any(|k| map.contains_key(*k));
        if untyped {
            self.issue(
                pointer,
                "type",
                "is missing: a schema that accepts any value cannot be strict",
            );
        }
        // An object given by `$ref` or `anyOf` is closed where it is declared: here,
        // `additionalProperties: false` would not see those properties and reject them all.
        let delegated = !map.contains_key("properties")
            && (map.contains_key("$ref") || map.contains_key("anyOf"));
        if is_object && !delegated {
            // `properties` without `type` is meant as an object; strict mode wants it said.
            if build && !out.contains_key("type") {
                out.insert("type".into(), "object".into());
            }
            self.close_object(map, &mut out, pointer);
        }
        if !build {
            return Value::Null;
        }
        if out.contains_key("$ref") && out.len() > 1 {
            // Strict mode takes no keywords beside `$ref`, but it takes them beside `anyOf`.
            if let Some(reference) = out.shift_remove("$ref") {
                let mut wrapped = Map::new();
                wrapped.insert("$ref".into(), reference);
                out.insert("anyOf".into(), Value::Array(vec![Value::Object(wrapped)]));
            }
        }
        Value::Object(out)
    }

    /// One keyword of a schema: converted below it, kept as written, stated in the
    /// description (`notes`), or reported.
    fn convert_keyword(
        &mut self,
        pointer: &str,
        depth: usize,
        key: &String,
        value: &Value,
        out: &mut Map<String, Value>,
        notes: &mut Vec<String>,
    ) {
        let build = self.build;
        // Where the walk goes below this schema: only a few keywords need it.
        let here = |key: &str| format!("{pointer}/{}", escape_pointer(key));
        // What the strict schema keeps as written.
        let keep = |out: &mut Map<String, Value>, key: &String, value: &Value| {
            if build {
                out.insert(key.clone(), value.clone());
            }
        };
        match key.as_str() {
            "properties" => match value.as_object() {
                Some(props) => {
                    self.properties += props.len();
                    let converted = self.convert_named(props, &here(key), depth);
                    if build {
                        out.insert(key.clone(), Value::Object(converted));
                    }
                }
                None => keep(out, key, value),
            },
            // A definition's depth depends on where it is used; count from the root.
            "$defs" | "definitions" => match value.as_object() {
                Some(defs) => {
                    let converted = self.convert_named(defs, &here(key), 0);
                    if build {
                        out.insert(key.clone(), Value::Object(converted));
                    }
                }
                None => keep(out, key, value),
            },
            "required" => {} // rebuilt below: every property is required
            "additionalProperties" => {
                if value == &Value::Bool(false) {
                    keep(out, key, value);
                } else {
                    self.issue(
                        pointer,
                        key,
                        "leaves the object open; strict mode needs every key declared",
                    );
                }
            }
            "items" => {
                if value.is_object() || value.is_boolean() {
                    let items = self.convert(value, &here(key), depth);
                    if build {
                        out.insert(key.clone(), items);
                    }
                } else {
                    self.issue(pointer, key, "as a list (tuple) is not supported");
                }
            }
            "anyOf" => {
                let Some(branches) = value.as_array() else {
                    keep(out, key, value);
                    return;
                };
                let here = here(key);
                let converted = branches
                    .iter()
                    .enumerate()
                    .map(|(i, b)| self.convert(b, &format!("{here}/{i}"), depth))
                    .collect();
                if build {
                    out.insert(key.clone(), Value::Array(converted));
                }
            }
            "$ref" => keep(out, key, value),
            "default" => {
                notes.push(format!("Default: {}.", compact(value)));
            }
            // Constraints strict mode cannot decode by, but that lose nothing when stated in
            // the description: the runtime validates every call against the original schema
            // before an executor or the browser sees it, and the model reads the description.
            "minLength" => notes.push(format!("At least {}.", counted(value, "character"))),
            "maxLength" => notes.push(format!("At most {}.", counted(value, "character"))),
            "minProperties" => notes.push(format!("At least {}.", counted(value, "entry"))),
            "maxProperties" => notes.push(format!("At most {}.", counted(value, "entry"))),
            "uniqueItems" if value == &Value::Bool(true) => {
                notes.push("Items must be unique.".to_owned());
            }
            "uniqueItems" => {}
            "format" => {
                if value.as_str().is_some_and(|f| STRICT_FORMATS.contains(&f)) {
                    keep(out, key, value);
                } else {
                    notes.push(format!("Format: {}.", value.as_str().unwrap_or("?")));
                }
            }
            "pattern" => {
                if value.as_str().is_some_and(has_lookaround) {
                    self.issue(pointer, key, "uses look-around, which strict mode rejects");
                } else {
                    keep(out, key, value);
                }
            }
            "enum" => {
                self.enum_values += value.as_array().map_or(0, Vec::len);
                keep(out, key, value);
            }
            k if KEPT.contains(&k) => keep(out, key, value),
            k if DROPPED.contains(&k) => {}
            _ => self.issue(pointer, key, "is not supported in strict mode"),
        }
    }

    /// The schemas of `properties` or `$defs`, each converted at `depth`.
    fn convert_named(
        &mut self,
        members: &Map<String, Value>,
        here: &str,
        depth: usize,
    ) -> Map<String, Value> {
        let mut converted = Map::new();
        for (name, sub) in members {
            let sub_ptr = format!("{here}/{}", escape_pointer(name));
            let sub = self.convert(sub, &sub_ptr, depth);
            if self.build {
                converted.insert(name.clone(), sub);
            }
        }
        converted
    }

    /// Closes an object and makes every property required; the optional ones become nullable.
    fn close_object(
        &mut self,
        original: &Map<String, Value>,
        out: &mut Map<String, Value>,
        pointer: &str,
    ) {
        let declared = original.get("properties").and_then(Value::as_object);
        if declared.is_none_or(Map::is_empty)
            && original.get("additionalProperties") != Some(&Value::Bool(false))
        {
            self.issue(
                pointer,
                "properties",
                "is missing: an object without declared keys accepts any key, and strict mode needs every key declared",
            );
        }
        if !self.build {
            return;
        }
        let required: crate::name_set::NameSet = original
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let mut names = Vec::new();
        if let (Some(declared), Some(Value::Object(props))) = (declared, out.get_mut("properties"))
        {
            for (name, original_sub) in declared {
                names.push(Value::String(name.clone()));
                if required.contains(name) || accepts_null(original_sub, self.root) {
                    continue;
                }
                if let Some(sub) = props.get_mut(name) {
                    let converted = std::mem::take(sub);
                    *sub = make_nullable(converted);
                }
            }
        }
        out.insert("required".into(), Value::Array(names));
        out.insert("additionalProperties".into(), Value::Bool(false));
    }
}

/// Lets a (strict) schema also accept `null`.
fn make_nullable(schema: Value) -> Value {
    let Value::Object(mut map) = schema else {
        return schema;
    };
    if let Some(t) = map.get_mut("type") {
        match t {
            Value::String(s) => *t = Value::Array(vec![Value::String(s.clone()), "null".into()]),
            Value::Array(types) => types.push("null".into()),
            _ => {}
        }
        if let Some(Value::Array(values)) = map.get_mut("enum") {
            values.push(Value::Null);
        }
        if let Some(c) = map.shift_remove("const") {
            map.insert("enum".into(), Value::Array(vec![c, Value::Null]));
        }
        // Both `type` and `anyOf` must let null through.
        if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
            branches.push(serde_json::json!({ "type": "null" }));
        }
        return Value::Object(map);
    }
    if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
        branches.push(serde_json::json!({ "type": "null" }));
        return Value::Object(map);
    }
    if let Some(Value::Array(values)) = map.get_mut("enum") {
        values.push(Value::Null);
        return Value::Object(map);
    }
    // `$ref` or `const` alone: keep the annotations outside, the assertion in one branch.
    let mut inner = Map::new();
    for key in ["$ref", "const"] {
        if let Some(v) = map.shift_remove(key) {
            inner.insert(key.into(), v);
        }
    }
    map.insert(
        "anyOf".into(),
        Value::Array(vec![
            Value::Object(inner),
            serde_json::json!({ "type": "null" }),
        ]),
    );
    Value::Object(map)
}

fn append_description(map: &mut Map<String, Value>, note: &str) {
    let text = match map.get("description").and_then(Value::as_str) {
        Some(d) if !d.trim().is_empty() => format!("{} {note}", d.trim_end()),
        _ => note.to_owned(),
    };
    map.insert("description".into(), Value::String(text));
}

/// `1 character`, `2 characters`, `1 entry`, `3 entries`: a bound with its noun.
fn counted(value: &Value, noun: &str) -> String {
    let plural = match noun.strip_suffix('y') {
        Some(stem) => format!("{stem}ies"),
        None => format!("{noun}s"),
    };
    let word = if value.as_f64() == Some(1.0) {
        noun
    } else {
        &plural
    };
    format!("{} {word}", compact(value))
}

fn compact(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn has_lookaround(pattern: &str) -> bool {
    let mut escaped = false;
    for (i, c) in pattern.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        if c == '\\' {
            escaped = true;
            continue;
        }
        let rest = &pattern[i..];
        if ["(?=", "(?!", "(?<=", "(?<!"]
            .iter()
            .any(|t| rest.starts_with(t))
        {
            return true;
        }
    }
    false
}

fn type_includes(t: &Value, name: &str) -> bool {
    match t {
        Value::String(s) => s == name,
        Value::Array(items) => items.iter().any(|i| i.as_str() == Some(name)),
        _ => false,
    }
}

mod nulls;

pub use crate::schema_util::{escape_segment as escape_pointer, resolve_ref};
pub use nulls::{accepts_null, strip_strict_nulls};

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Schemas made of every keyword the strict walk decides on, nested.
    fn any_schema() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(json!({"type": "string"})),
            Just(json!({"type": "string", "format": "date-time"})),
            Just(json!({"type": "string", "format": "hostname", "minLength": 2})),
            Just(json!({"type": "string", "pattern": "^(?=a)"})),
            Just(json!({"type": "string", "pattern": "^a+$", "maxLength": 9})),
            Just(json!({"type": ["integer", "null"], "default": 3})),
            Just(json!({"enum": ["a", "b", null]})),
            Just(json!({"const": 1})),
            Just(json!({"not": {"type": "string"}})),
            Just(json!({"type": "array", "items": [{"type": "string"}]})),
            Just(json!({"type": "array", "uniqueItems": true, "items": true})),
            Just(json!({"$ref": "#/$defs/Thing"})),
            Just(json!({"$ref": "#/$defs/Thing", "description": "beside"})),
            Just(json!({"examples": [1], "$comment": "c", "type": "number"})),
            Just(json!({"type": "number", "multipleOf": 2})),
            Just(json!({"type": "object"})),
            Just(json!({"type": "object", "additionalProperties": true})),
            Just(
                json!({"minProperties": 1, "maxProperties": 2, "type": "object", "additionalProperties": false})
            ),
            Just(json!({})),
            Just(json!(true)),
            Just(json!(false)),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                (prop::collection::vec(inner.clone(), 0..4), any::<u8>()).prop_map(|(props, bits)| {
                    let properties: serde_json::Map<String, Value> = props
                        .into_iter()
                        .enumerate()
                        .map(|(i, p)| (format!("p{i}"), p))
                        .collect();
                    let required: Vec<String> =
                        (0..4).filter(|i| bits & (1 << i) != 0).map(|i| format!("p{i}")).collect();
                    let mut schema = json!({"properties": properties, "required": required});
                    if bits & 16 != 0 {
                        schema["type"] = json!("object");
                    }
                    if bits & 32 != 0 {
                        schema["additionalProperties"] = json!(false);
                    }
                    schema
                }),
                inner.clone().prop_map(|items| json!({"type": "array", "items": items})),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| json!({"anyOf": [a, b]})),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| json!({"oneOf": [a, b]})),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| json!({"allOf": [a, b]})),
                inner.clone().prop_map(|d| json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/Thing"}}, "$defs": {"Thing": d}})),
                inner.prop_map(|v| json!({"type": "object", "additionalProperties": v})),
            ]
        })
    }

    proptest::proptest! {
        // Random seeds: before `accepts_null` judged each definition once, 2 seeds in 30 ran
        // for minutes (a definition made of `allOf`s of itself doubles at every level).
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 2000,
            ..proptest::prelude::ProptestConfig::default()
        })]
        /// `toolc check` reports what `toolc build` would: the issues without the schema are
        /// the issues with it, in order.
        #[test]
        fn issues_alone_are_the_conversions_issues(schema in any_schema(), rooted in proptest::prelude::any::<bool>()) {
            let schema = if rooted {
                json!({"type": "object", "properties": {"a": schema}, "additionalProperties": false})
            } else {
                schema
            };
            proptest::prop_assert_eq!(
                strict_issues(&schema),
                to_strict(&schema).err().unwrap_or_default()
            );
        }
    }

    fn keywords(issues: &[StrictIssue]) -> Vec<(String, String)> {
        issues
            .iter()
            .map(|i| (i.pointer.clone(), i.keyword.clone()))
            .collect()
    }

    #[test]
    fn closes_objects_and_makes_optional_properties_nullable() {
        let schema = json!({
            "type": "object",
            "properties": {
                "query": { "type": "string" },
                "limit": { "type": "integer", "minimum": 1, "default": 5, "description": "How many." },
                "color": { "type": "string", "enum": ["red", "green"] },
                "kind": { "const": "x" },
                "maybe": { "type": ["string", "null"] }
            },
            "required": ["query"]
        });
        let strict = to_strict(&schema).unwrap();
        assert_eq!(
            strict,
            json!({
                "type": "object",
                "properties": {
                    "query": { "type": "string" },
                    "limit": { "type": ["integer", "null"], "minimum": 1, "description": "How many. Default: 5." },
                    "color": { "type": ["string", "null"], "enum": ["red", "green", null] },
                    "kind": { "anyOf": [{ "const": "x" }, { "type": "null" }] },
                    "maybe": { "type": ["string", "null"] }
                },
                "required": ["query", "limit", "color", "kind", "maybe"],
                "additionalProperties": false
            })
        );
    }

    #[test]
    fn nullable_covers_type_and_any_of_together() {
        let schema = json!({
            "type": "object",
            "properties": {
                "pick": { "type": "string", "anyOf": [{ "enum": ["a"] }, { "enum": ["b"] }] },
                "range": { "type": "object", "$ref": "#/$defs/R" }
            },
            "$defs": { "R": { "type": "object", "properties": { "x": { "type": "number" } }, "required": ["x"] } }
        });
        let strict = to_strict(&schema).unwrap();
        let validator = jsonschema::validator_for(&strict).unwrap();
        assert!(validator.is_valid(&json!({ "pick": null, "range": null })));
        assert!(validator.is_valid(&json!({ "pick": "b", "range": { "x": 1 } })));
        assert!(!validator.is_valid(&json!({ "pick": "c", "range": null })));
        assert!(!validator.is_valid(&json!({ "pick": null })));
    }

    #[test]
    fn refs_with_siblings_move_into_any_of_and_defs_are_converted() {
        let schema = json!({
            "type": "object",
            "properties": {
                "price": { "$ref": "#/$defs/Range", "description": "Price range." },
                "tree": { "$ref": "#/$defs/Node" }
            },
            "required": ["tree"],
            "$defs": {
                "Range": { "type": "object", "properties": { "min": { "type": "number" } } },
                "Node": {
                    "type": "object",
                    "properties": { "children": { "type": "array", "items": { "$ref": "#/$defs/Node" } } },
                    "required": ["children"]
                }
            }
        });
        let strict = to_strict(&schema).unwrap();
        assert_eq!(
            strict["properties"]["price"],
            json!({ "description": "Price range.", "anyOf": [{ "$ref": "#/$defs/Range" }, { "type": "null" }] })
        );
        assert_eq!(
            strict["properties"]["tree"],
            json!({ "$ref": "#/$defs/Node" })
        );
        assert_eq!(
            strict["$defs"]["Range"],
            json!({
                "type": "object",
                "properties": { "min": { "type": ["number", "null"] } },
                "required": ["min"],
                "additionalProperties": false
            })
        );
        assert_eq!(
            strict["$defs"]["Node"]["additionalProperties"],
            json!(false)
        );
    }

    #[test]
    fn reports_every_keyword_that_prevents_strict_mode() {
        let schema = json!({
            "type": "object",
            "properties": {
                "either": { "oneOf": [{ "type": "string" }, { "type": "integer" }] },
                "map": { "type": "object", "additionalProperties": { "type": "string" } },
                "free": { "type": "object" },
                "any": {},
                "code": { "type": "string", "pattern": "^(?!x)" }
            }
        });
        let issues = to_strict(&schema).unwrap_err();
        let got = keywords(&issues);
        for expected in [
            ("/properties/either", "oneOf"),
            ("/properties/map", "additionalProperties"),
            ("/properties/free", "properties"),
            ("/properties/any", "type"),
            ("/properties/code", "pattern"),
        ] {
            assert!(
                got.contains(&(expected.0.to_owned(), expected.1.to_owned())),
                "missing {expected:?} in {got:?}"
            );
        }
        assert_eq!(issues[0].keyword_pointer(), "/properties/either/oneOf");
    }

    #[test]
    fn root_composition_and_deep_nesting_are_not_strict() {
        let root_any = json!({ "type": "object", "properties": { "a": { "type": "string" } }, "anyOf": [{ "required": ["a"] }] });
        assert!(
            keywords(&to_strict(&root_any).unwrap_err()).contains(&(String::new(), "anyOf".into()))
        );

        let mut deep = json!({ "type": "string" });
        for _ in 0..11 {
            deep = json!({ "type": "object", "properties": { "x": deep }, "required": ["x"] });
        }
        let issues = to_strict(&deep).unwrap_err();
        assert!(issues
            .iter()
            .any(|i| i.keyword == "properties" && i.reason.contains("levels")));
    }

    #[test]
    fn strict_schema_accepts_filled_arguments_and_strip_restores_them() {
        let original = json!({
            "type": "object",
            "properties": {
                "query": { "type": "string" },
                "limit": { "type": "integer" },
                "filters": {
                    "type": "object",
                    "properties": {
                        "price": { "$ref": "#/$defs/Range" },
                        "tag": { "type": ["string", "null"] }
                    }
                },
                "items": { "type": "array", "items": { "$ref": "#/$defs/Range" } }
            },
            "required": ["query"],
            "$defs": { "Range": { "type": "object", "properties": { "min": { "type": "number" }, "max": { "type": "number" } } } }
        });
        let strict = to_strict(&original).unwrap();
        let mut args = json!({
            "query": "shoes",
            "limit": null,
            "filters": { "price": { "min": 1, "max": null }, "tag": null },
            "items": [{ "min": null, "max": 3 }]
        });
        let strict_validator = jsonschema::validator_for(&strict).unwrap();
        assert!(strict_validator.is_valid(&args));
        strip_strict_nulls(&original, &mut args);
        assert_eq!(
            args,
            json!({
                "query": "shoes",
                "filters": { "price": { "min": 1 }, "tag": null },
                "items": [{ "max": 3 }]
            })
        );
        assert!(jsonschema::validator_for(&original)
            .unwrap()
            .is_valid(&args));
    }

    #[test]
    fn strip_keeps_nulls_that_mean_something() {
        let original = json!({
            "type": "object",
            "properties": {
                "required_null": { "type": ["string", "null"] },
                "optional_null": { "anyOf": [{ "type": "string" }, { "type": "null" }] },
                "optional_ref_null": { "$ref": "#/$defs/Nullable" },
                "optional": { "type": "string" }
            },
            "required": ["required_null"],
            "$defs": { "Nullable": { "enum": ["a", null] } }
        });
        let mut args = json!({ "required_null": null, "optional_null": null, "optional_ref_null": null, "optional": null, "extra": null });
        strip_strict_nulls(&original, &mut args);
        assert_eq!(
            args,
            json!({ "required_null": null, "optional_null": null, "optional_ref_null": null, "extra": null })
        );
    }

    #[test]
    fn strip_picks_the_matching_union_branch() {
        let original = json!({
            "type": "object",
            "properties": {
                "refund_to": {
                    "anyOf": [
                        { "type": "string" },
                        { "type": "object", "properties": { "email": { "type": "string" }, "note": { "type": "string" } }, "required": ["email"] }
                    ]
                }
            }
        });
        let mut args = json!({ "refund_to": { "email": "a@b.c", "note": null } });
        strip_strict_nulls(&original, &mut args);
        assert_eq!(args, json!({ "refund_to": { "email": "a@b.c" } }));
    }

    #[test]
    fn strip_survives_hostile_input() {
        let cyclic = json!({ "$ref": "#/$defs/A", "$defs": { "A": { "$ref": "#/$defs/B" }, "B": { "$ref": "#/$defs/A" } } });
        let mut args = json!({ "x": null, "y": [1, { "z": null }] });
        strip_strict_nulls(&cyclic, &mut args);
        assert_eq!(args, json!({ "x": null, "y": [1, { "z": null }] }));

        let schema = json!({ "type": "object", "properties": { "a": { "type": "string" } } });
        for mut value in [json!(null), json!("text"), json!([null, 1]), json!(42)] {
            let before = value.clone();
            strip_strict_nulls(&schema, &mut value);
            assert_eq!(value, before);
        }
        // What a broken $ref allows is unknown: its null stays, for validation to judge.
        let broken = json!({ "type": "object", "properties": { "a": { "$ref": "#/nowhere" } } });
        let mut args = json!({ "a": null });
        strip_strict_nulls(&broken, &mut args);
        assert_eq!(args, json!({ "a": null }));
        strip_strict_nulls(&json!(true), &mut args);
    }

    /// A schema whose definitions each use the next twice, `levels` deep: followed path by path
    /// it is 2^levels schemas, read once each it is `levels`.
    fn shared_definitions(levels: usize, make: impl Fn(Value) -> Value, leaf: Value) -> Value {
        let mut defs = serde_json::Map::new();
        for k in 0..levels {
            defs.insert(
                format!("D{k}"),
                make(json!({ "$ref": format!("#/$defs/D{}", k + 1) })),
            );
        }
        defs.insert(format!("D{levels}"), leaf);
        json!({ "type": "object", "properties": { "x": { "$ref": "#/$defs/D0" } }, "$defs": defs })
    }

    /// Runs `work` on a thread of its own and fails if it has not finished within a minute: the
    /// shapes below take microseconds when each definition is read once, and longer than the
    /// age of the universe when they are followed path by path.
    fn finishes<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
        let (done, answer) = std::sync::mpsc::channel();
        std::thread::spawn(move || done.send(work()));
        answer
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("still running after a minute: shared definitions are followed path by path")
    }

    #[test]
    fn shared_definitions_are_read_once() {
        let levels = 30; // under MAX_REF_HOPS, past which a chain counts as accepting null
        let all_of = shared_definitions(levels, |r| json!({ "allOf": [r.clone(), r] }), json!({}));
        let any_of = shared_definitions(
            levels,
            |r| json!({ "anyOf": [r.clone(), r] }),
            json!({ "type": "string" }),
        );
        let union_of_objects = shared_definitions(
            levels,
            |r| json!({ "anyOf": [r.clone(), r] }),
            json!({ "type": "object", "properties": { "y": { "type": "string" } } }),
        );
        let merged_objects = shared_definitions(
            levels,
            |r| json!({ "allOf": [r.clone(), r] }),
            json!({ "type": "object", "properties": { "y": { "type": "string" } } }),
        );
        let answers = finishes(move || {
            let null = |s: &Value| accepts_null(&s["$defs"]["D0"], s);
            let answers = (null(&all_of), null(&any_of));
            let mut args = json!({ "x": { "y": null, "z": null } });
            strip_strict_nulls(&union_of_objects, &mut args);
            let mut merged = json!({ "x": { "y": null } });
            strip_strict_nulls(&merged_objects, &mut merged);
            let mut list = json!({ "x": [null] });
            strip_strict_nulls(&any_of, &mut list);
            (answers, args, merged, list)
        });
        // `{}` accepts null; the string does not, whichever branch is taken.
        assert_eq!(answers.0, (true, false));
        // `z` is declared by no branch, so no branch fits and nothing is stripped.
        assert_eq!(answers.1, json!({ "x": { "y": null, "z": null } }));
        assert_eq!(answers.2, json!({ "x": {} }));
        assert_eq!(answers.3, json!({ "x": [null] }));
    }

    #[test]
    fn unions_that_lead_back_to_themselves_end() {
        let looped = json!({ "$ref": "#/$defs/A", "$defs": {
            "A": { "anyOf": [{ "$ref": "#/$defs/A" }, { "$ref": "#/$defs/B" }] },
            "B": { "allOf": [{ "$ref": "#/$defs/A" }] } } });
        for mut args in [json!([1, null]), json!({ "a": null })] {
            let before = args.clone();
            strip_strict_nulls(&looped, &mut args);
            assert_eq!(args, before);
        }
        // A cycle says nothing about null, so it counts as accepting it (the runtime keeps the
        // null for validation to judge).
        assert!(accepts_null(&looped, &looped));
    }

    #[test]
    fn accepts_null_follows_the_keywords() {
        let root = json!({ "$defs": { "N": { "type": "null" } } });
        assert!(accepts_null(&json!({}), &root));
        assert!(accepts_null(&json!(true), &root));
        assert!(!accepts_null(&json!(false), &root));
        assert!(!accepts_null(&json!({ "type": "string" }), &root));
        assert!(accepts_null(&json!({ "$ref": "#/$defs/N" }), &root));
        assert!(!accepts_null(&json!({ "enum": ["a"] }), &root));
        assert!(accepts_null(
            &json!({ "anyOf": [{ "type": "string" }, { "const": null }] }),
            &root
        ));
        assert!(!accepts_null(
            &json!({ "allOf": [{ "type": ["string", "null"] }, { "type": "string" }] }),
            &root
        ));
    }
}
