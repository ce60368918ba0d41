//! Gemini `functionDeclarations`: `parameters` is a `Schema`, a subset of OpenAPI 3.0.
//!
//! `Schema` knows `type` (upper case: `STRING`, `NUMBER`, `INTEGER`, `BOOLEAN`, `ARRAY`,
//! `OBJECT`), `format`, `title`, `description`, `nullable`, `enum` (strings only), `properties`,
//! `required`, `items`, `anyOf`, `minItems`/`maxItems`, `minLength`/`maxLength`, `pattern`,
//! `minProperties`/`maxProperties`, `minimum`/`maximum`, `default`, `example`,
//! `propertyOrdering`; no `$ref`, no `const`, no type lists, and an `OBJECT` needs at least one
//! property ("should be non-empty for OBJECT type").
//!
//! Lowering: `$ref` is inlined (a recursive one is unrolled [`UNROLL`] levels, then left out);
//! `allOf` is merged; `oneOf` becomes `anyOf`; `type: [T, "null"]` and `null` alternatives become
//! `nullable: true`; a string `const` becomes a one-value `enum`; an integer `exclusiveMinimum`
//! becomes `minimum + 1`. Constraints Gemini cannot express (`multipleOf`, non-string enums, open
//! objects, ...) are said in the description instead and reported as warnings; annotations that
//! constrain nothing (`$comment`, `examples`, `readOnly`, ...) are dropped silently. A tool without
//! parameters is declared without `parameters`. A `returns` schema is lowered the same way into
//! `response` (the function's output), except that it may be any type at its root.

use serde_json::{json, Map, Value};

use super::text;
use super::{codes, describe_pointer, object_root, parameters_span, returns_keyword_span};
use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::ir::IrTool;
use toolc_core::strict::{escape_pointer, resolve_ref};

/// How many times one `$ref` may be inlined inside itself before deeper levels are left out.
pub const UNROLL: usize = 2;

/// How deep an inlined schema may nest. A chain of definitions that each hold the next would
/// otherwise nest as deep as the manifest is long (and exhaust the stack); a real one nests a
/// handful of levels.
/// A schema being lowered: the Gemini keywords so far, whether `null` is allowed, and the rules
/// to state in the description because Gemini's subset cannot.
struct Lowered {
    out: Map<String, Value>,
    nullable: bool,
    notes: Vec<String>,
}

const MAX_DEPTH: usize = 64;

/// How many schemas one lowered field may hold once its `$ref`s are inlined. Inlining copies a
/// definition into every place that uses it, so definitions that each use the next twice double
/// at every level: twenty of them make a million copies. A real tool's lowered parameters hold a
/// few hundred.
pub const MAX_INLINED: usize = 10_000;

/// Keywords Gemini's `Schema` takes with the same meaning as JSON Schema.
const KEPT: &[&str] = &[
    "description",
    "title",
    "format",
    "pattern",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "minimum",
    "maximum",
    "default",
];

/// Annotations that constrain no value: dropping them loses nothing the model needs.
const SILENT: &[&str] = &[
    "$schema",
    "$id",
    "$comment",
    "$anchor",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "contentMediaType",
    "contentEncoding",
];

/// Writes the declaration at `depth`. Gemini's schema is its own dialect, so nothing is shared
/// with the other files.
pub(super) fn write(out: &mut Vec<u8>, depth: usize, tool: &IrTool, diags: &mut Diagnostics) {
    let declaration = declaration(tool, diags);
    text::write(
        out,
        &text::Json::Rendered(&text::render(&declaration)),
        depth,
    );
}

/// Writes the declaration with the schemas as written, in `parametersJsonSchema` and
/// `responseJsonSchema` (the fields current models take instead of `parameters`/`response`). A
/// tool without arguments is declared without `parametersJsonSchema`, as in the subset.
pub(super) fn write_json_schema(out: &mut Vec<u8>, depth: usize, tool: &IrTool) {
    let d = &tool.def;
    let mut declaration = named(tool);
    if let Some(schema) = toolc_core::schema_util::gemini_parameters_json_schema(&d.parameters) {
        declaration.insert("parametersJsonSchema".into(), schema.into_owned());
    }
    if let Some(returns) = &d.returns {
        declaration.insert("responseJsonSchema".into(), returns.clone());
    }
    text::write(
        out,
        &text::Json::Rendered(&text::render(&Value::Object(declaration))),
        depth,
    );
}

