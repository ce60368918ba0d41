//! The turn runner: every call of one model turn, run concurrently, one result per call id.
//!
//! What happens to a call (toolsets, validation, repeats, approval, background, and the run
//! itself) is the call engine's ([`crate::engine`]), shared with the realtime session and the
//! MCP server; this module adds what a request/response turn needs around it: strict-mode nulls
//! mapped back to "absent", duplicate call ids run once, all calls polled together, approvals
//! handed to the application, and the results kept in the order of the calls.

use std::fmt;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::Poll;

use serde_json::Value;
use tokio::sync::{mpsc, oneshot, Notify};

use super::{CallResult, Codec, DecodeError, ToolCall};
use crate::context::SessionScope;
use crate::dispatch::{self, CallOutcome, ClientCall, ClientFailure, ClientFuture, ClientPath};
use crate::engine::{Admission, Conversation, DuplicateStore, Next, RateLimiter};
use crate::error::CallError;
use crate::executor::panic_message;
use crate::Location;
use crate::Registry;

/// Runs the tool calls of model turns against a registry and a client path.
///
/// ```no_run
/// # async fn demo(registry: std::sync::Arc<toolc_kernel::Registry>, body: serde_json::Value)
/// # -> Result<(), toolc_chat::DecodeError> {
/// use toolc_chat::{ChatCompletions, TurnRunner};
/// let runner = TurnRunner::new(registry);
/// let follow_up = runner.follow_up(&ChatCompletions, &body).await?;
/// // append the assistant message and `follow_up` to `messages`, and send the next request
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct TurnRunner {
    registry: Arc<Registry>,
    client: Arc<dyn ClientPath>,
    strip_strict_nulls: bool,
    scope: SessionScope,
    background: Arc<Background>,
    /// The call engine of the conversation: the calls later ones may repeat (the tools'
    /// `on_duplicate`), shared by the runner's clones of one scope.
    conversation: Arc<Mutex<Conversation>>,
    /// The tools the conversation offers, when it chose toolsets.
    selection: Option<crate::ToolSelection>,
    /// Counts the calls of tools with a `rate_limit`; `None`: the process's in-memory one.
    limiter: Option<Arc<dyn RateLimiter>>,
    /// Keeps first calls for repeats in other processes, when the scope names its
    /// conversation; `None`: in this conversation only.
    duplicates: Option<Arc<dyn DuplicateStore>>,
}

/// Results of background (`mode: async`) calls that finished and were not taken yet.
#[derive(Debug, Default)]
struct Background {
    done: Mutex<Vec<BackgroundResult>>,
    arrived: Notify,
}

/// The result of a background call's work, for the application to add to the conversation
/// (the call itself was answered "started" in its turn; a call id takes one result only).
#[derive(Clone, Debug, PartialEq)]
pub struct BackgroundResult {
    /// The background call, as the model made it.
    pub call: ToolCall,
    /// The work's result: the tool's output, or the error.
    pub result: CallResult,
}

impl BackgroundResult {
    /// The result as a sentence for a user or system message of the next request.
    pub fn message_text(&self) -> String {
        let what = if self.result.is_error() {
            "failed"
        } else {
            "finished"
        };
        format!(
            "The background call of `{}` (call_id {}) {what}. Its result: {}",
            self.call.name, self.call.call_id, self.result.output
        )
    }
}

/// A call of a tool with `approval: required`, held until the application has the user's
/// answer. It holds the validated arguments; the answer ([`PendingApproval::approve`],
/// [`PendingApproval::deny`]) consumes it, so it decides this call with these arguments once.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingApproval {
    call: ToolCall,
    /// The engine's decision on the call as routed (strict-mode nulls removed).
    admission: Admission,
}

impl PendingApproval {
    /// The call as the model made it.
    pub fn call(&self) -> &ToolCall {
        &self.call
    }

    /// The validated arguments, to show the user.
    pub fn arguments(&self) -> &Value {
        // A call waits for approval only once its arguments were valid.
        const NONE: &Value = &Value::Null;
        self.admission.arguments().unwrap_or(NONE)
    }

    /// Where the tool runs, to show the user.
    pub fn location(&self) -> Location {
        self.admission.location()
    }

    /// The user said yes: the call runs when resolved.
    pub fn approve(self) -> Resolution {
        Resolution {
            pending: self,
            approved: true,
            reason: None,
        }
    }

    /// The user said no (with their reason, which the model reads).
    pub fn deny(self, reason: Option<String>) -> Resolution {
        Resolution {
            pending: self,
            approved: false,
            reason,
        }
    }
}

