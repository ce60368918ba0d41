//! One realtime session between a model connection and a browser connection.
//!
//! The session is transport-free: a driver (the relay, a test, a benchmark) feeds it the text of
//! every event from either side and forwards, replaces or drops that event as the returned
//! [`Verdict`] says, then sends whatever the session queued ([`Session::pop_output`]). Calls run
//! on Tokio tasks; their results, the browser messages they produce and filler timers come back
//! through [`SessionEvents`], which the driver hands to [`Session::on_event`].

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};
use tokio::sync::{mpsc, oneshot};

use super::browser::{self, BrowserResult, Malformed, Naming};
use super::gemini_live::{self, Scheduling};
use super::guard;
use super::marker_flow::{Found, MarkerFlow, MarkerFlowConfig};
use super::openai::{self, str_field, Head};
use super::partial::PartialArguments;
use super::provider::Provider;
use super::tracker::{Resolved, Tracker};
use crate::context::{CallContext, SessionScope};
use crate::dispatch::{
    ApprovalFuture, ApprovalRequest, CallOutcome, ClientCall, ClientFailure, ClientFuture,
    ClientPath, Decision, Route, Status, ToolCall,
};
use crate::engine::{Admission, Conversation, Next};
use crate::error::{CallError, CallErrorKind};
use crate::live::LiveTools;
use crate::Registry;

mod browser_events;
mod calls;
mod client_path;
mod gemini;
mod live_link;
mod notes;
mod openai_events;

use client_path::*;
pub use live_link::{Reconnect, ResumeRefused};
pub use notes::{CounterSnapshot, Counters, Note, Observer, Output, RejectReason, Verdict};

/// Settings shared by sessions.
#[derive(Clone)]
pub struct SessionConfig {
    /// The model API the session speaks upstream; the browser protocol is the same for all.
    pub provider: Provider,
    /// The provider's tool declarations (GA `session.tools` entries, or Live
    /// `functionDeclarations`); [`SessionConfig::new`] builds them from the registry.
    pub declarations: Vec<Value>,
    /// The rest of the first upstream message: for OpenAI the `session.update` session
    /// (`type: realtime` plus anything the application sets, e.g. `instructions`); for Gemini
    /// Live the `setup` (`model`, `generationConfig`, `systemInstruction`, ...).
    pub session: Map<String, Value>,
    /// The naming of calls sent to the browser.
    pub naming: Naming,
    /// How long a waiting client call may be open before the model is asked to say one of the
    /// tool's filler phrases; `None` turns fillers off.
    pub filler_delay: Option<Duration>,
    /// Counters of the sessions made with this config; shared by all of them.
    pub counters: Arc<Counters>,
    /// Receives every [`Note`] of the sessions, e.g. to log them; `None` by default.
    pub observer: Option<Observer>,
    /// Opt-in: when a call resolves, tell the browser what it may know about it (name,
    /// location, duration, status; never a server call's id, arguments or result) with a
    /// `toolc.trace` event ([`browser::encode_trace`]), so a page can show server calls in its
    /// log. Off by default.
    pub trace_calls: bool,
    /// Opt-in: the two-pass text-marker flow ([`super::marker_flow`]) for models that write
    /// `<<<TAG:NAME=...>>>` markers instead of native calls. `None` (the default) leaves text
    /// untouched.
    pub markers: Option<Arc<MarkerFlowConfig>>,
    /// Tools beyond the registry's that may change while the session runs (a live remote
    /// catalog, such as `toolc_catalog::LiveCatalog`): calls of names the registry does not know go
    /// to them, and their current declarations replace theirs in `declarations` at the next
    /// safe point. `None` by default.
    pub live_tools: Option<Arc<dyn LiveTools>>,
    /// How long an approval request waits for the user's answer before the call is refused.
    pub approval_timeout: Duration,
    /// Gemini Live: when the model takes up the final result of a `mode: async` (`NON_BLOCKING`)
    /// call whose tool has no `scheduling` in the manifest and is not in
    /// [`SessionConfig::scheduling_of`]. OpenAI has one behaviour (the result is added at the
    /// next quiet point, then one `response.create`), which is `WhenIdle`.
    pub async_scheduling: Scheduling,
    /// Per-tool settings that win over the manifest's `scheduling`.
    pub scheduling_of: HashMap<String, Scheduling>,
    /// The registry's tools the session offers, when it chose toolsets
    /// ([`SessionConfig::with_toolsets`]); `None`: every tool. A call of a tool not offered is
    /// refused as an unknown tool.
    pub selection: Option<crate::ToolSelection>,
    /// Gemini Live: session resumption across connections, context window compression, and
    /// whether the page hears of a move to a new connection.
    pub live: gemini_live::LiveOptions,
}

