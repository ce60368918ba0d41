//! A [`Registry`] served as an MCP server, on the official SDK (`rmcp`): over stdio
//! ([`McpServer::serve_stdio`]) and over streamable HTTP ([`McpServer::streamable_http`], a
//! tower service to mount in an axum app next to the relay).
//!
//! What an MCP host sees follows the location rule: `tools/list` has the **server** tools only
//! (a client tool runs in a browser the host does not have), with `inputSchema`, and
//! `outputSchema` where `returns` is an object schema. A call runs exactly as every other path
//! runs it: arguments validated before the executor, the result checked against `returns`;
//! a failure the model can act on (bad arguments, a tool error, a timeout) is an `isError`
//! result with the same JSON error text the realtime and chat paths send, while a name that is
//! not a server tool is a protocol error (`-32602`), as the specification asks. The MCP
//! request's cancellation reaches the executor's [`CallContext`], and over HTTP the caller's
//! identity does too ([`McpServer::with_principal`]).

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::ErrorData;
use serde_json::Value;

use super::approval::{self, Pending, Unbound, Waiting, DEFAULT_APPROVAL_TIMEOUT};
use super::logging::{LevelSetting, Route};
use super::tasks::Tasks;
use super::McpError;
use crate::dispatch::{CallOutcome, ToolCall};
use crate::engine::{Admission, Conversation, DuplicateStore, Next, RateLimiter};
use crate::{Location, Principal, Registry, SessionScope, ToolDefinition};

/// Maps an HTTP request (its method, URI and headers, as the streamable HTTP transport saw them)
/// to the caller an executor sees; `None` leaves the call without a principal. Authentication
/// itself belongs in front of the service (an axum middleware that rejects the request); this
/// only says who passed it.
pub type PrincipalFn = dyn Fn(&http::request::Parts) -> Option<Principal> + Send + Sync;

/// Maps an HTTP request to the application's id of the conversation it belongs to (a header the
/// host sends, say), under which a [`DuplicateStore`] shared by a fleet matches its calls
/// against the same principal's calls of that conversation on any server; `None`: the MCP
/// session's own calls only.
pub type ConversationFn = dyn Fn(&http::request::Parts) -> Option<String> + Send + Sync;

/// A registry's server tools as an MCP server. Cheap to clone (one per HTTP session).
#[derive(Clone)]
pub struct McpServer {
    registry: Arc<Registry>,
    tools: Arc<Vec<Tool>>,
    info: Implementation,
    principal: Option<Arc<PrincipalFn>>,
    /// This MCP session's call engine (the calls later ones may repeat, the tools'
    /// `on_duplicate`) and the repeats waiting on a first call that is still running.
    calls: Arc<std::sync::Mutex<Calls>>,
    /// How long a client may keep `tools/list` (`ttlMs`), and who may share it (`cacheScope`).
    list_cache: ListCache,
    /// This MCP session's tasks (`mode: async` tools, for clients with the tasks extension).
    tasks: Arc<Tasks>,
    /// The level this MCP session's client asked for with `logging/setLevel`.
    log_level: LevelSetting,
    /// The calls that asked for approval over MRTR and wait for the client's retry (shared by
    /// every session: a 2026-07-28 client may come back on another).
    approvals: Arc<Pending>,
    /// Counts the calls of tools with a `rate_limit`; `None`: the process's in-memory one.
    limiter: Option<Arc<dyn RateLimiter>>,
    /// Over HTTP: where first calls are shared with other servers, and which conversation a
    /// request belongs to; `None`: repeats are the MCP session's own.
    duplicates: Option<(Arc<dyn DuplicateStore>, Arc<ConversationFn>)>,
    /// How long a call waits for the user's answer.
    approval_timeout: std::time::Duration,
    /// Over HTTP, with `oauth`: the resource server that checks every request's token.
    #[cfg(feature = "oauth")]
    auth: Option<Arc<crate::oauth::ResourceServer>>,
}

/// One MCP session's call engine, and where the repeats that wait for a running first call
/// get their answer.
pub(crate) struct Calls {
    conversation: Conversation,
    waiting: std::collections::HashMap<String, tokio::sync::oneshot::Sender<CallOutcome>>,
}

/// `call_id` of the session whose calls are `calls` ended: later repeats get its outcome, and
/// those waiting for it get it now.
pub(crate) fn finish(calls: &std::sync::Mutex<Calls>, call_id: &str, outcome: &CallOutcome) {
    // Nothing panics while holding it; recover rather than spread a poison.
    let mut calls = calls.lock().unwrap_or_else(|e| e.into_inner());
    for theirs in calls.conversation.finished(call_id, outcome) {
        if let Some(tx) = calls.waiting.remove(&theirs.call_id) {
            let _ = tx.send(theirs);
        }
    }
}