/// A declaration's `name` and `description` (what the model reads).
fn named(tool: &IrTool) -> Map<String, Value> {
    let mut declaration = Map::new();
    declaration.insert("name".into(), tool.def.name.clone().into());
    declaration.insert(
        "description".into(),
        tool.def.model_description().into_owned().into(),
    );
    declaration
}

/// The warnings of the declaration [`write`] writes.
pub(super) fn warnings(tool: &IrTool, diags: &mut Diagnostics) {
    declaration(tool, diags);
}

fn declaration(tool: &IrTool, diags: &mut Diagnostics) -> Value {
    let d = &tool.def;
    let schema = object_root(&d.parameters);
    let schema: &Value = &schema;
    let mut cx = Lowering::new(schema, Field::Parameters);
    let lowered = cx.lower_field(schema, "parameters");
    let over_budget = cx.over_budget();
    let mut out = named(tool);
    let declared = schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty());
    match lowered {
        Some(params) if has_properties(&params) => {
            out.insert("parameters".into(), Value::Object(params));
        }
        // Said by `lower_field`.
        _ if over_budget => {}
        // No arguments: Gemini rejects an OBJECT without properties, so `parameters` is omitted.
        _ if toolc_core::schema_util::gemini_parameters_json_schema(schema).is_none() => {}
        _ if !declared => cx.issue(Issue {
            code: codes::GEMINI_UNSUPPORTED,
            pointer: String::new(),
            keyword: "properties".into(),
            what: "is missing, so any arguments are accepted; Gemini declares only listed keys"
                .into(),
            fallback: "the tool is declared without parameters".into(),
        }),
        // Every property was left out; the issues that did it were reported.
        _ => {}
    }
    for issue in cx.issues {
        diags.push(issue.diagnostic(tool, Field::Parameters));
    }
    if let Some(returns) = &d.returns {
        let mut cx = Lowering::new(returns, Field::Returns);
        if let Some(response) = cx.lower_field(returns, "`response`") {
            out.insert("response".into(), Value::Object(response));
        }
        for issue in cx.issues {
            diags.push(issue.diagnostic(tool, Field::Returns));
        }
    }
    Value::Object(out)
}

/// Which schema of a tool is being lowered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    /// `parameters`: one OBJECT at the root.
    Parameters,
    /// `returns`, declared as `response`: any type.
    Returns,
}

fn has_properties(schema: &Map<String, Value>) -> bool {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty())
}

struct Issue {
    code: &'static str,
    pointer: String,
    keyword: String,
    what: String,
    fallback: String,
}

impl Issue {
    fn diagnostic(&self, tool: &IrTool, field: Field) -> Diagnostic {
        let (of, runtime, span) = match field {
            Field::Parameters => (
                "",
                "validates arguments",
                parameters_span(tool, &self.pointer, Some(&self.keyword)),
            ),
            Field::Returns => (
                " of `returns`",
                "checks results",
                returns_keyword_span(tool, &self.pointer, &self.keyword),
            ),
        };
        let mut d = Diagnostic::warning(
            self.code,
            format!(
                "tool `{}`: gemini.json cannot express `{}` at {}{of}: it {}",
                tool.def.name,
                self.keyword,
                describe_pointer(&self.pointer),
                self.what
            ),
        )
        .help(format!(
            "in gemini.json {}; the other provider files keep it, and the runtime still {runtime} against the manifest",
            self.fallback
        ));
        if let Some(span) = span {
            d = d.at(
                span,
                format!("`{}` is not expressible for Gemini", self.keyword),
            );
        }
        d
    }
}

