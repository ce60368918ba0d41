//! The tools of an MCP server as server tools of a [`crate::Registry`], like a remote catalog's:
//! discovered with `tools/list`, each a definition (`inputSchema` its parameters, an object
//! `outputSchema` its result schema) whose executor calls the MCP server. The registry
//! validates the arguments before the call leaves the process and the result when it comes
//! back, as for every server tool. When the server sends `notifications/tools/list_changed`,
//! the tools are listed again; as [`crate::live::LiveTools`], running realtime sessions then
//! call and declare the new set.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, ContentBlock, ProgressToken, Tool};
use rmcp::service::{NotificationContext, Peer, RoleClient, RunningService};
use serde_json::Value;

use super::McpError;
use crate::{
    executor_fn_with_context, Annotations, CallContext, Location, RegistryBuilder, ToolDefinition,
    ToolError,
};

/// How long a call of a remote tool may take unless [`McpTools::set_timeout`] says otherwise:
/// a hung server must not hold a registry call forever.
pub const DEFAULT_MCP_TIMEOUT: Duration = Duration::from_secs(30);

/// The tools of one connected MCP server.
pub struct McpTools {
    peer: Peer<RoleClient>,
    state: Arc<Mutex<State>>,
    /// The deadline of every call, in milliseconds (the tools' `timeout`).
    timeout_ms: AtomicU64,
    /// Over OAuth: what gets a new token when the server refuses a call's (see
    /// [`Reauthorize`]).
    reauth: Option<Arc<dyn Reauthorize>>,
    /// Keeps the connection (and a spawned server process) alive as long as the tools are.
    _service: RunningService<RoleClient, Listener>,
}

/// What a connection that signs in does when the server refuses a request for want of
/// authorization (a `401`, or a `403` with `insufficient_scope`): get a token that answers the
/// server's `WWW-Authenticate` challenge, so that the request can be sent again.
pub(crate) trait Reauthorize: Send + Sync {
    fn challenged<'a>(
        &'a self,
        challenge: &'a str,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), McpError>> + Send + 'a>>;

    /// Signs out: revokes the tokens at the authorization server and forgets them; the
    /// connection authorizes no more.
    // Called only by `McpTools::revoke` (feature `client-oauth`).
    #[cfg_attr(not(feature = "client-oauth"), allow(dead_code))]
    fn revoke(
        &self,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), McpError>> + Send + '_>>;

    /// A request went through after being authorized again: the bound on authorizations
    /// starts over (it is for one refused request, not for a connection's whole life).
    fn settled(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>>;
}

/// How many times one call may be refused and authorized again before it fails.
const MAX_CALL_REAUTHORIZATIONS: usize = 2;

/// Why a connection failed: the error, and the server's challenge when it refused for want of
/// authorization.
pub(crate) struct ConnectFailure {
    error: McpError,
    // Read only by `connect_oauth`.
    #[cfg_attr(not(feature = "client-oauth"), allow(dead_code))]
    challenge: Option<String>,
}

impl std::fmt::Debug for McpTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = lock(&self.state);
        f.debug_struct("McpTools")
            .field("tools", &state.definitions.len())
            .field("generation", &state.generation)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct State {
    generation: u64,
    definitions: Arc<Vec<ToolDefinition>>,
    /// The compiled `inputSchema` of each definition, for live calls (which bypass the
    /// registry), compiled once when the tools are listed.
    validators: std::collections::HashMap<String, Arc<jsonschema::Validator>>,
    /// Every name the server has had: their declarations are its to replace.
    names: BTreeSet<String>,
    /// Tools left out, with the reason (a name toolc cannot use, a schema that does not compile).
    skipped: Vec<(String, String)>,
    /// Where the progress the server reports for a running call goes, by the call's token,
    /// with the last value passed on.
    progress: HashMap<ProgressToken, (CallContext, f64)>,
    /// Reports that came before their call's route was open (the server may answer before
    /// the client has noted the token): kept briefly, passed on when the route opens.
    unrouted:
        std::collections::VecDeque<(std::time::Instant, rmcp::model::ProgressNotificationParam)>,
}

/// How many early reports are kept, and for how long.
const UNROUTED_MAX: usize = 256;
const UNROUTED_FOR: Duration = Duration::from_secs(2);

impl State {
    /// Passes a report on to its call, if it moves the call's progress forward (MCP: the value
    /// increases with each report; rmcp handles notifications concurrently, so an older one
    /// can come after a newer one, and is dropped). A report for no open route waits.
    fn report(&mut self, params: rmcp::model::ProgressNotificationParam) {
        match self.progress.get_mut(&params.progress_token) {
            Some((ctx, last)) => {
                if params.progress > *last {
                    *last = params.progress;
                    ctx.report_progress(params.progress, params.total, params.message.as_deref());
                }
            }
            None => {
                let now = std::time::Instant::now();
                while self
                    .unrouted
                    .front()
                    .is_some_and(|(at, _)| now.duration_since(*at) > UNROUTED_FOR)
                    || self.unrouted.len() >= UNROUTED_MAX
                {
                    self.unrouted.pop_front();
                }
                self.unrouted.push_back((now, params));
            }
        }
    }

