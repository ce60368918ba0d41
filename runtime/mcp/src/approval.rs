//! Approvals over MCP: a call of a tool with `approval: required` asks the user through the
//! client's **elicitation** (a form: the call's arguments shown, yes or no), and runs only on
//! their yes. What the answer does is the call engine's ([`crate::engine::Admission::ask`]):
//! a decline is the same `approval_denied` result the chat runner and the relay give, a
//! question nobody answers in time is `approval_timeout`, a client that cannot be asked is
//! `approval_unavailable`, and the call does not run in any of them.
//!
//! How the question travels depends on the protocol version the request speaks:
//!
//! - up to 2025-11-25, an `elicitation/create` request sent to the client while the
//!   `tools/call` is open (the [`Elicit`] client path the engine asks through);
//! - from 2026-07-28 on, where a server sends no requests of its own, the `tools/call` is
//!   answered with an `input_required` result (SEP-2322, "multi round-trip requests") holding
//!   the same form, and the client calls again with the user's answer and the opaque
//!   `requestState` it was given ([`Pending`]).
//!
//! Either way the answer is bound to the one call it was asked for: the elicitation request
//! belongs to that `tools/call`, and a retry's `requestState` names one pending call (a random
//! handle, never the state itself), used once, for the same tool, the same arguments and the
//! same caller, before it expires. Anything else a client sends back is not a yes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema,
    InputRequest, InputRequests, InputRequiredResult, JsonObject,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::Value;

use crate::dispatch::{
    ApprovalFuture, ApprovalRequest, ClientCall, ClientFailure, ClientFuture, ClientPath, Decision,
};
use crate::engine::Admission;
use crate::{CallError, Principal, Registry};

/// How long a call waits for the user's answer by default (see
/// [`crate::McpServer::with_approval_timeout`]): an MCP host shows the question in its own UI,
/// where a person may take a while to read the arguments.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(120);

/// At most this many calls wait for an answer over MRTR at once (across sessions: a stateless
/// client may come back on another one); further ones are refused as unavailable.
const MAX_PENDING: usize = 1024;

/// The key of the approval question in an `input_required` result's `inputRequests`.
pub(crate) const INPUT_KEY: &str = "toolc_approval";

/// Whether the client of `context` can be asked: it declared elicitation, in form mode (or with
/// no mode named, which means form).
pub(crate) fn client_can_elicit(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .and_then(|c| c.elicitation)
        .is_some_and(|e| e.form.is_some() || e.url.is_none())
}

/// Whether the request speaks a version without server-to-client requests (2026-07-28 on),
/// where the question goes out as an `input_required` result.
pub(crate) fn uses_input_required(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v >= rmcp::model::ProtocolVersion::V_2026_07_28)
}

/// What the user is asked: the tool, its title, and the validated arguments, pretty-printed.
pub(crate) fn form(registry: &Registry, tool: &str, arguments: &Value) -> ElicitRequestParams {
    let title = registry
        .definition(tool)
        .and_then(|d| d.title.clone())
        .map(|t| format!(" ({t})"))
        .unwrap_or_default();
    let shown = serde_json::to_string_pretty(arguments).unwrap_or_else(|_| arguments.to_string());
    let message = format!(
        "Allow the tool `{tool}`{title} to run with these arguments?\n\n{shown}\n\nIt runs only if you answer yes."
    );
    let schema = ElicitationSchema::builder()
        .required_bool_with("approve", |b| {
            b.title("Run it")
                .description("Yes runs this call, with exactly these arguments, once.")
                .with_default(false)
        })
        .optional_string_with("reason", |s| {
            s.title("Why not (optional)")
                .description("If you say no, the assistant reads this.")
        })
        .build_unchecked();
    ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema: schema,
    }
}

/// The engine's decision from the client's answer. Only an accepted form whose `approve` is
/// `true` is a yes; a decline, a dismissal (`cancel`) and an accepted `false` are a no (with
/// the user's reason, if a short one came); an answer that does not follow the form is neither,
/// and the call does not run.
pub(crate) fn decision(result: &ElicitResult) -> Decision {
    match result.action {
        ElicitationAction::Decline | ElicitationAction::Cancel => Decision::Denied { reason: None },
        ElicitationAction::Accept => {
            let content = result.content.as_ref().and_then(Value::as_object);
            let reason = content
                .and_then(|c| c.get("reason"))
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|r| !r.is_empty())
                .map(|r| r.chars().take(500).collect::<String>());
            match content.and_then(|c| c.get("approve")) {
                Some(Value::Bool(true)) => Decision::Approved,
                Some(Value::Bool(false)) => Decision::Denied { reason },
                _ => Decision::Unavailable(
                    "the client's answer to the approval question has no boolean `approve`".into(),
                ),
            }
        }
        // An action of a later revision: not a yes.
        _ => Decision::Unavailable("the client answered with an unknown action".into()),
    }
}

/// The client path of a call that asks through `elicitation/create` (up to 2025-11-25): only
/// approvals; MCP serves server tools, so nothing else ever goes to the client.
pub(crate) struct Elicit {
    pub(crate) peer: rmcp::Peer<RoleServer>,
    pub(crate) form: ElicitRequestParams,
    pub(crate) timeout: Duration,
}

