//! Comparing two versions of a tool's `parameters` or `returns` schema by what they accept.
//!
//! Both schemas are walked side by side from the root. At each place, `$ref`s are followed first
//! (so a change inside `$defs` is reported where it is used), then keyword groups are compared
//! as sets or bounds: what the new version stops accepting *narrows* the schema, what it starts
//! accepting *widens* it. Which of the two breaks whom depends on the side: the model writes
//! arguments and code reads them; code writes results and code reads them.

use std::collections::{BTreeSet, HashSet};

use serde_json::{Map, Value};

use super::codes::*;
use super::{label, Change, Impact};
use crate::ir::IrTool;
use crate::Span;
use toolc_core::schema_util::{escape_segment, has_refs, local_pointer, resolve_ref, MAX_REF_HOPS};

mod keywords;

pub(super) use keywords::canonical;
use keywords::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Side {
    Parameters,
    Returns,
}

/// One step from a schema to a part of it, as the user reads it.
#[derive(Clone, Debug)]
enum Step {
    Property(String),
    Items,
    Tuple(usize),
    Extra,
    Alternative(usize),
}

/// Which way a change moves what the schema accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Effect {
    /// Accepts less.
    Narrows,
    /// Accepts more, and the generated types change with it (a wider type, an optional field).
    WidensTypes,
    /// Accepts more; the generated types stay as they were.
    Widens,
    /// Accepts more things that nobody had to send (a new optional property).
    Adds,
    /// Accepts less and other values: old values are refused and the generated types change.
    Changes,
    /// Says something else about the same values (description, default).
    Annotates,
}

impl Effect {
    fn impacts(self, side: Side) -> (Impact, Impact) {
        use Impact::*;
        match (side, self) {
            (_, Effect::Annotates) => (Info, Info),
            (_, Effect::Adds) => (Compatible, Compatible),
            (Side::Parameters, Effect::Narrows) => (Breaking, Compatible),
            (Side::Parameters, Effect::Changes) => (Breaking, Breaking),
            (Side::Parameters, Effect::WidensTypes) => (Compatible, Breaking),
            (Side::Parameters, Effect::Widens) => (Compatible, Compatible),
            // Results are written by executors and handlers (which must satisfy a narrower
            // schema: results are validated) and read by code (which must handle a wider one).
            (
                Side::Returns,
                Effect::Narrows | Effect::Changes | Effect::WidensTypes | Effect::Widens,
            ) => (Compatible, Breaking),
        }
    }

    fn help(self, side: Side) -> Option<&'static str> {
        match (side, self) {
            (Side::Parameters, Effect::Narrows | Effect::Changes) => Some(
                "the model, prompts and saved conversations may still send what the old schema \
                 allowed, and such a call now fails validation: add a new parameter or tool \
                 instead, or keep accepting the old values",
            ),
            (Side::Parameters, Effect::WidensTypes) => Some(
                "executors and browser handlers now receive values they did not before, and the \
                 generated Rust and TypeScript types change",
            ),
            (Side::Returns, Effect::Narrows | Effect::Changes) => Some(
                "executors and browser handlers must now return results that satisfy this; a \
                 result that does not fails validation",
            ),
            (Side::Returns, Effect::WidensTypes | Effect::Widens) => {
                Some("code that reads this result must now handle values it did not get before")
            }
            _ => None,
        }
    }
}

/// Compares one side of two versions of a tool, pushing every change into `out`.
pub(super) fn compare(old: &IrTool, new: &IrTool, side: Side, out: &mut Vec<Change>) {
    let (old_root, new_root) = match side {
        Side::Parameters => (&old.def.parameters, &new.def.parameters),
        Side::Returns => match (&old.def.returns, &new.def.returns) {
            (Some(o), Some(n)) => (o, n),
            _ => return,
        },
    };
    let mut walk = Walk {
        old_tool: old,
        new_tool: new,
        side,
        old_root,
        new_root,
        visited: HashSet::new(),
        out,
    };
    walk.node(
        &mut Vec::new(),
        None,
        Place::new(old_root, String::new()),
        Place::new(new_root, String::new()),
    );
}

/// A schema on one side and its JSON pointer from that side's root.
#[derive(Clone)]
struct Place<'v> {
    schema: &'v Value,
    pointer: String,
}

