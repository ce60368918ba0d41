//! One realtime session between a model connection and a browser connection.
//!
//! A session is a provider-neutral core ([`neutral`]: the call engine, open calls per response,
//! the browser path, visibility, traces) and one codec for the model's wire ([`codec`]: OpenAI
//! Realtime, Gemini Live); [`RealtimeSession`] is the public face that hands each event to them.
//!
//! The session is transport-free: a driver (the relay, a test, a benchmark) feeds it the text of
//! every event from either side and forwards, replaces or drops that event as the returned
//! [`Verdict`] says, then sends whatever the session queued ([`RealtimeSession::pop_output`]). Calls run
//! on Tokio tasks; their results, the browser messages they produce and filler timers come back
//! through [`SessionEvents`], which the driver hands to [`RealtimeSession::on_event`].

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
use super::partial::PartialArguments;
use super::provider::RealtimeProvider;
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
mod codec;
mod neutral;
mod notes;
mod recent;

use recent::Recent;

use client_path::*;
use codec::Codec;
pub use codec::{Reconnect, ResumeRefused};
use neutral::Core;
pub use notes::{CounterSnapshot, Counters, Note, Observer, Output, RejectReason, Verdict};

/// Settings shared by sessions.
#[derive(Clone)]
pub struct SessionConfig {
    /// The model API the session speaks upstream; the browser protocol is the same for all.
    pub provider: RealtimeProvider,
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
    /// How long a `response.create` of the session may wait for the response it asks for to
    /// start (OpenAI Realtime, GPT-Live); past it the request is forgotten and a continuation
    /// asked for again. `None`: wait forever.
    pub response_start_timeout: Option<Duration>,
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
    /// GPT-Live: runs the work the live model delegates to the application
    /// (`session.delegation.created` with `target: client`) over the conversation's transcript,
    /// and the session answers with its [`DelegationAnswer`]. `None` (the default): the page
    /// answers its client delegations (`session.commentary.append` or
    /// `session.thinking.append` naming one), and no other.
    pub client_delegate: Option<ClientDelegate>,
    /// Counts the calls of tools with a `rate_limit`; `None` (the default): the process's
    /// [`crate::engine::InMemoryLimiter::shared`]. A fleet of relays shares counts through a
    /// limiter over a shared store (`toolc_kernel::engine::RedisLimiter`, feature `redis`).
    pub limiter: Option<Arc<dyn crate::engine::RateLimiter>>,
    /// Where the first calls of a conversation the application named
    /// ([`crate::SessionScope::with_conversation_id`], the relay's `?conversation=ID`) are kept
    /// for repeats made in other sessions and processes; `None` (the default), or a session
    /// without such an id: in this session only. A fleet of relays shares them through a
    /// store such as `toolc_kernel::engine::RedisDuplicates` (feature `redis`).
    pub duplicates: Option<Arc<dyn crate::engine::DuplicateStore>>,
    /// GPT-Live: the session is attached as a sideband (`/v1/live/sessions/{id}/attach`) to
    /// one the page opened over WebRTC ([`crate::gpt_live::webrtc_session`] writes its
    /// settings), so audio never passes through the relay. The first message is a
    /// `session.update` with the tools (never `session.start`), nothing the model sends goes
    /// to the page (it has its own data channel), the page's socket carries the browser
    /// protocol only, and a server call answered by someone else is reported
    /// ([`Note::ServerCallAnsweredElsewhere`]). `false` (the default): the relay's own
    /// websocket to the model, everything through toolc.
    pub sideband: bool,
}

/// Runs a delegated task: [`SessionConfig::client_delegate`].
pub type ClientDelegate = Arc<
    dyn Fn(
            Delegation,
            CallContext,
        ) -> std::pin::Pin<Box<dyn std::future::Future<Output = DelegationAnswer> + Send>>
        + Send
        + Sync,
>;

/// Makes a [`ClientDelegate`] of an async function.
pub fn client_delegate<F, Fut>(f: F) -> ClientDelegate
where
    F: Fn(Delegation, CallContext) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = DelegationAnswer> + Send + 'static,
{
    Arc::new(move |delegation, ctx| Box::pin(f(delegation, ctx)))
}

/// Work the live model delegated to the application.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delegation {
    /// The delegation's id, which the answer names.
    pub id: String,
    /// The conversation so far, as the live model's transcripts give it (the most recent
    /// 32 KiB); the task is in its last lines.
    pub transcript: Vec<TranscriptLine>,
}

