//! A remote tool catalog (feature `catalog`): tools discovered over HTTP and executed through
//! the catalog service, behind an authorization gate.
//!
//! - Discovery: `GET {base}/tools` answers
//!   `{"success":true,"data":{"tools":[{"name","description","parameters","requires_auth"}],"count","include_unauthorized"}}`.
//!   The catalog is cached for a TTL (default 300 s) and can be refreshed on demand
//!   ([`CatalogClient::refresh`]). A call of a tool that is not in the cache refreshes once,
//!   then fails.
//!   Discovery is shared by every caller, so it is sent without anyone's credentials; while
//!   one refresh runs, other callers wait for it instead of sending their own.
//! - Execution: `POST {base}/execute` with `{"name","arguments"}` answers
//!   `{"success","data","error":{"message","code","status_code","raw"}}`. Before anything is
//!   sent, the arguments are validated against the catalog's schema, and a `requires_auth` tool
//!   is refused unless the caller gave credentials; the caller's `Authorization` value is
//!   forwarded as is.
//! - Failures (unreachable service, HTTP errors such as 401 or 500, timeouts, envelopes that do
//!   not parse, the service's own errors) are [`CatalogError`]s: [`CatalogError::message`] is
//!   what the model sees, and the code, HTTP status and raw answer are kept for diagnostics.
//! - [`CatalogTools::merge_into`] adds the catalog's tools to a [`RegistryBuilder`] as server
//!   tools whose executors call the service; a name that is already defined is an error.
//!
//! HTTP is reqwest with rustls: `http://` and `https://` catalogs, connections reused, trust
//! roots from the system and `SSL_CERT_FILE` (see the `http` module).
#![warn(missing_docs)]

// The kernel's items at this crate's root, where `toolc-runtime` has them too, so that a path
// reads the same in every crate of the runtime (`crate::Registry`, `crate::dispatch::ToolCall`).
#[allow(unused_imports)]
use toolc_kernel::*;

mod http;

use std::collections::BTreeSet;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use jsonschema::Validator;
use serde_json::{json, Value};

use crate::{
    executor_fn_with_context, CallContext, Location, RegistryBuilder, ToolDefinition, ToolError,
};
use http::{BaseUrl, HttpError, Transport, UrlError};

/// How long a discovered catalog is used before it is fetched again.
pub const DEFAULT_TTL: Duration = Duration::from_secs(300);

/// How long one HTTP exchange with the catalog service may take.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Answers larger than this are refused.
const MAX_BODY: usize = 8 << 20;

/// Messages from the service are cut to this many characters before a model sees them.
const MAX_MESSAGE: usize = 500;

/// Raw answers kept for diagnostics are cut to this many bytes.
const MAX_RAW: usize = 2048;

/// At most this many schema violations are listed.
const MAX_VIOLATIONS: usize = 8;

/// What went wrong, in a stable form for programs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CatalogErrorKind {
    /// The service could not be reached or the connection failed.
    Unreachable,
    /// No complete answer within the timeout.
    Timeout,
    /// The service answered with an HTTP error status and no readable error envelope.
    Http,
    /// The answer is not a valid envelope.
    Malformed,
    /// The service answered `success: false` (its message is passed on).
    Remote,
    /// The tool is not in the catalog, even after a refresh.
    UnknownTool,
    /// The tool requires authorization and the caller has no credentials.
    AuthRequired,
    /// The arguments do not satisfy the catalog's schema; nothing was sent.
    InvalidArguments,
}

impl CatalogErrorKind {
    /// The code a model and logs see when the service gave none.
    pub fn as_str(self) -> &'static str {
        match self {
            CatalogErrorKind::Unreachable => "catalog_unreachable",
            CatalogErrorKind::Timeout => "catalog_timeout",
            CatalogErrorKind::Http => "catalog_http_error",
            CatalogErrorKind::Malformed => "catalog_malformed_envelope",
            CatalogErrorKind::Remote => "catalog_error",
            CatalogErrorKind::UnknownTool => "unknown_tool",
            CatalogErrorKind::AuthRequired => "auth_required",
            CatalogErrorKind::InvalidArguments => "invalid_arguments",
        }
    }
}

/// A failed discovery or execution.
#[derive(Clone, Debug, PartialEq)]
pub struct CatalogError {
    kind: CatalogErrorKind,
    message: String,
    code: Option<String>,
    status: Option<u16>,
    raw: Option<String>,
}

