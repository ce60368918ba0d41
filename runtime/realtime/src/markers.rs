//! Text-marker tool calls, for models without native function calling.
//!
//! Such a model is told about the tools in its instructions ([`catalog_instructions`]) and writes
//! a call into its reply as `<<<TAG:NAME=tool_name,ARGUMENTS={json}>>>`. The [`MarkerScanner`]
//! finds those markers in the streamed text, however the deltas are split, hides them from the
//! user and hands out the calls.
//!
//! The scanner is independent of the registry: unknown-tool checking takes a set of names or a
//! predicate, so it can be used alone.
//!
//! What the scanner guarantees:
//! - visible text never contains any byte of a marker, not even of a broken one, and never half
//!   a UTF-8 character (invalid UTF-8 becomes U+FFFD, as in [`String::from_utf8_lossy`]);
//! - text that only looks like the start of a marker (`<<`, `<<<APIP`, `<<<OTHER:`) is released
//!   as soon as it cannot be one, so ordinary text is never held back for long;
//! - once the full opening `<<<TAG:NAME=` has been seen, everything up to the marker's end is
//!   part of the marker. The end is the first `>>>` that is outside every brace pair and every
//!   JSON string inside braces, so `>>>` within argument strings does not end it;
//! - a broken marker yields exactly one [`MarkerError`], at the moment the problem is known;
//! - memory is bounded by the configured maximum marker length, whatever the stream length.

mod catalog;
mod vocabulary;

use std::collections::BTreeSet;
use std::fmt;

pub use catalog::catalog_instructions;
pub use vocabulary::{InvalidTag, MarkerCall, MarkerError, MarkerEvent, MarkerTag, ScanEvent};

/// Default upper bound of one marker, from `<<<` to `>>>` inclusive.
pub const DEFAULT_MAX_MARKER_LEN: usize = 64 * 1024;

/// Tool names follow the rule that every provider accepts: `^[A-Za-z_][A-Za-z0-9_-]{0,63}$`.
const MAX_NAME_LEN: usize = 64;

/// The smallest limit that still fits a useful marker after the opening.
const MIN_BODY_LEN: usize = 32;

/// Which tool names a marker may name.
enum KnownTools {
    Any,
    Set(BTreeSet<String>),
    Filter(Box<dyn Fn(&str) -> bool + Send + Sync>),
}

impl KnownTools {
    fn allows(&self, name: &str) -> bool {
        match self {
            KnownTools::Any => true,
            KnownTools::Set(set) => set.contains(name),
            KnownTools::Filter(f) => f(name),
        }
    }
}

impl fmt::Debug for KnownTools {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KnownTools::Any => f.write_str("Any"),
            KnownTools::Set(set) => f.debug_tuple("Set").field(set).finish(),
            KnownTools::Filter(_) => f.write_str("Filter(..)"),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Ordinary text.
    Text,
    /// The first `n` bytes of the opening have been seen and are held back.
    Opening(usize),
    /// Inside a marker, after its opening.
    Body,
}

/// Where the marker's grammar stands. Independent of it, [`Structure`] finds the marker's end,
/// so a marker that breaks the grammar is still skipped as a whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Grammar {
    Name,
    /// `n` bytes of `ARGUMENTS=` matched.
    Keyword(usize),
    BeforeJson,
    Json,
    /// `n` bytes of `>>>` matched.
    Close(usize),
    /// An error has been reported for this marker; only its end is still looked for.
    Failed,
}

const KEYWORD: &[u8] = b"ARGUMENTS=";

/// Finds the end of a marker: three `>` outside braces. Inside braces, JSON strings (with their
/// escapes) are skipped, so `>>>` and braces within argument strings do not count. Quotes
/// outside braces are ordinary characters, so that a stray `"` in a broken tool name cannot
/// hide the end of the marker.
#[derive(Clone, Copy, Debug, Default)]
struct Structure {
    depth: usize,
    in_string: bool,
    escaped: bool,
    closes: u8,
}

impl Structure {
    /// Returns true when `b` completes the marker's closing `>>>`.
    #[inline]
    fn step(&mut self, b: u8) -> bool {
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
            }
            return false;
        }
        match b {
            b'>' if self.depth == 0 => {
                self.closes += 1;
                return self.closes == 3;
            }
            b'"' if self.depth > 0 => self.in_string = true,
            b'{' => self.depth = self.depth.saturating_add(1),
            b'}' => self.depth = self.depth.saturating_sub(1),
            _ => {}
        }
        self.closes = 0;
        false
    }
}