impl<'v> Place<'v> {
    fn new(schema: &'v Value, pointer: String) -> Place<'v> {
        Place { schema, pointer }
    }

    fn child(&self, schema: &'v Value, segments: &[&str]) -> Place<'v> {
        let mut pointer = self.pointer.clone();
        for segment in segments {
            pointer.push('/');
            pointer.push_str(&escape_segment(segment));
        }
        Place { schema, pointer }
    }
}

static ANY: Value = Value::Bool(true);

/// The keywords of `true`, and of a place that has none.
static NO_KEYWORDS: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);

struct Walk<'a, 'v> {
    old_tool: &'a IrTool,
    new_tool: &'a IrTool,
    side: Side,
    old_root: &'v Value,
    new_root: &'v Value,
    /// Pairs of places already compared: `$ref` cycles end here, and a def used twice is
    /// reported once.
    visited: HashSet<(String, String)>,
    out: &'a mut Vec<Change>,
}

/// The keywords compared by meaning below; any other keyword that differs is reported as a
/// change toolc cannot judge.
const UNDERSTOOD: &[&str] = &[
    "$ref",
    "$defs",
    "definitions",
    "$schema",
    "$id",
    "$comment",
    "description",
    "title",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "type",
    "enum",
    "const",
    "maximum",
    "exclusiveMaximum",
    "maxLength",
    "maxItems",
    "maxProperties",
    "maxContains",
    "minimum",
    "exclusiveMinimum",
    "minLength",
    "minItems",
    "minProperties",
    "minContains",
    "multipleOf",
    "uniqueItems",
    "pattern",
    "format",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "prefixItems",
    "anyOf",
    "oneOf",
];

/// Bounds where a smaller value accepts less (`true`) or more (`false`).
const BOUNDS: &[(&str, bool)] = &[
    ("maximum", true),
    ("exclusiveMaximum", true),
    ("maxLength", true),
    ("maxItems", true),
    ("maxProperties", true),
    ("maxContains", true),
    ("minimum", false),
    ("exclusiveMinimum", false),
    ("minLength", false),
    ("minItems", false),
    ("minProperties", false),
    ("minContains", false),
];

/// What one change says; the walk adds the tool, the place, spans and impacts.
struct Found<'k> {
    code: &'static str,
    effect: Effect,
    message: String,
    /// The keyword whose value is the change (its node is labelled), if any.
    keyword: Option<&'k str>,
    old_label: String,
    new_label: String,
}

impl<'k> Found<'k> {
    /// A change labelled "before" on the old side and "now" on the new one.
    fn new(
        code: &'static str,
        effect: Effect,
        message: String,
        keyword: Option<&'k str>,
    ) -> Found<'k> {
        Found {
            code,
            effect,
            message,
            keyword,
            old_label: "before".into(),
            new_label: "now".into(),
        }
    }
}

impl<'a, 'v> Walk<'a, 'v> {
    fn node(&mut self, path: &mut Vec<Step>, via: Option<String>, old: Place<'v>, new: Place<'v>) {
        // A description beside a `$ref` is the one that counts for the place that has it.
        let descriptions = (description(old.schema), description(new.schema));
        let (old, old_ref) = follow(self.old_root, old);
        let (new, new_ref) = follow(self.new_root, new);
        let via = new_ref.or(old_ref).or(via);
        let descriptions = (
            descriptions.0.or_else(|| description(old.schema)),
            descriptions.1.or_else(|| description(new.schema)),
        );
        if descriptions.0 != descriptions.1 {
            self.push(
                path,
                &via,
                &old,
                &new,
                Found::new(
                    DESCRIPTION_CHANGED,
                    Effect::Annotates,
                    "description changed".into(),
                    Some("description"),
                ),
            );
        }
        if !self
            .visited
            .insert((old.pointer.clone(), new.pointer.clone()))
        {
            return;
        }
        let empty: &'v Map<String, Value> = &NO_KEYWORDS;
        let (o, n) = match (old.schema, new.schema) {
            (Value::Bool(a), Value::Bool(b)) => {
                if a != b {
                    self.whole(path, &via, &old, &new, *b);
                }
                return;
            }
            (Value::Bool(false), _) => return self.whole(path, &via, &old, &new, true),
            (_, Value::Bool(false)) => return self.whole(path, &via, &old, &new, false),
            (o, n) => (
                o.as_object().unwrap_or(empty),
                n.as_object().unwrap_or(empty),
            ),
        };
        let mut found = Vec::new();
        annotations(o, n, &mut found);
        types(o, n, &mut found);
        values(o, n, &mut found);
        bounds(o, n, &mut found);
        text_rules(o, n, &mut found);
        if let Some(f) = closedness(o, n) {
            found.push(f);
        }
        let (old_root, new_root) = (self.old_root, self.new_root);
        unjudged(o, n, &mut found, |value| {
            changed_definition(value, old_root, new_root)
        });
        for f in found {
            self.push(path, &via, &old, &new, f);
        }
        self.properties(path, &via, &old, &new, o, n);
        self.arrays(path, &via, &old, &new, o, n);
        for key in ["anyOf", "oneOf"] {
            self.alternatives(path, &via, &old, &new, o, n, key);
        }
    }

