//! The two-pass marker flow of a realtime session, for models that call tools by writing
//! `<<<TAG:NAME=tool,ARGUMENTS={...}>>>` into their text instead of using native function calls.
//!
//! Pass one: the model's text deltas (`response.output_text.delta`, and
//! `response.output_audio_transcript.delta` for audio replies) go through one
//! [`MarkerScanner`] per content part. What reaches the browser is the visible text only: a
//! delta is rewritten when a marker (or the start of one) is in it and dropped when nothing of it
//! is visible, and every event that repeats the full text (`response.output_text.done`,
//! `response.content_part.*`, `response.output_item.*`, `conversation.item.*`, `response.done`)
//! carries the text with the markers removed. A complete marker becomes a call that the session
//! validates and runs exactly like a native one (server tools in-process, client tools through
//! the browser, with their deadlines); a broken marker becomes an error result the model can act
//! on.
//!
//! Pass two: the model does not know any function-call items, so a result cannot be a
//! `function_call_output`. Each result is injected as context instead: a
//! `conversation.item.create` with a `system` message whose `input_text` names the tool and
//! carries its output. When the last call of the response has its result, the session sends one
//! `response.create`, as for native calls, and the model answers with the results in view. The
//! server echoes the injected items (`conversation.item.added` / `.done`); those echoes are not
//! relayed, so the browser never sees a server tool's result.
//!
//! Limits, by design of the GA protocol:
//! - calls are taken from the streamed deltas, or from the `.done` event of a text part that
//!   had no deltas; a marker that only appears in `response.done` is removed from the text but
//!   not run;
//! - text held back at the very end of a part because it could still have been the start of a
//!   marker (a trailing `<<`, at most the opening's length) turns out visible only when the part
//!   ends: it is in the `.done` events' full text, not in a delta;
//! - markers in an audio reply are spoken; the flow is meant for text output.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use memchr::memmem;
use serde_json::{json, Map, Value};

use super::openai::{self, str_field, Head};
use super::Verdict;
use crate::dispatch::{CallOutcome, Status};
use crate::error::{CallError, CallErrorKind};
use crate::live::LiveTools;
use crate::markers::{
    catalog_instructions, MarkerError, MarkerEvent, MarkerScanner, MarkerTag, ScanEvent,
    DEFAULT_MAX_MARKER_LEN,
};
use crate::{Registry, ToolDefinition};

/// Call ids of marker calls start with this (the browser sees them for client tools).
pub const MARKER_CALL_PREFIX: &str = "toolc_marker_";

/// Ids of the injected result items start with this. The GA API accepts client-chosen item
/// ids; these stay within its 32-character limit.
pub const RESULT_ITEM_PREFIX: &str = "toolc_mk_";

/// Counters of the marker flow, shared by every session of one [`MarkerFlowConfig`].
#[derive(Debug, Default)]
pub struct MarkerCounters {
    /// Complete markers turned into calls.
    pub calls: AtomicU64,
    /// Broken markers (malformed, too long, unterminated, invalid JSON) answered with an error.
    pub errors: AtomicU64,
    /// Model events rewritten to hide marker text.
    pub rewritten_events: AtomicU64,
    /// Text deltas dropped because nothing in them was visible.
    pub dropped_deltas: AtomicU64,
    /// Results injected as `conversation.item.create` messages.
    pub results_injected: AtomicU64,
    /// Echoes of injected results held back from the browser.
    pub hidden_echoes: AtomicU64,
}

/// A copy of [`MarkerCounters`] at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MarkerCounterSnapshot {
    /// Complete markers turned into calls.
    pub calls: u64,
    /// Broken markers answered with an error.
    pub errors: u64,
    /// Model events rewritten to hide marker text.
    pub rewritten_events: u64,
    /// Text deltas dropped because nothing in them was visible.
    pub dropped_deltas: u64,
    /// Results injected as `conversation.item.create` messages.
    pub results_injected: u64,
    /// Echoes of injected results held back from the browser.
    pub hidden_echoes: u64,
}

impl MarkerCounters {
    /// The counters' current values. Each is read on its own, so a snapshot taken while sessions
    /// run need not be consistent across counters.
    pub fn snapshot(&self) -> MarkerCounterSnapshot {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        MarkerCounterSnapshot {
            calls: get(&self.calls),
            errors: get(&self.errors),
            rewritten_events: get(&self.rewritten_events),
            dropped_deltas: get(&self.dropped_deltas),
            results_injected: get(&self.results_injected),
            hidden_echoes: get(&self.hidden_echoes),
        }
    }

    fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// Turns the marker flow on for sessions: set [`crate::SessionConfig::markers`] to
/// `Some(Arc::new(config))`. The session then scans the model's text, runs marker calls, and
/// declares `instructions` (the tool catalog) in its `session.update`, after the application's
/// or the browser's own instructions.
pub struct MarkerFlowConfig {
    tag: MarkerTag,
    max_marker_len: usize,
    instructions: String,
    /// What the catalog text was made of, to make it again with the live tools of a session
    /// ([`crate::live::LiveTools`]); `None` for a flow made from text.
    source: Option<CatalogSource>,
    counters: Arc<MarkerCounters>,
}

/// The registry's definitions and which of them require authorization.
struct CatalogSource {
    definitions: Vec<ToolDefinition>,
    requires_auth: HashSet<String>,
}

impl fmt::Debug for MarkerFlowConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MarkerFlowConfig")
            .field("tag", &self.tag.as_str())
            .field("max_marker_len", &self.max_marker_len)
            .field("instructions", &self.instructions.len())
            .finish()
    }
}

impl MarkerFlowConfig {
    /// A flow with `tag` whose instructions are `instructions` as given (normally
    /// [`catalog_instructions`]; see [`MarkerFlowConfig::for_registry`]).
    pub fn new(tag: MarkerTag, instructions: impl Into<String>) -> MarkerFlowConfig {
        MarkerFlowConfig {
            tag,
            max_marker_len: DEFAULT_MAX_MARKER_LEN,
            instructions: instructions.into(),
            source: None,
            counters: Arc::new(MarkerCounters::default()),
        }
    }

    /// A flow whose instructions are the catalog of every tool of `registry`;
    /// `requires_auth` says which tools the catalog marks as needing authorization.
    pub fn for_registry(
        tag: MarkerTag,
        registry: &Registry,
        requires_auth: impl Fn(&ToolDefinition) -> bool,
    ) -> MarkerFlowConfig {
        let definitions: Vec<ToolDefinition> = registry.definitions().cloned().collect();
        let requires_auth: HashSet<String> = definitions
            .iter()
            .filter(|d| requires_auth(d))
            .map(|d| d.name.clone())
            .collect();
        let instructions =
            catalog_instructions(&definitions, &tag, |d| requires_auth.contains(&d.name));
        let mut config = MarkerFlowConfig::new(tag, instructions);
        config.source = Some(CatalogSource {
            definitions,
            requires_auth,
        });
        config
    }