struct Lowering<'a> {
    root: &'a Value,
    field: Field,
    /// The `$ref`s being inlined, outermost first.
    stack: Vec<String>,
    depth: usize,
    /// How many schemas [`Lowering::lower`] has been asked for (see [`MAX_INLINED`]).
    lowered: usize,
    issues: Vec<Issue>,
    /// (code, pointer, keyword) of each issue, which is reported once.
    reported: std::collections::HashSet<(&'static str, String, String)>,
}

impl<'a> Lowering<'a> {
    fn new(root: &'a Value, field: Field) -> Lowering<'a> {
        Lowering {
            root,
            field,
            stack: Vec::new(),
            depth: 0,
            lowered: 0,
            issues: Vec::new(),
            reported: std::collections::HashSet::new(),
        }
    }

    fn issue(&mut self, issue: Issue) {
        let key = (issue.code, issue.pointer.clone(), issue.keyword.clone());
        if self.reported.insert(key) {
            self.issues.push(issue);
        }
    }

    /// Whether inlining went past [`MAX_INLINED`]: what was lowered is then a fragment, and the
    /// whole field is left out instead.
    fn over_budget(&self) -> bool {
        self.lowered > MAX_INLINED
    }

    /// Lowers the whole field; `None` when it cannot be declared. Past [`MAX_INLINED`], the one
    /// issue said is that (what was said of the parts lowered before it is moot).
    fn lower_field(
        &mut self,
        schema: &'a Value,
        declared_without: &str,
    ) -> Option<Map<String, Value>> {
        let lowered = self.lower(schema, "");
        if !self.over_budget() {
            return lowered;
        }
        self.issues.clear();
        self.reported.clear();
        self.issue(Issue {
            code: codes::GEMINI_UNSUPPORTED,
            pointer: String::new(),
            keyword: "$ref".into(),
            what: format!("uses its definitions in so many places that inlining them, as Gemini has no references, makes more than {MAX_INLINED} schemas"),
            fallback: format!("the tool is declared without {declared_without}; `--gemini-schema json-schema` declares the schema with its `$ref`s"),
        });
        None
    }

    fn unsupported(
        &mut self,
        pointer: &str,
        keyword: &str,
        what: impl Into<String>,
        fallback: impl Into<String>,
    ) {
        self.issue(Issue {
            code: codes::GEMINI_UNSUPPORTED,
            pointer: pointer.to_owned(),
            keyword: keyword.to_owned(),
            what: what.into(),
            fallback: fallback.into(),
        });
    }

    /// The Gemini schema for `schema`, or `None` when it cannot be declared at all (its parent
    /// then leaves it out).
    fn lower(&mut self, schema: &'a Value, pointer: &str) -> Option<Map<String, Value>> {
        self.lowered += 1;
        if self.over_budget() {
            return None;
        }
        if self.depth >= MAX_DEPTH {
            self.unsupported(
                pointer,
                "$ref",
                format!("nests more than {MAX_DEPTH} levels deep once its `$ref`s are inlined"),
                "it is left out",
            );
            return None;
        }
        self.depth += 1;
        let out = self.lower_inner(schema, pointer);
        self.depth -= 1;
        out
    }

    fn lower_inner(&mut self, schema: &'a Value, pointer: &str) -> Option<Map<String, Value>> {
        let map = match self.schema_object(schema, pointer) {
            Ok(map) => map,
            Err(instead) => return instead,
        };
        let mut l = Lowered {
            out: self.lower_base(map, pointer)?,
            nullable: false,
            notes: Vec::new(),
        };
        for (key, value) in map {
            // Only the keywords that hold schemas go below this one.
            let here = || format!("{pointer}/{}", escape_pointer(key));
            match key.as_str() {
                "$ref" | "allOf" | "$defs" | "definitions" | "required" => {}
                "type" => {
                    let (types, has_null) = split_types(value);
                    l.nullable |= has_null;
                    match types.as_slice() {
                        [] => {}
                        [one] => {
                            l.out.insert("type".into(), gemini_type(one).into());
                        }
                        many => {
                            let branches = many
                                .iter()
                                .map(|t| json!({ "type": gemini_type(t) }))
                                .collect();
                            l.out.insert("anyOf".into(), Value::Array(branches));
                        }
                    }
                }
                "enum" => {
                    let values = value.as_array().map(Vec::as_slice).unwrap_or_default();
                    self.lower_enum(map, pointer, key, values, &mut l);
                }
                "const" => {
                    let values = std::slice::from_ref(value);
                    self.lower_enum(map, pointer, key, values, &mut l);
                }
                "properties" => self.lower_properties(value, &here(), &mut l),
                "items" => {
                    if value.is_object() || value.is_boolean() {
                        let lowered = self.lower(value, &here())?;
                        l.out.insert("items".into(), Value::Object(lowered));
                    }
                }
                "anyOf" | "oneOf" if self.depth == 1 && self.field == Field::Parameters => {
                    self.lower_root_alternatives(pointer, key, value, &here(), &mut l)
                }
                "anyOf" | "oneOf" => {
                    self.lower_alternatives(pointer, key, value, &here(), &mut l)?
                }
                "additionalProperties"
                | "exclusiveMinimum"
                | "exclusiveMaximum"
                | "multipleOf"
                | "uniqueItems" => self.state_rule(map, pointer, key, value, &mut l),
                k if KEPT.contains(&k) => {
                    l.out.insert(key.clone(), value.clone());
                }
                k if SILENT.contains(&k) => {}
                _ => self.unsupported(
                    pointer,
                    key,
                    "is not in Gemini's schema subset",
                    "it is dropped",
                ),
            }
        }

        self.finish(map, pointer, l)
    }

    /// A rule Gemini's subset cannot say: stated in the description instead (an integer's
    /// exclusive bound becomes an inclusive one), with a warning.
    fn state_rule(
        &mut self,
        map: &Map<String, Value>,
        pointer: &str,
        key: &str,
        value: &Value,
        l: &mut Lowered,
    ) {
        match key {
            "additionalProperties" if value != &Value::Bool(false) => {
                l.notes
                    .push("It may also have keys not listed here.".into());
                self.unsupported(
                    pointer,
                    key,
                    "leaves the object open, and Gemini declares only listed keys",
                    "the model sees only the listed keys; the description says there may be others",
                );
            }
            "exclusiveMinimum" | "exclusiveMaximum" => {
                let minimum = key == "exclusiveMinimum";
                let integer = split_types(map.get("type").unwrap_or(&Value::Null)).0 == ["integer"];
                match value.as_i64() {
                    Some(n) if integer => {
                        let (bound, limit) = if minimum {
                            ("minimum", n.saturating_add(1))
                        } else {
                            ("maximum", n.saturating_sub(1))
                        };
                        l.out.insert(bound.into(), limit.into());
                    }
                    _ => {
                        let word = if minimum { "greater" } else { "less" };
                        l.notes
                            .push(format!("Must be {word} than {}.", text(value)));
                        self.unsupported(
                            pointer,
                            key,
                            "is not in Gemini's schema subset",
                            "the bound is stated in the description",
                        );
                    }
                }
            }
            "multipleOf" => {
                l.notes
                    .push(format!("Must be a multiple of {}.", text(value)));
                self.unsupported(
                    pointer,
                    key,
                    "is not in Gemini's schema subset",
                    "the rule is stated in the description",
                );
            }
            "uniqueItems" if value == &Value::Bool(true) => {
                l.notes.push("The items must be unique.".into());
                self.unsupported(
                    pointer,
                    key,
                    "is not in Gemini's schema subset",
                    "the rule is stated in the description",
                );
            }
            _ => {}
        }
    }

    /// A schema's keywords, or what a boolean schema becomes instead (`Err`): `true` (any
    /// value) is declared as a string, or makes a result undeclarable; `false` is left out.
    #[allow(clippy::result_large_err)]
    fn schema_object(
        &mut self,
        schema: &'a Value,
        pointer: &str,
    ) -> Result<&'a Map<String, Value>, Option<Map<String, Value>>> {
        match schema {
            Value::Object(map) => Ok(map),
            Value::Bool(true) if self.field == Field::Returns && self.depth == 1 => {
                self.unsupported(
                    pointer,
                    "true",
                    "accepts any value, and Gemini needs a type",
                    "the tool is declared without `response`",
                );
                Err(None)
            }
            Value::Bool(true) => {
                self.unsupported(
                    pointer,
                    "true",
                    "accepts any value, and Gemini needs a type",
                    "it is declared as a string",
                );
                Err(Some(string_schema()))
            }
            _ => {
                self.unsupported(pointer, "false", "accepts no value", "it is left out");
                Err(None)
            }
        }
    }