impl Calls {
    fn new(
        registry: &Arc<Registry>,
        limiter: Option<&Arc<dyn RateLimiter>>,
        duplicates: Option<&Arc<dyn DuplicateStore>>,
    ) -> Arc<std::sync::Mutex<Calls>> {
        let mut conversation =
            Conversation::new(registry.clone()).with_duplicate_store(duplicates.cloned());
        if let Some(limiter) = limiter {
            conversation = conversation.with_limiter(limiter.clone());
        }
        Arc::new(std::sync::Mutex::new(Calls {
            conversation,
            waiting: Default::default(),
        }))
    }
}

/// The cache hints of `tools/list` (MCP 2026-07-28: `ttlMs`, `cacheScope`). A registry's tools
/// do not change while it is served, so a client may keep the list for a while: the
/// manifest's `mcp.list_ttl` ([`crate::Registry::mcp_list_ttl`]), else 5 minutes, long enough
/// to spare a host a request per turn, short enough to see a redeployed server's tools soon.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListCache {
    /// How long the list may be treated as fresh (`ttlMs`; `0`: re-fetch every time).
    pub ttl: std::time::Duration,
    /// Whether any cache may keep and share the list (`public`: it holds nothing of the user)
    /// or only the requesting user's client (`private`).
    pub shared: bool,
}

/// [`ListCache`]'s default time to live.
pub const DEFAULT_LIST_TTL: std::time::Duration = std::time::Duration::from_secs(300);

impl Default for ListCache {
    fn default() -> ListCache {
        ListCache {
            ttl: DEFAULT_LIST_TTL,
            shared: true,
        }
    }
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("tools", &self.tools.len())
            .field("name", &self.info.name)
            .finish_non_exhaustive()
    }
}

impl McpServer {
    /// Serves the server tools of `registry`, as the implementation `toolc` with this crate's
    /// version until [`McpServer::with_implementation`] names it.
    pub fn new(registry: Arc<Registry>) -> McpServer {
        // A tool that needs the user's approval is offered too: each call asks the user through
        // the client's elicitation (see `approval`).
        let tools = registry
            .definitions()
            .filter(|d| d.location == Location::Server)
            .map(mcp_tool)
            .collect();
        let list_cache = ListCache {
            ttl: registry.mcp_list_ttl().unwrap_or(DEFAULT_LIST_TTL),
            ..ListCache::default()
        };
        let calls = Calls::new(&registry, None, None);
        McpServer {
            registry,
            tools: Arc::new(tools),
            info: Implementation::new("toolc", env!("CARGO_PKG_VERSION")),
            principal: None,
            calls,
            list_cache,
            tasks: Arc::default(),
            log_level: Arc::default(),
            approvals: Arc::default(),
            approval_timeout: DEFAULT_APPROVAL_TIMEOUT,
            limiter: None,
            duplicates: None,
            #[cfg(feature = "oauth")]
            auth: None,
        }
    }

    /// Counts the calls of tools with a `rate_limit` with `limiter` instead of the process's
    /// in-memory one: a limiter over a shared store (`RedisLimiter`, feature `redis`) holds
    /// the counts of a fleet of servers. A `per principal` limit counts the calls of the
    /// request's principal ([`McpServer::with_principal`], or the token's subject with OAuth).
    pub fn with_limiter(mut self, limiter: Arc<dyn RateLimiter>) -> McpServer {
        self.limiter = Some(limiter);
        self.calls = self.new_calls();
        self
    }

    /// Over HTTP ([`McpServer::streamable_http`]): keeps first calls in `store`
    /// (`RedisDuplicates`, feature `redis`), shared by a fleet of servers, for the requests
    /// `conversation` names a conversation of (see [`ConversationFn`]): a repeat of a call the
    /// same principal made in that conversation, on any server and in any MCP session, is
    /// answered as the tool's `on_duplicate` says. Name only conversations of an authenticated
    /// principal ([`McpServer::with_principal`], OAuth), or ids no other user can choose.
    pub fn with_duplicate_store(
        mut self,
        store: Arc<dyn DuplicateStore>,
        conversation: impl Fn(&http::request::Parts) -> Option<String> + Send + Sync + 'static,
    ) -> McpServer {
        self.duplicates = Some((store, Arc::new(conversation)));
        self.calls = self.new_calls();
        self
    }

    /// A call engine for a new MCP session, with this server's limiter and duplicate store.
    fn new_calls(&self) -> Arc<std::sync::Mutex<Calls>> {
        let store = self.duplicates.as_ref().map(|(store, _)| store);
        Calls::new(&self.registry, self.limiter.as_ref(), store)
    }