impl CatalogError {
    fn new(kind: CatalogErrorKind, message: impl Into<String>) -> CatalogError {
        CatalogError {
            kind,
            message: message.into(),
            code: None,
            status: None,
            raw: None,
        }
    }

    fn with_status(mut self, status: u16) -> CatalogError {
        self.status = Some(status);
        self
    }

    fn with_raw(mut self, raw: &[u8]) -> CatalogError {
        let cut = &raw[..raw.len().min(MAX_RAW)];
        self.raw = Some(String::from_utf8_lossy(cut).into_owned());
        self
    }

    /// What went wrong, in a stable form for programs.
    pub fn kind(&self) -> CatalogErrorKind {
        self.kind
    }

    /// The text for the model.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The service's error code, or the kind's code ([`CatalogErrorKind::as_str`]).
    pub fn code(&self) -> &str {
        self.code.as_deref().unwrap_or(self.kind.as_str())
    }

    /// The HTTP status: the response's, or the envelope's `status_code` when it gave one.
    pub fn status(&self) -> Option<u16> {
        self.status
    }

    /// The envelope's `raw` member or the start of the raw answer, for logs; never shown to
    /// the model.
    pub fn raw(&self) -> Option<&str> {
        self.raw.as_deref()
    }

    /// The error as an executor's [`ToolError`]: the message and the code.
    pub fn to_tool_error(&self) -> ToolError {
        ToolError::new(self.message.clone()).with_code(self.code())
    }
}

impl fmt::Display for CatalogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} [{}", self.message, self.code())?;
        if let Some(status) = self.status {
            write!(f, ", HTTP {status}")?;
        }
        f.write_str("]")
    }
}

impl std::error::Error for CatalogError {}

/// One tool of the catalog.
#[derive(Clone)]
pub struct CatalogTool {
    /// The tool's name, checked to be a valid tool name.
    pub name: String,
    /// What the tool does, for the model; empty when the catalog gave none.
    pub description: String,
    /// The JSON Schema of the arguments; arguments are checked against it before anything is sent.
    pub parameters: Value,
    /// Whether the tool needs the caller's credentials; a call without them is refused before
    /// anything is sent.
    pub requires_auth: bool,
    validator: Arc<Validator>,
}

impl fmt::Debug for CatalogTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CatalogTool")
            .field("name", &self.name)
            .field("requires_auth", &self.requires_auth)
            .finish()
    }
}

impl CatalogTool {
    /// The tool as a server tool definition.
    pub fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: self.name.clone(),
            description: self.description.clone(),
            location: Location::Server,
            parameters: self.parameters.clone(),
            // No timeout: the client's own bounds every execution, with its own error code.
            ..Default::default()
        }
    }

    fn check(&self, arguments: &Value) -> Result<(), CatalogError> {
        if self.validator.is_valid(arguments) {
            return Ok(());
        }
        let problems: Vec<String> = self
            .validator
            .iter_errors(arguments)
            .take(MAX_VIOLATIONS)
            .map(|e| {
                let at = e.instance_path().as_str().to_owned();
                let at = if at.is_empty() { "(root)".into() } else { at };
                format!("{at}: {e}")
            })
            .collect();
        Err(CatalogError::new(
            CatalogErrorKind::InvalidArguments,
            format!(
                "The arguments for `{}` do not match its parameter schema: {}. Fix the arguments and call the tool again.",
                self.name,
                problems.join("; ")
            ),
        ))
    }
}

/// One discovered catalog.
#[derive(Debug)]
pub struct Catalog {
    tools: Vec<CatalogTool>,
    /// Entries that could not be used (bad name, bad schema, duplicate), with the reason.
    skipped: Vec<(String, String)>,
    count: Option<u64>,
    include_unauthorized: Option<bool>,
    fetched: Instant,
}

impl Catalog {
    /// The usable tools, in catalog order.
    pub fn tools(&self) -> &[CatalogTool] {
        &self.tools
    }

    /// The tool named `name`; `None` when the catalog has no such usable tool.
    pub fn tool(&self, name: &str) -> Option<&CatalogTool> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// Entries that could not be used (an invalid name or field, listed twice), as
    /// `(name, reason)`; the name is empty when the entry had none.
    pub fn skipped(&self) -> &[(String, String)] {
        &self.skipped
    }

    /// The envelope's `count`, as the service sent it.
    pub fn count(&self) -> Option<u64> {
        self.count
    }

