//! The runtime registry: tool definitions, one executor per server tool, and validators compiled
//! once when the registry is built. It enforces the location rule at construction and routes
//! server calls through parse → validate → deserialize → execute (timeout, panics caught) →
//! check `returns` → serialize.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use jsonschema::Validator;
use serde_json::Value;

use crate::context::{CallContext, StateMap};
use crate::error::{CallError, Problem, RegistryError, Violation};
use crate::executor::{catch_panics, panic_message, Executor};
use crate::tool::Tool;
use crate::toolsets::{ToolSelection, Toolset, UnknownToolset};
use toolc_core::definition::{Location, ToolDefinition};

/// At most this many violations are reported for one value, so that a hostile argument object
/// cannot make the model's error text arbitrarily long.
const MAX_VIOLATIONS: usize = 16;

/// Up to this many tools, a call finds its tool by scanning instead of hashing.
const LINEAR_LOOKUP: usize = 16;

struct Entry {
    def: ToolDefinition,
    parameters: Validator,
    returns: Option<Validator>,
    executor: Option<Arc<dyn Executor>>,
}

/// Definitions plus executors that satisfy the location rule. Cheap to share behind an `Arc`;
/// every method takes `&self`.
pub struct Registry {
    entries: Vec<Entry>,
    index: HashMap<String, usize>,
    /// Application state every executor reads through [`CallContext::state`].
    state: Option<Arc<StateMap>>,
    mcp_list_ttl: Option<std::time::Duration>,
    toolsets: Vec<Toolset>,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.entries.iter().map(|e| {
                (
                    &e.def.name,
                    e.def.location,
                    if e.executor.is_some() {
                        "executor"
                    } else {
                        "no executor"
                    },
                )
            }))
            .finish()
    }
}

/// Collects definitions and executors; [`RegistryBuilder::build`] checks them all at once.
#[derive(Default)]
pub struct RegistryBuilder {
    definitions: Vec<ToolDefinition>,
    executors: Vec<(String, Arc<dyn Executor>)>,
    state: StateMap,
    mcp_list_ttl: Option<std::time::Duration>,
    toolsets: Vec<Toolset>,
}

