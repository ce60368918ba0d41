//! Checks of the JSON Schemas inside a manifest (`parameters`, `returns`).
//!
//! Our own walk runs first and catches the mistakes people make, with a precise span and a
//! suggestion (`strng` → `string`, `proprties` → `properties`, a `required` name that is not
//! declared, a `$ref` that leads nowhere). The official 2020-12 meta-schema then catches the rest;
//! its errors are reported only where our walk found nothing, so one mistake gives one message.

use serde_json::Value as Json;

use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::schema_util::{
    escape_segment, has_refs, local_pointer, resolve_ref, written_out, SUBSCHEMA, SUBSCHEMA_LIST,
    SUBSCHEMA_MAP,
};
use crate::source::{SourceMap, Span};
use crate::suggest::{closest, did_you_mean};
use crate::yaml::{Node, Value};

/// The names JSON Schema's `type` takes.
pub const TYPES: &[&str] = &[
    "string", "number", "integer", "boolean", "object", "array", "null",
];

/// Every keyword of the 2020-12 vocabularies (core, applicator, validation, unevaluated,
/// format-annotation, content, meta-data), plus `definitions` from older drafts.
pub const KEYWORDS: &[&str] = &[
    "$schema",
    "$id",
    "$ref",
    "$anchor",
    "$dynamicRef",
    "$dynamicAnchor",
    "$vocabulary",
    "$comment",
    "$defs",
    "definitions",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "dependentSchemas",
    "prefixItems",
    "items",
    "contains",
    "properties",
    "patternProperties",
    "additionalProperties",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "type",
    "enum",
    "const",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "maxContains",
    "minContains",
    "maxProperties",
    "minProperties",
    "required",
    "dependentRequired",
    "format",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
    "title",
    "description",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
    "examples",
];

/// Checks one schema and returns its JSON value. `object_root` demands `type: object` at the root.
pub fn check_schema(
    _sources: &SourceMap,
    node: &Node,
    what: &str,
    field: &str,
    object_root: bool,
    diags: &mut Diagnostics,
) -> Json {
    let json = node.to_json();
    let mut walker = Walker {
        root: &json,
        what,
        field,
        reported: Vec::new(),
        diags,
    };
    if object_root {
        walker.check_object_root(node);
    }
    walker.walk(node, "");
    if walker.reported.is_empty() && has_refs(&json) {
        walker.check_ref_cycles(node);
        if walker.reported.is_empty() {
            walker.check_written_out_size(node);
        }
    }
    let reported = std::mem::take(&mut walker.reported);

    // Only well-formed schemas reach the meta-schema and the compiler, and then only the errors
    // at places our own walk said nothing about.
    let meta = jsonschema::draft202012::meta::validator();
    // Collecting errors costs several times a plain yes/no, and almost every schema is valid.
    let first_unreported = if meta.is_valid(&json) {
        None
    } else {
        meta.iter_errors(&json).find_map(|error| {
            let path = error.instance_path().as_str().to_owned();
            let echoed = reported
                .iter()
                .any(|r| path.starts_with(r.as_str()) || r.starts_with(&path));
            (!echoed).then(|| (path, error.to_string()))
        })
    };
    let first_unreported_is_none = first_unreported.is_none();
    if let Some((path, error)) = first_unreported {
        let (span, keyword) = span_at(node, &path);
        diags.push(
            Diagnostic::error(
                crate::codes::INVALID_SCHEMA,
                format!("`{field}` of {what} is not valid JSON Schema 2020-12: {error}"),
            )
            .at(span, format!("invalid `{keyword}`"))
            .help(keyword_help(&keyword)),
        );
        return json;
    }
    let mut compiles = true;
    if reported.is_empty() && must_compile(&json) {
        if let Err(error) = jsonschema::draft202012::options()
            .should_validate_formats(false)
            .build(&json)
        {
            compiles = false;
            let path = error.schema_path().as_str().to_owned();
            let (span, keyword) = span_at(node, &path);
            diags.push(
                Diagnostic::error(
                    crate::codes::INVALID_SCHEMA,
                    format!("`{field}` of {what} cannot be compiled: {error}"),
                )
                .at(span, format!("problem in `{keyword}`"))
                .help(keyword_help(&keyword)),
            );
        }
    }
    // Meaning is checked in a schema the validator can build. After a reported mistake only
    // where there are no `$ref`s: their cycles are checked only in otherwise clean schemas,
    // and a validator must not follow one.
    let refs_checked = reported.is_empty() || !has_refs(&json);
    if refs_checked && compiles && first_unreported_is_none {
        crate::schema_semantics::check(node, &json, what, field, diags);
    }
    json
}

