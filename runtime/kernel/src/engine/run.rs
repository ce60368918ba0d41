//! What running an admitted call does: the approval question, the executor, the client under
//! its deadline, the fire-and-forget delivery, a live tool; each run in its `toolc.call` span.
//!
//! Each call runs in a `toolc.call` span (tool, call id, session, location, and once it is over
//! its outcome, error kind and duration), so an executor's own events nest in it. Arguments
//! and results are never in it; a `trace`-level event at the `toolc::payloads` target carries
//! them for those who turn that target on.

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::time::Duration;

use serde_json::Value;

use super::{Admission, Next};
use crate::context::CallContext;
use crate::dispatch::{
    client_failure, client_timeout, ApprovalRequest, CallOutcome, ClientCall, ClientPath, Decision,
    Route, Status, ToolCall,
};
use crate::error::{CallError, CallErrorKind};
use crate::{Location, Registry, DEFAULT_CLIENT_TIMEOUT};

/// Validates a call and decides its route, without running it.
pub fn plan(registry: &Registry, call: &ToolCall) -> Route {
    let arguments = match registry.validate_arguments(&call.name, &call.arguments) {
        Ok(value) => value,
        Err(e) => return Route::Reject(e),
    };
    let Some(def) = registry.definition(&call.name) else {
        // validate_arguments already rejected unknown names; stay total anyway.
        return Route::Reject(CallError::new(
            CallErrorKind::UnknownTool,
            &call.name,
            format!("There is no tool named `{}`.", call.name),
        ));
    };
    match def.location {
        Location::Server => Route::Server { arguments },
        Location::Client if !def.wait_for_response => Route::Notify { arguments },
        Location::Client => Route::Client {
            arguments,
            deadline: def.effective_timeout().unwrap_or(DEFAULT_CLIENT_TIMEOUT),
        },
    }
}

/// Runs a server tool's executor, and again after a backoff while it fails with a failure its
/// `retry` names, up to its `attempts` (a tool the manifest lets retry is safe to repeat). A
/// cancellation during the backoff ends the call as interrupted.
async fn run_server(
    registry: &Registry,
    ctx: CallContext,
    name: &str,
    arguments: Value,
) -> Result<Value, CallError> {
    let retry = registry.definition(name).and_then(|d| d.policy.retry);
    match retry {
        None => registry.call_prevalidated(ctx, name, arguments).await,
        // Boxed: the retry loop holds a second executor future and a backoff timer, which
        // every call's future would otherwise carry (and copy) for the few tools that retry.
        Some(retry) => Box::pin(run_with_retries(registry, ctx, name, arguments, retry)).await,
    }
}

/// [`run_server`] for a tool with a `retry` policy.
async fn run_with_retries(
    registry: &Registry,
    ctx: CallContext,
    name: &str,
    arguments: Value,
    retry: crate::RetryPolicy,
) -> Result<Value, CallError> {
    let mut attempt = 1;
    loop {
        let result = registry
            .call_prevalidated(ctx.clone(), name, arguments.clone())
            .await;
        let error = match result {
            Err(error) if attempt < retry.attempts && retry.retries(error.kind().as_str()) => error,
            done => return done,
        };
        let wait = retry.backoff(attempt);
        tracing::info!(tool = %name, attempt, kind = %error.kind(), wait_ms = wait.as_millis() as u64, "retrying a failed call");
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = ctx.cancelled() => return Err(CallError::interrupted(name)),
        }
        attempt += 1;
    }
}

impl Admission {
    /// Runs the call in the foreground, in its `toolc.call` span, and returns its one outcome:
    /// the answer of a call that does not run; else the user's approval first when it needs
    /// one (asked through `client`), then the executor, the client under its deadline, or the
    /// delivery. A background admission runs here to its end too; an adapter that answers
    /// "started" uses [`Admission::run_in_background`]. Never panics on model or client input.
    pub async fn run(
        self,
        registry: &Registry,
        ctx: CallContext,
        client: &dyn ClientPath,
    ) -> CallOutcome {
        match &self.next {
            Next::Answer(outcome) => return outcome.clone(),
            Next::Wait { first } => {
                // The first call's end answers a waiting repeat: an adapter that runs one
                // anyway gets the refusal, never a second run.
                let error = CallError::duplicate(&self.call.name, first, true);
                return CallOutcome::failed(&self.call.call_id, error);
            }
            Next::Run { .. } => {}
        }
        // The span is made before the call moves into its future: only the tool's name is
        // kept for the logs after it (not a copy of the whole call).
        let span = open_span(&self.call, ctx.session_id(), self.location_label());
        let tool = self.call.name.clone();
        // Instrumented and awaited where it is made: a future passed down to a helper is
        // stored twice in the caller's (once as the argument, once while awaited).
        let started = std::time::Instant::now();
        let outcome = tracing::Instrument::instrument(
            self.ask_then_execute(registry, ctx, client),
            span.clone(),
        )
        .await;
        record(&span, &tool, &outcome, started.elapsed());
        outcome
    }