impl fmt::Debug for RegistryBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegistryBuilder")
            .field(
                "definitions",
                &self
                    .definitions
                    .iter()
                    .map(|d| d.name.as_str())
                    .collect::<Vec<_>>(),
            )
            .field(
                "executors",
                &self
                    .executors
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl RegistryBuilder {
    /// Adds a tool definition; the registry keeps definitions in the order they were added.
    pub fn definition(mut self, definition: ToolDefinition) -> RegistryBuilder {
        self.definitions.push(definition);
        self
    }

    /// Adds several tool definitions, in order.
    pub fn definitions(
        mut self,
        definitions: impl IntoIterator<Item = ToolDefinition>,
    ) -> RegistryBuilder {
        self.definitions.extend(definitions);
        self
    }

    /// How long an MCP client may keep the tool list (the manifest's `mcp.list_ttl`), which
    /// the MCP server (`McpServer`) answers `tools/list` with unless it is given a
    /// `ListCache` of its own.
    pub fn mcp_list_ttl(mut self, ttl: std::time::Duration) -> RegistryBuilder {
        self.mcp_list_ttl = Some(ttl);
        self
    }

    /// A toolset: its name, description and tools (the generated `registry()` adds the
    /// manifest's). A tool in no toolset is offered by every [`ToolSelection`].
    pub fn toolset<T: Into<String>>(
        mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        tools: impl IntoIterator<Item = T>,
    ) -> RegistryBuilder {
        self.toolsets.push(Toolset {
            name: name.into(),
            description: description.into(),
            tools: tools.into_iter().map(Into::into).collect(),
        });
        self
    }

    /// Application state (a database pool, an HTTP client) that every executor reads with
    /// [`CallContext::state`]; one value per type, a later one of the same type replaces it.
    pub fn state<T: std::any::Any + Send + Sync>(mut self, value: T) -> RegistryBuilder {
        self.state.insert(value);
        self
    }

    /// Adds the executor of the server tool `name`. [`RegistryBuilder::build`] fails if no tool
    /// has that name, if it is a client tool, or if it already has an executor.
    pub fn executor(self, name: impl Into<String>, executor: impl Executor) -> RegistryBuilder {
        self.shared_executor(name, Arc::new(executor))
    }

    /// [`RegistryBuilder::executor`] for an executor already behind an `Arc`, e.g. one shared by
    /// several tools or registries.
    pub fn shared_executor(
        mut self,
        name: impl Into<String>,
        executor: Arc<dyn Executor>,
    ) -> RegistryBuilder {
        self.executors.push((name.into(), executor));
        self
    }

    /// Checks the location rule and compiles every schema. On failure the error lists every
    /// problem found, not only the first.
    pub fn build(self) -> Result<Registry, RegistryError> {
        let mut error = RegistryError::default();
        let mut entries: Vec<Entry> = Vec::with_capacity(self.definitions.len());
        let mut index = HashMap::with_capacity(self.definitions.len());
        for def in self.definitions {
            if index.contains_key(&def.name) {
                error.push(Problem::DuplicateDefinition(def.name.clone()));
                continue;
            }
            let parameters = match compile(&def.parameters) {
                Ok(v) => Some(v),
                Err(e) => {
                    error.push(Problem::InvalidSchema {
                        tool: def.name.clone(),
                        problem: format!("parameters: {e}"),
                    });
                    None
                }
            };
            let returns = match def.returns.as_ref().map(compile).transpose() {
                Ok(v) => v,
                Err(e) => {
                    error.push(Problem::InvalidSchema {
                        tool: def.name.clone(),
                        problem: format!("returns: {e}"),
                    });
                    None
                }
            };
            index.insert(def.name.clone(), entries.len());
            if let Some(parameters) = parameters {
                entries.push(Entry {
                    def,
                    parameters,
                    returns,
                    executor: None,
                });
            } else {
                // Keep the name known (so its executor is not reported as unknown) but
                // unusable: the build fails anyway.
                index.insert(def.name.clone(), usize::MAX);
            }
        }
        let mut seen = BTreeSet::new();
        for (name, executor) in self.executors {
            if !seen.insert(name.clone()) {
                error.push(Problem::DuplicateExecutor(name));
                continue;
            }
            match index.get(&name) {
                None => error.push(Problem::UnknownExecutor(name)),
                Some(&usize::MAX) => {}
                Some(&i) => {
                    let entry = &mut entries[i];
                    match entry.def.location {
                        Location::Client => error.push(Problem::ClientExecutor(name)),
                        Location::Server => entry.executor = Some(executor),
                    }
                }
            }
        }
        for entry in &entries {
            if entry.def.location == Location::Server && entry.executor.is_none() {
                error.push(Problem::MissingExecutor(entry.def.name.clone()));
            }
        }
        for (i, toolset) in self.toolsets.iter().enumerate() {
            let invalid = |problem: String| Problem::InvalidToolset {
                toolset: toolset.name.clone(),
                problem,
            };
            if self.toolsets[..i].iter().any(|t| t.name == toolset.name) {
                error.push(invalid("added more than once: add it once".into()));
            }
            for tool in &toolset.tools {
                if !index.contains_key(tool) {
                    error.push(invalid(format!("no tool named `{tool}` is defined")));
                } else if self.toolsets[..i].iter().any(|t| t.tools.contains(tool)) {
                    error.push(invalid(format!(
                        "tool `{tool}` is already in another toolset: a tool is in one at most"
                    )));
                }
            }
        }
        match error.finish() {
            None => Ok(Registry {
                entries,
                index,
                state: (!self.state.is_empty()).then(|| Arc::new(self.state)),
                mcp_list_ttl: self.mcp_list_ttl,
                toolsets: self.toolsets,
            }),
            Some(error) => Err(error),
        }
    }
}

fn compile(schema: &Value) -> Result<Validator, String> {
    toolc_core::schema_util::check_written_out_size(schema)?;
    jsonschema::draft202012::new(schema).map_err(|e| e.to_string())
}

fn violations(validator: &Validator, value: &Value) -> Vec<Violation> {
    let mut out = Vec::new();
    let mut more = 0usize;
    for error in validator.iter_errors(value) {
        if out.len() < MAX_VIOLATIONS {
            let valid = match error.kind() {
                jsonschema::error::ValidationErrorKind::Enum { options } => {
                    options.as_array().cloned()
                }
                jsonschema::error::ValidationErrorKind::Constant { expected_value } => {
                    Some(vec![(**expected_value).clone()])
                }
                _ => None,
            };
            out.push(Violation {
                pointer: error.instance_path().as_str().to_owned(),
                message: error.to_string(),
                valid,
            });
        } else {
            more += 1;
        }
    }
    if more > 0 {
        out.push(Violation {
            pointer: String::new(),
            message: format!("and {more} more problems"),
            valid: None,
        });
    }
    out
}

impl Registry {
    /// An empty builder: add definitions and executors, then call [`RegistryBuilder::build`].
    pub fn builder() -> RegistryBuilder {
        RegistryBuilder::default()
    }

    /// Builds a registry from definitions (e.g. loaded at run time with
    /// [`crate::load_definitions`]) and `(tool name, executor)` pairs.
    pub fn new(
        definitions: impl IntoIterator<Item = ToolDefinition>,
        executors: impl IntoIterator<Item = (String, Arc<dyn Executor>)>,
    ) -> Result<Registry, RegistryError> {
        let mut builder = Registry::builder().definitions(definitions);
        for (name, executor) in executors {
            builder = builder.shared_executor(name, executor);
        }
        builder.build()
    }

    fn entry(&self, name: &str) -> Result<&Entry, CallError> {
        // A few string compares beat hashing the name for the tool counts manifests have.
        let found = if self.entries.len() <= LINEAR_LOOKUP {
            self.entries.iter().find(|e| e.def.name == name)
        } else {
            self.index.get(name).map(|&i| &self.entries[i])
        };
        match found {
            Some(entry) => Ok(entry),
            None => {
                let known: Vec<&str> = self.names().collect();
                Err(CallError::unknown_tool(name, &known))
            }
        }
    }

    /// Tool names in definition order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| e.def.name.as_str())
    }

    /// The manifest's `mcp.list_ttl`, when it set one ([`RegistryBuilder::mcp_list_ttl`]).
    pub fn mcp_list_ttl(&self) -> Option<std::time::Duration> {
        self.mcp_list_ttl
    }

    /// The toolsets, in the order they were added.
    pub fn toolsets(&self) -> &[Toolset] {
        &self.toolsets
    }

    /// The tools a session offers when it chooses `toolsets`: every tool in no toolset, and
    /// the tools of each one named. An unknown name is an error, not an empty choice.
    pub fn selection<S: AsRef<str>>(
        &self,
        toolsets: &[S],
    ) -> Result<ToolSelection, UnknownToolset> {
        let mut grouped = std::collections::HashSet::new();
        for toolset in &self.toolsets {
            grouped.extend(toolset.tools.iter().map(String::as_str));
        }
        let mut tools: std::collections::HashSet<String> = self
            .names()
            .filter(|n| !grouped.contains(n))
            .map(str::to_owned)
            .collect();
        for name in toolsets {
            let name = name.as_ref();
            let Some(toolset) = self.toolsets.iter().find(|t| t.name == name) else {
                return Err(UnknownToolset {
                    name: name.to_owned(),
                    known: self.toolsets.iter().map(|t| t.name.clone()).collect(),
                });
            };
            tools.extend(toolset.tools.iter().cloned());
        }
        Ok(ToolSelection {
            toolsets: toolsets.iter().map(|t| t.as_ref().to_owned()).collect(),
            tools,
        })
    }

    /// Every definition, in definition order (what provider declarations are built from).
    pub fn definitions(&self) -> impl Iterator<Item = &ToolDefinition> {
        self.entries.iter().map(|e| &e.def)
    }

    /// The definition of the tool `name`; `None` when no tool has that name.
    pub fn definition(&self, name: &str) -> Option<&ToolDefinition> {
        self.index.get(name).map(|&i| &self.entries[i].def)
    }

    /// Where the tool `name` runs; `None` when no tool has that name.
    pub fn location(&self, name: &str) -> Option<Location> {
        self.definition(name).map(|d| d.location)
    }

    /// The deadline of a call of `name`: its own timeout, or the client default for client tools.
    pub fn timeout(&self, name: &str) -> Option<Duration> {
        self.definition(name).and_then(|d| d.effective_timeout())
    }

    /// The number of tools.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the registry has no tools.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Parses and validates the arguments of a call of any tool, server or client, without
    /// running anything: what a dispatcher does before forwarding a client call.
    pub fn validate_arguments(&self, name: &str, arguments: &str) -> Result<Value, CallError> {
        let entry = self.entry(name)?;
        let value = parse_arguments(name, arguments)?;
        check(entry, name, &value)?;
        Ok(value)
    }

    /// Validates already-parsed arguments of any tool.
    pub fn check_arguments(&self, name: &str, arguments: &Value) -> Result<(), CallError> {
        check(self.entry(name)?, name, arguments)
    }

    /// Checks a result (e.g. a client tool's reply) against the tool's `returns` schema; tools
    /// without one accept any result.
    pub fn check_output(&self, name: &str, output: &Value) -> Result<(), CallError> {
        let entry = self.entry(name)?;
        check_output(entry, name, output)
    }

    /// Calls a server tool with JSON-text arguments; the result is JSON text for the model.
    /// On failure, [`CallError::model_text`] is the text to send instead.
    ///
    /// A tool with `approval: required` is refused here (`not_approved`, code
    /// `approval_required`) and does not run: ask the user, then call it with
    /// [`Registry::call_with_context`] and a context carrying their
    /// [`crate::ApprovalGrant`] for this call and these arguments.
    pub async fn call(&self, name: &str, arguments: &str) -> Result<String, CallError> {
        self.call_with_context(CallContext::detached(name, ""), arguments)
            .await
    }

    /// [`Registry::call`] in a session: `ctx` (from [`crate::SessionScope::call`]) names the tool
    /// and carries the caller, the cancellation signal and the ids the executor sees. A tool with
    /// `approval: required` runs only when `ctx` carries an [`crate::ApprovalGrant`] for this
    /// tool, this call id and exactly these arguments, that no call has used yet
    /// ([`CallContext::with_approval`]).
    pub async fn call_with_context(
        &self,
        ctx: CallContext,
        arguments: &str,
    ) -> Result<String, CallError> {
        let name = ctx.tool().to_owned();
        let name = name.as_str();
        let entry = self.entry(name)?;
        if entry.def.location == Location::Client {
            return Err(CallError::client_tool(name));
        }
        let value = parse_arguments(name, arguments)?;
        let output = self.run(ctx, entry, name, value).await?;
        // `to_string` on a `Value` goes through `fmt`; the writer path is faster and cannot fail
        // for a `Value` (its keys are strings).
        Ok(serde_json::to_string(&output).unwrap_or_else(|_| output.to_string()))
    }

    /// Calls a server tool with parsed arguments and returns the checked result as a value.
    /// Approvals as for [`Registry::call`].
    pub async fn call_value(&self, name: &str, arguments: Value) -> Result<Value, CallError> {
        self.call_value_with_context(CallContext::detached(name, ""), arguments)
            .await
    }

    /// [`Registry::call_value`] in a session (see [`Registry::call_with_context`]).
    pub async fn call_value_with_context(
        &self,
        ctx: CallContext,
        arguments: Value,
    ) -> Result<Value, CallError> {
        let name = ctx.tool().to_owned();
        let name = name.as_str();
        let entry = self.entry(name)?;
        if entry.def.location == Location::Client {
            return Err(CallError::client_tool(name));
        }
        self.run(ctx, entry, name, arguments).await
    }

    /// [`Registry::call_value`] for arguments that [`Registry::validate_arguments`] of this same
    /// registry already accepted (the dispatcher plans, then runs): they are not validated again.
    pub(crate) async fn call_prevalidated(
        &self,
        ctx: CallContext,
        name: &str,
        arguments: Value,
    ) -> Result<Value, CallError> {
        let entry = self.entry(name)?;
        if entry.def.location == Location::Client {
            return Err(CallError::client_tool(name));
        }
        self.execute(ctx, entry, name, arguments).await
    }

    /// Calls a server tool through its generated types. Approvals as for [`Registry::call`].
    pub async fn call_typed<T: Tool>(&self, arguments: &T::Args) -> Result<T::Output, CallError> {
        self.call_typed_with_context::<T>(CallContext::detached(T::NAME, ""), arguments)
            .await
    }

    /// [`Registry::call_typed`] in a session; `ctx` should name `T`'s tool (it is the context
    /// the executor sees; the tool called is always `T`).
    pub async fn call_typed_with_context<T: Tool>(
        &self,
        ctx: CallContext,
        arguments: &T::Args,
    ) -> Result<T::Output, CallError> {
        let value = serde_json::to_value(arguments).map_err(|e| {
            CallError::invalid_arguments(
                T::NAME,
                vec![Violation {
                    pointer: String::new(),
                    message: format!("the arguments could not be serialized: {e}"),
                    valid: None,
                }],
            )
        })?;
        let entry = self.entry(T::NAME)?;
        if entry.def.location == Location::Client {
            return Err(CallError::client_tool(T::NAME));
        }
        let output = self.run(ctx, entry, T::NAME, value).await?;
        serde_json::from_value(output).map_err(|e| {
            CallError::invalid_output(
                T::NAME,
                vec![Violation {
                    pointer: String::new(),
                    message: format!("the result does not fit the output type: {e}"),
                    valid: None,
                }],
            )
        })
    }

    async fn run(
        &self,
        ctx: CallContext,
        entry: &Entry,
        name: &str,
        arguments: Value,
    ) -> Result<Value, CallError> {
        check(entry, name, &arguments)?;
        if entry.def.requires_approval() {
            check_approval(&ctx, name, &arguments)?;
        }
        self.execute(ctx, entry, name, arguments).await
    }

    /// Runs the executor on arguments that satisfy the schema.
    async fn execute(
        &self,
        ctx: CallContext,
        entry: &Entry,
        name: &str,
        arguments: Value,
    ) -> Result<Value, CallError> {
        let Some(executor) = &entry.executor else {
            // Unreachable after `build`, which refuses server tools without executors; kept as an
            // error rather than a panic because this path serves model input.
            return Err(CallError::client_tool(name));
        };
        // The deadline is only known inside a runtime with a clock; outside one a timed call
        // fails below as a configuration problem.
        let deadline = match entry.def.timeout {
            Some(limit) if tokio::runtime::Handle::try_current().is_ok() => {
                Some(tokio::time::Instant::now() + limit)
            }
            _ => None,
        };
        let ctx = ctx.with_deadline(deadline).with_state(self.state.clone());
        // The call's own signal fires when its timeout passes, so work it spawned stops too.
        let on_timeout = ctx.clone();
        let started = catch_unwind(AssertUnwindSafe(|| executor.start(ctx, arguments)));
        let fut = match started {
            Ok(Ok(fut)) => fut,
            Ok(Err(e)) => return Err(CallError::undeserializable(name, &e)),
            Err(payload) => return Err(CallError::panic(name, panic_message(payload.as_ref()))),
        };
        let guarded = catch_panics(fut);
        let outcome = match entry.def.timeout {
            None => guarded.await,
            Some(limit) => {
                if tokio::runtime::Handle::try_current().is_err() {
                    return Err(CallError::no_runtime(name));
                }
                // Tokio panics when the runtime has no time driver; report it as configuration.
                let timed = catch_unwind(AssertUnwindSafe(|| tokio::time::timeout(limit, guarded)))
                    .map_err(|_| CallError::no_runtime(name))?;
                match timed.await {
                    Ok(outcome) => outcome,
                    Err(_) => {
                        on_timeout.cancel();
                        return Err(CallError::timeout(name, limit));
                    }
                }
            }
        };
        let output = match outcome {
            Ok(Ok(output)) => output,
            Ok(Err(tool_error)) => return Err(CallError::tool_failed(name, tool_error)),
            Err(panic) => return Err(CallError::panic(name, panic)),
        };
        check_output(entry, name, &output)?;
        Ok(output)
    }
}

