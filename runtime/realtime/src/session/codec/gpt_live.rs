//! The OpenAI GPT-Live codec, with Responses delegation: the live model delegates a task, the
//! Responses backend the session configured works on it, and its stream reaches the session as
//! `response.event`s (a nested Responses streaming event and the `delegation_id`).
//!
//! How the core's rules land on GPT-Live:
//! - A batch is one backend response (its id from the nested `response.created`; the
//!   delegation's id until then). Its function calls are reported by the nested
//!   `response.output_item.done`; its end by `response.completed` (or `failed`, or
//!   `incomplete`; a snapshot whose status is `incomplete` or `cancelled` is an interruption,
//!   whose calls that cancel on interruption are cancelled).
//! - Results go as `response.item.create` with a `function_call_output` item, each when its
//!   call resolves; the batch's one `response.create` goes when the response is over and its
//!   last call resolved, and, while another backend response is in progress or asked for,
//!   when that one ends (the backend refuses a `response.create` meanwhile).
//! - The tools are declared strict where their schema allows, so the backend writes `null` for
//!   an optional argument it leaves out: those nulls are removed before validation, as the chat
//!   runner does.
//! - What the page sees: the SDK's server events (any other type is dropped and counted), but
//!   not the nested events about server calls (their items, argument deltas, and their entries
//!   in response snapshots). The page may send audio,
//!   mute and unmute, instructions, fixtures, unbound commentary and thinking, and `session.close`;
//!   the events that declare tools, add items or ask for responses are the server's.
//! - Toolsets chosen while the session runs go to the backend with `session.update`.
//! - Client delegations (`target: client`) run on [`SessionConfig::client_delegate`] with the
//!   transcript, answered with `session.commentary.append` or `session.thinking.append`; with
//!   no delegate, the page may answer those (and only those) delegations.
//! - No resumption, no fillers (the live model speaks its own acknowledgement while a task
//!   runs); a background (`mode: async`) result goes as a developer message and one
//!   `response.create` when no response is in progress.

use super::*;
use crate::gpt_live as wire;
use crate::openai::{head, str_field, Head};

/// The start of the event ids of this session's `response.create`s.
const REQUEST_ID_PREFIX: &str = "toolc_response_";

/// A GPT-Live session's wire state.
pub(super) struct GptLiveCodec {
    /// `session.started` came: the session reads input.
    ready: bool,
    /// The backend response each delegation is in now.
    responses: HashMap<String, String>,
    /// Backend responses started and not over.
    in_progress: HashSet<String>,
    /// `response.create`s this session sent, which number their event ids.
    requests_sent: u64,
    /// The session's `response.create` that has not started a response yet.
    requested: Option<Requested>,
    /// A batch's continuation is owed but waits for the backend response in progress (or the
    /// request not started yet) to end: the backend refuses a `response.create` meanwhile.
    continuation_waiting: bool,
    /// Results of background calls waiting for a point where no response is in progress.
    background_done: VecDeque<(String, CallOutcome)>,
    /// Tools declared strict, whose arguments lose the nulls strict mode makes the model write.
    strict: HashSet<String>,
    /// The conversation's transcript, kept for client delegations when a delegate runs them.
    transcript: Transcript,
    /// Client delegations the page may answer (no delegate is configured).
    page_delegations: HashSet<String>,
    /// Attached as a sideband to a session the page opened ([`SessionConfig::sideband`]).
    sideband: bool,
    /// The last backend response of each delegation (kept after it ends): a new one of the
    /// same delegation while a server call of it is open was asked for by someone else.
    last_response: HashMap<String, String>,
}

/// A `response.create` of this session, and whether it continues a batch (so that a refusal
/// or a request that never starts asks again).
struct Requested {
    event_id: String,
    continuation: bool,
}

/// The most recent transcript, one line per run of one speaker's fragments, at most
/// [`TRANSCRIPT_BYTES`] of text.
#[derive(Default)]
struct Transcript {
    lines: VecDeque<TranscriptLine>,
    bytes: usize,
}

