//! The Gemini Live codec (the Gemini API's and Vertex AI's): its messages read into the core's
//! calls, batches and cancellations, and the core's results written as Live `toolResponse`s.
//!
//! How the core's rules land on Live:
//! - A batch is the calls of one `toolCall`, with any `functionCall` parts of the model turn
//!   before it (they run at once, and a call reported in both places runs once). The
//!   `toolCall` closes the batch; so does the end of the turn, for calls only parts reported.
//! - The batch's results go in one `toolResponse` when its last call resolves: that is Live's
//!   continuation (it has no `response.create`), so the model goes on once per batch.
//! - `toolCallCancellation.ids` take the barge-in path ([`Core::cancel_call`]): the executor's
//!   signal, `toolc.cancel` to the page, later results refused. The model takes no result for a
//!   cancelled call, so none is sent.
//! - `mode: async` tools are `NON_BLOCKING`: "started" goes at once with `willContinue` and
//!   `SILENT` scheduling, the final result later with the configured scheduling.
//! - Server calls never reach the browser: call-bearing messages are rewritten without them, and
//!   one that cannot be read is dropped.
//! - Every message is read in both spellings of its fields (`toolCall` and `tool_call`), as
//!   Google's parser reads them; `setupComplete`, `goAway` and `sessionResumptionUpdate` drive
//!   the connection's life (`live_link.rs`).
//! - Tools are declared once, in `setup`; Live has no out-of-band response for fillers.

use super::live_link::LiveLink;
use super::*;
use crate::gemini_live::{self as wire, Scheduling};

/// A Gemini Live session's wire state.
pub(super) struct LiveCodec {
    /// Function responses may carry `scheduling` and an interim result (`willContinue`): the
    /// Gemini API's Live, not Vertex AI's.
    pub(super) takes_scheduling: bool,
    /// Results waiting to go in their batch's one `toolResponse`.
    pub(super) pending_responses: HashMap<String, Vec<wire::FunctionResponse>>,
    /// Calls the model cancelled (`toolCallCancellation`); it takes no result for them.
    pub(super) provider_cancelled: HashSet<String>,
    /// The number of batches so far, which name them.
    batches: u64,
    /// The batch that model-turn `functionCall` parts opened and no `toolCall` or end of turn
    /// has closed yet.
    pub(super) open_batch: Option<String>,
    /// The model connection's life (`setupComplete`, resumption, `goAway`).
    pub(super) link: LiveLink,
}

impl LiveCodec {
    pub(super) fn new(config: &SessionConfig, takes_scheduling: bool) -> LiveCodec {
        LiveCodec {
            takes_scheduling,
            pending_responses: HashMap::new(),
            provider_cancelled: HashSet::new(),
            batches: 0,
            open_batch: None,
            link: LiveLink::new(config.live.clone()),
        }
    }
}

impl Codec for LiveCodec {
    fn first_message(&self, core: &Core) -> String {
        self.setup_message(core, None)
    }

    fn on_model_event(&mut self, core: &mut Core, text: &str) -> Verdict {
        let message = match wire::read(text) {
            wire::Read::Plain(plain) => {
                if self.open_batch.is_some() && plain.ends_turn {
                    self.close_batch(core);
                }
                if plain.setup_complete {
                    return self.setup_complete(core);
                }
                return Verdict::Forward;
            }
            wire::Read::GoAway { time_left } => return self.go_away(core, time_left),
            wire::Read::Resumption(update) => return self.resumption(core, update),
            wire::Read::Unreadable(why) => {
                return core.unreadable_model_event(&format!("(Live message: {why})"))
            }
            wire::Read::Calls(message) => message,
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
            hidden |= !core.learn_call(call.id.as_deref(), call.name.as_deref());
            core.call_reported(
                self,
                &batch,
                call.id.as_deref(),
                call.name.as_deref(),
                &call.arguments,
            );
        }
        if !message.calls.is_empty() {
            self.open_batch = Some(batch);
        }
        if message.ends_batch {
            self.close_batch(core);
        }
        self.provider_cancel(core, &message.cancelled);
        // Whatever names calls is rewritten from what was read, so the browser sees exactly
        // what the session acted on, without server calls.
        let visible = |id: &str| core.call_is_visible(id).unwrap_or(false);
        hidden |= message.cancelled.iter().any(|id| !visible(id));
        let scrubbed = wire::scrub(message.message, visible);
        if hidden {
            Counters::bump(&core.counters_ref().scrubbed_events);
        }
        match scrubbed {
            Some(text) => Verdict::Replace(text),
            None => Verdict::Drop,
        }
    }

