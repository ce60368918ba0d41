//! Events to the tree: mappings and sequences collected on shared stacks, duplicate keys found
//! (by scan for small mappings, by index for large ones), aliases expanded under the node
//! budget, plain scalars typed by the YAML 1.2 core schema. Both scanners feed it.

use saphyr_parser::{Event, ScalarStyle};

use super::{Limits, Node, Value};
use crate::diagnostic::Diagnostic;
use crate::source::{FileId, Span};

enum Frame {
    /// A sequence whose items so far are `Builder::items[from..]`.
    Seq {
        start: usize,
        anchor: usize,
        from: usize,
    },
    /// A mapping whose entries so far are `Builder::entries[from..]`.
    Map {
        start: usize,
        anchor: usize,
        from: usize,
        key: Option<Node>,
        /// For large mappings: each key's [`key_identity`] → its entry, so that finding a
        /// duplicate stays constant time (a scan of every earlier key made a mapping of n keys
        /// cost n², seconds for a few tens of thousands).
        index: Option<std::collections::HashMap<String, usize>>,
    },
}

/// Mappings up to this many keys are searched for a duplicate by a scan.
const SCANNED_KEYS: usize = 16;

/// What makes two keys the same key, as text; `None` for a key that equals no other (a
/// non-empty list or mapping: its items carry their own positions).
fn key_identity(value: &Value) -> Option<String> {
    Some(match value {
        Value::Null => "~".into(),
        Value::Bool(b) => format!("b{b}"),
        // `0.0` and `-0.0` are equal numbers with different texts.
        Value::Number(n) if n.as_f64() == Some(0.0) && n.is_f64() => "#0.0".into(),
        Value::Number(n) => format!("#{n}"),
        Value::String(s) => format!("s{s}"),
        Value::Seq(items) if items.is_empty() => "[]".into(),
        Value::Map(entries) if entries.is_empty() => "{}".into(),
        Value::Seq(_) | Value::Map(_) => return None,
    })
}

pub(super) enum Flow {
    Continue,
    Stop,
    Done,
}

pub(super) struct Builder<'a> {
    file: FileId,
    /// Added to the fast scanner's offsets, which count from the start of the text parsed.
    base: usize,
    limits: Limits,
    stack: Vec<Frame>,
    /// The items and entries of every open collection, innermost last: a collection is moved
    /// into a vector of its exact size when it ends, instead of growing its own vector by
    /// doubling (which reallocated and copied most of the tree once more while it was built).
    items: Vec<Node>,
    entries: Vec<(Node, Node)>,
    anchors: Vec<(usize, Node)>,
    nodes: usize,
    pub(super) errors: &'a mut Vec<Diagnostic>,
    pub(super) root: Option<Node>,
    documents: usize,
}

impl<'a> Builder<'a> {
    pub(super) fn new(
        file: FileId,
        base: usize,
        limits: Limits,
        errors: &'a mut Vec<Diagnostic>,
    ) -> Self {
        Builder {
            file,
            base,
            limits,
            stack: Vec::new(),
            items: Vec::new(),
            entries: Vec::new(),
            anchors: Vec::new(),
            nodes: 0,
            errors,
            root: None,
            documents: 0,
        }
    }

    fn span(&self, start: usize, end: usize) -> Span {
        Span::new(self.file, start, end)
    }

