//! The meaning of a well-formed schema: what no value can satisfy, and values in it that the
//! schema itself rejects.
//!
//! The syntax checks (`schema_check`) accept `{type: boolean, enum: ["True", "False"]}`: every
//! keyword is well-formed. But no argument can ever satisfy it, so every call the model makes is
//! refused at run time. This pass finds such schemas at build time:
//!
//! - errors (`toolc::unsatisfiable-schema`): an `enum` value or a `const` that the rest of its
//!   schema rejects, an empty `enum`, a `const` outside the `enum`, bounds that contradict each
//!   other (`minimum` above `maximum`, `minLength` above `maxLength`, ...), and a `required`
//!   property that `additionalProperties: false` forbids;
//! - warnings (`toolc::invalid-default`, `toolc::invalid-example`): a `default` or an entry of
//!   `examples` that its schema rejects (the model reads them, and a default of the wrong type
//!   reaches the generated code).
//!
//! Values are checked against the schema they sit in, every keyword of it but the value's own
//! (an `enum` value against the schema without `enum`, a `default` against the schema with its
//! `enum`). Scalars against the common keywords are checked here directly; anything else (a
//! `pattern`, an applicator, a `$ref`, an object or array value) goes through the `jsonschema`
//! validator, built only for those few schemas.

use serde_json::{Map, Value as Json};

use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::schema_util::{
    escape_segment, resolve_ref, SUBSCHEMA as ONE, SUBSCHEMA_LIST as LIST, SUBSCHEMA_MAP as MAP,
};
use crate::source::Span;
use crate::yaml::Node;

/// Checks every schema object in `root` (the value of `field` of `what`, parsed from `node`).
pub fn check(node: &Node, root: &Json, what: &str, field: &str, diags: &mut Diagnostics) {
    let mut pass = Pass {
        node,
        root,
        what,
        field,
        diags,
    };
    pass.walk(root, &mut String::new());
}

/// Keywords a scalar value is checked against here; a schema with any keyword outside these
/// and [`IGNORED_FOR_SCALARS`] goes to the full validator.
const SCALAR_KEYWORDS: &[&str] = &[
    "type",
    "enum",
    "const",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
];

/// Keywords that never reject a scalar: annotations, and assertions about objects and arrays.
const IGNORED_FOR_SCALARS: &[&str] = &[
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$comment",
    "$schema",
    "$id",
    "$anchor",
    "$defs",
    "definitions",
    "format",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
    "properties",
    "patternProperties",
    "additionalProperties",
    "propertyNames",
    "required",
    "dependentRequired",
    "dependentSchemas",
    "minProperties",
    "maxProperties",
    "unevaluatedProperties",
    "items",
    "prefixItems",
    "contains",
    "minContains",
    "maxContains",
    "minItems",
    "maxItems",
    "uniqueItems",
    "unevaluatedItems",
];

/// Whether two numbers leave no room between them (a bound pair), or a value breaks a bound.
type Empty = fn(f64, f64) -> bool;

struct Pass<'a> {
    node: &'a Node,
    root: &'a Json,
    what: &'a str,
    field: &'a str,
    diags: &'a mut Diagnostics,
}

