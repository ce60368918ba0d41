//! Errors of the runtime. Every call failure is a [`CallError`] with a stable machine-readable
//! [`CallErrorKind`] for programs and a text a model can read and act on; registry construction
//! failures are one [`RegistryError`] that lists every problem at once.

use std::fmt;
use std::time::Duration;

use serde_json::{json, Value};

/// What an executor returns when its tool fails: a message for the model and, optionally, a stable
/// code for programs. Like `anyhow::Error` it deliberately does not implement `std::error::Error`,
/// so that `?` converts any error into it.
pub struct ToolError {
    message: String,
    code: Option<String>,
}

impl ToolError {
    /// A failure with `message`, the text the model reads, and no code.
    pub fn new(message: impl Into<String>) -> ToolError {
        ToolError {
            message: message.into(),
            code: None,
        }
    }

    /// A stable code for programs (e.g. `not_found`); the model sees it too.
    pub fn with_code(mut self, code: impl Into<String>) -> ToolError {
        self.code = Some(code.into());
        self
    }

    /// The message for the model, without the code.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The stable code, if one was set with [`ToolError::with_code`].
    pub fn code(&self) -> Option<&str> {
        self.code.as_deref()
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for ToolError {
    fn from(error: E) -> ToolError {
        ToolError::new(error.to_string())
    }
}

impl fmt::Debug for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolError")
            .field("message", &self.message)
            .field("code", &self.code)
            .finish()
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.code {
            Some(code) => write!(f, "{} ({code})", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// Why a call failed. The string forms ([`CallErrorKind::as_str`]) are stable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CallErrorKind {
    /// No tool has this name.
    UnknownTool,
    /// The tool exists but runs on the client; the server cannot execute it.
    ClientTool,
    /// The arguments are not a JSON document.
    InvalidJson,
    /// The arguments are JSON but do not satisfy the tool's `parameters` schema.
    InvalidArguments,
    /// The executor returned an error.
    ToolFailed,
    /// The executor panicked.
    Panic,
    /// The executor did not finish within the tool's timeout.
    Timeout,
    /// The executor's result does not satisfy the tool's `returns` schema.
    InvalidOutput,
    /// The tool has a timeout but the call did not run inside a Tokio runtime with timers.
    NoRuntime,
    /// The tool needs approval and did not get it (declined, no answer in time, or nobody to
    /// ask, or a direct registry call without an [`crate::ApprovalGrant`]); it did not run. The
    /// code says which: `approval_denied`, `approval_timeout`, `approval_unavailable`,
    /// `approval_required`.
    NotApproved,
    /// The call was cancelled before it finished (code `interrupted`: the user interrupted the
    /// response that made it; `server_restarting`: a relay's drain reached its deadline).
    Cancelled,
    /// The call repeats an earlier one (same tool, same arguments, within the tool's
    /// `duplicate_window`) and the tool's `on_duplicate` is `refuse`: it did not run (code
    /// `duplicate_call`).
    Duplicate,
    /// The tool's `rate_limit` allows no more calls now: it did not run (code `rate_limited`;
    /// [`CallError::retry_after`] says when it may).
    RateLimited,
}

impl CallErrorKind {
    /// The stable snake_case name of the kind, e.g. `invalid_arguments`.
    pub fn as_str(self) -> &'static str {
        match self {
            CallErrorKind::UnknownTool => "unknown_tool",
            CallErrorKind::ClientTool => "client_tool",
            CallErrorKind::InvalidJson => "invalid_json",
            CallErrorKind::InvalidArguments => "invalid_arguments",
            CallErrorKind::ToolFailed => "tool_failed",
            CallErrorKind::Panic => "panic",
            CallErrorKind::Timeout => "timeout",
            CallErrorKind::InvalidOutput => "invalid_output",
            CallErrorKind::NoRuntime => "no_runtime",
            CallErrorKind::NotApproved => "not_approved",
            CallErrorKind::Cancelled => "cancelled",
            CallErrorKind::Duplicate => "duplicate",
            CallErrorKind::RateLimited => "rate_limited",
        }
    }

    /// Whether the model caused the failure and can fix it by calling again differently.
    pub fn is_model_error(self) -> bool {
        matches!(
            self,
            CallErrorKind::UnknownTool
                | CallErrorKind::ClientTool
                | CallErrorKind::InvalidJson
                | CallErrorKind::InvalidArguments
        )
    }
}

impl fmt::Display for CallErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One schema violation: where in the instance (a JSON pointer, `""` for the root) and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Where the violation is: a JSON pointer into the instance, `""` for the root.
    pub pointer: String,
    /// What is wrong there, in words.
    pub message: String,
    /// The values the schema allows there, when it lists them (`enum`, `const`): the model
    /// can pick one instead of guessing again.
    pub valid: Option<Vec<Value>>,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.pointer.is_empty() {
            "(root)"
        } else {
            &self.pointer
        };
        write!(f, "{at}: {}", self.message)
    }
}