    /// The approval question (and a pending rate limit check) if the call has one, then the
    /// call's route.
    async fn ask_then_execute(
        self,
        registry: &Registry,
        ctx: CallContext,
        client: &dyn ClientPath,
    ) -> CallOutcome {
        let approved = if self.limit.is_some() || self.needs_approval() {
            // Boxed: the question's future is as large as the run itself, and most calls
            // have none to ask; every call's future (and its task) would carry it otherwise.
            match Box::pin(self.ask(&ctx, client)).await {
                Ok(approved) => approved,
                Err(refused) => return refused,
            }
        } else {
            self
        };
        approved.execute(registry, ctx, client).await
    }

    /// Asks the user through `client` when the call needs approval: `Ok` with the call, now
    /// approved, when it may run; else the outcome the model gets instead. A rate limit check
    /// still under way ([`Admission::check_limit`]) is awaited first: a call over its limit
    /// is refused without asking. A call cancelled while it waits (the user interrupted, the
    /// session ended) ends as interrupted.
    pub async fn ask(
        self,
        ctx: &CallContext,
        client: &dyn ClientPath,
    ) -> Result<Admission, CallOutcome> {
        // A rate limit a shared store is counting comes first: over it, nobody is asked.
        if self.limit.is_some() {
            tokio::select! {
                checked = self.check_limit() => checked?,
                () = ctx.cancelled() => {
                    let error = CallError::interrupted(&self.call.name);
                    return Err(CallOutcome::failed(&self.call.call_id, error));
                }
            }
        }
        if !self.needs_approval() {
            return Ok(self);
        }
        let (Some(arguments), location) = (self.arguments(), self.location()) else {
            return Ok(self);
        };
        let call = &self.call;
        let asked = client.approve(ApprovalRequest {
            tool_call: validated(call, arguments),
            location,
        });
        let decision = tokio::select! {
            decision = asked => decision,
            () = ctx.cancelled() => {
                return Err(CallOutcome::failed(&call.call_id, CallError::interrupted(&call.name)));
            }
        };
        let error = match decision {
            Decision::Approved => return Ok(self.approved()),
            Decision::Denied { reason } => {
                CallError::approval_denied(&call.name, reason.as_deref())
            }
            Decision::TimedOut { after } => CallError::approval_timeout(&call.name, after),
            Decision::Unavailable(why) => CallError::approval_unavailable(&call.name, &why),
        };
        tracing::info!(tool = %call.name, code = error.code().unwrap_or_default(), "call not approved");
        Err(CallOutcome::failed(&call.call_id, error))
    }

    /// The work of a background call whose "started" ([`Admission::started`]) went to the
    /// model, in its own `toolc.call` span (location `server_async`). Asked for approval first
    /// if that was not done yet.
    pub async fn run_in_background(
        self,
        registry: &Registry,
        ctx: CallContext,
        client: &dyn ClientPath,
    ) -> CallOutcome {
        let span = open_span(&self.call, ctx.session_id(), "server_async");
        let tool = self.call.name.clone();
        // Instrumented and awaited where it is made: a future passed down to a helper is
        // stored twice in the caller's (once as the argument, once while awaited).
        let started = std::time::Instant::now();
        let outcome = tracing::Instrument::instrument(
            self.ask_then_execute(registry, ctx, client),
            span.clone(),
        )
        .await;
        record(&span, &tool, &outcome, started.elapsed());
        outcome
    }

    /// Runs a server call for an adapter that gives results as values (MCP's
    /// `structuredContent`) and has no one to ask for approval: the tool's result, or the
    /// error the caller reads. A call that needs approval is refused; a call the caller should
    /// not have routed here (a client tool, a repeat) is refused too, never run elsewhere.
    /// No span: the adapter runs it inside its own.
    pub async fn run_value(
        self,
        registry: &Registry,
        ctx: CallContext,
    ) -> Result<Value, CallError> {
        let call = &self.call;
        if let Some(check) = &self.limit {
            // A refusal, or the result of the first call another process ran.
            if let Err(answered) = check.answer().await {
                return match answered.status {
                    Status::Failed(error) => Err(error),
                    Status::Ok | Status::Acknowledged => Ok(serde_json::from_str(&answered.output)
                        .unwrap_or(Value::String(answered.output))),
                };
            }
        }
        if self.needs_approval() {
            let why = "this caller cannot ask the user for approval";
            return Err(CallError::approval_unavailable(&call.name, why));
        }
        match (self.next, self.route) {
            (_, Route::Reject(error)) => Err(error),
            (Next::Run { .. }, Route::Server { arguments }) => {
                run_server(registry, ctx, &call.name, arguments).await
            }
            _ => Err(CallError::unknown_tool(&call.name, &[])),
        }
    }