impl fmt::Debug for SessionConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionConfig")
            .field("declarations", &self.declarations.len())
            .field("session", &self.session)
            .field("naming", &self.naming)
            .field("filler_delay", &self.filler_delay)
            .field("observer", &self.observer.is_some())
            .field("trace_calls", &self.trace_calls)
            .field("markers", &self.markers)
            .field("live_tools", &self.live_tools.is_some())
            .field("approval_timeout", &self.approval_timeout)
            .field("provider", &self.provider)
            .field("async_scheduling", &self.async_scheduling)
            .field("live", &self.live)
            .finish()
    }
}

/// Why [`Session::select_toolsets`] refused a choice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SelectToolsetsError {
    /// A name is not a toolset of the registry.
    Unknown(crate::UnknownToolset),
    /// The provider takes the session's tools once, when it starts (Gemini Live's `setup`).
    DeclaredOnce(Provider),
}

impl fmt::Display for SelectToolsetsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SelectToolsetsError::Unknown(e) => e.fmt(f),
            SelectToolsetsError::DeclaredOnce(p) => write!(
                f,
                "{p} takes a session's tools once, when it starts: choose the toolsets with SessionConfig::with_toolsets"
            ),
        }
    }
}

impl std::error::Error for SelectToolsetsError {}

/// Default wait before a filler phrase.
pub const DEFAULT_FILLER_DELAY: Duration = Duration::from_millis(1500);

/// Default wait for the user's answer to an approval request.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(60);

impl SessionConfig {
    /// An OpenAI Realtime session's settings, with the registry's tools declared.
    pub fn new(registry: &Registry) -> SessionConfig {
        SessionConfig::for_provider(registry, Provider::OpenAi)
    }

    /// A session's settings for `provider`, with the registry's tools declared as it takes them.
    pub fn for_provider(registry: &Registry, provider: Provider) -> SessionConfig {
        let mut session = Map::new();
        match provider {
            Provider::OpenAi => {
                session.insert("type".into(), Value::String("realtime".into()));
            }
            Provider::GeminiLive => {
                session.insert(
                    "model".into(),
                    Value::String(gemini_live::DEFAULT_MODEL.into()),
                );
            }
            // Vertex names a model by its resource name, which holds the application's
            // project: `gemini_live::vertex_model` makes it.
            Provider::VertexLive => {
                session.insert(
                    "model".into(),
                    Value::String(format!(
                        "publishers/google/models/{}",
                        gemini_live::VERTEX_DEFAULT_MODEL
                    )),
                );
            }
        }
        SessionConfig {
            provider,
            declarations: provider.declarations(registry.definitions()),
            session,
            naming: Naming::default(),
            filler_delay: Some(DEFAULT_FILLER_DELAY),
            counters: Arc::new(Counters::default()),
            observer: None,
            trace_calls: false,
            markers: None,
            live_tools: None,
            approval_timeout: DEFAULT_APPROVAL_TIMEOUT,
            async_scheduling: Scheduling::default(),
            scheduling_of: HashMap::new(),
            selection: None,
            live: gemini_live::LiveOptions::default(),
        }
    }

    /// Declares only the tools in no toolset and those of `toolsets` (the manifest's
    /// `toolsets`), and refuses calls of the others. [`Session::select_toolsets`] changes the
    /// choice while the session runs.
    pub fn with_toolsets<S: AsRef<str>>(
        mut self,
        registry: &Registry,
        toolsets: &[S],
    ) -> Result<SessionConfig, crate::UnknownToolset> {
        let selection = registry.selection(toolsets)?;
        self.declarations = self
            .provider
            .declarations(registry.definitions().filter(|d| selection.offers(&d.name)));
        self.selection = Some(selection);
        Ok(self)
    }