    /// Over HTTP ([`McpServer::streamable_http`]), act as an OAuth 2.1 resource server: every
    /// request needs an access token `auth` accepts, and the token's subject is the calls'
    /// principal (unless [`McpServer::with_principal`] says otherwise). See [`crate::oauth`].
    ///
    /// The scopes each registry tool declares (the manifest's `scopes`) are added here to those
    /// `auth` requires for its calls ([`crate::oauth::ResourceServer::tool_scopes`]), so a
    /// manifest's requirements hold without repeating them in code; serve the metadata of
    /// [`McpServer::oauth_metadata_service`], which lists them, rather than `auth`'s own.
    #[cfg(feature = "oauth")]
    pub fn with_oauth(mut self, auth: crate::oauth::ResourceServer) -> McpServer {
        let served = self
            .registry
            .definitions()
            .filter(|d| d.location == Location::Server);
        let auth = auth.declared_scopes(served);
        self.auth = Some(Arc::new(auth));
        self
    }

    /// The protected resource metadata service (RFC 9728) of the resource server given to
    /// [`McpServer::with_oauth`], with the registry's declared scopes in `scopes_supported`;
    /// mount it at [`crate::oauth::ResourceServer::metadata_path`]. `None` without OAuth.
    #[cfg(feature = "oauth")]
    pub fn oauth_metadata_service(&self) -> Option<crate::oauth::MetadataService> {
        self.auth
            .as_deref()
            .map(crate::oauth::ResourceServer::metadata_service)
    }

    /// How long a call of an `approval: required` tool waits for the user's answer before it
    /// ends as `approval_timeout` (default [`DEFAULT_APPROVAL_TIMEOUT`]).
    pub fn with_approval_timeout(mut self, timeout: std::time::Duration) -> McpServer {
        self.approval_timeout = timeout;
        self
    }

    /// The cache hints `tools/list` answers with (see [`ListCache`]).
    pub fn with_list_cache(mut self, list_cache: ListCache) -> McpServer {
        self.list_cache = list_cache;
        self
    }

    /// A copy for one MCP session: the same tools, and no calls seen yet (a repeat is only ever
    /// matched against the same client's calls).
    fn for_new_session(&self) -> McpServer {
        McpServer {
            calls: self.new_calls(),
            tasks: Arc::default(),
            log_level: Arc::default(),
            ..self.clone()
        }
    }

    fn calls(&self) -> std::sync::MutexGuard<'_, Calls> {
        // Nothing panics while holding it; recover rather than spread a poison.
        self.calls.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The engine's decision on a call, and for a repeat of a call still running the channel
    /// its answer comes on (registered under the same lock, so the first's end cannot be
    /// missed).
    ///
    /// `principal` is the caller of this request: its calls count together against `per
    /// principal` rate limits, across sessions (over HTTP, each request says who sends it).
    fn admit(
        &self,
        call: ToolCall,
        principal: Option<&Principal>,
        conversation: Option<String>,
    ) -> (
        Admission,
        Option<tokio::sync::oneshot::Receiver<CallOutcome>>,
    ) {
        let mut calls = self.calls();
        // `per principal` rate limits count the calls of this request's caller, and a shared
        // duplicate store matches them against the conversation this request names.
        let principal = principal.map(|p| p.id().to_owned());
        calls.conversation.set_principal(principal);
        calls.conversation.set_conversation_id(conversation);
        let admission = calls.conversation.admit(call);
        let waits = matches!(admission.next(), Next::Wait { .. }).then(|| {
            let (tx, rx) = tokio::sync::oneshot::channel();
            calls.waiting.insert(admission.call().call_id.clone(), tx);
            rx
        });
        (admission, waits)
    }

    /// `call_id` ended: later repeats get its outcome, and those waiting for it get it now.
    fn finished(&self, call_id: &str, outcome: &CallOutcome) {
        finish(&self.calls, call_id, outcome);
    }

    /// Who the caller of this request is, over HTTP: as [`McpServer::with_principal`] says,
    /// else the subject of the request's access token (with `oauth`).
    fn principal_of(&self, context: &RequestContext<RoleServer>) -> Option<Principal> {
        let parts = context.extensions.get::<http::request::Parts>()?;
        match &self.principal {
            Some(map) => map(parts),
            None => parts.extensions.get::<Principal>().cloned(),
        }
    }

    /// The conversation this request names, over HTTP with a duplicate store (see
    /// [`McpServer::with_duplicate_store`]).
    fn conversation_of(&self, context: &RequestContext<RoleServer>) -> Option<String> {
        let (_, conversation) = self.duplicates.as_ref()?;
        conversation(context.extensions.get::<http::request::Parts>()?)
    }

