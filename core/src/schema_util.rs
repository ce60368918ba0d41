//! The small pieces of JSON Schema plumbing that every pass and emitter needs, in one place:
//! JSON-pointer segments (RFC 6901), the percent-decoding of a `$ref`'s fragment (RFC 3986), and
//! following same-document `$ref`s with a hop limit.
//!
//! Everything here takes arbitrary text: a `$ref` or a property name comes from a manifest, so a
//! `%` before a multi-byte character, a lone `~`, or a reference cycle must give an answer, not a
//! panic or a loop.

use std::borrow::Cow;

use serde_json::Value;

/// How many `$ref`s in a row are followed before giving up (a cycle with no schema in it).
pub const MAX_REF_HOPS: usize = 32;

/// Keywords whose value is one subschema.
pub const SUBSCHEMA: &[&str] = &[
    "additionalProperties",
    "items",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
];
/// Keywords whose value maps names to subschemas.
pub const SUBSCHEMA_MAP: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];
/// Keywords whose value is a list of subschemas.
pub const SUBSCHEMA_LIST: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];

/// One JSON-pointer segment for `name`: `~` → `~0`, `/` → `~1`.
pub fn escape_segment(name: &str) -> Cow<'_, str> {
    if name.contains(['~', '/']) {
        Cow::Owned(name.replace('~', "~0").replace('/', "~1"))
    } else {
        Cow::Borrowed(name)
    }
}

/// The name a JSON-pointer segment stands for: `~1` → `/`, then `~0` → `~`.
pub fn unescape_segment(segment: &str) -> Cow<'_, str> {
    if segment.contains('~') {
        Cow::Owned(segment.replace("~1", "/").replace("~0", "~"))
    } else {
        Cow::Borrowed(segment)
    }
}

/// Decodes `%XX` escapes (a URI fragment). A `%` not followed by two hex digits stays as it
/// is; bytes that do not form UTF-8 become U+FFFD.
pub fn percent_decode(text: &str) -> Cow<'_, str> {
    if !text.contains('%') {
        return Cow::Borrowed(text);
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3);
            if let Some(&[hi, lo]) = hex {
                if let (Some(hi), Some(lo)) = (hex_digit(hi), hex_digit(lo)) {
                    out.push(hi << 4 | lo);
                    i += 3;
                    continue;
                }
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    match String::from_utf8(out) {
        Ok(s) => Cow::Owned(s),
        Err(e) => Cow::Owned(String::from_utf8_lossy(e.as_bytes()).into_owned()),
    }
}

fn hex_digit(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// The JSON pointer (decoded, `""` for the root) of a same-document `$ref`: `#`, `#/$defs/A`,
/// `#/properties/a%20b`. `None` for references to other documents and anchors (`#name`).
pub fn local_pointer(reference: &str) -> Option<Cow<'_, str>> {
    let fragment = reference.strip_prefix('#')?;
    if !fragment.is_empty() && !fragment.starts_with('/') {
        return None;
    }
    Some(percent_decode(fragment))
}

/// What a same-document `$ref` points at in `root`.
pub fn resolve_ref<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = local_pointer(reference)?;
    if pointer.is_empty() {
        Some(root)
    } else {
        root.pointer(&pointer)
    }
}

/// Whether the schema holds a `$ref` anywhere, i.e. whether following references can matter.
pub fn has_refs(value: &Value) -> bool {
    match value {
        Value::Object(map) => map.iter().any(|(k, v)| k == "$ref" || has_refs(v)),
        Value::Array(items) => items.iter().any(has_refs),
        _ => false,
    }
}

/// Follows `$ref`s from `schema` until one without (or one that leads nowhere, or
/// [`MAX_REF_HOPS`] of them).
pub fn deref<'a>(root: &'a Value, mut schema: &'a Value) -> &'a Value {
    for _ in 0..MAX_REF_HOPS {
        match schema.get("$ref").and_then(Value::as_str) {
            Some(r) => match resolve_ref(root, r) {
                Some(target) => schema = target,
                None => return schema,
            },
            None => return schema,
        }
    }
    schema
}

/// How many schemas a validator may apply to one value when there are more than this in the
/// schema written out in full (see [`written_out_size`]): a schema as large as any real tool's
/// is far below it, and a validator that follows each of them (jsonschema tries every branch of
/// an `anyOf` that fails) takes a second or more.
pub const MAX_WRITTEN_OUT: usize = 100_000;