/// Whether the schema must be compiled whole to know that it compiles. A schema whose only risk
/// is its `pattern`s does not when each of them is one the engine already compiled: a pattern
/// compiles or not whatever schema it is in, and catalogs repeat theirs (ids, codes, emails)
/// across thousands of tools. A pattern the engine rejects sends the schema to the whole
/// compilation, which reports the error where it is.
fn must_compile(schema: &Json) -> bool {
    let mut patterns = Vec::new();
    may_fail_to_compile_beyond_patterns(schema, &mut patterns)
        || !patterns.into_iter().all(pattern_compiles)
}

/// Patterns the engine compiled in this process: a few hundred distinct ones in a large catalog,
/// and never more than the manifests read hold.
static COMPILED_PATTERNS: std::sync::LazyLock<std::sync::Mutex<foldhash::HashSet<String>>> =
    std::sync::LazyLock::new(Default::default);

fn pattern_compiles(pattern: &str) -> bool {
    if COMPILED_PATTERNS
        .lock()
        .is_ok_and(|known| known.contains(pattern))
    {
        return true;
    }
    let compiles = jsonschema::draft202012::options()
        .should_validate_formats(false)
        .build(&serde_json::json!({ "type": "string", "pattern": pattern }))
        .is_ok();
    if compiles {
        if let Ok(mut known) = COMPILED_PATTERNS.lock() {
            known.insert(pattern.to_owned());
        }
    }
    compiles
}

/// Whether compiling a schema that the meta-schema and our walk accept can still fail: a regular
/// expression the engine rejects, a number that is not an integer where the compiler may want
/// one, a reference or identifier the compiler resolves its own way. Only such schemas are
/// compiled, because compiling is the most expensive part of checking a manifest. The scan is
/// deliberately coarse (it also looks inside `enum` and `default` values): a false alarm costs
/// one compilation, a miss would lose a diagnostic.
///
/// A string `pattern` is collected into `patterns` instead of counting as a risk here.
fn may_fail_to_compile_beyond_patterns<'a>(value: &'a Json, patterns: &mut Vec<&'a str>) -> bool {
    match value {
        Json::Number(n) => !(n.is_u64() || n.is_i64()),
        Json::Array(items) => items
            .iter()
            .any(|item| may_fail_to_compile_beyond_patterns(item, patterns)),
        Json::Object(map) => map.iter().any(|(key, value)| {
            let risky = match (key.as_str(), value) {
                ("pattern", Json::String(pattern)) => {
                    patterns.push(pattern);
                    false
                }
                ("pattern" | "patternProperties", _) => true,
                ("$ref", _) => !value.as_str().is_some_and(is_plain_local_ref),
                ("$defs" | "$comment", _) => false,
                (other, _) => other.starts_with('$'),
            };
            risky || may_fail_to_compile_beyond_patterns(value, patterns)
        }),
        Json::Null | Json::Bool(_) | Json::String(_) => false,
    }
}

/// `#`, `#/$defs/Name` or `#/definitions/Name` with a plain name (no escapes to decode): the
/// references whose resolution our walk has already checked exactly as the compiler does it.
fn is_plain_local_ref(reference: &str) -> bool {
    if reference == "#" {
        return true;
    }
    let name = reference
        .strip_prefix("#/$defs/")
        .or_else(|| reference.strip_prefix("#/definitions/"));
    name.is_some_and(|name| {
        !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
    })
}