/// When a call refused because its rate limit could not be checked
/// ([`CallError::rate_limit_unavailable`]) may be tried again.
pub const LIMITS_UNAVAILABLE_RETRY_AFTER: Duration = Duration::from_secs(15);

/// A failed call. [`CallError::model_text`] is what to send back to the model as the tool's
/// result; [`CallError::kind`] is for programs.
///
/// Boxed, so that `Result<_, CallError>` stays one pointer wide on the success path.
#[derive(Clone, Debug, PartialEq)]
pub struct CallError(Box<Inner>);

#[derive(Clone, Debug, PartialEq)]
struct Inner {
    kind: CallErrorKind,
    tool: String,
    message: String,
    violations: Vec<Violation>,
    code: Option<String>,
    /// Internal detail (a panic payload, output violations) kept for logs, not shown to the model.
    detail: Option<String>,
    /// When the same call may succeed (a rate limit's next free slot).
    retry_after: Option<Duration>,
}

impl CallError {
    /// An error of `kind` in a call of `tool`, with the message the model reads.
    pub fn new(kind: CallErrorKind, tool: &str, message: String) -> CallError {
        CallError(Box::new(Inner {
            kind,
            tool: tool.to_owned(),
            message,
            violations: Vec::new(),
            code: None,
            detail: None,
            retry_after: None,
        }))
    }

    /// A call of a tool there is none of (or that the conversation does not offer); `known` are the tools there are.
    pub fn unknown_tool(tool: &str, known: &[&str]) -> CallError {
        let mut message = format!("There is no tool named `{tool}`.");
        if let Some(close) = toolc_core::suggest::closest(tool, known.iter().copied()) {
            message.push_str(&format!(" Did you mean `{close}`?"));
        }
        if known.is_empty() {
            message.push_str(" No tools are available.");
        } else {
            message.push_str(&format!(" Available tools: {}.", known.join(", ")));
        }
        CallError::new(CallErrorKind::UnknownTool, tool, message)
    }

    /// A client tool called where only server tools run.
    pub fn client_tool(tool: &str) -> CallError {
        CallError::new(
            CallErrorKind::ClientTool,
            tool,
            format!("The tool `{tool}` runs in the user's client, not on the server, so the server cannot execute it."),
        )
    }

    /// Arguments that are not JSON.
    pub fn invalid_json(tool: &str, error: &serde_json::Error) -> CallError {
        CallError::new(
            CallErrorKind::InvalidJson,
            tool,
            format!(
                "The arguments for `{tool}` are not valid JSON ({error}). Send the arguments as one JSON object and call the tool again."
            ),
        )
    }

    /// Arguments that break the tool's `parameters` schema.
    pub fn invalid_arguments(tool: &str, violations: Vec<Violation>) -> CallError {
        let list = violations
            .iter()
            .map(Violation::to_string)
            .collect::<Vec<_>>()
            .join("; ");
        let mut error = CallError::new(
            CallErrorKind::InvalidArguments,
            tool,
            format!(
                "The arguments for `{tool}` do not match its parameter schema: {list}. Fix the arguments and call the tool again."
            ),
        );
        error.0.violations = violations;
        error
    }

    /// Arguments that passed the schema but not the generated type (a schema feature the typed
    /// mapping is stricter about, e.g. an integer beyond `i64`).
    pub fn undeserializable(tool: &str, error: &serde_json::Error) -> CallError {
        let mut e = CallError::invalid_arguments(
            tool,
            vec![Violation {
                pointer: String::new(),
                message: error.to_string(),
                valid: None,
            }],
        );
        e.0.detail = Some(format!("deserialization failed: {error}"));
        e
    }

