//! The other direction of strict mode, for the runtime: which schemas accept `null`, and
//! [`strip_strict_nulls`], which turns the nulls that strict mode makes the model send for
//! omitted optional arguments back into absent keys before an executor sees them.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::type_includes;
use crate::schema_util::{deref, resolve_ref, MAX_REF_HOPS};

/// Whether `null` is a valid instance of `schema` (with `$ref`s resolved against `root`).
/// Conservative for `not`/`if`, which it ignores, and for a `$ref` chain longer than
/// [`MAX_REF_HOPS`] or one that leads back into itself: both count as accepting `null`.
///
/// Each `$ref` target is judged once and remembered, so the work is linear in the schema's size
/// even where definitions share definitions (`A: {allOf: [{$ref: B}, {$ref: B}]}` and so on, which
/// followed path by path doubles at every level).
pub fn accepts_null(schema: &Value, root: &Value) -> bool {
    NullJudge {
        root,
        judged: HashMap::new(),
    }
    .accepts(schema, 0)
}

struct NullJudge<'a> {
    root: &'a Value,
    /// Per `$ref` target (by address): `None` while it is being judged, then its answer.
    judged: HashMap<*const Value, Option<bool>>,
}

impl<'a> NullJudge<'a> {
    fn accepts(&mut self, schema: &'a Value, hops: usize) -> bool {
        let map = match schema {
            Value::Bool(b) => return *b,
            Value::Object(map) => map,
            _ => return true,
        };
        if let Some(t) = map.get("type") {
            if !type_includes(t, "null") {
                return false;
            }
        }
        if let Some(Value::Array(values)) = map.get("enum") {
            if !values.contains(&Value::Null) {
                return false;
            }
        }
        if let Some(c) = map.get("const") {
            if !c.is_null() {
                return false;
            }
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = map.get(key) {
                if !branches.iter().any(|b| self.accepts(b, hops)) {
                    return false;
                }
            }
        }
        if let Some(Value::Array(branches)) = map.get("allOf") {
            if !branches.iter().all(|b| self.accepts(b, hops)) {
                return false;
            }
        }
        if let Some(r) = map.get("$ref").and_then(Value::as_str) {
            if hops >= MAX_REF_HOPS {
                return true;
            }
            if let Some(target) = resolve_ref(self.root, r) {
                let key: *const Value = target;
                return match self.judged.get(&key) {
                    Some(Some(answer)) => *answer,
                    // Back into a target still being judged: a cycle, which says nothing.
                    Some(None) => true,
                    None => {
                        self.judged.insert(key, None);
                        let answer = self.accepts(target, hops + 1);
                        self.judged.insert(key, Some(answer));
                        answer
                    }
                };
            }
        }
        true
    }
}

/// Removes the `null`s that strict mode made the model send for optional arguments it omitted:
/// a member is removed when its value is `null`, the property was optional in `original_schema`
/// and its schema there does not accept `null` itself. Walks nested objects, arrays and `$ref`s.
/// Never panics, whatever `args` holds.
pub fn strip_strict_nulls(original_schema: &Value, args: &mut Value) {
    strip(original_schema, original_schema, args, 0);
}

/// Bounds the walk for hostile input; serde_json already limits parsed nesting to 128.
const MAX_STRIP_DEPTH: usize = 256;