fn keyword_help(keyword: &str) -> String {
    match keyword {
        "pattern" => "`pattern` must be an ECMA-262 regular expression".into(),
        "required" => "`required` is a list of property names, e.g. `required: [query]`".into(),
        "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf" => {
            format!("`{keyword}` takes a number")
        }
        "minLength" | "maxLength" | "minItems" | "maxItems" | "minProperties" | "maxProperties" => {
            format!("`{keyword}` takes a non-negative integer")
        }
        _ => "see https://json-schema.org/draft/2020-12 for what this keyword takes".into(),
    }
}

/// The span of the node at a JSON pointer, and the last segment's name (the keyword).
fn span_at(node: &Node, pointer: &str) -> (Span, String) {
    let mut pointer = pointer.to_owned();
    loop {
        if let Some((key, value)) = node.pointer(&pointer) {
            let keyword = pointer.rsplit('/').next().unwrap_or("").to_owned();
            let keyword = if keyword.is_empty() {
                "schema".to_owned()
            } else {
                keyword
            };
            return (key.map_or(value.span, |_| value.span), keyword);
        }
        match pointer.rfind('/') {
            Some(i) => pointer.truncate(i),
            None => return (node.span, "schema".into()),
        }
    }
}

struct Walker<'a> {
    root: &'a Json,
    what: &'a str,
    field: &'a str,
    /// Pointers where an error was reported, to silence the meta-schema's echo of it.
    reported: Vec<String>,
    diags: &'a mut Diagnostics,
}