/// A [`PendingApproval`] with the user's answer, for [`TurnRunner::resolve`].
#[derive(Debug, Clone, PartialEq)]
pub struct Resolution {
    pending: PendingApproval,
    approved: bool,
    reason: Option<String>,
}

impl fmt::Debug for TurnRunner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TurnRunner")
            .field("registry", &self.registry)
            .field("strip_strict_nulls", &self.strip_strict_nulls)
            .field("session", &self.scope.session_id())
            .finish_non_exhaustive()
    }
}

/// The results of one turn.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TurnOutcome {
    /// Exactly one result per distinct call id, in the order the calls were made (a repeated id
    /// keeps the position of its first occurrence).
    pub results: Vec<CallResult>,
    /// Calls whose id repeated an earlier call's id in the same turn. They were not run and get
    /// no result of their own: every provider requires exactly one result per id, and the one
    /// result sent is that of the first call with the id.
    pub duplicates: Vec<ToolCall>,
    /// Calls of tools with `approval: required` that wait for the user: not run, and not in
    /// `results`. Ask the user, [`TurnRunner::resolve`] them, and give their results to
    /// [`TurnOutcome::complete`]; until then [`TurnOutcome::encode`] refuses the outcome.
    pub pending: Vec<PendingApproval>,
    /// The distinct call ids in the order the model made the calls.
    order: Vec<String>,
}

/// A turn that still has calls waiting for approval: every provider refuses a request with a
/// tool call and no result for it, so [`TurnOutcome::encode`] will not write one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Incomplete {
    /// The ids of the calls still waiting.
    pub pending: Vec<String>,
}

impl fmt::Display for Incomplete {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} call(s) of this turn wait for approval ({}): resolve them with TurnRunner::resolve and add the results with TurnOutcome::complete before encoding (a provider refuses a tool call without its result)",
            self.pending.len(),
            self.pending.join(", ")
        )
    }
}

impl std::error::Error for Incomplete {}

impl TurnOutcome {
    /// The follow-up messages (or Responses input items) for the next request: one result per
    /// call, in the order the model made them. Refused while a call of the turn has no result
    /// (it waits for approval, or was resolved but not [`complete`](TurnOutcome::complete)d
    /// in).
    pub fn encode(&self, codec: &dyn Codec) -> Result<Vec<Value>, Incomplete> {
        let missing: Vec<String> = self
            .order
            .iter()
            .filter(|id| !self.results.iter().any(|r| &r.call.call_id == *id))
            .cloned()
            .collect();
        if !missing.is_empty() {
            return Err(Incomplete { pending: missing });
        }
        Ok(codec.encode(&self.results))
    }

    /// Adds the results of resolved approvals ([`TurnRunner::resolve`]): each joins `results`
    /// (and leaves `pending`, if it is still there), and `results` go back into the order of
    /// the calls. A result for a call this turn did not make, or that has a result already,
    /// is ignored.
    pub fn complete(&mut self, resolved: Vec<CallResult>) {
        for result in resolved {
            let id = &result.call.call_id;
            let ours = self.order.iter().any(|o| o == id);
            if !ours || self.results.iter().any(|r| &r.call.call_id == id) {
                continue;
            }
            self.pending.retain(|p| &p.call.call_id != id);
            self.results.push(result);
        }
        let order = &self.order;
        let position = |id: &str| order.iter().position(|o| o == id);
        self.results.sort_by_key(|r| position(&r.call.call_id));
    }
}

impl TurnRunner {
    /// A runner without a client: client tools fail as "disconnected" (a readable result).
    pub fn new(registry: Arc<Registry>) -> TurnRunner {
        TurnRunner {
            registry: registry.clone(),
            client: Arc::new(dispatch::NoClient),
            strip_strict_nulls: true,
            scope: SessionScope::new(),
            background: Arc::default(),
            conversation: Arc::new(Mutex::new(Conversation::new(registry.clone()))),
            selection: None,
            limiter: None,
            duplicates: None,
        }
    }

    /// Counts the calls of tools with a `rate_limit` with `limiter` instead of the process's
    /// in-memory one: a limiter over a shared store (`RedisLimiter`, feature `redis`) holds
    /// the counts of a fleet of servers. Starts a new conversation, as
    /// [`TurnRunner::with_scope`] does; the order of the two does not matter.
    pub fn with_limiter(mut self, limiter: Arc<dyn RateLimiter>) -> TurnRunner {
        self.limiter = Some(limiter);
        self.conversation = Arc::new(Mutex::new(self.new_conversation()));
        self
    }

