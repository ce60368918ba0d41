//! A fast scanner for the part of YAML that manifests are written in: block mappings and
//! sequences indented with spaces; plain scalars, also folded over more-indented lines; quoted
//! scalars on one line; flow collections, also over lines and JSON-style (`{"type":"object"}`);
//! literal and folded block scalars. It produces the very events, spans included, that
//! `saphyr-parser` produces for the same text (with the tree built, 2.2× faster than saphyr's
//! event loop without one; BENCHMARKS.md, issue 26), and gives up on anything else: anchors,
//! aliases, tags, directives, several documents, complex keys, tabs, quoted scalars over
//! several lines, plain scalars over several lines inside a flow collection, and every error.
//! Giving up costs only the work done so far: the caller then parses the text with
//! `saphyr-parser`, which reports what is wrong exactly as before. The
//! tests hold the two to the same tree and diagnostics, span for span, on every bundled YAML
//! file and on thousands of generated and mutated documents.
//!
//! Where saphyr's spans are surprising, this follows them (see `parse_node` and `skip_ws_to_eol`
//! in saphyr's parser and scanner): a collection's end is where the next token starts; a block
//! sequence that is a mapping value at the key's own column starts after its first `- `; a
//! quoted scalar or a closing bracket ends after the spaces and comment that follow it; a block
//! scalar starts at its first character of content and ends where the content of the line
//! after it starts.

use std::borrow::Cow;

use saphyr_parser::{Event, ScalarStyle};

/// The scanner gave up: the text is outside the subset, or the sink stopped.
#[derive(Debug)]
pub(super) struct GiveUp;

type Scan<T> = Result<T, GiveUp>;

/// Receives each event with its byte span in the text; `false` stops the scan.
pub(super) trait Sink<'t> {
    fn event(&mut self, event: Event<'t>, start: usize, end: usize) -> bool;
}

/// Scans `text` into `sink`, ending with `StreamEnd`. `Err` when the text is outside the subset
/// or the sink stopped: the events sent so far must then be discarded.
pub(super) fn scan<'t>(text: &'t str, sink: &mut impl Sink<'t>) -> Scan<()> {
    // Tabs and carriage returns change what indentation and line ends mean; a byte order mark
    // and the Unicode line breaks that YAML 1.1 knew are left to the full parser.
    if memchr::memchr2(b'\t', b'\r', text.as_bytes()).is_some()
        || (!text.is_ascii() && text.contains(['\u{feff}', '\u{85}', '\u{2028}', '\u{2029}']))
    {
        return Err(GiveUp);
    }
    let mut scanner = Scanner {
        text,
        bytes: text.as_bytes(),
        sink,
        depth: 0,
    };
    scanner.document()
}

/// Deeper than this the scanner gives up rather than recurse further; the full parser and the
/// tree's own limit then decide.
const MAX_DEPTH: usize = 200;

/// Simple keys longer than this are errors for the full parser (YAML's 1024 characters).
const MAX_KEY_BYTES: usize = 1000;

/// Where the next token starts, and its column; `at == len` at the end of the text.
#[derive(Clone, Copy)]
struct Next {
    at: usize,
    column: usize,
}

struct Scalar<'t> {
    value: Cow<'t, str>,
    style: ScalarStyle,
    start: usize,
    end: usize,
}

struct Scanner<'t, 's, S> {
    text: &'t str,
    bytes: &'t [u8],
    sink: &'s mut S,
    depth: usize,
}

impl<'t, S: Sink<'t>> Scanner<'t, '_, S> {
    fn emit(&mut self, event: Event<'t>, start: usize, end: usize) -> Scan<()> {
        if self.sink.event(event, start, end) {
            Ok(())
        } else {
            Err(GiveUp)
        }
    }

    fn byte(&self, at: usize) -> Option<u8> {
        self.bytes.get(at).copied()
    }

    /// A space, a line break or the end of the text.
    fn blank_or_end(&self, at: usize) -> bool {
        matches!(self.byte(at), None | Some(b' ' | b'\n'))
    }