impl Walker<'_> {
    fn error(&mut self, pointer: String, diagnostic: Diagnostic) {
        self.reported.push(pointer);
        self.diags.push(diagnostic);
    }

    fn check_object_root(&mut self, node: &Node) {
        let found = match node.get("type") {
            Some((_, t)) => match t.as_str() {
                Some("object") => return,
                Some(other) if closest(other, ["object"]).is_some() => return, // reported as a typo by the walk
                Some(other) => format!("`type: {other}`"),
                None => "a `type` that is not `object`".into(),
            },
            None if node.as_map().is_some() => "no `type`".into(),
            None => node.kind().into(),
        };
        let span = node.get("type").map_or(node.span, |(_, v)| v.span);
        self.error(
            String::new(),
            Diagnostic::error(
                crate::codes::PARAMETERS_NOT_OBJECT,
                format!("the `{}` schema of {} must be an object schema, found {found}", self.field, self.what),
            )
            .at(span, "the root of `parameters` must be `type: object`")
            .help("every provider passes arguments as one JSON object: write `type: object` with the arguments under `properties`; omit `parameters` for a tool without arguments"),
        );
    }

    fn walk(&mut self, node: &Node, pointer: &str) {
        let entries = match &node.value {
            Value::Map(entries) => entries,
            Value::Bool(_) => return, // `true` / `false` are valid schemas
            _ => {
                self.error(
                    pointer.to_owned(),
                    Diagnostic::error(
                        crate::codes::INVALID_SCHEMA,
                        format!(
                            "`{}` of {} has a schema that is {}",
                            self.field,
                            self.what,
                            node.kind()
                        ),
                    )
                    .at(node.span, "expected a mapping (or `true` / `false`)")
                    .help("a schema is a mapping of keywords, e.g. `{ type: string }`"),
                );
                return;
            }
        };
        // One pointer buffer for the whole walk: most keywords need no pointer of their own, and
        // formatting one per keyword was a tenth of `toolc check`.
        let mut here = String::with_capacity(pointer.len() + 32);
        for (key, value) in entries {
            let Some(keyword) = key.as_str() else {
                continue;
            };
            here.clear();
            here.push_str(pointer);
            here.push('/');
            here.push_str(&escape_segment(keyword));
            match keyword {
                "type" => self.check_type(value, &here),
                "required" => self.check_required(node, value, &here),
                "$ref" => self.check_ref(value, &here),
                k if SUBSCHEMA.contains(&k) => self.walk(value, &here),
                k if SUBSCHEMA_MAP.contains(&k) => {
                    if let Some(map) = value.as_map() {
                        let mut sub_pointer = String::with_capacity(here.len() + 32);
                        for (name, sub) in map {
                            let name = name.as_str().unwrap_or_default();
                            sub_pointer.clear();
                            sub_pointer.push_str(&here);
                            sub_pointer.push('/');
                            sub_pointer.push_str(&escape_segment(name));
                            self.walk(sub, &sub_pointer);
                        }
                    }
                }
                k if SUBSCHEMA_LIST.contains(&k) => {
                    if let Some(items) = value.as_seq() {
                        for (i, sub) in items.iter().enumerate() {
                            self.walk(sub, &format!("{here}/{i}"));
                        }
                    }
                }
                k if KEYWORDS.contains(&k) || k.starts_with("x-") => {}
                k => {
                    if let Some(suggestion) = closest(k, KEYWORDS.iter().copied()) {
                        self.error(
                            here.clone(),
                            Diagnostic::error(
                                crate::codes::UNKNOWN_KEYWORD,
                                format!("unknown JSON Schema keyword `{k}` in `{}` of {}", self.field, self.what),
                            )
                            .at(key.span, format!("did you mean `{suggestion}`?"))
                            .help(format!("write `{suggestion}`; an unknown keyword is silently ignored by validators, so this constraint would not apply")),
                        );
                    } else {
                        self.diags.push(
                            Diagnostic::warning(
                                crate::codes::UNKNOWN_KEYWORD,
                                format!("unknown JSON Schema keyword `{k}` in `{}` of {}", self.field, self.what),
                            )
                            .at(key.span, "not a JSON Schema 2020-12 keyword; it is kept as an annotation")
                            .help("if this is your own annotation, name it `x-...` to silence this warning"),
                        );
                    }
                }
            }
        }
    }

    fn check_type(&mut self, value: &Node, pointer: &str) {
        let items: Vec<&Node> = match &value.value {
            Value::String(_) => vec![value],
            Value::Seq(items) => items.iter().collect(),
            _ => {
                self.error(
                    pointer.to_owned(),
                    Diagnostic::error(
                        crate::codes::INVALID_SCHEMA,
                        format!(
                            "`type` must be a type name or a list of them, found {}",
                            value.kind()
                        ),
                    )
                    .at(value.span, "expected e.g. `string` or `[string, \"null\"]`")
                    .help(format!("the types are {}", TYPES.join(", "))),
                );
                return;
            }
        };
        for item in items {
            let name = item.as_str().unwrap_or("");
            if TYPES.contains(&name) {
                continue;
            }
            let shown = item
                .as_str()
                .map_or_else(|| item.kind().to_owned(), |s| format!("`{s}`"));
            let suggestion = did_you_mean(name, TYPES.iter().copied());
            let help = if name == "float" || name == "double" {
                "JSON Schema calls it `number`".to_owned()
            } else if name == "int" {
                "JSON Schema calls it `integer`".to_owned()
            } else if name == "bool" {
                "JSON Schema calls it `boolean`".to_owned()
            } else if name == "list" {
                "JSON Schema calls it `array`".to_owned()
            } else if name == "dict" || name == "map" {
                "JSON Schema calls it `object`".to_owned()
            } else {
                format!("the types are {}", TYPES.join(", "))
            };
            self.error(
                pointer.to_owned(),
                Diagnostic::error(
                    crate::codes::UNKNOWN_TYPE,
                    format!("unknown type {shown} in `{}` of {}", self.field, self.what),
                )
                .at(
                    item.span,
                    if suggestion.is_empty() {
                        "not a JSON Schema type".to_owned()
                    } else {
                        suggestion.trim_end().to_owned()
                    },
                )
                .help(help),
            );
        }
    }

    fn check_required(&mut self, schema: &Node, value: &Node, pointer: &str) {
        let Some(items) = value.as_seq() else {
            self.error(
                pointer.to_owned(),
                Diagnostic::error(crate::codes::INVALID_SCHEMA, format!("`required` must be a list of property names, found {}", value.kind()))
                    .at(value.span, "expected a list")
                    .help("write `required: [name, other]`; in JSON Schema 2020-12 `required` is not a flag on the property"),
            );
            return;
        };
        let has_properties = schema.get("properties").is_some();
        // With `additionalProperties: false` an undeclared name can never be present: the
        // semantic pass reports that as the stronger error.
        let closed = schema
            .get("additionalProperties")
            .is_some_and(|(_, v)| matches!(v.value, Value::Bool(false)))
            && schema.get("patternProperties").is_none();
        let declared: crate::name_set::NameSet = schema
            .get("properties")
            .and_then(|(_, p)| p.as_map())
            .into_iter()
            .flatten()
            .filter_map(|(k, _)| k.as_str())
            .collect();
        for (i, item) in items.iter().enumerate() {
            let Some(name) = item.as_str() else {
                self.error(
                    format!("{pointer}/{i}"),
                    Diagnostic::error(
                        crate::codes::INVALID_SCHEMA,
                        format!("`required` lists property names, found {}", item.kind()),
                    )
                    .at(item.span, "expected a property name")
                    .help("quote the name if it looks like a number or boolean"),
                );
                continue;
            };
            // Without `properties` a `required` list is a constraint of its own ("these keys,
            // any values"): only a name missing from declared properties looks like a typo.
            if has_properties
                && !closed
                && !declared.contains(name)
                && !constrains_its_parent(pointer)
            {
                let suggestion = did_you_mean(name, declared.iter());
                self.error(
                    format!("{pointer}/{i}"),
                    Diagnostic::error(
                        crate::codes::UNDECLARED_REQUIRED,
                        format!("`required` names `{name}`, which is not declared in `properties` (`{}` of {})", self.field, self.what),
                    )
                    .at(item.span, "not a declared property")
                    .help(if suggestion.is_empty() {
                        format!("declare `{name}` under `properties`, or remove it from `required`")
                    } else {
                        format!("{suggestion}otherwise declare `{name}` under `properties`")
                    }),
                );
            }
        }
    }

    fn check_ref(&mut self, value: &Node, pointer: &str) {
        let Some(target) = value.as_str() else {
            self.error(
                pointer.to_owned(),
                Diagnostic::error(
                    crate::codes::INVALID_SCHEMA,
                    format!("`$ref` must be a string, found {}", value.kind()),
                )
                .at(value.span, "expected e.g. `#/$defs/Address`")
                .help("refer to a definition with `$ref: \"#/$defs/Name\"`"),
            );
            return;
        };
        let resolved = resolve_ref(self.root, target);
        if resolved.is_none() {
            let defs: Vec<String> = ["$defs", "definitions"]
                .iter()
                .filter_map(|k| self.root.get(*k).and_then(Json::as_object).map(|m| (k, m)))
                .flat_map(|(k, m)| m.keys().map(move |name| format!("#/{k}/{name}")))
                .collect();
            let help = if !target.starts_with('#') {
                "toolc resolves only references inside the same schema (`#/$defs/Name`); copy the definition into `$defs`".to_owned()
            } else if let Some(s) = closest(target, defs.iter().map(String::as_str)) {
                format!("did you mean `{s}`?")
            } else if defs.is_empty() {
                "add the definition under `$defs` at the root of this schema".to_owned()
            } else {
                format!("the definitions are {}", defs.join(", "))
            };
            self.error(
                pointer.to_owned(),
                Diagnostic::error(
                    crate::codes::UNRESOLVED_REF,
                    format!(
                        "`$ref: {target}` in `{}` of {} does not resolve",
                        self.field, self.what
                    ),
                )
                .at(value.span, "nothing at this reference")
                .help(help),
            );
        }
    }
}