/// One speaker's consecutive transcript fragments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TranscriptLine {
    /// Who spoke.
    pub speaker: Speaker,
    /// What they said.
    pub text: String,
}

/// A speaker of a conversation's transcript.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Speaker {
    /// The user (input audio).
    User,
    /// The live model (its speech).
    Assistant,
}

/// What a delegated task gives the live model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DelegationAnswer {
    /// Context the model says to the user (`session.commentary.append`).
    Say(String),
    /// Silent context for what the model says next (`session.thinking.append`).
    Think(String),
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
            .field("response_start_timeout", &self.response_start_timeout)
            .field("provider", &self.provider)
            .field("async_scheduling", &self.async_scheduling)
            .field("live", &self.live)
            .field("client_delegate", &self.client_delegate.is_some())
            .field("limiter", &self.limiter.is_some())
            .field("duplicates", &self.duplicates.is_some())
            .field("sideband", &self.sideband)
            .finish()
    }
}

/// Why [`RealtimeSession::select_toolsets`] refused a choice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SelectToolsetsError {
    /// A name is not a toolset of the registry.
    Unknown(crate::UnknownToolset),
    /// The provider takes the session's tools once, when it starts (Gemini Live's `setup`).
    DeclaredOnce(RealtimeProvider),
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

/// Default wait for a requested response to start.
pub const DEFAULT_RESPONSE_START_TIMEOUT: Duration = Duration::from_secs(15);

/// Default wait for the user's answer to an approval request.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(60);

impl SessionConfig {
    /// An OpenAI Realtime session's settings, with the registry's tools declared.
    pub fn new(registry: &Registry) -> SessionConfig {
        SessionConfig::for_provider(registry, RealtimeProvider::OpenAi)
    }

    /// A session's settings for `provider`, with the registry's tools declared as it takes them.
    pub fn for_provider(registry: &Registry, provider: RealtimeProvider) -> SessionConfig {
        SessionConfig {
            provider,
            declarations: provider.declarations(registry.definitions()),
            session: provider.default_session(),
            naming: Naming::default(),
            filler_delay: Some(DEFAULT_FILLER_DELAY),
            counters: Arc::new(Counters::default()),
            observer: None,
            trace_calls: false,
            markers: None,
            live_tools: None,
            approval_timeout: DEFAULT_APPROVAL_TIMEOUT,
            response_start_timeout: Some(DEFAULT_RESPONSE_START_TIMEOUT),
            async_scheduling: Scheduling::default(),
            scheduling_of: HashMap::new(),
            selection: None,
            live: gemini_live::LiveOptions::default(),
            client_delegate: None,
            limiter: None,
            duplicates: None,
            sideband: false,
        }
    }

    /// Declares only the tools in no toolset and those of `toolsets` (the manifest's
    /// `toolsets`), and refuses calls of the others. [`RealtimeSession::select_toolsets`] changes the
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
    /// A `response.create` of the session may have started nothing
    /// ([`SessionConfig::response_start_timeout`]).
    RequestDue(String),
    /// The answer of a delegated task ([`SessionConfig::client_delegate`]).
    Delegated {
        delegation_id: String,
        answer: DelegationAnswer,
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

/// One session. See the module documentation for how a driver uses it.
pub struct RealtimeSession {
    core: Core,
    codec: Box<dyn Codec>,
}

impl fmt::Debug for RealtimeSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RealtimeSession")
            .field("provider", &self.core.config.provider)
            .field("open_calls", &self.core.tracker.open_calls())
            .field("calls", &self.core.calls.len())
            .field("queued_outputs", &self.core.outputs.len())
            .finish()
    }
}

impl RealtimeSession {
    /// A session over `registry` with `config`, and the receiving end of its call tasks, which the
    /// driver polls and hands to [`RealtimeSession::on_event`]. Its scope is a fresh one until
    /// [`RealtimeSession::set_scope`].
    pub fn new(
        registry: Arc<Registry>,
        config: Arc<SessionConfig>,
    ) -> (RealtimeSession, SessionEvents) {
        let codec = codec::for_provider(&config);
        let (core, events) = Core::new(registry, config, codec.speaks_fillers());
        (RealtimeSession { core, codec }, events)
    }

