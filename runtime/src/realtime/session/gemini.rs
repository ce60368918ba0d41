//! The Gemini Live side of a session: its messages read into the neutral core's calls, batches
//! and cancellations, and the core's results written as Live `toolResponse`s.
//!
//! How the core's rules land on Live:
//! - A call-bearing message (`toolCall`, or `functionCall` parts of `serverContent`) is one
//!   batch, complete on arrival. A call reported in both places runs once.
//! - The batch's results go in one `toolResponse` when its last call resolves: that is Live's
//!   continuation (it has no `response.create`), so the model goes on once per batch.
//! - `toolCallCancellation.ids` take the barge-in path ([`Session::cancel_call`]): the executor's
//!   signal, `toolc.cancel` to the page, later results refused. The model takes no result for a
//!   cancelled call, so none is sent.
//! - `mode: async` tools are `NON_BLOCKING`: "started" goes at once with `willContinue` and
//!   `SILENT` scheduling, the final result later with the configured scheduling.
//! - Server calls never reach the browser: call-bearing messages are rewritten without them, and
//!   one that cannot be read is dropped.

use super::*;

impl Session {
    pub(super) fn gemini_model_event(&mut self, text: &str) -> Verdict {
        let message = match gemini_live::read(text) {
            gemini_live::Read::Plain => return Verdict::Forward,
            gemini_live::Read::Unreadable => return self.unreadable_model_event("(Live message)"),
            gemini_live::Read::Calls(message) => message,
        };
        self.batches += 1;
        let batch = format!("live-batch-{}", self.batches);
        let mut hidden = false;
        for call in &message.calls {
            hidden |= !self.learn_item(None, call.id.as_deref(), call.name.as_deref());
            self.call_reported(
                Some(&batch),
                call.id.as_deref(),
                call.name.as_deref(),
                &call.arguments,
            );
        }
        if !message.calls.is_empty() && self.tracker.response_done(&batch) {
            self.continuation();
        }
        for id in &message.cancelled {
            self.provider_cancel(id);
        }
        // Whatever names calls is rewritten from what was read, so the browser sees exactly
        // what the session acted on, without server calls.
        let call_visible = &self.call_visible;
        let visible = |id: &str| call_visible.get(id).copied().unwrap_or(false);
        hidden |= message.cancelled.iter().any(|id| !visible(id));
        let scrubbed = gemini_live::scrub(message.message, visible);
        if hidden {
            Counters::bump(&self.counters_ref().scrubbed_events);
        }
        match scrubbed {
            Some(text) => Verdict::Replace(text),
            None => Verdict::Drop,
        }
    }

    /// The model cancelled a call (`toolCallCancellation`): the barge-in path, and no result is
    /// sent for it.
    fn provider_cancel(&mut self, call_id: &str) {
        if !self.calls.contains_key(call_id) {
            return;
        }
        self.provider_cancelled.insert(call_id.to_owned());
        let cancelled = self.cancel_call(call_id);
        self.note(Note::Interrupted {
            response_id: self
                .tracker
                .response_of(call_id)
                .unwrap_or_default()
                .to_owned(),
            cancelled: usize::from(cancelled),
        });
    }

    /// A resolved call's result for the model: "started" of a `NON_BLOCKING` call goes at once;
    /// any other waits for its batch's `toolResponse`.
    pub(super) fn gemini_result(&mut self, call_id: &str, outcome: &CallOutcome) {
        let started = !outcome.is_error() && self.calls.get(call_id).is_some_and(|c| c.background);
        if started {
            if let Some(entry) =
                self.live_response(call_id, outcome, Some(Scheduling::Silent), true)
            {
                self.outputs
                    .push_back(Output::ToModel(gemini_live::tool_response(vec![entry])));
            }
        } else if let Some(entry) = self.live_response(call_id, outcome, None, false) {
            self.pending_responses.push(entry);
        }
    }

    /// The `functionResponses` entry of a call's outcome; `None` for a call the model cancelled
    /// (it takes no result) or never made.
    fn live_response(
        &self,
        call_id: &str,
        outcome: &CallOutcome,
        scheduling: Option<Scheduling>,
        will_continue: bool,
    ) -> Option<Value> {
        if self.provider_cancelled.contains(call_id) {
            return None;
        }
        let info = self.calls.get(call_id)?;
        Some(gemini_live::function_response(
            call_id,
            &info.name,
            &outcome.output,
            outcome.is_error(),
            scheduling,
            will_continue,
        ))
    }

    /// The continuation of a batch: its results in one `toolResponse`.
    pub(super) fn gemini_continuation(&mut self) {
        if self.pending_responses.is_empty() {
            return;
        }
        let responses = std::mem::take(&mut self.pending_responses);
        Counters::bump(&self.counters_ref().continuations);
        self.outputs
            .push_back(Output::ToModel(gemini_live::tool_response(responses)));
    }

    /// The final result of a `NON_BLOCKING` call, with the tool's scheduling.
    pub(super) fn gemini_background_result(&mut self, call_id: &str, outcome: CallOutcome) {
        let scheduling = self
            .calls
            .get(call_id)
            .map(|c| self.config.scheduling(&c.name));
        let Some(entry) = self.live_response(call_id, &outcome, scheduling, false) else {
            return;
        };
        Counters::bump(&self.counters_ref().background_results);
        self.outputs
            .push_back(Output::ToModel(gemini_live::tool_response(vec![entry])));
    }

    /// A browser event with a `type` in a Live session: the browser protocol's own events (results,
    /// approval answers); nothing with a `type` is Live input, so nothing else goes upstream.
    pub(super) fn gemini_browser_event(&mut self, kind: &str, text: &str) -> Verdict {
        match kind {
            "function_call.result" | "tool.result" => self.result_event(kind, text),
            "toolc.approval.response" => {
                self.approval_answer(text);
                Verdict::Drop
            }
            _ => Verdict::Drop,
        }
    }

    /// A Live client message from the browser (read strictly already: no duplicate keys, no
    /// number or string parsers read differently). Audio, video and text input pass; the
    /// browser may not send `setup` (the server declares the tools) or `toolResponse` (results
    /// go through the browser protocol, where the session checks them), nor put calls or
    /// results in `clientContent`.
    pub(super) fn gemini_browser_message(&mut self, text: &str) -> Verdict {
        let message = match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(message)) => message,
            _ => return self.refuse_browser_event(guard::Refused::NoType),
        };
        match guard::check_live_client_message(&message) {
            Ok(()) => Verdict::Forward,
            Err(refused) => self.refuse_browser_event(refused),
        }
    }
}