    /// The executor (or the client) reported a failure.
    pub fn tool_failed(tool: &str, error: ToolError) -> CallError {
        let mut e = CallError::new(
            CallErrorKind::ToolFailed,
            tool,
            format!("The tool `{tool}` failed: {}", error.message),
        );
        e.0.code = error.code;
        e
    }

    /// The executor (or the client path) panicked; `payload` is the panic's message.
    pub fn panic(tool: &str, payload: String) -> CallError {
        let mut e = CallError::new(
            CallErrorKind::Panic,
            tool,
            format!("The tool `{tool}` crashed with an internal error. Calling it again with the same arguments will probably fail the same way."),
        );
        e.0.detail = Some(payload);
        e
    }

    /// The call did not end within its deadline.
    pub fn timeout(tool: &str, after: Duration) -> CallError {
        CallError::new(
            CallErrorKind::Timeout,
            tool,
            format!(
                "The tool `{tool}` did not finish within {} and was stopped.",
                format_duration(after)
            ),
        )
    }

    /// A result that breaks the tool's `returns` schema.
    pub fn invalid_output(tool: &str, violations: Vec<Violation>) -> CallError {
        let list = violations
            .iter()
            .map(Violation::to_string)
            .collect::<Vec<_>>()
            .join("; ");
        let mut e = CallError::new(
            CallErrorKind::InvalidOutput,
            tool,
            format!("The tool `{tool}` produced a result that does not match its declared output, so it was withheld."),
        );
        e.0.detail = Some(list);
        e.0.violations = violations;
        e
    }

    /// The user declined the call (with their reason, if they gave one).
    pub fn approval_denied(tool: &str, reason: Option<&str>) -> CallError {
        let message = match reason {
            Some(reason) => format!(
                "The user declined this call of `{tool}`, so it did not run. Their reason: {reason}"
            ),
            None => format!("The user declined this call of `{tool}`, so it did not run."),
        };
        let mut e = CallError::new(CallErrorKind::NotApproved, tool, message);
        e.0.code = Some("approval_denied".into());
        e
    }

    /// The user did not answer the approval question in time.
    pub fn approval_timeout(tool: &str, after: Duration) -> CallError {
        let mut e = CallError::new(
            CallErrorKind::NotApproved,
            tool,
            format!(
                "The user did not approve this call of `{tool}` within {}, so it did not run. Ask them again if it is still wanted.",
                format_duration(after)
            ),
        );
        e.0.code = Some("approval_timeout".into());
        e
    }

    /// Nobody could be asked for the approval the call needs.
    pub fn approval_unavailable(tool: &str, why: &str) -> CallError {
        let mut e = CallError::new(
            CallErrorKind::NotApproved,
            tool,
            format!("`{tool}` needs the user's approval, which could not be asked for, so it did not run."),
        );
        e.0.code = Some("approval_unavailable".into());
        e.0.detail = Some(why.to_owned());
        e
    }

    /// A tool with `approval: required` was called without the user's yes bound to this call
    /// (no [`crate::ApprovalGrant`], or one for another tool, call, arguments, or used already).
    pub fn approval_required(tool: &str, why: &str) -> CallError {
        let mut e = CallError::new(
            CallErrorKind::NotApproved,
            tool,
            format!("`{tool}` needs the user's approval before it runs, and this call does not have it, so it did not run. Ask the user to approve it first."),
        );
        e.0.code = Some("approval_required".into());
        e.0.detail = Some(why.to_owned());
        e
    }

    /// A repeat of call `first` (same tool and arguments, within the window) of a tool whose
    /// `on_duplicate` is `refuse`.
    pub fn duplicate(tool: &str, first: &str, first_still_runs: bool) -> CallError {
        let state = if first_still_runs {
            "is still running"
        } else {
            "already ran"
        };
        let mut e = CallError::new(
            CallErrorKind::Duplicate,
            tool,
            format!(
                "This call of `{tool}` repeats call `{first}` with the same arguments, which {state}, so it was not run again. If the user wants it done a second time, ask them to confirm and call it with arguments that say so."
            ),
        );
        e.0.code = Some("duplicate_call".into());
        e
    }

