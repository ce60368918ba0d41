//! The keyword groups compared at one place of two schemas (types, values, bounds, text rules,
//! closedness, annotations, what is not judged), and the canonical text that decides whether two
//! schemas are the same.

use super::*;

pub(super) fn description(schema: &Value) -> Option<&str> {
    schema.get("description").and_then(Value::as_str)
}

pub(super) fn required(m: &Map<String, Value>) -> BTreeSet<String> {
    m.get("required")
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

pub(super) fn annotations(
    o: &Map<String, Value>,
    n: &Map<String, Value>,
    found: &mut Vec<Found<'_>>,
) {
    if o.get("title") != n.get("title") {
        found.push(Found::new(
            DESCRIPTION_CHANGED,
            Effect::Annotates,
            "title changed".into(),
            Some("title"),
        ));
    }
    if o.get("default") != n.get("default") {
        found.push(Found::new(
            DEFAULT_CHANGED,
            Effect::Annotates,
            format!(
                "default changed from {} to {}",
                shown(o.get("default")),
                shown(n.get("default"))
            ),
            Some("default"),
        ));
    }
    for key in ["examples", "deprecated", "readOnly", "writeOnly"] {
        if o.get(key).map(canonical) != n.get(key).map(canonical) {
            found.push(Found::new(
                ANNOTATION_CHANGED,
                Effect::Annotates,
                format!("`{key}` changed"),
                Some(key),
            ));
        }
    }
}

pub(super) fn shown(value: Option<&Value>) -> String {
    match value {
        None => "none".into(),
        Some(v) => format!("`{v}`"),
    }
}

pub(super) const ALL_TYPES: &[&str] = &[
    "null", "boolean", "object", "array", "number", "string", "integer",
];

pub(super) fn type_set(m: &Map<String, Value>) -> Option<BTreeSet<&str>> {
    match m.get("type")? {
        Value::String(t) => Some(BTreeSet::from([t.as_str()])),
        Value::Array(ts) => Some(ts.iter().filter_map(Value::as_str).collect()),
        _ => None,
    }
}

pub(super) fn covered(t: &str, set: &BTreeSet<&str>) -> bool {
    set.contains(t) || (t == "integer" && set.contains("number"))
}

/// `type` as the manifest spells it, in its order.
pub(super) fn type_text(m: &Map<String, Value>) -> String {
    match m.get("type") {
        Some(Value::String(t)) => format!("`{t}`"),
        Some(Value::Array(ts)) => format!(
            "`[{}]`",
            ts.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        _ => "any type".into(),
    }
}

pub(super) fn types(o: &Map<String, Value>, n: &Map<String, Value>, found: &mut Vec<Found<'_>>) {
    let (to, tn) = (type_set(o), type_set(n));
    let all: BTreeSet<&str> = ALL_TYPES.iter().copied().collect();
    let (so, sn) = (to.unwrap_or(all.clone()), tn.unwrap_or(all));
    let lost = so.iter().any(|t| !covered(t, &sn));
    let gained = sn.iter().any(|t| !covered(t, &so));
    let (code, effect, verb) = match (lost, gained) {
        (false, false) => return,
        (true, false) => (TYPE_NARROWED, Effect::Narrows, "narrowed"),
        (false, true) => (TYPE_WIDENED, Effect::WidensTypes, "widened"),
        (true, true) => (TYPE_CHANGED, Effect::Changes, "changed"),
    };
    found.push(Found::new(
        code,
        effect,
        format!("type {verb} from {} to {}", type_text(o), type_text(n)),
        Some("type"),
    ));
}

/// `enum` and `const` as one set of allowed values.
pub(super) fn value_set(m: &Map<String, Value>) -> Option<Vec<(String, &Value)>> {
    if let Some(c) = m.get("const") {
        return Some(vec![(canonical(c), c)]);
    }
    m.get("enum")
        .and_then(Value::as_array)
        .map(|vs| vs.iter().map(|v| (canonical(v), v)).collect())
}

pub(super) fn values(o: &Map<String, Value>, n: &Map<String, Value>, found: &mut Vec<Found<'_>>) {
    let keyword = |m: &Map<String, Value>| {
        if m.contains_key("const") {
            "const"
        } else {
            "enum"
        }
    };
    let list = |vs: &[&&Value]| {
        vs.iter()
            .map(|v| format!("`{v}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match (value_set(o), value_set(n)) {
        (None, None) => {}
        (Some(_), None) => found.push(Found::new(
            ENUM_REMOVED,
            Effect::WidensTypes,
            format!("no longer restricted to the values of its `{}`", keyword(o)),
            None,
        )),
        (None, Some(vn)) => found.push(Found::new(
            ENUM_ADDED,
            Effect::Narrows,
            format!(
                "now restricted to {}",
                list(&vn.iter().map(|(_, v)| v).collect::<Vec<_>>())
            ),
            Some(keyword(n)),
        )),
        (Some(vo), Some(vn)) => {
            let removed: Vec<&&Value> = vo
                .iter()
                .filter(|(c, _)| !vn.iter().any(|(d, _)| d == c))
                .map(|(_, v)| v)
                .collect();
            let added: Vec<&&Value> = vn
                .iter()
                .filter(|(c, _)| !vo.iter().any(|(d, _)| d == c))
                .map(|(_, v)| v)
                .collect();
            if !removed.is_empty() {
                found.push(Found {
                    code: ENUM_VALUE_REMOVED,
                    // The generated enum loses its variant too.
                    effect: Effect::Changes,
                    message: format!(
                        "{} {} removed",
                        if removed.len() == 1 {
                            "value"
                        } else {
                            "values"
                        },
                        list(&removed)
                    ),
                    keyword: Some(keyword(n)),
                    old_label: "before".into(),
                    new_label: "now".into(),
                });
            }
            if !added.is_empty() {
                found.push(Found::new(
                    ENUM_VALUE_ADDED,
                    Effect::Widens,
                    format!(
                        "{} {} added",
                        if added.len() == 1 { "value" } else { "values" },
                        list(&added)
                    ),
                    Some(keyword(n)),
                ));
            }
        }
    }
}

pub(super) fn bounds(o: &Map<String, Value>, n: &Map<String, Value>, found: &mut Vec<Found<'_>>) {
    for &(key, upper) in BOUNDS {
        let (bo, bn) = (o.get(key), n.get(key));
        let (vo, vn) = (bo.and_then(Value::as_f64), bn.and_then(Value::as_f64));
        let tightened = match (vo, vn) {
            (None, None) => continue,
            (Some(a), Some(b)) if a == b => continue,
            (None, Some(_)) => true,
            (Some(_), None) => false,
            (Some(a), Some(b)) => (upper && b < a) || (!upper && b > a),
        };
        let message = match (bo, bn) {
            (None, Some(b)) => format!("`{key}: {b}` added"),
            (Some(a), None) => format!("`{key}: {a}` removed"),
            (Some(a), Some(b)) => {
                let verb = if vn < vo { "lowered" } else { "raised" };
                format!("`{key}` {verb} from {a} to {b}")
            }
            (None, None) => continue,
        };
        found.push(bound(tightened, message, key));
    }
    let (mo, mn) = (
        o.get("multipleOf").and_then(Value::as_f64),
        n.get("multipleOf").and_then(Value::as_f64),
    );
    if mo != mn {
        let tightened = match (mo, mn) {
            (Some(a), Some(b)) => b == 0.0 || (a / b).fract() != 0.0,
            (None, _) => true,
            (_, None) => false,
        };
        let message = format!(
            "`multipleOf` changed from {} to {}",
            shown(o.get("multipleOf")),
            shown(n.get("multipleOf"))
        );
        found.push(bound(tightened, message, "multipleOf"));
    }
    let unique = |m: &Map<String, Value>| m.get("uniqueItems") == Some(&Value::Bool(true));
    if unique(o) != unique(n) {
        let message = if unique(n) {
            "items must now be unique (`uniqueItems`)"
        } else {
            "items no longer need to be unique (`uniqueItems`)"
        };
        found.push(bound(unique(n), message.into(), "uniqueItems"));
    }
}

pub(super) fn bound(tightened: bool, message: String, key: &str) -> Found<'_> {
    Found::new(
        if tightened {
            BOUND_TIGHTENED
        } else {
            BOUND_LOOSENED
        },
        if tightened {
            Effect::Narrows
        } else {
            Effect::Widens
        },
        message,
        Some(key),
    )
}

pub(super) fn text_rules(
    o: &Map<String, Value>,
    n: &Map<String, Value>,
    found: &mut Vec<Found<'_>>,
) {
    for (key, added, changed, removed) in [
        ("pattern", PATTERN_ADDED, PATTERN_CHANGED, PATTERN_REMOVED),
        ("format", FORMAT_ADDED, FORMAT_CHANGED, FORMAT_REMOVED),
    ] {
        let (a, b) = (o.get(key), n.get(key));
        let (code, effect, message) = match (a, b) {
            (x, y) if x == y => continue,
            (None, Some(b)) => (added, Effect::Narrows, format!("`{key}: {b}` added")),
            (Some(a), None) => (removed, Effect::Widens, format!("`{key}: {a}` removed")),
            (Some(a), Some(b)) => (
                changed,
                Effect::Narrows,
                format!("`{key}` changed from {a} to {b}"),
            ),
            (None, None) => continue,
        };
        found.push(Found::new(code, effect, message, Some(key)));
    }
}

/// `additionalProperties: false` added or removed.
pub(super) fn closedness(o: &Map<String, Value>, n: &Map<String, Value>) -> Option<Found<'static>> {
    let closed =
        |m: &Map<String, Value>| m.get("additionalProperties") == Some(&Value::Bool(false));
    match (closed(o), closed(n)) {
        (false, true) => Some(Found::new(
            OBJECT_CLOSED,
            Effect::Narrows,
            "no longer accepts properties it does not list (`additionalProperties: false`)".into(),
            Some("additionalProperties"),
        )),
        (true, false) => Some(Found::new(
            OBJECT_OPENED,
            Effect::Widens,
            "now accepts properties it does not list".into(),
            Some("additionalProperties"),
        )),
        _ => None,
    }
}

/// Keywords toolc does not compare by meaning (`not`, `allOf`, `if`, `patternProperties`, ...):
/// any difference is reported, as breaking, since toolc cannot tell which way it goes.
/// The same text can mean something else when it holds a `$ref` whose definition changed:
/// `changed_definition` names the first such definition of a value.
pub(super) fn unjudged<'k>(
    o: &'k Map<String, Value>,
    n: &'k Map<String, Value>,
    found: &mut Vec<Found<'k>>,
    mut changed_definition: impl FnMut(&Value) -> Option<String>,
) {
    let mut keys: Vec<&String> = o.keys().collect();
    keys.extend(n.keys().filter(|k| !o.contains_key(*k)));
    for key in keys {
        if UNDERSTOOD.contains(&key.as_str()) {
            continue;
        }
        let message = match (o.get(key), n.get(key)) {
            (Some(old), Some(new)) if canonical(old) == canonical(new) => {
                match changed_definition(old) {
                    Some(reference) => format!(
                        "`{key}` refers to `{reference}`, which changed, and toolc does not compare `{key}` by meaning: it may accept less"
                    ),
                    None => continue,
                }
            }
            _ => format!(
                "`{key}` changed, which toolc does not compare by meaning: it may accept less"
            ),
        };
        found.push(Found::new(
            SCHEMA_CHANGED,
            Effect::Narrows,
            message,
            Some(key),
        ));
    }
}

/// The `$ref`s in `value`, in document order.
pub(super) fn refs_in<'v>(value: &'v Value, out: &mut Vec<&'v str>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("$ref", Value::String(r)) => out.push(r),
                    _ => refs_in(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| refs_in(v, out)),
        _ => {}
    }
}

/// A JSON text of `value` with object keys sorted, so that two schemas that differ only in the
/// order of their keys compare equal.
/// The members of `required`, `enum` and `type` are sets, so their order does not count either.
pub(in crate::diff) fn canonical(value: &Value) -> String {
    fn write(value: &Value, as_set: bool, out: &mut String) {
        match value {
            Value::Object(map) => {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                out.push('{');
                for (i, (k, v)) in entries.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(k.clone()).to_string());
                    out.push(':');
                    write(v, matches!(k.as_str(), "required" | "enum" | "type"), out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                let mut parts: Vec<String> = items
                    .iter()
                    .map(|v| {
                        let mut part = String::new();
                        write(v, false, &mut part);
                        part
                    })
                    .collect();
                if as_set {
                    parts.sort();
                }
                out.push('[');
                out.push_str(&parts.join(","));
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut out = String::new();
    write(value, false, &mut out);
    out
}