    /// The catalog text for a session whose tools include `live` ones (a live remote catalog):
    /// the registry's tools that are not live, then the live tools as they are now, so that the
    /// text follows the catalog like the native declarations do. Without live tools, or for a
    /// flow made from text ([`MarkerFlowConfig::new`]), the text is the one given.
    pub fn instructions_with(&self, live: Option<&dyn LiveTools>) -> std::borrow::Cow<'_, str> {
        let (Some(live), Some(source)) = (live, &self.source) else {
            return std::borrow::Cow::Borrowed(&self.instructions);
        };
        let (_, theirs) = live.current();
        let mut tools: Vec<ToolDefinition> = source
            .definitions
            .iter()
            .filter(|d| !live.is_live(&d.name))
            .cloned()
            .collect();
        tools.extend(theirs.iter().cloned());
        let text = catalog_instructions(&tools, &self.tag, |d| {
            source.requires_auth.contains(&d.name) || live.requires_auth(&d.name)
        });
        std::borrow::Cow::Owned(text)
    }

    /// The largest marker accepted (see [`MarkerScanner::with_max_marker_len`]).
    pub fn with_max_marker_len(mut self, max_len: usize) -> MarkerFlowConfig {
        self.max_marker_len = max_len;
        self
    }

    /// The tag markers are written with.
    pub fn tag(&self) -> &MarkerTag {
        &self.tag
    }

    /// The catalog text declared in the session's instructions.
    pub fn instructions(&self) -> &str {
        &self.instructions
    }

    /// The flow's counters, shared by every session that uses this config.
    pub fn counters(&self) -> &Arc<MarkerCounters> {
        &self.counters
    }

    /// A scanner for one text stream. Every tool name is let through: the registry rejects
    /// unknown names itself, with the list of tools the model can use.
    pub fn scanner(&self) -> MarkerScanner {
        MarkerScanner::new(self.tag.clone()).with_max_marker_len(self.max_marker_len)
    }

    /// `theirs` followed by the catalog, or the catalog alone.
    pub fn merged_instructions(&self, theirs: Option<&str>) -> String {
        merge(theirs, &self.instructions)
    }

    /// Adds the catalog to the `session` object of the relay's first `session.update`.
    pub fn merge_into_session(&self, session: &mut Map<String, Value>) {
        let merged = self.merged_instructions(session.get("instructions").and_then(Value::as_str));
        session.insert("instructions".into(), Value::String(merged));
    }

    /// Adds the catalog to a browser's `session.update` when it sets `instructions` (which
    /// would otherwise replace the catalog); one without instructions keeps the catalog already
    /// declared. A transcription session is left alone.
    pub fn merge_into_session_update(&self, event: &mut Value) {
        self.merge_catalog_into_session_update(event, &self.instructions);
    }

    /// [`MarkerFlowConfig::merge_into_session_update`] with the catalog text `catalog`; returns
    /// the browser's own instructions when it set some, for the session to keep them when it
    /// declares the catalog again.
    pub(crate) fn merge_catalog_into_session_update(
        &self,
        event: &mut Value,
        catalog: &str,
    ) -> Option<String> {
        let session = event.get_mut("session").and_then(Value::as_object_mut)?;
        if session.get("type").and_then(Value::as_str) == Some("transcription") {
            return None;
        }
        let Some(Value::String(theirs)) = session.get("instructions") else {
            return None;
        };
        let theirs = theirs.clone();
        session.insert(
            "instructions".into(),
            Value::String(merge(Some(&theirs), catalog)),
        );
        Some(theirs)
    }

    /// `text` with every marker removed, or `None` when it has none (nothing to rewrite).
    pub fn strip(&self, text: &str) -> Option<String> {
        // No `<<<`, no marker: most texts are returned untouched without a scan.
        memmem::find(text.as_bytes(), b"<<<")?;
        let mut scanner = self.scanner();
        let mut visible = String::with_capacity(text.len());
        let mut sink = |e: MarkerEvent<'_>| {
            if let MarkerEvent::Text(t) = e {
                visible.push_str(t);
            }
        };
        scanner.feed_str(text, &mut sink);
        scanner.finish(&mut sink);
        (visible != text).then_some(visible)
    }
}

/// `theirs` followed by `catalog`, or `catalog` alone.
pub(crate) fn merge(theirs: Option<&str>, catalog: &str) -> String {
    match theirs.map(str::trim_end) {
        Some(t) if !t.is_empty() => format!("{t}\n\n{catalog}"),
        _ => catalog.to_owned(),
    }
}

/// What the scanner found in a model event, for the session to run.
#[derive(Debug)]
pub(crate) enum Found {
    Call {
        response_id: String,
        call_id: String,
        name: String,
        arguments: String,
    },
    Broken {
        response_id: String,
        call_id: String,
        error: CallError,
    },
}

#[derive(Debug)]
struct Stream {
    response_id: String,
    scanner: MarkerScanner,
}

/// The text events the flow rewrites.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Delta,
    TextDone(&'static str),
    Part,
    OutputItem,
    ConversationItem,
    ResponseDone,
}

fn kind_of(kind: &str) -> Option<Kind> {
    Some(match kind {
        "response.output_text.delta" | "response.output_audio_transcript.delta" => Kind::Delta,
        "response.output_text.done" => Kind::TextDone("text"),
        "response.output_audio_transcript.done" => Kind::TextDone("transcript"),
        "response.content_part.added" | "response.content_part.done" => Kind::Part,
        "response.output_item.added" | "response.output_item.done" => Kind::OutputItem,
        "conversation.item.added"
        | "conversation.item.done"
        | "conversation.item.created"
        | "conversation.item.retrieved" => Kind::ConversationItem,
        "response.done" => Kind::ResponseDone,
        _ => return None,
    })
}

