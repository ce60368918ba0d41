//! YAML 1.2 → a tree of spanned nodes. Every call into `saphyr-parser` lives here. The usual
//! manifest is read by a scanner of our own (`yaml/fast.rs`), which yields saphyr's own events
//! for the subset of YAML that manifests are written in (tree included, 2.2× faster than
//! saphyr's event loop alone on 1,000 tools), and hands anything else to saphyr.
//!
//! We build our own tree from the parser's events instead of deserialising with serde, because
//! every check downstream needs the exact span of every node, including deep inside JSON Schemas,
//! and because we must decide ourselves what a plain scalar means: only the YAML 1.2 core schema
//! (`true`/`false`, never `yes`/`no`/`on`/`off`), duplicate keys are errors, and aliases are
//! expanded under a budget so that an alias bomb stops with a clear error.

use saphyr_parser::{Parser, ScanError};

use builder::{Builder, Flow};

use crate::diagnostic::Diagnostic;
use crate::source::{FileId, Span};

mod builder;
mod fast;
mod spans;

pub use spans::SpanTree;

/// Limits that stop abuse while accepting every realistic manifest (10,000 tools included).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Deepest nesting of mappings and sequences.
    pub max_depth: usize,
    /// Nodes in the expanded tree, aliases counted at their expanded size.
    pub max_nodes: usize,
    /// Bytes in one file.
    pub max_file_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_depth: 128,
            max_nodes: 4_000_000,
            max_file_bytes: 64 << 20,
        }
    }
}

/// What a YAML node holds; plain scalars are typed by the YAML 1.2 core schema.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `null`, `~` or an empty value.
    Null,
    /// `true` or `false` (never `yes`, `no`, `on` or `off`).
    Bool(bool),
    /// An integer or a float.
    Number(serde_json::Number),
    /// A quoted scalar, or a plain one that is no other type.
    String(String),
    /// A sequence's items, in order.
    Seq(Vec<Node>),
    /// Keys in source order; duplicates were rejected while loading.
    Map(Vec<(Node, Node)>),
}

/// One YAML node with the exact span it is written at.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// What the node holds.
    pub value: Value,
    /// Where the node is written.
    pub span: Span,
}