    pub(super) fn event(&mut self, event: Event<'_>, start: usize, end: usize) -> Flow {
        match event {
            Event::StreamStart | Event::Nothing | Event::DocumentEnd => Flow::Continue,
            Event::StreamEnd => Flow::Done,
            Event::DocumentStart(_) => {
                self.documents += 1;
                if self.documents > 1 {
                    self.errors.push(
                        Diagnostic::error(crate::codes::YAML_SYNTAX, "a manifest holds one YAML document, this is a second one")
                            .at(self.span(start, end), "second document starts here")
                            .help("put the tools of this document in their own file, or merge them into the first document's `tools` list"),
                    );
                    return Flow::Stop;
                }
                Flow::Continue
            }
            Event::Alias(id) => {
                let Some(node) = self
                    .anchors
                    .iter()
                    .rev()
                    .find(|(a, _)| *a == id)
                    .map(|(_, n)| n)
                else {
                    self.errors.push(
                        Diagnostic::error(crate::codes::YAML_SYNTAX, "alias to an unknown anchor")
                            .at(
                                self.span(start, end),
                                "no anchor with this name was defined before",
                            )
                            .help("define the anchor (`&name`) before using the alias (`*name`)"),
                    );
                    return Flow::Stop;
                };
                let mut node = node.clone();
                let size = node.count();
                if !self.count(size, start, end) {
                    return Flow::Stop;
                }
                // The alias stands where it is written, for error messages.
                node.span = self.span(start, end);
                self.insert(node)
            }
            Event::Scalar(text, style, anchor, tag) => {
                if !self.count(1, start, end) {
                    return Flow::Stop;
                }
                let value = match (&tag, style) {
                    (Some(tag), _) if tag.handle == "tag:yaml.org,2002:" || tag.handle == "!!" => {
                        match tag.suffix.as_str() {
                            "str" => Value::String(text.into_owned()),
                            _ => resolve_plain(&text),
                        }
                    }
                    (_, ScalarStyle::Plain) => resolve_plain(&text),
                    _ => Value::String(text.into_owned()),
                };
                let node = Node {
                    value,
                    span: self.span(start, end),
                };
                if anchor > 0 {
                    self.anchors.push((anchor, node.clone()));
                }
                self.insert(node)
            }
            Event::SequenceStart(anchor, _) => {
                if !self.open(start, end) {
                    return Flow::Stop;
                }
                self.stack.push(Frame::Seq {
                    start,
                    anchor,
                    from: self.items.len(),
                });
                Flow::Continue
            }
            Event::MappingStart(anchor, _) => {
                if !self.open(start, end) {
                    return Flow::Stop;
                }
                self.stack.push(Frame::Map {
                    start,
                    anchor,
                    from: self.entries.len(),
                    key: None,
                    index: None,
                });
                Flow::Continue
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let frame = self
                    .stack
                    .pop()
                    .expect("parser balances start and end events");
                let (node, anchor) = match frame {
                    Frame::Seq {
                        start: s,
                        anchor,
                        from,
                    } => (
                        Node {
                            value: Value::Seq(self.items.drain(from..).collect()),
                            span: self.span(s, end.max(s)),
                        },
                        anchor,
                    ),
                    Frame::Map {
                        start: s,
                        anchor,
                        from,
                        ..
                    } => (
                        Node {
                            value: Value::Map(self.entries.drain(from..).collect()),
                            span: self.span(s, end.max(s)),
                        },
                        anchor,
                    ),
                };
                if anchor > 0 {
                    self.anchors.push((anchor, node.clone()));
                }
                self.insert(node)
            }
        }
    }

    fn open(&mut self, start: usize, end: usize) -> bool {
        if !self.count(1, start, end) {
            return false;
        }
        if self.stack.len() >= self.limits.max_depth {
            self.errors.push(
                Diagnostic::error(
                    crate::codes::TOO_DEEP,
                    format!("nesting deeper than {} levels", self.limits.max_depth),
                )
                .at(self.span(start, end), "this level is one too many")
                .help("flatten the structure or move shared parts into `$defs` and refer to them with `$ref`"),
            );
            return false;
        }
        true
    }

    fn count(&mut self, n: usize, start: usize, end: usize) -> bool {
        self.nodes = self.nodes.saturating_add(n);
        if self.nodes > self.limits.max_nodes {
            self.errors.push(
                Diagnostic::error(
                    crate::codes::TOO_LARGE,
                    format!("the document expands to more than {} nodes", self.limits.max_nodes),
                )
                .at(self.span(start, end), "the limit was passed here")
                .help("aliases (`*name`) are expanded where they are used; an alias of an alias multiplies the size. Write the values out or use `$ref`"),
            );
            return false;
        }
        true
    }

