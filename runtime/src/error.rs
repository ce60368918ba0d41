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

    pub fn message(&self) -> &str {
        &self.message
    }

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
}

impl CallErrorKind {
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
    pub pointer: String,
    pub message: String,
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

/// A failed call. [`CallError::model_text`] is what to send back to the model as the tool's
/// result; [`CallError::kind`] is for programs.
#[derive(Clone, Debug, PartialEq)]
pub struct CallError {
    kind: CallErrorKind,
    tool: String,
    message: String,
    violations: Vec<Violation>,
    code: Option<String>,
    /// Internal detail (a panic payload, output violations) kept for logs, not shown to the model.
    detail: Option<String>,
}

impl CallError {
    pub(crate) fn new(kind: CallErrorKind, tool: &str, message: String) -> CallError {
        CallError {
            kind,
            tool: tool.to_owned(),
            message,
            violations: Vec::new(),
            code: None,
            detail: None,
        }
    }

    pub(crate) fn unknown_tool(tool: &str, known: &[&str]) -> CallError {
        let mut message = format!("There is no tool named `{tool}`.");
        if let Some(close) = toolc::suggest::closest(tool, known.iter().copied()) {
            message.push_str(&format!(" Did you mean `{close}`?"));
        }
        if known.is_empty() {
            message.push_str(" No tools are available.");
        } else {
            message.push_str(&format!(" Available tools: {}.", known.join(", ")));
        }
        CallError::new(CallErrorKind::UnknownTool, tool, message)
    }

    pub(crate) fn client_tool(tool: &str) -> CallError {
        CallError::new(
            CallErrorKind::ClientTool,
            tool,
            format!("The tool `{tool}` runs in the user's client, not on the server, so the server cannot execute it."),
        )
    }

    pub(crate) fn invalid_json(tool: &str, error: &serde_json::Error) -> CallError {
        CallError::new(
            CallErrorKind::InvalidJson,
            tool,
            format!(
                "The arguments for `{tool}` are not valid JSON ({error}). Send the arguments as one JSON object and call the tool again."
            ),
        )
    }

    pub(crate) fn invalid_arguments(tool: &str, violations: Vec<Violation>) -> CallError {
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
        error.violations = violations;
        error
    }

    /// Arguments that passed the schema but not the generated type (a schema feature the typed
    /// mapping is stricter about, e.g. an integer beyond `i64`).
    pub(crate) fn undeserializable(tool: &str, error: &serde_json::Error) -> CallError {
        let mut e = CallError::invalid_arguments(
            tool,
            vec![Violation {
                pointer: String::new(),
                message: error.to_string(),
            }],
        );
        e.detail = Some(format!("deserialization failed: {error}"));
        e
    }

    pub(crate) fn tool_failed(tool: &str, error: ToolError) -> CallError {
        let mut e = CallError::new(
            CallErrorKind::ToolFailed,
            tool,
            format!("The tool `{tool}` failed: {}", error.message),
        );
        e.code = error.code;
        e
    }

    pub(crate) fn panic(tool: &str, payload: String) -> CallError {
        let mut e = CallError::new(
            CallErrorKind::Panic,
            tool,
            format!("The tool `{tool}` crashed with an internal error. Calling it again with the same arguments will probably fail the same way."),
        );
        e.detail = Some(payload);
        e
    }

    pub(crate) fn timeout(tool: &str, after: Duration) -> CallError {
        CallError::new(
            CallErrorKind::Timeout,
            tool,
            format!(
                "The tool `{tool}` did not finish within {} and was stopped.",
                format_duration(after)
            ),
        )
    }

    pub(crate) fn invalid_output(tool: &str, violations: Vec<Violation>) -> CallError {
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
        e.detail = Some(list);
        e.violations = violations;
        e
    }

