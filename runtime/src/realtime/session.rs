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
use super::guard;
use super::marker_flow::{Found, MarkerFlow, MarkerFlowConfig};
use super::openai::{self, str_field, Head};
use super::partial::PartialArguments;
use super::tracker::{Resolved, Tracker};
use crate::context::{CallContext, SessionScope};
use crate::dispatch::{
    self, ApprovalFuture, ApprovalRequest, CallOutcome, ClientCall, ClientFailure, ClientFuture,
    ClientPath, Decision, Route, Status, ToolCall,
};
use crate::error::{CallError, CallErrorKind};
use crate::live::LiveTools;
use crate::Registry;

/// What the driver does with the event it just passed in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Forward the original frame unchanged.
    Forward,
    /// Forward this text instead (a tool-bearing event with server calls removed, or a merged
    /// `session.update`).
    Replace(String),
    /// Do not forward anything.
    Drop,
}

/// A message the session wants sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    ToModel(String),
    ToBrowser(String),
}

/// Something worth a log line. Passed to [`SessionConfig::observer`].
#[derive(Clone, Debug, PartialEq)]
pub enum Note {
    /// A browser result was refused and not forwarded.
    ResultRejected {
        call_id: String,
        reason: RejectReason,
    },
    /// A call id reported a second time (e.g. by `response.output_item.done` after
    /// `response.function_call_arguments.done`); it runs once.
    DuplicateCall { call_id: String },
    /// A function call the model made inside one of the runtime's filler responses; fillers are
    /// declared without tools, so it is ignored.
    CallInFiller { call_id: String },
    /// A function call without a `call_id` cannot be answered.
    CallWithoutId { name: String },
    /// A function tool from the browser's `session.update` that the server does not know.
    BrowserToolDropped { name: String },
    /// A browser event the relay does not forward (unparsable, a duplicate key, a
    /// `response.create` that would grant tools or forge calls); the browser got an `error`
    /// event with the same code.
    BrowserEventRefused { code: &'static str, message: String },
    /// A `function_call` item the browser tried to add to the conversation, dropped: only the
    /// model makes calls.
    BrowserCallDropped { call_id: Option<String> },
    /// An answer to an approval request was refused: no such open request, or unreadable.
    ApprovalAnswerRejected { approval_id: String, why: String },
    /// The user interrupted a response; its calls that cancel on interruption were cancelled.
    Interrupted {
        response_id: String,
        cancelled: usize,
    },
    /// A call failed; `detail` holds what the model does not see (a panic message).
    CallFailed {
        call_id: String,
        tool: String,
        kind: CallErrorKind,
        detail: Option<String>,
    },
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Note::ResultRejected { call_id, reason } => {
                write!(f, "browser result for call `{call_id}` rejected: {reason}")
            }
            Note::DuplicateCall { call_id } => write!(f, "call `{call_id}` reported again; ran once"),
            Note::CallInFiller { call_id } => {
                write!(f, "call `{call_id}` made inside a filler response; ignored")
            }
            Note::CallWithoutId { name } => write!(f, "call of `{name}` has no call_id; ignored"),
            Note::BrowserToolDropped { name } => write!(
                f,
                "browser session.update declared function tool `{name}`, which the server cannot route; left out"
            ),
            Note::BrowserEventRefused { code, message } => {
                write!(f, "browser event refused ({code}): {message}")
            }
            Note::BrowserCallDropped { call_id } => write!(
                f,
                "browser tried to add a function_call item (call_id {}) to the conversation; dropped",
                call_id.as_deref().unwrap_or("none")
            ),
            Note::ApprovalAnswerRejected { approval_id, why } => {
                write!(f, "approval answer for `{approval_id}` refused: {why}")
            }
            Note::Interrupted {
                response_id,
                cancelled,
            } => write!(
                f,
                "response `{response_id}` interrupted; {cancelled} call(s) cancelled"
            ),
            Note::CallFailed {
                call_id,
                tool,
                kind,
                detail,
            } => {
                write!(f, "call `{call_id}` of `{tool}` failed: {kind}")?;
                if let Some(d) = detail {
                    write!(f, " ({d})")?;
                }
                Ok(())
            }
        }
    }
}

/// Why a browser result was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RejectReason {
    /// No call with this id was ever made in this session.
    UnknownCall,
    /// The call exists but was not routed to the browser (a server tool, a fire-and-forget tool,
    /// or a call rejected before routing).
    NotRoutedToBrowser,
    /// The call was routed to the browser but is no longer open (answered, timed out, failed).
    NotOpen,
    /// The message could not be read.
    Malformed(Malformed),
}

impl fmt::Display for RejectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RejectReason::UnknownCall => f.write_str("no such call"),
            RejectReason::NotRoutedToBrowser => {
                f.write_str("the call was not routed to the browser")
            }
            RejectReason::NotOpen => f.write_str("the call is no longer open"),
            RejectReason::Malformed(m) => f.write_str(m.as_str()),
        }
    }
}

/// Receives [`Note`]s (for logging).
pub type Observer = Arc<dyn Fn(&Note) + Send + Sync>;