impl Pass<'_> {
    fn walk(&mut self, schema: &Json, pointer: &mut String) {
        let Some(map) = schema.as_object() else {
            return;
        };
        self.contradictions(map, pointer);
        self.values(map, pointer);
        let len = pointer.len();
        for (key, value) in map {
            let k = key.as_str();
            if ONE.contains(&k) {
                push(pointer, k);
                self.walk(value, pointer);
                pointer.truncate(len);
            } else if MAP.contains(&k) {
                if let Some(members) = value.as_object() {
                    for (name, sub) in members {
                        push(pointer, k);
                        push(pointer, name);
                        self.walk(sub, pointer);
                        pointer.truncate(len);
                    }
                }
            } else if LIST.contains(&k) {
                if let Some(members) = value.as_array() {
                    for (i, sub) in members.iter().enumerate() {
                        push(pointer, k);
                        pointer.push('/');
                        pointer.push_str(&i.to_string());
                        self.walk(sub, pointer);
                        pointer.truncate(len);
                    }
                }
            }
        }
    }

    /// The span of the value at `pointer/keyword`.
    fn span(&self, pointer: &str, keyword: &str) -> Span {
        let at = format!("{pointer}/{}", escape_segment(keyword));
        match self.node.pointer(&at) {
            Some((_, node)) => node.span,
            None => self.node.span,
        }
    }

    fn place(&self, pointer: &str) -> String {
        let at = if pointer.is_empty() {
            String::new()
        } else {
            format!(" at `{pointer}`")
        };
        format!("`{}` of {}{at}", self.field, self.what)
    }

    fn contradictions(&mut self, map: &Map<String, Json>, pointer: &str) {
        let num = |k: &str| map.get(k).and_then(Json::as_f64);
        let bounds: [(&str, &str, Empty, &str); 4] = [
            ("minimum", "maximum", |lo, hi| lo > hi, "above"),
            (
                "exclusiveMinimum",
                "maximum",
                |lo, hi| lo >= hi,
                "at or above",
            ),
            (
                "minimum",
                "exclusiveMaximum",
                |lo, hi| lo >= hi,
                "at or above",
            ),
            (
                "exclusiveMinimum",
                "exclusiveMaximum",
                |lo, hi| lo >= hi,
                "at or above",
            ),
        ];
        for (low, high, empty, relation) in bounds {
            if let (Some(lo), Some(hi)) = (num(low), num(high)) {
                if empty(lo, hi) {
                    self.bound_clash(pointer, low, high, lo, hi, relation, "number");
                }
            }
        }
        let counts = [
            ("minLength", "maxLength", "string"),
            ("minItems", "maxItems", "array"),
            ("minProperties", "maxProperties", "object"),
            ("minContains", "maxContains", "array"),
        ];
        for (low, high, kind) in counts {
            if let (Some(lo), Some(hi)) = (num(low), num(high)) {
                if lo > hi {
                    self.bound_clash(pointer, low, high, lo, hi, "above", kind);
                }
            }
        }
        self.required_but_forbidden(map, pointer);
    }

    #[allow(clippy::too_many_arguments)]
    fn bound_clash(
        &mut self,
        pointer: &str,
        low: &str,
        high: &str,
        lo: f64,
        hi: f64,
        relation: &str,
        kind: &str,
    ) {
        let message = format!(
            "`{low}: {}` is {relation} `{high}: {}` in {}, so no {kind} satisfies it",
            number(lo),
            number(hi),
            self.place(pointer)
        );
        let diagnostic = unsatisfiable(
            message,
            self.span(pointer, low),
            &format!("`{low}` is {relation} `{high}`"),
            format!("lower `{low}` or raise `{high}`; as written, every value is refused"),
        )
        .also(self.span(pointer, high), format!("`{high}` is here"));
        self.diags.push(diagnostic);
    }

    /// `required: [x]` with `additionalProperties: false` and no `x` in `properties` (or a
    /// `patternProperties` that might admit it): no object can have `x`, and none may lack it.
    fn required_but_forbidden(&mut self, map: &Map<String, Json>, pointer: &str) {
        if map.get("additionalProperties") != Some(&Json::Bool(false))
            || map.contains_key("patternProperties")
        {
            return;
        }
        let Some(required) = map.get("required").and_then(Json::as_array) else {
            return;
        };
        let properties = map.get("properties").and_then(Json::as_object);
        for (i, name) in required.iter().enumerate() {
            let Some(name) = name.as_str() else {
                continue;
            };
            if properties.is_some_and(|p| p.contains_key(name)) {
                continue;
            }
            let at = format!("{pointer}/required/{i}");
            let span = match self.node.pointer(&at) {
                Some((_, node)) => node.span,
                None => self.span(pointer, "required"),
            };
            let message = format!(
                "`required` names `{name}`, which `additionalProperties: false` forbids, in {}: no object satisfies it",
                self.place(pointer)
            );
            let diagnostic = unsatisfiable(
                message,
                span,
                "required but never allowed",
                format!("declare `{name}` under `properties`, or remove it from `required`"),
            )
            .also(
                self.span(pointer, "additionalProperties"),
                "forbids every property not in `properties`",
            );
            self.diags.push(diagnostic);
        }
    }

    fn values(&mut self, map: &Map<String, Json>, pointer: &str) {
        if let Some(Json::Array(values)) = map.get("enum") {
            self.enum_values(map, values, pointer);
        }
        if let Some(value) = map.get("const") {
            self.const_value(map, value, pointer);
        }
        if let Some(value) = map.get("default") {
            if let Some(why) = self.rejects(map, &["default", "examples"], value) {
                let mut diagnostic = Diagnostic::warning(
                    crate::codes::INVALID_DEFAULT,
                    format!(
                        "the `default` {} in {} does not satisfy its own schema: {why}",
                        shown(value),
                        self.place(pointer)
                    ),
                )
                .at(
                    self.span(pointer, "default"),
                    "rejected by the schema it sits in",
                );
                diagnostic = diagnostic.help(default_help(map, value));
                self.diags.push(diagnostic);
            }
        }
        if let Some(Json::Array(examples)) = map.get("examples") {
            let verdicts = self.rejects_each(map, &["default", "examples"], examples);
            for (i, (example, why)) in examples.iter().zip(verdicts).enumerate() {
                if let Some(why) = why {
                    let at = format!("{pointer}/examples/{i}");
                    let span = match self.node.pointer(&at) {
                        Some((_, node)) => node.span,
                        None => self.span(pointer, "examples"),
                    };
                    self.diags.push(
                        Diagnostic::warning(
                            crate::codes::INVALID_EXAMPLE,
                            format!(
                                "the example {} in {} does not satisfy its own schema: {why}",
                                shown(example),
                                self.place(pointer)
                            ),
                        )
                        .at(span, "rejected by the schema it sits in")
                        .help("the model reads examples as calls to imitate: fix the value or remove it"),
                    );
                }
            }
        }
    }

    fn enum_values(&mut self, map: &Map<String, Json>, values: &[Json], pointer: &str) {
        if values.is_empty() {
            let diagnostic = unsatisfiable(
                format!(
                    "`enum` is empty in {}, so no value satisfies it",
                    self.place(pointer)
                ),
                self.span(pointer, "enum"),
                "no values",
                "list the allowed values, or remove `enum`".into(),
            );
            self.diags.push(diagnostic);
            return;
        }
        let skip = ["enum", "const", "default", "examples"];
        let rejected: Vec<(usize, String)> = values
            .iter()
            .enumerate()
            .zip(self.rejects_each(map, &skip, values))
            .filter_map(|((i, _), why)| why.map(|why| (i, why)))
            .collect();
        let all = rejected.len() == values.len();
        for (i, why) in rejected {
            let at = format!("{pointer}/enum/{i}");
            let span = match self.node.pointer(&at) {
                Some((_, node)) => node.span,
                None => self.span(pointer, "enum"),
            };
            // Arguments come from the model; results come from the executor.
            let consequence = match (all, self.field == "returns") {
                (true, false) => {
                    "none of the values is allowed, so no argument can ever satisfy the schema"
                }
                (true, true) => "none of the values is allowed, so no result can ever satisfy the schema",
                (false, false) => "the model may send it, and every call that does is refused",
                (false, true) => {
                    "an executor may return it, and every result that does breaks the declared schema"
                }
            };
            let message = format!(
                "the `enum` value {} in {} is rejected by the rest of its schema ({why}): {consequence}",
                shown(&values[i]),
                self.place(pointer)
            );
            let help = enum_help(map, &values[i], self.field == "returns");
            let diagnostic = unsatisfiable(message, span, "can never be accepted", help);
            self.diags.push(diagnostic);
        }
    }

    fn const_value(&mut self, map: &Map<String, Json>, value: &Json, pointer: &str) {
        if let Some(Json::Array(values)) = map.get("enum") {
            if !values.iter().any(|v| same_value(v, value)) {
                let diagnostic = unsatisfiable(
                        format!(
                            "the `const` {} in {} is not one of the `enum` values, so no value satisfies both",
                            shown(value),
                            self.place(pointer)
                        ),
                        self.span(pointer, "const"),
                        "not in `enum`",
                        "add it to `enum`, or keep only one of `const` and `enum`".into(),
                    )
                    .also(self.span(pointer, "enum"), "the allowed values");
                self.diags.push(diagnostic);
                return;
            }
        }
        if let Some(why) = self.rejects(map, &["const", "enum", "default", "examples"], value) {
            let diagnostic = unsatisfiable(
                format!(
                    "the `const` {} in {} is rejected by the rest of its schema ({why}), so no value satisfies it",
                    shown(value),
                    self.place(pointer)
                ),
                self.span(pointer, "const"),
                "can never be accepted",
                enum_help(map, value, self.field == "returns"),
            );
            self.diags.push(diagnostic);
        }
    }

    /// Why `schema` without the `skip` keywords rejects `value`, or `None` when it accepts it
    /// (or when it cannot be told: a `$ref` outside the definitions, a schema the validator
    /// cannot build; other passes report those).
    fn rejects(&self, schema: &Map<String, Json>, skip: &[&str], value: &Json) -> Option<String> {
        self.rejects_each(schema, skip, std::slice::from_ref(value))
            .pop()
            .flatten()
    }

    /// [`Pass::rejects`] for several values of one schema (an `enum`, `examples`): the validator,
    /// when one is needed, is built once for all of them, not once per value.
    fn rejects_each(
        &self,
        schema: &Map<String, Json>,
        skip: &[&str],
        values: &[Json],
    ) -> Vec<Option<String>> {
        let simple = schema.keys().all(|k| {
            skip.contains(&k.as_str())
                || SCALAR_KEYWORDS.contains(&k.as_str())
                || IGNORED_FOR_SCALARS.contains(&k.as_str())
                || k.starts_with("x-")
        });
        let mut validator: Option<Option<jsonschema::Validator>> = None;
        values
            .iter()
            .map(|value| {
                if simple && !matches!(value, Json::Array(_) | Json::Object(_)) {
                    return scalar_rejects(schema, skip, value);
                }
                let validator = validator.get_or_insert_with(|| self.validator(schema, skip));
                let error = validator.as_ref()?.iter_errors(value).next()?;
                Some(error.to_string())
            })
            .collect()
    }

    /// The validator of `schema` without the `skip` keywords, with the root's definitions.
    fn validator(
        &self,
        schema: &Map<String, Json>,
        skip: &[&str],
    ) -> Option<jsonschema::Validator> {
        let mut reduced: Map<String, Json> = schema
            .iter()
            .filter(|(k, _)| !skip.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let reduced = {
            let resolvable = refs_resolve_in_definitions_map(&reduced, self.root);
            if !resolvable {
                return None;
            }
            // The definitions come along, so that `#/$defs/...` resolves as in the root.
            for key in ["$defs", "definitions"] {
                if let Some(defs) = self.root.get(key) {
                    reduced.entry(key).or_insert_with(|| defs.clone());
                }
            }
            Json::Object(reduced)
        };
        jsonschema::draft202012::options()
            .should_validate_formats(false)
            .build(&reduced)
            .ok()
    }
}

