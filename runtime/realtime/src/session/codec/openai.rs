//! The OpenAI Realtime (GA) codec: server events read into the core's calls and responses,
//! what of them the page may see, results as `function_call_output` items, one
//! `response.create` per finished response (never while another response is active), filler
//! phrases in out-of-band responses, background results at quiet points, tools declared again
//! when they change, and the text-marker pass over it all.

use super::*;
use crate::openai::{self as wire, str_field, Head};

/// The start of the event ids of this session's `response.create`s.
const REQUEST_ID_PREFIX: &str = "toolc_response_";

/// An OpenAI Realtime session's wire state.
pub(super) struct OpenAiCodec {
    filler_responses: HashSet<String>,
    current_response: Option<String>,
    /// A continuation is due but another response is in progress; it goes at that response's
    /// `response.done`.
    continuation_waiting: bool,
    /// The session's `response.create` that has not started yet. The API refuses a second
    /// request before the first has started.
    response_requested: Option<Requested>,
    /// `response.create`s this session sent, which number their event ids.
    requests_sent: u64,
    /// Streaming client calls by item id: the call, the tool and the arguments so far.
    streams: HashMap<String, ArgumentStream>,
    /// Results of background calls waiting for a point where no response is in progress.
    background_done: VecDeque<(String, CallOutcome)>,
    /// Rotates through a tool's filler phrases.
    filler_turn: usize,
    markers: Option<MarkerFlow>,
    /// The instructions the application or the browser set last, without the marker catalog:
    /// kept so that a catalog declared again (live tools changed) does not replace them.
    their_instructions: Option<String>,
    /// The model has not yet been told of the toolsets chosen last.
    selection_changed: bool,
}

/// A `response.create` of this session that has not started yet.
struct Requested {
    event_id: String,
    /// A continuation (or a background result's request), not a filler: if the model refuses
    /// it, the session asks again.
    continuation: bool,
}

#[derive(Debug)]
struct ArgumentStream {
    call_id: String,
    name: String,
    partial: PartialArguments,
}

/// A function call read from a `response.done`, owned so the session can act on it.
struct ReportedCall {
    item_id: Option<String>,
    call_id: Option<String>,
    name: Option<String>,
    arguments: String,
}

impl OpenAiCodec {
    pub(super) fn new(config: &SessionConfig) -> OpenAiCodec {
        OpenAiCodec {
            filler_responses: HashSet::new(),
            current_response: None,
            continuation_waiting: false,
            response_requested: None,
            requests_sent: 0,
            streams: HashMap::new(),
            background_done: VecDeque::new(),
            filler_turn: 0,
            markers: config.markers.clone().map(MarkerFlow::new),
            their_instructions: config
                .session
                .get("instructions")
                .and_then(Value::as_str)
                .map(str::to_owned),
            selection_changed: false,
        }
    }
}

impl Codec for OpenAiCodec {
    fn first_message(&self, core: &Core) -> String {
        let mut session = core.config.session.clone();
        session.insert("tools".into(), Value::Array(core.declarations.clone()));
        if let Some(instructions) = self.marker_instructions(core) {
            session.insert("instructions".into(), Value::String(instructions));
        }
        wire::session_update(session)
    }

    fn on_model_event(&mut self, core: &mut Core, text: &str) -> Verdict {
        let verdict = self.native_model_event(core, text);
        if self.markers.is_none() {
            return verdict;
        }
        self.marker_pass(core, text, verdict)
    }

    fn is_audio_input(&self, top: &guard::TopLevel<'_>) -> bool {
        top.kind.as_deref() == Some("input_audio_buffer.append")
    }

    fn is_audio_output(&self, text: &str) -> bool {
        matches!(
            wire::head(text),
            Head::Typed(kind) if kind == "response.output_audio.delta" || kind == "response.audio.delta"
        )
    }

