//! Routing one normalized tool call: the primitive every wire protocol (realtime, chat APIs)
//! builds on.
//!
//! A [`ToolCall`] is validated against its tool's schema before anything runs; then a server tool
//! goes to its executor through the [`Registry`], a client tool goes to the caller's
//! [`ClientPath`] under the tool's deadline, and a fire-and-forget client tool is delivered and
//! acknowledged at once. Whatever happens, the caller gets one [`CallOutcome`] whose `output` is
//! text the model can read: failures are never panics or lost calls.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde_json::{json, Value};

use crate::context::SessionScope;
use crate::error::{CallError, ToolError};
use crate::{Location, Registry};

/// One tool call in provider-neutral form, on every path (realtime, chat, markers, MCP).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolCall {
    /// The provider's id of the call; results are matched to calls by it. For Gemini responses
    /// without ids it is synthesized from the call's position (see [`ToolCall::synthesized_id`]).
    pub call_id: String,
    /// The tool's name, as the model gave it; it may name no tool.
    pub name: String,
    /// The arguments as the JSON text the model produced (for providers that send an object,
    /// that object serialized). Not checked here: routing validates it.
    pub arguments: String,
    /// True when the provider gave no id and `call_id` was made up; such ids are never sent back.
    pub synthesized_id: bool,
}

impl ToolCall {
    /// A call with a provider-given id; `arguments` is the JSON text as the model produced it.
    pub fn new(
        call_id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> ToolCall {
        ToolCall {
            call_id: call_id.into(),
            name: name.into(),
            arguments: arguments.into(),
            synthesized_id: false,
        }
    }
}

/// A validated client call, as handed to a [`ClientPath`]: the [`ToolCall`] with its arguments
/// validated and normalized (an empty argument string from the model becomes `{}`), and how long
/// the reply is waited for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientCall {
    /// The call; its `arguments` are the validated arguments as normalized JSON text.
    pub tool_call: ToolCall,
    /// How long the dispatcher waits for the reply; `None` for fire-and-forget calls.
    pub deadline: Option<Duration>,
}

/// Why a client could not take or answer a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientFailure {
    /// No client is connected, or it went away before answering.
    Disconnected,
    /// The client path refused the call (e.g. a call with this id is already open there).
    Rejected(String),
}

impl fmt::Display for ClientFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientFailure::Disconnected => f.write_str("the client disconnected"),
            ClientFailure::Rejected(why) => write!(f, "the client path refused the call: {why}"),
        }
    }
}

/// The client's reply: the output as JSON text (the client encodes its own errors in it).
pub type ClientFuture = Pin<Box<dyn Future<Output = Result<String, ClientFailure>> + Send>>;

/// A call that waits for the user's approval (`approval: required`), as shown to them: the tool,
/// where it runs and the validated arguments. The answer is bound to this call and these
/// arguments by whoever asks (the relay gives each request its own id).
#[derive(Clone, Debug, PartialEq)]
pub struct ApprovalRequest {
    /// The call; its `arguments` are the validated arguments as normalized JSON text.
    pub tool_call: ToolCall,
    /// Where the tool runs: on the server or in the client.
    pub location: Location,
}

impl ApprovalRequest {
    /// The validated arguments the user is asked to approve, as a value.
    pub fn arguments(&self) -> Value {
        // The text was written from the validated value, so it parses back to that value.
        serde_json::from_str(&self.tool_call.arguments).unwrap_or(Value::Null)
    }
}

/// The user's answer to an [`ApprovalRequest`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Run the call.
    Approved,
    /// The user declined, with their reason if they gave one (the model reads it).
    Denied {
        /// Why the user declined; `None` when they gave no reason.
        reason: Option<String>,
    },
    /// Nobody answered within `after`.
    TimedOut {
        /// How long the question waited.
        after: Duration,
    },
    /// Nobody could be asked (no client, the client went away); for logs, not the model.
    Unavailable(String),
}

/// The answer to an approval request.
pub type ApprovalFuture = Pin<Box<dyn Future<Output = Decision> + Send>>;

/// How client calls reach the client (a browser over a websocket, an app callback, a channel).
///
/// Dropping the future returned by [`ClientPath::call`] means the dispatcher stopped waiting (the
/// deadline passed): an implementation must then forget the call, so that a late reply is
/// rejected instead of delivered.
pub trait ClientPath: Send + Sync {
    /// Delivers a call that expects a reply.
    fn call(&self, call: ClientCall) -> ClientFuture;