/// How many schemas `root` holds once written out in full: every `$ref` replaced by a copy of
/// what it refers to (a definition that refers back into itself is copied once), unused
/// definitions not counted. Counts up to `limit`; anything larger is `limit + 1`.
///
/// Definitions that each use the next twice (`A: {anyOf: [{$ref: B}, {$ref: B}]}`, and so on)
/// double at every level: twenty of them write out as a million schemas, all of which a
/// validator may apply to one hostile value. Each definition is counted once and remembered, so
/// this takes time linear in the schema's text whatever the answer, and it walks with a stack
/// of its own: a chain of definitions can be as long as the manifest, far deeper than a
/// thread's stack allows recursion.
pub fn written_out_size(root: &Value, limit: usize) -> usize {
    written_out(root, limit).0
}

/// [`written_out_size`], and whether some definition refers back into itself (without which
/// there is no recursion for [`ambiguous_recursion`] to look at).
pub fn written_out(root: &Value, limit: usize) -> (usize, bool) {
    let mut recursive = false;
    let too_large = limit.saturating_add(1);
    // Per `$ref` target (by address): `None` while it is being counted, then its size.
    let mut counted: std::collections::HashMap<*const Value, Option<usize>> =
        std::collections::HashMap::new();
    let mut stack = vec![Counting::of(root, root, None)];
    while let Some(top) = stack.last_mut() {
        if top.total > limit {
            return (too_large, recursive);
        }
        if let Some(&(part, is_target)) = top.parts.get(top.next) {
            top.next += 1;
            if !is_target {
                stack.push(Counting::of(part, root, None));
                continue;
            }
            let key: *const Value = part;
            match counted.get(&key) {
                Some(Some(size)) => top.total = top.total.saturating_add(*size),
                // Back into a definition being counted: a recursion, written out once.
                Some(None) => recursive = true,
                None => {
                    counted.insert(key, None);
                    stack.push(Counting::of(part, root, Some(key)));
                }
            }
            continue;
        }
        let Some(done) = stack.pop() else { break };
        if let Some(key) = done.target {
            counted.insert(key, Some(done.total));
        }
        match stack.last_mut() {
            Some(parent) => parent.total = parent.total.saturating_add(done.total),
            None => return (done.total.min(too_large), recursive),
        }
    }
    (too_large, recursive)
}

/// A part of a schema: a subschema with the step into the value it applies to (`None`: the
/// same place), or the target of the schema's `$ref` with the reference.
type Part<'a> = (&'a Value, Option<Step<'a>>, Option<&'a str>);

/// The parts of `schema` that [`written_out_size`] counts and [`ambiguous_recursion`] walks,
/// in order: every subschema except `$defs` (counted where they are used), and the target of
/// its `$ref`.
fn parts_of<'a>(schema: &'a Value, root: &'a Value) -> Vec<Part<'a>> {
    let mut parts = Vec::new();
    if let Value::Object(map) = schema {
        for (key, value) in map {
            let key = key.as_str();
            match key {
                "$ref" => {
                    if let Some(reference) = value.as_str() {
                        if let Some(to) = resolve_ref(root, reference) {
                            parts.push((to, None, Some(reference)));
                        }
                    }
                }
                "properties" => {
                    parts.extend(
                        value.as_object().into_iter().flatten().map(|(name, sub)| {
                            (sub, Some(Step::Member(Some(name.as_str()))), None)
                        }),
                    )
                }
                "additionalProperties" | "unevaluatedProperties" => {
                    parts.push((value, Some(Step::Rest(map)), None))
                }
                "patternProperties" => parts.extend(
                    value
                        .as_object()
                        .into_iter()
                        .flat_map(|m| m.values())
                        .map(|sub| (sub, Some(Step::Member(None)), None)),
                ),
                "propertyNames" => parts.push((value, Some(Step::Key), None)),
                "items" | "contains" | "unevaluatedItems" => match value {
                    Value::Array(items) => parts.extend(
                        items
                            .iter()
                            .enumerate()
                            .map(|(i, sub)| (sub, Some(Step::Item(Some(i))), None)),
                    ),
                    sub => parts.push((sub, Some(Step::Item(None)), None)),
                },
                "prefixItems" => parts.extend(
                    value
                        .as_array()
                        .into_iter()
                        .flatten()
                        .enumerate()
                        .map(|(i, sub)| (sub, Some(Step::Item(Some(i))), None)),
                ),
                "$defs" | "definitions" => {}
                _ if SUBSCHEMA_LIST.contains(&key) || SUBSCHEMA.contains(&key) => match value {
                    Value::Array(items) => parts.extend(items.iter().map(|sub| (sub, None, None))),
                    sub => parts.push((sub, None, None)),
                },
                _ if SUBSCHEMA_MAP.contains(&key) => parts.extend(
                    value
                        .as_object()
                        .into_iter()
                        .flat_map(|m| m.values())
                        .map(|sub| (sub, None, None)),
                ),
                _ => {}
            }
        }
    }
    parts
}