/// How many delegations' last responses a sideband keeps to tell who asked for the next.
const MAX_DELEGATIONS_KEPT: usize = 1024;

/// How much transcript a delegation gets.
const TRANSCRIPT_BYTES: usize = 32 * 1024;

impl Transcript {
    fn push(&mut self, speaker: Speaker, fragment: &str) {
        match self.lines.back_mut() {
            Some(line) if line.speaker == speaker => line.text.push_str(fragment),
            _ => self.lines.push_back(TranscriptLine {
                speaker,
                text: fragment.to_owned(),
            }),
        }
        self.bytes += fragment.len();
        while self.bytes > TRANSCRIPT_BYTES && self.lines.len() > 1 {
            if let Some(oldest) = self.lines.pop_front() {
                self.bytes -= oldest.text.len();
            }
        }
    }
}

impl GptLiveCodec {
    pub(super) fn new(config: &SessionConfig) -> GptLiveCodec {
        let strict = strict_tools(&config.declarations);
        GptLiveCodec {
            // A sideband attaches to a session that has started: no `session.started` comes.
            ready: config.sideband,
            sideband: config.sideband,
            last_response: HashMap::new(),
            responses: HashMap::new(),
            in_progress: HashSet::new(),
            requests_sent: 0,
            requested: None,
            continuation_waiting: false,
            background_done: VecDeque::new(),
            strict,
            transcript: Transcript::default(),
            page_delegations: HashSet::new(),
        }
    }
}

/// The names of the tools declared strict.
fn strict_tools(declarations: &[Value]) -> HashSet<String> {
    declarations
        .iter()
        .filter(|d| d.get("strict").and_then(Value::as_bool) == Some(true))
        .filter_map(|d| d.get("name").and_then(Value::as_str).map(str::to_owned))
        .collect()
}

impl Codec for GptLiveCodec {
    fn first_message(&self, core: &Core) -> String {
        if self.sideband {
            // The page's session has started (with the settings `gpt_live::webrtc_session`
            // wrote, or not): a sideband never sends `session.start`, but it may make sure the
            // backend's tools are the manifest's.
            let hosted = wire::hosted_tools(&core.config.session);
            return wire::tools_update(&hosted, &core.declarations);
        }
        wire::session_start(core.config.session.clone(), &core.declarations)
    }

    fn on_model_event(&mut self, core: &mut Core, text: &str) -> Verdict {
        let verdict = self.read_model_event(core, text);
        // A sideband's events are not the page's: it has its own data channel.
        if self.sideband {
            Verdict::Drop
        } else {
            verdict
        }
    }

    fn is_audio_input(&self, top: &guard::TopLevel<'_>) -> bool {
        top.kind.as_deref() == Some("session.input_audio.append")
    }