    /// A call that needs the user's approval: asked through the client's elicitation, in the
    /// way the request's protocol version has (see `approval`). `arguments` are the call's as
    /// the client sent them (an MRTR retry must send the same).
    async fn approve_then_call(
        &self,
        admission: Admission,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let name = admission.call().name.clone();
        if !approval::client_can_elicit(&context) {
            tracing::info!(tool = %name, "MCP call refused: the client cannot be asked for approval");
            let why = "the MCP client did not declare the elicitation capability (form mode), so the user cannot be asked";
            let error = crate::CallError::approval_unavailable(&name, why);
            let mut refused = self.refuse(admission.call(), error);
            // The model reads the first block; the host's developer, the second.
            refused.content.push(ContentBlock::text(format!(
                "toolc: `{name}` needs the user's approval, asked through MCP elicitation; {why}. Declare `capabilities.elicitation` (form) to be asked."
            )));
            return refused.into();
        }
        let shown = admission.arguments().cloned().unwrap_or(Value::Null);
        let form = approval::form(&self.registry, &name, &shown);
        if approval::uses_input_required(&context) {
            let waiting = Waiting {
                admission,
                arguments,
                principal: self.principal_of(&context),
                calls: self.calls.clone(),
                asked: std::time::Instant::now(),
            };
            return match self.approvals.ask(waiting, form, self.approval_timeout) {
                Ok(input_required) => {
                    // A client that never comes back: the call ends as timed out all the same
                    // (and a repeat waiting for it is answered).
                    let (approvals, timeout) = (self.approvals.clone(), self.approval_timeout);
                    tokio::spawn(async move {
                        tokio::time::sleep(timeout + std::time::Duration::from_millis(10)).await;
                        approvals.expire(timeout);
                    });
                    input_required.into()
                }
                Err(refused) => self.refuse(refused.0.admission.call(), refused.1).into(),
            };
        }
        let path = approval::Elicit {
            peer: context.peer.clone(),
            form,
            timeout: self.approval_timeout,
        };
        self.ask_then_call(admission, &path, context).await.into()
    }

    /// An MRTR retry (`requestState` set): the call waiting under that handle, with the
    /// client's answer, when it is the same tool, arguments and caller.
    async fn resume(
        &self,
        handle: &str,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let arguments = request.arguments.clone().unwrap_or_default();
        let principal = self.principal_of(&context);
        let name = request.name.as_ref();
        let timeout = self.approval_timeout;
        let taken = self
            .approvals
            .take(handle, name, &arguments, principal.as_ref(), timeout);
        // The others that waited too long end now (their repeats are answered).
        self.approvals.expire(timeout);
        let why = match taken {
            Ok(waiting) => {
                let decision = approval::retry_decision(request.input_responses.as_ref());
                let path = approval::Answered(std::sync::Mutex::new(Some(decision)));
                // Its end is recorded in the session it was admitted in.
                let server = McpServer {
                    calls: waiting.calls,
                    ..self.clone()
                };
                return server.ask_then_call(waiting.admission, &path, context).await;
            }
            Err(Unbound::Expired(waiting)) => {
                let outcome = waiting.time_out(timeout);
                return CallToolResult::error(vec![ContentBlock::text(outcome.output)]);
            }
            Err(Unbound::TimedOut) => {
                let error = crate::CallError::approval_timeout(name, timeout);
                return CallToolResult::error(vec![ContentBlock::text(error.model_text())]);
            }
            Err(Unbound::Unknown) => "the `requestState` names no call waiting for approval (never asked, answered already, or expired): call the tool again to be asked",
            Err(Unbound::Mismatch(why)) => why,
        };
        tracing::info!(
            tool = name,
            why,
            "MCP retry refused: not bound to a waiting approval"
        );
        let error = crate::CallError::approval_required(name, why);
        CallToolResult::error(vec![ContentBlock::text(error.model_text())])
    }

    /// Asks the user through `path` (the engine decides what the answer means), then runs the
    /// call on a yes; the request's cancellation withdraws the question.
    async fn ask_then_call(
        &self,
        admission: Admission,
        path: &dyn crate::dispatch::ClientPath,
        context: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let call_id = admission.call().call_id.clone();
        let scope = SessionScope::new();
        let ctx = scope.call(&admission.call().name, &call_id);
        let asked = admission.ask(&ctx, path);
        tokio::pin!(asked);
        let asked = tokio::select! {
            asked = &mut asked => asked,
            () = context.ct.cancelled() => {
                scope.cancel();
                asked.await
            }
        };
        match asked {
            Ok(approved) => {
                let cancelled = context.ct.clone();
                self.call(approved, None, context, cancelled).await
            }
            Err(refused) => {
                self.finished(&call_id, &refused);
                CallToolResult::error(vec![ContentBlock::text(refused.output)])
            }
        }
    }