/// UTF-8 bytes of a character split across chunks. Only ever holds a valid, incomplete prefix.
#[derive(Clone, Copy, Debug, Default)]
struct Utf8Carry {
    bytes: [u8; 4],
    len: usize,
}

const REPLACEMENT: &str = "\u{FFFD}";

fn utf8_width(lead: u8) -> usize {
    match lead {
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF4 => 4,
        _ => 1,
    }
}

/// The input of one call, so that `&str` chunks skip UTF-8 validation.
#[derive(Clone, Copy)]
enum Chunk<'a> {
    Bytes(&'a [u8]),
    Str(&'a str),
}

impl<'a> Chunk<'a> {
    fn bytes(self) -> &'a [u8] {
        match self {
            Chunk::Bytes(b) => b,
            Chunk::Str(s) => s.as_bytes(),
        }
    }
}

/// The streaming marker scanner. Feed it text deltas with [`feed`](Self::feed) /
/// [`feed_str`](Self::feed_str) (or the collecting [`push`](Self::push) /
/// [`push_str`](Self::push_str)) and call [`finish`](Self::finish) at the end of the stream;
/// after `finish` it is ready for a new stream.
#[derive(Debug)]
pub struct MarkerScanner {
    tag: MarkerTag,
    /// KMP failure function of the opening: how much of it to keep held after a mismatch.
    fallback: Box<[usize]>,
    max_len: usize,
    known: KnownTools,
    state: State,
    carry: Utf8Carry,
    // The marker being read.
    grammar: Grammar,
    structure: Structure,
    marker_len: usize,
    name: String,
    name_done: bool,
    json: Vec<u8>,
    /// `json` is already known to be valid JSON (it was parsed in one piece).
    json_valid: bool,
}

impl MarkerScanner {
    /// A scanner for markers with `tag`, accepting calls of any tool name and markers up to
    /// [`DEFAULT_MAX_MARKER_LEN`] bytes.
    pub fn new(tag: MarkerTag) -> MarkerScanner {
        let fallback = failure_function(tag.opening().as_bytes());
        MarkerScanner {
            fallback,
            max_len: DEFAULT_MAX_MARKER_LEN,
            known: KnownTools::Any,
            state: State::Text,
            carry: Utf8Carry::default(),
            grammar: Grammar::Name,
            structure: Structure::default(),
            marker_len: 0,
            name: String::new(),
            name_done: false,
            json: Vec::new(),
            json_valid: false,
            tag,
        }
    }

    /// The largest marker accepted, from `<<<` to `>>>` inclusive (default
    /// [`DEFAULT_MAX_MARKER_LEN`]); raised to fit the opening plus a small body if smaller. It
    /// also bounds the scanner's memory.
    pub fn with_max_marker_len(mut self, max_len: usize) -> MarkerScanner {
        self.max_len = max_len.max(self.tag.opening().len() + MIN_BODY_LEN);
        self
    }