/// One schema being counted by [`written_out_size`].
struct Counting<'a> {
    /// Its subschemas, and the target of its `$ref` (`true`), in order.
    parts: Vec<(&'a Value, bool)>,
    next: usize,
    /// Itself and what of its parts is counted so far.
    total: usize,
    /// The `$ref` target it is, whose size is remembered when done.
    target: Option<*const Value>,
}

impl<'a> Counting<'a> {
    fn of(schema: &'a Value, root: &'a Value, target: Option<*const Value>) -> Counting<'a> {
        let parts = parts_of(schema, root)
            .into_iter()
            .map(|(part, _, reference)| (part, reference.is_some()))
            .collect();
        Counting {
            parts,
            next: 0,
            total: 1,
            target,
        }
    }
}

/// `Err` with a reason when `schema` is more than [`MAX_WRITTEN_OUT`] schemas written out in
/// full: what the runtime says of a remote catalog's or MCP server's schema it refuses to
/// validate against.
pub fn check_written_out_size(schema: &Value) -> Result<(), String> {
    if written_out_size(schema, MAX_WRITTEN_OUT) <= MAX_WRITTEN_OUT {
        return Ok(());
    }
    Err(format!(
        "written out in full it is more than {MAX_WRITTEN_OUT} schemas (definitions that use each other in several places multiply), and a validator may apply every one of them to one value"
    ))
}

/// A definition that reaches itself along two paths stepping into the same place of a value,
/// which [`ambiguous_recursion`] finds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AmbiguousRecursion {
    /// The `$ref` that names the definition.
    pub definition: String,
    /// The steps into the value along the shorter of the two paths (`child`, `items[*]`), or
    /// empty when one path does not step into the value at all.
    pub steps: String,
}

/// One step from a value into a part of it, along which a subschema applies.
#[derive(Clone, Copy, Debug)]
enum Step<'a> {
    /// The member of this name (`properties`), or any member (`patternProperties`: `None`).
    Member(Option<&'a str>),
    /// The members that the object schema beside it does not name in `properties`
    /// (`additionalProperties`, `unevaluatedProperties`).
    Rest(&'a serde_json::Map<String, Value>),
    /// The item at this index (`prefixItems`), or any item (`items`, `contains`: `None`).
    Item(Option<usize>),
    /// A member's name (`propertyNames`).
    Key,
}

impl PartialEq for Step<'_> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Step::Member(a), Step::Member(b)) => a == b,
            (Step::Rest(a), Step::Rest(b)) => std::ptr::eq(*a, *b),
            (Step::Item(a), Step::Item(b)) => a == b,
            (Step::Key, Step::Key) => true,
            _ => false,
        }
    }
}

impl Eq for Step<'_> {}

impl std::hash::Hash for Step<'_> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            Step::Member(name) => name.hash(state),
            Step::Rest(map) => std::ptr::hash(*map, state),
            Step::Item(index) => index.hash(state),
            Step::Key => {}
        }
    }
}

impl Step<'_> {
    /// Whether some value has a part that both steps reach.
    fn meets(self, other: Self) -> bool {
        let named = |map: &serde_json::Map<String, Value>, name: &str| {
            map.get("properties")
                .and_then(Value::as_object)
                .is_some_and(|p| p.contains_key(name))
        };
        match (self, other) {
            (Step::Member(a), Step::Member(b)) => a.is_none() || b.is_none() || a == b,
            (Step::Rest(map), Step::Member(Some(name)))
            | (Step::Member(Some(name)), Step::Rest(map)) => !named(map, name),
            (Step::Rest(_) | Step::Member(None), Step::Rest(_) | Step::Member(None)) => true,
            (Step::Item(a), Step::Item(b)) => a.is_none() || b.is_none() || a == b,
            (Step::Key, Step::Key) => true,
            _ => false,
        }
    }

    fn describe(self) -> String {
        match self {
            Step::Member(Some(name)) => format!(".{name}"),
            Step::Member(None) | Step::Rest(_) => ".*".into(),
            Step::Item(Some(i)) => format!("[{i}]"),
            Step::Item(None) => "[*]".into(),
            Step::Key => ".<name>".into(),
        }
    }
}