impl Node {
    /// The node's kind as diagnostics name it (`a string`, `a mapping`).
    pub fn kind(&self) -> &'static str {
        match &self.value {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
        }
    }

    /// The text of a string node; `None` for any other kind.
    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// A mapping's entries in source order; `None` for any other kind.
    pub fn as_map(&self) -> Option<&[(Node, Node)]> {
        match &self.value {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    /// A sequence's items; `None` for any other kind.
    pub fn as_seq(&self) -> Option<&[Node]> {
        match &self.value {
            Value::Seq(s) => Some(s),
            _ => None,
        }
    }

    /// The entry of a mapping whose key is the string `key`.
    pub fn get(&self, key: &str) -> Option<(&Node, &Node)> {
        self.as_map()?
            .iter()
            .find(|(k, _)| k.as_str() == Some(key))
            .map(|(k, v)| (k, v))
    }

    /// Follows a JSON Pointer (RFC 6901); yields the node and, for a mapping member, its key.
    pub fn pointer(&self, pointer: &str) -> Option<(Option<&Node>, &Node)> {
        let mut key = None;
        let mut node = self;
        if pointer.is_empty() {
            return Some((None, self));
        }
        for raw in pointer.strip_prefix('/')?.split('/') {
            let segment = crate::schema_util::unescape_segment(raw);
            match &node.value {
                Value::Map(entries) => {
                    let (k, v) = entries.iter().find(|(k, _)| k.as_str() == Some(&segment))?;
                    key = Some(k);
                    node = v;
                }
                Value::Seq(items) => {
                    node = items.get(segment.parse::<usize>().ok()?)?;
                    key = None;
                }
                _ => return None,
            }
        }
        Some((key, node))
    }

    /// The JSON value of this node. Keys that are not strings were already reported by the loader
    /// of the calling context; here they are stringified so the conversion is total.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match &self.value {
            Value::Null => J::Null,
            Value::Bool(b) => J::Bool(*b),
            Value::Number(n) => J::Number(n.clone()),
            Value::String(s) => J::String(s.clone()),
            Value::Seq(items) => J::Array(items.iter().map(Node::to_json).collect()),
            Value::Map(entries) => J::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.scalar_text(), v.to_json()))
                    .collect(),
            ),
        }
    }

    fn scalar_text(&self) -> String {
        match &self.value {
            Value::String(s) => s.clone(),
            Value::Null => "null".into(),
            Value::Bool(b) => b.to_string(),
            Value::Number(n) => n.to_string(),
            Value::Seq(_) | Value::Map(_) => String::from("<non-scalar key>"),
        }
    }

    /// Moves every span end at `from` to `to`, in this node and below.
    fn move_ends(&mut self, from: usize, to: usize) {
        if self.span.end == from {
            self.span.end = to;
        }
        match &mut self.value {
            Value::Seq(items) => items.iter_mut().for_each(|n| n.move_ends(from, to)),
            Value::Map(entries) => entries.iter_mut().for_each(|(k, v)| {
                k.move_ends(from, to);
                v.move_ends(from, to);
            }),
            _ => {}
        }
    }

    /// Nodes in this tree, as the loader counts them against [`Limits::max_nodes`].
    pub fn count(&self) -> usize {
        match &self.value {
            Value::Seq(items) => 1 + items.iter().map(Node::count).sum::<usize>(),
            Value::Map(entries) => {
                1 + entries
                    .iter()
                    .map(|(k, v)| k.count() + v.count())
                    .sum::<usize>()
            }
            _ => 1,
        }
    }
}

/// Parses one YAML document. Problems that still leave a usable tree (duplicate keys, non-string
/// keys) are pushed to `errors` and loading goes on; a syntax error ends loading.
pub fn parse(
    file: FileId,
    text: &str,
    limits: Limits,
    errors: &mut Vec<Diagnostic>,
) -> Option<Node> {
    parse_at(file, text, 0, limits, errors, YamlParser::Fast)
}

/// Parses `text[start..end]` on its own, with spans in `text`'s bytes, for one part of a
/// [`split_sequence`]. The part's last collections end where the next part's first item begins
/// (`next`), as they do when the whole text is parsed. `None` on any problem: parts are an
/// optimisation, and the caller then parses the whole text to report it.
pub fn parse_part(
    file: FileId,
    text: &str,
    (start, end): (usize, usize),
    next: Option<usize>,
    limits: Limits,
) -> Option<Node> {
    let mut errors = Vec::new();
    let part = text.get(start..end)?;
    let mut node = parse_at(file, part, start, limits, &mut errors, YamlParser::Fast)?;
    if !errors.is_empty() {
        return None;
    }
    if let Some(next) = next {
        node.move_ends(end, next);
    }
    Some(node)
}