macro_rules! counters {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {
        /// Counters of one session or, when a config is shared, of all its sessions.
        #[derive(Debug, Default)]
        pub struct Counters {
            $($(#[$doc])* pub $name: AtomicU64,)*
        }

        /// A copy of [`Counters`] at one moment.
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct CounterSnapshot {
            $($(#[$doc])* pub $name: u64,)*
        }

        impl Counters {
            pub fn snapshot(&self) -> CounterSnapshot {
                CounterSnapshot { $($name: self.$name.load(Ordering::Relaxed),)* }
            }
        }
    };
}

counters! {
    /// Calls started (each call id once).
    calls,
    /// Call ids reported again and not run again.
    duplicate_calls,
    /// Calls that ran on the server.
    server_calls,
    /// Calls sent to the browser that wait for a reply.
    client_calls,
    /// Fire-and-forget calls sent to the browser.
    notify_calls,
    /// Calls refused before routing (unknown tool, invalid JSON or arguments).
    invalid_calls,
    /// Calls whose result is an error (any cause).
    failed_calls,
    /// Client calls whose deadline passed.
    client_timeouts,
    /// Client calls failed because the browser was gone.
    client_disconnects,
    /// Browser results accepted.
    results_accepted,
    /// Browser results refused (never forwarded).
    results_rejected,
    /// `response.create` continuations sent.
    continuations,
    /// Filler responses requested.
    fillers,
    /// Approval requests sent to the browser.
    approvals_requested,
    /// Approval requests the browser approved.
    approvals_granted,
    /// Calls not run for want of approval (declined, timed out, nobody to ask).
    approvals_refused,
    /// Calls cancelled because the user interrupted the response that made them.
    interrupted_calls,
    /// Results of background (`mode: async`) calls added to the conversation.
    background_results,
    /// Partial-arguments events sent for streaming client tools.
    argument_deltas,
    /// Model events dropped or rewritten so the browser does not see a server call.
    scrubbed_events,
    /// Browser events dropped: `function_call` items the browser tried to add to the
    /// conversation.
    dropped_browser_events,
    /// Browser events refused with an `error` event to the browser: unparsable ones, duplicate
    /// keys, events without a type, and `response.create`s that would grant tools or forge calls.
    refused_browser_events,
}

impl Counters {
    fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// Settings shared by sessions.
#[derive(Clone)]
pub struct SessionConfig {
    /// The GA `session.tools` entries; [`SessionConfig::new`] builds them from the registry.
    pub declarations: Vec<Value>,
    /// The rest of the first `session.update` (`type: realtime` plus anything the application
    /// sets, e.g. `instructions`).
    pub session: Map<String, Value>,
    /// The naming of calls sent to the browser.
    pub naming: Naming,
    /// How long a waiting client call may be open before the model is asked to say one of the
    /// tool's filler phrases; `None` turns fillers off.
    pub filler_delay: Option<Duration>,
    pub counters: Arc<Counters>,
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
    /// catalog, [`crate::catalog::LiveCatalog`]): calls of names the registry does not know go
    /// to them, and their current declarations replace theirs in `declarations` at the next
    /// safe point. `None` by default.
    pub live_tools: Option<Arc<dyn LiveTools>>,
    /// How long an approval request waits for the user's answer before the call is refused.
    pub approval_timeout: Duration,
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
            .finish()
    }
}

/// Default wait before a filler phrase.
pub const DEFAULT_FILLER_DELAY: Duration = Duration::from_millis(1500);

/// Default wait for the user's answer to an approval request.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(60);

impl SessionConfig {
    pub fn new(registry: &Registry) -> SessionConfig {
        let mut session = Map::new();
        session.insert("type".into(), Value::String("realtime".into()));
        SessionConfig {
            declarations: openai::declarations(registry.definitions()),
            session,
            naming: Naming::default(),
            filler_delay: Some(DEFAULT_FILLER_DELAY),
            counters: Arc::new(Counters::default()),
            observer: None,
            trace_calls: false,
            markers: None,
            live_tools: None,
            approval_timeout: DEFAULT_APPROVAL_TIMEOUT,
        }
    }
}

/// The declarations a session starts with or changes to: the config's, with the live tools'
/// current ones in place of theirs; and the live tools' generation.
fn declared_now(config: &SessionConfig) -> (Vec<Value>, Option<u64>) {
    let Some(live) = &config.live_tools else {
        return (config.declarations.clone(), None);
    };
    let (generation, theirs) = live.declarations();
    let name = |d: &Value| d.get("name").and_then(Value::as_str).map(str::to_owned);
    let mut declarations: Vec<Value> = config
        .declarations
        .iter()
        .filter(|d| !name(d).is_some_and(|n| live.is_live(&n)))
        .cloned()
        .collect();
    declarations.extend(theirs.iter().cloned());
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

    pub fn try_recv(&mut self) -> Option<SessionEvent> {
        self.rx.try_recv().ok().map(SessionEvent)
    }
}

type Reply = oneshot::Sender<Result<String, ClientFailure>>;

#[derive(Debug)]
struct BrowserState {
    connected: bool,
    naming: Naming,
    pending: HashMap<String, Reply>,
    /// Calls the session already sent to the browser, in the model's order, before their task
    /// ran: the task's `call` takes the reply channel from here (or `notify` its marker) instead
    /// of sending the call again. Sending from the session keeps the browser's calls in order
    /// whatever order the tasks run in.
    sent_waiting: HashMap<String, oneshot::Receiver<Result<String, ClientFailure>>>,
    sent_notify: HashSet<String>,
    /// Open approval requests by their id: the call each one is bound to and the answer's way
    /// back to the call's task.
    approvals: HashMap<String, OpenApproval>,
    next_approval: u64,
}

#[derive(Debug)]
struct OpenApproval {
    call_id: String,
    reply: oneshot::Sender<Decision>,
}

/// The client path of one session: calls become browser messages, replies arrive through
/// [`Session::on_browser_event`].
#[derive(Clone, Debug)]
struct BrowserPath {
    state: Arc<Mutex<BrowserState>>,
    tx: mpsc::UnboundedSender<Inner>,
    approval_timeout: Duration,
    counters: Arc<Counters>,
}

fn lock(state: &Mutex<BrowserState>) -> MutexGuard<'_, BrowserState> {
    // Nothing panics while holding this lock; recover rather than spread a poison.
    state.lock().unwrap_or_else(|e| e.into_inner())
}

/// Removes a pending call when its waiter goes away (deadline, task end), so that a late reply
/// finds nothing to answer.
struct PendingGuard {
    state: Arc<Mutex<BrowserState>>,
    call_id: String,
}

impl Drop for PendingGuard {
    fn drop(&mut self) {
        lock(&self.state).pending.remove(&self.call_id);
    }
}

/// Withdraws an approval request when its waiter goes away unanswered (timeout, interruption,
/// the call's task ended): the page is told to close its question, and a late answer finds
/// nothing to approve.
struct ApprovalGuard {
    state: Arc<Mutex<BrowserState>>,
    tx: mpsc::UnboundedSender<Inner>,
    approval_id: String,
}

impl Drop for ApprovalGuard {
    fn drop(&mut self) {
        let mut state = lock(&self.state);
        if state.approvals.remove(&self.approval_id).is_some() && state.connected {
            let text = browser::encode_approval_cancel(&self.approval_id, "withdrawn");
            let _ = self.tx.send(Inner::ToBrowser(text));
        }
    }
}

impl ClientPath for BrowserPath {
    fn approve(&self, request: ApprovalRequest) -> ApprovalFuture {
        let (tx, rx) = oneshot::channel();
        let approval_id = {
            let mut state = lock(&self.state);
            if !state.connected {
                return Box::pin(std::future::ready(Decision::Unavailable(
                    "the user's page is not connected".into(),
                )));
            }
            state.next_approval += 1;
            let approval_id = format!("approval_{}", state.next_approval);
            state.approvals.insert(
                approval_id.clone(),
                OpenApproval {
                    call_id: request.call_id.clone(),
                    reply: tx,
                },
            );
            let text = browser::encode_approval_request(
                &approval_id,
                &request.name,
                request.location,
                &request.arguments,
            );
            if self.tx.send(Inner::ToBrowser(text)).is_err() {
                state.approvals.remove(&approval_id);
                return Box::pin(std::future::ready(Decision::Unavailable(
                    "the session is gone".into(),
                )));
            }
            Counters::bump(&self.counters.approvals_requested);
            approval_id
        };
        let guard = ApprovalGuard {
            state: self.state.clone(),
            tx: self.tx.clone(),
            approval_id,
        };
        let after = self.approval_timeout;
        Box::pin(async move {
            let _guard = guard;
            match tokio::time::timeout(after, rx).await {
                Ok(Ok(decision)) => decision,
                Ok(Err(_)) => Decision::Unavailable("the user's page went away".into()),
                Err(_) => Decision::TimedOut { after },
            }
        })
    }

    fn call(&self, call: ClientCall) -> ClientFuture {
        let (tx, rx) = oneshot::channel();
        let rx = {
            let mut state = lock(&self.state);
            if let Some(rx) = state.sent_waiting.remove(&call.call_id) {
                let guard = PendingGuard {
                    state: self.state.clone(),
                    call_id: call.call_id,
                };
                return Box::pin(async move {
                    let _guard = guard;
                    rx.await.unwrap_or(Err(ClientFailure::Disconnected))
                });
            }
            if !state.connected {
                return Box::pin(std::future::ready(Err(ClientFailure::Disconnected)));
            }
            if state.pending.contains_key(&call.call_id) {
                return Box::pin(std::future::ready(Err(ClientFailure::Rejected(
                    "a call with this id is already open".into(),
                ))));
            }
            state.pending.insert(call.call_id.clone(), tx);
            let text =
                browser::encode_call(state.naming, &call.call_id, &call.name, &call.arguments);
            if self.tx.send(Inner::ToBrowser(text)).is_err() {
                state.pending.remove(&call.call_id);
                return Box::pin(std::future::ready(Err(ClientFailure::Disconnected)));
            }
            rx
        };
        let guard = PendingGuard {
            state: self.state.clone(),
            call_id: call.call_id,
        };
        Box::pin(async move {
            let _guard = guard;
            rx.await.unwrap_or(Err(ClientFailure::Disconnected))
        })
    }

    fn notify(&self, call: ClientCall) -> Result<(), ClientFailure> {
        let mut state = lock(&self.state);
        if state.sent_notify.remove(&call.call_id) {
            return Ok(());
        }
        if !state.connected {
            return Err(ClientFailure::Disconnected);
        }
        let text = browser::encode_call(state.naming, &call.call_id, &call.name, &call.arguments);
        self.tx
            .send(Inner::ToBrowser(text))
            .map_err(|_| ClientFailure::Disconnected)
    }
}

/// Reports a call's outcome when its task ends, also when the task ends without one (it was
/// aborted, or something outside the registry's own guards panicked), so that a call never
/// stays open forever.
struct DoneGuard {
    tx: mpsc::UnboundedSender<Inner>,
    call_id: String,
    tool: String,
    sent: bool,
}

impl DoneGuard {
    fn send(mut self, outcome: CallOutcome) {
        self.sent = true;
        let _ = self.tx.send(Inner::Done {
            call_id: std::mem::take(&mut self.call_id),
            outcome,
        });
    }
}

impl Drop for DoneGuard {
    fn drop(&mut self) {
        if !self.sent {
            let error =
                CallError::panic(&self.tool, "the call's task ended without a result".into());
            let _ = self.tx.send(Inner::Done {
                call_id: self.call_id.clone(),
                outcome: CallOutcome::failed(&self.call_id, error),
            });
        }
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
    /// The instructions the application or the browser set last, without the marker catalog:
    /// kept so that a catalog declared again (live tools changed) does not replace them.
    their_instructions: Option<String>,
    /// Results of background calls waiting for a point where no response is in progress.
    background_done: VecDeque<(String, CallOutcome)>,
    /// This session asked for a response (`response.create`) that has not started yet.
    response_requested: bool,
    /// Streaming client calls by item id: the call, the tool and the arguments so far.
    streams: HashMap<String, ArgumentStream>,
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
        let (declarations, live_generation) = declared_now(&config);
        let their_instructions = config
            .session
            .get("instructions")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let session = Session {
            registry,
            config,
            tracker: Tracker::new(),
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
            their_instructions,
            background_done: VecDeque::new(),
            response_requested: false,
            streams: HashMap::new(),
        };
        (session, SessionEvents { rx })
    }

    /// The session's id and authenticated principal (set by the relay from its authorizer);
    /// every call made in this session runs with a context from it.
    pub fn set_scope(&mut self, scope: SessionScope) {
        self.scope = scope;
    }

    pub fn scope(&self) -> &SessionScope {
        &self.scope
    }

    /// Uses `naming` for calls sent to this session's browser from now on.
    pub fn set_naming(&mut self, naming: Naming) {
        lock(&self.browser.state).naming = naming;
    }

    /// The first event to send upstream: `session.update` with the declarations.
    pub fn session_update(&self) -> String {
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
        let verdict = self.native_model_event(text);
        if self.markers.is_none() {
            return verdict;
        }
        self.marker_pass(text, verdict)
    }

    /// The marker flow after the native handling: marker text is hidden from the browser and
    /// the calls it completes are run like native ones.
    fn marker_pass(&mut self, text: &str, verdict: Verdict) -> Verdict {
        let Some(flow) = self.markers.as_mut() else {
            return verdict;
        };
        let mut found = Vec::new();
        let verdict = flow.on_model_event(text, verdict, &mut found);
        for f in found {
            match f {
                Found::Call {
                    response_id,
                    call_id,
                    name,
                    arguments,
                } => {
                    self.call_reported(Some(&response_id), Some(&call_id), Some(&name), &arguments);
                    if !self.tracker.is_known(&call_id) {
                        if let Some(flow) = self.markers.as_mut() {
                            flow.forget(&call_id);
                        }
                    }
                }
                Found::Broken {
                    response_id,
                    call_id,
                    error,
                } => self.marker_broken(&response_id, &call_id, error),
            }
        }
        verdict
    }

    /// A marker that could not become a call: an error result for the model, in the same
    /// per-response batch as the response's other calls.
    fn marker_broken(&mut self, response_id: &str, call_id: &str, error: CallError) {
        let response_id = if response_id.is_empty() {
            self.current_response.clone().unwrap_or_default()
        } else {
            response_id.to_owned()
        };
        if self.filler_responses.contains(&response_id)
            || !self.tracker.register(&response_id, call_id)
        {
            if let Some(flow) = self.markers.as_mut() {
                flow.forget(call_id);
            }
            return;
        }
        Counters::bump(&self.counters_ref().calls);
        Counters::bump(&self.counters_ref().invalid_calls);
        self.next_seq += 1;
        self.calls.insert(
            call_id.to_owned(),
            CallInfo::new(error.tool(), CallKind::Invalid, self.next_seq),
        );
        self.finish(call_id, CallOutcome::failed(call_id, error));
    }

    fn native_model_event(&mut self, text: &str) -> Verdict {
        let kind = match openai::head(text) {
            Head::Typed(kind) if openai::is_tool_related_server_event(&kind) => kind,
            _ => return Verdict::Forward,
        };
        let Ok(mut event) = serde_json::from_str::<Value>(text) else {
            return Verdict::Forward;
        };
        let verdict = match kind.as_ref() {
            "response.created" => {
                if let Some(response) = event.get("response") {
                    let id = str_field(response, "id").map(str::to_owned);
                    if openai::is_filler_response(response) {
                        if let Some(id) = id {
                            self.filler_responses.insert(id);
                        }
                    } else if id.is_some() {
                        self.current_response = id;
                        self.response_requested = false;
                    }
                }
                self.scrub_response(&mut event)
            }
            "response.output_item.added" | "response.output_item.done" => {
                let response_id = str_field(&event, "response_id");
                let Some(item) = event.get("item").and_then(openai::function_call_item) else {
                    return Verdict::Forward;
                };
                let visible = self.learn_item(item.item_id, item.call_id, item.name);
                if kind == "response.output_item.done" {
                    if let Some(item_id) = item.item_id {
                        self.streams.remove(item_id);
                    }
                    if let Some(arguments) = item.arguments {
                        self.call_reported(response_id, item.call_id, item.name, arguments);
                    }
                } else if visible {
                    self.start_stream(item.item_id, item.call_id, item.name);
                }
                self.keep_if(visible)
            }
            "response.function_call_arguments.delta" => {
                let item_id = str_field(&event, "item_id");
                let visible = self.known_visibility(item_id, str_field(&event, "call_id"));
                if visible {
                    if let (Some(item_id), Some(delta)) = (item_id, str_field(&event, "delta")) {
                        self.stream_delta(item_id, delta);
                    }
                }
                self.keep_if(visible)
            }
            "response.function_call_arguments.done" => {
                let item_id = str_field(&event, "item_id");
                if let Some(item_id) = item_id {
                    self.streams.remove(item_id);
                }
                let call_id = str_field(&event, "call_id");
                let name = str_field(&event, "name");
                let visible = if name.is_some() {
                    self.learn_item(item_id, call_id, name)
                } else {
                    // The beta protocol had no `name` here; rely on what output_item.added said.
                    self.known_visibility(item_id, call_id)
                };
                if let Some(arguments) = str_field(&event, "arguments") {
                    let response_id = str_field(&event, "response_id");
                    match name {
                        Some(name) => {
                            self.call_reported(response_id, call_id, Some(name), arguments)
                        }
                        None => {
                            // Without a name the call is completed by output_item.done.
                        }
                    }
                }
                self.keep_if(visible)
            }
            "response.done" => self.response_done(&mut event),
            _ => {
                // conversation.item.{added,done,created,retrieved}
                let Some(item) = event.get("item") else {
                    return Verdict::Forward;
                };
                if let Some(fc) = openai::function_call_item(item) {
                    let visible = self.learn_item(fc.item_id, fc.call_id, fc.name);
                    self.keep_if(visible)
                } else if let Some(call_id) = openai::function_call_output_call_id(item) {
                    // The echo of a result this runtime sent: a server call's result stays here.
                    let visible = self.call_visible.get(call_id).copied().unwrap_or(true);
                    self.keep_if(visible)
                } else {
                    Verdict::Forward
                }
            }
        };
        verdict
    }

    /// Starts the partial arguments of a call of a streaming client tool.
    fn start_stream(&mut self, item_id: Option<&str>, call_id: Option<&str>, name: Option<&str>) {
        let (Some(item_id), Some(call_id), Some(name)) = (item_id, call_id, name) else {
            return;
        };
        if !self
            .registry
            .definition(name)
            .is_some_and(|d| d.streams_arguments())
            || self.streams.contains_key(item_id)
        {
            return;
        }
        self.streams.insert(
            item_id.to_owned(),
            ArgumentStream {
                call_id: call_id.to_owned(),
                name: name.to_owned(),
                partial: PartialArguments::new(),
            },
        );
    }

    /// A delta of a streaming call: the page gets the arguments so far when they changed.
    fn stream_delta(&mut self, item_id: &str, delta: &str) {
        let Some(stream) = self.streams.get_mut(item_id) else {
            return;
        };
        let Some(partial) = stream.partial.push(delta) else {
            return;
        };
        let text = browser::encode_partial_arguments(&stream.call_id, &stream.name, &partial);
        if lock(&self.browser.state).connected {
            Counters::bump(&self.config.counters.argument_deltas);
            self.outputs.push_back(Output::ToBrowser(text));
        }
    }

    fn keep_if(&self, visible: bool) -> Verdict {
        if visible {
            Verdict::Forward
        } else {
            Counters::bump(&self.counters_ref().scrubbed_events);
            Verdict::Drop
        }
    }

    /// Whether the browser may see a call of `name`: only calls that are routed to it.
    fn visible_name(&self, name: Option<&str>) -> bool {
        name.and_then(|n| self.registry.location(n)) == Some(crate::Location::Client)
    }

    fn learn_item(
        &mut self,
        item_id: Option<&str>,
        call_id: Option<&str>,
        name: Option<&str>,
    ) -> bool {
        let known = self.known(item_id, call_id);
        let visible = match (known, name) {
            (_, Some(_)) => self.visible_name(name),
            (Some(v), None) => v,
            (None, None) => false,
        };
        if let Some(item_id) = item_id {
            self.item_visible.insert(item_id.to_owned(), visible);
        }
        if let Some(call_id) = call_id {
            self.call_visible.insert(call_id.to_owned(), visible);
        }
        visible
    }

    fn known(&self, item_id: Option<&str>, call_id: Option<&str>) -> Option<bool> {
        item_id
            .and_then(|i| self.item_visible.get(i).copied())
            .or_else(|| call_id.and_then(|c| self.call_visible.get(c).copied()))
    }

    /// Visibility of an event that names no tool: what was learned earlier, hidden if nothing
    /// was (arguments of an unknown call could belong to a server tool).
    fn known_visibility(&self, item_id: Option<&str>, call_id: Option<&str>) -> bool {
        self.known(item_id, call_id).unwrap_or(false)
    }

    /// Removes hidden function calls from `response.output`; forwards unchanged when there are
    /// none.
    fn scrub_response(&mut self, event: &mut Value) -> Verdict {
        let Some(output) = event
            .get_mut("response")
            .and_then(|r| r.get_mut("output"))
            .and_then(Value::as_array_mut)
        else {
            return Verdict::Forward;
        };
        let before = output.len();
        let mut keep = Vec::with_capacity(before);
        for item in output.iter() {
            keep.push(match openai::function_call_item(item) {
                Some(fc) => match fc.name {
                    Some(_) => self.visible_name(fc.name),
                    None => self.known_visibility(fc.item_id, fc.call_id),
                },
                None => true,
            });
        }
        let mut i = 0;
        output.retain(|_| {
            let k = keep[i];
            i += 1;
            k
        });
        if output.len() == before {
            Verdict::Forward
        } else {
            Counters::bump(&self.counters_ref().scrubbed_events);
            Verdict::Replace(event.to_string())
        }
    }

    fn response_done(&mut self, event: &mut Value) -> Verdict {
        let Some(response) = event.get("response") else {
            return Verdict::Forward;
        };
        let id = str_field(response, "id").map(str::to_owned);
        let filler = openai::is_filler_response(response)
            || id
                .as_ref()
                .is_some_and(|i| self.filler_responses.contains(i));
        if filler {
            if let Some(id) = &id {
                self.filler_responses.remove(id);
            }
            self.continuation_if_waiting();
            // A filler's own done is never a continuation and never completes a response; any
            // calls in it are ignored (fillers are declared without tools).
            if let Some(items) = response.get("output").and_then(Value::as_array) {
                for item in items {
                    if let Some(fc) = openai::function_call_item(item) {
                        if let Some(call_id) = fc.call_id {
                            self.call_visible.insert(call_id.to_owned(), false);
                            self.note(Note::CallInFiller {
                                call_id: call_id.to_owned(),
                            });
                        }
                    }
                }
            }
            return self.scrub_response(event);
        }
        let response_id = id
            .clone()
            .or_else(|| self.current_response.clone())
            .unwrap_or_default();
        // Calls that only this event reports (no earlier *.done for them).
        let mut late: Vec<ReportedCall> = Vec::new();
        if let Some(items) = response.get("output").and_then(Value::as_array) {
            for item in items {
                if let Some(fc) = openai::function_call_item(item) {
                    if let Some(arguments) = fc.arguments {
                        late.push(ReportedCall {
                            item_id: fc.item_id.map(str::to_owned),
                            call_id: fc.call_id.map(str::to_owned),
                            name: fc.name.map(str::to_owned),
                            arguments: arguments.to_owned(),
                        });
                    }
                }
            }
        }
        for c in &late {
            self.learn_item(
                c.item_id.as_deref(),
                c.call_id.as_deref(),
                c.name.as_deref(),
            );
            self.call_reported(
                Some(&response_id),
                c.call_id.as_deref(),
                c.name.as_deref(),
                &c.arguments,
            );
        }
        if self.current_response.as_deref() == Some(response_id.as_str()) {
            self.current_response = None;
        }
        let interrupted = openai::is_cancelled_response(response);
        if interrupted {
            self.interrupt(&response_id);
        }
        // Between responses, before any continuation: the model learns of tools that came
        // or went since it was last told.
        if self.current_response.is_none() {
            self.redeclare_if_changed();
        }
        // An interrupted response earns no continuation: the user is speaking, and their turn
        // brings the next response (which sees every result sent so far).
        if self.tracker.response_done(&response_id) && !interrupted {
            self.continuation();
        } else {
            self.continuation_if_waiting();
        }
        if !interrupted {
            self.send_wanted_fillers(&response_id);
        }
        self.flush_background();
        self.scrub_response(event)
    }

    fn call_reported(
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
        let route = dispatch::plan(&self.registry, &call);
        // A name the registry does not know may be one of the live tools now.
        let live = self.config.live_tools.is_some()
            && matches!(&route, Route::Reject(e) if e.kind() == CallErrorKind::UnknownTool);
        let kind = match &route {
            _ if live => CallKind::Server,
            Route::Server { .. } => CallKind::Server,
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
        let def = self.registry.definition(name);
        let needs_approval = def.is_some_and(|d| d.requires_approval());
        let background = kind == CallKind::Server && def.is_some_and(|d| d.runs_in_background());
        // A slow call deserves "let me check", the browser's or the server's; a background
        // call answers at once.
        if kind == CallKind::Client || (kind == CallKind::Server && !background) {
            self.schedule_filler(call_id, name);
        }
        match route {
            Route::Reject(_) if live => self.spawn_live_call(call),
            Route::Reject(error) => {
                let outcome = CallOutcome::failed(call_id, error);
                self.finish(call_id, outcome);
            }
            route if background => self.spawn_background_call(call, route),
            route => {
                // A call that waits for approval reaches the browser only once approved.
                if !needs_approval {
                    self.send_to_browser_now(&call, &route);
                }
                self.spawn_call(call, route)
            }
        }
    }

    /// Sends a client call to the browser at once, in the order the model made the calls; the
    /// call's task then waits on the reply channel registered here.
    fn send_to_browser_now(&mut self, call: &ToolCall, route: &Route) {
        let arguments = match route {
            Route::Client { arguments, .. } | Route::Notify { arguments } => arguments,
            Route::Server { .. } | Route::Reject(_) => return,
        };
        let mut state = lock(&self.browser.state);
        if !state.connected {
            return;
        }
        let text = browser::encode_call(
            state.naming,
            &call.call_id,
            &call.name,
            &arguments.to_string(),
        );
        if matches!(route, Route::Client { .. }) {
            let (tx, rx) = oneshot::channel();
            state.pending.insert(call.call_id.clone(), tx);
            state.sent_waiting.insert(call.call_id.clone(), rx);
        } else {
            state.sent_notify.insert(call.call_id.clone());
        }
        drop(state);
        self.outputs.push_back(Output::ToBrowser(text));
    }

    fn spawn_call(&mut self, call: ToolCall, route: Route) {
        if tokio::runtime::Handle::try_current().is_err() {
            let error = CallError::no_runtime(&call.name);
            let outcome = CallOutcome::failed(&call.call_id, error);
            let call_id = call.call_id.clone();
            self.finish(&call_id, outcome);
            return;
        }
        let registry = self.registry.clone();
        let path = self.browser.clone();
        let ctx = self.call_context(&call);
        let guard = DoneGuard {
            tx: self.browser.tx.clone(),
            call_id: call.call_id.clone(),
            tool: call.name.clone(),
            sent: false,
        };
        // The call's span nests in whatever span drives the session (the relay's
        // `toolc.session`): a spawned task does not inherit it by itself.
        let task = async move {
            let outcome = dispatch::run_planned(&registry, ctx, &call, route, &path).await;
            guard.send(outcome);
        };
        tokio::spawn(tracing::Instrument::instrument(
            task,
            tracing::Span::current(),
        ));
    }

    /// The context a call runs with, kept so that an interruption can cancel it.
    fn call_context(&mut self, call: &ToolCall) -> CallContext {
        let ctx = self.scope.call(&call.name, &call.call_id);
        if let Some(info) = self.calls.get_mut(&call.call_id) {
            info.ctx = Some(ctx.clone());
        }
        ctx
    }

    /// A `mode: async` server call: once approved (if it must be), the model gets "started"
    /// as the call's result and the conversation goes on; the work's own result comes back as
    /// [`Inner::Background`] and is added at the next point where no response is in progress.
    fn spawn_background_call(&mut self, call: ToolCall, route: Route) {
        if tokio::runtime::Handle::try_current().is_err() {
            let outcome = CallOutcome::failed(&call.call_id, CallError::no_runtime(&call.name));
            return self.finish(&call.call_id.clone(), outcome);
        }
        let registry = self.registry.clone();
        let path = self.browser.clone();
        let ctx = self.call_context(&call);
        if let Some(info) = self.calls.get_mut(&call.call_id) {
            info.background = true;
        }
        let tx = self.browser.tx.clone();
        let guard = DoneGuard {
            tx: tx.clone(),
            call_id: call.call_id.clone(),
            tool: call.name.clone(),
            sent: false,
        };
        let session = self.scope.session_id().to_owned();
        let task = async move {
            if let Some(refused) =
                dispatch::approval_gate(&registry, &ctx, &call, &route, &path).await
            {
                return guard.send(refused);
            }
            guard.send(CallOutcome::started(&call.call_id, &call.name));
            let work = dispatch::run_approved(&registry, ctx, &call, route, &path);
            let outcome = dispatch::traced(&call, &session, "server_async", work).await;
            let _ = tx.send(Inner::Background {
                call_id: call.call_id.clone(),
                outcome,
            });
        };
        tokio::spawn(tracing::Instrument::instrument(
            task,
            tracing::Span::current(),
        ));
    }

    /// The user interrupted `response_id` (its `response.done` says `cancelled`): every call of
    /// it that cancels on interruption and is still running is cancelled — its executor's
    /// signal fires, the page's handler or approval question is aborted, and the model gets one
    /// "interrupted" result for it (a result that comes later is refused).
    fn interrupt(&mut self, response_id: &str) {
        let mut affected: Vec<(u64, String)> = self
            .calls
            .iter()
            .filter(|(call_id, info)| {
                self.tracker.response_of(call_id) == Some(response_id)
                    && (self.tracker.is_open(call_id)
                        || info.background
                        || info.kind == CallKind::Notify)
                    && self
                        .registry
                        .definition(&info.name)
                        .is_some_and(|d| d.cancels_on_interruption())
            })
            .map(|(call_id, info)| (info.seq, call_id.clone()))
            .collect();
        affected.sort();
        let mut cancelled = 0;
        for (_, call_id) in affected {
            let Some(info) = self.calls.get_mut(&call_id) else {
                continue;
            };
            if let Some(ctx) = &info.ctx {
                ctx.cancel();
            }
            info.background = false;
            let (name, kind) = (info.name.clone(), info.kind);
            let (connected, questions) = {
                let mut state = lock(&self.browser.state);
                state.pending.remove(&call_id);
                state.sent_waiting.remove(&call_id);
                let questions: Vec<String> = state
                    .approvals
                    .iter()
                    .filter(|(_, open)| open.call_id == call_id)
                    .map(|(id, _)| id.clone())
                    .collect();
                for id in &questions {
                    state.approvals.remove(id);
                }
                (state.connected, questions)
            };
            if connected {
                for id in &questions {
                    let text = browser::encode_approval_cancel(id, "interrupted");
                    self.outputs.push_back(Output::ToBrowser(text));
                }
                if matches!(kind, CallKind::Client | CallKind::Notify) {
                    let text = browser::encode_call_cancel(&call_id, "interrupted");
                    self.outputs.push_back(Output::ToBrowser(text));
                }
            }
            if self.tracker.is_open(&call_id) {
                Counters::bump(&self.counters_ref().interrupted_calls);
                cancelled += 1;
                let outcome = CallOutcome::failed(&call_id, CallError::interrupted(&name));
                self.finish(&call_id, outcome);
            }
        }
        self.note(Note::Interrupted {
            response_id: response_id.to_owned(),
            cancelled,
        });
    }

    /// Whether the model may be asked for a response now: none is in progress, starting, or
    /// owed to a waiting continuation.
    fn quiet(&self) -> bool {
        self.current_response.is_none()
            && self.filler_responses.is_empty()
            && !self.response_requested
            && !self.continuation_waiting
    }

    /// Adds the background results that arrived to the conversation, as system messages.
    fn push_background_results(&mut self) -> bool {
        let mut any = false;
        while let Some((call_id, outcome)) = self.background_done.pop_front() {
            let Some(info) = self.calls.get(&call_id) else {
                continue;
            };
            let text = openai::background_result(
                &info.name,
                &call_id,
                outcome.is_error(),
                &outcome.output,
            );
            Counters::bump(&self.counters_ref().background_results);
            self.outputs.push_back(Output::ToModel(text));
            any = true;
        }
        any
    }

    /// At a quiet point, the background results that arrived and one `response.create` for
    /// them.
    fn flush_background(&mut self) {
        if self.background_done.is_empty() || !self.quiet() {
            return;
        }
        if self.push_background_results() {
            self.response_requested = true;
            self.outputs
                .push_back(Output::ToModel(openai::response_create()));
        }
    }

    /// A call of a name the registry does not know, for the live tools (which may have gained
    /// it since the session started). It runs like a server call: hidden from the browser.
    fn spawn_live_call(&mut self, call: ToolCall) {
        let Some(live) = self.config.live_tools.clone() else {
            return;
        };
        if tokio::runtime::Handle::try_current().is_err() {
            let outcome = CallOutcome::failed(&call.call_id, CallError::no_runtime(&call.name));
            return self.finish(&call.call_id.clone(), outcome);
        }
        let ctx = self.scope.call(&call.name, &call.call_id);
        let guard = DoneGuard {
            tx: self.browser.tx.clone(),
            call_id: call.call_id.clone(),
            tool: call.name.clone(),
            sent: false,
        };
        let session = self.scope.session_id().to_owned();
        let task = async move {
            let run = async {
                match serde_json::from_str::<Value>(&call.arguments) {
                    Err(e) => {
                        CallOutcome::failed(&call.call_id, CallError::invalid_json(&call.name, &e))
                    }
                    Ok(arguments) => match live.call(ctx, &call.name, arguments).await {
                        Ok(value) => CallOutcome::ok(&call.call_id, value.to_string()),
                        Err(e) => CallOutcome::failed(
                            &call.call_id,
                            CallError::tool_failed(&call.name, e),
                        ),
                    },
                }
            };
            guard.send(dispatch::traced(&call, &session, "server_live", run).await);
        };
        tokio::spawn(tracing::Instrument::instrument(
            task,
            tracing::Span::current(),
        ));
    }

    /// Sends a `session.update` with the current declarations when the live tools changed
    /// since the model was last told.
    fn redeclare_if_changed(&mut self) {
        let Some(live) = &self.config.live_tools else {
            return;
        };
        let (generation, _) = live.declarations();
        if self.live_generation == Some(generation) {
            return;
        }
        let (declarations, generation) = declared_now(&self.config);
        self.declarations = declarations;
        self.live_generation = generation;
        let mut session = Map::new();
        session.insert("type".into(), Value::String("realtime".into()));
        session.insert("tools".into(), Value::Array(self.declarations.clone()));
        // Marker tools are declared in the instructions: those follow the tools too, with
        // what the application or browser set first.
        if let Some(instructions) = self.marker_instructions() {
            session.insert("instructions".into(), Value::String(instructions));
        }
        tracing::info!(
            session = %self.scope.session_id(),
            tools = self.declarations.len(),
            "tools changed: declared again"
        );
        self.outputs
            .push_back(Output::ToModel(openai::session_update(session)));
    }

    fn schedule_filler(&mut self, call_id: &str, name: &str) {
        let Some(delay) = self.config.filler_delay else {
            return;
        };
        let has_phrases = self
            .registry
            .definition(name)
            .is_some_and(|d| !d.filler.is_empty());
        if !has_phrases || tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let tx = self.browser.tx.clone();
        let call_id = call_id.to_owned();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let _ = tx.send(Inner::FillerDue(call_id));
        });
    }

    /// Asks the model to go on. While another response is in progress (the user spoke and a new
    /// response started before the calls of the previous one finished, or a filler is being
    /// said), the model rejects a `response.create` (`conversation_already_has_active_response`),
    /// so the continuation waits for that response's `response.done`.
    fn continuation(&mut self) {
        if self.current_response.is_some() || !self.filler_responses.is_empty() {
            self.continuation_waiting = true;
            return;
        }
        self.continuation_waiting = false;
        // A call may have taught the live tools something (a miss refreshes the catalog): the
        // model answers with the set as it is now.
        self.redeclare_if_changed();
        // Background results that arrived go in before it, so one response covers both.
        self.push_background_results();
        Counters::bump(&self.counters_ref().continuations);
        self.response_requested = true;
        self.outputs
            .push_back(Output::ToModel(openai::response_create()));
    }

    /// After a `response.done`: the continuation that waited for it, if any (one, also when
    /// the finished response's own calls want one too).
    fn continuation_if_waiting(&mut self) {
        if self.continuation_waiting {
            self.continuation();
        }
    }

    /// Sends the result of an open call to the model and, when it was the last open call of a
    /// finished response, the continuation.
    fn finish(&mut self, call_id: &str, outcome: CallOutcome) {
        if !self.tracker.is_open(call_id) {
            return;
        }
        if let Status::Failed(error) = &outcome.status {
            let counters = self.counters_ref();
            Counters::bump(&counters.failed_calls);
            if error.kind() == CallErrorKind::NotApproved {
                Counters::bump(&counters.approvals_refused);
            }
            let kind = self.calls.get(call_id).map(|c| c.kind);
            if kind == Some(CallKind::Client) {
                match error.kind() {
                    CallErrorKind::Timeout => Counters::bump(&counters.client_timeouts),
                    _ if error.code() == Some("client_disconnected") => {
                        Counters::bump(&counters.client_disconnects)
                    }
                    _ => {}
                }
            }
            self.note(Note::CallFailed {
                call_id: call_id.to_owned(),
                tool: error.tool().to_owned(),
                kind: error.kind(),
                detail: error.detail().map(str::to_owned),
            });
        }
        let marker_result = self
            .markers
            .as_mut()
            .and_then(|flow| flow.result_event(call_id, &outcome));
        self.outputs.push_back(Output::ToModel(
            marker_result.unwrap_or_else(|| openai::function_call_output(call_id, &outcome.output)),
        ));
        if self.config.trace_calls {
            self.trace(call_id, &outcome.status);
        }
        if self.tracker.resolve(call_id) == Resolved::Continue {
            self.continuation();
        }
    }

    /// The opt-in `toolc.trace` event for a resolved call (see [`SessionConfig::trace_calls`]).
    fn trace(&mut self, call_id: &str, status: &Status) {
        let Some(info) = self.calls.get(call_id) else {
            return;
        };
        let routed_to_browser = matches!(info.kind, CallKind::Client | CallKind::Notify);
        let location = if routed_to_browser {
            crate::Location::Client
        } else {
            // A name the registry does not know came from the model alone: not worth a trace.
            match self.registry.location(&info.name) {
                Some(location) => location,
                None => return,
            }
        };
        let (status, error) = match status {
            Status::Ok => ("ok", None),
            Status::Acknowledged => ("acknowledged", None),
            Status::Failed(e) => ("error", Some(e.kind().as_str())),
        };
        let text = browser::encode_trace(&browser::Trace {
            // The browser already holds the ids of calls it was given, and no others.
            call_id: routed_to_browser.then_some(call_id),
            name: &info.name,
            location,
            duration: info.started.elapsed(),
            status,
            error,
        });
        if lock(&self.browser.state).connected {
            self.outputs.push_back(Output::ToBrowser(text));
        }
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
        info.filler_sent = true;
        info.filler_wanted = false;
        // Rotate through the phrases so consecutive fillers do not repeat themselves.
        let phrase = &def.filler[self.filler_turn % def.filler.len()];
        self.filler_turn = self.filler_turn.wrapping_add(1);
        Counters::bump(&self.config.counters.fillers);
        self.outputs
            .push_back(Output::ToModel(openai::filler_response_create(
                phrase, call_id,
            )));
    }

    // ---- browser → model -------------------------------------------------------------------

    /// An event from the browser. Results are handled here and never forwarded; a
    /// `function_call` item is dropped; a `session.update` gets the declarations merged in;
    /// everything else passes.
    pub fn on_browser_event(&mut self, text: &str) -> Verdict {
        let kind = match guard::event_type(text) {
            Ok(kind) => kind,
            Err(refused) => return self.refuse_browser_event(refused),
        };
        match kind.as_ref() {
            "function_call.result" | "tool.result" => {
                let naming = Naming::of_result_type(&kind).unwrap_or_default();
                let result = match serde_json::from_str::<Value>(text) {
                    Ok(v) => browser::decode_result(naming, &v),
                    Err(_) => Err(Malformed::MissingCallId),
                };
                self.browser_result(result);
                Verdict::Drop
            }
            "conversation.item.create" => {
                let Ok(v) = serde_json::from_str::<Value>(text) else {
                    return Verdict::Forward;
                };
                if let Some(result) = browser::decode_item_result(&v) {
                    self.browser_result(result);
                    return Verdict::Drop;
                }
                match v.get("item").and_then(openai::function_call_item) {
                    // A call item would put a call in the model's mouth that it never made (its
                    // result could not come from the browser either): the less trusted side
                    // does not write the model's calls.
                    Some(call) => {
                        Counters::bump(&self.counters_ref().dropped_browser_events);
                        self.note(Note::BrowserCallDropped {
                            call_id: call.call_id.map(str::to_owned),
                        });
                        Verdict::Drop
                    }
                    None => Verdict::Forward,
                }
            }
            "toolc.approval.response" => {
                self.approval_answer(text);
                Verdict::Drop
            }
            // The browser protocol's own events are never the model's.
            other if other.starts_with("toolc.") => Verdict::Drop,
            "response.create" => {
                let Ok(v) = serde_json::from_str::<Value>(text) else {
                    return Verdict::Forward;
                };
                let declarations = &self.declarations;
                let declared = |name: &str| {
                    declarations
                        .iter()
                        .any(|d| d.get("name").and_then(Value::as_str) == Some(name))
                };
                match guard::check_response_create(&v, declared) {
                    Ok(()) => Verdict::Forward,
                    Err(refused) => self.refuse_browser_event(refused),
                }
            }
            "session.update" => {
                let Ok(mut v) = serde_json::from_str::<Value>(text) else {
                    return Verdict::Forward;
                };
                let merge = openai::merge_session_update(&mut v, &self.declarations);
                if let Some(markers) = self.config.markers.clone() {
                    let catalog = markers.instructions_with(self.config.live_tools.as_deref());
                    if let Some(theirs) =
                        markers.merge_catalog_into_session_update(&mut v, &catalog)
                    {
                        self.their_instructions = Some(theirs);
                    }
                }
                for name in merge.dropped_tools {
                    self.note(Note::BrowserToolDropped { name });
                }
                Verdict::Replace(v.to_string())
            }
            _ => Verdict::Forward,
        }
    }

    /// A binary frame from the browser: never forwarded (the protocol is JSON text, and nothing
    /// in a binary frame is checked).
    pub fn on_browser_binary(&mut self) -> Verdict {
        self.refuse_browser_event(guard::Refused::BinaryFrame)
    }

    /// Drops a browser event the model must not see, and tells the browser why.
    fn refuse_browser_event(&mut self, refused: guard::Refused) -> Verdict {
        Counters::bump(&self.counters_ref().refused_browser_events);
        let message = refused.to_string();
        let error = json!({
            "type": "error",
            "error": { "type": "relay_refused", "code": refused.code(), "message": message },
        });
        self.outputs.push_back(Output::ToBrowser(error.to_string()));
        self.note(Note::BrowserEventRefused {
            code: refused.code(),
            message,
        });
        Verdict::Drop
    }

    /// The page's answer to an approval request: it decides the one call the request was
    /// made for (with the arguments the session holds), once.
    fn approval_answer(&mut self, text: &str) {
        let answer = serde_json::from_str::<Value>(text)
            .map_err(|_| browser::BadAnswer::MissingApprovalId)
            .and_then(|v| browser::decode_approval_answer(&v));
        let answer = match answer {
            Ok(answer) => answer,
            Err(bad) => {
                Counters::bump(&self.counters_ref().results_rejected);
                return self.note(Note::ApprovalAnswerRejected {
                    approval_id: String::new(),
                    why: bad.as_str().to_owned(),
                });
            }
        };
        let open = lock(&self.browser.state)
            .approvals
            .remove(&answer.approval_id);
        let Some(open) = open else {
            Counters::bump(&self.counters_ref().results_rejected);
            return self.note(Note::ApprovalAnswerRejected {
                approval_id: answer.approval_id,
                why: "no such open approval request".into(),
            });
        };
        let decision = if answer.approved {
            Counters::bump(&self.counters_ref().approvals_granted);
            Decision::Approved
        } else {
            Decision::Denied {
                reason: answer.reason,
            }
        };
        let _ = open.reply.send(decision);
    }

    fn reject(&self, call_id: &str, reason: RejectReason) {
        Counters::bump(&self.counters_ref().results_rejected);
        self.note(Note::ResultRejected {
            call_id: call_id.to_owned(),
            reason,
        });
    }

    fn browser_result(&mut self, result: Result<BrowserResult, Malformed>) {
        let result = match result {
            Ok(r) => r,
            Err(m) => return self.reject("", RejectReason::Malformed(m)),
        };
        match self.calls.get(&result.call_id).map(|c| c.kind) {
            None => return self.reject(&result.call_id, RejectReason::UnknownCall),
            Some(CallKind::Client) => {}
            Some(_) => return self.reject(&result.call_id, RejectReason::NotRoutedToBrowser),
        }
        if !self.tracker.is_open(&result.call_id) {
            return self.reject(&result.call_id, RejectReason::NotOpen);
        }
        let reply = lock(&self.browser.state).pending.remove(&result.call_id);
        match reply.map(|tx| tx.send(Ok(result.output))) {
            Some(Ok(())) => Counters::bump(&self.counters_ref().results_accepted),
            _ => self.reject(&result.call_id, RejectReason::NotOpen),
        }
    }

    /// The browser went away: its open calls fail at once (their results reach the model
    /// through [`SessionEvents`]), and later client calls fail as disconnected.
    pub fn browser_closed(&mut self) {
        let pending = {
            let mut state = lock(&self.browser.state);
            state.connected = false;
            state.sent_notify.clear();
            // Waiting approvals end as "nobody to ask".
            state.approvals.clear();
            std::mem::take(&mut state.pending)
        };
        // Dropping the senders wakes every waiting call with "disconnected"; running executors
        // see their cancellation signal.
        drop(pending);
        self.scope.cancel();
        self.outputs.retain(|o| matches!(o, Output::ToModel(_)));
    }

    /// Whether the browser is still attached.
    pub fn browser_connected(&self) -> bool {
        lock(&self.browser.state).connected
    }
}