    /// The envelope's `include_unauthorized`, as the service sent it.
    pub fn include_unauthorized(&self) -> Option<bool> {
        self.include_unauthorized
    }

    /// When the catalog was fetched; it is fetched again once older than the client's TTL.
    pub fn fetched_at(&self) -> Instant {
        self.fetched
    }
}

/// Counters of one client.
#[derive(Debug, Default)]
pub struct CatalogStats {
    /// `GET /tools` requests sent.
    pub discoveries: AtomicU64,
    /// `POST /execute` requests sent.
    pub executions: AtomicU64,
    /// Calls refused before anything was sent (unknown tool, no credentials, bad arguments).
    pub refused: AtomicU64,
    /// Discoveries or executions that failed.
    pub failures: AtomicU64,
}

/// Receives every [`CatalogError`] (for logging its code, status and raw answer).
pub type CatalogObserver = Arc<dyn Fn(&CatalogError) + Send + Sync>;

/// The catalog client. Share it behind an `Arc`; every method takes `&self`.
pub struct CatalogClient {
    transport: Transport,
    ttl: Duration,
    timeout: Duration,
    /// The current catalog. Refreshes hold the lock, so concurrent callers wait for one fetch
    /// instead of each sending their own.
    cache: tokio::sync::Mutex<Option<Arc<Catalog>>>,
    stats: CatalogStats,
    observer: Option<CatalogObserver>,
}