    /// Opens a call's route and passes on what came for it before.
    fn open_route(&mut self, token: ProgressToken, ctx: CallContext) {
        self.progress
            .insert(token.clone(), (ctx, f64::NEG_INFINITY));
        let (early, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.unrouted)
            .into_iter()
            .partition(|(_, p)| p.progress_token == token);
        self.unrouted = rest.into();
        for (_, params) in early {
            self.report(params);
        }
    }
}

/// Receives the server's notifications.
#[derive(Clone)]
struct Listener {
    state: Arc<Mutex<State>>,
}

impl rmcp::handler::client::ClientHandler for Listener {
    /// This client, by name, and what it takes: tasks (a server may run a long call as one and
    /// be polled for its result).
    /// The handshake is `initialize`, so it names 2025-11-25, the last version that has one
    /// (2026-07-28 starts with `server/discover`; rmcp's probing of it stalled against the
    /// Python SDK's server, so it is not used).
    fn get_info(&self) -> rmcp::model::ClientConfig {
        // rmcp's capabilities builder exists only with its `server` or `macros` feature, which
        // a client-only build (`mcp-client` alone) does not turn on: the fields are set instead.
        let mut capabilities = rmcp::model::ClientCapabilities::default();
        capabilities
            .extensions
            .get_or_insert_with(Default::default)
            .insert(
                rmcp::model::TASKS_EXTENSION_ID.to_owned(),
                Default::default(),
            );
        let mut config = rmcp::model::ClientConfig::new(
            capabilities,
            rmcp::model::Implementation::new("toolc", env!("CARGO_PKG_VERSION")),
        );
        config.protocol_version = rmcp::model::ProtocolVersion::V_2025_11_25;
        config
    }

    /// Progress the server reports for a call reaches the call's context (and whoever listens
    /// to it: an MCP client of ours, a realtime session's filler logic).
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        lock(&self.state).report(params);
    }

    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        if let Ok(tools) = context.peer.list_all_tools().await {
            observe(&self.state, &tools);
        }
    }
}

impl McpTools {
    /// Starts `command` (an MCP server speaking stdio) and lists its tools.
    pub async fn spawn(command: tokio::process::Command) -> Result<Arc<McpTools>, McpError> {
        let transport = rmcp::transport::TokioChildProcess::new(command)
            .map_err(|e| McpError(format!("cannot start the MCP server: {e}")))?;
        McpTools::connect(transport).await
    }

    /// Connects to an MCP server's streamable HTTP endpoint (`http(s)://HOST/mcp`) and lists
    /// its tools.
    pub async fn connect_http(url: &str) -> Result<Arc<McpTools>, McpError> {
        // With the `catalog` feature reqwest is built with `rustls-no-provider`, and a client
        // built without a process-wide provider panics: install ring's unless one is set.
        #[cfg(feature = "ring-provider")]
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(url.to_owned());
        McpTools::connect(transport).await
    }