    /// Results are handled by the core and never forwarded; a `function_call` item is dropped;
    /// a `session.update` gets the declarations merged in; everything else passes.
    fn on_browser_event(
        &mut self,
        core: &mut Core,
        top: guard::TopLevel<'_>,
        text: &str,
    ) -> Verdict {
        let Some(kind) = top.kind else {
            return core.refuse_browser_event(guard::Refused::NoType);
        };
        // The browser protocol's own events (results, approval answers) are the core's.
        match kind.as_ref() {
            "conversation.item.create" => item_create(core, text),
            "response.create" => {
                let Ok(v) = serde_json::from_str::<Value>(text) else {
                    return Verdict::Forward;
                };
                let declarations = &core.declarations;
                let declared = |name: &str| {
                    declarations
                        .iter()
                        .any(|d| d.get("name").and_then(Value::as_str) == Some(name))
                };
                match guard::check_response_create(&v, declared) {
                    Ok(()) => Verdict::Forward,
                    Err(refused) => core.refuse_browser_event(refused),
                }
            }
            "session.update" => self.browser_session_update(core, text),
            _ => Verdict::Forward,
        }
    }

    fn write_result(&mut self, core: &mut Core, call_id: &str, outcome: &CallOutcome) {
        let marker_result = self
            .markers
            .as_mut()
            .and_then(|flow| flow.result_event(call_id, outcome));
        core.send_model(
            marker_result.unwrap_or_else(|| wire::function_call_output(call_id, &outcome.output)),
        );
    }

    fn all_resolved(&mut self, core: &mut Core, _response: &str) {
        self.continuation(core);
    }

    fn background_result(&mut self, core: &mut Core, call_id: &str, outcome: CallOutcome) {
        self.background_done
            .push_back((call_id.to_owned(), outcome));
        self.flush_background(core);
    }

    fn request_due(&mut self, core: &mut Core, event_id: &str) {
        let Some(requested) = self
            .response_requested
            .take_if(|requested| requested.event_id == event_id)
        else {
            return;
        };
        Counters::bump(&core.counters_ref().unanswered_requests);
        core.note(Note::RequestUnanswered {
            event_id: event_id.to_owned(),
            asked_again: requested.continuation,
        });
        if requested.continuation {
            self.continuation(core);
        } else {
            // A filler that never started: a continuation that waited for it goes now.
            self.continuation_if_waiting(core);
        }
    }

    // OpenAI Realtime does not delegate.
    fn delegation_answered(
        &mut self,
        _core: &mut Core,
        _delegation_id: &str,
        _answer: DelegationAnswer,
    ) {
    }

    fn speaks_fillers(&self) -> bool {
        true
    }

    fn filler_due(&mut self, core: &mut Core, call_id: &str) {
        if !core.tracker.is_open(call_id) {
            return;
        }
        let done = core
            .tracker
            .response_of(call_id)
            .is_some_and(|r| core.tracker.is_done(r));
        match core.calls.get_mut(call_id) {
            Some(info) if !info.filler_sent => {
                if done {
                    self.send_filler(core, call_id);
                } else {
                    // The model is still speaking; say it once the response is done.
                    info.filler_wanted = true;
                }
            }
            _ => {}
        }
    }

    fn declares_once(&self) -> bool {
        false
    }

    fn tools_chosen(&mut self, core: &mut Core) {
        self.selection_changed = true;
        if self.current_response.is_none() {
            self.redeclare_if_changed(core);
        }
    }

    fn abandon(&mut self, core: &mut Core, call_ids: &[String]) {
        for call_id in call_ids {
            core.cancel_call(self, call_id);
        }
    }

    fn upstream_ready(&self) -> bool {
        true
    }

    fn reconnect_due(&self) -> Reconnect {
        Reconnect::No
    }

    fn can_resume(&self) -> Result<(), ResumeRefused> {
        Err(ResumeRefused::Off)
    }

    fn resume_setup(&mut self, _core: &mut Core) -> Result<String, ResumeRefused> {
        Err(ResumeRefused::Off)
    }
}