    /// Delivers a fire-and-forget call; no reply will be awaited.
    fn notify(&self, call: ClientCall) -> Result<(), ClientFailure>;

    /// Asks the user to approve a call of a tool with `approval: required`, before it runs (a
    /// server tool as much as a client one). The default asks nobody: the call does not run.
    /// Dropping the future withdraws the question.
    fn approve(&self, request: ApprovalRequest) -> ApprovalFuture {
        let _ = request;
        Box::pin(std::future::ready(Decision::Unavailable(
            "this client path cannot ask for approval".into(),
        )))
    }
}

/// A client path for sessions without a client: every client call fails as disconnected.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoClient;

impl ClientPath for NoClient {
    fn call(&self, _call: ClientCall) -> ClientFuture {
        Box::pin(std::future::ready(Err(ClientFailure::Disconnected)))
    }

    fn notify(&self, _call: ClientCall) -> Result<(), ClientFailure> {
        Err(ClientFailure::Disconnected)
    }
}

/// Where a call goes, decided from its name and arguments before anything runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Route {
    /// A server tool with valid arguments.
    Server {
        /// The validated arguments.
        arguments: Value,
    },
    /// A client tool with valid arguments that waits for a reply within `deadline`.
    Client {
        /// The validated arguments.
        arguments: Value,
        /// How long to wait for the client's reply before the call times out.
        deadline: Duration,
    },
    /// A fire-and-forget client tool with valid arguments.
    Notify {
        /// The validated arguments.
        arguments: Value,
    },
    /// A tool of the conversation's live tools ([`crate::live::LiveTools`]), not the
    /// registry's: its arguments are JSON, checked by the tools' source against its own schema.
    Live {
        /// The arguments, parsed.
        arguments: Value,
    },
    /// The call cannot run (unknown tool, invalid JSON, invalid arguments).
    Reject(CallError),
}

impl Route {
    /// Whether the call reaches the client at all (and so may be shown to it).
    pub fn is_client(&self) -> bool {
        matches!(self, Route::Client { .. } | Route::Notify { .. })
    }

    /// The validated arguments; `None` for a call that cannot run.
    pub fn arguments(&self) -> Option<&Value> {
        match self {
            Route::Server { arguments }
            | Route::Client { arguments, .. }
            | Route::Notify { arguments }
            | Route::Live { arguments } => Some(arguments),
            Route::Reject(_) => None,
        }
    }
}

pub use crate::engine::plan;

/// How a call ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Status {
    /// The executor or the client produced a result.
    Ok,
    /// A fire-and-forget call was delivered; `output` is the acknowledgement.
    Acknowledged,
    /// The call failed; `output` is the error as the model should read it.
    Failed(CallError),
}

/// The result of one call, ready to go back to the model.
#[derive(Clone, Debug, PartialEq)]
pub struct CallOutcome {
    /// The id of the call this result answers.
    pub call_id: String,
    /// JSON text for the model: the tool's result, an acknowledgement, or an error object.
    pub output: String,
    /// How the call ended; the error itself when it failed.
    pub status: Status,
}

impl CallOutcome {
    /// A successful result; `output` is the tool's result as JSON text.
    pub fn ok(call_id: impl Into<String>, output: String) -> CallOutcome {
        CallOutcome {
            call_id: call_id.into(),
            output,
            status: Status::Ok,
        }
    }

    /// A failed call; `output` becomes the error as the model should read it.
    pub fn failed(call_id: impl Into<String>, error: CallError) -> CallOutcome {
        CallOutcome {
            call_id: call_id.into(),
            output: error.model_text(),
            status: Status::Failed(error),
        }
    }

    /// The acknowledgement a model receives for a fire-and-forget call.
    pub fn acknowledged(call_id: impl Into<String>, tool: &str) -> CallOutcome {
        CallOutcome {
            call_id: call_id.into(),
            output: acknowledgement(tool),
            status: Status::Acknowledged,
        }
    }

    /// The first result of a background (`mode: async`) call: the work started, its result
    /// follows as a message.
    pub fn started(call_id: impl Into<String>, tool: &str) -> CallOutcome {
        CallOutcome {
            call_id: call_id.into(),
            output: json!({
                "status": "started",
                "message": format!("`{tool}` is running in the background; its result will be added to the conversation when it is ready. Carry on meanwhile."),
            })
            .to_string(),
            status: Status::Acknowledged,
        }
    }

