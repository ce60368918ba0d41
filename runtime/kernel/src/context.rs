//! Who is calling, and for how long: the [`CallContext`] every executor receives.
//!
//! A relay authenticates a browser at the handshake and gets a [`Principal`] (the application's
//! own value: user id, tenant, scopes, a credential to forward to a catalog). The session that
//! follows is a [`SessionScope`]; each call made in it gets a [`CallContext`] with the session,
//! the call, the principal, the deadline, a cancellation signal and the registry's application
//! state. Executors read it instead of statics, so a support desk can limit a lookup to the
//! caller's own orders.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The authenticated caller of a session, as the application's authorizer described it.
///
/// `id` names the caller in counters and limits (sessions per principal) and in logs; the
/// optional credential is what a catalog client forwards as `Authorization: Bearer` for this
/// caller's calls (it is never printed by `Debug`); `data` is anything else the application
/// wants its executors to see.
#[derive(Clone)]
pub struct Principal {
    id: Arc<str>,
    credential: Option<Arc<str>>,
    data: Option<Arc<dyn Any + Send + Sync>>,
}

impl Principal {
    /// A caller named `id`, with no credential and no data.
    pub fn new(id: impl Into<Arc<str>>) -> Principal {
        Principal {
            id: id.into(),
            credential: None,
            data: None,
        }
    }

    /// A credential to forward on this caller's behalf (a catalog's `Authorization: Bearer`).
    pub fn with_credential(mut self, credential: impl Into<Arc<str>>) -> Principal {
        self.credential = Some(credential.into());
        self
    }

    /// Application data about the caller (tenant, scopes, a user record), read back with
    /// [`Principal::data`].
    pub fn with_data<T: Any + Send + Sync>(mut self, data: T) -> Principal {
        self.data = Some(Arc::new(data));
        self
    }

    /// The caller's id, as used in counters, limits and logs.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The credential to forward on the caller's behalf; `None` when none was given.
    pub fn credential(&self) -> Option<&str> {
        self.credential.as_deref()
    }

    /// The data given to [`Principal::with_data`], if it is a `T`.
    pub fn data<T: Any>(&self) -> Option<&T> {
        self.data.as_deref().and_then(|d| d.downcast_ref::<T>())
    }
}

impl fmt::Debug for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Principal")
            .field("id", &self.id)
            .field(
                "credential",
                &self.credential.as_ref().map(|_| "<redacted>"),
            )
            .field("data", &self.data.as_ref().map(|_| ".."))
            .finish()
    }
}

/// Application state shared by every call of a registry (a database pool, a client), set with
/// [`crate::RegistryBuilder::state`] and read with [`CallContext::state`].
#[derive(Default)]
pub(crate) struct StateMap {
    values: HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
}

impl StateMap {
    pub(crate) fn insert<T: Any + Send + Sync>(&mut self, value: T) {
        self.values.insert(TypeId::of::<T>(), Arc::new(value));
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    fn get<T: Any>(&self) -> Option<&T> {
        self.values
            .get(&TypeId::of::<T>())
            .and_then(|v| v.downcast_ref::<T>())
    }
}

impl fmt::Debug for StateMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StateMap({} values)", self.values.len())
    }
}

/// One session (a relay connection, a chat conversation, or in-process calls): its id, its
/// principal, and the cancellation signal that fires when it ends (the browser disconnects).
/// Every call made in it gets a [`CallContext`] from [`SessionScope::call`].
#[derive(Clone, Debug)]
pub struct SessionScope {
    session_id: Arc<str>,
    /// The application's id of the conversation, which may outlive this scope and process.
    conversation_id: Option<Arc<str>>,
    principal: Option<Principal>,
    cancellation: CancellationToken,
}

impl Default for SessionScope {
    fn default() -> SessionScope {
        SessionScope::new()
    }
}

impl SessionScope {
    /// A scope with a fresh id (`s1`, `s2`, … in this process) and no principal.
    pub fn new() -> SessionScope {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        SessionScope::with_id(format!("s{n}"))
    }

    /// A scope with an id of the application's choosing (a conversation id).
    pub fn with_id(session_id: impl Into<Arc<str>>) -> SessionScope {
        SessionScope {
            session_id: session_id.into(),
            conversation_id: None,
            principal: None,
            cancellation: CancellationToken::new(),
        }
    }

    /// Names the conversation this session belongs to, with an id of the application's that
    /// outlives the session and the process (a chat thread's id, a page's conversation that
    /// reconnects to another relay). A store of repeats shared by processes
    /// ([`crate::engine::DuplicateStore`]) matches a call against the earlier calls of this
    /// conversation and principal only, wherever they ran; a session without one keeps its
    /// repeats in its own process. The id must not be one another user could choose for
    /// their own conversation unless the scope has a principal (it is part of the key).
    pub fn with_conversation_id(mut self, id: impl Into<Arc<str>>) -> SessionScope {
        self.conversation_id = Some(id.into());
        self
    }