    /// Keeps the first calls of the conversation in `store` (`RedisDuplicates`, feature
    /// `redis`), shared by a fleet of servers: when the scope names the conversation
    /// ([`SessionScope::with_conversation_id`]), a repeat of a call that another runner made
    /// in it, in this process or another, is answered as the tool's `on_duplicate` says (the
    /// first call's result, or a refusal), within the tool's `duplicate_window`. For servers
    /// that build a runner per request. Starts a new conversation, as
    /// [`TurnRunner::with_scope`] does; the order of the two does not matter.
    pub fn with_duplicate_store(mut self, store: Arc<dyn DuplicateStore>) -> TurnRunner {
        self.duplicates = Some(store);
        self.conversation = Arc::new(Mutex::new(self.new_conversation()));
        self
    }

    /// A conversation of this runner's scope, limiter and duplicate store that has seen no call.
    fn new_conversation(&self) -> Conversation {
        let principal = self.scope.principal().map(|p| p.id().to_owned());
        let mut conversation = Conversation::new(self.registry.clone())
            .with_principal(principal)
            .with_duplicate_store(self.duplicates.clone());
        conversation.set_conversation_id(self.scope.conversation_id().map(str::to_owned));
        match &self.limiter {
            Some(limiter) => conversation.with_limiter(limiter.clone()),
            None => conversation,
        }
    }

    /// Offers only the tools in no toolset and those of `toolsets` (the manifest's
    /// `toolsets`): a call of another tool is refused as an unknown tool. Declare the same
    /// choice to the model with [`crate::ToolSelection::declarations`] of [`TurnRunner::selection`]
    /// over the compiled provider file. Call it again to switch toolsets between turns.
    pub fn with_toolsets<S: AsRef<str>>(
        mut self,
        toolsets: &[S],
    ) -> Result<TurnRunner, crate::UnknownToolset> {
        self.selection = Some(self.registry.selection(toolsets)?);
        Ok(self)
    }

    /// The tools offered, when toolsets were chosen ([`TurnRunner::with_toolsets`]).
    pub fn selection(&self) -> Option<&crate::ToolSelection> {
        self.selection.as_ref()
    }

    fn conversation(&self) -> std::sync::MutexGuard<'_, Conversation> {
        // Nothing panics while holding it; recover rather than spread a poison.
        self.conversation.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The conversation these turns belong to: its id and authenticated principal reach every
    /// executor's [`crate::CallContext`], and cancelling it ([`SessionScope::cancel`]) fires the
    /// cancellation signal of its running calls. A runner is cheap to clone: give each
    /// conversation (or request) its own scope.
    pub fn with_scope(mut self, scope: SessionScope) -> TurnRunner {
        // Another conversation: its calls are nobody else's repeats; its principal's calls
        // count together against `per principal` rate limits, across conversations.
        self.scope = scope;
        self.conversation = Arc::new(Mutex::new(self.new_conversation()));
        self
    }

    /// The conversation these turns belong to.
    pub fn scope(&self) -> &SessionScope {
        &self.scope
    }

    /// Where client tools go (see [`client_fn`] and [`ChannelClient`]).
    pub fn with_client(mut self, client: Arc<dyn ClientPath>) -> TurnRunner {
        self.client = client;
        self
    }

    /// Whether to map `null` back to "absent" for optional properties whose schema does not
    /// accept `null` (on by default). OpenAI strict mode makes every property required and the
    /// optional ones nullable, so the model sends `null` for what it meant to omit; the executor
    /// and the client must see the argument object the manifest describes.
    pub fn strip_strict_nulls(mut self, on: bool) -> TurnRunner {
        self.strip_strict_nulls = on;
        self
    }