/// Whether two paths back to a definition can be taken by the same value: one's steps meet the
/// first steps of the other. Then a validator that follows both (jsonschema tries every branch
/// of a failing `anyOf`) doubles its work at every level of a value nested along them.
fn paths_meet(a: &[Step<'_>], b: &[Step<'_>]) -> bool {
    a.iter().zip(b).all(|(x, y)| x.meets(*y))
}

/// Finds a definition that reaches itself along two paths whose steps into the value can
/// coincide: `Node: {anyOf: [{properties: {child: {$ref: Node}}}, {properties: {child: {$ref:
/// Node}}}]}`. Validating `{"child": {"child": ...}}` against it may take time that doubles with
/// the value's depth, whatever the schema's written-out size. A binary tree (`left` and
/// `right`), a list, or a JSON value (items and members) are not ambiguous.
///
/// Walks the schema written out in full, with recursion cut where a definition reaches
/// itself, on a stack of its own; gives up (`None`) past `limit` schemas, where
/// [`written_out_size`] speaks.
pub fn ambiguous_recursion(root: &Value, limit: usize) -> Option<AmbiguousRecursion> {
    struct Frame<'a> {
        parts: Vec<Part<'a>>,
        next: usize,
        /// Whether entering this schema stepped into the value.
        stepped: bool,
        /// For a `$ref` target: its address, its reference, how many steps were taken when
        /// it was entered, and the steps of each path back to it.
        target: Option<(*const Value, &'a str, usize, Vec<Vec<Step<'a>>>)>,
    }
    fn frame<'a>(
        root: &'a Value,
        schema: &'a Value,
        stepped: bool,
        target: Option<(*const Value, &'a str, usize, Vec<Vec<Step<'a>>>)>,
    ) -> Frame<'a> {
        let parts = parts_of(schema, root);
        Frame {
            parts,
            next: 0,
            stepped,
            target,
        }
    }
    let mut steps: Vec<Step<'_>> = Vec::new();
    // The frames of the definitions being walked, innermost last, by address.
    let mut open: std::collections::HashMap<*const Value, Vec<usize>> =
        std::collections::HashMap::new();
    let mut stack = vec![frame(root, root, false, None)];
    let mut walked = 1usize;
    while let Some(top) = stack.last_mut() {
        if let Some(&(part, step, reference)) = top.parts.get(top.next) {
            top.next += 1;
            walked += 1;
            if walked > limit {
                return None;
            }
            if let Some(reference) = reference {
                let key: *const Value = part;
                if let Some(&at) = open.get(&key).and_then(|frames| frames.last()) {
                    if let Some((_, _, entered, back)) = &mut stack[at].target {
                        back.push(steps[*entered..].to_vec());
                    }
                } else {
                    open.entry(key).or_default().push(stack.len());
                    let entered = steps.len();
                    stack.push(frame(
                        root,
                        part,
                        false,
                        Some((key, reference, entered, Vec::new())),
                    ));
                }
                continue;
            }
            if let Some(step) = step {
                steps.push(step);
            }
            stack.push(frame(root, part, step.is_some(), None));
            continue;
        }
        let Some(done) = stack.pop() else { break };
        if done.stepped {
            steps.pop();
        }
        let Some((key, reference, _, back)) = done.target else {
            continue;
        };
        if let Some(frames) = open.get_mut(&key) {
            frames.pop();
        }
        if let Some(path) = first_meeting(&back) {
            return Some(AmbiguousRecursion {
                definition: reference.to_owned(),
                steps: path
                    .iter()
                    .map(|s| s.describe())
                    .collect::<String>()
                    .trim_start_matches('.')
                    .to_owned(),
            });
        }
    }
    None
}