    /// When the model takes up the final result of a call of `tool` (Gemini Live `mode: async`
    /// tools): [`SessionConfig::scheduling_of`], else the manifest's `scheduling`, else
    /// [`SessionConfig::async_scheduling`].
    pub fn scheduling(&self, tool: &crate::ToolDefinition) -> Scheduling {
        self.scheduling_of
            .get(&tool.name)
            .copied()
            .or(tool.policy.scheduling)
            .unwrap_or(self.async_scheduling)
    }
}

/// The declarations a session starts with or changes to: its own (the config's, or those of
/// the toolsets it switched to), with the live tools' current ones in place of theirs; and the
/// live tools' generation.
fn declared_now(own: &[Value], config: &SessionConfig) -> (Vec<Value>, Option<u64>) {
    let Some(live) = &config.live_tools else {
        return (own.to_vec(), None);
    };
    let (generation, theirs) = live.current();
    let name = |d: &Value| d.get("name").and_then(Value::as_str).map(str::to_owned);
    let mut declarations: Vec<Value> = own
        .iter()
        .filter(|d| !name(d).is_some_and(|n| live.is_live(&n)))
        .cloned()
        .collect();
    declarations.extend(config.provider.declarations(theirs.iter()));
    (declarations, Some(generation))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CallKind {
    Server,
    Client,
    Notify,
    Invalid,
}

#[derive(Debug)]
struct CallInfo {
    name: String,
    kind: CallKind,
    seq: u64,
    filler_sent: bool,
    filler_wanted: bool,
    started: Instant,
    /// The context the call runs with, to fire its cancellation signal on an interruption.
    ctx: Option<CallContext>,
    /// A `mode: async` call whose work goes on after its "started" result; cleared when its
    /// result has been added to the conversation (or it was cancelled).
    background: bool,
}

impl CallInfo {
    fn new(name: &str, kind: CallKind, seq: u64) -> CallInfo {
        CallInfo {
            name: name.to_owned(),
            kind,
            seq,
            filler_sent: false,
            filler_wanted: false,
            started: Instant::now(),
            ctx: None,
            background: false,
        }
    }
}

/// A result, a browser message or a timer coming back from a call's task.
#[derive(Debug)]
pub struct SessionEvent(Inner);

#[derive(Debug)]
enum Inner {
    Done {
        call_id: String,
        outcome: CallOutcome,
    },
    ToBrowser(String),
    FillerDue(String),
    /// The result of a background call's work, after its "started" result went to the model.
    Background {
        call_id: String,
        outcome: CallOutcome,
    },
}

/// The receiving end of a session's call tasks; poll it next to the two connections.
#[derive(Debug)]
pub struct SessionEvents {
    rx: mpsc::UnboundedReceiver<Inner>,
}

impl SessionEvents {
    /// The next event. Never `None` while the session exists (it holds a sender).
    pub async fn recv(&mut self) -> Option<SessionEvent> {
        self.rx.recv().await.map(SessionEvent)
    }

    /// The next event if one is ready; `None` when none is waiting right now.
    pub fn try_recv(&mut self) -> Option<SessionEvent> {
        self.rx.try_recv().ok().map(SessionEvent)
    }
}

/// A function call read from a `response.done`, owned so the session can act on it.
struct ReportedCall {
    item_id: Option<String>,
    call_id: Option<String>,
    name: Option<String>,
    arguments: String,
}

/// One session. See the module documentation for how a driver uses it.
pub struct Session {
    registry: Arc<Registry>,
    config: Arc<SessionConfig>,
    tracker: Tracker,
    /// The `toolc.response` spans of responses whose calls are still being reported.
    response_spans: HashMap<String, tracing::Span>,
    /// The call engine: toolsets, validation, repeats (across the session's responses),
    /// approval and background decided for every call.
    conversation: Conversation,
    calls: HashMap<String, CallInfo>,
    /// Visibility to the browser of function-call items and calls, by item id and by call id.
    item_visible: HashMap<String, bool>,
    call_visible: HashMap<String, bool>,
    filler_responses: HashSet<String>,
    current_response: Option<String>,
    /// A continuation is due but another response is in progress; it goes at that response's
    /// `response.done`.
    continuation_waiting: bool,
    browser: BrowserPath,
    outputs: VecDeque<Output>,
    next_seq: u64,
    filler_turn: usize,
    markers: Option<MarkerFlow>,
    /// The session's id and principal, which every executor sees; cancelled when the browser
    /// leaves.
    scope: SessionScope,
    /// The function tools declared to the model now: the config's, with the live tools'
    /// current ones in place of theirs.
    declarations: Vec<Value>,
    /// The generation of the live tools' declarations in `declarations`.
    live_generation: Option<u64>,
    /// The registry's declarations the session offers: the config's, until
    /// [`Session::select_toolsets`] changes them.
    own_declarations: Vec<Value>,
    /// The model has not yet been told of the toolsets chosen last.
    selection_changed: bool,
    /// The instructions the application or the browser set last, without the marker catalog:
    /// kept so that a catalog declared again (live tools changed) does not replace them.
    their_instructions: Option<String>,
    /// Results of background calls waiting for a point where no response is in progress.
    background_done: VecDeque<(String, CallOutcome)>,
    /// The session's `response.create` that has not started yet: its event id, and whether it
    /// was a continuation (a filler is not). The API refuses a second request before the first
    /// has started.
    response_requested: Option<Requested>,
    /// `response.create`s this session sent, which number their event ids.
    requests_sent: u64,
    /// Streaming client calls by item id: the call, the tool and the arguments so far.
    streams: HashMap<String, ArgumentStream>,
    /// Gemini Live: results waiting to go in the batch's one `toolResponse`.
    pending_responses: HashMap<String, Vec<Value>>,
    /// Gemini Live: calls the model cancelled (`toolCallCancellation`); it takes no result for
    /// them.
    provider_cancelled: HashSet<String>,
    /// Gemini Live: the number of batches so far, which name them.
    batches: u64,
    /// Gemini Live: the batch that model-turn `functionCall` parts opened and no `toolCall` or
    /// end of turn has closed yet.
    open_batch: Option<String>,
    /// Gemini Live: the model connection's life (`setupComplete`, resumption, `goAway`).
    live: live_link::LiveLink,
    /// The browser event read last was audio input.
    last_input_audio: bool,
}

/// The start of the event ids of this session's `response.create`s.
const REQUEST_ID_PREFIX: &str = "toolc_response_";

/// A `response.create` of this session that has not started yet.
struct Requested {
    event_id: String,
    /// A continuation (or a background result's request), not a filler: if the model refuses
    /// it, the session asks again.
    continuation: bool,
}

#[derive(Debug)]
struct ArgumentStream {
    call_id: String,
    name: String,
    partial: PartialArguments,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("open_calls", &self.tracker.open_calls())
            .field("calls", &self.calls.len())
            .field("queued_outputs", &self.outputs.len())
            .finish()
    }
}