/// A `conversation.item.create` from the page: a result in item form goes to the core; an item
/// that names a call is dropped; any other passes.
fn item_create(core: &mut Core, text: &str) -> Verdict {
    let Ok(v) = serde_json::from_str::<Value>(text) else {
        return Verdict::Forward;
    };
    if let Some(result) = browser::decode_item_result(&v) {
        core.browser_result(result);
        return Verdict::Drop;
    }
    let item = v.get("item");
    // A call item would put a call in the model's mouth that it never made (its result could not
    // come from the browser either): the less trusted side does not write the model's calls. Any
    // other item that names a call (`call_id`) is refused the same way: only results, read
    // above, may.
    let call_id = match item.and_then(wire::function_call_item) {
        Some(call) => Some(call.call_id.map(str::to_owned)),
        None => item
            .and_then(|i| i.get("call_id"))
            .map(|id| id.as_str().map(str::to_owned)),
    };
    match call_id {
        Some(call_id) => {
            Counters::bump(&core.counters_ref().dropped_browser_events);
            core.note(Note::BrowserCallDropped { call_id });
            Verdict::Drop
        }
        None => Verdict::Forward,
    }
}

// ---- model events ---------------------------------------------------------------------------

impl OpenAiCodec {
    fn native_model_event(&mut self, core: &mut Core, text: &str) -> Verdict {
        let kind = match wire::head(text) {
            Head::Typed(kind) if kind == "error" => return self.model_error(core, text),
            Head::Typed(kind) if wire::is_tool_related_server_event(&kind) => kind,
            Head::Typed(_) | Head::Untyped => return Verdict::Forward,
            // What the session cannot read could be about a server call: fail closed.
            Head::Ambiguous => return core.unreadable_model_event("(two `type` members)"),
            Head::Invalid => return core.unreadable_model_event("(not JSON)"),
        };
        // The type may have been read from the event's first bytes alone; the rest must parse
        // too before any of it reaches the browser.
        let Ok(mut event) = serde_json::from_str::<Value>(text) else {
            return core.unreadable_model_event(&kind);
        };
        // A second `type` member later in the event: the first bytes said one thing, the
        // parsed event (and the page's parser) another.
        if str_field(&event, "type") != Some(kind.as_ref()) {
            return core.unreadable_model_event(&kind);
        }
        match kind.as_ref() {
            "response.created" => {
                if let Some(response) = event.get("response") {
                    let id = str_field(response, "id").map(str::to_owned);
                    if wire::is_filler_response(response) {
                        if let Some(id) = id {
                            self.filler_responses.insert(id);
                        }
                    } else if id.is_some() {
                        self.current_response = id;
                    }
                    // Whichever response this is, the one asked for has started.
                    self.response_requested = None;
                }
                self.scrub_response(core, &mut event)
            }
            "response.output_item.added" | "response.output_item.done" => {
                let response_id = str_field(&event, "response_id");
                let Some(item) = event.get("item").and_then(wire::function_call_item) else {
                    return Verdict::Forward;
                };
                let visible = core.learn_item(item.item_id, item.call_id, item.name);
                if kind == "response.output_item.done" {
                    if let Some(item_id) = item.item_id {
                        self.streams.remove(item_id);
                    }
                    if let Some(arguments) = item.arguments {
                        self.call_reported(core, response_id, item.call_id, item.name, arguments);
                    }
                } else if visible {
                    self.start_stream(core, item.item_id, item.call_id, item.name);
                }
                core.keep_if(visible)
            }
            "response.function_call_arguments.delta" => {
                let item_id = str_field(&event, "item_id");
                let visible = core.known_item(item_id, str_field(&event, "call_id"));
                if visible {
                    if let (Some(item_id), Some(delta)) = (item_id, str_field(&event, "delta")) {
                        self.stream_delta(core, item_id, delta);
                    }
                }
                core.keep_if(visible)
            }
            "response.function_call_arguments.done" => {
                let item_id = str_field(&event, "item_id");
                if let Some(item_id) = item_id {
                    self.streams.remove(item_id);
                }
                let call_id = str_field(&event, "call_id");
                let name = str_field(&event, "name");
                let visible = if name.is_some() {
                    core.learn_item(item_id, call_id, name)
                } else {
                    // The beta protocol had no `name` here; rely on what output_item.added said.
                    core.known_item(item_id, call_id)
                };
                // Without a name the call is completed by output_item.done.
                if let (Some(arguments), Some(name)) = (str_field(&event, "arguments"), name) {
                    let response_id = str_field(&event, "response_id");
                    self.call_reported(core, response_id, call_id, Some(name), arguments);
                }
                core.keep_if(visible)
            }
            "response.done" => self.response_done(core, &mut event),
            _ => {
                // conversation.item.{added,done,created,retrieved}
                let Some(item) = event.get("item") else {
                    return Verdict::Forward;
                };
                if let Some(fc) = wire::function_call_item(item) {
                    let visible = core.learn_item(fc.item_id, fc.call_id, fc.name);
                    core.keep_if(visible)
                } else if let Some(call_id) = wire::function_call_output_call_id(item) {
                    // The echo of a result this runtime sent: a server call's result stays here.
                    let visible = core.call_is_visible(call_id).unwrap_or(true);
                    core.keep_if(visible)
                } else {
                    Verdict::Forward
                }
            }
        }
    }