/// Of two paths back to a definition that meet, the shorter; paths are compared only with
/// those whose first step can meet theirs.
fn first_meeting<'p, 'a>(paths: &'p [Vec<Step<'a>>]) -> Option<&'p [Step<'a>]> {
    let mut by_first: std::collections::HashMap<Step<'a>, Vec<&'p [Step<'a>]>> =
        std::collections::HashMap::new();
    let mut open_first: Vec<&'p [Step<'a>]> = Vec::new();
    for path in paths {
        match path.first() {
            Some(step @ (Step::Member(Some(_)) | Step::Item(Some(_)))) => {
                by_first.entry(*step).or_default().push(path)
            }
            _ => open_first.push(path),
        }
    }
    // The shorter of the two, and of two as long the one that names more parts: what the
    // message shows.
    let named = |p: &[Step<'_>]| {
        p.iter()
            .filter(|s| matches!(s, Step::Member(Some(_)) | Step::Item(Some(_))))
            .count()
    };
    let shorter = |a: &'p [Step<'a>], b: &'p [Step<'a>]| {
        if (a.len(), usize::MAX - named(a)) <= (b.len(), usize::MAX - named(b)) {
            a
        } else {
            b
        }
    };

    for (i, a) in open_first.iter().enumerate() {
        let others = open_first[i + 1..]
            .iter()
            .chain(by_first.values().flatten());
        for b in others {
            if paths_meet(a, b) {
                return Some(shorter(a, b));
            }
        }
    }
    for group in by_first.values() {
        for (i, a) in group.iter().enumerate() {
            if let Some(b) = group[i + 1..].iter().find(|b| paths_meet(a, b)) {
                return Some(shorter(a, b));
            }
        }
    }
    None
}

/// `#/$defs/Name` or `#/definitions/Name` → (`$defs` or `definitions`, `Name` unescaped), for
/// references to a named definition; `None` for deeper or other pointers.
pub fn named_definition(reference: &str) -> Option<(&'static str, String)> {
    let pointer = local_pointer(reference)?;
    let rest = pointer.strip_prefix('/')?;
    let (container, name) = rest.split_once('/')?;
    let container = match container {
        "$defs" => "$defs",
        "definitions" => "definitions",
        _ => return None,
    };
    if name.contains('/') {
        return None;
    }
    Some((container, unescape_segment(name).into_owned()))
}

/// `schema` with `type: object` at its root (parameters always are objects; the manifest checks
/// demand it; tools built from Rust definitions may leave it implicit). Borrowed when it already
/// is.
pub fn object_root(schema: &serde_json::Value) -> std::borrow::Cow<'_, serde_json::Value> {
    use serde_json::Value;
    use std::borrow::Cow;
    match schema {
        Value::Object(map) if map.get("type").and_then(Value::as_str) == Some("object") => {
            Cow::Borrowed(schema)
        }
        Value::Object(map) => {
            let mut out = serde_json::Map::new();
            out.insert("type".into(), "object".into());
            for (k, v) in map {
                if k != "type" {
                    out.insert(k.clone(), v.clone());
                }
            }
            Cow::Owned(Value::Object(out))
        }
        _ => Cow::Owned(serde_json::json!({ "type": "object" })),
    }
}

/// Gemini's `parametersJsonSchema` of a tool's parameters (full JSON Schema, with `type:
/// object` at the root), or `None` for a tool that takes no arguments (a closed object root
/// without properties), which Gemini wants declared without one. An open object without
/// properties keeps its schema: it says arguments may come. The compiler's
/// `--gemini-schema json-schema` files and the runtime's Gemini Live declarations both use it.
pub fn gemini_parameters_json_schema(
    parameters: &serde_json::Value,
) -> Option<std::borrow::Cow<'_, serde_json::Value>> {
    use serde_json::Value;
    let schema = object_root(parameters);
    let no_properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .is_none_or(|p| p.is_empty());
    let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
    (!(no_properties && closed)).then_some(schema)
}

/// MCP's `inputSchema` of a tool's parameters: the schema as written (with `type: object` at
/// the root), with `true`/`false` property schemas as the objects of the same meaning
/// (2025-11-25 requires objects there). `mcp.json` and the runtime's MCP server both use it.
pub fn mcp_input_schema(parameters: &serde_json::Value) -> serde_json::Value {
    mcp_lowered_input_schema(parameters).unwrap_or_else(|| object_root(parameters).into_owned())
}