impl Session {
    /// A session over `registry` with `config`, and the receiving end of its call tasks, which the
    /// driver polls and hands to [`Session::on_event`]. Its scope is a fresh one until
    /// [`Session::set_scope`].
    pub fn new(registry: Arc<Registry>, config: Arc<SessionConfig>) -> (Session, SessionEvents) {
        let (tx, rx) = mpsc::unbounded_channel();
        let browser = BrowserPath {
            state: Arc::new(Mutex::new(BrowserState {
                connected: true,
                naming: config.naming,
                pending: HashMap::new(),
                sent_waiting: HashMap::new(),
                sent_notify: HashSet::new(),
                approvals: HashMap::new(),
                next_approval: 0,
            })),
            tx,
            approval_timeout: config.approval_timeout,
            counters: config.counters.clone(),
        };
        let markers = config.markers.clone().map(MarkerFlow::new);
        let own_declarations = config.declarations.clone();
        let conversation = Conversation::new(registry.clone())
            .with_selection(config.selection.clone())
            .with_live_tools(config.live_tools.clone());
        let (declarations, live_generation) = declared_now(&own_declarations, &config);
        let their_instructions = config
            .session
            .get("instructions")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let session = Session {
            registry,
            config,
            tracker: Tracker::new(),
            response_spans: HashMap::new(),
            conversation,
            calls: HashMap::new(),
            item_visible: HashMap::new(),
            call_visible: HashMap::new(),
            filler_responses: HashSet::new(),
            current_response: None,
            continuation_waiting: false,
            browser,
            outputs: VecDeque::new(),
            next_seq: 0,
            filler_turn: 0,
            markers,
            scope: SessionScope::new(),
            declarations,
            live_generation,
            own_declarations,
            selection_changed: false,
            their_instructions,
            background_done: VecDeque::new(),
            response_requested: None,
            requests_sent: 0,
            streams: HashMap::new(),
            pending_responses: HashMap::new(),
            provider_cancelled: HashSet::new(),
            batches: 0,
            open_batch: None,
            live: live_link::LiveLink::new(),
            last_input_audio: false,
        };
        (session, SessionEvents { rx })
    }

