//! The Gemini Live side of a session: its messages read into the neutral core's calls, batches
//! and cancellations, and the core's results written as Live `toolResponse`s.
//!
//! How the core's rules land on Live:
//! - A batch is the calls of one `toolCall`, with any `functionCall` parts of the model turn
//!   before it (they run at once, and a call reported in both places runs once). The
//!   `toolCall` closes the batch; so does the end of the turn, for calls only parts reported.
//! - The batch's results go in one `toolResponse` when its last call resolves: that is Live's
//!   continuation (it has no `response.create`), so the model goes on once per batch.
//! - `toolCallCancellation.ids` take the barge-in path ([`Session::cancel_call`]): the executor's
//!   signal, `toolc.cancel` to the page, later results refused. The model takes no result for a
//!   cancelled call, so none is sent.
//! - `mode: async` tools are `NON_BLOCKING`: "started" goes at once with `willContinue` and
//!   `SILENT` scheduling, the final result later with the configured scheduling.
//! - Server calls never reach the browser: call-bearing messages are rewritten without them, and
//!   one that cannot be read is dropped.
//! - Every message is read in both spellings of its fields (`toolCall` and `tool_call`), as
//!   Google's parser reads them; `setupComplete`, `goAway` and `sessionResumptionUpdate` drive
//!   the connection's life (`live_link.rs`).

use super::*;

impl Session {
    pub(super) fn gemini_model_event(&mut self, text: &str) -> Verdict {
        let message = match gemini_live::read(text) {
            gemini_live::Read::Plain(plain) => {
                if self.open_batch.is_some() && plain.ends_turn {
                    self.close_batch();
                }
                if plain.setup_complete {
                    return self.live_setup_complete();
                }
                return Verdict::Forward;
            }
            gemini_live::Read::GoAway { time_left } => return self.live_go_away(time_left),
            gemini_live::Read::Resumption(update) => return self.live_resumption(update),
            gemini_live::Read::Unreadable(why) => {
                return self.unreadable_model_event(&format!("(Live message: {why})"))
            }
            gemini_live::Read::Calls(message) => message,
        };
        let batch = match &self.open_batch {
            Some(batch) => batch.clone(),
            None => {
                self.batches += 1;
                format!("live-batch-{}", self.batches)
            }
        };
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
        if !message.calls.is_empty() {
            self.open_batch = Some(batch);
        }
        if message.ends_batch {
            self.close_batch();
        }
        self.provider_cancel(&message.cancelled);
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

    /// Every call of the open batch is known: its `toolResponse` goes when the last resolves
    /// (now, if they all have).
    fn close_batch(&mut self) {
        if let Some(batch) = self.open_batch.take() {
            if self.tracker.response_done(&batch) {
                self.gemini_continuation(&batch);
            }
        }
    }

    /// The model cancelled calls (`toolCallCancellation`): the barge-in path, and no result is
    /// sent for them. All are marked first, so that the batch one of them completes does not
    /// carry another's result.
    pub(super) fn provider_cancel(&mut self, call_ids: &[String]) {
        let known: Vec<&String> = call_ids
            .iter()
            .filter(|id| self.calls.contains_key(id.as_str()))
            .collect();
        for call_id in &known {
            self.forget_result(call_id);
        }
        for call_id in known {
            let keeps_running = self
                .calls
                .get(call_id.as_str())
                .and_then(|info| self.registry.definition(&info.name))
                .is_some_and(|def| !def.cancels_on_interruption());
            if keeps_running {
                // `cancel_on_interruption: false`: the work goes on (the video plays to its
                // end), but the model no longer takes its result, so the batch does not wait
                // for it.
                self.detach_call(call_id);
                continue;
            }
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
    }

    /// The model takes no result for `call_id` any more: none is sent, and one that resolved
    /// already leaves the batch's `toolResponse` it was waiting for.
    pub(super) fn forget_result(&mut self, call_id: &str) {
        self.provider_cancelled.insert(call_id.to_owned());
        if let Some(batch) = self.tracker.response_of(call_id) {
            if let Some(pending) = self.pending_responses.get_mut(batch) {
                pending.retain(|entry| entry["id"].as_str() != Some(call_id));
            }
        }
    }

    /// A call the model cancelled that keeps running: it leaves its batch now, and whatever it
    /// ends with later is nobody's to hear.
    fn detach_call(&mut self, call_id: &str) {
        if !self.tracker.is_open(call_id) {
            return;
        }
        if let Some(info) = self.calls.get_mut(call_id) {
            info.background = false;
        }
        if self.tracker.resolve(call_id) == Resolved::Continue {
            if let Some(batch) = self.tracker.response_of(call_id).map(str::to_owned) {
                self.gemini_continuation(&batch);
            }
        }
    }

    /// A resolved call's result for the model: "started" of a `NON_BLOCKING` call goes at once;
    /// any other waits for its batch's `toolResponse`.
    pub(super) fn gemini_result(&mut self, call_id: &str, outcome: &CallOutcome) {
        let started = !outcome.is_error() && self.calls.get(call_id).is_some_and(|c| c.background);
        // Vertex takes no interim result: the model talks on while the call runs, and hears
        // its result once, when it is done.
        if started && !self.config.provider.takes_result_scheduling() {
            return;
        }
        if started {
            if let Some(entry) =
                self.live_response(call_id, outcome, Some(Scheduling::Silent), true)
            {
                self.outputs
                    .push_back(Output::ToModel(gemini_live::tool_response(vec![entry])));
            }
        } else if let Some(entry) = self.live_response(call_id, outcome, None, false) {
            let batch = self.tracker.response_of(call_id).unwrap_or_default();
            self.pending_responses
                .entry(batch.to_owned())
                .or_default()
                .push(entry);
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
        let scheduling = scheduling.filter(|_| self.config.provider.takes_result_scheduling());
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

    /// The continuation of a batch whose calls all resolved: its results in one `toolResponse`.
    pub(super) fn gemini_continuation(&mut self, batch: &str) {
        let Some(responses) = self.pending_responses.remove(batch) else {
            return;
        };
        if responses.is_empty() {
            return;
        }
        Counters::bump(&self.counters_ref().continuations);
        self.outputs
            .push_back(Output::ToModel(gemini_live::tool_response(responses)));
    }

    /// The final result of a `NON_BLOCKING` call, with the tool's scheduling.
    pub(super) fn gemini_background_result(&mut self, call_id: &str, outcome: CallOutcome) {
        let scheduling = self
            .calls
            .get(call_id)
            .and_then(|c| self.registry.definition(&c.name))
            .map(|def| self.config.scheduling(def));
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
    /// number or string parsers read differently). Audio, video and text input pass unread; the
    /// browser may not send `setup` (the server declares the tools), `toolResponse` (results go
    /// through the browser protocol, where the session checks them) or tools in
    /// `contextUpdate`, nor put calls or results in `clientContent`; anything else is refused.
    pub(super) fn gemini_browser_message(
        &mut self,
        top: &guard::TopLevel<'_>,
        text: &str,
    ) -> Verdict {
        match guard::live_input(top) {
            Ok(guard::LiveInput::Forward) => return Verdict::Forward,
            Ok(guard::LiveInput::LookInside) => {}
            Err(refused) => return self.refuse_browser_event(refused),
        }
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
