//! What the page sends that is the browser protocol's own, for every provider: call results,
//! approval answers, refusals of what may not go upstream, and the page leaving.

use super::*;

impl Core {
    /// The browser protocol's own events, the same on every provider: a client call's result,
    /// an approval answer, and any other `toolc.*` event, none of which is ever the model's.
    /// `None`: the event is the codec's to check.
    pub(super) fn protocol_event(&mut self, kind: Option<&str>, text: &str) -> Option<Verdict> {
        match kind? {
            kind @ ("function_call.result" | "tool.result") => Some(self.result_event(kind, text)),
            "toolc.approval.response" => {
                self.approval_answer(text);
                Some(Verdict::Drop)
            }
            other if other.starts_with("toolc.") => Some(Verdict::Drop),
            _ => None,
        }
    }

    /// A client call's result in either naming: checked and handed to the waiting call, never
    /// forwarded.
    fn result_event(&mut self, kind: &str, text: &str) -> Verdict {
        let naming = Naming::of_result_type(kind).unwrap_or_default();
        let result = match serde_json::from_str::<Value>(text) {
            Ok(v) => browser::decode_result(naming, &v),
            Err(_) => Err(Malformed::MissingCallId),
        };
        self.browser_result(result);
        Verdict::Drop
    }

    /// Drops a browser event the model must not see, and tells the browser why.
    pub(super) fn refuse_browser_event(&mut self, refused: guard::Refused) -> Verdict {
        Counters::bump(&self.counters_ref().refused_browser_events);
        let message = refused.to_string();
        let error = json!({
            "type": "error",
            "error": { "type": "relay_refused", "code": refused.code(), "message": message },
        });
        self.outputs.push_back(Output::ToBrowser(error.to_string()));
        self.note(Note::BrowserEventRefused {
            code: refused.code(),
            message,
        });
        Verdict::Drop
    }

    /// The page's answer to an approval request: it decides the one call the request was
    /// made for (with the arguments the session holds), once.
    fn approval_answer(&mut self, text: &str) {
        let answer = serde_json::from_str::<Value>(text)
            .map_err(|_| browser::BadAnswer::MissingApprovalId)
            .and_then(|v| browser::decode_approval_answer(&v));
        let answer = match answer {
            Ok(answer) => answer,
            Err(bad) => {
                Counters::bump(&self.counters_ref().results_rejected);
                return self.note(Note::ApprovalAnswerRejected {
                    approval_id: String::new(),
                    why: bad.as_str().to_owned(),
                });
            }
        };
        let open = lock(&self.browser.state)
            .approvals
            .remove(&answer.approval_id);
        let Some(open) = open else {
            Counters::bump(&self.counters_ref().results_rejected);
            return self.note(Note::ApprovalAnswerRejected {
                approval_id: answer.approval_id,
                why: "no such open approval request".into(),
            });
        };
        let decision = if answer.approved {
            Counters::bump(&self.counters_ref().approvals_granted);
            Decision::Approved
        } else {
            Decision::Denied {
                reason: answer.reason,
            }
        };
        let _ = open.reply.send(decision);
    }

    pub(super) fn reject(&self, call_id: &str, reason: RejectReason) {
        Counters::bump(&self.counters_ref().results_rejected);
        self.note(Note::ResultRejected {
            call_id: call_id.to_owned(),
            reason,
        });
    }

    pub(super) fn browser_result(&mut self, result: Result<BrowserResult, Malformed>) {
        let result = match result {
            Ok(r) => r,
            Err(m) => return self.reject("", RejectReason::Malformed(m)),
        };
        match self.calls.get(&result.call_id).map(|c| c.kind) {
            None => return self.reject(&result.call_id, RejectReason::UnknownCall),
            Some(CallKind::Client) => {}
            Some(_) => return self.reject(&result.call_id, RejectReason::NotRoutedToBrowser),
        }
        if !self.tracker.is_open(&result.call_id) {
            return self.reject(&result.call_id, RejectReason::NotOpen);
        }
        let reply = lock(&self.browser.state).pending.remove(&result.call_id);
        match reply.map(|pending| pending.reply.send(Ok(result.output))) {
            Some(Ok(())) => Counters::bump(&self.counters_ref().results_accepted),
            _ => self.reject(&result.call_id, RejectReason::NotOpen),
        }
    }

    /// The page's connection dropped and the driver holds the session for it.
    pub(super) fn browser_away(&mut self) {
        lock(&self.browser.state).away = true;
    }

    /// The page is back: the messages of its open calls and approval requests, in order.
    pub(super) fn browser_resumed(&mut self) -> Vec<String> {
        let mut state = lock(&self.browser.state);
        state.away = false;
        if !state.connected {
            return Vec::new();
        }
        state.open_messages()
    }

    /// The browser went away: its open calls fail at once (their results reach the model
    /// through [`SessionEvents`]), and later client calls fail as disconnected.
    pub(super) fn browser_closed(&mut self) {
        let pending = {
            let mut state = lock(&self.browser.state);
            state.connected = false;
            state.sent_notify.clear();
            // Waiting approvals end as "nobody to ask".
            state.approvals.clear();
            std::mem::take(&mut state.pending)
        };
        // Dropping the senders wakes every waiting call with "disconnected"; running executors
        // see their cancellation signal.
        drop(pending);
        self.scope.cancel();
        self.outputs.retain(|o| matches!(o, Output::ToModel(_)));
    }
}