    /// The session's id and authenticated principal (set by the relay from its authorizer);
    /// every call made in this session runs with a context from it.
    pub fn set_scope(&mut self, scope: SessionScope) {
        self.scope = scope;
    }

    /// The session's id and principal, as every call made in it sees them.
    pub fn scope(&self) -> &SessionScope {
        &self.scope
    }

    /// Switches the toolsets the session offers: from now on it declares the tools in no
    /// toolset and those of `toolsets`, and refuses calls of the others. The model is told
    /// (`session.update` with the new `tools`) at once when no response is in progress, else
    /// when it is done, before any continuation. Gemini Live declares tools once, in `setup`:
    /// there the choice is made when the session starts ([`SessionConfig::with_toolsets`]).
    pub fn select_toolsets<S: AsRef<str>>(
        &mut self,
        toolsets: &[S],
    ) -> Result<(), SelectToolsetsError> {
        if self.config.provider.is_live() {
            return Err(SelectToolsetsError::DeclaredOnce(self.config.provider));
        }
        let selection = self
            .registry
            .selection(toolsets)
            .map_err(SelectToolsetsError::Unknown)?;
        self.own_declarations = self.config.provider.declarations(
            self.registry
                .definitions()
                .filter(|d| selection.offers(&d.name)),
        );
        self.conversation.set_selection(Some(selection));
        self.selection_changed = true;
        if self.current_response.is_none() {
            self.redeclare_if_changed();
        }
        Ok(())
    }

    /// The toolsets chosen last, if any ([`Session::select_toolsets`]).
    pub fn toolsets(&self) -> Option<&[String]> {
        self.conversation.selection().map(|s| s.toolsets())
    }

    /// Uses `naming` for calls sent to this session's browser from now on.
    pub fn set_naming(&mut self, naming: Naming) {
        lock(&self.browser.state).naming = naming;
    }

    /// The first event to send upstream: `session.update` (OpenAI) or `setup` (Gemini Live)
    /// with the declarations.
    pub fn session_update(&self) -> String {
        if self.config.provider.is_live() {
            return self.setup_message(None);
        }
        let mut session = self.config.session.clone();
        session.insert("tools".into(), Value::Array(self.declarations.clone()));
        if let Some(instructions) = self.marker_instructions() {
            session.insert("instructions".into(), Value::String(instructions));
        }
        openai::session_update(session)
    }

    /// With the marker flow: the application's or browser's instructions followed by the
    /// catalog of the tools as they are now (live ones included).
    fn marker_instructions(&self) -> Option<String> {
        let markers = self.config.markers.as_ref()?;
        let catalog = markers.instructions_with(self.config.live_tools.as_deref());
        Some(super::marker_flow::merge(
            self.their_instructions.as_deref(),
            &catalog,
        ))
    }

    /// The session's counters, shared with every session of its config.
    pub fn counters(&self) -> &Arc<Counters> {
        &self.config.counters
    }