    /// The registry the calls run against.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// Decodes a complete response, runs its calls and returns the follow-up messages.
    /// No tool calls → an empty list (the model has finished its answer).
    ///
    /// This has no way to ask the user, so calls that need approval are refused (the model
    /// reads that approval could not be asked for); use [`TurnRunner::run`] and
    /// [`TurnRunner::resolve`] to ask.
    pub async fn follow_up(
        &self,
        codec: &dyn Codec,
        response: &Value,
    ) -> Result<Vec<Value>, DecodeError> {
        let calls = codec.decode(response)?;
        let mut outcome = self.run(&calls).await;
        for pending in std::mem::take(&mut outcome.pending) {
            let error = CallError::approval_unavailable(
                &pending.call.name,
                "follow_up cannot ask the user; use TurnRunner::run and resolve",
            );
            let refused = CallOutcome::failed(&pending.call.call_id, error);
            // Not run: a repeat is not held back by it.
            self.conversation()
                .finished(&pending.admission.call().call_id, &refused);
            outcome
                .results
                .push(CallResult::new(pending.call.clone(), refused));
        }
        // Back in the order of the calls.
        let position = |id: &str| calls.iter().position(|c| c.call_id == id);
        outcome.results.sort_by_key(|r| position(&r.call.call_id));
        Ok(codec.encode(&outcome.results))
    }

    /// Runs the calls the user decided on: approved ones now (concurrently), denied ones become
    /// results that say so. One result per resolution, in the order given.
    pub async fn resolve(&self, resolutions: Vec<Resolution>) -> Vec<CallResult> {
        let futures: Vec<Pin<Box<dyn Future<Output = CallOutcome> + Send + '_>>> = resolutions
            .iter()
            .map(|r| {
                let admission = &r.pending.admission;
                if !r.approved {
                    let declined = admission.declined(r.reason.as_deref());
                    return Box::pin(std::future::ready(declined)) as Pin<Box<_>>;
                }
                self.start(&r.pending.call, admission.clone().approved())
            })
            .collect();
        let outcomes = join_all(futures).await;
        resolutions
            .into_iter()
            .zip(outcomes)
            .map(|(r, outcome)| {
                let call = r.pending.call;
                let outcome = outcome.unwrap_or_else(|panic| {
                    let error =
                        CallError::panic(&call.name, format!("the client path panicked: {panic}"));
                    CallOutcome::failed(&call.call_id, error)
                });
                // Run or declined, it is over: a repeat gets this result, or (declined) runs
                // and asks again.
                self.conversation()
                    .finished(&r.pending.admission.call().call_id, &outcome);
                CallResult::new(call, outcome)
            })
            .collect()
    }

