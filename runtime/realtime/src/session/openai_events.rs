//! The OpenAI Realtime side of a session: GA server events read into the core's calls and
//! responses, what of them the browser may see, and the text-marker pass over them.

use super::*;

impl Session {
    /// The marker flow after the native handling: marker text is hidden from the browser and
    /// the calls it completes are run like native ones.
    pub(super) fn marker_pass(&mut self, text: &str, verdict: Verdict) -> Verdict {
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
                    self.call_reported(Some(&response_id), Some(&call_id), Some(&name), &arguments);
                    if !self.tracker.is_known(&call_id) {
                        if let Some(flow) = self.markers.as_mut() {
                            flow.forget(&call_id);
                        }
                    }
                }
                Found::Broken {
                    response_id,
                    call_id,
                    error,
                } => self.marker_broken(&response_id, &call_id, error),
            }
        }
        verdict
    }

    /// A marker that could not become a call: an error result for the model, in the same
    /// per-response batch as the response's other calls.
    pub(super) fn marker_broken(&mut self, response_id: &str, call_id: &str, error: CallError) {
        let response_id = if response_id.is_empty() {
            self.current_response.clone().unwrap_or_default()
        } else {
            response_id.to_owned()
        };
        if self.filler_responses.contains(&response_id)
            || !self.tracker.register(&response_id, call_id)
        {
            if let Some(flow) = self.markers.as_mut() {
                flow.forget(call_id);
            }
            return;
        }
        Counters::bump(&self.counters_ref().calls);
        Counters::bump(&self.counters_ref().invalid_calls);
        self.next_seq += 1;
        self.calls.insert(
            call_id.to_owned(),
            CallInfo::new(error.tool(), CallKind::Invalid, self.next_seq),
        );
        self.finish(call_id, CallOutcome::failed(call_id, error));
    }

    pub(super) fn native_model_event(&mut self, text: &str) -> Verdict {
        let kind = match openai::head(text) {
            Head::Typed(kind) if kind == "error" => return self.model_error(text),
            Head::Typed(kind) if openai::is_tool_related_server_event(&kind) => kind,
            Head::Typed(_) | Head::Untyped => return Verdict::Forward,
            // What the session cannot read could be about a server call: fail closed.
            Head::Ambiguous => return self.unreadable_model_event("(two `type` members)"),
            Head::Invalid => return self.unreadable_model_event("(not JSON)"),
        };
        // The type may have been read from the event's first bytes alone; the rest must parse
        // too before any of it reaches the browser.
        let Ok(mut event) = serde_json::from_str::<Value>(text) else {
            return self.unreadable_model_event(&kind);
        };
        // A second `type` member later in the event: the first bytes said one thing, the
        // parsed event (and the page's parser) another.
        if str_field(&event, "type") != Some(kind.as_ref()) {
            return self.unreadable_model_event(&kind);
        }
        let verdict = match kind.as_ref() {
            "response.created" => {
                if let Some(response) = event.get("response") {
                    let id = str_field(response, "id").map(str::to_owned);
                    if openai::is_filler_response(response) {
                        if let Some(id) = id {
                            self.filler_responses.insert(id);
                        }
                    } else if id.is_some() {
                        self.current_response = id;
                    }
                    // Whichever response this is, the one asked for has started.
                    self.response_requested = None;
                }
                self.scrub_response(&mut event)
            }
            "response.output_item.added" | "response.output_item.done" => {
                let response_id = str_field(&event, "response_id");
                let Some(item) = event.get("item").and_then(openai::function_call_item) else {
                    return Verdict::Forward;
                };
                let visible = self.learn_item(item.item_id, item.call_id, item.name);
                if kind == "response.output_item.done" {
                    if let Some(item_id) = item.item_id {
                        self.streams.remove(item_id);
                    }
                    if let Some(arguments) = item.arguments {
                        self.call_reported(response_id, item.call_id, item.name, arguments);
                    }
                } else if visible {
                    self.start_stream(item.item_id, item.call_id, item.name);
                }
                self.keep_if(visible)
            }
            "response.function_call_arguments.delta" => {
                let item_id = str_field(&event, "item_id");
                let visible = self.known_visibility(item_id, str_field(&event, "call_id"));
                if visible {
                    if let (Some(item_id), Some(delta)) = (item_id, str_field(&event, "delta")) {
                        self.stream_delta(item_id, delta);
                    }
                }
                self.keep_if(visible)
            }
            "response.function_call_arguments.done" => {
                let item_id = str_field(&event, "item_id");
                if let Some(item_id) = item_id {
                    self.streams.remove(item_id);
                }
                let call_id = str_field(&event, "call_id");
                let name = str_field(&event, "name");
                let visible = if name.is_some() {
                    self.learn_item(item_id, call_id, name)
                } else {
                    // The beta protocol had no `name` here; rely on what output_item.added said.
                    self.known_visibility(item_id, call_id)
                };
                if let Some(arguments) = str_field(&event, "arguments") {
                    let response_id = str_field(&event, "response_id");
                    match name {
                        Some(name) => {
                            self.call_reported(response_id, call_id, Some(name), arguments)
                        }
                        None => {
                            // Without a name the call is completed by output_item.done.
                        }
                    }
                }
                self.keep_if(visible)
            }
            "response.done" => self.response_done(&mut event),
            _ => {
                // conversation.item.{added,done,created,retrieved}
                let Some(item) = event.get("item") else {
                    return Verdict::Forward;
                };
                if let Some(fc) = openai::function_call_item(item) {
                    let visible = self.learn_item(fc.item_id, fc.call_id, fc.name);
                    self.keep_if(visible)
                } else if let Some(call_id) = openai::function_call_output_call_id(item) {
                    // The echo of a result this runtime sent: a server call's result stays here.
                    let visible = self.call_visible.get(call_id).copied().unwrap_or(true);
                    self.keep_if(visible)
                } else {
                    Verdict::Forward
                }
            }
        };
        verdict
    }

    /// An `error` event. One that names a `response.create` of this session is its refusal
    /// (another response was active, or the request failed): nothing will start for it, so the
    /// request is forgotten, a refused continuation asks again after the next `response.done`,
    /// and the error stays here, since the browser did not send that request.
    fn model_error(&mut self, text: &str) -> Verdict {
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
        Counters::bump(&self.counters_ref().refused_responses);
        self.note(Note::ResponseRefused {
            event_id: event_id.to_owned(),
            code: str_field(error, "code").map(str::to_owned),
            message: str_field(error, "message").unwrap_or_default().to_owned(),
        });
        Verdict::Drop
    }

    /// Starts the partial arguments of a call of a streaming client tool.
    pub(super) fn start_stream(
        &mut self,
        item_id: Option<&str>,
        call_id: Option<&str>,
        name: Option<&str>,
    ) {
        let (Some(item_id), Some(call_id), Some(name)) = (item_id, call_id, name) else {
            return;
        };
        if !self
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
    pub(super) fn stream_delta(&mut self, item_id: &str, delta: &str) {
        let Some(stream) = self.streams.get_mut(item_id) else {
            return;
        };
        let Some(partial) = stream.partial.push(delta) else {
            return;
        };
        let text = browser::encode_partial_arguments(&stream.call_id, &stream.name, &partial);
        if lock(&self.browser.state).connected {
            Counters::bump(&self.config.counters.argument_deltas);
            self.outputs.push_back(Output::ToBrowser(text));
        }
    }

    /// Drops a model event that could not be read (see [`Note::ModelEventUnreadable`]).
    pub(super) fn unreadable_model_event(&mut self, kind: &str) -> Verdict {
        Counters::bump(&self.counters_ref().unreadable_model_events);
        self.note(Note::ModelEventUnreadable {
            kind: kind.to_owned(),
        });
        Verdict::Drop
    }

    pub(super) fn keep_if(&self, visible: bool) -> Verdict {
        if visible {
            Verdict::Forward
        } else {
            Counters::bump(&self.counters_ref().scrubbed_events);
            Verdict::Drop
        }
    }

    /// Whether the browser may see a call of `name`: only calls that are routed to it.
    pub(super) fn visible_name(&self, name: Option<&str>) -> bool {
        name.and_then(|n| self.registry.location(n)) == Some(crate::Location::Client)
    }

    pub(super) fn learn_item(
        &mut self,
        item_id: Option<&str>,
        call_id: Option<&str>,
        name: Option<&str>,
    ) -> bool {
        let known = self.known(item_id, call_id);
        let visible = match (known, name) {
            (_, Some(_)) => self.visible_name(name),
            (Some(v), None) => v,
            (None, None) => false,
        };
        if let Some(item_id) = item_id {
            self.item_visible.insert(item_id.to_owned(), visible);
        }
        if let Some(call_id) = call_id {
            self.call_visible.insert(call_id.to_owned(), visible);
        }
        visible
    }

    pub(super) fn known(&self, item_id: Option<&str>, call_id: Option<&str>) -> Option<bool> {
        item_id
            .and_then(|i| self.item_visible.get(i).copied())
            .or_else(|| call_id.and_then(|c| self.call_visible.get(c).copied()))
    }

    /// Visibility of an event that names no tool: what was learned earlier, hidden if nothing
    /// was (arguments of an unknown call could belong to a server tool).
    pub(super) fn known_visibility(&self, item_id: Option<&str>, call_id: Option<&str>) -> bool {
        self.known(item_id, call_id).unwrap_or(false)
    }

    /// Removes hidden function calls from `response.output`; forwards unchanged when there are
    /// none.
    pub(super) fn scrub_response(&mut self, event: &mut Value) -> Verdict {
        let Some(output) = event
            .get_mut("response")
            .and_then(|r| r.get_mut("output"))
            .and_then(Value::as_array_mut)
        else {
            return Verdict::Forward;
        };
        let before = output.len();
        let mut keep = Vec::with_capacity(before);
        for item in output.iter() {
            keep.push(match openai::function_call_item(item) {
                Some(fc) => match fc.name {
                    Some(_) => self.visible_name(fc.name),
                    None => self.known_visibility(fc.item_id, fc.call_id),
                },
                None => true,
            });
        }
        let mut i = 0;
        output.retain(|_| {
            let k = keep[i];
            i += 1;
            k
        });
        if output.len() == before {
            Verdict::Forward
        } else {
            Counters::bump(&self.counters_ref().scrubbed_events);
            Verdict::Replace(event.to_string())
        }
    }

    pub(super) fn response_done(&mut self, event: &mut Value) -> Verdict {
        let Some(response) = event.get("response") else {
            return Verdict::Forward;
        };
        let id = str_field(response, "id").map(str::to_owned);
        let filler = openai::is_filler_response(response)
            || id
                .as_ref()
                .is_some_and(|i| self.filler_responses.contains(i));
        if filler {
            if let Some(id) = &id {
                self.filler_responses.remove(id);
            }
            self.continuation_if_waiting();
            // A filler's own done is never a continuation and never completes a response; any
            // calls in it are ignored (fillers are declared without tools).
            if let Some(items) = response.get("output").and_then(Value::as_array) {
                for item in items {
                    if let Some(fc) = openai::function_call_item(item) {
                        if let Some(call_id) = fc.call_id {
                            self.call_visible.insert(call_id.to_owned(), false);
                            self.note(Note::CallInFiller {
                                call_id: call_id.to_owned(),
                            });
                        }
                    }
                }
            }
            return self.scrub_response(event);
        }
        let response_id = id
            .clone()
            .or_else(|| self.current_response.clone())
            .unwrap_or_default();
        // Calls that only this event reports (no earlier *.done for them).
        let mut late: Vec<ReportedCall> = Vec::new();
        if let Some(items) = response.get("output").and_then(Value::as_array) {
            for item in items {
                if let Some(fc) = openai::function_call_item(item) {
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
        }
        for c in &late {
            self.learn_item(
                c.item_id.as_deref(),
                c.call_id.as_deref(),
                c.name.as_deref(),
            );
            self.call_reported(
                Some(&response_id),
                c.call_id.as_deref(),
                c.name.as_deref(),
                &c.arguments,
            );
        }
        if self.current_response.as_deref() == Some(response_id.as_str()) {
            self.current_response = None;
        }
        let interrupted = openai::is_cancelled_response(response);
        if interrupted {
            self.interrupt(&response_id);
        }
        // Between responses, before any continuation: the model learns of tools that came
        // or went since it was last told.
        if self.current_response.is_none() {
            self.redeclare_if_changed();
        }
        // An interrupted response earns no continuation: the user is speaking, and their turn
        // brings the next response (which sees every result sent so far).
        if self.tracker.response_done(&response_id) && !interrupted {
            self.continuation();
        } else {
            self.continuation_if_waiting();
        }
        if !interrupted {
            self.send_wanted_fillers(&response_id);
        }
        self.flush_background();
        self.scrub_response(event)
    }
}