    /// Calls of this session that have not resolved.
    pub fn open_calls(&self) -> usize {
        self.tracker.open_calls()
    }

    /// The next message to send, in the order they were produced.
    pub fn pop_output(&mut self) -> Option<Output> {
        self.outputs.pop_front()
    }

    /// Every queued message, in order.
    pub fn drain_outputs(&mut self) -> impl Iterator<Item = Output> + '_ {
        self.outputs.drain(..)
    }

    fn note(&self, note: Note) {
        match &note {
            // Calls trace themselves (`toolc.call` spans); the GA API reports each call thrice.
            Note::CallFailed { .. } | Note::DuplicateCall { .. } => {}
            Note::BrowserEventRefused { code, .. } => {
                tracing::warn!(session = %self.scope.session_id(), code, "{note}")
            }
            Note::ResultRejected { .. } | Note::BrowserCallDropped { .. } => {
                tracing::warn!(session = %self.scope.session_id(), "{note}")
            }
            _ => tracing::debug!(session = %self.scope.session_id(), "{note}"),
        }
        if let Some(observer) = &self.config.observer {
            observer(&note);
        }
    }

    fn counters_ref(&self) -> &Counters {
        &self.config.counters
    }

    // ---- model → browser ------------------------------------------------------------------

    /// An event from the model. Tool calls in it are started; the verdict says what the browser
    /// gets.
    pub fn on_model_event(&mut self, text: &str) -> Verdict {
        if self.config.provider.is_live() {
            return self.gemini_model_event(text);
        }
        let verdict = self.native_model_event(text);
        if self.markers.is_none() {
            return verdict;
        }
        self.marker_pass(text, verdict)
    }

    /// A binary frame from the model. Google's Live servers send their JSON in binary frames;
    /// any provider's binary frame is read as UTF-8 JSON, through the same path as text, and a
    /// [`Verdict::Forward`] means the text goes to the page (as a text frame: the page speaks
    /// text). A frame that is not UTF-8 is dropped and noted, never forwarded.
    pub fn on_model_binary(&mut self, bytes: &[u8]) -> Verdict {
        match std::str::from_utf8(bytes) {
            Ok(text) => self.on_model_event(text),
            Err(_) => self.unreadable_model_binary(),
        }
    }

    /// A binary frame from the model that is not UTF-8: dropped and noted.
    pub fn unreadable_model_binary(&mut self) -> Verdict {
        self.unreadable_model_event("(binary frame, not UTF-8)")
    }

    pub(super) fn call_reported(
        &mut self,
        response_id: Option<&str>,
        call_id: Option<&str>,
        name: Option<&str>,
        arguments: &str,
    ) {
        let name = name.unwrap_or("");
        let Some(call_id) = call_id else {
            self.note(Note::CallWithoutId {
                name: name.to_owned(),
            });
            return;
        };
        let response_id = response_id
            .map(str::to_owned)
            .or_else(|| self.current_response.clone())
            .unwrap_or_default();
        if self.filler_responses.contains(&response_id) {
            self.call_visible.insert(call_id.to_owned(), false);
            self.note(Note::CallInFiller {
                call_id: call_id.to_owned(),
            });
            return;
        }
        if !self.tracker.register(&response_id, call_id) {
            Counters::bump(&self.counters_ref().duplicate_calls);
            self.note(Note::DuplicateCall {
                call_id: call_id.to_owned(),
            });
            return;
        }
        Counters::bump(&self.counters_ref().calls);
        let call = ToolCall::new(call_id, name, arguments);
        let admission = self.conversation.admit(call);
        let kind = match admission.route() {
            Route::Server { .. } | Route::Live { .. } => CallKind::Server,
            Route::Client { .. } => CallKind::Client,
            Route::Notify { .. } => CallKind::Notify,
            Route::Reject(_) => CallKind::Invalid,
        };
        let counter = match kind {
            CallKind::Server => &self.counters_ref().server_calls,
            CallKind::Client => &self.counters_ref().client_calls,
            CallKind::Notify => &self.counters_ref().notify_calls,
            CallKind::Invalid => &self.counters_ref().invalid_calls,
        };
        Counters::bump(counter);
        self.next_seq += 1;
        self.calls
            .insert(call_id.to_owned(), CallInfo::new(name, kind, self.next_seq));
        match admission.next() {
            Next::Answer(outcome) => {
                // A call that cannot run is not a repeat; a reused or refused one is.
                if kind != CallKind::Invalid {
                    Counters::bump(&self.counters_ref().repeated_calls);
                }
                return self.finish(call_id, outcome.clone());
            }
            // The first call's end answers it (`finish`).
            Next::Wait { .. } => return Counters::bump(&self.counters_ref().repeated_calls),
            Next::Run { .. } => {}
        }
        let background = admission.runs_in_background();
        // A slow call deserves "let me check", the browser's or the server's; a background
        // call answers at once.
        if kind == CallKind::Client || (kind == CallKind::Server && !background) {
            self.schedule_filler(call_id, name);
        }
        if background {
            return self.spawn_background_call(admission);
        }
        // A call that waits for approval reaches the browser only once approved.
        if !admission.needs_approval() {
            self.send_to_browser_now(admission.call(), admission.route());
        }
        self.spawn_call(admission)
    }

    // ---- call tasks ------------------------------------------------------------------------

    /// An event from [`SessionEvents`].
    pub fn on_event(&mut self, event: SessionEvent) {
        match event.0 {
            Inner::Done { call_id, outcome } => self.finish(&call_id, outcome),
            Inner::Background { call_id, outcome } => {
                // Cancelled meanwhile (interrupted, or the browser left): nothing to add.
                let Some(info) = self.calls.get_mut(&call_id) else {
                    return;
                };
                if !std::mem::take(&mut info.background) || !self.browser_connected() {
                    return;
                }
                if self.config.provider.is_live() {
                    return self.gemini_background_result(&call_id, outcome);
                }
                self.background_done.push_back((call_id, outcome));
                self.flush_background();
            }
            Inner::ToBrowser(text) => {
                if lock(&self.browser.state).connected {
                    self.outputs.push_back(Output::ToBrowser(text));
                }
            }
            Inner::FillerDue(call_id) => {
                if !self.tracker.is_open(&call_id) {
                    return;
                }
                let done = self
                    .tracker
                    .response_of(&call_id)
                    .is_some_and(|r| self.tracker.is_done(r));
                match self.calls.get_mut(&call_id) {
                    Some(info) if !info.filler_sent => {
                        if done {
                            self.send_filler(&call_id);
                        } else {
                            // The model is still speaking; say it once the response is done.
                            info.filler_wanted = true;
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    fn send_wanted_fillers(&mut self, response_id: &str) {
        let mut wanted: Vec<(u64, String)> = self
            .calls
            .iter()
            .filter(|(id, info)| {
                info.filler_wanted
                    && !info.filler_sent
                    && self.tracker.is_open(id)
                    && self.tracker.response_of(id) == Some(response_id)
            })
            .map(|(id, info)| (info.seq, id.clone()))
            .collect();
        wanted.sort();
        for (_, call_id) in wanted {
            self.send_filler(&call_id);
        }
    }

    fn send_filler(&mut self, call_id: &str) {
        let Some(info) = self.calls.get_mut(call_id) else {
            return;
        };
        let Some(def) = self.registry.definition(&info.name) else {
            return;
        };
        if def.filler.is_empty() || info.filler_sent {
            return;
        }
        // A response asked for and not started yet will speak soon anyway, and the API refuses
        // a second request before the first has started.
        if self.response_requested.is_some() {
            info.filler_wanted = false;
            return;
        }
        info.filler_sent = true;
        info.filler_wanted = false;
        // Rotate through the phrases so consecutive fillers do not repeat themselves.
        let phrase = &def.filler[self.filler_turn % def.filler.len()];
        self.filler_turn = self.filler_turn.wrapping_add(1);
        Counters::bump(&self.config.counters.fillers);
        let (phrase, call_id) = (phrase.clone(), call_id.to_owned());
        self.request_response(false, |event_id| {
            openai::filler_response_create(&phrase, &call_id, event_id)
        });
    }
}