    /// A call that does not run: `error` is its outcome, recorded for later repeats.
    fn refuse(&self, call: &ToolCall, error: crate::CallError) -> CallToolResult {
        let refused = CallOutcome::failed(&call.call_id, error);
        self.finished(&call.call_id, &refused);
        CallToolResult::error(vec![ContentBlock::text(refused.output)])
    }

    /// A call answered without running (a repeat), as MCP gives it.
    fn answer(&self, name: &str, outcome: &CallOutcome) -> CallToolResult {
        match &outcome.status {
            crate::dispatch::Status::Failed(_) => {
                CallToolResult::error(vec![ContentBlock::text(outcome.output.clone())])
            }
            _ => {
                let value = serde_json::from_str(&outcome.output).unwrap_or(Value::Null);
                self.success(name, value)
            }
        }
    }

    /// A call's result as MCP gives it: `structuredContent` (with a text copy for clients that
    /// read only text) where the tool declares an object result, else text.
    fn success(&self, name: &str, value: Value) -> CallToolResult {
        let definition = self.registry.definition(name);
        if definition.is_some_and(ToolDefinition::returns_content) {
            // Checked against the content schema already: the blocks are MCP's own.
            if let Ok(content) = serde_json::from_value::<crate::ToolContent>(value.clone()) {
                return CallToolResult::success(content.content.iter().map(mcp_block).collect());
            }
        }
        let structured = definition.is_some_and(|d| object_schema(d.returns.as_ref()).is_some());
        if structured {
            CallToolResult::structured(value)
        } else {
            let text = serde_json::to_string(&value).unwrap_or_else(|_| value.to_string());
            CallToolResult::success(vec![ContentBlock::text(text)])
        }
    }

    /// The name and version the server gives in `initialize`.
    pub fn with_implementation(
        mut self,
        name: impl Into<String>,
        version: impl Into<String>,
    ) -> McpServer {
        self.info = Implementation::new(name, version);
        self
    }

    /// Over HTTP: who the caller is, from the request (see [`PrincipalFn`]).
    pub fn with_principal(
        mut self,
        principal: impl Fn(&http::request::Parts) -> Option<Principal> + Send + Sync + 'static,
    ) -> McpServer {
        self.principal = Some(Arc::new(principal));
        self
    }

    /// The tools `tools/list` answers with.
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// Serves one MCP client over this process's stdin and stdout until it disconnects.
    pub async fn serve_stdio(self) -> Result<(), McpError> {
        self.serve_io(rmcp::transport::stdio()).await
    }