    /// The future of an admitted call's one outcome: a background call starts on a Tokio task
    /// and answers "started" at once; any other runs (or is answered) when polled.
    fn start(
        &self,
        call: &ToolCall,
        admission: Admission,
    ) -> Pin<Box<dyn Future<Output = CallOutcome> + Send + '_>> {
        if admission.runs_in_background() {
            return Box::pin(std::future::ready(
                self.start_background(call.clone(), admission),
            ));
        }
        let routed = admission.call();
        let ctx = self.scope.call(&routed.name, &routed.call_id);
        Box::pin(admission.run(&self.registry, ctx, self.client.as_ref()))
    }

    /// Starts a background call's work on a Tokio task and answers "started"; the work's result
    /// is kept for [`TurnRunner::background_results`].
    fn start_background(&self, call: ToolCall, admission: Admission) -> CallOutcome {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return CallOutcome::failed(&call.call_id, CallError::no_runtime(&call.name));
        };
        let registry = self.registry.clone();
        let client = self.client.clone();
        let background = self.background.clone();
        let ctx = self.scope.call(&call.name, &call.call_id);
        let started = CallOutcome::started(&call.call_id, &call.name);
        // The work's span nests in the turn's, though it outlives the turn.
        let span = tracing::Span::current();
        let task = async move {
            let outcome = admission
                .run_in_background(&registry, ctx, client.as_ref())
                .await;
            let result = CallResult::new(call.clone(), outcome);
            if let Ok(mut done) = background.done.lock() {
                done.push(BackgroundResult { call, result });
            }
            background.arrived.notify_waiters();
        };
        handle.spawn(tracing::Instrument::instrument(task, span));
        started
    }

    /// The background calls that finished since the last time, in the order they finished:
    /// add each to the conversation (e.g. as [`BackgroundResult::message_text`]) before the next
    /// request.
    pub fn background_results(&self) -> Vec<BackgroundResult> {
        self.background
            .done
            .lock()
            .map(|mut done| std::mem::take(&mut *done))
            .unwrap_or_default()
    }

    /// Waits until at least one background call has finished, and takes what finished.
    pub async fn next_background_results(&self) -> Vec<BackgroundResult> {
        loop {
            let arrived = self.background.arrived.notified();
            let done = self.background_results();
            if !done.is_empty() {
                return done;
            }
            arrived.await;
        }
    }

    /// Runs every call concurrently and returns one result per distinct call id, in call order.
    /// Never panics: every failure, including a panicking client path, is a result.
    pub async fn run(&self, calls: &[ToolCall]) -> TurnOutcome {
        // The turn's calls' spans nest in one `toolc.turn` span (see `crate::telemetry`).
        let span = crate::telemetry::turn_span(self.scope.session_id(), calls.len());
        tracing::Instrument::instrument(self.run_in_turn(calls), span).await
    }

    async fn run_in_turn(&self, calls: &[ToolCall]) -> TurnOutcome {
        let mut unique: Vec<&ToolCall> = Vec::with_capacity(calls.len());
        let mut duplicates = Vec::new();
        {
            let mut seen = std::collections::HashSet::with_capacity(calls.len());
            for call in calls {
                if seen.insert(call.call_id.as_str()) {
                    unique.push(call);
                } else {
                    duplicates.push(call.clone());
                }
            }
        }
        let order: Vec<String> = unique.iter().map(|c| c.call_id.clone()).collect();
        // Every rule is the engine's (toolsets, validation, repeats, approval, background).
        // Calls that need approval wait for the application; the others run now.
        let admitted: Vec<(&ToolCall, Admission)> = {
            let mut conversation = self.conversation();
            conversation.set_selection(self.selection.clone());
            unique
                .into_iter()
                .map(|call| (call, conversation.admit(self.prepare(call))))
                .collect()
        };
        // Over a rate limit that a shared store is counting, nobody is asked: those checks end
        // first (together); a refused call then runs to its refusal like any other.
        let checked: Vec<Admission> = admitted
            .iter()
            .filter(|(_, a)| a.needs_approval() && a.limit_pending())
            .map(|(_, a)| a.clone())
            .collect();
        if !checked.is_empty() {
            let checks = checked
                .iter()
                .map(|a| Box::pin(a.check_limit()) as Pin<Box<dyn Future<Output = _> + Send>>)
                .collect();
            join_all(checks).await;
        }
        let mut pending = Vec::new();
        let mut runnable = Vec::with_capacity(admitted.len());
        for (call, admission) in admitted {
            // Immediate: a check still under way ended above.
            if admission.needs_approval() && admission.check_limit().await.is_ok() {
                pending.push(PendingApproval {
                    call: call.clone(),
                    admission,
                });
            } else {
                runnable.push((call, admission));
            }
        }
        let futures: Vec<Pin<Box<dyn Future<Output = CallOutcome> + Send + '_>>> = runnable
            .iter()
            .map(|(call, admission)| self.start(call, admission.clone()))
            .collect();
        let outcomes = join_all(futures).await;
        let mut results: Vec<CallResult> = runnable
            .iter()
            .zip(outcomes)
            .map(|((call, _), outcome)| {
                let outcome = outcome.unwrap_or_else(|panic| {
                    let error =
                        CallError::panic(&call.name, format!("the client path panicked: {panic}"));
                    CallOutcome::failed(&call.call_id, error)
                });
                CallResult::new((*call).clone(), outcome)
            })
            .collect();
        // What ran is what later repeats get; a repeat of a call of this same turn that waited
        // for it gets its result now.
        let mut answers = std::collections::HashMap::new();
        let mut conversation = self.conversation();
        for (result, (_, admission)) in results.iter().zip(&runnable) {
            if let Next::Run { .. } = admission.next() {
                let outcome = CallOutcome {
                    call_id: admission.call().call_id.clone(),
                    output: result.output.clone(),
                    status: result.status.clone(),
                };
                for theirs in conversation.finished(&outcome.call_id, &outcome) {
                    answers.insert(theirs.call_id.clone(), theirs);
                }
            }
        }
        drop(conversation);
        for result in &mut results {
            if let Some(theirs) = answers.remove(&result.call.call_id) {
                result.output = theirs.output;
                result.status = theirs.status;
            }
        }
        TurnOutcome {
            results,
            duplicates,
            pending,
            order,
        }
    }

    /// The call as the dispatcher should see it: strict-mode nulls removed.
    fn prepare(&self, call: &ToolCall) -> ToolCall {
        let mut routed = call.clone();
        // Only arguments that contain a `null` can change, and most do not: skip the re-parse.
        if !self.strip_strict_nulls || !call.arguments.contains("null") {
            return routed;
        }
        let Some(def) = self.registry.definition(&call.name) else {
            return routed;
        };
        // Text that is not JSON is left alone: the dispatcher reports it to the model.
        if let Ok(mut args) = serde_json::from_str::<Value>(&call.arguments) {
            toolc_core::strict::strip_strict_nulls(&def.parameters, &mut args);
            routed.arguments = args.to_string();
        }
        routed
    }
}