    fn is_audio_output(&self, text: &str) -> bool {
        matches!(head(text), Head::Typed(kind) if kind == "session.output_audio.delta")
    }

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
            _ if self.sideband => {
                core.refuse_browser_event(guard::Refused::SidebandModelEvent(kind.into()))
            }
            "session.input_audio.append"
            | "session.input_audio.mute"
            | "session.input_audio.unmute"
            | "session.instructions.append"
            | "session.output_audio.fixture.play"
            | "session.close" => Verdict::Forward,
            // Context for the live model: unbound, or bound to a client delegation that is the
            // page's to answer; a page answering any other delegation would be answering for
            // the server.
            "session.commentary.append" | "session.thinking.append" => {
                let bound = serde_json::from_str::<Value>(text)
                    .ok()
                    .and_then(|v| v.get("delegation_id").cloned())
                    .unwrap_or(Value::Null);
                let allowed = match &bound {
                    Value::Null => true,
                    Value::String(id) => self.page_delegations.contains(id),
                    _ => false,
                };
                if !allowed {
                    return core.refuse_browser_event(guard::Refused::ServerOnly(kind.into()));
                }
                Verdict::Forward
            }
            "session.start"
            | "session.update"
            | "response.item.create"
            | "response.create"
            | "transport.dtmf.send" => {
                core.refuse_browser_event(guard::Refused::ServerOnly(kind.into()))
            }
            other if other.starts_with("decision.") => {
                core.refuse_browser_event(guard::Refused::ServerOnly(kind.into()))
            }
            _ => core.refuse_browser_event(guard::Refused::NotRelayed(kind.into())),
        }
    }

    fn write_result(&mut self, core: &mut Core, call_id: &str, outcome: &CallOutcome) {
        core.send_model(wire::function_call_output(call_id, &outcome.output));
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
        let Some(requested) = self.requested.take_if(|r| r.event_id == event_id) else {
            return;
        };
        Counters::bump(&core.counters_ref().unanswered_requests);
        core.note(Note::RequestUnanswered {
            event_id: event_id.to_owned(),
            asked_again: true,
        });
        // A background result's request asks again too: its message is in the conversation
        // and waits for a response.
        if requested.continuation {
            self.continuation(core);
        } else {
            self.request_response(core, false);
        }
    }

    fn delegation_answered(
        &mut self,
        core: &mut Core,
        delegation_id: &str,
        answer: DelegationAnswer,
    ) {
        let (spoken, content) = match answer {
            DelegationAnswer::Say(content) => (true, content),
            DelegationAnswer::Think(content) => (false, content),
        };
        core.send_model(wire::delegation_answer(delegation_id, spoken, &content));
    }

    fn speaks_fillers(&self) -> bool {
        false
    }

    fn filler_due(&mut self, _core: &mut Core, _call_id: &str) {}

    fn declares_once(&self) -> bool {
        false
    }

    /// The delegated backend's tools change with `session.update` (the delegation's type stays
    /// `responses`); the backend's next request uses them.
    fn tools_chosen(&mut self, core: &mut Core) {
        let (declarations, generation) = declared_now(&core.own_declarations, &core.config);
        core.declarations = declarations;
        core.live_generation = generation;
        self.strict = strict_tools(&core.declarations);
        let hosted = wire::hosted_tools(&core.config.session);
        core.send_model(wire::tools_update(&hosted, &core.declarations));
    }

    fn abandon(&mut self, core: &mut Core, call_ids: &[String]) {
        for call_id in call_ids {
            core.cancel_call(self, call_id);
        }
    }

    fn upstream_ready(&self) -> bool {
        self.ready
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

impl GptLiveCodec {
    /// One server event read: what the page would get of it over the relay's own socket.
    fn read_model_event(&mut self, core: &mut Core, text: &str) -> Verdict {
        let kind = match head(text) {
            Head::Typed(kind) => kind,
            // Every GPT-Live server event has a `type`; what the session cannot read could be
            // about a server call: fail closed.
            Head::Untyped => return core.unreadable_model_event("(no `type`)"),
            Head::Ambiguous => return core.unreadable_model_event("(two `type` members)"),
            Head::Invalid => return core.unreadable_model_event("(not JSON)"),
        };
        // Fail closed: only the SDK's server events reach the page.
        if !wire::is_server_event_type(&kind) {
            // The type is the model's text: the note names at most its first 64 characters.
            let shown: String = kind.chars().take(64).collect();
            return core.unreadable_model_event(&format!("{shown} (not a GPT-Live server event)"));
        }
        let transcript = matches!(
            kind.as_ref(),
            "session.input_transcript.delta" | "session.output_transcript.delta"
        );
        // Transcripts are read only when a delegate will need them.
        let read = matches!(
            kind.as_ref(),
            "response.event" | "error" | "session.started" | "session.delegation.created"
        ) || (transcript && core.config.client_delegate.is_some());
        if !read {
            return Verdict::Forward;
        }
        let Ok(mut event) = serde_json::from_str::<Value>(text) else {
            return core.unreadable_model_event(&kind);
        };
        if str_field(&event, "type") != Some(kind.as_ref()) {
            return core.unreadable_model_event(&kind);
        }
        match kind.as_ref() {
            "session.started" => {
                self.ready = true;
                Verdict::Forward
            }
            "error" => self.model_error(core, &event),
            "session.delegation.created" => self.delegation_created(core, &event),
            "session.input_transcript.delta" | "session.output_transcript.delta" => {
                let speaker = if kind == "session.input_transcript.delta" {
                    Speaker::User
                } else {
                    Speaker::Assistant
                };
                if let Some(delta) = str_field(&event, "delta") {
                    self.transcript.push(speaker, delta);
                }
                Verdict::Forward
            }
            _ => self.response_event(core, &mut event),
        }
    }

    /// `session.delegation.created`: a client delegation goes to the delegate with the
    /// transcript, or, with none configured, becomes the page's to answer.
    fn delegation_created(&mut self, core: &mut Core, event: &Value) -> Verdict {
        let delegation = event.get("delegation");
        let id = delegation.and_then(|d| str_field(d, "id"));
        let target = delegation.and_then(|d| str_field(d, "target"));
        let (Some(id), Some("client")) = (id, target) else {
            return Verdict::Forward;
        };
        match core.config.client_delegate.clone() {
            Some(delegate) => {
                let delegation = Delegation {
                    id: id.to_owned(),
                    transcript: self.transcript.lines.iter().cloned().collect(),
                };
                core.spawn_delegation(delegate, delegation);
            }
            None => {
                self.page_delegations.insert(id.to_owned());
            }
        }
        Verdict::Forward
    }

    /// A `response.event`: the nested Responses event drives the batch of its delegation.
    fn response_event(&mut self, core: &mut Core, event: &mut Value) -> Verdict {
        let delegation = str_field(event, "delegation_id").map(str::to_owned);
        let Some(inner) = event.get("event").filter(|e| e.is_object()) else {
            return core.unreadable_model_event("response.event (no nested event)");
        };
        let Some(inner_kind) = str_field(inner, "type").map(str::to_owned) else {
            return core.unreadable_model_event("response.event (nested event without `type`)");
        };
        // Fail closed here too: a nested type the SDK does not define could be a server call
        // in a shape the session does not read.
        if !wire::is_response_stream_event_type(&inner_kind) {
            let shown: String = inner_kind.chars().take(64).collect();
            return core.unreadable_model_event(&format!(
                "response.event ({shown}: not a Responses streaming event)"
            ));
        }
        match inner_kind.as_str() {
            "response.created" | "response.queued" | "response.in_progress" => {
                if let Some(id) = inner.get("response").and_then(|r| str_field(r, "id")) {
                    let id = id.to_owned();
                    if let Some(delegation) = &delegation {
                        self.went_on(core, delegation, &id);
                        self.responses.insert(delegation.clone(), id.clone());
                    }
                    self.in_progress.insert(id);
                    // Whichever response this is, the one asked for has started.
                    self.requested = None;
                }
                self.scrub_snapshot(core, event)
            }
            "response.output_item.added" | "response.output_item.done" => {
                let Some(item) = inner.get("item").and_then(wire::function_call_item) else {
                    return Verdict::Forward;
                };
                let visible = core.learn_item(item.item_id, item.call_id, item.name);
                if inner_kind == "response.output_item.done" {
                    if let Some(arguments) = item.arguments {
                        let (call_id, name) = (
                            item.call_id.map(str::to_owned),
                            item.name.map(str::to_owned),
                        );
                        let arguments = arguments.to_owned();
                        let batch = self.batch(delegation.as_deref(), None);
                        self.call_reported(
                            core,
                            &batch,
                            call_id.as_deref(),
                            name.as_deref(),
                            &arguments,
                        );
                    }
                }
                core.keep_if(visible)
            }
            "response.function_call_arguments.delta" | "response.function_call_arguments.done" => {
                let item_id = str_field(inner, "item_id");
                let visible = match str_field(inner, "name") {
                    Some(name) => core.learn_item(item_id, None, Some(name)),
                    // Arguments of a call not seen yet could be a server call's: hidden.
                    None => core.known_item(item_id, None),
                };
                core.keep_if(visible)
            }
            "response.completed" | "response.failed" | "response.incomplete" => {
                self.response_over(core, event, delegation)
            }
            _ => Verdict::Forward,
        }
    }

    /// A backend response `id` of `delegation` started. On a sideband, one this session did not
    /// ask for while a server call of the delegation's previous response is open means someone
    /// else (the page, over its data channel) answered that call or asked for the response:
    /// reported, since toolc cannot stop it there.
    fn went_on(&mut self, core: &mut Core, delegation: &str, id: &str) {
        let previous = self.last_response.get(delegation).cloned();
        if self.last_response.len() >= MAX_DELEGATIONS_KEPT {
            // Bounded: the oldest are not told apart, so start over (a report may be missed).
            self.last_response.clear();
        }
        self.last_response
            .insert(delegation.to_owned(), id.to_owned());
        let Some(previous) = previous.filter(|p| p != id) else {
            return;
        };
        if !self.sideband || self.requested.is_some() {
            return;
        }
        let mut open: Vec<(u64, String, String)> = core
            .calls
            .iter()
            .filter(|(call_id, info)| {
                matches!(info.kind, CallKind::Server)
                    && core.tracker.is_open(call_id)
                    && core.tracker.response_of(call_id) == Some(previous.as_str())
            })
            .map(|(call_id, info)| (info.seq, call_id.clone(), info.name.clone()))
            .collect();
        open.sort();
        for (_, call_id, tool) in open {
            Counters::bump(&core.counters_ref().server_calls_answered_elsewhere);
            tracing::warn!(
                session = %core.scope.session_id(),
                call_id,
                tool,
                delegation,
                "a server call was answered elsewhere (the page?)"
            );
            core.note(Note::ServerCallAnsweredElsewhere {
                call_id,
                tool,
                delegation_id: delegation.to_owned(),
            });
        }
    }

    /// The batch of a delegation's current response (`response` when the event names it).
    fn batch(&self, delegation: Option<&str>, response: Option<&str>) -> String {
        delegation
            .and_then(|d| self.responses.get(d).cloned())
            .or_else(|| response.map(str::to_owned))
            .or_else(|| delegation.map(str::to_owned))
            .unwrap_or_else(|| "gpt-live".to_owned())
    }

    /// A backend response is over: calls only its snapshot reports run, an interrupted one
    /// cancels what cancels on interruption, and a finished one whose calls all resolved gets
    /// its continuation.
    fn response_over(
        &mut self,
        core: &mut Core,
        event: &mut Value,
        delegation: Option<String>,
    ) -> Verdict {
        let response = event["event"]
            .get("response")
            .cloned()
            .unwrap_or(Value::Null);
        let response_id = str_field(&response, "id");
        let batch = self.batch(delegation.as_deref(), response_id);
        if let Some(delegation) = &delegation {
            self.responses.remove(delegation);
        }
        self.in_progress.remove(&batch);
        if let Some(id) = response_id {
            self.in_progress.remove(id);
        }
        // Snapshots clear their output, but one that carries calls is read like the stream.
        if let Some(items) = response.get("output").and_then(Value::as_array) {
            for fc in items.iter().filter_map(wire::function_call_item) {
                core.learn_item(fc.item_id, fc.call_id, fc.name);
                if let Some(arguments) = fc.arguments {
                    self.call_reported(core, &batch, fc.call_id, fc.name, arguments);
                }
            }
        }
        let interrupted = matches!(
            str_field(&response, "status"),
            Some("cancelled" | "incomplete")
        );
        if interrupted {
            core.interrupt(self, &batch);
        }
        if core.tracker.response_done(&batch) && !interrupted {
            self.all_resolved(core, &batch);
        }
        // A continuation that waited for this response to end goes now (one, also when this
        // response's own calls want one too).
        if self.continuation_waiting {
            self.continuation(core);
        }
        self.flush_background(core);
        self.scrub_snapshot(core, event)
    }

    /// A call of a backend response, with the nulls of strict mode removed from its arguments.
    fn call_reported(
        &mut self,
        core: &mut Core,
        batch: &str,
        call_id: Option<&str>,
        name: Option<&str>,
        arguments: &str,
    ) {
        let stripped = name
            .filter(|n| self.strict.contains(*n) && arguments.contains("null"))
            .and_then(|n| core.registry.definition(n))
            .and_then(|def| {
                // Text that is not JSON is left alone: the engine reports it to the model.
                let mut args = serde_json::from_str::<Value>(arguments).ok()?;
                toolc_core::strict::strip_strict_nulls(&def.parameters, &mut args);
                Some(args.to_string())
            });
        let arguments = stripped.as_deref().unwrap_or(arguments);
        core.call_reported(self, batch, call_id, name, arguments);
    }

    /// Removes hidden function calls from a nested response snapshot's `output`; forwards
    /// unchanged when there are none.
    fn scrub_snapshot(&self, core: &Core, event: &mut Value) -> Verdict {
        let Some(output) = event
            .get_mut("event")
            .and_then(|e| e.get_mut("response"))
            .and_then(|r| r.get_mut("output"))
            .and_then(Value::as_array_mut)
        else {
            return Verdict::Forward;
        };
        let before = output.len();
        output.retain(|item| match wire::function_call_item(item) {
            Some(fc) => match fc.name {
                Some(_) => core.visible_name(fc.name),
                None => core.known_item(fc.item_id, None),
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

    /// An `error`: one that names this session's `response.create` is its refusal, kept here
    /// (the page did not send that request); any other goes to the page.
    fn model_error(&mut self, core: &mut Core, event: &Value) -> Verdict {
        let error = event.get("error");
        let client_event_id = error
            .and_then(|e| str_field(e, "client_event_id"))
            .or_else(|| str_field(event, "client_event_id"));
        let Some(event_id) = client_event_id.filter(|id| id.starts_with(REQUEST_ID_PREFIX)) else {
            return Verdict::Forward;
        };
        // A refused continuation is owed still: it asks again when the response in progress
        // ends.
        if let Some(requested) = self.requested.take_if(|r| r.event_id == event_id) {
            self.continuation_waiting |= requested.continuation;
        }
        Counters::bump(&core.counters_ref().refused_responses);
        core.note(Note::ResponseRefused {
            event_id: event_id.to_owned(),
            code: error.and_then(|e| str_field(e, "code")).map(str::to_owned),
            message: error
                .and_then(|e| str_field(e, "message"))
                .unwrap_or_default()
                .to_owned(),
        });
        Verdict::Drop
    }

    /// Whether the backend may be asked for a response now: none is in progress or asked for.
    fn quiet(&self) -> bool {
        self.in_progress.is_empty() && self.requested.is_none()
    }

    /// A batch is over and its results are in: the backend goes on with one `response.create`,
    /// now if no backend response is in progress or asked for, else when that one ends (the
    /// backend refuses a `response.create` meanwhile). Background results that arrived go in
    /// before it, so one response covers both.
    fn continuation(&mut self, core: &mut Core) {
        if !self.quiet() {
            self.continuation_waiting = true;
            return;
        }
        self.continuation_waiting = false;
        self.push_background_results(core);
        Counters::bump(&core.counters_ref().continuations);
        self.request_response(core, true);
    }

    /// Sends a `response.create` around a fresh event id, so that an `error` refusing it can
    /// be told from errors about other events.
    fn request_response(&mut self, core: &mut Core, continuation: bool) {
        self.requests_sent += 1;
        let event_id = format!("{REQUEST_ID_PREFIX}{}", self.requests_sent);
        core.send_model(wire::response_create(&event_id));
        core.watch_request(&event_id);
        self.requested = Some(Requested {
            event_id,
            continuation,
        });
    }

    /// At a point where no backend response is in progress or asked for: the background
    /// results that arrived, and one `response.create` for them.
    fn flush_background(&mut self, core: &mut Core) {
        if self.background_done.is_empty() || !self.quiet() || self.continuation_waiting {
            return;
        }
        if self.push_background_results(core) {
            self.request_response(core, false);
        }
    }

    /// Adds the background results that arrived to the backend's conversation, as developer
    /// messages.
    fn push_background_results(&mut self, core: &mut Core) -> bool {
        core.send_background_results(&mut self.background_done, wire::background_result)
    }
}