    /// A repeat of call `first`, which another process of the fleet is still running, of a
    /// tool whose `on_duplicate` is `reuse`: its result did not come within the wait the call
    /// had, so this call was not run. The model may ask again after `retry_after` (by then
    /// the first call's result is kept for the repeat).
    pub fn duplicate_still_running(tool: &str, first: &str, retry_after: Duration) -> CallError {
        let secs = retry_after.as_millis().div_ceil(1000).max(1);
        let mut e = CallError::new(
            CallErrorKind::Duplicate,
            tool,
            format!(
                "This call of `{tool}` repeats call `{first}` with the same arguments, which is still running, so it was not run again. Its result may be asked for again in {secs} s, with the same arguments."
            ),
        );
        e.0.code = Some("duplicate_call".into());
        e.0.retry_after = Some(retry_after);
        e
    }

    /// The call did not run: the tool remembers its calls to answer repeats (`on_duplicate`
    /// `reuse` or `refuse`), the store shared by the fleet that holds them could not be asked
    /// in time, and the store is set to fail closed. `why` is for the operator (in
    /// [`fmt::Display`], not in what the model reads). The model may try again after
    /// [`LIMITS_UNAVAILABLE_RETRY_AFTER`] (code `duplicate_check_unavailable`).
    pub fn duplicate_check_unavailable(tool: &str, why: &str) -> CallError {
        let secs = LIMITS_UNAVAILABLE_RETRY_AFTER.as_secs();
        let mut e = CallError::new(
            CallErrorKind::Duplicate,
            tool,
            format!(
                "`{tool}` must not run twice for one request, and whether it already ran cannot be checked right now (a temporary problem on the server), so this call was not run. It may be tried again in {secs} s; until then, tell the user."
            ),
        );
        e.0.code = Some("duplicate_check_unavailable".into());
        e.0.detail = Some(why.to_owned());
        e.0.retry_after = Some(LIMITS_UNAVAILABLE_RETRY_AFTER);
        e
    }

    /// The call did not run: the tool's `rate_limit` (`limit`) allows no more calls until
    /// `retry_after` has passed.
    pub fn rate_limited(
        tool: &str,
        limit: &toolc_core::RateLimit,
        retry_after: Duration,
    ) -> CallError {
        let secs = retry_after.as_millis().div_ceil(1000).max(1);
        let mut e = CallError::new(
            CallErrorKind::RateLimited,
            tool,
            format!(
                "`{tool}` may be called at most {limit}, and that many calls were already made, so this call was not run. It may be tried again in {secs} s; until then, tell the user and do not call it again."
            ),
        );
        e.0.code = Some("rate_limited".into());
        e.0.retry_after = Some(retry_after);
        e
    }

    /// The call did not run: the tool has a `rate_limit`, and the store that counts its calls
    /// (a shared Redis) could not be asked in time, with the limiter set to fail closed. `why`
    /// is for the operator (it is in [`fmt::Display`], not in what the model reads). The model
    /// may try again after [`LIMITS_UNAVAILABLE_RETRY_AFTER`] (code `rate_limit_unavailable`).
    pub fn rate_limit_unavailable(
        tool: &str,
        limit: &toolc_core::RateLimit,
        why: &str,
    ) -> CallError {
        let secs = LIMITS_UNAVAILABLE_RETRY_AFTER.as_secs();
        let mut e = CallError::new(
            CallErrorKind::RateLimited,
            tool,
            format!(
                "`{tool}` may be called at most {limit}, and its calls cannot be counted right now (a temporary problem on the server), so this call was not run. It may be tried again in {secs} s; until then, tell the user and do not call it again."
            ),
        );
        e.0.code = Some("rate_limit_unavailable".into());
        e.0.retry_after = Some(LIMITS_UNAVAILABLE_RETRY_AFTER);
        e.0.detail = Some(why.to_owned());
        e
    }

    /// Whether the same call, made again unchanged, may succeed: a rate-limited one (after
    /// [`CallError::retry_after`]), one that timed out, or any other with a `retry_after` (a
    /// repeat whose first call another process is still running, a check a store could not
    /// answer). A model error needs other arguments;
    /// a refusal (approval, duplicate) or a handler's failure would only repeat.
    pub fn retryable(&self) -> bool {
        matches!(
            self.0.kind,
            CallErrorKind::RateLimited | CallErrorKind::Timeout
        ) || self.0.retry_after.is_some()
    }

    /// When the same call may succeed, for [`CallErrorKind::RateLimited`].
    pub fn retry_after(&self) -> Option<Duration> {
        self.0.retry_after
    }