    /// What the schema starts from: its `$ref`'s target (the keywords beside the `$ref`
    /// override it) and its `allOf` members, merged. `None` when one cannot be declared.
    fn lower_base(
        &mut self,
        map: &'a Map<String, Value>,
        pointer: &str,
    ) -> Option<Map<String, Value>> {
        let mut out = Map::new();
        // The target's keywords first; the keywords beside `$ref` override them.
        if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
            if let Some(target) = resolve_ref(self.root, reference) {
                if self.stack.iter().filter(|s| *s == reference).count() >= UNROLL {
                    self.issue(Issue {
                        code: codes::GEMINI_RECURSIVE_REF,
                        pointer: pointer.to_owned(),
                        keyword: "$ref".into(),
                        what: format!("refers to `{reference}` inside itself; Gemini has no references, and a recursive one cannot be inlined"),
                        fallback: format!("the structure is inlined {UNROLL} levels deep and deeper levels are left out"),
                    });
                    return None;
                }
                self.stack.push(reference.to_owned());
                let target_pointer = reference.trim_start_matches('#').to_owned();
                let lowered = self.lower(target, &target_pointer);
                self.stack.pop();
                out = lowered?;
            }
        }
        if let Some(Value::Array(members)) = map.get("allOf") {
            for (i, member) in members.iter().enumerate() {
                let lowered = self.lower(member, &format!("{pointer}/allOf/{i}"))?;
                merge(&mut out, lowered);
            }
        }