/// Whether the JSON text may contain a `<` in a string: literally, or escaped as `\u003c`
/// (which some JSON writers do for HTML safety).
fn may_hold_lt(text: &str) -> bool {
    memchr::memchr(b'<', text.as_bytes()).is_some()
        || memmem::find(text.as_bytes(), b"\\u003c").is_some()
        || memmem::find(text.as_bytes(), b"\\u003C").is_some()
}

/// One session's marker state.
#[derive(Debug)]
pub(crate) struct MarkerFlow {
    config: Arc<MarkerFlowConfig>,
    /// Open text parts, by `(item_id, content_index)`.
    streams: HashMap<(String, u64), Stream>,
    /// Marker calls waiting for their result: call id → tool name.
    pending: HashMap<String, String>,
    /// Ids of injected result items, whose echoes are not relayed.
    injected: HashSet<String>,
    next_call: u64,
    next_item: u64,
}

impl MarkerFlow {
    pub(crate) fn new(config: Arc<MarkerFlowConfig>) -> MarkerFlow {
        MarkerFlow {
            config,
            streams: HashMap::new(),
            pending: HashMap::new(),
            injected: HashSet::new(),
            next_call: 0,
            next_item: 0,
        }
    }

    fn counters(&self) -> &MarkerCounters {
        &self.config.counters
    }

    /// Takes a model event after the session's own handling (`verdict`), hides marker text in
    /// it, and adds the calls it completes to `found`.
    pub(crate) fn on_model_event(
        &mut self,
        original: &str,
        verdict: Verdict,
        found: &mut Vec<Found>,
    ) -> Verdict {
        let text = match &verdict {
            Verdict::Drop => return Verdict::Drop,
            Verdict::Forward => original,
            Verdict::Replace(t) => t.as_str(),
        };
        // Most events are audio and other deltas: skip them on the cheap type read, and skip
        // parsing a text event that cannot hold a marker while no stream holds text back.
        let kind = match openai::head(text) {
            Head::Typed(k) => match kind_of(&k) {
                Some(kind) => kind,
                None => return verdict,
            },
            _ => return verdict,
        };
        let lt = may_hold_lt(text);
        match kind {
            Kind::Delta if !lt && !self.streams.values().any(|s| s.scanner.is_holding()) => {
                return verdict
            }
            Kind::Part | Kind::OutputItem if !lt => return verdict,
            Kind::ConversationItem if !lt => return self.hide_echo(text).unwrap_or(verdict),
            Kind::TextDone(_) | Kind::ResponseDone if !lt && self.streams.is_empty() => {
                return verdict
            }
            _ => {}
        }
        let Ok(mut event) = serde_json::from_str::<Value>(text) else {
            return verdict;
        };
        let changed = match kind {
            Kind::Delta => return self.delta(event, verdict, found),
            Kind::TextDone(field) => self.text_done(&mut event, field, found),
            Kind::Part => event.get_mut("part").is_some_and(|p| self.strip_part(p)),
            Kind::OutputItem => event.get_mut("item").is_some_and(|i| self.strip_item(i)),
            Kind::ConversationItem => {
                if self.is_injected(&event) {
                    MarkerCounters::bump(&self.counters().hidden_echoes);
                    return Verdict::Drop;
                }
                event.get_mut("item").is_some_and(|i| self.strip_item(i))
            }
            Kind::ResponseDone => self.response_done(&mut event, found),
        };
        if changed {
            MarkerCounters::bump(&self.counters().rewritten_events);
            Verdict::Replace(event.to_string())
        } else {
            verdict
        }
    }

    /// For an item event that cannot contain a marker: drop it when it echoes an injected
    /// result (its text has no `<`, but its id is ours).
    fn hide_echo(&self, text: &str) -> Option<Verdict> {
        if self.injected.is_empty() {
            return None;
        }
        let event: Value = serde_json::from_str(text).ok()?;
        if self.is_injected(&event) {
            MarkerCounters::bump(&self.counters().hidden_echoes);
            return Some(Verdict::Drop);
        }
        None
    }

    fn is_injected(&self, event: &Value) -> bool {
        event
            .get("item")
            .and_then(|i| str_field(i, "id"))
            .is_some_and(|id| self.injected.contains(id))
    }

    fn stream_key(event: &Value) -> Option<(String, u64)> {
        let item_id = str_field(event, "item_id")?.to_owned();
        let index = event
            .get("content_index")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        Some((item_id, index))
    }