    /// The call was cancelled: the user interrupted, or the conversation ended.
    pub fn interrupted(tool: &str) -> CallError {
        let mut e = CallError::new(
            CallErrorKind::Cancelled,
            tool,
            format!(
                "The user interrupted, so this call of `{tool}` was cancelled before it finished."
            ),
        );
        e.0.code = Some("interrupted".into());
        e
    }

    /// The call was cancelled because the server is restarting (a relay's drain reached its
    /// deadline); whether its work completed is unknown.
    pub fn server_restarting(tool: &str) -> CallError {
        let mut e = CallError::new(
            CallErrorKind::Cancelled,
            tool,
            format!(
                "The server restarted before this call of `{tool}` finished; it may not have completed. Call it again if it is still needed."
            ),
        );
        e.0.code = Some("server_restarting".into());
        e
    }

    /// The call could not run: no Tokio runtime to run it on.
    pub fn no_runtime(tool: &str) -> CallError {
        let mut e = CallError::new(
            CallErrorKind::NoRuntime,
            tool,
            format!(
                "The tool `{tool}` could not be run because of a server configuration problem."
            ),
        );
        e.0.detail = Some(
            "tools with a timeout must be called inside a Tokio runtime with the time driver enabled"
                .into(),
        );
        e
    }

    /// Why the call failed.
    pub fn kind(&self) -> CallErrorKind {
        self.0.kind
    }

    /// The name of the tool that was called, as the model gave it.
    pub fn tool(&self) -> &str {
        &self.0.tool
    }

    /// The sentence the model sees.
    pub fn message(&self) -> &str {
        &self.0.message
    }

    /// Schema violations, for [`CallErrorKind::InvalidArguments`] and
    /// [`CallErrorKind::InvalidOutput`].
    pub fn violations(&self) -> &[Violation] {
        &self.0.violations
    }

    /// The executor's own code, for [`CallErrorKind::ToolFailed`].
    pub fn code(&self) -> Option<&str> {
        self.0.code.as_deref()
    }

    /// Detail for logs that the model does not see (a panic message, output violations).
    pub fn detail(&self) -> Option<&str> {
        self.0.detail.as_deref()
    }

    /// The error as the JSON value to return to the model:
    /// `{"error": {"kind", "message", "violations"?, "code"?, "status": "error", "reason",
    /// "retryable", "retry_after_ms"?}}`: each violation is `{"pointer", "message", "valid"?}`
    /// (`valid`: the values allowed there, when the schema lists them); `reason` is the code
    /// (or the kind when there is none), `retryable` whether the same call may succeed made again ([`CallError::retryable`]),
    /// `retry_after_ms` when (a rate-limited call).
    pub fn to_model_json(&self) -> Value {
        let mut error = json!({ "kind": self.0.kind.as_str(), "message": self.0.message });
        if self.0.kind == CallErrorKind::InvalidArguments && !self.0.violations.is_empty() {
            error["violations"] = self
                .0
                .violations
                .iter()
                .map(|v| {
                    let mut violation = json!({ "pointer": v.pointer, "message": v.message });
                    if let Some(valid) = &v.valid {
                        violation["valid"] = Value::Array(valid.clone());
                    }
                    violation
                })
                .collect();
        }
        if let Some(code) = &self.0.code {
            error["code"] = Value::String(code.clone());
        }
        error["status"] = Value::String("error".into());
        error["reason"] = Value::String(
            self.0
                .code
                .clone()
                .unwrap_or_else(|| self.0.kind.as_str().to_owned()),
        );
        error["retryable"] = Value::Bool(self.retryable());
        if let Some(after) = self.0.retry_after {
            error["retry_after_ms"] = json!(after.as_millis() as u64);
        }
        json!({ "error": error })
    }

    /// [`CallError::to_model_json`] as JSON text, ready to be a tool result.
    pub fn model_text(&self) -> String {
        self.to_model_json().to_string()
    }
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} [{}]", self.0.message, self.0.kind)?;
        if let Some(detail) = &self.0.detail {
            write!(f, " ({detail})")?;
        }
        Ok(())
    }
}

impl std::error::Error for CallError {}

fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms % 1000 == 0 {
        format!("{} s", ms / 1000)
    } else {
        format!("{ms} ms")
    }
}