        Some(out)
    }

    /// `properties`: each declarable one, lowered (one that cannot be is left out).
    fn lower_properties(&mut self, value: &'a Value, here: &str, l: &mut Lowered) {
        let Some(props) = value.as_object() else {
            return;
        };
        let mut lowered = match l.out.shift_remove("properties") {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        for (name, sub) in props {
            let sub_pointer = format!("{here}/{}", escape_pointer(name));
            match self.lower(sub, &sub_pointer) {
                Some(m) => {
                    lowered.insert(name.clone(), Value::Object(m));
                }
                None => {
                    lowered.shift_remove(name);
                }
            }
        }
        l.out.insert("properties".into(), Value::Object(lowered));
    }

    /// `anyOf` / `oneOf` at the root of `parameters`, which Gemini needs as one object: the
    /// alternatives' properties become optional properties of the root, as for Anthropic.
    fn lower_root_alternatives(
        &mut self,
        pointer: &str,
        key: &str,
        value: &'a Value,
        here: &str,
        l: &mut Lowered,
    ) {
        // `parameters` must be one OBJECT: the alternatives' properties become
        // optional properties of the root, as for Anthropic.
        let branches = value.as_array().map(Vec::as_slice).unwrap_or_default();
        for (i, branch) in branches.iter().enumerate() {
            if constraint_only(branch, self.root) {
                continue;
            }
            let Some(Value::Object(props)) = self
                .lower(branch, &format!("{here}/{i}"))
                .and_then(|mut m| m.shift_remove("properties"))
            else {
                continue;
            };
            let entry = l
                .out
                .entry("properties")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(mine) = entry {
                for (name, sub) in props {
                    mine.entry(name).or_insert(sub);
                }
            }
        }
        self.unsupported(pointer, key, "is at the root, and Gemini's `parameters` must be a single object", "the alternatives' properties are declared as optional properties and the rule that one alternative must match is dropped");
    }

    /// `anyOf` / `oneOf` below the root: the declarable alternatives (a `null` one makes the
    /// schema nullable); `None` when none is, so the schema cannot be declared.
    fn lower_alternatives(
        &mut self,
        pointer: &str,
        key: &str,
        value: &'a Value,
        here: &str,
        l: &mut Lowered,
    ) -> Option<()> {
        let Some(branches) = value.as_array() else {
            return Some(());
        };
        if branches.iter().all(|b| constraint_only(b, self.root)) {
            self.unsupported(
                pointer,
                key,
                "only requires different properties in each alternative, which Gemini cannot say",
                "the rule is dropped",
            );
            return Some(());
        }
        let mut lowered = Vec::new();
        for (i, branch) in branches.iter().enumerate() {
            if is_null_only(branch, self.root) {
                l.nullable = true;
                continue;
            }
            if let Some(m) = self.lower(branch, &format!("{here}/{i}")) {
                lowered.push(m);
            }
        }
        match lowered.len() {
            0 if l.nullable => {}
            0 => return None,
            1 => {
                if let Some(only) = lowered.pop() {
                    merge(&mut l.out, only);
                }
            }
            _ => {
                l.out.insert(
                    "anyOf".into(),
                    Value::Array(lowered.into_iter().map(Value::Object).collect()),
                );
            }
        }
        Some(())
    }

    /// The lowered keywords made a Gemini schema: `required` kept to the declared properties,
    /// a missing `type` inferred, `nullable`, an object without keys left out, and the rules
    /// Gemini cannot say appended to the description.
    fn finish(
        &mut self,
        map: &Map<String, Value>,
        pointer: &str,
        l: Lowered,
    ) -> Option<Map<String, Value>> {
        let Lowered {
            mut out,
            nullable,
            notes,
        } = l;
        if let Some(required) = map.get("required").and_then(Value::as_array) {
            let mut names = match out.shift_remove("required") {
                Some(Value::Array(names)) => names,
                _ => Vec::new(),
            };
            let declared = out.get("properties").and_then(Value::as_object);
            let mut listed: foldhash::HashSet<String> = names
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect();
            for name in required {
                let Some(n) = name.as_str() else {
                    continue;
                };
                if declared.is_some_and(|p| p.contains_key(n)) && listed.insert(n.to_owned()) {
                    names.push(name.clone());
                }
            }
            if !names.is_empty() {
                out.insert("required".into(), Value::Array(names));
            }
        }
        if !out.contains_key("type") && !out.contains_key("anyOf") {
            let inferred = if out.contains_key("properties") {
                Some("OBJECT")
            } else if out.contains_key("items") {
                Some("ARRAY")
            } else if out.contains_key("enum") {
                Some("STRING")
            } else {
                None
            };
            match inferred {
                Some(t) => {
                    out.insert("type".into(), t.into());
                }
                // A result of any shape: better no `response` than a wrong one.
                None if self.field == Field::Returns && self.depth == 1 => {
                    self.unsupported(
                        pointer,
                        "type",
                        "is missing, so any value is accepted, and Gemini needs a type",
                        "the tool is declared without `response`",
                    );
                    return None;
                }
                None => {
                    self.unsupported(
                        pointer,
                        "type",
                        "is missing, so any value is accepted, and Gemini needs a type",
                        "it is declared as a string",
                    );
                    out.insert("type".into(), "STRING".into());
                }
            }
        }
        if nullable {
            out.insert("nullable".into(), true.into());
        }
        if out.get("type").and_then(Value::as_str) == Some("OBJECT")
            && !has_properties(&out)
            && (self.depth > 1 || self.field == Field::Returns)
        {
            // One warning per object: a dropped `patternProperties` already explains it.
            if self.issues.iter().any(|i| i.pointer == pointer) {
                return None;
            }
            self.unsupported(
                pointer,
                "properties",
                "is an object without listed keys, which Gemini cannot declare",
                "it is left out",
            );
            return None;
        }
        if !notes.is_empty() {
            let description = match out.get("description").and_then(Value::as_str) {
                Some(d) if !d.trim().is_empty() => format!("{} {}", d.trim_end(), notes.join(" ")),
                _ => notes.join(" "),
            };
            out.insert("description".into(), description.into());
        }
        Some(out)
    }

    fn lower_enum(
        &mut self,
        map: &Map<String, Value>,
        pointer: &str,
        keyword: &str,
        values: &[Value],
        l: &mut Lowered,
    ) {
        let Lowered {
            out,
            nullable,
            notes,
        } = l;
        let non_null: Vec<&Value> = values.iter().filter(|v| !v.is_null()).collect();
        if non_null.len() < values.len() {
            *nullable = true;
        }
        if non_null.is_empty() {
            return;
        }
        if non_null.iter().all(|v| v.is_string()) {
            out.insert(
                "enum".into(),
                Value::Array(non_null.into_iter().cloned().collect()),
            );
            out.entry("type").or_insert_with(|| "STRING".into());
            return;
        }
        let list: Vec<String> = non_null.iter().map(|v| v.to_string()).collect();
        let list = list.join(", ");
        notes.push(if non_null.len() == 1 {
            format!("Must be {list}.")
        } else {
            format!("Allowed values: {list}.")
        });
        if !map.contains_key("type") {
            let inferred = if non_null.iter().all(|v| v.is_i64() || v.is_u64()) {
                Some("INTEGER")
            } else if non_null.iter().all(|v| v.is_number()) {
                Some("NUMBER")
            } else if non_null.iter().all(|v| v.is_boolean()) {
                Some("BOOLEAN")
            } else {
                None
            };
            if let Some(t) = inferred {
                out.insert("type".into(), t.into());
            }
        }
        self.issue(Issue {
            code: codes::GEMINI_ENUM,
            pointer: pointer.to_owned(),
            keyword: keyword.to_owned(),
            what: format!("has non-string values ({list}), and Gemini takes only string enums"),
            fallback:
                "the allowed values are listed in the description instead and the type is kept"
                    .into(),
        });
    }
}