/// A block sequence that is the value of the top-level key `key` and runs to the end of the
/// text, found by looking at lines only: returns where every item's line starts. `None` for
/// anything this cannot be sure about (several documents, directives, flow style at the top,
/// content after the sequence, tabs, `\r`): the caller then parses the text whole. A wrong split
/// can only make a part fail to parse (an alias to an anchor in another part, a quoted string cut
/// in two), which also sends the caller back to the whole text.
pub fn split_sequence(text: &str, key: &str) -> Option<Vec<usize>> {
    let bytes = text.as_bytes();
    if memchr::memchr2(b'\r', b'\t', bytes).is_some() {
        return None;
    }
    let mut starts = Vec::new();
    let mut indent: Option<usize> = None;
    let mut seen_key = false;
    let mut at = 0;
    while at < bytes.len() {
        let line_end = memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |n| at + n);
        let line = &bytes[at..line_end];
        let line_start = at;
        at = line_end + 1;
        let column = line.iter().position(|&b| b != b' ').unwrap_or(line.len());
        let trimmed = &line[column..];
        if trimmed.is_empty() || trimmed[0] == b'#' {
            continue;
        }
        // Most lines are inside an item: deeper than the list, nothing to look at.
        if matches!(indent, Some(i) if column > i) {
            continue;
        }
        if line.starts_with(b"---") || line.starts_with(b"...") || line[0] == b'%' {
            return None;
        }
        if !seen_key {
            if column == 0 {
                let trimmed = &text[line_start..line_end];
                let (k, rest) = trimmed.split_once(':')?;
                if k == key {
                    let rest = rest.trim_start();
                    if !(rest.is_empty() || rest.starts_with('#')) {
                        return None; // a flow or inline value
                    }
                    seen_key = true;
                } else if k.contains(['"', '\'', '[', '{', '?']) {
                    return None;
                }
            }
            continue;
        }
        let is_item = trimmed == b"-" || trimmed.starts_with(b"- ");
        match indent {
            None if is_item => {
                indent = Some(column);
                starts.push(line_start);
            }
            None => return None,
            Some(i) if column == i && is_item => starts.push(line_start),
            Some(_) => return None, // more of the root mapping after the list
        }
    }
    (!starts.is_empty()).then_some(starts)
}

fn parse_at(
    file: FileId,
    text: &str,
    base: usize,
    limits: Limits,
    errors: &mut Vec<Diagnostic>,
    parser: YamlParser,
) -> Option<Node> {
    if text.len() > limits.max_file_bytes {
        errors.push(
            Diagnostic::error(
                crate::codes::TOO_LARGE,
                format!(
                    "the file is {} bytes; the limit is {} bytes",
                    text.len(),
                    limits.max_file_bytes
                ),
            )
            .at(Span::new(file, 0, 0), "file starts here")
            .help("split the tools across several manifest files"),
        );
        return None;
    }
    let reported = errors.len();
    report_unprintable(file, text, base, errors);
    if errors.len() == reported && parser == YamlParser::Fast {
        // The fast scanner's events are the full parser's; where it gives up, what it built is
        // dropped and the full parser starts again from the first byte.
        let mut sink = Builder::new(file, base, limits, errors);
        if fast::scan(text, &mut sink).is_ok() {
            return sink.root.take();
        }
        errors.truncate(reported);
    }
    let offsets = Offsets::new(text, base);
    let mut builder = Builder::new(file, 0, limits, errors);
    let mut parser = Parser::new_from_str(text);
    loop {
        match parser.next_event() {
            None => break,
            Some(Err(e)) => {
                builder.errors.push(syntax_error(file, text, &offsets, &e));
                return None;
            }
            Some(Ok((event, span))) => {
                let start = offsets.byte(span.start.index());
                let end = offsets.byte(span.end.index());
                match builder.event(event, start, end) {
                    Flow::Continue => {}
                    Flow::Stop => return None,
                    Flow::Done => break,
                }
            }
        }
    }
    builder.root.take()
}

/// Which scanner turns the text into events: the fast one for the usual manifest (falling back
/// to `saphyr-parser` for anything else), or `saphyr-parser` alone, which the tests compare it
/// with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum YamlParser {
    Fast,
    #[cfg(test)]
    Full,
}

/// How many unprintable characters are reported one by one before the rest are summed up.
const UNPRINTABLE_REPORTED: usize = 20;