fn unsatisfiable(message: String, span: Span, label: &str, help: String) -> Diagnostic {
    Diagnostic::error(crate::codes::UNSATISFIABLE_SCHEMA, message)
        .at(span, label.to_owned())
        .help(help)
}

fn push(pointer: &mut String, segment: &str) {
    pointer.push('/');
    pointer.push_str(&escape_segment(segment));
}

fn refs_resolve_in_definitions_map(schema: &Map<String, Json>, root: &Json) -> bool {
    schema.iter().all(|(k, v)| ref_entry_resolves(k, v, root))
}

/// Whether every `$ref` in `schema` names a definition of `root` (so that a copy of `schema`
/// with `root`'s definitions resolves them the same way).
fn refs_resolve_in_definitions(schema: &Json, root: &Json) -> bool {
    match schema {
        Json::Object(map) => refs_resolve_in_definitions_map(map, root),
        Json::Array(items) => items.iter().all(|v| refs_resolve_in_definitions(v, root)),
        _ => true,
    }
}

fn ref_entry_resolves(key: &str, value: &Json, root: &Json) -> bool {
    match (key, value) {
        ("$ref", Json::String(r)) => {
            (r.starts_with("#/$defs/") || r.starts_with("#/definitions/"))
                && resolve_ref(root, r).is_some()
        }
        ("$ref" | "$dynamicRef", _) => false,
        ("enum" | "const" | "default" | "examples", _) => true,
        _ => refs_resolve_in_definitions(value, root),
    }
}