    pub(crate) fn no_runtime(tool: &str) -> CallError {
        let mut e = CallError::new(
            CallErrorKind::NoRuntime,
            tool,
            format!("The tool `{tool}` could not be run because of a server configuration problem."),
        );
        e.detail = Some(
            "tools with a timeout must be called inside a Tokio runtime with the time driver enabled"
                .into(),
        );
        e
    }

    pub fn kind(&self) -> CallErrorKind {
        self.kind
    }

    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The sentence the model sees.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Schema violations, for [`CallErrorKind::InvalidArguments`] and
    /// [`CallErrorKind::InvalidOutput`].
    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }

    /// The executor's own code, for [`CallErrorKind::ToolFailed`].
    pub fn code(&self) -> Option<&str> {
        self.code.as_deref()
    }

    /// Detail for logs that the model does not see (a panic message, output violations).
    pub fn detail(&self) -> Option<&str> {
        self.detail.as_deref()
    }

    /// The error as the JSON value to return to the model:
    /// `{"error": {"kind", "message", "violations"?, "code"?}}`.
    pub fn to_model_json(&self) -> Value {
        let mut error = json!({ "kind": self.kind.as_str(), "message": self.message });
        if self.kind == CallErrorKind::InvalidArguments && !self.violations.is_empty() {
            error["violations"] = self
                .violations
                .iter()
                .map(|v| json!({ "pointer": v.pointer, "message": v.message }))
                .collect();
        }
        if let Some(code) = &self.code {
            error["code"] = Value::String(code.clone());
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
        write!(f, "{} [{}]", self.message, self.kind)?;
        if let Some(detail) = &self.detail {
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

/// Why a registry could not be built. Every problem is listed, not only the first.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct RegistryError {
    /// Server tools that have no executor.
    pub missing_executors: Vec<String>,
    /// Executors given for client tools (client tools run in the browser and may not have one).
    pub client_executors: Vec<String>,
    /// Executors whose name matches no definition.
    pub unknown_executors: Vec<String>,
    /// Names with more than one executor.
    pub duplicate_executors: Vec<String>,
    /// Names defined more than once.
    pub duplicate_definitions: Vec<String>,
    /// `(tool, problem)` for schemas that could not be compiled into validators.
    pub invalid_schemas: Vec<(String, String)>,
}

impl RegistryError {
    pub fn is_empty(&self) -> bool {
        self.missing_executors.is_empty()
            && self.client_executors.is_empty()
            && self.unknown_executors.is_empty()
            && self.duplicate_executors.is_empty()
            && self.duplicate_definitions.is_empty()
            && self.invalid_schemas.is_empty()
    }

    pub fn problem_count(&self) -> usize {
        self.missing_executors.len()
            + self.client_executors.len()
            + self.unknown_executors.len()
            + self.duplicate_executors.len()
            + self.duplicate_definitions.len()
            + self.invalid_schemas.len()
    }
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.problem_count();
        write!(
            f,
            "the tool registry breaks the location rule ({n} problem{}):",
            if n == 1 { "" } else { "s" }
        )?;
        for name in &self.missing_executors {
            write!(
                f,
                "\n  - server tool `{name}` has no executor: register one for it, or declare it `location: client`"
            )?;
        }
        for name in &self.client_executors {
            write!(
                f,
                "\n  - client tool `{name}` was given an executor: client tools run in the browser; remove the executor, or declare the tool `location: server`"
            )?;
        }
        for name in &self.unknown_executors {
            write!(
                f,
                "\n  - executor `{name}` matches no tool definition: remove it or define the tool"
            )?;
        }
        for name in &self.duplicate_executors {
            write!(
                f,
                "\n  - tool `{name}` was given more than one executor: keep exactly one"
            )?;
        }
        for name in &self.duplicate_definitions {
            write!(f, "\n  - tool `{name}` is defined more than once")?;
        }
        for (name, problem) in &self.invalid_schemas {
            write!(f, "\n  - tool `{name}` has a schema that cannot be compiled: {problem}")?;
        }
        Ok(())
    }
}

impl std::error::Error for RegistryError {}