impl ClientPath for Elicit {
    fn call(&self, _call: ClientCall) -> ClientFuture {
        Box::pin(std::future::ready(Err(ClientFailure::Disconnected)))
    }

    fn notify(&self, _call: ClientCall) -> Result<(), ClientFailure> {
        Err(ClientFailure::Disconnected)
    }

    fn approve(&self, _request: ApprovalRequest) -> ApprovalFuture {
        let (peer, form, timeout) = (self.peer.clone(), self.form.clone(), self.timeout);
        Box::pin(async move {
            match peer
                .create_elicitation_with_timeout(form, Some(timeout))
                .await
            {
                Ok(result) => decision(&result),
                Err(rmcp::ServiceError::Timeout { .. }) => Decision::TimedOut { after: timeout },
                Err(e) => Decision::Unavailable(format!("the elicitation request failed: {e}")),
            }
        })
    }
}

/// A client path that answers with a decision already known (an MRTR retry's answer), so that
/// the engine decides what it means exactly as it does for every other path.
pub(crate) struct Answered(pub(crate) Mutex<Option<Decision>>);

impl ClientPath for Answered {
    fn call(&self, _call: ClientCall) -> ClientFuture {
        Box::pin(std::future::ready(Err(ClientFailure::Disconnected)))
    }

    fn notify(&self, _call: ClientCall) -> Result<(), ClientFailure> {
        Err(ClientFailure::Disconnected)
    }

    fn approve(&self, _request: ApprovalRequest) -> ApprovalFuture {
        let decision = self
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .unwrap_or_else(|| Decision::Unavailable("the answer was already used".into()));
        Box::pin(std::future::ready(decision))
    }
}

/// A call that asked over MRTR and waits for the client to come back with the answer.
pub(crate) struct Waiting {
    /// The admitted call, still needing approval.
    pub(crate) admission: Admission,
    /// The arguments as the client sent them: a retry must send the same.
    pub(crate) arguments: JsonObject,
    /// Who asked; a retry must come from the same caller.
    pub(crate) principal: Option<Principal>,
    /// The session's calls the call was admitted into (its end is recorded there).
    pub(crate) calls: Arc<Mutex<super::server::Calls>>,
    pub(crate) asked: Instant,
}

/// The calls that wait for an answer over MRTR, by their opaque handle (`requestState`).
/// Shared by every session of a server: a 2026-07-28 client need not come back on the same
/// connection.
#[derive(Default)]
pub(crate) struct Pending {
    entries: Mutex<HashMap<String, Waiting>>,
    /// The handles of calls that timed out, with their tool, for a while: a late retry is
    /// told the call timed out rather than that its state is unknown.
    timed_out: Mutex<HashMap<String, (String, Instant)>>,
}

/// Why a retry's `requestState` does not name a waiting call of this tool, arguments and caller.
pub(crate) enum Unbound {
    /// No call waits under it (never asked, already answered, or expired and forgotten).
    Unknown,
    /// It waits for another tool, other arguments or another caller; it stays waiting.
    Mismatch(&'static str),
    /// It waited longer than the timeout.
    Expired(Box<Waiting>),
    /// It timed out before the retry came, and has ended as timed out.
    TimedOut,
}

impl Pending {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Waiting>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps `waiting` until its answer comes; the `input_required` result that asks, or the
    /// refusal when too many calls wait already.
    pub(crate) fn ask(
        &self,
        waiting: Waiting,
        form: ElicitRequestParams,
        timeout: Duration,
    ) -> Result<InputRequiredResult, Box<(Waiting, CallError)>> {
        self.expire(timeout);
        let mut entries = self.lock();
        if entries.len() >= MAX_PENDING {
            let name = waiting.admission.call().name.clone();
            let error = CallError::approval_unavailable(
                &name,
                "too many calls of this server wait for approval",
            );
            return Err(Box::new((waiting, error)));
        }
        let handle = format!("toolc-approval-{}", uuid::Uuid::new_v4().simple());
        entries.insert(handle.clone(), waiting);
        drop(entries);
        let mut requests = InputRequests::new();
        requests.insert(
            INPUT_KEY.to_owned(),
            InputRequest::Elicitation(ElicitRequest::new(form)),
        );
        Ok(InputRequiredResult::new(Some(requests), Some(handle)))
    }

    /// Takes the call waiting under `handle` when the retry is of the same tool, arguments and
    /// caller. A mismatch leaves it waiting (it may be a stray or forged retry).
    pub(crate) fn take(
        &self,
        handle: &str,
        tool: &str,
        arguments: &JsonObject,
        principal: Option<&Principal>,
        timeout: Duration,
    ) -> Result<Waiting, Unbound> {
        let mut entries = self.lock();
        let Some(waiting) = entries.get(handle) else {
            let timed_out = self.timed_out.lock().unwrap_or_else(|e| e.into_inner());
            return match timed_out.get(handle) {
                Some((name, _)) if name == tool => Err(Unbound::TimedOut),
                _ => Err(Unbound::Unknown),
            };
        };
        if waiting.admission.call().name != tool {
            return Err(Unbound::Mismatch("it was asked for a call of another tool"));
        }
        if &waiting.arguments != arguments {
            return Err(Unbound::Mismatch("it was asked for other arguments"));
        }
        if waiting.principal.as_ref().map(Principal::id) != principal.map(Principal::id) {
            return Err(Unbound::Mismatch("it was asked for another caller"));
        }
        let waiting = entries.remove(handle).ok_or(Unbound::Unknown)?;
        if waiting.asked.elapsed() > timeout {
            return Err(Unbound::Expired(Box::new(waiting)));
        }
        Ok(waiting)
    }