    /// The application's conversation id ([`SessionScope::with_conversation_id`]), if any.
    pub fn conversation_id(&self) -> Option<&str> {
        self.conversation_id.as_deref()
    }

    /// Sets the session's caller; `None` for an unauthenticated session.
    pub fn with_principal(mut self, principal: Option<Principal>) -> SessionScope {
        self.principal = principal;
        self
    }

    /// The session's id, shared by every call made in it.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The session's caller; `None` when the session was not authenticated.
    pub fn principal(&self) -> Option<&Principal> {
        self.principal.as_ref()
    }

    /// Fires the cancellation signal of every call of the session, running or future.
    pub fn cancel(&self) {
        self.cancellation.cancel();
    }

    /// Whether the session has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancellation.is_cancelled()
    }

    /// The context of one call in this session; its cancellation is a child of the session's.
    pub fn call(&self, tool: &str, call_id: &str) -> CallContext {
        CallContext {
            inner: Arc::new(CallInner {
                session_id: self.session_id.clone(),
                call_id: call_id.into(),
                tool: tool.into(),
                principal: self.principal.clone(),
                deadline: None,
                cancellation: self.cancellation.child_token(),
                state: None,
                progress: None,
                approval: None,
            }),
        }
    }
}

/// The user's yes to one call of a tool with `approval: required`, bound to what they were
/// shown: the tool, the call id and the arguments. Give it to the call with
/// [`CallContext::with_approval`]; the registry runs the call only when all three match and the
/// grant has not been used before (clones share that one use), so an approval can neither be
/// replayed nor stretched to other arguments.
///
/// ```
/// # use toolc_kernel::{ApprovalGrant, CallContext};
/// let arguments = serde_json::json!({ "order_number": "AB-123456", "amount": 20 });
/// // ... the user saw `arguments` and said yes ...
/// let ctx = CallContext::detached("refund_order", "call_1")
///     .with_approval(ApprovalGrant::new("refund_order", "call_1", arguments));
/// # let _ = ctx;
/// ```
#[derive(Clone)]
pub struct ApprovalGrant {
    tool: Arc<str>,
    call_id: Arc<str>,
    arguments: serde_json::Value,
    used: Arc<std::sync::atomic::AtomicBool>,
}

impl ApprovalGrant {
    /// The user approved the call `call_id` of `tool` with exactly `arguments`.
    pub fn new(tool: &str, call_id: &str, arguments: serde_json::Value) -> ApprovalGrant {
        ApprovalGrant {
            tool: tool.into(),
            call_id: call_id.into(),
            arguments,
            used: Arc::default(),
        }
    }

    /// The tool the user approved a call of.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The id of the call the user approved.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The arguments the user approved.
    pub fn arguments(&self) -> &serde_json::Value {
        &self.arguments
    }

    /// Whether a call has already run on this grant.
    pub fn is_used(&self) -> bool {
        self.used.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Takes the grant's one use; false when it was taken before.
    pub(crate) fn take(&self) -> bool {
        !self.used.swap(true, std::sync::atomic::Ordering::AcqRel)
    }
}

impl fmt::Debug for ApprovalGrant {
    // Arguments can hold personal data: a context's `Debug` (logged by executors) leaves them out.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApprovalGrant")
            .field("tool", &self.tool)
            .field("call_id", &self.call_id)
            .field("used", &self.is_used())
            .finish_non_exhaustive()
    }
}

/// How far a call has got, as an executor reports it ([`CallContext::report_progress`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Progress {
    /// Grows with every report, even when the total is unknown.
    pub progress: f64,
    /// What `progress` will reach when the work is done; `None` when unknown.
    pub total: Option<f64>,
    /// A short note for the user on what is happening now, if any.
    pub message: Option<String>,
}

/// Where a call's progress reports go (the MCP server forwards them as
/// `notifications/progress` when the client asked for them).
pub type ProgressSink = Arc<dyn Fn(Progress) + Send + Sync>;

/// What an executor knows about the call it runs: the session and call ids, the tool, the
/// authenticated principal, the deadline, a cancellation signal and the application state.
///
/// The cancellation signal fires when the call's timeout passes, when the browser of its session
/// disconnects, and when the application cancels the session; an executor that does slow work
/// selects on [`CallContext::cancelled`] to stop early. Cheap to clone.
#[derive(Clone)]
pub struct CallContext {
    // Behind one pointer: a call's future holds its context in every layer it passes through
    // (the approval question, the executor, its deadline), and a context of its own size
    // (over 250 bytes) made those futures kilobytes, copied whole whenever they moved.
    inner: Arc<CallInner>,
}

#[derive(Clone)]
struct CallInner {
    session_id: Arc<str>,
    call_id: Arc<str>,
    tool: Arc<str>,
    principal: Option<Principal>,
    deadline: Option<Instant>,
    cancellation: CancellationToken,
    state: Option<Arc<StateMap>>,
    progress: Option<ProgressSink>,
    approval: Option<ApprovalGrant>,
}

