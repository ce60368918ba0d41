//! The browser as a call's client: the state a session shares with its call tasks, and the
//! `ClientPath` they use to ask for approval, send a client call and wait for its reply.

use super::*;

pub(super) type Reply = oneshot::Sender<Result<String, ClientFailure>>;

#[derive(Debug)]
pub(super) struct BrowserState {
    pub(super) connected: bool,
    /// The page's connection dropped and the driver holds the session for it to come back
    /// ([`RealtimeSession::browser_away`]): calls and approval requests are registered but not sent;
    /// [`RealtimeSession::browser_resumed`] sends every open one again.
    pub(super) away: bool,
    pub(super) naming: Naming,
    pub(super) pending: HashMap<String, PendingCall>,
    /// Calls the session already sent to the browser, in the model's order, before their task
    /// ran: the task's `call` takes the reply channel from here (or `notify` its marker) instead
    /// of sending the call again. Sending from the session keeps the browser's calls in order
    /// whatever order the tasks run in.
    pub(super) sent_waiting: HashMap<String, oneshot::Receiver<Result<String, ClientFailure>>>,
    pub(super) sent_notify: HashSet<String>,
    /// Open approval requests by their id: the call each one is bound to and the answer's way
    /// back to the call's task.
    pub(super) approvals: HashMap<String, OpenApproval>,
    pub(super) next_approval: u64,
    /// Numbers the messages of open calls and approval requests, so that a resumed page gets
    /// them again in the order they were first made.
    pub(super) next_open: u64,
}

impl BrowserState {
    pub(super) fn next_open(&mut self) -> u64 {
        self.next_open += 1;
        self.next_open
    }

    /// The messages of every open client call and approval request, in the order they were
    /// made: what a resumed page must get again.
    pub(super) fn open_messages(&self) -> Vec<String> {
        let mut open: Vec<(u64, &String)> = self
            .pending
            .values()
            .map(|p| (p.order, &p.text))
            .chain(self.approvals.values().map(|a| (a.order, &a.text)))
            .collect();
        open.sort();
        open.into_iter().map(|(_, text)| text.clone()).collect()
    }
}

/// A client call waiting for the page's result: the way back to its task, and the message
/// that asked for it (sent again to a page that resumes).
#[derive(Debug)]
pub(super) struct PendingCall {
    pub(super) reply: Reply,
    pub(super) text: String,
    pub(super) order: u64,
}

#[derive(Debug)]
pub(super) struct OpenApproval {
    pub(super) call_id: String,
    pub(super) reply: oneshot::Sender<Decision>,
    /// The request as the page gets it (again, when it resumes).
    pub(super) text: String,
    pub(super) order: u64,
}

/// The client path of one session: calls become browser messages, replies arrive through
/// [`RealtimeSession::on_browser_event`].
#[derive(Clone, Debug)]
pub(super) struct BrowserPath {
    pub(super) state: Arc<Mutex<BrowserState>>,
    pub(super) tx: mpsc::UnboundedSender<Inner>,
    pub(super) approval_timeout: Duration,
    pub(super) counters: Arc<Counters>,
}

pub(super) fn lock(state: &Mutex<BrowserState>) -> MutexGuard<'_, BrowserState> {
    // Nothing panics while holding this lock; recover rather than spread a poison.
    state.lock().unwrap_or_else(|e| e.into_inner())
}

/// Removes a pending call when its waiter goes away (deadline, task end), so that a late reply
/// finds nothing to answer.
pub(super) struct PendingGuard {
    pub(super) state: Arc<Mutex<BrowserState>>,
    pub(super) call_id: String,
}

impl Drop for PendingGuard {
    fn drop(&mut self) {
        lock(&self.state).pending.remove(&self.call_id);
    }
}

/// Withdraws an approval request when its waiter goes away unanswered (timeout, interruption,
/// the call's task ended): the page is told to close its question, and a late answer finds
/// nothing to approve.
pub(super) struct ApprovalGuard {
    pub(super) state: Arc<Mutex<BrowserState>>,
    pub(super) tx: mpsc::UnboundedSender<Inner>,
    pub(super) approval_id: String,
}

impl Drop for ApprovalGuard {
    fn drop(&mut self) {
        let mut state = lock(&self.state);
        if state.approvals.remove(&self.approval_id).is_some() && state.connected {
            let text = browser::encode_approval_cancel(&self.approval_id, "withdrawn");
            let _ = self.tx.send(Inner::ToBrowser(text));
        }
    }
}