    /// Serves one MCP client over a byte stream pair (stdio, a pipe, a socket).
    pub async fn serve_io<R, W>(self, io: (R, W)) -> Result<(), McpError>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        use rmcp::ServiceExt;
        let server = self.for_new_session();
        // rmcp drops a line that is not JSON; JSON-RPC answers it (`-32700`, id `null`).
        super::jsonrpc::guard_lines(io.0, io.1, |read, write| async move {
            let running = server
                .serve((read, write))
                .await
                .map_err(|e| McpError(format!("the MCP session did not start: {e}")))?;
            running
                .waiting()
                .await
                .map_err(|e| McpError(format!("the MCP session failed: {e}")))?;
            Ok(())
        })
        .await
    }

    /// The streamable HTTP transport as a tower service: mount it with
    /// `Router::new().nest_service("/mcp", server.streamable_http())`. A body that is not
    /// JSON-RPC gets JSON-RPC's answer (`400`, `-32700` or `-32600`); the rest is rmcp's.
    pub fn streamable_http(
        self,
    ) -> super::McpHttpService<
        rmcp::transport::streamable_http_server::tower::StreamableHttpService<
            McpServer,
            rmcp::transport::streamable_http_server::session::local::LocalSessionManager,
        >,
    > {
        #[cfg(feature = "oauth")]
        let auth = self.auth.clone();
        let service = super::McpHttpService::new(
            rmcp::transport::streamable_http_server::tower::StreamableHttpService::new(
                move || Ok(self.for_new_session()),
                Default::default(),
                Default::default(),
            ),
        );
        #[cfg(feature = "oauth")]
        let service = service.with_auth(auth);
        service
    }

    /// Runs one admitted call; `cancelled` is what cancels it (the request's own token for a
    /// plain call, the task's for a task).
    async fn call(
        &self,
        admission: Admission,
        waits: Option<tokio::sync::oneshot::Receiver<CallOutcome>>,
        context: RequestContext<RoleServer>,
        cancelled: tokio_util::sync::CancellationToken,
    ) -> CallToolResult {
        let name = admission.call().name.clone();
        let name = name.as_str();
        match admission.next() {
            // A repeat: the first call's result, or the tool's refusal.
            Next::Answer(outcome) if admission.arguments().is_some() => {
                return self.answer(name, outcome)
            }
            Next::Wait { first } => {
                let outcome = match waits {
                    Some(rx) => rx.await.ok(),
                    None => None,
                };
                let outcome = outcome.unwrap_or_else(|| {
                    let error = crate::CallError::duplicate(name, first, true);
                    CallOutcome::failed(&admission.call().call_id, error)
                });
                return self.answer(name, &outcome);
            }
            // Approval is asked before a call gets here (`approve_then_call`); one that still
            // needs it does not run.
            Next::Run { approval: true, .. } => {
                tracing::info!(
                    tool = name,
                    "MCP call refused: the tool needs the user's approval"
                );
                let error = crate::CallError::approval_unavailable(
                    name,
                    "this MCP server cannot ask the user for approval",
                );
                let refused = CallOutcome::failed(&admission.call().call_id, error);
                self.finished(&admission.call().call_id, &refused);
                return CallToolResult::error(vec![ContentBlock::text(refused.output)]);
            }
            _ => {}
        }
        let principal = self.principal_of(&context);
        let scope = SessionScope::new().with_principal(principal);
        // The call's id (an MRTR retry runs the call it answers, under that call's id).
        let mut ctx = scope.call(name, &admission.call().call_id);
        // Progress the executor reports goes to a client that asked for it.
        // One forwarding task per call keeps the reports in order; it ends with the call (the
        // last handle of the sink goes with the context).
        let mut forwarder = None;
        if let Some(token) = context.meta.get_progress_token() {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<crate::Progress>();
            let peer = context.peer.clone();
            forwarder = Some(tokio::spawn(async move {
                while let Some(p) = rx.recv().await {
                    let mut param =
                        rmcp::model::ProgressNotificationParam::new(token.clone(), p.progress);
                    param.total = p.total;
                    param.message = p.message;
                    if peer.notify_progress(param).await.is_err() {
                        return;
                    }
                }
            }));
            ctx = ctx.with_progress(Arc::new(move |p: crate::Progress| {
                let _ = tx.send(p);
            }));
        }
        let call_id = admission.call().call_id.clone();
        // The MCP client's `notifications/cancelled` fires the executor's signal; the call then
        // ends as the executor ends it (its timeout bounds one that does not listen).
        let traced = admission.call().clone();
        // A client that set a log level gets the events recorded while its call runs.
        let level = *self.log_level.lock().unwrap_or_else(|e| e.into_inner());
        let mut logs = None;
        let span = match level {
            Some(level) => {
                let (route, rx) = Route::open(level);
                let route_span = route.span();
                let span = route_span
                    .in_scope(|| crate::telemetry::call_span(&traced, scope.session_id(), "mcp"));
                logs = Some((route, forward_logs(rx, context.peer.clone())));
                span
            }
            None => crate::telemetry::call_span(&traced, scope.session_id(), "mcp"),
        };
        let started = std::time::Instant::now();
        let call =
            tracing::Instrument::instrument(admission.run_value(&self.registry, ctx), span.clone());
        tokio::pin!(call);
        let outcome = tokio::select! {
            outcome = &mut call => outcome,
            () = cancelled.cancelled() => {
                scope.cancel();
                call.await
            }
        };
        // One outcome for the span and for later repeats; its text is only written when one of
        // them reads it (payload capture, or a first call a repeat may reuse).
        let remembered = self.calls().conversation.remembers(&call_id);
        let recorded = match &outcome {
            Ok(value) => {
                let wanted = crate::telemetry::captures_payloads() || remembered;
                let text = if wanted {
                    value.to_string()
                } else {
                    String::new()
                };
                CallOutcome::ok(&call_id, text)
            }
            Err(error) => CallOutcome::failed(&call_id, error.clone()),
        };
        crate::telemetry::record_outcome(&span, &recorded, started.elapsed());
        // Later repeats get this result (a failed call is not repeated: the next one runs).
        self.finished(&call_id, &recorded);
        // The reports go out before the result: the finished call dropped its context, so the
        // forwarder ends once it has sent them (bounded, for an executor that kept a copy).
        if let Some(forwarder) = forwarder {
            let _ = tokio::time::timeout(std::time::Duration::from_millis(500), forwarder).await;
        }
        // So do its log messages: the route closes with the call, which ends the forwarder.
        if let Some((route, forwarder)) = logs {
            drop(route);
            let _ = tokio::time::timeout(std::time::Duration::from_millis(500), forwarder).await;
        }
        match outcome {
            Ok(value) => self.success(name, value),
            Err(error) => CallToolResult::error(vec![ContentBlock::text(error.model_text())]),
        }
    }
}