impl fmt::Debug for CatalogClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CatalogClient")
            .field("base", &self.transport.base().to_string())
            .field("ttl", &self.ttl)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl CatalogClient {
    /// A client for the catalog at `base` (`http(s)://HOST[:PORT][/PATH]`).
    pub fn new(base: &str) -> Result<CatalogClient, UrlError> {
        Ok(CatalogClient {
            transport: Transport::new(BaseUrl::parse(base)?)?,
            ttl: DEFAULT_TTL,
            timeout: DEFAULT_TIMEOUT,
            cache: tokio::sync::Mutex::new(None),
            stats: CatalogStats::default(),
            observer: None,
        })
    }

    /// How long a discovered catalog is used before it is fetched again (default [`DEFAULT_TTL`]).
    pub fn with_ttl(mut self, ttl: Duration) -> CatalogClient {
        self.ttl = ttl;
        self
    }

    /// How long one HTTP exchange may take before it fails as a timeout (default
    /// [`DEFAULT_TIMEOUT`]).
    pub fn with_timeout(mut self, timeout: Duration) -> CatalogClient {
        self.timeout = timeout;
        self
    }

    /// Calls `observer` with every failure and refusal, e.g. to log its code, status and raw
    /// answer.
    pub fn with_observer(mut self, observer: CatalogObserver) -> CatalogClient {
        self.observer = Some(observer);
        self
    }

    /// The catalog's base URL, without a trailing `/`.
    pub fn base_url(&self) -> String {
        self.transport.base().to_string()
    }

    /// The client's counters.
    pub fn stats(&self) -> &CatalogStats {
        &self.stats
    }

    /// The cached catalog, fetched first when there is none or it is older than the TTL.
    pub async fn catalog(&self) -> Result<Arc<Catalog>, CatalogError> {
        self.current().await.map(|(catalog, _)| catalog)
    }

    /// Fetches the catalog now, whatever the cache holds. On failure the cache is unchanged.
    pub async fn refresh(&self) -> Result<Arc<Catalog>, CatalogError> {
        let mut cache = self.cache.lock().await;
        let fresh = Arc::new(self.fetch().await.map_err(|e| self.failed(e))?);
        *cache = Some(fresh.clone());
        Ok(fresh)
    }

    /// The catalog, and whether this call fetched it.
    async fn current(&self) -> Result<(Arc<Catalog>, bool), CatalogError> {
        let mut cache = self.cache.lock().await;
        if let Some(catalog) = cache.as_ref() {
            if catalog.fetched.elapsed() < self.ttl {
                return Ok((catalog.clone(), false));
            }
        }
        let fresh = Arc::new(self.fetch().await.map_err(|e| self.failed(e))?);
        *cache = Some(fresh.clone());
        Ok((fresh, true))
    }

    fn failed(&self, error: CatalogError) -> CatalogError {
        self.stats.failures.fetch_add(1, Ordering::Relaxed);
        if let Some(observer) = &self.observer {
            observer(&error);
        }
        error
    }

    fn refused(&self, error: CatalogError) -> CatalogError {
        self.stats.refused.fetch_add(1, Ordering::Relaxed);
        if let Some(observer) = &self.observer {
            observer(&error);
        }
        error
    }

    async fn exchange(
        &self,
        method: &str,
        suffix: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Result<http::Response, CatalogError> {
        let sent = self.transport.send(method, suffix, headers, body, MAX_BODY);
        match tokio::time::timeout(self.timeout, sent).await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(HttpError::Connect(e))) | Ok(Err(HttpError::Io(e))) => Err(CatalogError::new(
                CatalogErrorKind::Unreachable,
                "The tool catalog service could not be reached. Tell the user the tool is unavailable right now.",
            )
            .with_raw(e.as_bytes())),
            Ok(Err(e @ (HttpError::Protocol(_) | HttpError::TooLarge(_)))) => {
                Err(CatalogError::new(
                    CatalogErrorKind::Malformed,
                    "The tool catalog service sent an answer that could not be read.",
                )
                .with_raw(e.to_string().as_bytes()))
            }
            Err(_) => Err(CatalogError::new(
                CatalogErrorKind::Timeout,
                format!(
                    "The tool catalog service did not answer within {} ms. Tell the user the tool is slow or unavailable right now.",
                    self.timeout.as_millis()
                ),
            )),
        }
    }

    async fn fetch(&self) -> Result<Catalog, CatalogError> {
        self.stats.discoveries.fetch_add(1, Ordering::Relaxed);
        let response = self.exchange("GET", "/tools", &[], None).await?;
        let data = envelope_data(&response)?;
        let tools = data.get("tools").and_then(Value::as_array).ok_or_else(|| {
            malformed("the discovery answer has no `data.tools` array", &response)
        })?;
        let mut catalog = Catalog {
            tools: Vec::with_capacity(tools.len()),
            skipped: Vec::new(),
            count: data.get("count").and_then(Value::as_u64),
            include_unauthorized: data.get("include_unauthorized").and_then(Value::as_bool),
            fetched: Instant::now(),
        };
        let mut names = BTreeSet::new();
        for entry in tools {
            match read_tool(entry) {
                Ok(tool) if !names.insert(tool.name.clone()) => catalog
                    .skipped
                    .push((tool.name, "listed more than once".into())),
                Ok(tool) => catalog.tools.push(tool),
                Err((name, reason)) => catalog.skipped.push((name, reason)),
            }
        }
        Ok(catalog)
    }

    /// Executes a catalog tool. `authorization` is the caller's `Authorization` header value
    /// (e.g. `Bearer ...`), forwarded as is; a `requires_auth` tool is refused without it.
    /// Nothing is sent for an unknown tool or invalid arguments.
    pub async fn execute(
        &self,
        name: &str,
        arguments: &Value,
        authorization: Option<&str>,
    ) -> Result<Value, CatalogError> {
        let (mut catalog, fetched) = self.current().await?;
        if catalog.tool(name).is_none() && !fetched {
            // The catalog may have gained the tool since it was cached.
            catalog = self.refresh().await?;
        }
        let Some(tool) = catalog.tool(name) else {
            let known: Vec<&str> = catalog.tools.iter().map(|t| t.name.as_str()).collect();
            let mut message = format!("There is no tool named `{name}` in the catalog.");
            if let Some(close) = toolc_core::suggest::closest(name, known.iter().copied()) {
                message.push_str(&format!(" Did you mean `{close}`?"));
            }
            return Err(self.refused(CatalogError::new(CatalogErrorKind::UnknownTool, message)));
        };
        let authorization = authorization.filter(|a| !a.trim().is_empty());
        if tool.requires_auth && authorization.is_none() {
            return Err(self.refused(CatalogError::new(
                CatalogErrorKind::AuthRequired,
                format!(
                    "The tool `{name}` requires authorization and the user is not signed in. Tell the user they need to sign in first."
                ),
            )));
        }
        tool.check(arguments).map_err(|e| self.refused(e))?;
        let body = json!({ "name": name, "arguments": arguments }).to_string();
        let mut headers = Vec::new();
        if let Some(value) = authorization {
            headers.push(("Authorization", value));
        }
        self.stats.executions.fetch_add(1, Ordering::Relaxed);
        let response = self
            .exchange("POST", "/execute", &headers, Some(body.as_bytes()))
            .await
            .map_err(|e| self.failed(e))?;
        envelope_data(&response).map_err(|e| self.failed(e))
    }

    /// Discovers the catalog (from the cache when fresh) as tools to merge into a registry.
    pub async fn server_tools(self: &Arc<Self>) -> Result<CatalogTools, CatalogError> {
        Ok(CatalogTools {
            client: self.clone(),
            catalog: self.catalog().await?,
        })
    }
}