/// [`Pass::rejects`] for a scalar against the keywords in [`SCALAR_KEYWORDS`].
fn scalar_rejects(schema: &Map<String, Json>, skip: &[&str], value: &Json) -> Option<String> {
    let get = |k: &str| (!skip.contains(&k)).then(|| schema.get(k)).flatten();
    if let Some(types) = get("type") {
        let allowed: Vec<&str> = match types {
            Json::String(t) => vec![t.as_str()],
            Json::Array(ts) => ts.iter().filter_map(Json::as_str).collect(),
            _ => Vec::new(),
        };
        if !allowed.is_empty() && !allowed.iter().any(|t| has_type(value, t)) {
            return Some(format!(
                "{} is {}, not {}",
                shown(value),
                type_of(value),
                allowed.join(" or ")
            ));
        }
    }
    if let Some(Json::Array(values)) = get("enum") {
        if !values.iter().any(|v| same_value(v, value)) {
            return Some(format!("{} is not one of the `enum` values", shown(value)));
        }
    }
    if let Some(c) = get("const") {
        if !same_value(c, value) {
            return Some(format!("{} is not the `const` {}", shown(value), shown(c)));
        }
    }
    if let Some(x) = value.as_f64() {
        let bound = |k: &str| get(k).and_then(Json::as_f64);
        let checks: [(&str, Empty, &str); 4] = [
            ("minimum", |x, b| x < b, "less than"),
            ("maximum", |x, b| x > b, "greater than"),
            ("exclusiveMinimum", |x, b| x <= b, "not greater than"),
            ("exclusiveMaximum", |x, b| x >= b, "not less than"),
        ];
        for (keyword, fails, relation) in checks {
            if let Some(b) = bound(keyword) {
                if fails(x, b) {
                    return Some(format!(
                        "{} is {relation} `{keyword}` {}",
                        number(x),
                        number(b)
                    ));
                }
            }
        }
        if let Some(m) = bound("multipleOf") {
            if m > 0.0 && !is_multiple(x, m) {
                return Some(format!("{} is not a multiple of {}", number(x), number(m)));
            }
        }
    }
    if let Some(s) = value.as_str() {
        let chars = s.chars().count() as f64;
        if let Some(min) = get("minLength").and_then(Json::as_f64) {
            if chars < min {
                return Some(format!(
                    "{} has fewer than {} characters",
                    shown(value),
                    number(min)
                ));
            }
        }
        if let Some(max) = get("maxLength").and_then(Json::as_f64) {
            if chars > max {
                return Some(format!(
                    "{} has more than {} characters",
                    shown(value),
                    number(max)
                ));
            }
        }
    }
    None
}