    /// [`McpTools::connect_http`] with credentials: `bearer_token` goes as `Authorization:
    /// Bearer ...`, `headers` (e.g. an API key header) with every request. A header the
    /// transport sets itself (`mcp-session-id`, `accept`, ...) is refused. A token that
    /// expires is not renewed: for an OAuth-protected server, `connect_oauth` (feature
    /// `client-oauth`) gets, refreshes and steps up tokens itself.
    pub async fn connect_http_with(
        url: &str,
        bearer_token: Option<&str>,
        headers: &[(&str, &str)],
    ) -> Result<Arc<McpTools>, McpError> {
        #[cfg(feature = "ring-provider")]
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let mut config =
            rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
                url.to_owned(),
            );
        config.auth_header = bearer_token.map(str::to_owned);
        for (name, value) in headers {
            let name = http::HeaderName::from_bytes(name.as_bytes())
                .map_err(|e| McpError(format!("`{name}` is not a header name: {e}")))?;
            let value = http::HeaderValue::from_str(value).map_err(|e| {
                McpError(format!("the value of `{name}` is not a header value: {e}"))
            })?;
            config.custom_headers.insert(name, value);
        }
        let transport = rmcp::transport::StreamableHttpClientTransport::from_config(config);
        McpTools::connect(transport).await
    }

    /// Connects over any rmcp client transport (a child process, streamable HTTP, a pipe) and
    /// lists the server's tools.
    pub async fn connect<T, E, A>(transport: T) -> Result<Arc<McpTools>, McpError>
    where
        T: rmcp::transport::IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        McpTools::connect_with(transport, None)
            .await
            .map_err(|failure| failure.error)
    }

    /// Connects to a protected MCP server's streamable HTTP endpoint as an OAuth 2.1 client
    /// (see [`crate::client_oauth`]), and lists its tools. The first request goes with the
    /// stored token, or none; the server's challenge then leads discovery and the login (or
    /// the client credentials exchange), and the connection starts again with the token. A
    /// call the server later refuses (an expired or revoked token that cannot be refreshed, a
    /// tool that needs more scopes) is authorized again and sent again, a bounded number of
    /// times.
    #[cfg(feature = "client-oauth")]
    pub async fn connect_oauth(
        url: &str,
        oauth: crate::client_oauth::OAuthClient,
    ) -> Result<Arc<McpTools>, McpError> {
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let session = Arc::new(crate::client_oauth::Session::new(url, oauth).await?);
        loop {
            let config =
                rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
                    url.to_owned(),
                );
            let transport = rmcp::transport::StreamableHttpClientTransport::with_client(
                session.client.clone(),
                config,
            );
            let reauth: Arc<dyn Reauthorize> = session.clone();
            match McpTools::connect_with(transport, Some(reauth)).await {
                Ok(tools) => {
                    session.settled().await;
                    return Ok(tools);
                }
                // The session bounds how many times this goes round.
                Err(ConnectFailure {
                    challenge: Some(challenge),
                    ..
                }) => session.challenged(Some(&challenge)).await?,
                Err(failure) => return Err(failure.error),
            }
        }
    }

    /// Signs out of an OAuth-protected server (a connection made with
    /// [`McpTools::connect_oauth`]): the refresh token and the access token are revoked at the
    /// authorization server (RFC 7009, at its metadata's `revocation_endpoint`, authenticated as
    /// the client was registered) and the credential store is cleared. From then on the calls
    /// of these tools fail (`mcp_unauthorized`, saying the connection was signed out) instead
    /// of asking the user to log in again; connect again to sign in. The store is cleared even
    /// when the authorization server cannot be told, and the error then says that the tokens
    /// stay valid there until they expire.
    #[cfg(feature = "client-oauth")]
    pub async fn revoke(&self) -> Result<(), McpError> {
        match &self.reauth {
            Some(session) => session.revoke().await,
            None => Err(McpError(
                "these tools were not connected with OAuth (McpTools::connect_oauth): there are no tokens to revoke".into(),
            )),
        }
    }

    async fn connect_with<T, E, A>(
        transport: T,
        reauth: Option<Arc<dyn Reauthorize>>,
    ) -> Result<Arc<McpTools>, ConnectFailure>
    where
        T: rmcp::transport::IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let state = Arc::new(Mutex::new(State::default()));
        let listener = Listener {
            state: state.clone(),
        };
        // The `initialize` handshake (see `get_info` for the version it names).
        use rmcp::ServiceExt;
        let service = listener
            .serve(transport)
            .await
            .map_err(|e| ConnectFailure {
                error: McpError(format!("the MCP server did not initialize: {e}")),
                challenge: e.auth_challenge().map(str::to_owned),
            })?;
        let peer = service.peer().clone();
        let tools = peer.list_all_tools().await.map_err(|e| ConnectFailure {
            error: McpError(format!("tools/list failed: {e}")),
            challenge: e.auth_challenge().map(str::to_owned),
        })?;
        observe(&state, &tools);
        Ok(Arc::new(McpTools {
            peer,
            state,
            timeout_ms: AtomicU64::new(DEFAULT_MCP_TIMEOUT.as_millis() as u64),
            reauth,
            _service: service,
        }))
    }

    /// The deadline of each call of these tools, from now on (the registry and live calls
    /// enforce it; the default is [`DEFAULT_MCP_TIMEOUT`]). Call it before
    /// [`McpTools::merge_into`]: the registry takes the definitions as they are then.
    pub fn set_timeout(&self, timeout: Duration) {
        let ms = u64::try_from(timeout.as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        self.timeout_ms.store(ms, Ordering::Relaxed);
    }

    fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms.load(Ordering::Relaxed))
    }

    /// The server tools as they are now, each with the calls' deadline.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        let timeout = self.timeout();
        let mut definitions = lock(&self.state).definitions.to_vec();
        for d in &mut definitions {
            d.timeout = Some(timeout);
        }
        definitions
    }

    /// Tools the server listed that were left out, with the reason.
    pub fn skipped(&self) -> Vec<(String, String)> {
        lock(&self.state).skipped.clone()
    }

    /// Adds the server's tools to `builder`, each with an executor that calls the server. A
    /// tool whose name one of `local` (the definitions already in the builder) has is an error:
    /// which of the two should run would be a guess.
    pub fn merge_into(
        self: &Arc<Self>,
        mut builder: RegistryBuilder,
        local: &[ToolDefinition],
    ) -> Result<RegistryBuilder, McpError> {
        let definitions = self.definitions();
        let clashes: Vec<&str> = definitions
            .iter()
            .filter(|d| local.iter().any(|l| l.name == d.name))
            .map(|d| d.name.as_str())
            .collect();
        if !clashes.is_empty() {
            return Err(McpError(format!(
                "the MCP server's tools {} have the names of tools already defined; rename one side",
                clashes
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        for definition in definitions {
            // Each executor holds the tools, and so the connection: the registry may outlive
            // every other handle.
            let tools = self.clone();
            let name = definition.name.clone();
            builder = builder.definition(definition).executor(
                name.clone(),
                executor_fn_with_context(move |ctx, arguments: Value| {
                    let (tools, name) = (tools.clone(), name.clone());
                    async move {
                        let reauth = tools.reauth.as_deref();
                        call(&tools.peer, &tools.state, reauth, &ctx, &name, arguments).await
                    }
                }),
            );
        }
        Ok(builder)
    }
}

impl crate::live::LiveTools for McpTools {
    fn current(&self) -> (u64, Arc<Vec<ToolDefinition>>) {
        let state = lock(&self.state);
        (state.generation, state.definitions.clone())
    }

    fn is_live(&self, name: &str) -> bool {
        lock(&self.state).names.contains(name)
    }

    fn call(&self, ctx: CallContext, name: &str, arguments: Value) -> crate::ToolFuture {
        let peer = self.peer.clone();
        let state = self.state.clone();
        let reauth = self.reauth.clone();
        let name = name.to_owned();
        let validator = lock(&self.state).validators.get(&name).cloned();
        let timeout = self.timeout();
        Box::pin(async move {
            let Some(validator) = validator else {
                return Err(
                    ToolError::new(format!("the MCP server has no tool named `{name}`"))
                        .with_code("unknown_tool"),
                );
            };
            // Live calls bypass the registry: the arguments are checked here instead.
            if !validator.is_valid(&arguments) {
                return Err(ToolError::new(format!(
                    "the arguments of `{name}` do not match its schema"
                ))
                .with_code("invalid_arguments"));
            }
            // Live calls bypass the registry: its deadline is kept here too.
            let call = call(&peer, &state, reauth.as_deref(), &ctx, &name, arguments);
            match tokio::time::timeout(timeout, call).await {
                Ok(result) => result,
                Err(_) => Err(ToolError::new(format!(
                    "the MCP server did not answer `{name}` within {} ms",
                    timeout.as_millis()
                ))
                .with_code("timeout")),
            }
        })
    }
}

/// How long a call's progress route stays open after its result: rmcp hands each notification
/// to a task of its own, so reports sent before the result may be handled just after it.
const PROGRESS_GRACE: Duration = Duration::from_millis(250);

/// Ends a call's progress route when the call ends, however it ends (after
/// [`PROGRESS_GRACE`]).
struct ProgressRoute {
    state: Arc<Mutex<State>>,
    token: ProgressToken,
}

impl Drop for ProgressRoute {
    fn drop(&mut self) {
        let (state, token) = (self.state.clone(), self.token.clone());
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    tokio::time::sleep(PROGRESS_GRACE).await;
                    lock(&state).progress.remove(&token);
                });
            }
            Err(_) => {
                lock(&state).progress.remove(&token);
            }
        }
    }
}