/// YAML 1.2 streams hold printable characters only (tab, line breaks, and no C0 or C1 control
/// character but NEL, no DEL, no U+FFFE/U+FFFF). The scanner lets some through, so they are
/// reported here, each where it is, and parsing goes on so that other errors are found too.
fn report_unprintable(file: FileId, text: &str, base: usize, errors: &mut Vec<Diagnostic>) {
    let printable = |c: char| {
        matches!(c, '\t' | '\n' | '\r' | '\u{85}')
            || (' '..='~').contains(&c)
            || ('\u{a0}'..='\u{d7ff}').contains(&c)
            || ('\u{e000}'..='\u{fffd}').contains(&c)
            || c >= '\u{10000}'
    };
    if text
        .bytes()
        .all(|b| (b' '..=b'~').contains(&b) || matches!(b, b'\t' | b'\n' | b'\r'))
    {
        return; // the usual file: plain ASCII text
    }
    let mut found = text.char_indices().filter(|&(_, c)| !printable(c));
    for (at, c) in found.by_ref().take(UNPRINTABLE_REPORTED) {
        let at = base + at;
        errors.push(
            Diagnostic::error(
                crate::codes::YAML_SYNTAX,
                format!(
                    "invalid YAML: the control character U+{:04X} is not allowed in a YAML file",
                    c as u32
                ),
            )
            .at(Span::new(file, at, at + c.len_utf8()), "this character")
            .help(format!(
                "remove it, or write it as an escape inside a double-quoted string (\"\\u{:04X}\")",
                c as u32
            )),
        );
    }
    let more = found.count();
    if more > 0 {
        errors.push(
            Diagnostic::error(
                crate::codes::YAML_SYNTAX,
                format!("invalid YAML: {more} more control characters after these"),
            )
            .at(Span::new(file, base, base), "file starts here")
            .help("the file may not be text: check its encoding"),
        );
    }
}