fn malformed(what: &str, response: &http::Response) -> CatalogError {
    CatalogError::new(
        CatalogErrorKind::Malformed,
        format!("The tool catalog service sent an answer that could not be read ({what})."),
    )
    .with_status(response.status)
    .with_raw(&response.body)
}

/// Reads an envelope: `data` on success, a [`CatalogError`] otherwise.
fn envelope_data(response: &http::Response) -> Result<Value, CatalogError> {
    let status = response.status;
    let parsed: Option<Value> = serde_json::from_slice(&response.body).ok();
    let envelope = parsed.as_ref().and_then(Value::as_object);
    let success = envelope
        .and_then(|e| e.get("success"))
        .and_then(Value::as_bool);
    match (envelope, success) {
        (Some(e), Some(true)) if (200..300).contains(&status) => {
            Ok(e.get("data").cloned().unwrap_or(Value::Null))
        }
        (Some(e), Some(_)) => Err(remote_error(e.get("error"), status, response)),
        _ if !(200..300).contains(&status) => Err(http_error(status, response)),
        _ => Err(malformed(
            "expected a JSON object with a boolean `success`",
            response,
        )),
    }
}

/// `success: false` (or an error status with an envelope): the service's message goes to the
/// model, its code, status and raw detail to diagnostics.
fn remote_error(error: Option<&Value>, status: u16, response: &http::Response) -> CatalogError {
    let message = error
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .map(|m| cut(m.trim(), MAX_MESSAGE))
        .filter(|m| !m.is_empty());
    let Some(message) = message else {
        if !(200..300).contains(&status) {
            return http_error(status, response);
        }
        return malformed(
            "`success` is false but there is no `error.message`",
            response,
        );
    };
    let code = error
        .and_then(|e| e.get("code"))
        .and_then(|c| match c {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        })
        .filter(|c| !c.is_empty() && c.len() <= 100);
    let envelope_status = error
        .and_then(|e| e.get("status_code"))
        .and_then(Value::as_u64)
        .and_then(|s| u16::try_from(s).ok());
    let raw = error.and_then(|e| e.get("raw")).filter(|r| !r.is_null());
    let mut e = CatalogError::new(CatalogErrorKind::Remote, message)
        .with_status(envelope_status.unwrap_or(status));
    e.code = code;
    e.raw = match raw {
        Some(Value::String(s)) => Some(cut(s, MAX_RAW)),
        Some(other) => Some(cut(&other.to_string(), MAX_RAW)),
        None => None,
    };
    e
}

fn http_error(status: u16, response: &http::Response) -> CatalogError {
    let message = match status {
        401 | 403 => format!(
            "The tool catalog service refused the request (HTTP {status}): the user's credentials are missing, expired or not allowed to use this tool. Tell the user they may need to sign in again."
        ),
        404 => "The tool catalog service does not know this request (HTTP 404).".to_owned(),
        429 => "The tool catalog service is rate limiting requests (HTTP 429); try again later.".to_owned(),
        s if s >= 500 => format!(
            "The tool catalog service failed (HTTP {s}). Tell the user the tool is unavailable right now."
        ),
        s => format!("The tool catalog service answered HTTP {s}."),
    };
    let mut e = CatalogError::new(CatalogErrorKind::Http, message)
        .with_status(status)
        .with_raw(&response.body);
    if status == 401 {
        e.code = Some("unauthorized".into());
    } else if status == 403 {
        e.code = Some("forbidden".into());
    }
    e
}