    /// The session's id and authenticated principal (set by the relay from its authorizer);
    /// every call made in this session runs with a context from it.
    pub fn set_scope(&mut self, scope: SessionScope) {
        // `per principal` rate limits count this user's calls across sessions.
        let principal = scope.principal().map(|p| p.id().to_owned());
        self.core.conversation.set_principal(principal);
        // Repeats of calls made in other sessions of this conversation (a page that came back
        // to another relay) are caught when the application named it.
        let conversation_id = scope.conversation_id().map(str::to_owned);
        self.core.conversation.set_conversation_id(conversation_id);
        self.core.scope = scope;
    }

    /// The session's id and principal, as every call made in it sees them.
    pub fn scope(&self) -> &SessionScope {
        &self.core.scope
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
        let core = &mut self.core;
        if self.codec.declares_once() {
            return Err(SelectToolsetsError::DeclaredOnce(core.config.provider));
        }
        let selection = core
            .registry
            .selection(toolsets)
            .map_err(SelectToolsetsError::Unknown)?;
        core.own_declarations = core.config.provider.declarations(
            core.registry
                .definitions()
                .filter(|d| selection.offers(&d.name)),
        );
        core.conversation.set_selection(Some(selection));
        self.codec.tools_chosen(core);
        Ok(())
    }

    /// The toolsets chosen last, if any ([`RealtimeSession::select_toolsets`]).
    pub fn toolsets(&self) -> Option<&[String]> {
        self.core.conversation.selection().map(|s| s.toolsets())
    }

    /// Uses `naming` for calls sent to this session's browser from now on.
    pub fn set_naming(&mut self, naming: Naming) {
        lock(&self.core.browser.state).naming = naming;
    }

    /// The first event to send upstream: `session.update` (OpenAI) or `setup` (Gemini Live)
    /// with the declarations.
    pub fn session_update(&self) -> String {
        self.codec.first_message(&self.core)
    }

    /// The session's counters, shared with every session of its config.
    pub fn counters(&self) -> &Arc<Counters> {
        &self.core.config.counters
    }

    /// Calls of this session that have not resolved.
    pub fn open_calls(&self) -> usize {
        self.core.tracker.open_calls()
    }

    /// The next message to send, in the order they were produced.
    pub fn pop_output(&mut self) -> Option<Output> {
        self.core.outputs.pop_front()
    }