    fn delta(&mut self, mut event: Value, verdict: Verdict, found: &mut Vec<Found>) -> Verdict {
        let Some(key) = Self::stream_key(&event) else {
            return verdict;
        };
        let Some(delta) = event.get("delta").and_then(Value::as_str) else {
            return verdict;
        };
        let response_id = str_field(&event, "response_id").unwrap_or("").to_owned();
        let config = self.config.clone();
        let stream = self.streams.entry(key).or_insert_with(|| Stream {
            response_id: response_id.clone(),
            scanner: config.scanner(),
        });
        let mut visible = String::with_capacity(delta.len());
        let mut events = Vec::new();
        stream.scanner.feed_str(delta, &mut |e| match e {
            MarkerEvent::Text(t) => visible.push_str(t),
            other => events.push(other.into_owned()),
        });
        let response_id = stream.response_id.clone();
        self.found(&response_id, events, found);
        if visible == delta {
            return verdict;
        }
        if visible.is_empty() {
            MarkerCounters::bump(&self.counters().dropped_deltas);
            return Verdict::Drop;
        }
        event["delta"] = Value::String(visible);
        MarkerCounters::bump(&self.counters().rewritten_events);
        Verdict::Replace(event.to_string())
    }

    /// The end of a text part: the held text is settled, an unterminated marker reported, and
    /// the full text rewritten. A part that had no deltas is scanned here for its calls.
    fn text_done(&mut self, event: &mut Value, field: &str, found: &mut Vec<Found>) -> bool {
        let key = Self::stream_key(event);
        let response_id = str_field(event, "response_id").unwrap_or("").to_owned();
        let stream = key.and_then(|k| self.streams.remove(&k));
        let Some(full) = event.get(field).and_then(Value::as_str) else {
            if let Some(mut stream) = stream {
                let events = finish_events(&mut stream.scanner);
                self.found(&stream.response_id, events, found);
            }
            return false;
        };
        let (visible, events, response_id) = match stream {
            Some(mut stream) => {
                let events = finish_events(&mut stream.scanner);
                (self.config.strip(full), events, stream.response_id)
            }
            None => {
                let mut scanner = self.config.scanner();
                let mut text = String::with_capacity(full.len());
                let mut events = Vec::new();
                let mut sink = |e: MarkerEvent<'_>| match e {
                    MarkerEvent::Text(t) => text.push_str(t),
                    other => events.push(other.into_owned()),
                };
                scanner.feed_str(full, &mut sink);
                scanner.finish(&mut sink);
                ((text != full).then_some(text), events, response_id)
            }
        };
        self.found(&response_id, events, found);
        match visible {
            Some(v) => {
                event[field] = Value::String(v);
                true
            }
            None => false,
        }
    }

    fn response_done(&mut self, event: &mut Value, found: &mut Vec<Found>) -> bool {
        let response = event.get("response");
        let response_id = response
            .and_then(|r| str_field(r, "id"))
            .unwrap_or("")
            .to_owned();
        let cancelled = response
            .and_then(|r| str_field(r, "status"))
            .is_some_and(|s| s == "cancelled" || s == "failed");
        // Parts whose `.done` never came end with their response. A cancelled response (the
        // user spoke over it) ends quietly: an unterminated marker there is not worth a turn.
        let ended: Vec<(String, u64)> = self
            .streams
            .iter()
            .filter(|(_, s)| s.response_id == response_id)
            .map(|(k, _)| k.clone())
            .collect();
        for key in ended {
            if let Some(mut stream) = self.streams.remove(&key) {
                let events = finish_events(&mut stream.scanner);
                if !cancelled {
                    self.found(&stream.response_id, events, found);
                }
            }
        }
        let mut changed = false;
        if let Some(items) = event
            .get_mut("response")
            .and_then(|r| r.get_mut("output"))
            .and_then(Value::as_array_mut)
        {
            for item in items {
                changed |= self.strip_item(item);
            }
        }
        changed
    }

    /// Strips the text and transcript of every content part of a message item.
    fn strip_item(&self, item: &mut Value) -> bool {
        if item.get("type").and_then(Value::as_str) != Some("message") {
            return false;
        }
        let Some(content) = item.get_mut("content").and_then(Value::as_array_mut) else {
            return false;
        };
        let mut changed = false;
        for part in content {
            changed |= self.strip_part(part);
        }
        changed
    }

    fn strip_part(&self, part: &mut Value) -> bool {
        let mut changed = false;
        for field in ["text", "transcript"] {
            let stripped = part
                .get(field)
                .and_then(Value::as_str)
                .and_then(|t| self.config.strip(t));
            if let Some(s) = stripped {
                part[field] = Value::String(s);
                changed = true;
            }
        }
        changed
    }

    fn found(&mut self, response_id: &str, events: Vec<ScanEvent>, found: &mut Vec<Found>) {
        for event in events {
            if matches!(event, ScanEvent::Text(_)) {
                continue;
            }
            self.next_call += 1;
            let call_id = format!("{MARKER_CALL_PREFIX}{}", self.next_call);
            match event {
                ScanEvent::Text(_) => {}
                ScanEvent::Call(call) => {
                    MarkerCounters::bump(&self.counters().calls);
                    self.pending.insert(call_id.clone(), call.name.clone());
                    found.push(Found::Call {
                        response_id: response_id.to_owned(),
                        call_id,
                        name: call.name,
                        arguments: call.arguments,
                    });
                }
                ScanEvent::Error(error) => {
                    MarkerCounters::bump(&self.counters().errors);
                    let name = error.tool_name().unwrap_or("").to_owned();
                    self.pending.insert(call_id.clone(), name);
                    found.push(Found::Broken {
                        response_id: response_id.to_owned(),
                        call_id,
                        error: marker_error(&self.config.tag, &error),
                    });
                }
            }
        }
    }

    /// Forgets a marker call that the session did not run (e.g. one inside a filler).
    pub(crate) fn forget(&mut self, call_id: &str) {
        self.pending.remove(call_id);
    }

    /// The result of a marker call as the context item that carries it to the model; `None`
    /// when `call_id` is not a marker call of this flow.
    pub(crate) fn result_event(&mut self, call_id: &str, outcome: &CallOutcome) -> Option<String> {
        let name = self.pending.remove(call_id)?;
        self.next_item += 1;
        let item_id = format!("{RESULT_ITEM_PREFIX}{}", self.next_item);
        self.injected.insert(item_id.clone());
        MarkerCounters::bump(&self.counters().results_injected);
        Some(result_item_create(&item_id, &name, outcome))
    }
}