fn cut(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

/// Reads one entry of `data.tools`; `Err((name, reason))` for an entry that cannot be used.
fn read_tool(entry: &Value) -> Result<CatalogTool, (String, String)> {
    let name = entry
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let fail = |reason: &str| Err((name.clone(), reason.to_owned()));
    if !valid_name(&name) {
        return fail("the name must match ^[A-Za-z_][A-Za-z0-9_-]{0,63}$");
    }
    let description = match entry.get("description") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => return fail("`description` is not a string"),
    };
    let requires_auth = match entry.get("requires_auth") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return fail("`requires_auth` is not a boolean"),
    };
    let parameters = match entry.get("parameters") {
        None | Some(Value::Null) => ToolDefinition::empty_parameters(),
        Some(p @ Value::Object(o)) => {
            let root_type = o.get("type");
            if root_type.is_some() && root_type != Some(&Value::String("object".into())) {
                return fail("`parameters` must be an object schema");
            }
            p.clone()
        }
        Some(_) => return fail("`parameters` is not a JSON Schema object"),
    };
    if let Err(reason) = toolc_core::schema_util::check_written_out_size(&parameters) {
        return Err((name, format!("`parameters` is refused: {reason}")));
    }
    let validator = match jsonschema::draft202012::new(&parameters) {
        Ok(v) => v,
        Err(e) => return Err((name, format!("`parameters` is not a valid schema: {e}"))),
    };
    Ok(CatalogTool {
        name,
        description,
        parameters,
        requires_auth,
        validator: Arc::new(validator),
    })
}

fn valid_name(name: &str) -> bool {
    toolc_core::manifest::is_valid_name(name)
}

/// A catalog's tools, ready to be merged into a registry.
#[derive(Debug, Clone)]
pub struct CatalogTools {
    client: Arc<CatalogClient>,
    catalog: Arc<Catalog>,
}

/// A catalog tool whose name is already defined.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NameClash {
    /// The clashing names, in catalog order.
    pub names: Vec<String>,
}

impl fmt::Display for NameClash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the remote catalog defines tools that are already defined locally: {}",
            self.names.join(", ")
        )
    }
}

impl std::error::Error for NameClash {}

impl CatalogTools {
    /// The catalog the tools come from.
    pub fn catalog(&self) -> &Arc<Catalog> {
        &self.catalog
    }

    /// Server tool definitions, in catalog order.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.catalog
            .tools
            .iter()
            .map(CatalogTool::definition)
            .collect()
    }

    /// Whether the catalog marks `name` as requiring authorization (for the marker catalog's
    /// instructions).
    pub fn requires_auth(&self, name: &str) -> bool {
        self.catalog.tool(name).is_some_and(|t| t.requires_auth)
    }

    /// Adds every catalog tool to `builder` as a server tool executed through the service.
    ///
    /// Credentials are the caller's: a call in a session with a [`crate::Principal`] forwards
    /// that principal's credential (`Authorization: Bearer CREDENTIAL`), and nothing when it
    /// has none, so one user's session never borrows another's rights. `authorization` (a full
    /// header value) is used only for calls without a principal (a process acting for itself);
    /// without either, `requires_auth` tools are refused. `local` are the definitions already in the builder: a catalog tool with one of
    /// their names is an error, and nothing is added.
    pub fn merge_into<'a>(
        &self,
        builder: RegistryBuilder,
        local: impl IntoIterator<Item = &'a ToolDefinition>,
        authorization: Option<String>,
    ) -> Result<RegistryBuilder, NameClash> {
        let local: BTreeSet<&str> = local.into_iter().map(|d| d.name.as_str()).collect();
        let clashes: Vec<String> = self
            .catalog
            .tools
            .iter()
            .filter(|t| local.contains(t.name.as_str()))
            .map(|t| t.name.clone())
            .collect();
        if !clashes.is_empty() {
            return Err(NameClash { names: clashes });
        }
        let authorization: Option<Arc<str>> = authorization.map(Arc::from);
        let mut builder = builder;
        for tool in &self.catalog.tools {
            let client = self.client.clone();
            let name: Arc<str> = Arc::from(tool.name.as_str());
            let authorization = authorization.clone();
            builder = builder.definition(tool.definition()).executor(
                tool.name.clone(),
                executor_fn_with_context(move |ctx: CallContext, arguments: Value| {
                    let client = client.clone();
                    let name = name.clone();
                    let authorization = authorization_for(&ctx, authorization.as_ref());
                    async move {
                        client
                            .execute(&name, &arguments, authorization.as_deref())
                            .await
                            .map_err(|e| e.to_tool_error())
                    }
                }),
            );
        }
        Ok(builder)
    }
}