impl Walker<'_> {
    /// A schema that is, through `$ref`s and the members of `anyOf`/`oneOf`/`allOf`, nothing but
    /// itself (`A: {$ref: A}`, `B: {anyOf: [{$ref: C}, {type: "null"}]}` with `C: {$ref: B}`).
    /// JSON Schema gives it no type, Rust and TypeScript reject the type alias that would name
    /// it (E0391, TS2456), and it is always a slip: a recursion that means something goes
    /// through `properties` or `items`.
    fn check_ref_cycles(&mut self, node: &Node) {
        let mut starts: Vec<String> = vec![String::new()];
        for key in ["$defs", "definitions"] {
            if let Some(defs) = self.root.get(key).and_then(Json::as_object) {
                starts.extend(
                    defs.keys()
                        .map(|name| format!("/{key}/{}", escape_segment(name))),
                );
            }
        }
        // Depth-first, with the path on a stack of its own: a chain of definitions can be as
        // long as the manifest, far deeper than a thread's stack would allow recursion.
        let mut visited: std::collections::HashSet<String> = std::collections::HashSet::new();
        for start in starts {
            if !visited.insert(start.clone()) {
                continue;
            }
            let mut on_path: std::collections::HashSet<String> = std::collections::HashSet::new();
            on_path.insert(start.clone());
            let mut path = vec![(start.clone(), self.direct_refs_at(&start).into_iter())];
            while let Some((_, refs)) = path.last_mut() {
                let Some((keyword_at, target)) = refs.next() else {
                    if let Some((done, _)) = path.pop() {
                        on_path.remove(&done);
                    }
                    continue;
                };
                let Some(target) = resolve_local(self.root, &target) else {
                    continue; // reported as unresolved, or not ours to follow
                };
                if on_path.contains(&target) {
                    let first = path.iter().position(|(p, _)| *p == target).unwrap_or(0);
                    let cycle: Vec<String> = path[first..].iter().map(|(p, _)| p.clone()).collect();
                    self.report_cycle(node, &keyword_at, &cycle);
                } else if visited.insert(target.clone()) {
                    on_path.insert(target.clone());
                    let refs = self.direct_refs_at(&target).into_iter();
                    path.push((target, refs));
                }
            }
        }
    }

    /// [`direct_refs`] of the schema at `pointer`.
    fn direct_refs_at(&self, pointer: &str) -> Vec<(String, String)> {
        let mut refs = Vec::new();
        if let Some(schema) = self.root.pointer(pointer) {
            direct_refs(schema, pointer, &mut refs);
        }
        refs
    }

    /// A schema whose shared definitions multiply: see [`crate::schema_util::written_out_size`].
    fn check_written_out_size(&mut self, node: &Node) {
        let limit = crate::schema_util::MAX_WRITTEN_OUT;
        let (size, recursive) = written_out(self.root, limit);
        if size <= limit {
            if recursive {
                self.check_ambiguous_recursion(node);
            }
            return;
        }
        let (span, _) = span_at(node, "");
        self.error(
            String::new(),
            Diagnostic::error(
                crate::codes::SCHEMA_TOO_LARGE,
                format!(
                    "`{}` of {} uses its definitions so often that, written out in full, it is more than {limit} schemas; a validator may apply every one of them to one value, so one hostile argument could take minutes to check",
                    self.field, self.what
                ),
            )
            .at(span, "this schema")
            .help("a definition used in several places that itself uses another in several places multiplies them; use each definition from fewer places, or merge definitions that are always used together"),
        );
    }

    /// A definition that reaches itself twice along one path into a value: see
    /// [`crate::schema_util::ambiguous_recursion`]. A warning: jsonschema often stops early
    /// (at a failing discriminator it happens to check first), but nothing guarantees it.
    fn check_ambiguous_recursion(&mut self, node: &Node) {
        let limit = crate::schema_util::MAX_WRITTEN_OUT;
        let Some(found) = crate::schema_util::ambiguous_recursion(self.root, limit) else {
            return;
        };
        let (span, _) = span_at(node, "");
        let along = if found.steps.is_empty() {
            "without stepping into the value".to_owned()
        } else {
            format!("both along `{}`", found.steps)
        };
        self.diags.push(
            Diagnostic::warning(
                crate::codes::AMBIGUOUS_RECURSION,
                format!(
                    "in `{}` of {}, `{}` reaches itself by two paths, {along}: a validator may follow both at every level, so checking one deeply nested argument can take time that doubles with its depth",
                    self.field, self.what, found.definition
                ),
            )
            .at(span, "this schema")
            .help("move what the alternatives share (the property that recurses) out of the `anyOf`/`oneOf`, beside it, so that it is checked once; or have each path step into a different property"),
        );
    }

    fn report_cycle(&mut self, node: &Node, keyword_at: &str, cycle: &[String]) {
        let name = |pointer: &str| {
            if pointer.is_empty() {
                "#".to_owned()
            } else {
                format!("#{pointer}")
            }
        };
        let mut chain: Vec<String> = cycle.iter().map(|p| name(p)).collect();
        chain.push(name(&cycle[0]));
        let (span, _) = span_at(node, keyword_at);
        let subject = if cycle.len() == 1 {
            format!("`{}` refers only to itself", name(&cycle[0]))
        } else {
            format!(
                "`{}` refer only to each other",
                cycle
                    .iter()
                    .map(|p| name(p))
                    .collect::<Vec<_>>()
                    .join("`, `")
            )
        };
        self.error(
            keyword_at.to_owned(),
            Diagnostic::error(
                crate::codes::REF_CYCLE,
                format!(
                    "in `{}` of {}, {subject} ({}), so no type is ever given",
                    self.field,
                    self.what,
                    chain.join(" → ")
                ),
            )
            .at(span, "this `$ref` closes the cycle")
            .help("give the definition a `type`; a recursive structure refers to itself inside `properties` or `items`, e.g. `children: { type: array, items: { $ref: \"#/$defs/Node\" } }`"),
        );
    }
}