    /// A call reported in `response_id` (the current response when the event names none); a
    /// call inside one of this session's filler responses is ignored (fillers are declared
    /// without tools).
    fn call_reported(
        &mut self,
        core: &mut Core,
        response_id: Option<&str>,
        call_id: Option<&str>,
        name: Option<&str>,
        arguments: &str,
    ) {
        let response_id = response_id
            .map(str::to_owned)
            .or_else(|| self.current_response.clone())
            .unwrap_or_default();
        if let Some(call_id) = call_id {
            if self.filler_responses.contains(&response_id) {
                core.call_visible.insert(call_id.to_owned(), false);
                core.note(Note::CallInFiller {
                    call_id: call_id.to_owned(),
                });
                return;
            }
        }
        core.call_reported(self, &response_id, call_id, name, arguments);
    }

    /// An `error` event. One that names a `response.create` of this session is its refusal
    /// (another response was active, or the request failed): nothing will start for it, so the
    /// request is forgotten, a refused continuation asks again after the next `response.done`,
    /// and the error stays here, since the browser did not send that request.
    fn model_error(&mut self, core: &mut Core, text: &str) -> Verdict {
        let Ok(event) = serde_json::from_str::<Value>(text) else {
            return Verdict::Forward;
        };
        let Some(error) = event.get("error") else {
            return Verdict::Forward;
        };
        let Some(event_id) = str_field(error, "event_id") else {
            return Verdict::Forward;
        };
        if !event_id.starts_with(REQUEST_ID_PREFIX) {
            return Verdict::Forward;
        }
        if let Some(requested) = self
            .response_requested
            .take_if(|requested| requested.event_id == event_id)
        {
            self.continuation_waiting |= requested.continuation;
        }
        Counters::bump(&core.counters_ref().refused_responses);
        core.note(Note::ResponseRefused {
            event_id: event_id.to_owned(),
            code: str_field(error, "code").map(str::to_owned),
            message: str_field(error, "message").unwrap_or_default().to_owned(),
        });
        Verdict::Drop
    }

    /// Starts the partial arguments of a call of a streaming client tool.
    fn start_stream(
        &mut self,
        core: &Core,
        item_id: Option<&str>,
        call_id: Option<&str>,
        name: Option<&str>,
    ) {
        let (Some(item_id), Some(call_id), Some(name)) = (item_id, call_id, name) else {
            return;
        };
        if !core
            .registry
            .definition(name)
            .is_some_and(|d| d.streams_arguments())
            || self.streams.contains_key(item_id)
        {
            return;
        }
        self.streams.insert(
            item_id.to_owned(),
            ArgumentStream {
                call_id: call_id.to_owned(),
                name: name.to_owned(),
                partial: PartialArguments::new(),
            },
        );
    }

    /// A delta of a streaming call: the page gets the arguments so far when they changed.
    fn stream_delta(&mut self, core: &mut Core, item_id: &str, delta: &str) {
        let Some(stream) = self.streams.get_mut(item_id) else {
            return;
        };
        let Some(partial) = stream.partial.push(delta) else {
            return;
        };
        let text = browser::encode_partial_arguments(&stream.call_id, &stream.name, &partial);
        if core.browser_connected() {
            Counters::bump(&core.config.counters.argument_deltas);
            core.send_browser(text);
        }
    }