/// One way a set of definitions and executors breaks the location rule (or cannot be built).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// A server tool has no executor.
    MissingExecutor(String),
    /// An executor was given for a client tool (client tools run in the browser).
    ClientExecutor(String),
    /// An executor's name matches no definition.
    UnknownExecutor(String),
    /// A tool was given more than one executor.
    DuplicateExecutor(String),
    /// A name is defined more than once.
    DuplicateDefinition(String),
    /// A schema could not be compiled into a validator.
    InvalidSchema {
        /// The tool whose schema is at fault.
        tool: String,
        /// Why the schema could not be compiled.
        problem: String,
    },
    /// A toolset names a tool that is not defined, or a toolset name is used twice.
    InvalidToolset {
        /// The toolset's name.
        toolset: String,
        /// What is wrong with it.
        problem: String,
    },
}

impl Problem {
    /// The tool (or executor) name the problem is about.
    pub fn tool(&self) -> &str {
        match self {
            Problem::MissingExecutor(n)
            | Problem::ClientExecutor(n)
            | Problem::UnknownExecutor(n)
            | Problem::DuplicateExecutor(n)
            | Problem::DuplicateDefinition(n) => n,
            Problem::InvalidSchema { tool, .. } => tool,
            Problem::InvalidToolset { toolset, .. } => toolset,
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::MissingExecutor(name) => write!(
                f,
                "server tool `{name}` has no executor: register one for it, or declare it `location: client`"
            ),
            Problem::ClientExecutor(name) => write!(
                f,
                "client tool `{name}` was given an executor: client tools run in the browser; remove the executor, or declare the tool `location: server`"
            ),
            Problem::UnknownExecutor(name) => write!(
                f,
                "executor `{name}` matches no tool definition: remove it or define the tool"
            ),
            Problem::DuplicateExecutor(name) => write!(
                f,
                "tool `{name}` was given more than one executor: keep exactly one"
            ),
            Problem::DuplicateDefinition(name) => {
                write!(f, "tool `{name}` is defined more than once")
            }
            Problem::InvalidSchema { tool, problem } => {
                write!(f, "tool `{tool}` has a schema that cannot be compiled: {problem}")
            }
            Problem::InvalidToolset { toolset, problem } => {
                write!(f, "toolset `{toolset}`: {problem}")
            }
        }
    }
}

/// Why a registry could not be built: every problem, not only the first, grouped by kind
/// (missing executors, client executors, unknown executors, duplicates, schemas).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct RegistryError {
    problems: Vec<Problem>,
}

impl RegistryError {
    pub(crate) fn push(&mut self, problem: Problem) {
        if !self.problems.contains(&problem) {
            self.problems.push(problem);
        }
    }

    pub(crate) fn finish(mut self) -> Option<RegistryError> {
        fn rank(p: &Problem) -> u8 {
            match p {
                Problem::MissingExecutor(_) => 0,
                Problem::ClientExecutor(_) => 1,
                Problem::UnknownExecutor(_) => 2,
                Problem::DuplicateExecutor(_) => 3,
                Problem::DuplicateDefinition(_) => 4,
                Problem::InvalidSchema { .. } => 5,
                Problem::InvalidToolset { .. } => 6,
            }
        }
        // Stable: within a kind, definition or registration order.
        self.problems.sort_by_key(rank);
        (!self.problems.is_empty()).then_some(self)
    }

    /// Every problem, grouped by kind; never empty.
    pub fn problems(&self) -> &[Problem] {
        &self.problems
    }

    /// Server tools without an executor.
    pub fn missing_executors(&self) -> Vec<&str> {
        self.names(|p| matches!(p, Problem::MissingExecutor(_)))
    }

    /// Client tools that were given an executor.
    pub fn client_executors(&self) -> Vec<&str> {
        self.names(|p| matches!(p, Problem::ClientExecutor(_)))
    }

    /// Executors that match no definition.
    pub fn unknown_executors(&self) -> Vec<&str> {
        self.names(|p| matches!(p, Problem::UnknownExecutor(_)))
    }

    fn names(&self, keep: impl Fn(&Problem) -> bool) -> Vec<&str> {
        self.problems
            .iter()
            .filter(|p| keep(p))
            .map(Problem::tool)
            .collect()
    }
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.problems.len();
        write!(
            f,
            "the tool registry breaks the location rule ({n} problem{}):",
            if n == 1 { "" } else { "s" }
        )?;
        for problem in &self.problems {
            write!(f, "\n  - {problem}")?;
        }
        Ok(())
    }
}

impl std::error::Error for RegistryError {}