impl fmt::Debug for CallContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallContext")
            .field("session_id", &self.inner.session_id)
            .field("call_id", &self.inner.call_id)
            .field("tool", &self.inner.tool)
            .field("principal", &self.inner.principal)
            .field("deadline", &self.inner.deadline)
            .field("cancelled", &self.inner.cancellation.is_cancelled())
            .field("approval", &self.inner.approval)
            .finish_non_exhaustive()
    }
}

impl CallContext {
    /// A context for a call made outside any session (a test, a direct `Registry::call`): a
    /// fresh session scope, no principal.
    pub fn detached(tool: &str, call_id: &str) -> CallContext {
        SessionScope::new().call(tool, call_id)
    }

    /// The id of the session the call was made in.
    pub fn session_id(&self) -> &str {
        &self.inner.session_id
    }

    /// The call's id; results are matched to calls by it.
    pub fn call_id(&self) -> &str {
        &self.inner.call_id
    }

    /// The name of the tool being called.
    pub fn tool(&self) -> &str {
        &self.inner.tool
    }

    /// The caller, when the session was authenticated.
    pub fn principal(&self) -> Option<&Principal> {
        self.inner.principal.as_ref()
    }

    /// When the registry stops the call (its `timeout`), if it has one.
    pub fn deadline(&self) -> Option<Instant> {
        self.inner.deadline
    }

    /// Completes when the call is cancelled (timeout, browser gone, session cancelled).
    pub async fn cancelled(&self) {
        self.inner.cancellation.cancelled().await
    }

    /// Whether the call has been cancelled (timeout, browser gone, session cancelled).
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancellation.is_cancelled()
    }

    /// The token behind [`CallContext::cancelled`], to hand to code that takes one.
    pub fn cancellation_token(&self) -> &CancellationToken {
        &self.inner.cancellation
    }

    /// Reports how far the call has got. Where the caller asked for progress (an MCP client
    /// with a progress token) it receives it; elsewhere the report goes nowhere, so executors
    /// may report unconditionally.
    pub fn report_progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(sink) = &self.inner.progress {
            sink(Progress {
                progress,
                total,
                message: message.map(str::to_owned),
            });
        }
    }

    /// Sends this call's progress reports to `sink`.
    pub fn with_progress(mut self, sink: ProgressSink) -> CallContext {
        Arc::make_mut(&mut self.inner).progress = Some(sink);
        self
    }

    /// Carries the user's yes to this call of a tool with `approval: required`. Without one,
    /// [`crate::Registry::call_with_context`] (and every other public call method) refuses such a
    /// tool with a `not_approved` / `approval_required` error and runs nothing; with one, it
    /// runs only if the grant names this tool, this call id and the very arguments of the call,
    /// and only once.
    pub fn with_approval(mut self, approval: ApprovalGrant) -> CallContext {
        Arc::make_mut(&mut self.inner).approval = Some(approval);
        self
    }

    pub(crate) fn approval(&self) -> Option<&ApprovalGrant> {
        self.inner.approval.as_ref()
    }

    /// Application state of type `T` given to [`crate::RegistryBuilder::state`].
    pub fn state<T: Any>(&self) -> Option<&T> {
        self.inner.state.as_deref().and_then(StateMap::get::<T>)
    }

    pub(crate) fn with_deadline(mut self, deadline: Option<Instant>) -> CallContext {
        // Shared contexts (the adapter keeps one to cancel the call) are copied only on change.
        if self.inner.deadline != deadline {
            Arc::make_mut(&mut self.inner).deadline = deadline;
        }
        self
    }

    pub(crate) fn with_state(mut self, state: Option<Arc<StateMap>>) -> CallContext {
        let same = match (&self.inner.state, &state) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        };
        if !same {
            Arc::make_mut(&mut self.inner).state = state;
        }
        self
    }

    /// Fires this call's cancellation signal ([`CallContext::cancelled`]): the adapter's way to
    /// stop a call the user interrupted or the model cancelled.
    pub fn cancel(&self) {
        self.inner.cancellation.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn principal_data_and_credential_are_read_back_and_the_credential_is_not_printed() {
        let p = Principal::new("u1")
            .with_credential("secret-token")
            .with_data(42u32);
        assert_eq!(p.id(), "u1");
        assert_eq!(p.credential(), Some("secret-token"));
        assert_eq!(p.data::<u32>(), Some(&42));
        assert_eq!(p.data::<String>(), None);
        assert!(!format!("{p:?}").contains("secret-token"));
    }

    #[test]
    fn cancelling_a_session_cancels_its_calls_but_not_other_sessions() {
        let a = SessionScope::new();
        let b = SessionScope::new();
        assert_ne!(a.session_id(), b.session_id());
        let call_a = a.call("t", "c1");
        let call_b = b.call("t", "c1");
        a.cancel();
        assert!(call_a.is_cancelled());
        assert!(!call_b.is_cancelled());
        // A call's own cancellation (its timeout) leaves the session running.
        let c2 = b.call("t", "c2");
        c2.cancel();
        assert!(!b.is_cancelled() && !call_b.is_cancelled());
    }
}