    /// Removes hidden function calls from `response.output`; forwards unchanged when there are
    /// none.
    fn scrub_response(&self, core: &Core, event: &mut Value) -> Verdict {
        let Some(output) = event
            .get_mut("response")
            .and_then(|r| r.get_mut("output"))
            .and_then(Value::as_array_mut)
        else {
            return Verdict::Forward;
        };
        let before = output.len();
        output.retain(|item| match wire::function_call_item(item) {
            Some(fc) => match fc.name {
                Some(_) => core.visible_name(fc.name),
                None => core.known_item(fc.item_id, fc.call_id),
            },
            None => true,
        });
        if output.len() == before {
            Verdict::Forward
        } else {
            Counters::bump(&core.counters_ref().scrubbed_events);
            Verdict::Replace(event.to_string())
        }
    }

    fn response_done(&mut self, core: &mut Core, event: &mut Value) -> Verdict {
        let Some(response) = event.get("response") else {
            return Verdict::Forward;
        };
        let id = str_field(response, "id").map(str::to_owned);
        let filler = wire::is_filler_response(response)
            || id
                .as_ref()
                .is_some_and(|i| self.filler_responses.contains(i));
        if filler {
            if let Some(id) = &id {
                self.filler_responses.remove(id);
            }
            self.continuation_if_waiting(core);
            // A filler's own done is never a continuation and never completes a response; any
            // calls in it are ignored (fillers are declared without tools).
            if let Some(items) = response.get("output").and_then(Value::as_array) {
                for item in items {
                    if let Some(call_id) = wire::function_call_item(item).and_then(|fc| fc.call_id)
                    {
                        core.call_visible.insert(call_id.to_owned(), false);
                        core.note(Note::CallInFiller {
                            call_id: call_id.to_owned(),
                        });
                    }
                }
            }
            return self.scrub_response(core, event);
        }
        let response_id = id
            .clone()
            .or_else(|| self.current_response.clone())
            .unwrap_or_default();
        // Calls that only this event reports (no earlier *.done for them).
        let mut late: Vec<ReportedCall> = Vec::new();
        if let Some(items) = response.get("output").and_then(Value::as_array) {
            for fc in items.iter().filter_map(wire::function_call_item) {
                if let Some(arguments) = fc.arguments {
                    late.push(ReportedCall {
                        item_id: fc.item_id.map(str::to_owned),
                        call_id: fc.call_id.map(str::to_owned),
                        name: fc.name.map(str::to_owned),
                        arguments: arguments.to_owned(),
                    });
                }
            }
        }
        let interrupted = wire::is_cancelled_response(response);
        for c in &late {
            core.learn_item(
                c.item_id.as_deref(),
                c.call_id.as_deref(),
                c.name.as_deref(),
            );
            self.call_reported(
                core,
                Some(&response_id),
                c.call_id.as_deref(),
                c.name.as_deref(),
                &c.arguments,
            );
        }
        if self.current_response.as_deref() == Some(response_id.as_str()) {
            self.current_response = None;
        }
        if interrupted {
            core.interrupt(self, &response_id);
        }
        // Between responses, before any continuation: the model learns of tools that came
        // or went since it was last told.
        if self.current_response.is_none() {
            self.redeclare_if_changed(core);
        }
        // An interrupted response earns no continuation: the user is speaking, and their turn
        // brings the next response (which sees every result sent so far).
        if core.tracker.response_done(&response_id) && !interrupted {
            self.continuation(core);
        } else {
            self.continuation_if_waiting(core);
        }
        if !interrupted {
            self.send_wanted_fillers(core, &response_id);
        }
        self.flush_background(core);
        self.scrub_response(core, event)
    }
}

// ---- continuations, fillers, background results, declarations --------------------------------

impl OpenAiCodec {
    /// Whether the model may be asked for a response now: none is in progress, starting, or
    /// owed to a waiting continuation.
    fn quiet(&self) -> bool {
        self.current_response.is_none()
            && self.filler_responses.is_empty()
            && self.response_requested.is_none()
            && !self.continuation_waiting
    }