fn strip(schema: &Value, root: &Value, value: &mut Value, depth: usize) {
    if depth > MAX_STRIP_DEPTH {
        return;
    }
    let schema = deref(root, schema);
    match value {
        Value::Object(members) => {
            let Some(shape) = object_shape(schema, root, members) else {
                return;
            };
            members.retain(|name, v| {
                let Some(sub) = shape.property(name) else {
                    return true;
                };
                !(v.is_null()
                    && !shape.required.contains(&name.as_str())
                    && !accepts_null(sub, root))
            });
            for (name, v) in members.iter_mut() {
                if let Some(sub) = shape.property(name).or(shape.additional) {
                    strip(sub, root, v, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            let Some(shape) = array_shape(schema, root) else {
                return;
            };
            for (i, item) in items.iter_mut().enumerate() {
                if let Some(sub) = shape.prefix.get(i).copied().or(shape.items) {
                    strip(sub, root, item, depth + 1);
                }
            }
        }
        _ => {}
    }
}

/// The properties an object schema declares (with those of its `allOf` members).
struct ObjectShape<'a> {
    /// Each name with the first schema declared for it.
    properties: HashMap<&'a str, &'a Value>,
    required: HashSet<&'a str>,
    additional: Option<&'a Value>,
    /// The schemas already collected (by address): an `allOf` that several paths reach, or
    /// one that reaches itself, is read once.
    collected: HashSet<*const Value>,
}

impl<'a> ObjectShape<'a> {
    fn of(schema: &'a Value, root: &'a Value) -> ObjectShape<'a> {
        let mut shape = ObjectShape {
            properties: HashMap::new(),
            required: HashSet::new(),
            additional: None,
            collected: HashSet::new(),
        };
        shape.collect(schema, root, 0);
        shape
    }

    fn property(&self, name: &str) -> Option<&'a Value> {
        self.properties.get(name).copied()
    }

    fn collect(&mut self, schema: &'a Value, root: &'a Value, depth: usize) {
        let schema = deref(root, schema);
        if !self.collected.insert(schema) {
            return;
        }
        let Some(map) = schema.as_object() else {
            return;
        };
        if let Some(props) = map.get("properties").and_then(Value::as_object) {
            for (name, sub) in props {
                self.properties.entry(name.as_str()).or_insert(sub);
            }
        }
        if let Some(required) = map.get("required").and_then(Value::as_array) {
            self.required
                .extend(required.iter().filter_map(Value::as_str));
        }
        if let Some(ap) = map.get("additionalProperties").filter(|v| v.is_object()) {
            self.additional.get_or_insert(ap);
        }
        if depth < MAX_REF_HOPS {
            if let Some(Value::Array(members)) = map.get("allOf") {
                for m in members {
                    self.collect(m, root, depth + 1);
                }
            }
        }
    }
}

fn object_shape<'a>(
    schema: &'a Value,
    root: &'a Value,
    value: &Map<String, Value>,
) -> Option<ObjectShape<'a>> {
    let shape = ObjectShape::of(schema, root);
    if !shape.properties.is_empty() || shape.additional.is_some() {
        return Some(shape);
    }
    // A union: take the first alternative that declares every key the value has and whose
    // required keys are all there (strict mode sends every key, some as null).
    let map = schema.as_object()?;
    let branches = map
        .get("anyOf")
        .or_else(|| map.get("oneOf"))
        .and_then(Value::as_array)?;
    branches.iter().find_map(|branch| {
        let shape = ObjectShape::of(branch, root);
        let fits = !shape.properties.is_empty()
            && value.keys().all(|k| shape.property(k).is_some())
            && shape.required.iter().all(|r| value.contains_key(*r));
        fits.then_some(shape)
    })
}

struct ArrayShape<'a> {
    prefix: Vec<&'a Value>,
    items: Option<&'a Value>,
}

/// The items an array schema declares; for a union, those of its first alternative that
/// declares any (each alternative read once, however many paths reach it).
fn array_shape<'a>(schema: &'a Value, root: &'a Value) -> Option<ArrayShape<'a>> {
    array_shape_in(schema, root, &mut HashSet::new(), 0)
}

fn array_shape_in<'a>(
    schema: &'a Value,
    root: &'a Value,
    tried: &mut HashSet<*const Value>,
    depth: usize,
) -> Option<ArrayShape<'a>> {
    if depth > MAX_REF_HOPS || !tried.insert(schema) {
        return None;
    }
    let map = schema.as_object()?;
    let prefix: Vec<&Value> = map
        .get("prefixItems")
        .and_then(Value::as_array)
        .map(|p| p.iter().collect())
        .unwrap_or_default();
    let items = map.get("items").filter(|i| i.is_object());
    if !prefix.is_empty() || items.is_some() {
        return Some(ArrayShape { prefix, items });
    }
    let branches = map
        .get("anyOf")
        .or_else(|| map.get("oneOf"))
        .and_then(Value::as_array)?;
    branches
        .iter()
        .find_map(|b| array_shape_in(deref(root, b), root, tried, depth + 1))
}