    fn is_audio_output(&self, text: &str) -> bool {
        // A model turn's audio chunk: `serverContent` (the first member) with inline audio
        // data. Calls and their cancellations come in `toolCall` messages, never dropped.
        let head = &text.as_bytes()[..text.len().min(64)];
        head.windows(15).any(|w| w == b"\"serverContent\"")
            && text.contains("\"inlineData\"")
            && text.contains("\"audio/")
    }

    fn is_audio_input(&self, top: &guard::TopLevel<'_>) -> bool {
        top.kind.is_none()
            && top
                .first_member
                .as_deref()
                .is_some_and(|m| wire::spelling::camel(m) == "realtimeInput")
    }

    /// A message with a `type` is the browser protocol's own (results, approval answers):
    /// nothing with a `type` is Live input, so nothing else goes upstream. A Live client message
    /// (no `type`): audio, video and text input pass unread; the page may not send `setup` (the
    /// server declares the tools), `toolResponse` (results go through the browser protocol,
    /// where the session checks them) or tools in `contextUpdate`, nor put calls or results in
    /// `clientContent`; anything else is refused.
    fn on_browser_event(
        &mut self,
        core: &mut Core,
        top: guard::TopLevel<'_>,
        text: &str,
    ) -> Verdict {
        // Live's client messages have no `type`: a typed event that is not the browser
        // protocol's (which the core took) is nobody's.
        if top.kind.is_some() {
            return Verdict::Drop;
        }
        match guard::live_input(&top) {
            Ok(guard::LiveInput::Forward) => return Verdict::Forward,
            Ok(guard::LiveInput::LookInside) => {}
            Err(refused) => return core.refuse_browser_event(refused),
        }
        let message = match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(message)) => message,
            _ => return core.refuse_browser_event(guard::Refused::NoType),
        };
        match guard::check_live_client_message(&message) {
            Ok(()) => Verdict::Forward,
            Err(refused) => core.refuse_browser_event(refused),
        }
    }

    /// "Started" of a `NON_BLOCKING` call goes at once; any other result waits for its batch's
    /// `toolResponse`.
    fn write_result(&mut self, core: &mut Core, call_id: &str, outcome: &CallOutcome) {
        let started = !outcome.is_error() && core.calls.get(call_id).is_some_and(|c| c.background);
        // Vertex takes no interim result: the model talks on while the call runs, and hears
        // its result once, when it is done.
        if started && !self.takes_scheduling {
            return;
        }
        if started {
            if let Some(entry) =
                self.function_response(core, call_id, outcome, Some(Scheduling::Silent), true)
            {
                core.send_model(wire::tool_response(&[entry]));
            }
        } else if let Some(entry) = self.function_response(core, call_id, outcome, None, false) {
            let batch = core.tracker.response_of(call_id).unwrap_or_default();
            self.pending_responses
                .entry(batch.to_owned())
                .or_default()
                .push(entry);
        }
    }

    /// The continuation of a batch whose calls all resolved: its results in one `toolResponse`.
    fn all_resolved(&mut self, core: &mut Core, batch: &str) {
        let Some(responses) = self.pending_responses.remove(batch) else {
            return;
        };
        if responses.is_empty() {
            return;
        }
        Counters::bump(&core.counters_ref().continuations);
        core.send_model(wire::tool_response(&responses));
    }

    /// The final result of a `NON_BLOCKING` call, with the tool's scheduling.
    fn background_result(&mut self, core: &mut Core, call_id: &str, outcome: CallOutcome) {
        let scheduling = core
            .calls
            .get(call_id)
            .and_then(|c| core.registry.definition(&c.name))
            .map(|def| core.config.scheduling(def));
        let Some(entry) = self.function_response(core, call_id, &outcome, scheduling, false) else {
            return;
        };
        Counters::bump(&core.counters_ref().background_results);
        core.send_model(wire::tool_response(&[entry]));
        core.background_told(call_id);
    }

    // Live asks for no responses: its continuation is the batch's `toolResponse`.
    fn request_due(&mut self, _core: &mut Core, _event_id: &str) {}

    // Gemini Live does not delegate.
    fn delegation_answered(
        &mut self,
        _core: &mut Core,
        _delegation_id: &str,
        _answer: DelegationAnswer,
    ) {
    }

    fn speaks_fillers(&self) -> bool {
        false
    }

    fn filler_due(&mut self, _core: &mut Core, _call_id: &str) {}

    fn declares_once(&self) -> bool {
        true
    }

    fn tools_chosen(&mut self, _core: &mut Core) {}

    fn abandon(&mut self, core: &mut Core, call_ids: &[String]) {
        self.provider_cancel(core, call_ids);
    }

    fn upstream_ready(&self) -> bool {
        self.link.ready
    }

    fn reconnect_due(&self) -> Reconnect {
        self.link.reconnect_due()
    }

    fn can_resume(&self) -> Result<(), ResumeRefused> {
        self.link.can_resume()
    }

    fn resume_setup(&mut self, core: &mut Core) -> Result<String, ResumeRefused> {
        self.resume(core)
    }
}