    /// Compares the part `step` leads to on both sides.
    fn descend(
        &mut self,
        path: &mut Vec<Step>,
        step: Step,
        via: &Option<String>,
        old: Place<'v>,
        new: Place<'v>,
    ) {
        path.push(step);
        self.node(path, via.clone(), old, new);
        path.pop();
    }

    /// One side is `false` (accepts nothing) and the other accepts something.
    fn whole(
        &mut self,
        path: &[Step],
        via: &Option<String>,
        old: &Place<'v>,
        new: &Place<'v>,
        now_accepts: bool,
    ) {
        let (effect, message) = if now_accepts {
            (
                Effect::WidensTypes,
                "accepted no value before, and now does",
            )
        } else {
            (Effect::Narrows, "accepts no value any more (`false`)")
        };
        self.push(
            path,
            via,
            old,
            new,
            Found::new(
                if now_accepts {
                    TYPE_WIDENED
                } else {
                    TYPE_NARROWED
                },
                effect,
                message.into(),
                None,
            ),
        );
    }

    #[allow(clippy::too_many_arguments)]
    fn properties(
        &mut self,
        path: &mut Vec<Step>,
        via: &Option<String>,
        old: &Place<'v>,
        new: &Place<'v>,
        o: &'v Map<String, Value>,
        n: &'v Map<String, Value>,
    ) {
        let no_props: &'v Map<String, Value> = &NO_KEYWORDS;
        let props_o = o.get("properties").and_then(Value::as_object);
        let props_n = n.get("properties").and_then(Value::as_object);
        let req_o = required(o);
        let req_n = required(n);
        if props_o.is_none() && props_n.is_none() && req_o.is_empty() && req_n.is_empty() {
            return;
        }
        let (props_o, props_n) = (props_o.unwrap_or(no_props), props_n.unwrap_or(no_props));
        let mut names: Vec<&str> = props_o.keys().map(String::as_str).collect();
        for name in props_n.keys().chain(req_o.iter()).chain(req_n.iter()) {
            if !names.contains(&name.as_str()) {
                names.push(name);
            }
        }
        let closed_new = n.get("additionalProperties") == Some(&Value::Bool(false));
        for name in names {
            let in_old = props_o.contains_key(name) || req_o.contains(name);
            let in_new = props_n.contains_key(name) || req_n.contains(name);
            let (was_required, is_required) = (req_o.contains(name), req_n.contains(name));
            path.push(Step::Property(name.to_owned()));
            let old_child = old.child(props_o.get(name).unwrap_or(&ANY), &["properties", name]);
            let new_child = new.child(props_n.get(name).unwrap_or(&ANY), &["properties", name]);
            match (in_old, in_new) {
                (true, true) => {
                    if was_required && !is_required {
                        // A field with a default keeps its plain type in the generated code.
                        let defaulted = props_n.get(name).and_then(|s| s.get("default")).is_some();
                        let effect = if defaulted {
                            Effect::Widens
                        } else {
                            Effect::WidensTypes
                        };
                        let mut f = self.found_child(
                            path,
                            via,
                            &old_child,
                            Some(&new_child),
                            Found {
                                code: PROPERTY_NOW_OPTIONAL,
                                effect,
                                message: "now optional".into(),
                                keyword: None,
                                old_label: "was required".into(),
                                new_label: "optional now".into(),
                            },
                        );
                        if let Some(l) = &mut f.old {
                            l.span = self
                                .required_span(Which::Old, old, o, name)
                                .unwrap_or(l.span);
                        }
                        self.out.push(f);
                    } else if !was_required && is_required {
                        let mut f = self.found_child(
                            path,
                            via,
                            &old_child,
                            Some(&new_child),
                            Found {
                                code: PROPERTY_NOW_REQUIRED,
                                effect: Effect::Narrows,
                                message: "now required".into(),
                                keyword: None,
                                old_label: "was optional".into(),
                                new_label: "required now".into(),
                            },
                        );
                        if let Some(l) = &mut f.new {
                            l.span = self
                                .required_span(Which::New, new, n, name)
                                .unwrap_or(l.span);
                        }
                        self.out.push(f);
                    }
                    self.node(path, via.clone(), old_child, new_child);
                }
                (true, false) => {
                    let (effect, message) = match (self.side, closed_new) {
                        (Side::Parameters, true) => (
                            Effect::Changes,
                            "removed, and the object is closed: a call that still sends it fails",
                        ),
                        (Side::Parameters, false) => (
                            Effect::WidensTypes,
                            "removed (a call that still sends it is accepted, and it is ignored)",
                        ),
                        (Side::Returns, _) => (Effect::Widens, "removed"),
                    };
                    let mut f = self.found_child(
                        path,
                        via,
                        &old_child,
                        None,
                        Found {
                            code: PROPERTY_REMOVED,
                            effect,
                            message: message.into(),
                            keyword: None,
                            old_label: "removed".into(),
                            new_label: String::new(),
                        },
                    );
                    f.help = Some(
                        match self.side {
                            Side::Parameters if closed_new => {
                                "the model, prompts and saved conversations may still send it, and \
                             executors and handlers that read it no longer compile"
                            }
                            Side::Parameters => {
                                "executors and handlers that read it no longer compile"
                            }
                            Side::Returns => "code that reads it no longer finds it",
                        }
                        .into(),
                    );
                    self.out.push(f);
                }
                (false, true) => {
                    let (code, effect, message) = if is_required {
                        (
                            REQUIRED_PROPERTY_ADDED,
                            Effect::Narrows,
                            "added as required",
                        )
                    } else {
                        (PROPERTY_ADDED, Effect::Adds, "added as optional")
                    };
                    let mut f = self.found_child(
                        path,
                        via,
                        &old_child,
                        Some(&new_child),
                        Found {
                            code,
                            effect,
                            message: message.into(),
                            keyword: None,
                            old_label: String::new(),
                            new_label: "new".into(),
                        },
                    );
                    f.old = None;
                    self.out.push(f);
                }
                (false, false) => {}
            }
            path.pop();
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn arrays(
        &mut self,
        path: &mut Vec<Step>,
        via: &Option<String>,
        old: &Place<'v>,
        new: &Place<'v>,
        o: &'v Map<String, Value>,
        n: &'v Map<String, Value>,
    ) {
        if o.contains_key("items") || n.contains_key("items") {
            self.descend(
                path,
                Step::Items,
                via,
                old.child(o.get("items").unwrap_or(&ANY), &["items"]),
                new.child(n.get("items").unwrap_or(&ANY), &["items"]),
            );
        }
        let tuple = |m: &'v Map<String, Value>| {
            m.get("prefixItems")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[])
        };
        let (to, tn) = (tuple(o), tuple(n));
        for i in 0..to.len().max(tn.len()) {
            let index = i.to_string();
            self.descend(
                path,
                Step::Tuple(i),
                via,
                old.child(to.get(i).unwrap_or(&ANY), &["prefixItems", &index]),
                new.child(tn.get(i).unwrap_or(&ANY), &["prefixItems", &index]),
            );
        }
        // `additionalProperties` as a schema: compared like a property of every other name.
        let extra = |m: &'v Map<String, Value>| match m.get("additionalProperties") {
            Some(Value::Bool(false)) => None,
            Some(v) => Some(v),
            None => Some(&ANY),
        };
        if let (Some(eo), Some(en)) = (extra(o), extra(n)) {
            if eo != en {
                self.descend(
                    path,
                    Step::Extra,
                    via,
                    old.child(eo, &["additionalProperties"]),
                    new.child(en, &["additionalProperties"]),
                );
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn alternatives(
        &mut self,
        path: &mut Vec<Step>,
        via: &Option<String>,
        old: &Place<'v>,
        new: &Place<'v>,
        o: &'v Map<String, Value>,
        n: &'v Map<String, Value>,
        key: &'static str,
    ) {
        let list = |m: &'v Map<String, Value>| m.get(key).and_then(Value::as_array);
        let (lo, ln) = match (list(o), list(n)) {
            (None, None) => return,
            (Some(lo), Some(ln)) => (lo, ln),
            (lo, _) => {
                let effect = if lo.is_some() {
                    Effect::WidensTypes
                } else {
                    Effect::Narrows
                };
                let message = if lo.is_some() {
                    format!("no longer restricted by `{key}`")
                } else {
                    format!("now restricted by `{key}`")
                };
                self.push(
                    path,
                    via,
                    old,
                    new,
                    Found::new(
                        if lo.is_some() {
                            TYPE_WIDENED
                        } else {
                            TYPE_NARROWED
                        },
                        effect,
                        message,
                        Some(key),
                    ),
                );
                return;
            }
        };
        // Alternatives that are the same on both sides pair up wherever they are; the rest pair
        // in order when as many remain on each side, and are removed or added otherwise.
        let canon_o: Vec<String> = lo.iter().map(canonical).collect();
        let canon_n: Vec<String> = ln.iter().map(canonical).collect();
        let mut unmatched_new: Vec<usize> = (0..ln.len()).collect();
        let mut unmatched_old = Vec::new();
        // The same text holding a `$ref` can still mean something else: such pairs are compared.
        let mut same_with_refs = Vec::new();
        for (i, c) in canon_o.iter().enumerate() {
            match unmatched_new.iter().position(|&j| canon_n[j] == *c) {
                Some(at) => {
                    let j = unmatched_new.remove(at);
                    if has_refs(&lo[i]) {
                        same_with_refs.push((i, j));
                    }
                }
                None => unmatched_old.push(i),
            }
        }
        let paired = unmatched_old.len() == unmatched_new.len();
        let in_order = unmatched_old
            .iter()
            .copied()
            .zip(unmatched_new.iter().copied());
        let compared: Vec<(usize, usize)> = if paired {
            same_with_refs.into_iter().chain(in_order).collect()
        } else {
            same_with_refs
        };
        for (i, j) in compared {
            self.descend(
                path,
                Step::Alternative(j),
                via,
                old.child(&lo[i], &[key, &i.to_string()]),
                new.child(&ln[j], &[key, &j.to_string()]),
            );
        }
        if paired {
            return;
        }
        for &i in &unmatched_old {
            let old_alt = old.child(&lo[i], &[key, &i.to_string()]);
            let f = self.found_child(
                path,
                via,
                &old_alt,
                None,
                Found {
                    code: ALTERNATIVE_REMOVED,
                    effect: Effect::Narrows,
                    message: format!("alternative {} of `{key}` removed", i + 1),
                    keyword: None,
                    old_label: "removed".into(),
                    new_label: String::new(),
                },
            );
            self.out.push(f);
        }
        for &j in &unmatched_new {
            let new_alt = new.child(&ln[j], &[key, &j.to_string()]);
            let mut f = self.found_child(
                path,
                via,
                old,
                Some(&new_alt),
                Found {
                    code: ALTERNATIVE_ADDED,
                    effect: Effect::WidensTypes,
                    message: format!("alternative {} of `{key}` added", j + 1),
                    keyword: None,
                    old_label: String::new(),
                    new_label: "new".into(),
                },
            );
            f.old = None;
            self.out.push(f);
        }
    }

    fn push(
        &mut self,
        path: &[Step],
        via: &Option<String>,
        old: &Place<'v>,
        new: &Place<'v>,
        found: Found<'_>,
    ) {
        let change = self.found_child(path, via, old, Some(new), found);
        self.out.push(change);
    }

    /// Makes the change: the place in words, the spans, the impacts of its effect on this side.
    fn found_child(
        &self,
        path: &[Step],
        via: &Option<String>,
        old: &Place<'v>,
        new: Option<&Place<'v>>,
        found: Found<'_>,
    ) -> Change {
        let (for_model, for_code) = found.effect.impacts(self.side);
        let mut message = format!(
            "`{}`: {}: {}",
            self.new_tool.def.name,
            place(self.side, path),
            found.message
        );
        if let Some(reference) = via {
            message.push_str(&format!(" (through `{reference}`)"));
        }
        let old_label = label(
            self.span(Which::Old, &old.pointer, found.keyword),
            &found.old_label,
        );
        let new_label = new.and_then(|new| {
            label(
                self.span(Which::New, &new.pointer, found.keyword),
                &found.new_label,
            )
        });
        Change {
            code: found.code,
            for_model,
            for_code,
            tool: self.new_tool.def.name.clone(),
            message,
            old: old_label.filter(|_| !found.old_label.is_empty()),
            new: new_label,
            help: found.effect.help(self.side).map(str::to_owned),
        }
    }

    /// The span of `name` in the `required` list of the object at `place`.
    fn required_span(
        &self,
        which: Which,
        place: &Place<'v>,
        object: &Map<String, Value>,
        name: &str,
    ) -> Option<Span> {
        let index = object
            .get("required")?
            .as_array()?
            .iter()
            .position(|n| n.as_str() == Some(name))?;
        self.span(which, &format!("{}/required/{index}", place.pointer), None)
    }

    /// The span of the keyword's value at `pointer`, or of the schema there, or of the nearest
    /// enclosing node that has one (a property only listed in `required`), or the tool's name.
    fn span(&self, which: Which, pointer: &str, keyword: Option<&str>) -> Option<Span> {
        let tool = match which {
            Which::Old => self.old_tool,
            Which::New => self.new_tool,
        };
        let lookup = |p: &str| match self.side {
            Side::Parameters => tool.parameters_span(p),
            Side::Returns => tool.returns_span(p),
        };
        if let Some(key) = keyword {
            if let Some(span) = lookup(&format!("{pointer}/{}", escape_segment(key))) {
                return Some(span);
            }
        }
        let mut p = pointer;
        loop {
            if let Some(span) = lookup(p) {
                return Some(span);
            }
            match p.rfind('/') {
                Some(at) => p = &p[..at],
                None => return tool.origin.name,
            }
        }
    }
}

#[derive(Clone, Copy)]
enum Which {
    Old,
    New,
}

/// `parameter `filters.price.max``, `the arguments`, `result field `products[].sku``.
fn place(side: Side, path: &[Step]) -> String {
    if path.is_empty() {
        return match side {
            Side::Parameters => "the arguments".into(),
            Side::Returns => "the result".into(),
        };
    }
    let mut text = String::new();
    for step in path {
        match step {
            Step::Property(name) => {
                if !text.is_empty() {
                    text.push('.');
                }
                text.push_str(name);
            }
            Step::Items => text.push_str("[]"),
            Step::Tuple(i) => text.push_str(&format!("[{i}]")),
            Step::Extra => text.push_str(if text.is_empty() { "*" } else { ".*" }),
            Step::Alternative(i) => text.push_str(&format!("(alternative {})", i + 1)),
        }
    }
    match side {
        Side::Parameters => format!("parameter `{text}`"),
        Side::Returns => format!("result field `{text}`"),
    }
}

/// The first definition that `value`'s `$ref`s lead to, directly or through other definitions,
/// whose text differs between the two roots (or that only one of them has). Each reference is
/// followed once.
fn changed_definition(value: &Value, old_root: &Value, new_root: &Value) -> Option<String> {
    let mut pending = Vec::new();
    refs_in(value, &mut pending);
    pending.reverse();
    let mut followed = HashSet::new();
    while let Some(reference) = pending.pop() {
        if !followed.insert(reference) {
            continue;
        }
        match (
            resolve_ref(old_root, reference),
            resolve_ref(new_root, reference),
        ) {
            (Some(o), Some(n)) if canonical(o) == canonical(n) => {
                let at = pending.len();
                refs_in(o, &mut pending);
                pending[at..].reverse();
            }
            (None, None) => {}
            _ => return Some(reference.to_owned()),
        }
    }
    None
}

/// Follows same-document `$ref`s from `place`; returns where they lead and the last reference
/// followed. A reference that leads nowhere stays where it is (the checks reported it).
fn follow<'v>(root: &'v Value, mut place: Place<'v>) -> (Place<'v>, Option<String>) {
    let mut last = None;
    for _ in 0..MAX_REF_HOPS {
        let Some(reference) = place.schema.get("$ref").and_then(Value::as_str) else {
            break;
        };
        let Some(pointer) = local_pointer(reference) else {
            break;
        };
        let target = if pointer.is_empty() {
            Some(root)
        } else {
            root.pointer(&pointer)
        };
        let Some(target) = target else { break };
        last = Some(reference.to_owned());
        place = Place::new(target, pointer.into_owned());
    }
    (place, last)
}