    /// Adds the background results that arrived to the conversation, as system messages.
    fn push_background_results(&mut self, core: &mut Core) -> bool {
        core.send_background_results(&mut self.background_done, wire::background_result)
    }

    /// At a quiet point, the background results that arrived and one `response.create` for
    /// them.
    fn flush_background(&mut self, core: &mut Core) {
        if self.background_done.is_empty() || !self.quiet() {
            return;
        }
        if self.push_background_results(core) {
            self.request_response(core, true, wire::response_create);
        }
    }

    /// Sends a `session.update` with the current declarations when the live tools or the
    /// chosen toolsets changed since the model was last told.
    fn redeclare_if_changed(&mut self, core: &mut Core) {
        let live_changed = core
            .config
            .live_tools
            .as_ref()
            .is_some_and(|live| core.live_generation != Some(live.current().0));
        if !live_changed && !self.selection_changed {
            return;
        }
        self.selection_changed = false;
        let (declarations, generation) = declared_now(&core.own_declarations, &core.config);
        core.declarations = declarations;
        core.live_generation = generation;
        let mut session = Map::new();
        session.insert("type".into(), Value::String("realtime".into()));
        session.insert("tools".into(), Value::Array(core.declarations.clone()));
        // Marker tools are declared in the instructions: those follow the tools too, with
        // what the application or browser set first.
        if let Some(instructions) = self.marker_instructions(core) {
            session.insert("instructions".into(), Value::String(instructions));
        }
        tracing::info!(
            session = %core.scope.session_id(),
            tools = core.declarations.len(),
            "tools changed: declared again"
        );
        core.send_model(wire::session_update(session));
    }

    /// Asks the model to go on. While another response is in progress (the user spoke and a new
    /// response started before the calls of the previous one finished, or a filler is being
    /// said), the model rejects a `response.create` (`conversation_already_has_active_response`),
    /// so the continuation waits for that response's `response.done`. It also waits while a
    /// request of this session has not started yet (a background result's, a filler's): that
    /// response's `response.done` is where it asks.
    fn continuation(&mut self, core: &mut Core) {
        if self.current_response.is_some()
            || !self.filler_responses.is_empty()
            || self.response_requested.is_some()
        {
            self.continuation_waiting = true;
            return;
        }
        self.continuation_waiting = false;
        // A call may have taught the live tools something (a miss refreshes the catalog): the
        // model answers with the set as it is now.
        self.redeclare_if_changed(core);
        // Background results that arrived go in before it, so one response covers both.
        self.push_background_results(core);
        Counters::bump(&core.counters_ref().continuations);
        self.request_response(core, true, wire::response_create);
    }

    /// Sends a `response.create` built by `create` around a fresh event id, so that an `error`
    /// refusing it can be told from errors about other events.
    fn request_response(
        &mut self,
        core: &mut Core,
        continuation: bool,
        create: impl FnOnce(&str) -> String,
    ) {
        self.requests_sent += 1;
        let event_id = format!("{REQUEST_ID_PREFIX}{}", self.requests_sent);
        core.send_model(create(&event_id));
        core.watch_request(&event_id);
        self.response_requested = Some(Requested {
            event_id,
            continuation,
        });
    }

    /// After a `response.done`: the continuation that waited for it, if any (one, also when
    /// the finished response's own calls want one too).
    fn continuation_if_waiting(&mut self, core: &mut Core) {
        if self.continuation_waiting {
            self.continuation(core);
        }
    }

    fn send_wanted_fillers(&mut self, core: &mut Core, response_id: &str) {
        let mut wanted: Vec<(u64, String)> = core
            .calls
            .iter()
            .filter(|(id, info)| {
                info.filler_wanted
                    && !info.filler_sent
                    && core.tracker.is_open(id)
                    && core.tracker.response_of(id) == Some(response_id)
            })
            .map(|(id, info)| (info.seq, id.clone()))
            .collect();
        wanted.sort();
        for (_, call_id) in wanted {
            self.send_filler(core, &call_id);
        }
    }