fn cancelled_error(name: &str) -> ToolError {
    ToolError::new(format!("the call of `{name}` was cancelled")).with_code("cancelled")
}

/// One `tools/call`: the result is the `structuredContent`, else the text parsed as JSON (or
/// the text itself); an `isError` result is the tool's error, with its text as the message.
/// The server's progress reports for it reach `ctx`; `ctx`'s cancellation sends the server
/// `notifications/cancelled` (or `tasks/cancel` for a task) and ends the call. Over OAuth, a
/// call the server refuses for want of authorization is authorized again (`reauth`) and sent
/// again, at most [`MAX_CALL_REAUTHORIZATIONS`] times.
async fn call(
    peer: &Peer<RoleClient>,
    state: &Arc<Mutex<State>>,
    reauth: Option<&dyn Reauthorize>,
    ctx: &CallContext,
    name: &str,
    arguments: Value,
) -> Result<Value, ToolError> {
    use rmcp::model::ServerResult;
    let arguments = match arguments {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    };
    let params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
    let failed = |e: rmcp::service::ServiceError| {
        ToolError::new(format!("the MCP server failed the call: {e}")).with_code("mcp_error")
    };
    let mut reauthorized = 0;
    let answer = loop {
        match send_call(peer, state, ctx, name, params.clone()).await? {
            Err(e) => {
                let challenge = e.auth_challenge();
                match (reauth, challenge) {
                    (Some(reauth), Some(challenge)) if reauthorized < MAX_CALL_REAUTHORIZATIONS => {
                        reauthorized += 1;
                        reauth.challenged(challenge).await.map_err(|e| {
                            ToolError::new(format!(
                                "the MCP server refused the call for want of authorization, and authorizing again failed: {e}"
                            ))
                            .with_code("mcp_unauthorized")
                        })?;
                    }
                    (_, Some(challenge)) => {
                        return Err(ToolError::new(format!(
                            "the MCP server refused the call for want of authorization ({challenge}): {e}"
                        ))
                        .with_code("mcp_unauthorized"))
                    }
                    _ => return Err(failed(e)),
                }
            }
            Ok(answer) => {
                if let (Some(reauth), true) = (reauth, reauthorized > 0) {
                    reauth.settled().await;
                }
                break answer;
            }
        }
    };
    let result = match answer {
        ServerResult::CallToolResult(result) => result,
        ServerResult::CreateTaskResult(created) => task_result(peer, ctx, name, created.task).await?,
        ServerResult::InputRequiredResult(_) => {
            return Err(ToolError::new(
                "the MCP server asked for input in the middle of the call, which this client cannot give",
            )
            .with_code("mcp_input_required"))
        }
        _ => {
            return Err(ToolError::new("the MCP server answered `tools/call` with something else")
                .with_code("mcp_error"))
        }
    };
    let text: String = result
        .content
        .iter()
        .filter_map(|c| match c {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    if result.is_error == Some(true) {
        return Err(ToolError::new(text).with_code("tool_error"));
    }
    Ok(match result.structured_content {
        Some(value) => value,
        None => serde_json::from_str(&text).unwrap_or(Value::String(text)),
    })
}

/// Sends one `tools/call` and waits for its answer (the server's, or the transport's error);
/// `Err` only when the caller cancelled.
async fn send_call(
    peer: &Peer<RoleClient>,
    state: &Arc<Mutex<State>>,
    ctx: &CallContext,
    name: &str,
    params: CallToolRequestParams,
) -> Result<Result<rmcp::model::ServerResult, rmcp::service::ServiceError>, ToolError> {
    use rmcp::model::{CallToolRequest, ClientRequest};
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let mut handle = match peer
        .send_request_with_option(request, rmcp::service::PeerRequestOptions::no_options())
        .await
    {
        Ok(handle) => handle,
        Err(e) => return Ok(Err(e)),
    };
    lock(state).open_route(handle.progress_token.clone(), ctx.clone());
    let _route = ProgressRoute {
        state: state.clone(),
        token: handle.progress_token.clone(),
    };
    tokio::select! {
        answer = &mut handle.rx => Ok(answer.unwrap_or(Err(rmcp::service::ServiceError::TransportClosed))),
        () = ctx.cancellation_token().cancelled() => {
            let _ = handle.cancel(Some("the caller cancelled the call".into())).await;
            Err(cancelled_error(name))
        }
    }
}

/// Longest pause between two `tasks/get` polls, whatever the server suggests.
const MAX_POLL_INTERVAL: std::time::Duration = std::time::Duration::from_secs(5);

/// Follows a task the server made of a call (`tasks/get`, at the interval it suggests) to its
/// result. The call's deadline (the tool's timeout) bounds the polling, as it bounds any call.
async fn task_result(
    peer: &Peer<RoleClient>,
    ctx: &CallContext,
    name: &str,
    task: rmcp::model::Task,
) -> Result<rmcp::model::CallToolResult, ToolError> {
    use rmcp::model::{GetTaskParams, TaskPayload};
    let interval = |ms: Option<u64>| {
        std::time::Duration::from_millis(ms.unwrap_or(500).max(10)).min(MAX_POLL_INTERVAL)
    };
    let mut wait = interval(task.poll_interval_ms);
    loop {
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = ctx.cancellation_token().cancelled() => {
                let params = rmcp::model::CancelTaskParams::new(task.task_id.clone());
                let _ = peer.cancel_task(params).await;
                return Err(cancelled_error(name));
            }
        }
        let state = peer
            .get_task(GetTaskParams::new(task.task_id.clone()))
            .await
            .map_err(|e| {
                ToolError::new(format!("the MCP server lost the task: {e}")).with_code("mcp_error")
            })?;
        wait = interval(state.task.task.poll_interval_ms);
        match state.task.payload {
            TaskPayload::Completed { result } => {
                return serde_json::from_value(Value::Object(result)).map_err(|e| {
                    ToolError::new(format!(
                        "the MCP server's task result is not a tool result: {e}"
                    ))
                    .with_code("mcp_error")
                });
            }
            TaskPayload::Failed { error } => {
                let message = error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("the task failed")
                    .to_owned();
                return Err(ToolError::new(message).with_code("mcp_error"));
            }
            TaskPayload::Cancelled => {
                return Err(
                    ToolError::new("the MCP server cancelled the task").with_code("cancelled")
                )
            }
            TaskPayload::InputRequired { .. } => {
                return Err(ToolError::new(
                    "the MCP server's task needs input this client cannot give",
                )
                .with_code("mcp_input_required"))
            }
            _ => {}
        }
    }
}

/// Takes in a `tools/list`: a new generation when the usable tools differ.
fn observe(state: &Mutex<State>, tools: &[Tool]) {
    let mut definitions: Vec<ToolDefinition> = Vec::new();
    let mut validators = std::collections::HashMap::new();
    let mut skipped = Vec::new();
    for tool in tools {
        // A server that lists a name twice: the first is kept, as a registry would refuse both.
        if definitions.iter().any(|d| *d.name == *tool.name) {
            skipped.push((
                tool.name.to_string(),
                "the server lists this name twice".into(),
            ));
            continue;
        }
        match definition(tool) {
            Ok((d, validator)) => {
                validators.insert(d.name.clone(), validator);
                definitions.push(d);
            }
            Err(why) => skipped.push((tool.name.to_string(), why)),
        }
    }
    let mut state = lock(state);
    state
        .names
        .extend(definitions.iter().map(|d| d.name.clone()));
    state.skipped = skipped;
    if *state.definitions != definitions {
        state.definitions = Arc::new(definitions);
        state.validators = validators;
        state.generation += 1;
    }
}

/// An MCP tool as a server tool definition with its compiled `inputSchema`, or why it cannot
/// be one.
fn definition(tool: &Tool) -> Result<(ToolDefinition, Arc<jsonschema::Validator>), String> {
    let name = tool.name.to_string();
    if !toolc_core::manifest::is_valid_name(&name) {
        return Err("the name is not a toolc tool name (letters, digits, `_`, `-`)".into());
    }
    let parameters = Value::Object((*tool.input_schema).clone());
    toolc_core::schema_util::check_written_out_size(&parameters)
        .map_err(|reason| format!("its inputSchema is refused: {reason}"))?;
    let validator = jsonschema::validator_for(&parameters)
        .map_err(|e| format!("its inputSchema does not compile: {e}"))?;
    let returns = match &tool.output_schema {
        Some(schema) => {
            let schema = Value::Object((**schema).clone());
            toolc_core::schema_util::check_written_out_size(&schema)
                .map_err(|reason| format!("its outputSchema is refused: {reason}"))?;
            jsonschema::validator_for(&schema)
                .map_err(|e| format!("its outputSchema does not compile: {e}"))?;
            Some(schema)
        }
        None => None,
    };
    // The server's hints, as a manifest's `annotations` would give them.
    let hints = tool.annotations.as_ref();
    let annotations = Annotations {
        read_only: hints.and_then(|a| a.read_only_hint),
        destructive: hints.and_then(|a| a.destructive_hint),
        idempotent: hints.and_then(|a| a.idempotent_hint),
        open_world: hints.and_then(|a| a.open_world_hint),
    };
    let title = tool
        .title
        .clone()
        .or_else(|| hints.and_then(|a| a.title.clone()));
    let definition = ToolDefinition {
        title,
        annotations,
        name,
        description: tool.description.as_deref().unwrap_or_default().to_owned(),
        location: Location::Server,
        parameters,
        returns,
        ..Default::default()
    };
    Ok((definition, Arc::new(validator)))
}

fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// An `inputSchema` whose definitions each use the next twice, `levels` deep.
    fn multiplying(levels: usize) -> serde_json::Map<String, Value> {
        let mut defs = serde_json::Map::new();
        for k in 0..levels {
            let next = json!({ "$ref": format!("#/$defs/D{}", k + 1) });
            defs.insert(format!("D{k}"), json!({ "anyOf": [next.clone(), next] }));
        }
        defs.insert(format!("D{levels}"), json!({ "type": "string" }));
        let schema = json!({ "type": "object", "properties": { "x": { "$ref": "#/$defs/D0" } },
                             "$defs": defs });
        schema.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn a_server_tool_whose_schema_multiplies_is_refused_with_the_reason() {
        let hostile = Tool::new("hostile", "d", multiplying(40));
        let why = definition(&hostile).err().unwrap_or_default();
        assert!(
            why.contains("inputSchema is refused") && why.contains("more than 100000"),
            "{why}"
        );
        let mut output = Tool::new("output", "d", multiplying(0));
        output.output_schema = Some(Arc::new(multiplying(40)));
        let why = definition(&output).err().unwrap_or_default();
        assert!(why.contains("outputSchema is refused"), "{why}");
        // Twelve levels (4,096 copies) are a large schema, not a hostile one.
        assert!(definition(&Tool::new("large", "d", multiplying(12))).is_ok());
    }
}
