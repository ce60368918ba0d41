//! Inbound browser events: results, approval answers and everything the page sends that is
//! read strictly before anything reaches the model.

use super::*;

impl Session {
    // ---- browser → model -------------------------------------------------------------------

    /// An event from the browser. Results are handled here and never forwarded; a
    /// `function_call` item is dropped; a `session.update` gets the declarations merged in;
    /// everything else passes.
    pub fn on_browser_event(&mut self, text: &str) -> Verdict {
        let top = match guard::top_level(text) {
            Ok(top) => top,
            Err(refused) => return self.refuse_browser_event(refused),
        };
        // Audio input (OpenAI's `input_audio_buffer.append`, Live's `realtimeInput`) is what a
        // driver may drop when too much waits for a model that is not ready; nothing else is.
        self.last_input_audio = match top.kind.as_deref() {
            Some(kind) => kind == "input_audio_buffer.append",
            None => top
                .first_member
                .as_deref()
                .is_some_and(|m| crate::gemini_live::spelling::camel(m) == "realtimeInput"),
        };
        let kind = match top.kind {
            Some(kind) => kind,
            // Live messages have no `type`: read strictly, then checked as Live input.
            None if self.config.provider.is_live() => {
                return self.gemini_browser_message(&top, text);
            }
            None => return self.refuse_browser_event(guard::Refused::NoType),
        };
        if self.config.provider.is_live() {
            return self.gemini_browser_event(&kind, text);
        }
        match kind.as_ref() {
            "function_call.result" | "tool.result" => self.result_event(&kind, text),
            "conversation.item.create" => {
                let Ok(v) = serde_json::from_str::<Value>(text) else {
                    return Verdict::Forward;
                };
                if let Some(result) = browser::decode_item_result(&v) {
                    self.browser_result(result);
                    return Verdict::Drop;
                }
                let item = v.get("item");
                // A call item would put a call in the model's mouth that it never made (its
                // result could not come from the browser either): the less trusted side
                // does not write the model's calls. Any other item that names a call
                // (`call_id`) is refused the same way: only results, read above, may.
                let call_id = match item.and_then(openai::function_call_item) {
                    Some(call) => Some(call.call_id.map(str::to_owned)),
                    None => item
                        .and_then(|i| i.get("call_id"))
                        .map(|id| id.as_str().map(str::to_owned)),
                };
                match call_id {
                    Some(call_id) => {
                        Counters::bump(&self.counters_ref().dropped_browser_events);
                        self.note(Note::BrowserCallDropped { call_id });
                        Verdict::Drop
                    }
                    None => Verdict::Forward,
                }
            }
            "toolc.approval.response" => {
                self.approval_answer(text);
                Verdict::Drop
            }
            // The browser protocol's own events are never the model's.
            other if other.starts_with("toolc.") => Verdict::Drop,
            "response.create" => {
                let Ok(v) = serde_json::from_str::<Value>(text) else {
                    return Verdict::Forward;
                };
                let declarations = &self.declarations;
                let declared = |name: &str| {
                    declarations
                        .iter()
                        .any(|d| d.get("name").and_then(Value::as_str) == Some(name))
                };
                match guard::check_response_create(&v, declared) {
                    Ok(()) => Verdict::Forward,
                    Err(refused) => self.refuse_browser_event(refused),
                }
            }
            "session.update" => {
                let Ok(mut v) = serde_json::from_str::<Value>(text) else {
                    return Verdict::Forward;
                };
                let merge = openai::merge_session_update(&mut v, &self.declarations);
                if let Some(markers) = self.config.markers.clone() {
                    let catalog = markers.instructions_with(self.config.live_tools.as_deref());
                    if let Some(theirs) =
                        markers.merge_catalog_into_session_update(&mut v, &catalog)
                    {
                        self.their_instructions = Some(theirs);
                    }
                }
                for name in merge.dropped_tools {
                    self.note(Note::BrowserToolDropped { name });
                }
                Verdict::Replace(v.to_string())
            }
            _ => Verdict::Forward,
        }
    }

    /// A client call's result in either naming: checked and handed to the waiting call, never
    /// forwarded (both providers).
    pub(super) fn result_event(&mut self, kind: &str, text: &str) -> Verdict {
        let naming = Naming::of_result_type(kind).unwrap_or_default();
        let result = match serde_json::from_str::<Value>(text) {
            Ok(v) => browser::decode_result(naming, &v),
            Err(_) => Err(Malformed::MissingCallId),
        };
        self.browser_result(result);
        Verdict::Drop
    }

    /// A binary frame from the browser: never forwarded (the protocol is JSON text, and nothing
    /// in a binary frame is checked).
    pub fn on_browser_binary(&mut self) -> Verdict {
        self.refuse_browser_event(guard::Refused::BinaryFrame)
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
    pub(super) fn approval_answer(&mut self, text: &str) {
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
        match reply.map(|tx| tx.send(Ok(result.output))) {
            Some(Ok(())) => Counters::bump(&self.counters_ref().results_accepted),
            _ => self.reject(&result.call_id, RejectReason::NotOpen),
        }
    }

    /// The browser went away: its open calls fail at once (their results reach the model
    /// through [`SessionEvents`]), and later client calls fail as disconnected.
    pub fn browser_closed(&mut self) {
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

    /// Whether the browser event just read ([`Session::on_browser_event`]) was audio input,
    /// which a driver may drop, oldest first, when more waits for the model than it holds.
    pub fn last_input_was_audio(&self) -> bool {
        self.last_input_audio
    }

    /// Whether the browser is still attached.
    pub fn browser_connected(&self) -> bool {
        lock(&self.browser.state).connected
    }
}