    fn send_filler(&mut self, core: &mut Core, call_id: &str) {
        let Some(info) = core.calls.get_mut(call_id) else {
            return;
        };
        let Some(def) = core.registry.definition(&info.name) else {
            return;
        };
        if def.filler.is_empty() || info.filler_sent {
            return;
        }
        // A response asked for and not started yet will speak soon anyway, and the API refuses
        // a second request before the first has started.
        if self.response_requested.is_some() {
            info.filler_wanted = false;
            return;
        }
        info.filler_sent = true;
        info.filler_wanted = false;
        // Rotate through the phrases so consecutive fillers do not repeat themselves.
        let phrase = def.filler[self.filler_turn % def.filler.len()].clone();
        self.filler_turn = self.filler_turn.wrapping_add(1);
        Counters::bump(&core.config.counters.fillers);
        let call_id = call_id.to_owned();
        self.request_response(core, false, |event_id| {
            wire::filler_response_create(&phrase, &call_id, event_id)
        });
    }

    /// The page's `session.update`: the server's declarations merged in (its own function
    /// tools dropped), and with the marker flow the catalog added to its instructions.
    fn browser_session_update(&mut self, core: &mut Core, text: &str) -> Verdict {
        let Ok(mut v) = serde_json::from_str::<Value>(text) else {
            return Verdict::Forward;
        };
        let merge = wire::merge_session_update(&mut v, &core.declarations);
        if let Some(markers) = core.config.markers.clone() {
            let catalog = markers.instructions_with(core.config.live_tools.as_deref());
            if let Some(theirs) = markers.merge_catalog_into_session_update(&mut v, &catalog) {
                self.their_instructions = Some(theirs);
            }
        }
        for name in merge.dropped_tools {
            core.note(Note::BrowserToolDropped { name });
        }
        Verdict::Replace(v.to_string())
    }

    /// With the marker flow: the application's or browser's instructions followed by the
    /// catalog of the tools as they are now (live ones included).
    fn marker_instructions(&self, core: &Core) -> Option<String> {
        let markers = core.config.markers.as_ref()?;
        let catalog = markers.instructions_with(core.config.live_tools.as_deref());
        Some(crate::marker_flow::merge(
            self.their_instructions.as_deref(),
            &catalog,
        ))
    }
}

// ---- the text-marker pass -------------------------------------------------------------------

impl OpenAiCodec {
    /// The marker flow after the native handling: marker text is hidden from the browser and
    /// the calls it completes are run like native ones.
    fn marker_pass(&mut self, core: &mut Core, text: &str, verdict: Verdict) -> Verdict {
        let Some(flow) = self.markers.as_mut() else {
            return verdict;
        };
        let mut found = Vec::new();
        let verdict = flow.on_model_event(text, verdict, &mut found);
        for f in found {
            match f {
                Found::Call {
                    response_id,
                    call_id,
                    name,
                    arguments,
                } => {
                    self.call_reported(
                        core,
                        Some(&response_id),
                        Some(&call_id),
                        Some(&name),
                        &arguments,
                    );
                    if !core.tracker.is_known(&call_id) {
                        if let Some(flow) = self.markers.as_mut() {
                            flow.forget(&call_id);
                        }
                    }
                }
                Found::Broken {
                    response_id,
                    call_id,
                    error,
                } => self.marker_broken(core, &response_id, &call_id, error),
            }
        }
        verdict
    }

    /// A marker that could not become a call: an error result for the model, in the same
    /// per-response batch as the response's other calls.
    fn marker_broken(
        &mut self,
        core: &mut Core,
        response_id: &str,
        call_id: &str,
        error: CallError,
    ) {
        let response_id = if response_id.is_empty() {
            self.current_response.clone().unwrap_or_default()
        } else {
            response_id.to_owned()
        };
        if self.filler_responses.contains(&response_id)
            || !core.call_refused(self, &response_id, call_id, error)
        {
            if let Some(flow) = self.markers.as_mut() {
                flow.forget(call_id);
            }
        }
    }
}