    fn insert(&mut self, node: Node) -> Flow {
        match self.stack.last_mut() {
            None => {
                self.root = Some(node);
                Flow::Continue
            }
            Some(Frame::Seq { .. }) => {
                self.items.push(node);
                Flow::Continue
            }
            Some(Frame::Map {
                from, key, index, ..
            }) => {
                let from = *from;
                match key.take() {
                    None => *key = Some(node),
                    Some(k) => {
                        let entries = &self.entries[from..];
                        if index.is_none() && entries.len() >= SCANNED_KEYS {
                            let built = entries
                                .iter()
                                .enumerate()
                                .filter_map(|(i, (e, _))| Some((key_identity(&e.value)?, i)))
                                .collect();
                            *index = Some(built);
                        }
                        let earlier = match index {
                            Some(index) => {
                                let identity = key_identity(&k.value);
                                identity.and_then(|identity| match index.entry(identity) {
                                    std::collections::hash_map::Entry::Occupied(at) => {
                                        entries.get(*at.get())
                                    }
                                    std::collections::hash_map::Entry::Vacant(slot) => {
                                        slot.insert(entries.len());
                                        None
                                    }
                                })
                            }
                            None => entries.iter().find(|(e, _)| e.value == k.value),
                        };
                        if let Some((first, _)) = earlier {
                            let shown = match &k.value {
                                Value::String(s) => format!("`{s}`"),
                                _ => "this key".into(),
                            };
                            let diagnostic = Diagnostic::error(
                                crate::codes::DUPLICATE_KEY,
                                format!("duplicate key {shown} in one mapping"),
                            )
                            .at(k.span, "written again here")
                            .also(first.span, "first written here")
                            .help("YAML would silently keep only one of the values; remove or rename one of them");
                            self.errors.push(diagnostic);
                        } else {
                            self.entries.push((k, node));
                        }
                    }
                }
                Flow::Continue
            }
        }
    }
}

/// Resolves a plain scalar by the YAML 1.2 core schema. `yes`, `no`, `on`, `off` stay strings.
fn resolve_plain(text: &str) -> Value {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        _ => {}
    }
    let bytes = text.as_bytes();
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    if digits(unsigned) {
        if let Ok(i) = text.parse::<i64>() {
            return Value::Number(i.into());
        }
        if let Ok(u) = text.trim_start_matches('+').parse::<u64>() {
            return Value::Number(u.into());
        }
    }
    if let Some(hex) = text.strip_prefix("0x") {
        if let Ok(u) = u64::from_str_radix(hex, 16) {
            return Value::Number(u.into());
        }
    }
    if let Some(oct) = text.strip_prefix("0o") {
        if let Ok(u) = u64::from_str_radix(oct, 8) {
            return Value::Number(u.into());
        }
    }
    let looks_float = bytes
        .first()
        .is_some_and(|b| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.'))
        && unsigned
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-' | b'+'))
        && unsigned.bytes().any(|b| b.is_ascii_digit());
    if looks_float {
        if let Ok(f) = text.parse::<f64>() {
            if let Some(n) = serde_json::Number::from_f64(f) {
                return Value::Number(n);
            }
        }
    }
    // `.inf` and `.nan` have no JSON form; keeping them as strings lets the schema checks say so.
    Value::String(text.to_owned())
}

impl<'t> super::fast::Sink<'t> for Builder<'_> {
    fn event(&mut self, event: Event<'t>, start: usize, end: usize) -> bool {
        let (start, end) = (self.base + start, self.base + end);
        !matches!(Builder::event(self, event, start, end), Flow::Stop)
    }
}