impl ServerHandler for McpServer {
    #[allow(deprecated)] // `enable_logging`: see `logging`.
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .enable_logging()
                // No prompts or resource templates to complete: every answer is empty, but an
                // answer rather than an error for hosts that ask.
                .enable_completions()
                .build(),
        )
        .with_server_info(self.info.clone())
    }

    /// The versions served as their specifications say: 2025-06-18 brought `outputSchema`,
    /// `title` and `structuredContent`, which this server sends; the older two have none of
    /// them (and 2025-03-26 has batches, which rmcp refuses), so they are not offered. A client
    /// asking for one of them is answered with the newest version, as MCP says.
    fn supported_protocol_versions(&self) -> Cow<'static, [rmcp::model::ProtocolVersion]> {
        Cow::Borrowed(SERVED_VERSIONS)
    }

    #[allow(deprecated)] // See `logging`: deprecated by SEP-2577, still served.
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        *self.log_level.lock().unwrap_or_else(|e| e.into_inner()) = Some(request.level);
        Ok(())
    }

    /// rmcp turns a request of a method it knows whose params do not parse (a `tools/call`
    /// without `name`, `arguments` that are not an object) into a custom request: that is
    /// JSON-RPC's invalid params (`-32602`), not an unknown method.
    async fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CustomResult, ErrorData> {
        let method = request.method.as_str();
        if !KNOWN_METHODS.contains(&method) {
            return Err(ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                format!("unknown method `{method}`"),
                None,
            ));
        }
        let params = request.params.unwrap_or(Value::Null);
        let why = match method {
            "tools/call" if !params.get("name").is_some_and(Value::is_string) => {
                "`name` must be the tool's name, a string".to_owned()
            }
            "tools/call"
                if params
                    .get("arguments")
                    .is_some_and(|a| !a.is_object() && !a.is_null()) =>
            {
                "`arguments` must be an object".to_owned()
            }
            _ => format!("they are not what `{method}` takes"),
        };
        Err(ErrorData::invalid_params(
            format!("invalid params of `{method}`: {why}"),
            None,
        ))
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, ErrorData> {
        self.tasks.get(&request.task_id)
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.cancel(&request.task_id)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // One page, always in the registry's order, with the cache hints.
        let scope = if self.list_cache.shared {
            rmcp::model::CacheScope::Public
        } else {
            rmcp::model::CacheScope::Private
        };
        let ttl_ms = u64::try_from(self.list_cache.ttl.as_millis()).unwrap_or(u64::MAX);
        Ok(ListToolsResult::with_all_items((*self.tools).clone())
            .with_ttl_ms(ttl_ms)
            .with_cache_scope(scope))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // Client tools are not this server's to run, and unknown names are not tools: both
        // are protocol errors, not results.
        if !self.tools.iter().any(|t| t.name == request.name) {
            let known: Vec<&str> = self.tools.iter().map(|t| t.name.as_ref()).collect();
            return Err(ErrorData::invalid_params(
                format!(
                    "no server tool named `{}`; the tools are: {}",
                    request.name,
                    known.join(", ")
                ),
                None,
            ));
        }
        // A retry with the user's answer to an approval asked over MRTR.
        if let Some(handle) = request.request_state.clone() {
            return Ok(self.resume(&handle, request, context).await.into());
        }
        let raw = request.arguments.unwrap_or_default();
        let arguments = Value::Object(raw.clone());
        let call = ToolCall::new(
            context.id.to_string(),
            request.name.as_ref(),
            serde_json::to_string(&arguments).unwrap_or_default(),
        );
        let principal = self.principal_of(&context);
        let conversation = self.conversation_of(&context);
        let (admission, waits) = self.admit(call, principal.as_ref(), conversation);
        // A call of an `approval: required` tool asks the user first, unless it is over a rate
        // limit (which a shared store may still be counting).
        if admission.needs_approval() {
            if let Err(refused) = admission.check_limit().await {
                self.finished(&refused.call_id, &refused);
                return Ok(CallToolResult::error(vec![ContentBlock::text(refused.output)]).into());
            }
            return Ok(self.approve_then_call(admission, raw, context).await);
        }
        // A background (`mode: async`) tool is a task for a client that takes tasks: it gets
        // the task at once and polls for the result; any other client waits for the result.
        let takes_tasks = context
            .client_capabilities()
            .is_some_and(|c| c.supports_tasks());
        if admission.runs_in_background() && !admission.needs_approval() && takes_tasks {
            let (id, cancel, task) = self.tasks.start()?;
            let server = self.clone();
            tokio::spawn(async move {
                let result = server.call(admission, waits, context, cancel).await;
                server.tasks.complete(&id, &result);
            });
            return Ok(CallToolResponse::Task(rmcp::model::CreateTaskResult::new(
                task,
            )));
        }
        let cancelled = context.ct.clone();
        Ok(self.call(admission, waits, context, cancelled).await.into())
    }
}