type Guarded<T> = Result<T, String>;

/// Polls every future in the same task until all are done; a panic inside one poll ends that
/// future with `Err(message)` and leaves the others running.
async fn join_all<'a, T>(
    futures: Vec<Pin<Box<dyn Future<Output = T> + Send + 'a>>>,
) -> Vec<Guarded<T>> {
    let mut slots: Vec<Option<Pin<Box<dyn Future<Output = T> + Send + 'a>>>> =
        futures.into_iter().map(Some).collect();
    let mut done: Vec<Option<Guarded<T>>> = (0..slots.len()).map(|_| None).collect();
    let mut open = slots.len();
    std::future::poll_fn(move |cx| {
        for (slot, out) in slots.iter_mut().zip(done.iter_mut()) {
            let Some(fut) = slot else { continue };
            let polled = catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(cx)));
            let finished = match polled {
                Ok(Poll::Pending) => continue,
                Ok(Poll::Ready(value)) => Ok(value),
                Err(payload) => Err(panic_message(payload.as_ref())),
            };
            *out = Some(finished);
            *slot = None;
            open -= 1;
        }
        if open == 0 {
            Poll::Ready(done.iter_mut().filter_map(Option::take).collect())
        } else {
            Poll::Pending
        }
    })
    .await
}

/// A client path over an async callback: `client_fn(|call| async move { Ok(output_json) })`.
///
/// A fire-and-forget call runs the callback on a spawned Tokio task (so the turn does not wait
/// for it); outside a Tokio runtime it fails as disconnected.
pub fn client_fn<F, Fut>(f: F) -> ClientFn<F>
where
    F: Fn(ClientCall) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<String, ClientFailure>> + Send + 'static,
{
    ClientFn(f)
}

/// The client path that [`client_fn`] returns.
pub struct ClientFn<F>(F);

impl<F> fmt::Debug for ClientFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ClientFn")
    }
}

impl<F, Fut> ClientPath for ClientFn<F>
where
    F: Fn(ClientCall) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<String, ClientFailure>> + Send + 'static,
{
    fn call(&self, call: ClientCall) -> ClientFuture {
        Box::pin((self.0)(call))
    }

    fn notify(&self, call: ClientCall) -> Result<(), ClientFailure> {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return Err(ClientFailure::Disconnected);
        };
        let fut = (self.0)(call);
        handle.spawn(async move {
            // Nobody waits for a fire-and-forget reply; whatever it is, it is dropped.
            let _ = fut.await;
        });
        Ok(())
    }
}

/// One client call delivered through a [`ChannelClient`]: answer it by sending the output
/// (JSON text) on `reply`; dropping `reply` fails the call as disconnected. `reply` is `None` for
/// fire-and-forget calls.
#[derive(Debug)]
pub struct ClientRequest {
    /// The validated call.
    pub call: ClientCall,
    /// Where the output goes; `None` for a fire-and-forget call.
    pub reply: Option<oneshot::Sender<String>>,
}

/// A client path over a bounded Tokio channel: the application (for example the task that owns
/// a browser connection) receives [`ClientRequest`]s and answers them.
#[derive(Clone, Debug)]
pub struct ChannelClient {
    tx: mpsc::Sender<ClientRequest>,
}

impl ChannelClient {
    /// A client path and the receiving end; at most `capacity` calls wait in the channel.
    pub fn new(capacity: usize) -> (ChannelClient, mpsc::Receiver<ClientRequest>) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        (ChannelClient { tx }, rx)
    }

    fn send(&self, request: ClientRequest) -> Result<(), ClientFailure> {
        self.tx.try_send(request).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => {
                ClientFailure::Rejected("too many client calls are waiting".into())
            }
            mpsc::error::TrySendError::Closed(_) => ClientFailure::Disconnected,
        })
    }
}

impl ClientPath for ChannelClient {
    fn call(&self, call: ClientCall) -> ClientFuture {
        let (reply, answer) = oneshot::channel();
        let sent = self.send(ClientRequest {
            call,
            reply: Some(reply),
        });
        Box::pin(async move {
            sent?;
            answer.await.map_err(|_| ClientFailure::Disconnected)
        })
    }

    fn notify(&self, call: ClientCall) -> Result<(), ClientFailure> {
        self.send(ClientRequest { call, reply: None })
    }
}