/// Adds `other`'s keywords to `out` without overriding any: `properties` and `required` are
/// united, for the other keywords the first one wins.
fn merge(out: &mut Map<String, Value>, other: Map<String, Value>) {
    for (key, value) in other {
        match (key.as_str(), out.get_mut(&key), value) {
            ("properties", Some(Value::Object(mine)), Value::Object(theirs)) => {
                for (name, sub) in theirs {
                    mine.entry(name).or_insert(sub);
                }
            }
            ("required", Some(Value::Array(mine)), Value::Array(theirs)) => {
                for name in theirs {
                    if !mine.contains(&name) {
                        mine.push(name);
                    }
                }
            }
            (_, Some(_), _) => {}
            (_, None, value) => {
                out.insert(key, value);
            }
        }
    }
}

fn split_types(value: &Value) -> (Vec<&str>, bool) {
    let all: Vec<&str> = match value {
        Value::String(s) => vec![s.as_str()],
        Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let has_null = all.contains(&"null");
    (all.into_iter().filter(|t| *t != "null").collect(), has_null)
}

fn gemini_type(t: &str) -> String {
    t.to_ascii_uppercase()
}

fn string_schema() -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("type".into(), "STRING".into());
    m
}

fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// An alternative that only adds assertions about its parent object (`{required: [a]}`), with
/// no type or properties of its own.
fn constraint_only(schema: &Value, root: &Value) -> bool {
    let schema = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| resolve_ref(root, r))
        .unwrap_or(schema);
    schema.as_object().is_some_and(|m| {
        !m.is_empty()
            && m.keys().all(|k| {
                matches!(
                    k.as_str(),
                    "required"
                        | "minProperties"
                        | "maxProperties"
                        | "description"
                        | "title"
                        | "not"
                )
            })
    })
}

/// A schema that accepts only `null` (`{type: null}`, `{const: null}`, `{enum: [null]}`).
fn is_null_only(schema: &Value, root: &Value) -> bool {
    let schema = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| resolve_ref(root, r))
        .unwrap_or(schema);
    let Some(map) = schema.as_object() else {
        return false;
    };
    map.get("type").and_then(Value::as_str) == Some("null")
        || map.get("const").is_some_and(Value::is_null)
        || map
            .get("enum")
            .and_then(Value::as_array)
            .is_some_and(|v| !v.is_empty() && v.iter().all(Value::is_null))
}

#[cfg(test)]
mod tests;
