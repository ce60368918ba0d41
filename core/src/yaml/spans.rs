//! The spans of a YAML tree without its values: what later stages need from a tool's schemas
//! (where a keyword is written, found by JSON Pointer) at about a quarter of the memory of the
//! [`Node`] tree, which is dropped once the tool is loaded. At 10,000 tools the kept trees were
//! the largest part of `toolc check`'s memory.

use crate::source::{FileId, Span};

use super::{Node, Value};

/// The spans of a node and of every node below it, with the mapping keys needed to follow a
/// JSON Pointer ([`SpanTree::pointer`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpanTree {
    file: FileId,
    /// The nodes in pre-order: a node's children follow it, up to its `after`.
    nodes: Box<[Entry]>,
    /// The text of every string key, one after the other.
    keys: Box<str>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    start: u32,
    end: u32,
    /// The key's span, for a mapping's member.
    key_start: u32,
    key_end: u32,
    /// Where the key's text is in [`SpanTree::keys`]; `NO_TEXT` when the key is not a string.
    key_text: u32,
    key_len: u32,
    /// The index just past this node's subtree.
    after: u32,
    kind: Kind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Scalar,
    Seq,
    Map,
}

/// `key_text` of a member whose key is not a string, and of items that have no key.
const NO_TEXT: u32 = u32::MAX;

/// Offsets are below the file size limit; a larger one (only with limits raised past 4 GiB)
/// saturates rather than wraps.
fn offset(at: usize) -> u32 {
    u32::try_from(at).unwrap_or(u32::MAX)
}

impl SpanTree {
    /// The spans of `node` and everything below it.
    pub fn new(node: &Node) -> SpanTree {
        let mut nodes = Vec::new();
        let mut keys = String::new();
        add(node, None, &mut nodes, &mut keys);
        SpanTree {
            file: node.span.file,
            nodes: nodes.into_boxed_slice(),
            keys: keys.into_boxed_str(),
        }
    }

    fn span(&self, start: u32, end: u32) -> Span {
        Span::new(self.file, start as usize, end as usize)
    }

    /// The root node's span.
    pub fn root(&self) -> Span {
        let root = &self.nodes[0];
        self.span(root.start, root.end)
    }

    /// Follows a JSON Pointer (RFC 6901), as [`Node::pointer`] does: the span of the node it
    /// names and, for a mapping's member, the span of its key.
    pub fn pointer(&self, pointer: &str) -> Option<(Option<Span>, Span)> {
        let mut at = 0usize;
        let mut key = None;
        if !pointer.is_empty() {
            for raw in pointer.strip_prefix('/')?.split('/') {
                let segment = crate::schema_util::unescape_segment(raw);
                let node = &self.nodes[at];
                let mut child = at + 1;
                match node.kind {
                    Kind::Map => loop {
                        if child >= node.after as usize {
                            return None;
                        }
                        let member = &self.nodes[child];
                        if self.key_text(member) == Some(&segment) {
                            key = Some(self.span(member.key_start, member.key_end));
                            break;
                        }
                        child = member.after as usize;
                    },
                    Kind::Seq => {
                        let index = segment.parse::<usize>().ok()?;
                        for _ in 0..index {
                            if child >= node.after as usize {
                                return None;
                            }
                            child = self.nodes[child].after as usize;
                        }
                        if child >= node.after as usize {
                            return None;
                        }
                        key = None;
                    }
                    Kind::Scalar => return None,
                }
                at = child;
            }
        }
        let node = &self.nodes[at];
        Some((key, self.span(node.start, node.end)))
    }

    fn key_text(&self, entry: &Entry) -> Option<&str> {
        if entry.key_text == NO_TEXT {
            return None;
        }
        let start = entry.key_text as usize;
        self.keys.get(start..start + entry.key_len as usize)
    }
}

fn add(node: &Node, key: Option<&Node>, nodes: &mut Vec<Entry>, keys: &mut String) {
    let index = nodes.len();
    let (key_start, key_end) = key.map_or((0, 0), |k| (offset(k.span.start), offset(k.span.end)));
    let (key_text, key_len) = match key.and_then(Node::as_str) {
        Some(text) => {
            let at = offset(keys.len());
            keys.push_str(text);
            (at, offset(text.len()))
        }
        None => (NO_TEXT, 0),
    };
    let kind = match &node.value {
        Value::Map(_) => Kind::Map,
        Value::Seq(_) => Kind::Seq,
        _ => Kind::Scalar,
    };
    nodes.push(Entry {
        start: offset(node.span.start),
        end: offset(node.span.end),
        key_start,
        key_end,
        key_text,
        key_len,
        after: 0,
        kind,
    });
    match &node.value {
        Value::Map(entries) => {
            for (k, v) in entries {
                add(v, Some(k), nodes, keys);
            }
        }
        Value::Seq(items) => {
            for item in items {
                add(item, None, nodes, keys);
            }
        }
        _ => {}
    }
    nodes[index].after = offset(nodes.len());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema_util::escape_segment;

    /// Every pointer into `node`, and some that lead nowhere.
    fn pointers(node: &Node, prefix: &str, out: &mut Vec<String>) {
        out.push(prefix.to_owned());
        out.push(format!("{prefix}/missing"));
        out.push(format!("{prefix}/99"));
        match &node.value {
            Value::Map(entries) => {
                for (k, v) in entries {
                    let key = k.as_str().map_or("1".into(), escape_segment);
                    pointers(v, &format!("{prefix}/{key}"), out);
                }
            }
            Value::Seq(items) => {
                for (i, item) in items.iter().enumerate() {
                    pointers(item, &format!("{prefix}/{i}"), out);
                }
            }
            _ => {}
        }
    }

    #[test]
    fn every_pointer_finds_what_the_tree_finds() {
        let text = format!(
            "{}\nextra:\n  a/b~c: {{ x: [1, {{ y: 2 }}, [] ] }}\n  1: not a string key\n  '': empty\n  list:\n    - - deep\n",
            crate::synthetic::manifest(40)
        );
        let mut errors = Vec::new();
        let root = super::super::parse(FileId(3), &text, Default::default(), &mut errors)
            .expect("the text parses");
        assert!(errors.is_empty(), "{errors:?}");
        let tree = SpanTree::new(&root);
        let mut all = Vec::new();
        pointers(&root, "", &mut all);
        all.extend(["/tools/0/name/x".into(), "/tools/x".into(), "tools".into()]);
        assert!(all.len() > 4000, "{} pointers", all.len());
        for pointer in &all {
            let expected = root
                .pointer(pointer)
                .map(|(key, node)| (key.map(|k| k.span), node.span));
            assert_eq!(tree.pointer(pointer), expected, "{pointer}");
        }
        assert_eq!(tree.root(), root.span);
    }
}