impl LiveCodec {
    /// Every call of the open batch is known: its `toolResponse` goes when the last resolves
    /// (now, if they all have).
    fn close_batch(&mut self, core: &mut Core) {
        if let Some(batch) = self.open_batch.take() {
            if core.tracker.response_done(&batch) {
                self.all_resolved(core, &batch);
            }
        }
    }

    /// The model cancelled calls (`toolCallCancellation`): the barge-in path, and no result is
    /// sent for them. All are marked first, so that the batch one of them completes does not
    /// carry another's result.
    pub(super) fn provider_cancel(&mut self, core: &mut Core, call_ids: &[String]) {
        let known: Vec<&String> = call_ids
            .iter()
            .filter(|id| core.calls.contains_key(id.as_str()))
            .collect();
        for call_id in &known {
            self.forget_result(core, call_id);
        }
        for call_id in known {
            let keeps_running = core
                .calls
                .get(call_id.as_str())
                .and_then(|info| core.registry.definition(&info.name))
                .is_some_and(|def| !def.cancels_on_interruption());
            if keeps_running {
                // `cancel_on_interruption: false`: the work goes on (the video plays to its
                // end), but the model no longer takes its result, so the batch does not wait
                // for it.
                self.detach_call(core, call_id);
                continue;
            }
            let cancelled = core.cancel_call(self, call_id);
            core.note(Note::Interrupted {
                response_id: core
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
    pub(super) fn forget_result(&mut self, core: &Core, call_id: &str) {
        self.provider_cancelled.insert(call_id.to_owned());
        if let Some(batch) = core.tracker.response_of(call_id) {
            if let Some(pending) = self.pending_responses.get_mut(batch) {
                pending.retain(|entry| entry.call_id() != call_id);
            }
        }
    }

    /// A call the model cancelled that keeps running: it leaves its batch now, and whatever it
    /// ends with later is nobody's to hear.
    fn detach_call(&mut self, core: &mut Core, call_id: &str) {
        if !core.tracker.is_open(call_id) {
            return;
        }
        if let Some(info) = core.calls.get_mut(call_id) {
            info.background = false;
        }
        if core.tracker.resolve(call_id) == Resolved::Continue {
            if let Some(batch) = core.tracker.response_of(call_id).map(str::to_owned) {
                self.all_resolved(core, &batch);
            }
        }
    }

    /// The `functionResponses` entry of a call's outcome; `None` for a call the model cancelled
    /// (it takes no result) or never made.
    fn function_response(
        &self,
        core: &Core,
        call_id: &str,
        outcome: &CallOutcome,
        scheduling: Option<Scheduling>,
        will_continue: bool,
    ) -> Option<wire::FunctionResponse> {
        if self.provider_cancelled.contains(call_id) {
            return None;
        }
        let scheduling = scheduling.filter(|_| self.takes_scheduling);
        let info = core.calls.get(call_id)?;
        Some(wire::function_response(
            call_id,
            &info.name,
            &outcome.output,
            outcome.is_error(),
            scheduling,
            will_continue,
        ))
    }
}