fn finish_events(scanner: &mut MarkerScanner) -> Vec<ScanEvent> {
    let mut events = Vec::new();
    scanner.finish(&mut |e| {
        if !matches!(e, MarkerEvent::Text(_)) {
            events.push(e.into_owned());
        }
    });
    events
}

/// A broken marker as the error result the model reads.
fn marker_error(tag: &MarkerTag, error: &MarkerError) -> CallError {
    let kind = match error {
        MarkerError::InvalidJson { .. } => CallErrorKind::InvalidJson,
        MarkerError::UnknownTool { .. } => CallErrorKind::UnknownTool,
        _ => CallErrorKind::InvalidArguments,
    };
    let example = tag.render_call("tool_name", r#"{"parameter":"value"}"#);
    CallError::new(
        kind,
        error.tool_name().unwrap_or(""),
        format!(
            "Your tool call could not be used: {error}. Write the call again in exactly this form: {example}"
        ),
    )
}

/// The text of an injected result: which tool, whether it worked, and its output as JSON.
pub fn result_text(tool: &str, outcome: &CallOutcome) -> String {
    let tool = if tool.is_empty() { "(unnamed)" } else { tool };
    let what = match outcome.status {
        Status::Ok => "returned",
        Status::Acknowledged => "was sent",
        Status::Failed(_) => "failed",
    };
    format!(
        "Tool result. The tool call `{tool}` from your last reply {what}:\n{}\nUse this to answer the user. Do not show tool call markers or this message to the user.",
        outcome.output
    )
}

/// `conversation.item.create` with a `system` message carrying a marker call's result
/// (GA `RealtimeConversationItemMessageSystem`, `input_text` content).
pub fn result_item_create(item_id: &str, tool: &str, outcome: &CallOutcome) -> String {
    json!({
        "type": "conversation.item.create",
        "item": {
            "id": item_id,
            "type": "message",
            "role": "system",
            "content": [{ "type": "input_text", "text": result_text(tool, outcome) }],
        },
    })
    .to_string()
}