fn syntax_error(file: FileId, text: &str, offsets: &Offsets, e: &ScanError) -> Diagnostic {
    let mut at = offsets.byte(e.marker().index());
    let info = e.info();
    // The scanner reports a tab or a control character where the token it was reading began
    // (often the line before); the character itself is what the user must find.
    let culprit = if info.contains("tab") {
        Some('\t')
    } else {
        None
    };
    let local = at.saturating_sub(offsets.base);
    let found = match culprit {
        Some(c) => text.get(local..).and_then(|rest| rest.find(c)),
        None if info.contains("control") || info.contains("special characters") => {
            text.get(local..).and_then(|rest| {
                rest.find(|c: char| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
            })
        }
        None => None,
    };
    if let Some(offset) = found {
        at += offset;
    }
    if info.contains("recursion limit") {
        // The scanner has its own limit on flow nesting (`[[[...`), below ours.
        return Diagnostic::error(
            crate::codes::TOO_DEEP,
            "nesting too deep for the YAML scanner",
        )
        .at(Span::new(file, at, at), "this level is one too many")
        .help(
            "flatten the structure or move shared parts into `$defs` and refer to them with `$ref`",
        );
    }
    // The scanner's messages are terse; name the usual cause when we recognise one.
    let help = if info.contains("mapping values are not allowed") {
        "a `key: value` appears where a plain value was expected; quote values that contain `: ` or check the indentation"
    } else if info.contains("did not find expected key") || info.contains("block") {
        "check the indentation: entries of one mapping must start in the same column"
    } else if info.contains("tab") {
        "YAML does not allow tabs for indentation; use spaces"
    } else {
        "fix the YAML syntax at this position"
    };
    Diagnostic::error(crate::codes::YAML_SYNTAX, format!("invalid YAML: {info}"))
        .at(Span::new(file, at, at), "here")
        .help(help)
}

/// Converts the parser's character indices to byte offsets (from `base`, where the text parsed
/// starts in its file).
struct Offsets {
    /// (char index, bytes beyond one-per-char before this char) at every multi-byte character.
    multibyte: Vec<(usize, usize)>,
    base: usize,
}

impl Offsets {
    fn new(text: &str, base: usize) -> Offsets {
        let mut multibyte = Vec::new();
        if !text.is_ascii() {
            let mut extra = 0;
            for (i, ch) in text.chars().enumerate() {
                if ch.len_utf8() > 1 {
                    extra += ch.len_utf8() - 1;
                    multibyte.push((i, extra));
                }
            }
        }
        Offsets { multibyte, base }
    }

    fn byte(&self, char_index: usize) -> usize {
        // Extra bytes come from multi-byte characters strictly before `char_index`.
        let n = self.multibyte.partition_point(|&(i, _)| i < char_index);
        self.base + char_index + if n == 0 { 0 } else { self.multibyte[n - 1].1 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_sequence_finds_each_item_line_or_gives_up() {
        let text = "# c\nversion: 1\ntools:\n  - name: a\n    x:\n      - deep\n\n  # c\n  - name: b\n  -\n    name: c\n";
        let starts = split_sequence(text, "tools").expect("the usual shape");
        let lines: Vec<&str> = starts
            .iter()
            .map(|&at| text[at..].lines().next().unwrap_or(""))
            .collect();
        assert_eq!(lines, ["  - name: a", "  - name: b", "  -"]);
        // At the key's own column.
        assert_eq!(
            split_sequence("tools:\n- a\n- b\n", "tools"),
            Some(vec![7, 11])
        );
        for (text, why) in [
            ("tools:\n  - a\nafter: 1\n", "a root key after the list"),
            ("tools:\n  - a\n - b\n", "an item at another column"),
            ("tools:\n  - a\n\tb: 1\n", "a tab"),
            ("tools:\r\n  - a\r\n", "carriage returns"),
            ("tools:\n  - a\n---\n  - b\n", "a second document"),
            ("%YAML 1.2\ntools:\n  - a\n", "a directive"),
            ("tools: [a, b]\n", "a flow list"),
            ("\"quoted\": 1\ntools:\n  - a\n", "a quoted root key"),
            ("tools:\n  name: a\n", "a mapping, not a list"),
            ("version: 1\n", "no list"),
        ] {
            assert_eq!(split_sequence(text, "tools"), None, "{why}");
        }
    }

    fn load(text: &str) -> (Option<Node>, Vec<Diagnostic>) {
        let mut errors = Vec::new();
        let node = parse(FileId(0), text, Limits::default(), &mut errors);
        (node, errors)
    }

    #[test]
    fn norway_problem_does_not_happen() {
        let (node, errors) = load("enum: [no, yes, on, off, y, n, true]\n");
        assert!(errors.is_empty());
        let json = node.unwrap().to_json();
        assert_eq!(
            json,
            serde_json::json!({"enum": ["no", "yes", "on", "off", "y", "n", true]})
        );
    }

    #[test]
    fn numbers_and_quoted_numbers() {
        let (node, _) = load("a: 1\nb: '1'\nc: 1.5\nd: -3\ne: 1e3\nf: 0x1F\ng: 1.2.3\n");
        assert_eq!(
            node.unwrap().to_json(),
            serde_json::json!({"a": 1, "b": "1", "c": 1.5, "d": -3, "e": 1000.0, "f": 31, "g": "1.2.3"})
        );
    }

    #[test]
    fn duplicate_keys_are_reported_with_both_places() {
        let (_, errors) = load("a: 1\nb: 2\na: 3\n");
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].code, crate::codes::DUPLICATE_KEY);
        assert_eq!(errors[0].primary.as_ref().unwrap().span.start, 10);
        assert_eq!(errors[0].secondary[0].span.start, 0);
    }

    /// Large mappings find duplicates through an index: the same keys count as duplicates as
    /// in a small mapping (found by comparing values), and a mapping of tens of thousands of
    /// keys loads without comparing every pair.
    #[test]
    fn duplicates_in_large_mappings_are_the_duplicates_of_small_ones() {
        let keys = [
            "a", "'a'", "1", "1.0", "0.0", "-0.0", "null", "~", "true", "[]", "{}", "[1]", "[1]",
            "'1'", "b", "c", "d",
        ];
        for filler in [0, 40] {
            let mut text = String::new();
            for i in 0..filler {
                text.push_str(&format!("k{i}: 0\n"));
            }
            for (i, key) in keys.iter().enumerate() {
                text.push_str(&format!("? {key}\n: {i}\n"));
            }
            let (_, errors) = load(&text);
            let duplicates: Vec<&str> = errors
                .iter()
                .map(|e| {
                    let span = e.primary.as_ref().unwrap().span;
                    &text[span.start..span.end]
                })
                .collect();
            // `'a'` = `a`, `-0.0` = `0.0`, `~` = `null`; `'1'` is a string, `1.0` a float, and
            // two `[1]` lists are different keys (their items are at different places).
            assert_eq!(
                duplicates,
                ["'a'", "-0.0", "~"],
                "after {filler} other keys"
            );
        }
        let mut text = String::new();
        for i in 0..20_000 {
            text.push_str(&format!("key{i}: {i}\n"));
        }
        text.push_str("key7: again\n");
        let (node, errors) = load(&text);
        assert!(node.is_some());
        assert_eq!(errors.len(), 1);
        assert!(errors[0].message.contains("`key7`"));
    }

    /// Collections are built on stacks shared by every open collection: a nested mapping, large
    /// enough to be indexed, finds its own duplicates and not its parent's keys, the parent finds
    /// a duplicate written after the nested one ended, and no item lands in the wrong list.
    #[test]
    fn nested_collections_keep_their_own_entries_and_duplicates() {
        let mut text = String::from("outer: 1\nlist: [a, [b, c], {d: 1}]\ninner:\n");
        for i in 0..40 {
            text.push_str(&format!("  k{i}: [{i}, {{x: {i}}}]\n"));
        }
        text.push_str("  outer: inner-own\n  k3: again\nafter: [z]\nouter: twice\n");
        let (node, errors) = load(&text);
        let shown: Vec<&str> = errors
            .iter()
            .map(|e| {
                let span = e.primary.as_ref().unwrap().span;
                &text[span.start..span.end]
            })
            .collect();
        assert_eq!(shown, ["k3", "outer"], "{errors:?}");
        assert_eq!(errors[1].secondary[0].span.start, 0, "the first `outer`");
        let json = node.unwrap().to_json();
        assert_eq!(json["list"], serde_json::json!(["a", ["b", "c"], {"d": 1}]));
        assert_eq!(json["inner"]["k39"], serde_json::json!([39, {"x": 39}]));
        assert_eq!(json["inner"]["outer"], "inner-own");
        assert_eq!(json["inner"].as_object().unwrap().len(), 41);
        assert_eq!(json["after"], serde_json::json!(["z"]));
        assert_eq!(json.as_object().unwrap().len(), 4);
    }

    #[test]
    fn spans_are_bytes_after_multibyte_text() {
        let text = "a: \"é日本\"\nbb: x\n";
        let (node, _) = load(text);
        let node = node.unwrap();
        let (key, value) = node.get("bb").unwrap();
        assert_eq!(&text[key.span.start..key.span.end], "bb");
        assert_eq!(&text[value.span.start..value.span.end], "x");
    }

    #[test]
    fn alias_bomb_stops_with_an_error() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let refs = vec![format!("*a{}", i - 1); 10].join(", ");
            text.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
        }
        let (node, errors) = load(&text);
        assert!(node.is_none());
        assert_eq!(errors[0].code, crate::codes::TOO_LARGE);
    }

    #[test]
    fn absurd_nesting_stops_with_an_error() {
        let text = "[".repeat(100_000);
        let (node, errors) = load(&text);
        assert!(node.is_none());
        assert_eq!(errors[0].code, crate::codes::TOO_DEEP);
    }

    #[test]
    fn pointer_follows_maps_and_lists() {
        let (node, _) = load("a:\n  b: [1, {c/d: 2}]\n");
        let node = node.unwrap();
        let (key, value) = node.pointer("/a/b/1/c~1d").unwrap();
        assert_eq!(key.unwrap().as_str(), Some("c/d"));
        assert_eq!(value.to_json(), serde_json::json!(2));
    }
}