    /// The span's `location`: where the call went.
    fn location_label(&self) -> &'static str {
        match &self.route {
            Route::Server { .. } => "server",
            Route::Client { .. } => "client",
            Route::Notify { .. } => "client_notify",
            Route::Live { .. } => "server_live",
            Route::Reject(_) => "rejected",
        }
    }

    /// Runs the route of a call that may run (approved, if it needed approval).
    async fn execute(
        self,
        registry: &Registry,
        ctx: CallContext,
        client: &dyn ClientPath,
    ) -> CallOutcome {
        let Admission {
            call, route, live, ..
        } = self;
        match route {
            Route::Reject(error) => CallOutcome::failed(&call.call_id, error),
            // `plan` validated these arguments against this registry: run without a second check.
            Route::Server { arguments } => {
                match run_server(registry, ctx, &call.name, arguments).await {
                    Ok(value) => CallOutcome::ok(&call.call_id, value.to_string()),
                    Err(error) => CallOutcome::failed(&call.call_id, error),
                }
            }
            Route::Live { arguments } => {
                let Some(live) = live else {
                    let error = CallError::unknown_tool(&call.name, &[]);
                    return CallOutcome::failed(&call.call_id, error);
                };
                match live.call(ctx, &call.name, arguments).await {
                    Ok(value) => CallOutcome::ok(&call.call_id, value.to_string()),
                    Err(e) => {
                        CallOutcome::failed(&call.call_id, CallError::tool_failed(&call.name, e))
                    }
                }
            }
            Route::Notify { arguments } => {
                let delivered = client.notify(ClientCall {
                    tool_call: validated(&call, &arguments),
                    deadline: None,
                });
                match delivered {
                    Ok(()) => CallOutcome::acknowledged(&call.call_id, &call.name),
                    Err(failure) => {
                        CallOutcome::failed(&call.call_id, client_failure(&call.name, &failure))
                    }
                }
            }
            Route::Client {
                arguments,
                deadline,
            } => {
                let reply = client.call(ClientCall {
                    tool_call: validated(&call, &arguments),
                    deadline: Some(deadline),
                });
                match with_deadline(deadline, reply).await {
                    Some(Ok(output)) => match check_client_output(registry, &call.name, &output) {
                        Ok(()) => CallOutcome::ok(&call.call_id, output),
                        Err(error) => CallOutcome::failed(&call.call_id, error),
                    },
                    Some(Err(failure)) => {
                        CallOutcome::failed(&call.call_id, client_failure(&call.name, &failure))
                    }
                    None => {
                        CallOutcome::failed(&call.call_id, client_timeout(&call.name, deadline))
                    }
                }
            }
        }
    }
}

/// The `toolc.call` span of `call`, routed to `location`, with its arguments logged as a payload.
fn open_span(call: &ToolCall, session: &str, location: &'static str) -> tracing::Span {
    let span = crate::telemetry::call_span(call, session, location);
    tracing::trace!(target: "toolc::payloads", parent: &span, arguments = %call.arguments, "call");
    span
}

/// Records a call's end on its span: the outcome, and a log event for a failure.
fn record(span: &tracing::Span, tool: &str, outcome: &CallOutcome, took: Duration) {
    crate::telemetry::record_outcome(span, outcome, took);
    if let Status::Failed(error) = &outcome.status {
        let _entered = span.enter();
        match error.kind() {
            CallErrorKind::Timeout => {
                let duration_ms = took.as_secs_f64() * 1e3;
                tracing::warn!(tool = %tool, duration_ms, "call timed out")
            }
            kind => tracing::info!(tool = %tool, error = kind.as_str(), "call failed"),
        }
    }
    tracing::trace!(target: "toolc::payloads", parent: span, output = %outcome.output, "result");
}

/// `call` with its validated arguments in place of the model's text.
fn validated(call: &ToolCall, arguments: &Value) -> ToolCall {
    ToolCall {
        call_id: call.call_id.clone(),
        name: call.name.clone(),
        arguments: arguments.to_string(),
        synthesized_id: call.synthesized_id,
    }
}

/// A client's result checked against the tool's `returns` schema, as a server result is: the
/// browser is the less trusted side, and the model should not read a result of another shape
/// than the one declared. Output that is not JSON counts as a JSON string. An object whose only
/// member is a string `error` (what the generated TypeScript dispatcher sends when a handler
/// fails) passes: it is the client's report of a failure, for the model to read.
fn check_client_output(registry: &Registry, name: &str, output: &str) -> Result<(), CallError> {
    if registry
        .definition(name)
        .is_none_or(|def| def.returns.is_none())
    {
        return Ok(());
    }
    let value =
        serde_json::from_str::<Value>(output).unwrap_or_else(|_| Value::String(output.to_owned()));
    let is_error_report = value
        .as_object()
        .is_some_and(|o| o.len() == 1 && o.get("error").is_some_and(Value::is_string));
    if is_error_report {
        return Ok(());
    }
    registry.check_output(name, &value)
}

/// Awaits `fut` for at most `deadline`; `None` when it passed. Outside a Tokio runtime with
/// timers (a configuration problem, not model input) the deadline cannot be kept, and the call
/// is treated as timed out rather than waiting forever or panicking.
async fn with_deadline<T>(
    deadline: Duration,
    fut: Pin<Box<dyn Future<Output = T> + Send>>,
) -> Option<T> {
    if tokio::runtime::Handle::try_current().is_err() {
        return None;
    }
    let timed = catch_unwind(AssertUnwindSafe(|| tokio::time::timeout(deadline, fut))).ok()?;
    timed.await.ok()
}