    /// Every queued message, in order.
    pub fn drain_outputs(&mut self) -> impl Iterator<Item = Output> + '_ {
        self.core.outputs.drain(..)
    }

    // ---- model → browser ------------------------------------------------------------------

    /// An event from the model. Tool calls in it are started; the verdict says what the browser
    /// gets.
    pub fn on_model_event(&mut self, text: &str) -> Verdict {
        let verdict = self.codec.on_model_event(&mut self.core, text);
        self.core.forget_calls();
        verdict
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
        self.core
            .unreadable_model_event("(binary frame, not UTF-8)")
    }

    // ---- call tasks ------------------------------------------------------------------------

    /// An event from [`SessionEvents`].
    pub fn on_event(&mut self, event: SessionEvent) {
        self.core.on_event(self.codec.as_mut(), event)
    }

    // ---- browser → model -------------------------------------------------------------------

    /// An event from the browser, read strictly first ([`guard::top_level`]). Results and
    /// approval answers are handled here and never forwarded; what may go upstream is the
    /// codec's to check (OpenAI: a `function_call` item is dropped, a `session.update` gets
    /// the declarations merged in; Live: only input passes).
    pub fn on_browser_event(&mut self, text: &str) -> Verdict {
        let top = match guard::top_level(text) {
            Ok(top) => top,
            Err(refused) => return self.core.refuse_browser_event(refused),
        };
        // Audio input is what a driver may drop when too much waits for a model that is not
        // ready; nothing else is.
        self.core.last_input_audio = self.codec.is_audio_input(&top);
        if let Some(verdict) = self.core.protocol_event(top.kind.as_deref(), text) {
            return verdict;
        }
        self.codec.on_browser_event(&mut self.core, top, text)
    }

    /// A binary frame from the browser: never forwarded (the protocol is JSON text, and nothing
    /// in a binary frame is checked).
    pub fn on_browser_binary(&mut self) -> Verdict {
        self.core.refuse_browser_event(guard::Refused::BinaryFrame)
    }

    /// The browser went away: its open calls fail at once (their results reach the model
    /// through [`SessionEvents`]), and later client calls fail as disconnected.
    pub fn browser_closed(&mut self) {
        self.core.browser_closed()
    }

    /// The page's connection dropped, and the driver holds the session for the page to come
    /// back (a relay's resume window). Nothing fails: waiting client calls stay open until their
    /// own deadlines, approval requests until theirs, running calls go on, and what the session
    /// queues for the page stays queued (the driver keeps it for the resumed page). Client
    /// calls and approval requests made meanwhile are registered but not sent: the page gets
    /// them, with the open ones it was sent before, from [`RealtimeSession::browser_resumed`]. When the
    /// page does not come back, the driver calls [`RealtimeSession::browser_closed`].
    pub fn browser_away(&mut self) {
        self.core.browser_away()
    }

    /// The page is back after [`RealtimeSession::browser_away`] (or on a new connection that replaced
    /// its old one): the messages of every open client call and approval request, in the order
    /// they were made, which the driver sends the page first. The page may have seen some of
    /// them before it left: it must not run a handler twice for one call id (its result is
    /// accepted once, whichever connection brings it).
    pub fn browser_resumed(&mut self) -> Vec<String> {
        self.core.browser_resumed()
    }

    /// Whether a model event's text, forwarded to the page, is audio output: what a driver may
    /// drop, oldest first, for a page that reads too slowly or is away (never a call event).
    pub fn is_audio_output(&self, text: &str) -> bool {
        self.codec.is_audio_output(text)
    }

    /// Whether the browser event just read ([`RealtimeSession::on_browser_event`]) was audio input,
    /// which a driver may drop, oldest first, when more waits for the model than it holds.
    pub fn last_input_was_audio(&self) -> bool {
        self.core.last_input_audio
    }

    /// Whether the browser is still attached.
    pub fn browser_connected(&self) -> bool {
        self.core.browser_connected()
    }

    // ---- the model connection's life -------------------------------------------------------

    /// Whether the model has taken the current connection's first message and reads input:
    /// always for OpenAI, after `setupComplete` for Gemini Live. A driver holds the page's
    /// input (and the session's own messages) until then, and sends them in order.
    pub fn upstream_ready(&self) -> bool {
        self.codec.upstream_ready()
    }

    /// Whether the driver should move the session to a new model connection, and when.
    pub fn reconnect_due(&self) -> Reconnect {
        self.codec.reconnect_due()
    }

    /// Whether a model connection that ended may be replaced by a resumed one.
    pub fn can_resume(&self) -> Result<(), ResumeRefused> {
        self.codec.can_resume()
    }

    /// The session moves to a new model connection: the first message to send on it (Live:
    /// `setup` with the latest handle). Calls the resumed session will not know of are
    /// cancelled as the provider's semantics say; the page gets a `toolc.upstream` notice when
    /// [`LiveOptions::notify_page`](gemini_live::LiveOptions::notify_page) is on. Until the new
    /// connection is ready, [`RealtimeSession::upstream_ready`] is false.
    pub fn resume_setup(&mut self) -> Result<String, ResumeRefused> {
        self.codec.resume_setup(&mut self.core)
    }

    /// The conversation ends here with calls still open (a relay's drain reached its
    /// deadline): each is cancelled (its executor's signal, `toolc.cancel` to the page) and
    /// answers the model with a `server_restarting` error, so none is silently dropped.
    /// Returns how many there were.
    pub fn end_open_calls(&mut self) -> usize {
        let core = &mut self.core;
        let open = core.calls_in_order(|id, _| core.tracker.is_open(id));
        let mut ended = 0;
        for call_id in &open {
            if core.end_call(
                self.codec.as_mut(),
                call_id,
                "server_restarting",
                CallError::server_restarting,
            ) {
                ended += 1;
            }
        }
        ended
    }

    /// The new connection could not be opened or refused the handle: the conversation ends.
    /// The page gets an `error` event (`upstream_resume_failed`), every open call is cancelled
    /// (its executor's signal, `toolc.cancel` to the page) and none of them answers the model.
    pub fn resume_failed(&mut self, why: &str) {
        let core = &mut self.core;
        let open = core.calls_in_order(|id, _| core.running(id));
        self.codec.abandon(core, &open);
        Counters::bump(&core.counters_ref().failed_reconnections);
        let error = json!({
            "type": "error",
            "error": {
                "type": "relay_error",
                "code": "upstream_resume_failed",
                "message": format!("the model connection ended and the conversation could not be resumed: {why}"),
            },
        });
        core.outputs.push_back(Output::ToBrowser(error.to_string()));
        core.note(Note::ResumeFailed {
            why: why.to_owned(),
        });
    }
}