    fn skip_spaces(&self, mut at: usize) -> usize {
        while self.byte(at) == Some(b' ') {
            at += 1;
        }
        at
    }

    fn line_end(&self, at: usize) -> usize {
        memchr::memchr(b'\n', &self.bytes[at..]).map_or(self.bytes.len(), |n| at + n)
    }

    /// saphyr's `skip_ws_to_eol`: spaces, then a comment if one follows a space.
    fn skip_ws_to_eol(&self, at: usize) -> Scan<usize> {
        let after = self.skip_spaces(at);
        if self.byte(after) == Some(b'#') {
            if after == at {
                return Err(GiveUp); // a comment must follow whitespace
            }
            return Ok(self.line_end(after));
        }
        Ok(after)
    }

    /// From the end of a line's content (`at`), which must be followed only by spaces and a
    /// comment, to the first token of a later line.
    fn next_line(&self, at: usize) -> Scan<Next> {
        let at = self.skip_ws_to_eol(at)?;
        match self.byte(at) {
            None => Ok(self.end()),
            Some(b'\n') => Ok(self.next_token(at + 1)),
            Some(_) => Err(GiveUp),
        }
    }

    /// The first token at or after the start of the line at `line`.
    fn next_token(&self, mut line: usize) -> Next {
        loop {
            let at = self.skip_spaces(line);
            match self.byte(at) {
                None => return self.end(),
                Some(b'\n') => line = at + 1,
                Some(b'#') => match memchr::memchr(b'\n', &self.bytes[at..]) {
                    Some(n) => line = at + n + 1,
                    None => return self.end(),
                },
                Some(_) => {
                    return Next {
                        at,
                        column: at - line,
                    }
                }
            }
        }
    }

    fn end(&self) -> Next {
        Next {
            at: self.bytes.len(),
            column: 0,
        }
    }

    fn at_end(&self, next: Next) -> bool {
        next.at == self.bytes.len()
    }

    /// A block sequence entry: `-` followed by a space, a line break or the end.
    fn is_entry(&self, at: usize) -> bool {
        self.byte(at) == Some(b'-') && self.blank_or_end(at + 1)
    }

    fn document(&mut self) -> Scan<()> {
        let first = self.next_token(0);
        if self.at_end(first) || self.starts_document_marker(first) {
            return Err(GiveUp);
        }
        self.emit(Event::StreamStart, 0, 0)?;
        self.emit(Event::DocumentStart(false), 0, 0)?;
        let after = self.block_node(first)?;
        if !self.at_end(after) {
            return Err(GiveUp); // content after the root: a second node or an error
        }
        let len = self.bytes.len();
        self.emit(Event::DocumentEnd, len, len)?;
        self.emit(Event::StreamEnd, len, len)
    }

    /// `---`, `...` or a directive at the start of a line.
    fn starts_document_marker(&self, next: Next) -> bool {
        let rest = &self.bytes[next.at..];
        next.column == 0
            && (rest.first() == Some(&b'%')
                || ((rest.starts_with(b"---") || rest.starts_with(b"..."))
                    && matches!(rest.get(3), None | Some(b' ' | b'\n'))))
    }