    /// Report calls of any tool not in `names` as [`MarkerError::UnknownTool`].
    pub fn with_known_tools<I, S>(mut self, names: I) -> MarkerScanner
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.known = KnownTools::Set(names.into_iter().map(Into::into).collect());
        self
    }

    /// Report calls of any tool for which `known` is false as [`MarkerError::UnknownTool`].
    pub fn with_tool_filter(
        mut self,
        known: impl Fn(&str) -> bool + Send + Sync + 'static,
    ) -> MarkerScanner {
        self.known = KnownTools::Filter(Box::new(known));
        self
    }

    /// The tag the scanner looks for.
    pub fn tag(&self) -> &MarkerTag {
        &self.tag
    }

    /// The largest marker accepted, in bytes from `<<<` to `>>>` inclusive.
    pub fn max_marker_len(&self) -> usize {
        self.max_len
    }

    /// True while the scanner holds back bytes that may still turn out to be a marker or is
    /// inside one.
    pub fn is_holding(&self) -> bool {
        self.state != State::Text || self.carry.len > 0
    }

    /// Scans a chunk of bytes, which may end anywhere (inside a UTF-8 character, inside a
    /// marker). Events go to `sink` in stream order.
    pub fn feed<F: FnMut(MarkerEvent<'_>)>(&mut self, chunk: &[u8], sink: &mut F) {
        self.run(Chunk::Bytes(chunk), sink);
    }

    /// Like [`feed`](Self::feed), for text already known to be UTF-8.
    pub fn feed_str<F: FnMut(MarkerEvent<'_>)>(&mut self, chunk: &str, sink: &mut F) {
        self.run(Chunk::Str(chunk), sink);
    }

    /// Ends the stream: releases held text that turned out not to be a marker, reports an
    /// unterminated marker, and resets the scanner for a new stream.
    pub fn finish<F: FnMut(MarkerEvent<'_>)>(&mut self, sink: &mut F) {
        match self.state {
            State::Text => {}
            State::Opening(n) => sink(MarkerEvent::Text(&self.tag.opening()[..n])),
            State::Body => {
                if self.grammar != Grammar::Failed {
                    let name = self.name_if_done();
                    sink(MarkerEvent::Error(MarkerError::Unterminated { name }));
                }
            }
        }
        self.flush_carry(sink);
        self.state = State::Text;
        self.reset_marker();
    }

    /// [`feed`](Self::feed), collecting owned events; adjacent text is joined.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<ScanEvent> {
        let mut out = Vec::new();
        self.feed(chunk, &mut collector(&mut out));
        out
    }

    /// [`feed_str`](Self::feed_str), collecting owned events; adjacent text is joined.
    pub fn push_str(&mut self, chunk: &str) -> Vec<ScanEvent> {
        let mut out = Vec::new();
        self.feed_str(chunk, &mut collector(&mut out));
        out
    }

    /// [`finish`](Self::finish), collecting owned events.
    pub fn finish_events(&mut self) -> Vec<ScanEvent> {
        let mut out = Vec::new();
        self.finish(&mut collector(&mut out));
        out
    }

    fn run<F: FnMut(MarkerEvent<'_>)>(&mut self, chunk: Chunk<'_>, sink: &mut F) {
        let bytes = chunk.bytes();
        let mut i = 0;
        while i < bytes.len() {
            match self.state {
                State::Text => match memchr::memchr(b'<', &bytes[i..]) {
                    None => {
                        self.emit_text(chunk, i, bytes.len(), sink);
                        i = bytes.len();
                    }
                    Some(offset) => {
                        let at = i + offset;
                        self.emit_text(chunk, i, at, sink);
                        // A character cut short by `<` can never be completed.
                        self.flush_carry(sink);
                        let opening_len = self.tag.opening().len();
                        if bytes[at..].starts_with(self.tag.opening().as_bytes()) {
                            // The whole opening is in this chunk: no need to match it bytewise.
                            self.begin_marker();
                            i = at + opening_len;
                        } else {
                            self.state = State::Opening(1);
                            i = at + 1;
                        }
                    }
                },
                State::Opening(held) => {
                    let (state, consumed) = self.opening_step(held, bytes[i], sink);
                    self.state = state;
                    if consumed {
                        i += 1;
                    }
                    if let State::Opening(n) = self.state {
                        if n == self.tag.opening().len() {
                            self.begin_marker();
                        }
                    }
                }
                State::Body => {
                    while i < bytes.len() {
                        // Take the name and the arguments in bulk where the chunk allows;
                        // what these leave (an odd byte, the limit) goes through `body_step`.
                        let taken = match self.grammar {
                            Grammar::Name => self.name_run(&bytes[i..]),
                            Grammar::Keyword(n) => self.keyword_run(n, &bytes[i..]),
                            Grammar::BeforeJson if bytes[i] == b'{' => self.json_whole(&bytes[i..]),
                            Grammar::Json => self.json_run(&bytes[i..]),
                            _ => 0,
                        };
                        if taken > 0 {
                            i += taken;
                            continue;
                        }
                        let b = bytes[i];
                        i += 1;
                        if self.body_step(b, sink) {
                            self.reset_marker();
                            self.state = State::Text;
                            break;
                        }
                    }
                }
            }
        }
    }

    /// Advances the match of the opening by one byte. Returns the new state and whether the
    /// byte was used; an unused byte is ordinary text and is read again in the text state.
    fn opening_step<F: FnMut(MarkerEvent<'_>)>(
        &self,
        mut held: usize,
        b: u8,
        sink: &mut F,
    ) -> (State, bool) {
        let opening = self.tag.opening().as_bytes();
        loop {
            if opening[held] == b {
                return (State::Opening(held + 1), true);
            }
            if held == 0 {
                return (State::Text, false);
            }
            // Keep the longest tail of what is held that can still start the opening; the
            // rest cannot belong to a marker any more.
            let keep = self.fallback[held - 1];
            sink(MarkerEvent::Text(&self.tag.opening()[..held - keep]));
            held = keep;
        }
    }

    fn begin_marker(&mut self) {
        self.state = State::Body;
        self.reset_marker();
        self.marker_len = self.tag.opening().len();
    }

    fn reset_marker(&mut self) {
        self.grammar = Grammar::Name;
        self.structure = Structure::default();
        self.marker_len = 0;
        self.name.clear();
        self.name_done = false;
        self.json.clear();
        self.json_valid = false;
    }

    fn name_if_done(&self) -> Option<String> {
        self.name_done.then(|| self.name.clone())
    }

    fn fail<F: FnMut(MarkerEvent<'_>)>(&mut self, error: MarkerError, sink: &mut F) {
        self.grammar = Grammar::Failed;
        self.json.clear();
        sink(MarkerEvent::Error(error));
    }

    fn malformed<F: FnMut(MarkerEvent<'_>)>(&mut self, reason: &'static str, sink: &mut F) {
        let name = self.name_if_done();
        self.fail(MarkerError::Malformed { name, reason }, sink);
    }

    /// One byte inside a marker. Returns true when it ended the marker.
    fn body_step<F: FnMut(MarkerEvent<'_>)>(&mut self, b: u8, sink: &mut F) -> bool {
        let ended = self.structure.step(b);
        self.marker_len += 1;
        match self.grammar {
            Grammar::Failed => {}
            Grammar::Name => {
                if b == b',' {
                    if self.name.is_empty() {
                        self.malformed("the tool name is empty", sink);
                    } else {
                        self.name_done = true;
                        self.grammar = Grammar::Keyword(0);
                    }
                } else if !is_name_byte(b) {
                    self.malformed(
                        "the tool name may only contain ASCII letters, digits, `_` and `-`, followed by `,ARGUMENTS=`",
                        sink,
                    );
                } else if self.name.is_empty() && !is_name_start(b) {
                    self.malformed("the tool name must start with a letter or `_`", sink);
                } else if self.name.len() == MAX_NAME_LEN {
                    self.malformed("the tool name is longer than 64 characters", sink);
                } else {
                    self.name.push(char::from(b));
                }
            }
            Grammar::Keyword(n) => {
                if b == KEYWORD[n] {
                    self.grammar = if n + 1 == KEYWORD.len() {
                        Grammar::BeforeJson
                    } else {
                        Grammar::Keyword(n + 1)
                    };
                } else {
                    self.malformed("expected `ARGUMENTS=` after the tool name and `,`", sink);
                }
            }
            Grammar::BeforeJson => {
                if b == b'{' {
                    self.json.push(b);
                    self.grammar = Grammar::Json;
                } else if !b.is_ascii_whitespace() {
                    self.malformed(
                        "the arguments must be a JSON object starting with `{`",
                        sink,
                    );
                }
            }
            Grammar::Json => {
                self.json.push(b);
                if self.structure.depth == 0 {
                    self.grammar = Grammar::Close(0);
                }
            }
            Grammar::Close(n) => {
                if b == b'>' {
                    self.grammar = Grammar::Close(n + 1);
                } else if !(n == 0 && b.is_ascii_whitespace()) {
                    self.malformed("expected `>>>` right after the arguments object", sink);
                }
            }
        }
        if self.grammar != Grammar::Failed && self.marker_len > self.max_len {
            let name = self.name_if_done();
            let limit = self.max_len;
            self.fail(MarkerError::TooLong { name, limit }, sink);
        }
        if ended {
            self.complete(sink);
        }
        ended
    }

    /// How many more bytes the marker may have before it is over the limit.
    fn room(&self) -> usize {
        self.max_len.saturating_sub(self.marker_len)
    }

    /// Reads the valid characters of the tool name at the start of `bytes`; returns how many.
    /// Anything that needs an error (a bad first character, a name too long, the limit) is
    /// left to [`body_step`](Self::body_step).
    fn name_run(&mut self, bytes: &[u8]) -> usize {
        let room = self.room().min(MAX_NAME_LEN - self.name.len());
        if self.name.is_empty() && !bytes.first().is_some_and(|&b| is_name_start(b)) {
            return 0;
        }
        let taken = bytes
            .iter()
            .take(room)
            .take_while(|&&b| is_name_byte(b))
            .count();
        if let Ok(part) = std::str::from_utf8(&bytes[..taken]) {
            self.name.push_str(part);
        }
        if taken > 0 {
            // Name bytes are none of `>`, `"`, `{`, `}`: the structure only loses a partial `>>>`.
            self.structure.closes = 0;
            self.marker_len += taken;
        }
        taken
    }

    /// Matches the rest of `ARGUMENTS=` (from `matched`) at once when `bytes` holds all of it.
    fn keyword_run(&mut self, matched: usize, bytes: &[u8]) -> usize {
        let rest = &KEYWORD[matched..];
        if rest.len() > self.room() || !bytes.starts_with(rest) {
            return 0;
        }
        self.structure.closes = 0;
        self.marker_len += rest.len();
        self.grammar = Grammar::BeforeJson;
        rest.len()
    }

    /// When the whole arguments object is in `bytes` (and within the limit) and is valid JSON,
    /// finds its end and validates it in one pass; returns its length, or 0 to leave the object
    /// to [`json_run`](Self::json_run). For valid JSON the end found here is the one the
    /// structural scan would find, so the two paths agree however the input is split.
    fn json_whole(&mut self, bytes: &[u8]) -> usize {
        let window = &bytes[..bytes.len().min(self.room())];
        let mut values =
            serde_json::Deserializer::from_slice(window).into_iter::<serde::de::IgnoredAny>();
        match values.next() {
            Some(Ok(_)) => {
                let end = values.byte_offset();
                self.json.extend_from_slice(&window[..end]);
                self.json_valid = true;
                self.marker_len += end;
                self.structure = Structure::default();
                self.grammar = Grammar::Close(0);
                end
            }
            _ => 0,
        }
    }

    /// Reads arguments bytes up to the end of the JSON object, the end of `bytes` or the size
    /// limit, whichever comes first; returns how many it took. The byte that would go over the
    /// limit is left to [`body_step`](Self::body_step), which reports it.
    fn json_run(&mut self, bytes: &[u8]) -> usize {
        let window = &bytes[..bytes.len().min(self.room())];
        // Inside the object the depth is at least 1, so every `"` opens a string and `>` never
        // ends the marker. Ordinary bytes are skipped in tight inner loops, on local copies of
        // the structure.
        let Structure {
            mut depth,
            mut in_string,
            mut escaped,
            ..
        } = self.structure;
        let n = window.len();
        let mut k = 0;
        let mut closed = false;
        while k < n {
            if in_string {
                if escaped {
                    escaped = false;
                    k += 1;
                    continue;
                }
                while k < n && window[k] != b'"' && window[k] != b'\\' {
                    k += 1;
                }
                if k == n {
                    break;
                }
                if window[k] == b'\\' {
                    escaped = true;
                } else {
                    in_string = false;
                }
                k += 1;
                continue;
            }
            while k < n && !matches!(window[k], b'"' | b'{' | b'}') {
                k += 1;
            }
            if k == n {
                break;
            }
            match window[k] {
                b'"' => in_string = true,
                b'{' => depth = depth.saturating_add(1),
                _ => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        k += 1;
                        closed = true;
                        break;
                    }
                }
            }
            k += 1;
        }
        if closed {
            self.grammar = Grammar::Close(0);
        }
        self.structure = Structure {
            depth,
            in_string,
            escaped,
            closes: 0,
        };
        self.json.extend_from_slice(&window[..k]);
        self.marker_len += k;
        k
    }

    /// The marker's closing `>>>` has been read.
    fn complete<F: FnMut(MarkerEvent<'_>)>(&mut self, sink: &mut F) {
        match self.grammar {
            Grammar::Failed => {}
            Grammar::Close(3) => {
                let name = self.name.as_str();
                if !self.known.allows(name) {
                    let name = name.to_owned();
                    sink(MarkerEvent::Error(MarkerError::UnknownTool { name }));
                    return;
                }
                let event = match std::str::from_utf8(&self.json) {
                    Ok(arguments) => {
                        let checked = if self.json_valid {
                            Ok(serde::de::IgnoredAny)
                        } else {
                            serde_json::from_str::<serde::de::IgnoredAny>(arguments)
                        };
                        match checked {
                            Ok(_) => MarkerEvent::Call { name, arguments },
                            Err(e) => MarkerEvent::Error(MarkerError::InvalidJson {
                                name: name.to_owned(),
                                message: e.to_string(),
                            }),
                        }
                    }
                    Err(_) => MarkerEvent::Error(MarkerError::InvalidJson {
                        name: name.to_owned(),
                        message: "the arguments are not valid UTF-8".to_owned(),
                    }),
                };
                sink(event);
            }
            // The structure can only close where the grammar has failed or is complete; this
            // arm keeps a future change of either from passing a broken marker as a call.
            _ => self.malformed("the marker ended before its arguments were complete", sink),
        }
    }

    /// Emits `chunk[start..end]` as text, joining a character split across chunks.
    fn emit_text<F: FnMut(MarkerEvent<'_>)>(
        &mut self,
        chunk: Chunk<'_>,
        start: usize,
        end: usize,
        sink: &mut F,
    ) {
        if start >= end {
            return;
        }
        if self.carry.len == 0 {
            if let Chunk::Str(s) = chunk {
                // Segments begin and end at ASCII bytes or at the chunk's ends, so they are
                // character boundaries; `get` keeps that an assumption rather than a panic.
                if let Some(text) = s.get(start..end) {
                    sink(MarkerEvent::Text(text));
                    return;
                }
            }
        }
        self.emit_bytes(&chunk.bytes()[start..end], sink);
    }

    fn emit_bytes<F: FnMut(MarkerEvent<'_>)>(&mut self, mut rest: &[u8], sink: &mut F) {
        if self.carry.len > 0 {
            let have = self.carry.len;
            let need = utf8_width(self.carry.bytes[0]);
            let take = (need - have).min(rest.len());
            let mut joined = self.carry.bytes;
            joined[have..have + take].copy_from_slice(&rest[..take]);
            let joined = &joined[..have + take];
            match std::str::from_utf8(joined) {
                Ok(ch) => {
                    sink(MarkerEvent::Text(ch));
                    self.carry.len = 0;
                    rest = &rest[take..];
                }
                Err(e) if e.error_len().is_none() => {
                    // Still incomplete: all of `rest` was too short and is now carried.
                    self.carry.bytes[have..have + take].copy_from_slice(&rest[..take]);
                    self.carry.len = have + take;
                    return;
                }
                Err(e) => {
                    // One replacement for the longest valid prefix, which may run from the
                    // carry into `rest` (as `from_utf8_lossy` would do on the joined bytes);
                    // the byte after it starts new text.
                    sink(MarkerEvent::Text(REPLACEMENT));
                    self.carry.len = 0;
                    let bad = e.error_len().unwrap_or(have).max(have);
                    rest = &rest[(bad - have).min(take)..];
                }
            }
        }
        loop {
            match std::str::from_utf8(rest) {
                Ok(text) => {
                    if !text.is_empty() {
                        sink(MarkerEvent::Text(text));
                    }
                    return;
                }
                Err(e) => {
                    let (valid, after) = rest.split_at(e.valid_up_to());
                    if let Ok(text) = std::str::from_utf8(valid) {
                        if !text.is_empty() {
                            sink(MarkerEvent::Text(text));
                        }
                    }
                    match e.error_len() {
                        None => {
                            self.carry.bytes[..after.len()].copy_from_slice(after);
                            self.carry.len = after.len();
                            return;
                        }
                        Some(bad) => {
                            sink(MarkerEvent::Text(REPLACEMENT));
                            rest = &after[bad..];
                        }
                    }
                }
            }
        }
    }

    fn flush_carry<F: FnMut(MarkerEvent<'_>)>(&mut self, sink: &mut F) {
        if self.carry.len > 0 {
            self.carry.len = 0;
            sink(MarkerEvent::Text(REPLACEMENT));
        }
    }
}

fn is_name_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

fn collector(out: &mut Vec<ScanEvent>) -> impl FnMut(MarkerEvent<'_>) + '_ {
    move |event| match (out.last_mut(), event) {
        (Some(ScanEvent::Text(prev)), MarkerEvent::Text(t)) => prev.push_str(t),
        (_, event) => out.push(event.into_owned()),
    }
}

/// `fallback[i]`: the length of the longest proper prefix of `pattern[..=i]` that is also its
/// suffix (Knuth–Morris–Pratt).
fn failure_function(pattern: &[u8]) -> Box<[usize]> {
    let mut fallback = vec![0; pattern.len()];
    let mut k = 0;
    for i in 1..pattern.len() {
        while k > 0 && pattern[i] != pattern[k] {
            k = fallback[k - 1];
        }
        if pattern[i] == pattern[k] {
            k += 1;
        }
        fallback[i] = k;
    }
    fallback.into_boxed_slice()
}

#[cfg(test)]
mod tests;