    /// Whether the call failed.
    pub fn is_error(&self) -> bool {
        matches!(self.status, Status::Failed(_))
    }
}

/// The result text of a fire-and-forget call: it tells the model the action was sent, not done.
pub fn acknowledgement(tool: &str) -> String {
    json!({
        "status": "sent",
        "message": format!("`{tool}` was sent to the user's client; it does not report back."),
    })
    .to_string()
}

/// The error a client call resolves with when its deadline passes.
pub fn client_timeout(tool: &str, deadline: Duration) -> CallError {
    CallError::timeout(tool, deadline)
}

/// The error a client call resolves with when the client cannot take or answer it.
pub fn client_failure(tool: &str, failure: &ClientFailure) -> CallError {
    let (message, code) = match failure {
        ClientFailure::Disconnected => (
            "the user's client disconnected before it answered".to_owned(),
            "client_disconnected",
        ),
        ClientFailure::Rejected(why) => (
            format!("the user's client could not take the call ({why})"),
            "client_rejected",
        ),
    };
    CallError::tool_failed(tool, ToolError::new(message).with_code(code))
}

/// Routes one call to completion, on its own (no toolsets, no repeats: see
/// [`crate::engine::Conversation`] for a conversation's calls): validation, the user's approval
/// through `client` when the tool needs it, then the server executor, the client (with its
/// deadline) or a fire-and-forget delivery. Never panics on model or client input. `scope` is
/// the session the call belongs to: its executor sees the scope's principal and ids.
pub async fn route(
    registry: &Registry,
    scope: &SessionScope,
    call: &ToolCall,
    client: &dyn ClientPath,
) -> CallOutcome {
    let admission = crate::engine::Admission::alone(registry, call.clone());
    let ctx = scope.call(&call.name, &call.call_id);
    admission.run(registry, ctx, client).await
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};

    use serde_json::json;
    use tokio::sync::oneshot;

    use super::*;
    use crate::error::ToolError;
    use crate::executor_fn;
    use crate::CallErrorKind;
    use crate::ToolDefinition;

    fn def(name: &str, location: Location) -> ToolDefinition {
        ToolDefinition {
            name: name.into(),
            description: format!("{name} tool"),
            location,
            parameters: json!({
                "type": "object",
                "properties": { "x": { "type": "integer" } },
                "required": ["x"],
                "additionalProperties": false
            }),
            ..Default::default()
        }
    }

    fn registry() -> Registry {
        let mut wait = def("wait", Location::Client);
        wait.timeout = Some(Duration::from_millis(50));
        let mut fire = def("fire", Location::Client);
        fire.wait_for_response = false;
        let mut slow = def("slow", Location::Server);
        slow.timeout = Some(Duration::from_millis(20));
        Registry::builder()
            .definitions([
                def("double", Location::Server),
                def("fail", Location::Server),
            ])
            .definitions([def("boom", Location::Server), slow, wait, fire])
            .executor(
                "double",
                executor_fn(
                    |a| async move { Ok(json!({ "y": a["x"].as_i64().unwrap_or(0) * 2 })) },
                ),
            )
            .executor(
                "fail",
                executor_fn(|_| async { Err(ToolError::new("no such order").with_code("nf")) }),
            )
            .executor(
                "boom",
                executor_fn(|_| async {
                    if true {
                        panic!("executor bug");
                    }
                    Ok(json!(null))
                }),
            )
            .executor(
                "slow",
                executor_fn(|_| async {
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    Ok(json!(null))
                }),
            )
            .build()
            .expect("test registry")
    }

    /// A client path that records calls and lets the test answer them.
    #[derive(Default)]
    struct TestClient {
        pending: Mutex<HashMap<String, oneshot::Sender<Result<String, ClientFailure>>>>,
        seen: Mutex<Vec<ClientCall>>,
        gone: bool,
    }

    impl ClientPath for TestClient {
        fn call(&self, call: ClientCall) -> ClientFuture {
            let (tx, rx) = oneshot::channel();
            self.pending
                .lock()
                .unwrap()
                .insert(call.tool_call.call_id.clone(), tx);
            self.seen.lock().unwrap().push(call);
            Box::pin(async move { rx.await.unwrap_or(Err(ClientFailure::Disconnected)) })
        }

        fn notify(&self, call: ClientCall) -> Result<(), ClientFailure> {
            if self.gone {
                return Err(ClientFailure::Disconnected);
            }
            self.seen.lock().unwrap().push(call);
            Ok(())
        }
    }

    fn error_kind(outcome: &CallOutcome) -> &str {
        let v: Value = serde_json::from_str(&outcome.output).unwrap();
        assert!(outcome.is_error(), "{outcome:?}");
        match v["error"]["kind"].as_str() {
            Some("timeout") => "timeout",
            Some("tool_failed") => "tool_failed",
            Some("panic") => "panic",
            Some("unknown_tool") => "unknown_tool",
            Some("invalid_json") => "invalid_json",
            Some("invalid_arguments") => "invalid_arguments",
            other => panic!("unexpected kind {other:?}"),
        }
    }

    #[tokio::test]
    async fn server_call_runs_the_executor() {
        let r = registry();
        let out = route(
            &r,
            &SessionScope::new(),
            &ToolCall::new("c1", "double", r#"{"x":21}"#),
            &NoClient,
        )
        .await;
        assert_eq!(out, CallOutcome::ok("c1", r#"{"y":42}"#.into()));
    }

    #[tokio::test]
    async fn every_failure_is_a_model_readable_result() {
        let r = registry();
        let cases = [
            ("nope", r#"{"x":1}"#, "unknown_tool"),
            ("double", "{not json", "invalid_json"),
            ("double", r#"{"x":"one"}"#, "invalid_arguments"),
            ("fail", r#"{"x":1}"#, "tool_failed"),
            ("boom", r#"{"x":1}"#, "panic"),
            ("slow", r#"{"x":1}"#, "timeout"),
        ];
        for (name, args, kind) in cases {
            let out = route(
                &r,
                &SessionScope::new(),
                &ToolCall::new("c", name, args),
                &NoClient,
            )
            .await;
            assert_eq!(error_kind(&out), kind, "{name} {args}");
            assert_eq!(out.call_id, "c");
        }
    }

    #[tokio::test]
    async fn client_call_gets_the_reply_with_normalized_arguments() {
        let r = registry();
        let client = Arc::new(TestClient::default());
        let c2 = client.clone();
        let task = tokio::spawn(async move {
            let call = ToolCall::new("c9", "wait", r#"{ "x" : 7 }"#);
            route(&r, &SessionScope::new(), &call, c2.as_ref()).await
        });
        // Wait until the call reached the client, then answer it.
        let tx = loop {
            if let Some(tx) = client.pending.lock().unwrap().remove("c9") {
                break tx;
            }
            tokio::task::yield_now().await;
        };
        tx.send(Ok(r#"{"done":true}"#.into())).unwrap();
        let out = task.await.unwrap();
        assert_eq!(out, CallOutcome::ok("c9", r#"{"done":true}"#.into()));
        let seen = client.seen.lock().unwrap();
        assert_eq!(seen[0].tool_call.arguments, r#"{"x":7}"#);
        assert_eq!(seen[0].deadline, Some(Duration::from_millis(50)));
    }

    #[tokio::test]
    async fn client_results_must_match_the_declared_returns() {
        let mut checked = def("checked", Location::Client);
        checked.returns = Some(json!({
            "type": "object",
            "properties": { "found": { "type": "boolean" } },
            "required": ["found"]
        }));
        let r = Arc::new(
            Registry::builder()
                .definitions([checked, def("free", Location::Client)])
                .build()
                .expect("client tools need no executors"),
        );
        let cases = [
            ("checked", r#"{"found":true}"#, true),
            ("checked", r#"{"error":"no such element"}"#, true),
            ("checked", r#"{"found":"yes","secret":1}"#, false),
            ("checked", "done", false),
            ("checked", r#"{"error":{"nested":1}}"#, false),
            ("free", "anything at all", true),
        ];
        for (name, reply, passes) in cases {
            let client = Arc::new(TestClient::default());
            let (r2, c2) = (r.clone(), client.clone());
            let task = tokio::spawn(async move {
                route(
                    &r2,
                    &SessionScope::new(),
                    &ToolCall::new("c1", name, r#"{"x":1}"#),
                    c2.as_ref(),
                )
                .await
            });
            let tx = loop {
                if let Some(tx) = client.pending.lock().unwrap().remove("c1") {
                    break tx;
                }
                tokio::task::yield_now().await;
            };
            tx.send(Ok(reply.into())).unwrap();
            let out = task.await.unwrap();
            if passes {
                assert_eq!(out, CallOutcome::ok("c1", reply.into()), "{reply}");
            } else {
                let Status::Failed(error) = &out.status else {
                    panic!("{reply} passed: {out:?}");
                };
                assert_eq!(error.kind(), CallErrorKind::InvalidOutput, "{reply}");
                assert!(!out.output.contains("secret"), "the reply is not echoed");
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn client_call_times_out_and_forgets_the_call() {
        let r = registry();
        let client = TestClient::default();
        let out = route(
            &r,
            &SessionScope::new(),
            &ToolCall::new("c1", "wait", r#"{"x":1}"#),
            &client,
        )
        .await;
        assert_eq!(error_kind(&out), "timeout");
        // The reply channel was dropped with the future: a late reply has nowhere to go.
        let tx = client.pending.lock().unwrap().remove("c1").unwrap();
        assert!(tx.send(Ok("late".into())).is_err());
    }

    #[tokio::test]
    async fn client_disconnect_fails_the_call_at_once() {
        let r = registry();
        let out = route(
            &r,
            &SessionScope::new(),
            &ToolCall::new("c1", "wait", r#"{"x":1}"#),
            &NoClient,
        )
        .await;
        assert_eq!(error_kind(&out), "tool_failed");
        assert!(out.output.contains("client_disconnected"), "{}", out.output);
    }

    #[tokio::test]
    async fn fire_and_forget_is_acknowledged_without_waiting() {
        let r = registry();
        let client = TestClient::default();
        let out = route(
            &r,
            &SessionScope::new(),
            &ToolCall::new("c1", "fire", r#"{"x":1}"#),
            &client,
        )
        .await;
        assert_eq!(out.status, Status::Acknowledged);
        assert_eq!(client.seen.lock().unwrap()[0].deadline, None);
        assert!(client.pending.lock().unwrap().is_empty());
        let gone = TestClient {
            gone: true,
            ..TestClient::default()
        };
        let out = route(
            &r,
            &SessionScope::new(),
            &ToolCall::new("c2", "fire", r#"{"x":1}"#),
            &gone,
        )
        .await;
        assert_eq!(error_kind(&out), "tool_failed");
    }

    #[tokio::test]
    async fn invalid_client_calls_never_reach_the_client() {
        let r = registry();
        let client = TestClient::default();
        let out = route(
            &r,
            &SessionScope::new(),
            &ToolCall::new("c1", "wait", r#"{"x":"no"}"#),
            &client,
        )
        .await;
        assert_eq!(error_kind(&out), "invalid_arguments");
        assert!(client.seen.lock().unwrap().is_empty());
    }

    #[test]
    fn plan_routes_by_location() {
        let r = registry();
        assert!(matches!(
            plan(&r, &ToolCall::new("a", "double", r#"{"x":1}"#)),
            Route::Server { .. }
        ));
        assert!(plan(&r, &ToolCall::new("a", "wait", r#"{"x":1}"#)).is_client());
        assert!(plan(&r, &ToolCall::new("a", "fire", r#"{"x":1}"#)).is_client());
        assert!(!plan(&r, &ToolCall::new("a", "zzz", "{}")).is_client());
    }

    #[test]
    fn outside_a_runtime_a_client_deadline_is_a_timeout_not_a_panic() {
        let r = registry();
        let client = TestClient::default();
        let call = ToolCall::new("c1", "wait", r#"{"x":1}"#);
        let out = futures_lite_block_on(route(&r, &SessionScope::new(), &call, &client));
        assert_eq!(error_kind(&out), "timeout");
    }

    /// A minimal executor for one future, without a Tokio runtime.
    fn futures_lite_block_on<F: Future>(fut: F) -> F::Output {
        use std::task::{Context, Poll, Wake, Waker};
        struct Noop;
        impl Wake for Noop {
            fn wake(self: Arc<Self>) {}
        }
        let waker = Waker::from(Arc::new(Noop));
        let mut cx = Context::from_waker(&waker);
        let mut fut = std::pin::pin!(fut);
        loop {
            if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
                return v;
            }
        }
    }
}