    fn descend(&mut self) -> Scan<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(GiveUp);
        }
        Ok(())
    }

    /// A block collection that starts a line of its own at `next`.
    fn block_node(&mut self, next: Next) -> Scan<Next> {
        if self.starts_document_marker(next) {
            return Err(GiveUp);
        }
        self.descend()?;
        let after = if self.is_entry(next.at) {
            self.block_sequence(next, false)?
        } else {
            let key = self.key(next.at)?;
            self.block_mapping(next.at, next.column, key)?
        };
        self.depth -= 1;
        Ok(after)
    }

    /// A simple key at `at` and the position of its `:`; gives up if `at` does not start one.
    fn key(&self, at: usize) -> Scan<(Scalar<'t>, usize)> {
        let key = match self.byte(at) {
            Some(b'"') => self.double_quoted(at)?,
            Some(b'\'') => self.single_quoted(at)?,
            _ => self.plain(at, false)?,
        };
        if key.end - key.start > MAX_KEY_BYTES {
            return Err(GiveUp);
        }
        // A quoted key's span already takes the spaces after it.
        let colon = self.skip_spaces(key.end);
        if self.byte(colon) == Some(b':') && self.blank_or_end(colon + 1) {
            Ok((key, colon))
        } else {
            Err(GiveUp)
        }
    }

    /// A block mapping whose first key, already scanned, is at `start`, in column `indent`.
    fn block_mapping(
        &mut self,
        start: usize,
        indent: usize,
        first: (Scalar<'t>, usize),
    ) -> Scan<Next> {
        self.emit(Event::MappingStart(0, None), start, start)?;
        let (mut key, mut colon) = first;
        loop {
            self.emit_scalar(key)?;
            let value = self.skip_spaces(colon + 1);
            let next = match self.byte(value) {
                None | Some(b'\n' | b'#') => {
                    let next = self.next_line(colon + 1)?;
                    if !self.at_end(next) && next.column > indent {
                        self.block_node(next)?
                    } else if !self.at_end(next) && next.column == indent && self.is_entry(next.at)
                    {
                        self.descend()?;
                        let after = self.block_sequence(next, true)?;
                        self.depth -= 1;
                        after
                    } else {
                        self.emit_empty(colon)?;
                        next
                    }
                }
                Some(_) => self.value_on_line(value, indent)?,
            };
            if self.at_end(next) || next.column < indent {
                self.emit(Event::MappingEnd, next.at, next.at)?;
                return Ok(next);
            }
            if next.column > indent || self.is_entry(next.at) || self.starts_document_marker(next) {
                return Err(GiveUp);
            }
            (key, colon) = self.key(next.at)?;
        }
    }

    /// A block sequence whose first `-` is at `first`; `indentless` when it is a mapping's value
    /// written at the key's own column.
    fn block_sequence(&mut self, first: Next, indentless: bool) -> Scan<Next> {
        let indent = first.column;
        let mut entry = first.at;
        let mut started = false;
        loop {
            // saphyr marks an entry after its `-` and the spaces and comment that follow.
            let mark = self.skip_ws_to_eol(entry + 1)?;
            if !started {
                let start = if indentless { mark } else { entry };
                self.emit(Event::SequenceStart(0, None), start, start)?;
                started = true;
            }
            let next = match self.byte(mark) {
                None | Some(b'\n') => {
                    let next = self.next_line(mark)?;
                    if !self.at_end(next) && next.column > indent {
                        self.block_node(next)?
                    } else {
                        self.emit_empty(mark)?;
                        next
                    }
                }
                Some(_) if self.is_entry(mark) => return Err(GiveUp), // `- - x`
                Some(_) => {
                    let column = mark - (entry - indent);
                    match self.key(mark) {
                        Ok(key) => {
                            self.descend()?;
                            let after = self.block_mapping(mark, column, key)?;
                            self.depth -= 1;
                            after
                        }
                        Err(GiveUp) => self.value_on_line(mark, indent)?,
                    }
                }
            };
            if self.at_end(next)
                || next.column < indent
                || (indentless && next.column == indent && !self.is_entry(next.at))
            {
                self.emit(Event::SequenceEnd, next.at, next.at)?;
                return Ok(next);
            }
            if next.column > indent || !self.is_entry(next.at) {
                return Err(GiveUp);
            }
            entry = next.at;
        }
    }

    /// An empty value (saphyr's empty plain scalar) at `at`.
    fn emit_empty(&mut self, at: usize) -> Scan<()> {
        self.emit(
            Event::Scalar(Cow::Borrowed(""), ScalarStyle::Plain, 0, None),
            at,
            at,
        )
    }

    /// [`Self::inline_value`] in a block collection indented at `indent`, which the next token
    /// must not be deeper than: a more indented line would go on with the value or be an error.
    fn value_on_line(&mut self, at: usize, indent: usize) -> Scan<Next> {
        let next = self.inline_value(at, indent)?;
        if !self.at_end(next) && next.column > indent {
            return Err(GiveUp);
        }
        Ok(next)
    }

    /// A value that starts on a key's or an entry's line: a quoted scalar or a flow collection
    /// on that line, a plain scalar that may go on over lines indented more than `indent`, or a
    /// block scalar. Returns where the next token is.
    fn inline_value(&mut self, at: usize, indent: usize) -> Scan<Next> {
        let scalar = match self.byte(at) {
            Some(b'[' | b'{') => {
                let end = self.flow_collection(at, indent)?;
                return self.next_line(end);
            }
            Some(b'|' | b'>') => {
                let scalar = self.block_scalar(at, indent)?;
                // saphyr ends a block scalar where the line after it starts its content.
                let line = self.text[..scalar.end].rfind('\n').map_or(0, |n| n + 1);
                self.emit_scalar(scalar)?;
                return Ok(self.next_token(line));
            }
            Some(b'"') => self.double_quoted(at)?,
            Some(b'\'') => self.single_quoted(at)?,
            _ => self.plain_lines(at, indent)?,
        };
        let end = scalar.end;
        self.emit_scalar(scalar)?;
        self.next_line(end)
    }

    /// A literal (`|`) or folded (`>`) block scalar whose header is at `at`, in a block
    /// collection indented at `indent`. Gives up on an indentation indicator, on empty lines
    /// before the first line or with more spaces than the indentation, on more-indented lines
    /// of a folded scalar, and on a last line without a line break.
    fn block_scalar(&self, at: usize, indent: usize) -> Scan<Scalar<'t>> {
        let literal = self.byte(at) == Some(b'|');
        let mut cursor = at + 1;
        let chomping = self.byte(cursor);
        if matches!(chomping, Some(b'-' | b'+')) {
            cursor += 1;
        }
        if !self.blank_or_end(cursor) {
            return Err(GiveUp);
        }
        let header_end = self.skip_ws_to_eol(cursor)?;
        if self.byte(header_end) != Some(b'\n') {
            return Err(GiveUp);
        }
        let mut line = header_end + 1;
        let start = self.skip_spaces(line);
        let content_indent = start - line;
        if matches!(self.byte(start), None | Some(b'\n')) || content_indent <= indent {
            return Err(GiveUp);
        }
        let mut text = String::new();
        let mut empty_lines = 0;
        let mut first = true;
        let end = loop {
            let content = self.skip_spaces(line);
            let column = content - line;
            match self.byte(content) {
                None => break content,
                Some(b'\n') if column > content_indent => return Err(GiveUp),
                Some(b'\n') => {
                    empty_lines += 1;
                    line = content + 1;
                }
                Some(_) if column < content_indent => break content,
                Some(_) if column > content_indent && !literal => return Err(GiveUp),
                Some(_) => {
                    let line_end = self.line_end(content);
                    if line_end == self.bytes.len() {
                        return Err(GiveUp);
                    }
                    if !first {
                        if literal {
                            text.push('\n');
                        } else if empty_lines == 0 {
                            text.push(' ');
                        }
                        (0..empty_lines).for_each(|_| text.push('\n'));
                    }
                    text.push_str(&self.text[line + content_indent..line_end]);
                    first = false;
                    empty_lines = 0;
                    line = line_end + 1;
                }
            }
        };
        match chomping {
            Some(b'-') => {}
            Some(b'+') => (0..=empty_lines).for_each(|_| text.push('\n')),
            _ => text.push('\n'),
        }
        Ok(Scalar {
            value: Cow::Owned(text),
            style: if literal {
                ScalarStyle::Literal
            } else {
                ScalarStyle::Folded
            },
            start,
            end,
        })
    }

    fn emit_scalar(&mut self, scalar: Scalar<'t>) -> Scan<()> {
        self.emit(
            Event::Scalar(scalar.value, scalar.style, 0, None),
            scalar.start,
            scalar.end,
        )
    }

    /// A flow sequence or mapping at `at`, in a block collection indented at `indent`; it may
    /// go on over lines indented more than that. Returns the end of the closing bracket's span
    /// (after the spaces and comment that follow it).
    fn flow_collection(&mut self, at: usize, indent: usize) -> Scan<usize> {
        self.descend()?;
        let mapping = self.byte(at) == Some(b'{');
        let (start, close) = if mapping {
            (Event::MappingStart(0, None), b'}')
        } else {
            (Event::SequenceStart(0, None), b']')
        };
        self.emit(start, at, self.skip_ws_to_eol(at + 1)?)?;
        let mut cursor = self.flow_gap(at + 1, indent)?;
        // Only the first entry can be missing (`[]`); a trailing comma was given up on.
        if self.byte(cursor) != Some(close) {
            loop {
                if mapping {
                    let key = self.flow_scalar(cursor)?;
                    let colon = self.skip_spaces(key.end);
                    // JSON's `"key":value` needs no space after a quoted key; a plain one
                    // would take the `:` into its text.
                    let adjacent = key.style != ScalarStyle::Plain;
                    match (self.byte(colon), self.byte(colon + 1)) {
                        (Some(b':'), Some(b' ')) => {}
                        (Some(b':'), Some(b)) if adjacent && !matches!(b, b'\n' | b'#') => {}
                        _ => return Err(GiveUp),
                    }
                    self.emit_scalar(key)?;
                    let value = self.skip_spaces(colon + 1);
                    cursor = match self.byte(value) {
                        Some(b',' | b'}') => {
                            self.emit_empty(colon)?;
                            value
                        }
                        None | Some(b'\n' | b'#') => return Err(GiveUp), // a value on a later line
                        _ => self.flow_node(value, indent)?,
                    };
                } else {
                    cursor = self.flow_node(cursor, indent)?;
                }
                // Anything but `,` or the end here (after a plain scalar: text on the next line,
                // which would go on with it) is left to saphyr.
                let next = self.flow_gap(cursor, indent)?;
                match self.byte(next) {
                    Some(b',') => {
                        cursor = self.flow_gap(next + 1, indent)?;
                        // A trailing comma.
                        if matches!(self.byte(cursor), Some(b']' | b'}' | b',')) {
                            return Err(GiveUp);
                        }
                    }
                    Some(b) if b == close => {
                        cursor = next;
                        break;
                    }
                    _ => return Err(GiveUp),
                }
            }
        }
        let end = self.skip_ws_to_eol(cursor + 1)?;
        self.emit(
            if mapping {
                Event::MappingEnd
            } else {
                Event::SequenceEnd
            },
            cursor,
            end,
        )?;
        self.depth -= 1;
        Ok(end)
    }

    /// From `at`, inside a flow collection, to its next token: over spaces, comments and line
    /// breaks, each line after a break indented more than `indent` (saphyr: "invalid
    /// indentation").
    fn flow_gap(&self, mut at: usize, indent: usize) -> Scan<usize> {
        loop {
            let after = self.skip_spaces(at);
            match self.byte(after) {
                None => return Err(GiveUp), // never closed
                Some(b'#') => {
                    // A comment must follow whitespace.
                    if after == at && at > 0 && self.bytes[at - 1] != b'\n' {
                        return Err(GiveUp);
                    }
                    at = self.line_end(after);
                }
                Some(b'\n') => {
                    let line = after + 1;
                    let first = self.skip_spaces(line);
                    if !matches!(self.byte(first), None | Some(b'\n')) && first - line <= indent {
                        return Err(GiveUp);
                    }
                    at = line;
                }
                Some(_) => return Ok(after),
            }
        }
    }

    /// A node inside a flow collection; returns where its span ends.
    fn flow_node(&mut self, at: usize, indent: usize) -> Scan<usize> {
        match self.byte(at) {
            Some(b'[' | b'{') => self.flow_collection(at, indent),
            _ => {
                let scalar = self.flow_scalar(at)?;
                let end = scalar.end;
                // `[a: b]` is a mapping inside the sequence.
                if self.byte(self.skip_spaces(end)) == Some(b':') {
                    return Err(GiveUp);
                }
                self.emit_scalar(scalar)?;
                Ok(end)
            }
        }
    }

    fn flow_scalar(&self, at: usize) -> Scan<Scalar<'t>> {
        match self.byte(at) {
            Some(b'"') => self.double_quoted(at),
            Some(b'\'') => self.single_quoted(at),
            _ => self.plain(at, true),
        }
    }

    /// A plain scalar on one line, in a flow collection or not. Gives up where the rules get
    /// subtle (`:` or `#` inside a flow scalar, a scalar that starts with an indicator).
    fn plain(&self, at: usize, flow: bool) -> Scan<Scalar<'t>> {
        match self.byte(at) {
            None
            | Some(
                b'\n' | b' ' | b'?' | b':' | b',' | b'[' | b']' | b'{' | b'}' | b'#' | b'&' | b'*'
                | b'!' | b'|' | b'>' | b'\'' | b'"' | b'%' | b'@' | b'`',
            ) => return Err(GiveUp),
            Some(b'-') if self.blank_or_end(at + 1) => return Err(GiveUp),
            Some(b'-')
                if flow && matches!(self.byte(at + 1), Some(b',' | b'[' | b']' | b'{' | b'}')) =>
            {
                return Err(GiveUp)
            }
            _ => {}
        }
        let end = self.plain_run(at, flow)?;
        Ok(Scalar {
            value: Cow::Borrowed(&self.text[at..end]),
            style: ScalarStyle::Plain,
            start: at,
            end,
        })
    }

    /// Where a plain scalar's text that starts at `at` ends on its line (trailing spaces left
    /// out): before a line break, ` #`, `: ` or, in a flow collection, an indicator.
    fn plain_run(&self, at: usize, flow: bool) -> Scan<usize> {
        let mut end = at;
        let mut cursor = at;
        while let Some(b) = self.byte(cursor) {
            match b {
                b'\n' => break,
                b' ' => {
                    if self.byte(cursor + 1) == Some(b'#') {
                        break;
                    }
                }
                b':' => {
                    if self.blank_or_end(cursor + 1) {
                        break;
                    }
                    if flow {
                        return Err(GiveUp);
                    }
                    end = cursor + 1;
                }
                b',' | b'[' | b']' | b'{' | b'}' if flow => break,
                b'#' if flow => return Err(GiveUp),
                _ => end = cursor + 1,
            }
            cursor += 1;
        }
        Ok(self.char_boundary(end))
    }

    /// A plain scalar in a block collection indented at `indent`, which goes on over the
    /// following lines that are indented more: they are folded into it (a line break becomes a
    /// space, each empty line a line break), as YAML's flow folding does.
    fn plain_lines(&self, at: usize, indent: usize) -> Scan<Scalar<'t>> {
        let mut scalar = self.plain(at, false)?;
        let mut folded: Option<String> = None;
        loop {
            let rest = self.skip_spaces(scalar.end);
            if self.byte(rest) != Some(b'\n') {
                break; // the end, a comment, or what the caller reports
            }
            let mut line = rest + 1;
            let mut empty_lines = 0;
            let first = loop {
                let first = self.skip_spaces(line);
                if self.byte(first) != Some(b'\n') {
                    break first;
                }
                empty_lines += 1;
                line = first + 1;
            };
            match self.byte(first) {
                None => break,
                Some(_) if first - line <= indent => break,
                // A comment or an indicator where the scalar would go on: left to saphyr.
                Some(
                    b'#' | b'-' | b'?' | b':' | b',' | b'[' | b']' | b'{' | b'}' | b'&' | b'*'
                    | b'!' | b'|' | b'>' | b'\'' | b'"' | b'%' | b'@' | b'`',
                ) => return Err(GiveUp),
                Some(_) => {}
            }
            let end = self.plain_run(first, false)?;
            let text = folded.get_or_insert_with(|| scalar.value.clone().into_owned());
            if empty_lines == 0 {
                text.push(' ');
            } else {
                (0..empty_lines).for_each(|_| text.push('\n'));
            }
            text.push_str(&self.text[first..end]);
            scalar.end = end;
        }
        if let Some(text) = folded {
            scalar.value = Cow::Owned(text);
        }
        Ok(scalar)
    }

    /// `end` moved past the rest of a multi-byte character it may fall inside.
    fn char_boundary(&self, mut end: usize) -> usize {
        while !self.text.is_char_boundary(end) {
            end += 1;
        }
        end
    }

    /// A double-quoted scalar closed on its line; its span takes the spaces and comment after.
    fn double_quoted(&self, at: usize) -> Scan<Scalar<'t>> {
        let mut cursor = at + 1;
        let mut owned: Option<String> = None;
        let mut run = cursor; // start of the text not yet copied into `owned`
        loop {
            match self.byte(cursor) {
                None | Some(b'\n') => return Err(GiveUp),
                Some(b'"') => break,
                Some(b'\\') => {
                    let value = owned.get_or_insert_with(String::new);
                    value.push_str(&self.text[run..cursor]);
                    let (ch, len) = self.escape(cursor + 1)?;
                    value.push(ch);
                    cursor += 1 + len;
                    run = cursor;
                }
                Some(b) if b < b' ' || b == 0x7f => return Err(GiveUp),
                Some(_) => cursor += 1,
            }
        }
        let value = match owned {
            Some(mut value) => {
                value.push_str(&self.text[run..cursor]);
                Cow::Owned(value)
            }
            None => Cow::Borrowed(&self.text[at + 1..cursor]),
        };
        Ok(Scalar {
            value,
            style: ScalarStyle::DoubleQuoted,
            start: at,
            end: self.skip_ws_to_eol(cursor + 1)?,
        })
    }

    /// The character of the escape that starts at `at` (after the backslash), and its length.
    fn escape(&self, at: usize) -> Scan<(char, usize)> {
        let simple = |c: char| Ok((c, 1));
        match self.byte(at).ok_or(GiveUp)? {
            b'0' => simple('\0'),
            b'a' => simple('\u{7}'),
            b'b' => simple('\u{8}'),
            b't' => simple('\t'),
            b'n' => simple('\n'),
            b'v' => simple('\u{b}'),
            b'f' => simple('\u{c}'),
            b'r' => simple('\r'),
            b'e' => simple('\u{1b}'),
            b' ' => simple(' '),
            b'"' => simple('"'),
            b'/' => simple('/'),
            b'\\' => simple('\\'),
            b'N' => simple('\u{85}'),
            b'_' => simple('\u{a0}'),
            b'L' => simple('\u{2028}'),
            b'P' => simple('\u{2029}'),
            b'x' => self.hex_escape(at, 2),
            b'u' => self.hex_escape(at, 4),
            b'U' => self.hex_escape(at, 8),
            _ => Err(GiveUp),
        }
    }

    fn hex_escape(&self, at: usize, digits: usize) -> Scan<(char, usize)> {
        let hex = self.text.get(at + 1..at + 1 + digits).ok_or(GiveUp)?;
        if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(GiveUp);
        }
        let code = u32::from_str_radix(hex, 16).map_err(|_| GiveUp)?;
        Ok((char::from_u32(code).ok_or(GiveUp)?, 1 + digits))
    }

    /// A single-quoted scalar closed on its line; its span takes the spaces and comment after.
    fn single_quoted(&self, at: usize) -> Scan<Scalar<'t>> {
        let mut cursor = at + 1;
        let mut doubled = false;
        loop {
            match self.byte(cursor) {
                None | Some(b'\n') => return Err(GiveUp),
                Some(b'\'') if self.byte(cursor + 1) == Some(b'\'') => {
                    doubled = true;
                    cursor += 2;
                }
                Some(b'\'') => break,
                Some(b) if b < b' ' || b == 0x7f => return Err(GiveUp),
                Some(_) => cursor += 1,
            }
        }
        let inner = &self.text[at + 1..cursor];
        let value = if doubled {
            Cow::Owned(inner.replace("''", "'"))
        } else {
            Cow::Borrowed(inner)
        };
        Ok(Scalar {
            value,
            style: ScalarStyle::SingleQuoted,
            start: at,
            end: self.skip_ws_to_eol(cursor + 1)?,
        })
    }
}

#[cfg(test)]
mod tests;