    /// Ends the calls that waited longer than `timeout`: each is recorded as timed out in its
    /// session (so that a repeat waiting for it is answered).
    pub(crate) fn expire(&self, timeout: Duration) {
        let expired: Vec<(String, Waiting)> = {
            let mut entries = self.lock();
            let old: Vec<String> = entries
                .iter()
                .filter(|(_, w)| w.asked.elapsed() > timeout)
                .map(|(k, _)| k.clone())
                .collect();
            old.into_iter()
                .filter_map(|k| entries.remove(&k).map(|w| (k, w)))
                .collect()
        };
        let mut timed_out = self.timed_out.lock().unwrap_or_else(|e| e.into_inner());
        // Remembered for ten timeouts, and at most as many as may wait.
        timed_out.retain(|_, (_, at)| at.elapsed() < timeout.saturating_mul(10));
        for (handle, waiting) in expired {
            if timed_out.len() < MAX_PENDING {
                let name = waiting.admission.call().name.clone();
                timed_out.insert(handle, (name, Instant::now()));
            }
            waiting.time_out(timeout);
        }
    }
}

impl Waiting {
    /// The call waited past `timeout`: its outcome, recorded in its session.
    pub(crate) fn time_out(self, timeout: Duration) -> crate::dispatch::CallOutcome {
        let call = self.admission.call();
        let error = CallError::approval_timeout(&call.name, timeout);
        let outcome = crate::dispatch::CallOutcome::failed(&call.call_id, error);
        super::server::finish(&self.calls, &call.call_id, &outcome);
        outcome
    }
}

/// The decision a retry carries for the question asked under [`INPUT_KEY`].
pub(crate) fn retry_decision(responses: Option<&rmcp::model::InputResponses>) -> Decision {
    let Some(answer) = responses.and_then(|r| r.get(INPUT_KEY)) else {
        return Decision::Unavailable(
            "the retry carries no answer to the approval question".into(),
        );
    };
    match serde_json::from_value::<ElicitResult>(answer.clone()) {
        Ok(result) => decision(&result),
        Err(e) => Decision::Unavailable(format!(
            "the answer to the approval question is not an elicitation result: {e}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn result(v: Value) -> ElicitResult {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn only_an_accepted_true_is_a_yes() {
        let yes = result(json!({"action": "accept", "content": {"approve": true}}));
        assert_eq!(decision(&yes), Decision::Approved);
        let no = result(
            json!({"action": "accept", "content": {"approve": false, "reason": " not now "}}),
        );
        assert_eq!(
            decision(&no),
            Decision::Denied {
                reason: Some("not now".into())
            }
        );
        for v in [
            json!({"action": "decline"}),
            json!({"action": "cancel"}),
            json!({"action": "decline", "content": {"approve": true}}),
        ] {
            assert_eq!(decision(&result(v)), Decision::Denied { reason: None });
        }
        for v in [
            json!({"action": "accept"}),
            json!({"action": "accept", "content": {"approve": "true"}}),
            json!({"action": "accept", "content": {"approve": 1}}),
            json!({"action": "accept", "content": []}),
        ] {
            assert!(matches!(decision(&result(v)), Decision::Unavailable(_)));
        }
    }

    #[test]
    fn a_retry_answer_that_is_not_an_elicitation_result_is_no_yes() {
        let mut r = rmcp::model::InputResponses::new();
        assert!(matches!(retry_decision(Some(&r)), Decision::Unavailable(_)));
        assert!(matches!(retry_decision(None), Decision::Unavailable(_)));
        r.insert(INPUT_KEY.into(), json!("yes"));
        assert!(matches!(retry_decision(Some(&r)), Decision::Unavailable(_)));
        r.insert(
            INPUT_KEY.into(),
            json!({"action": "accept", "content": {"approve": true}}),
        );
        assert_eq!(retry_decision(Some(&r)), Decision::Approved);
        r.insert(
            INPUT_KEY.into(),
            json!({"action": "accept", "content": {"approve": true, "reason": "x".repeat(100_000)}}),
        );
        assert_eq!(retry_decision(Some(&r)), Decision::Approved);
    }

    #[test]
    fn a_long_reason_is_cut() {
        let no = result(
            json!({"action": "accept", "content": {"approve": false, "reason": "é".repeat(10_000)}}),
        );
        let Decision::Denied { reason: Some(r) } = decision(&no) else {
            panic!()
        };
        assert_eq!(r.chars().count(), 500);
    }
}