/// [`mcp_input_schema`] when it differs from the schema as written: `None` unless a property's
/// schema is `true` or `false`.
pub fn mcp_lowered_input_schema(parameters: &serde_json::Value) -> Option<serde_json::Value> {
    use serde_json::{json, Value};
    let schema = object_root(parameters);
    let is_bool = |props: &serde_json::Map<String, Value>| props.values().any(Value::is_boolean);
    if !schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(is_bool)
    {
        return None;
    }
    let mut schema = schema.into_owned();
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        for sub in props.values_mut() {
            match sub {
                Value::Bool(true) => *sub = json!({}),
                Value::Bool(false) => *sub = json!({ "not": {} }),
                _ => {}
            }
        }
    }
    Some(schema)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared(levels: usize, make: impl Fn(Value) -> Value) -> Value {
        let mut defs = serde_json::Map::new();
        for k in 0..levels {
            defs.insert(
                format!("D{k}"),
                make(serde_json::json!({ "$ref": format!("#/$defs/D{}", k + 1) })),
            );
        }
        defs.insert(
            format!("D{levels}"),
            serde_json::json!({ "type": "string" }),
        );
        serde_json::json!({ "type": "object", "properties": { "x": { "$ref": "#/$defs/D0" } }, "$defs": defs })
    }

    #[test]
    fn recursions_along_paths_that_meet_are_ambiguous() {
        use serde_json::json;
        let node = |def: Value| json!({ "$ref": "#/$defs/N", "$defs": { "N": def } });
        let at = |def: Value| {
            ambiguous_recursion(&node(def), MAX_WRITTEN_OUT).map(|a| (a.definition, a.steps))
        };
        let child = json!({ "$ref": "#/$defs/N" });
        // Two alternatives that both step into `child`, `items`, or once and twice into `next`.
        let twice = json!({ "anyOf": [
            { "type": "object", "properties": { "child": child } },
            { "type": "object", "properties": { "child": child }, "required": ["child"] } ] });
        assert_eq!(at(twice), Some(("#/$defs/N".into(), "child".into())));
        let lists = json!({ "oneOf": [{ "items": child }, { "items": child, "minItems": 2 }] });
        assert_eq!(at(lists), Some(("#/$defs/N".into(), "[*]".into())));
        let strides = json!({ "properties": { "next": { "anyOf": [child,
            { "properties": { "next": child } }] } } });
        assert_eq!(at(strides), Some(("#/$defs/N".into(), "next".into())));
        // `additionalProperties` skips what `properties` beside it names, not what another
        // alternative names.
        let beside = json!({ "properties": { "a": child }, "additionalProperties": child });
        assert_eq!(at(beside), None);
        let across = json!({ "anyOf": [{ "properties": { "a": child } },
                                       { "additionalProperties": child }] });
        assert_eq!(at(across), Some(("#/$defs/N".into(), "a".into())));
        // Paths into different parts of a value are not.
        for fine in [
            json!({ "properties": { "left": child, "right": child } }),
            json!({ "anyOf": [{ "type": "null" }, { "properties": { "next": child } }] }),
            json!({ "anyOf": [{ "type": "string" }, { "type": "array", "items": child },
                              { "type": "object", "additionalProperties": child }] }),
            json!({ "anyOf": [{ "properties": { "and": { "items": child } } },
                              { "properties": { "or": { "items": child } } }] }),
            json!({ "prefixItems": [child, { "type": "string" }, child] }),
            json!({ "type": "string" }),
        ] {
            assert_eq!(at(fine.clone()), None, "{fine}");
        }
        // Through another definition, and a chain of 50,000 without recursing once per link.
        let through = json!({ "$ref": "#/$defs/A", "$defs": {
            "A": { "anyOf": [{ "properties": { "x": { "$ref": "#/$defs/B" } } },
                             { "properties": { "x": { "$ref": "#/$defs/B" } } }] },
            "B": { "properties": { "y": { "$ref": "#/$defs/A" } } } } });
        assert_eq!(
            ambiguous_recursion(&through, MAX_WRITTEN_OUT).map(|a| a.steps),
            Some("x.y".into())
        );
        let chain = shared(
            50_000,
            |r| json!({ "type": "object", "properties": { "next": r } }),
        );
        assert_eq!(ambiguous_recursion(&chain, MAX_WRITTEN_OUT), None);
    }

    #[test]
    fn written_out_size_counts_every_copy_and_stops_at_the_limit() {
        use serde_json::json;
        // root + properties/x (its `$ref`) + the string it leads to.
        let one = json!({ "type": "object", "properties": { "x": { "$ref": "#/$defs/S" } },
                          "$defs": { "S": { "type": "string" }, "Unused": { "type": "string" } } });
        assert_eq!(written_out_size(&one, 100), 3);
        // Each level: the definition and its two `$ref` members, each holding the next level.
        let any_of = |r: Value| json!({ "anyOf": [r.clone(), r] });
        let expected = |levels: u32| 2 + (3 * (2usize.pow(levels) - 1)) + 2usize.pow(levels);
        for levels in 1..=8 {
            assert_eq!(
                written_out_size(&shared(levels as usize, any_of), 1_000_000),
                expected(levels),
                "{levels} levels"
            );
        }
        // 2^200 copies: counted in linear time, and capped.
        assert_eq!(written_out_size(&shared(200, any_of), 1000), 1001);
        let props =
            |r: Value| json!({ "type": "object", "properties": { "a": r.clone(), "b": r } });
        assert_eq!(
            written_out_size(&shared(200, props), MAX_WRITTEN_OUT),
            MAX_WRITTEN_OUT + 1
        );
        // A recursion is written out once; a chain of 50,000 definitions is counted without
        // recursing once per link: the root, `x`, two schemas per link and the string.
        let tree = json!({ "$ref": "#/$defs/T", "$defs": { "T": { "type": "object", "properties": {
            "children": { "type": "array", "items": { "$ref": "#/$defs/T" } } } } } });
        assert_eq!(written_out_size(&tree, 100), 4);
        let chain = shared(
            50_000,
            |r| json!({ "type": "object", "properties": { "next": r } }),
        );
        assert_eq!(written_out_size(&chain, usize::MAX - 1), 2 + 2 * 50_000 + 1);
    }
    use serde_json::json;

    #[test]
    fn segments_round_trip() {
        for name in ["plain", "a/b", "~", "~1", "a~0/b", "é/ü", ""] {
            assert_eq!(unescape_segment(&escape_segment(name)), name);
        }
        assert_eq!(escape_segment("a/b~c"), "a~1b~0c");
    }

    #[test]
    fn percent_decoding_never_panics_and_keeps_what_is_not_an_escape() {
        assert_eq!(percent_decode("a%20b"), "a b");
        assert_eq!(percent_decode("%C3%A9"), "é");
        assert_eq!(percent_decode("%aé"), "%aé");
        assert_eq!(percent_decode("%é"), "%é");
        assert_eq!(percent_decode("%"), "%");
        assert_eq!(percent_decode("%4"), "%4");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%41"), "%zzA");
        assert_eq!(percent_decode("%FF"), "\u{FFFD}");
    }

    #[test]
    fn references_resolve_within_the_document() {
        let root = json!({"$defs": {"a b": {"type": "string"}, "x/y": {"$ref": "#/$defs/a%20b"}},
                          "properties": {"p": {"$ref": "#/$defs/x~1y"}}});
        assert_eq!(resolve_ref(&root, "#"), Some(&root));
        assert_eq!(
            resolve_ref(&root, "#/$defs/a%20b"),
            Some(&json!({"type": "string"}))
        );
        assert_eq!(resolve_ref(&root, "#anchor"), None);
        assert_eq!(resolve_ref(&root, "other.json#/a"), None);
        assert_eq!(resolve_ref(&root, "#%aé"), None);
        let p = &root["properties"]["p"];
        assert_eq!(deref(&root, p), &json!({"type": "string"}));
        let cycle = json!({"$defs": {"a": {"$ref": "#/$defs/a"}}});
        assert_eq!(deref(&cycle, &cycle["$defs"]["a"]), &cycle["$defs"]["a"]);
        assert_eq!(
            named_definition("#/$defs/x~1y"),
            Some(("$defs", "x/y".to_owned()))
        );
        assert_eq!(
            named_definition("#/definitions/A"),
            Some(("definitions", "A".to_owned()))
        );
        assert_eq!(named_definition("#/$defs/A/properties/b"), None);
        assert_eq!(named_definition("#/properties/a"), None);
    }
}