/// Whether the schema at the `required` keyword at `pointer` is an applicator member (of
/// `allOf`/`anyOf`/`oneOf`, or `not`/`if`/`then`/`else`/`dependentSchemas`): its `required`
/// names properties of the object it applies to, declared beside the applicator, as in
/// `anyOf: [{required: [email]}, {required: [phone]}]` ("one of the two").
fn constrains_its_parent(pointer: &str) -> bool {
    let mut segments = pointer.rsplit('/').skip(1); // `required` itself
    match (segments.next(), segments.next()) {
        // Not a property or definition that happens to be called `not`.
        (Some("not" | "if" | "then" | "else"), parent) => {
            !parent.is_some_and(|p| SUBSCHEMA_MAP.contains(&p))
        }
        (Some(index), Some("allOf" | "anyOf" | "oneOf")) => index.parse::<usize>().is_ok(),
        (Some(_), Some("dependentSchemas")) => true,
        _ => false,
    }
}

/// The `$ref`s that `schema` (at `at`) is made of directly: its own, and those of the members of
/// its `anyOf`/`oneOf`/`allOf`, recursively. Each as (pointer of the `$ref` keyword, target).
fn direct_refs(schema: &Json, at: &str, out: &mut Vec<(String, String)>) {
    let Some(map) = schema.as_object() else {
        return;
    };
    if let Some(target) = map.get("$ref").and_then(Json::as_str) {
        out.push((format!("{at}/$ref"), target.to_owned()));
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(members) = map.get(key).and_then(Json::as_array) {
            for (i, member) in members.iter().enumerate() {
                direct_refs(member, &format!("{at}/{key}/{i}"), out);
            }
        }
    }
}

/// The JSON pointer a same-document `$ref` leads to, when it leads somewhere.
fn resolve_local(root: &Json, target: &str) -> Option<String> {
    resolve_ref(root, target)?;
    local_pointer(target).map(|p| p.into_owned())
}

#[cfg(test)]
mod tests;