/// The protocol versions this server speaks, newest first.
const SERVED_VERSIONS: &[rmcp::model::ProtocolVersion] = &[
    rmcp::model::ProtocolVersion::V_2026_07_28,
    rmcp::model::ProtocolVersion::V_2025_11_25,
    rmcp::model::ProtocolVersion::V_2025_06_18,
];

/// The request methods of MCP: one of them that reaches `on_custom_request` had params rmcp
/// could not read.
const KNOWN_METHODS: &[&str] = &[
    "initialize",
    "server/discover",
    "ping",
    "tools/list",
    "tools/call",
    "tasks/get",
    "tasks/cancel",
    "tasks/list",
    "tasks/result",
    "logging/setLevel",
    "completion/complete",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
];

/// One content block as rmcp's.
fn mcp_block(block: &crate::ContentBlock) -> ContentBlock {
    use crate::ContentBlock as Block;
    match block {
        Block::Text { text } => ContentBlock::text(text.clone()),
        Block::Image { data, mime_type } => ContentBlock::image(data.clone(), mime_type.clone()),
        Block::Audio { data, mime_type } => ContentBlock::audio(data.clone(), mime_type.clone()),
        Block::Resource { resource } => {
            let contents = match (&resource.text, &resource.blob) {
                (_, Some(blob)) => rmcp::model::ResourceContents::BlobResourceContents {
                    uri: resource.uri.clone(),
                    mime_type: resource.mime_type.clone(),
                    blob: blob.clone(),
                    meta: None,
                },
                (text, None) => rmcp::model::ResourceContents::TextResourceContents {
                    uri: resource.uri.clone(),
                    mime_type: resource.mime_type.clone(),
                    text: text.clone().unwrap_or_default(),
                    meta: None,
                },
            };
            ContentBlock::resource(contents)
        }
    }
}

/// Sends a call's log messages to its client, in order, until the call's route closes.
#[allow(deprecated)] // MCP logging is deprecated by SEP-2577 but still in every served version.
fn forward_logs(
    mut rx: tokio::sync::mpsc::UnboundedReceiver<super::logging::Message>,
    peer: rmcp::Peer<RoleServer>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        while let Some(message) = rx.recv().await {
            let mut param =
                rmcp::model::LoggingMessageNotificationParam::new(message.level, message.data);
            param.logger = Some(message.logger);
            if peer.notify_logging_message(param).await.is_err() {
                return;
            }
        }
    })
}

/// A definition as an MCP tool: `inputSchema` is the parameters, `outputSchema` the result
/// schema when it is an object schema (MCP requires that of it).
pub fn mcp_tool(definition: &ToolDefinition) -> Tool {
    // As `mcp.json` declares it: `true`/`false` property schemas become objects (2025-11-25).
    let input = match toolc_core::schema_util::mcp_input_schema(&definition.parameters) {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    };
    let mut tool = Tool::new(
        Cow::Owned(definition.name.clone()),
        // With the sentence the provider files carry for approval and background tools.
        Cow::Owned(definition.model_description().into_owned()),
        Arc::new(input),
    );
    // A content tool answers with `content` blocks, not `structuredContent`.
    let structured = definition
        .returns
        .as_ref()
        .filter(|_| !definition.returns_content());
    if let Some(output) = object_schema(structured) {
        tool.output_schema = Some(Arc::new(output.clone()));
    }
    tool.title = definition.title.clone();
    let a = &definition.annotations;
    if !a.is_empty() {
        let mut hints = ToolAnnotations::default();
        hints.read_only_hint = a.read_only;
        hints.destructive_hint = a.destructive;
        hints.idempotent_hint = a.idempotent;
        hints.open_world_hint = a.open_world;
        tool.annotations = Some(hints);
    }
    tool
}

/// `schema` when it is an object schema (`type: object`).
fn object_schema(schema: Option<&Value>) -> Option<&JsonObject> {
    let map = schema?.as_object()?;
    (map.get("type").and_then(Value::as_str) == Some("object")).then_some(map)
}