fn is_multiple(x: f64, m: f64) -> bool {
    let q = x / m;
    (q - q.round()).abs() < 1e-9
}

fn has_type(value: &Json, t: &str) -> bool {
    match t {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => match value {
            Json::Number(n) => {
                n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            _ => false,
        },
        "array" => value.is_array(),
        "object" => value.is_object(),
        _ => true,
    }
}

fn type_of(value: &Json) -> &'static str {
    match value {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
    }
}

/// JSON equality, where `1` and `1.0` are the same number (as JSON Schema has it).
fn same_value(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_value(a, b))
        }
        (Json::Object(x), Json::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_value(v, w)))
        }
        _ => a == b,
    }
}

fn shown(value: &Json) -> String {
    let text = value.to_string();
    if text.chars().count() > 60 {
        let cut: String = text.chars().take(57).collect();
        format!("`{cut}...`")
    } else {
        format!("`{text}`")
    }
}

fn number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

/// Strings that YAML 1.1 read as booleans and YAML 1.2 (and toolc) reads as strings.
fn yaml11_boolean(value: &Json) -> Option<bool> {
    match value.as_str()? {
        "yes" | "Yes" | "YES" | "y" | "Y" | "on" | "On" | "ON" | "True" | "TRUE" => Some(true),
        "no" | "No" | "NO" | "n" | "N" | "off" | "Off" | "OFF" | "False" | "FALSE" => Some(false),
        _ => None,
    }
}

fn declared_types(schema: &Map<String, Json>) -> Vec<&str> {
    match schema.get("type") {
        Some(Json::String(t)) => vec![t.as_str()],
        Some(Json::Array(ts)) => ts.iter().filter_map(Json::as_str).collect(),
        _ => Vec::new(),
    }
}

fn default_help(schema: &Map<String, Json>, value: &Json) -> String {
    let types = declared_types(schema);
    if types.contains(&"boolean") {
        if let Some(b) = yaml11_boolean(value) {
            return format!(
                "YAML 1.2 reads {} as a string; write `default: {b}`",
                shown(value)
            );
        }
    }
    if let (Some(s), true) = (
        value.as_str(),
        types.iter().any(|t| matches!(*t, "integer" | "number")),
    ) {
        if s.trim().parse::<f64>().is_ok() {
            return format!("write the number without quotes: `default: {}`", s.trim());
        }
    }
    "change the `default` to a value the schema accepts, or remove it".into()
}

fn enum_help(schema: &Map<String, Json>, value: &Json, in_returns: bool) -> String {
    let types = declared_types(schema);
    if types.contains(&"boolean") && value.is_string() {
        let sender = if in_returns {
            "the executor returns"
        } else {
            "the model should send"
        };
        return format!("a boolean has only `true` and `false`: drop `enum`, or make the type `string` if these words are what {sender}");
    }
    if types.contains(&"array") && !value.is_array() {
        return "`enum` on an array lists whole arrays; to limit the items, move `enum` into `items`".into();
    }
    if value.is_string() && types.iter().any(|t| matches!(*t, "integer" | "number")) {
        return "write numbers without quotes, or make the type `string`".into();
    }
    "make each value one the rest of the schema accepts, or change the `type`".into()
}