impl ClientPath for BrowserPath {
    fn approve(&self, request: ApprovalRequest) -> ApprovalFuture {
        let (tx, rx) = oneshot::channel();
        let approval_id = {
            let mut state = lock(&self.state);
            if !state.connected {
                return Box::pin(std::future::ready(Decision::Unavailable(
                    "the user's page is not connected".into(),
                )));
            }
            state.next_approval += 1;
            let approval_id = format!("approval_{}", state.next_approval);
            let text = browser::encode_approval_request(
                &approval_id,
                &request.tool_call.name,
                request.location,
                &request.arguments(),
            );
            let order = state.next_open();
            state.approvals.insert(
                approval_id.clone(),
                OpenApproval {
                    call_id: request.tool_call.call_id.clone(),
                    reply: tx,
                    text: text.clone(),
                    order,
                },
            );
            // A page that is away is asked when it resumes.
            if !state.away && self.tx.send(Inner::ToBrowser(text)).is_err() {
                state.approvals.remove(&approval_id);
                return Box::pin(std::future::ready(Decision::Unavailable(
                    "the session is gone".into(),
                )));
            }
            Counters::bump(&self.counters.approvals_requested);
            approval_id
        };
        let guard = ApprovalGuard {
            state: self.state.clone(),
            tx: self.tx.clone(),
            approval_id,
        };
        let after = self.approval_timeout;
        Box::pin(async move {
            let _guard = guard;
            match tokio::time::timeout(after, rx).await {
                Ok(Ok(decision)) => decision,
                Ok(Err(_)) => Decision::Unavailable("the user's page went away".into()),
                Err(_) => Decision::TimedOut { after },
            }
        })
    }

    fn call(&self, call: ClientCall) -> ClientFuture {
        let (tx, rx) = oneshot::channel();
        let rx = {
            let mut state = lock(&self.state);
            if let Some(rx) = state.sent_waiting.remove(&call.tool_call.call_id) {
                let guard = PendingGuard {
                    state: self.state.clone(),
                    call_id: call.tool_call.call_id,
                };
                return Box::pin(async move {
                    let _guard = guard;
                    rx.await.unwrap_or(Err(ClientFailure::Disconnected))
                });
            }
            if !state.connected {
                return Box::pin(std::future::ready(Err(ClientFailure::Disconnected)));
            }
            if state.pending.contains_key(&call.tool_call.call_id) {
                return Box::pin(std::future::ready(Err(ClientFailure::Rejected(
                    "a call with this id is already open".into(),
                ))));
            }
            // Inside the call's task: the current span is the call's own.
            let traceparent = crate::telemetry::traceparent(&tracing::Span::current());
            let text = browser::encode_call_traced(
                state.naming,
                &call.tool_call.call_id,
                &call.tool_call.name,
                &call.tool_call.arguments,
                traceparent.as_deref(),
            );
            let order = state.next_open();
            state.pending.insert(
                call.tool_call.call_id.clone(),
                PendingCall {
                    reply: tx,
                    text: text.clone(),
                    order,
                },
            );
            // A page that is away gets the call when it resumes.
            if !state.away && self.tx.send(Inner::ToBrowser(text)).is_err() {
                state.pending.remove(&call.tool_call.call_id);
                return Box::pin(std::future::ready(Err(ClientFailure::Disconnected)));
            }
            rx
        };
        let guard = PendingGuard {
            state: self.state.clone(),
            call_id: call.tool_call.call_id,
        };
        Box::pin(async move {
            let _guard = guard;
            rx.await.unwrap_or(Err(ClientFailure::Disconnected))
        })
    }

    fn notify(&self, call: ClientCall) -> Result<(), ClientFailure> {
        let mut state = lock(&self.state);
        if state.sent_notify.remove(&call.tool_call.call_id) {
            return Ok(());
        }
        if !state.connected {
            return Err(ClientFailure::Disconnected);
        }
        let text = browser::encode_call(
            state.naming,
            &call.tool_call.call_id,
            &call.tool_call.name,
            &call.tool_call.arguments,
        );
        self.tx
            .send(Inner::ToBrowser(text))
            .map_err(|_| ClientFailure::Disconnected)
    }
}

/// Reports a call's outcome when its task ends, also when the task ends without one (it was
/// aborted, or something outside the registry's own guards panicked), so that a call never
/// stays open forever.
pub(super) struct DoneGuard {
    pub(super) tx: mpsc::UnboundedSender<Inner>,
    pub(super) call_id: String,
    pub(super) tool: String,
    pub(super) sent: bool,
}

impl DoneGuard {
    pub(super) fn send(mut self, outcome: CallOutcome) {
        self.sent = true;
        let _ = self.tx.send(Inner::Done {
            call_id: std::mem::take(&mut self.call_id),
            outcome,
        });
    }
}

impl Drop for DoneGuard {
    fn drop(&mut self) {
        if !self.sent {
            let error =
                CallError::panic(&self.tool, "the call's task ended without a result".into());
            let _ = self.tx.send(Inner::Done {
                call_id: self.call_id.clone(),
                outcome: CallOutcome::failed(&self.call_id, error),
            });
        }
    }
}