/// The `Authorization` value a catalog call sends: the session principal's credential
/// (`Bearer CREDENTIAL`) when the call has a principal, so that one user's session never
/// borrows another's rights; otherwise `fallback` (a process acting for itself).
fn authorization_for(ctx: &CallContext, fallback: Option<&Arc<str>>) -> Option<Arc<str>> {
    match ctx.principal() {
        // A credential that could break out of its header line is not sent.
        Some(principal) => principal
            .credential()
            .filter(|c| !c.is_empty() && !c.chars().any(char::is_control))
            .map(|c| Arc::<str>::from(format!("Bearer {c}"))),
        None => fallback.cloned(),
    }
}

/// A catalog that sessions follow while they run (`SessionConfig::live_tools`): a call of a
/// tool that joined the catalog after the session started runs (the client refreshes once on
/// a miss), a tool that left answers with the catalog's "no tool named" error, and every
/// [`CatalogClient`] TTL the catalog is fetched again ([`LiveCatalog::spawn_refresher`]) so that
/// sessions declare the new set to the model at their next safe point.
pub struct LiveCatalog {
    client: Arc<CatalogClient>,
    authorization: Option<Arc<str>>,
    state: Arc<std::sync::Mutex<LiveState>>,
}

struct LiveState {
    generation: u64,
    definitions: Arc<Vec<ToolDefinition>>,
    /// Every name the catalog has had: their declarations are the catalog's to replace.
    names: BTreeSet<String>,
    /// The tools that require authorization now.
    requires_auth: BTreeSet<String>,
}

impl fmt::Debug for LiveCatalog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        f.debug_struct("LiveCatalog")
            .field("client", &self.client)
            .field("generation", &state.generation)
            .field("tools", &state.definitions.len())
            .finish()
    }
}

impl LiveCatalog {
    /// Follows `tools` (discovered with [`CatalogClient::server_tools`]); `authorization` is
    /// sent for calls without a principal, as in [`CatalogTools::merge_into`].
    pub fn new(tools: &CatalogTools, authorization: Option<String>) -> Arc<LiveCatalog> {
        let live = LiveCatalog {
            client: tools.client.clone(),
            authorization: authorization.map(Arc::from),
            state: Arc::new(std::sync::Mutex::new(LiveState {
                generation: 0,
                definitions: Arc::new(Vec::new()),
                names: BTreeSet::new(),
                requires_auth: BTreeSet::new(),
            })),
        };
        observe(&live.state, &tools.catalog);
        Arc::new(live)
    }

    /// Fetches the catalog again every TTL, until the last `Arc` of this catalog is dropped.
    /// A failed fetch keeps the tools as they were.
    pub fn spawn_refresher(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let weak = Arc::downgrade(self);
        let ttl = self.client.ttl.max(Duration::from_millis(10));
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(ttl).await;
                let Some(live) = weak.upgrade() else {
                    return;
                };
                if let Ok(catalog) = live.client.refresh().await {
                    observe(&live.state, &catalog);
                }
            }
        })
    }
}

/// Takes in a fetched catalog: a new generation when its declarations differ.
fn observe(state: &std::sync::Mutex<LiveState>, catalog: &Catalog) {
    let definitions: Vec<ToolDefinition> = catalog.tools.iter().map(|t| t.definition()).collect();
    let mut state = state.lock().unwrap_or_else(|e| e.into_inner());
    state
        .names
        .extend(catalog.tools.iter().map(|t| t.name.clone()));
    state.requires_auth = catalog
        .tools
        .iter()
        .filter(|t| t.requires_auth)
        .map(|t| t.name.clone())
        .collect();
    if *state.definitions != definitions {
        state.definitions = Arc::new(definitions);
        state.generation += 1;
    }
}

impl crate::live::LiveTools for LiveCatalog {
    fn current(&self) -> (u64, Arc<Vec<ToolDefinition>>) {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        (state.generation, state.definitions.clone())
    }

    fn is_live(&self, name: &str) -> bool {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.names.contains(name)
    }

    fn requires_auth(&self, name: &str) -> bool {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.requires_auth.contains(name)
    }

    fn call(&self, ctx: CallContext, name: &str, arguments: Value) -> crate::ToolFuture {
        let authorization = authorization_for(&ctx, self.authorization.as_ref());
        let client = self.client.clone();
        let name = name.to_owned();
        let state = self.state.clone();
        Box::pin(async move {
            let result = client
                .execute(&name, &arguments, authorization.as_deref())
                .await;
            // A miss refreshed the client's catalog: take in what it found.
            if let Ok(catalog) = client.catalog().await {
                observe(&state, &catalog);
            }
            result.map_err(|e| e.to_tool_error())
        })
    }
}