fn parse_arguments(name: &str, arguments: &str) -> Result<Value, CallError> {
    // Models sometimes send an empty string for a tool without parameters.
    if arguments.trim().is_empty() {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    serde_json::from_str(arguments).map_err(|e| CallError::invalid_json(name, &e))
}

fn check(entry: &Entry, name: &str, arguments: &Value) -> Result<(), CallError> {
    if entry.parameters.is_valid(arguments) {
        Ok(())
    } else {
        Err(CallError::invalid_arguments(
            name,
            violations(&entry.parameters, arguments),
        ))
    }
}

/// A tool with `approval: required` runs from a public call method only on a grant bound to
/// this call: its tool, its call id and its arguments, used once. (The dispatcher asks through
/// its client path instead and runs approved calls with [`Registry::call_prevalidated`].)
fn check_approval(ctx: &CallContext, name: &str, arguments: &Value) -> Result<(), CallError> {
    let Some(grant) = ctx.approval() else {
        return Err(CallError::approval_required(
            name,
            "no approval was given with the call (CallContext::with_approval)",
        ));
    };
    let why = if grant.tool() != name {
        "the approval given is for another tool"
    } else if grant.call_id() != ctx.call_id() {
        "the approval given is for another call id"
    } else if grant.arguments() != arguments {
        "the approval given is for other arguments"
    } else if !grant.take() {
        "the approval given was already used by a call"
    } else {
        return Ok(());
    };
    Err(CallError::approval_required(name, why))
}

fn check_output(entry: &Entry, name: &str, output: &Value) -> Result<(), CallError> {
    match &entry.returns {
        Some(v) if !v.is_valid(output) => {
            Err(CallError::invalid_output(name, violations(v, output)))
        }
        _ => Ok(()),
    }
}
