//! Running calls: one spawn path for sync, background (`mode: async`) and live calls, their
//! interruption, fillers, the one continuation per response, and their end.

use super::*;

impl Session {
    /// Sends a client call to the browser at once, in the order the model made the calls; the
    /// call's task then waits on the reply channel registered here.
    pub(super) fn send_to_browser_now(&mut self, call: &ToolCall, route: &Route) {
        let arguments = match route {
            Route::Client { arguments, .. } | Route::Notify { arguments } => arguments,
            Route::Server { .. } | Route::Live { .. } | Route::Reject(_) => return,
        };
        let traceparent = crate::telemetry::traceparent(&self.response_span(&call.call_id));
        let mut state = lock(&self.browser.state);
        if !state.connected {
            return;
        }
        let text = browser::encode_call_traced(
            state.naming,
            &call.call_id,
            &call.name,
            &arguments.to_string(),
            traceparent.as_deref(),
        );
        if matches!(route, Route::Client { .. }) {
            let (tx, rx) = oneshot::channel();
            state.pending.insert(call.call_id.clone(), tx);
            state.sent_waiting.insert(call.call_id.clone(), rx);
        } else {
            state.sent_notify.insert(call.call_id.clone());
        }
        drop(state);
        self.outputs.push_back(Output::ToBrowser(text));
    }

    pub(super) fn spawn_call(&mut self, admission: Admission) {
        let call_id = admission.call().call_id.clone();
        if tokio::runtime::Handle::try_current().is_err() {
            let error = CallError::no_runtime(&admission.call().name);
            return self.finish(&call_id, CallOutcome::failed(&call_id, error));
        }
        let span = self.response_span(&call_id);
        let registry = self.registry.clone();
        let path = self.browser.clone();
        let ctx = self.call_context(admission.call());
        let guard = DoneGuard {
            tx: self.browser.tx.clone(),
            call_id,
            tool: admission.call().name.clone(),
            sent: false,
        };
        // The call's span nests in its response's, which nests in whatever span drives the
        // session (the relay's `toolc.session`): a spawned task does not inherit it by itself.
        let task = async move {
            guard.send(admission.run(&registry, ctx, &path).await);
        };
        tokio::spawn(tracing::Instrument::instrument(task, span));
    }

    /// The `toolc.response` span the calls of `call_id`'s response run in, made at its first
    /// call as a child of the current span (the session's). Spans of responses that are over
    /// are let go here: each stays open while a call task still holds it, and closes (and is
    /// exported) with the last.
    fn response_span(&mut self, call_id: &str) -> tracing::Span {
        let Some(response) = self.tracker.response_of(call_id).map(str::to_owned) else {
            return tracing::Span::current();
        };
        let tracker = &self.tracker;
        self.response_spans
            .retain(|r, _| *r == response || !tracker.is_done(r));
        self.response_spans
            .entry(response)
            .or_insert_with_key(|r| crate::telemetry::response_span(r))
            .clone()
    }

    /// The context a call runs with, kept so that an interruption can cancel it.
    pub(super) fn call_context(&mut self, call: &ToolCall) -> CallContext {
        let ctx = self.scope.call(&call.name, &call.call_id);
        if let Some(info) = self.calls.get_mut(&call.call_id) {
            info.ctx = Some(ctx.clone());
        }
        ctx
    }

    /// A `mode: async` server call: once approved (if it must be), the model gets "started"
    /// as the call's result and the conversation goes on; the work's own result comes back as
    /// [`Inner::Background`] and is added at the next point where no response is in progress.
    pub(super) fn spawn_background_call(&mut self, admission: Admission) {
        let call = admission.call().clone();
        if tokio::runtime::Handle::try_current().is_err() {
            let outcome = CallOutcome::failed(&call.call_id, CallError::no_runtime(&call.name));
            return self.finish(&call.call_id, outcome);
        }
        let span = self.response_span(&call.call_id);
        let registry = self.registry.clone();
        let path = self.browser.clone();
        let ctx = self.call_context(&call);
        if let Some(info) = self.calls.get_mut(&call.call_id) {
            info.background = true;
        }
        let tx = self.browser.tx.clone();
        let guard = DoneGuard {
            tx: tx.clone(),
            call_id: call.call_id.clone(),
            tool: call.name.clone(),
            sent: false,
        };
        let task = async move {
            let approved = match admission.ask(&ctx, &path).await {
                Ok(approved) => approved,
                Err(refused) => return guard.send(refused),
            };
            guard.send(approved.started());
            let outcome = approved.run_in_background(&registry, ctx, &path).await;
            let _ = tx.send(Inner::Background {
                call_id: call.call_id,
                outcome,
            });
        };
        tokio::spawn(tracing::Instrument::instrument(task, span));
    }

    /// The user interrupted `response_id` (its `response.done` says `cancelled`): every call of
    /// it that cancels on interruption and is still running is cancelled — its executor's
    /// signal fires, the page's handler or approval question is aborted, and the model gets one
    /// "interrupted" result for it (a result that comes later is refused).
    pub(super) fn interrupt(&mut self, response_id: &str) {
        let mut affected: Vec<(u64, String)> = self
            .calls
            .iter()
            .filter(|(call_id, info)| {
                self.tracker.response_of(call_id) == Some(response_id)
                    && (self.tracker.is_open(call_id)
                        || info.background
                        || info.kind == CallKind::Notify)
                    && self
                        .registry
                        .definition(&info.name)
                        .is_some_and(|d| d.cancels_on_interruption())
            })
            .map(|(call_id, info)| (info.seq, call_id.clone()))
            .collect();
        affected.sort();
        let mut cancelled = 0;
        for (_, call_id) in affected {
            if self.cancel_call(&call_id) {
                cancelled += 1;
            }
        }
        self.note(Note::Interrupted {
            response_id: response_id.to_owned(),
            cancelled,
        });
    }

    /// Cancels one call, whichever provider asked (an OpenAI barge-in, a Gemini Live
    /// `toolCallCancellation`): its executor's signal fires, the page's handler or approval
    /// question is aborted, and an open call ends as "interrupted" (a result that comes later
    /// is refused). Returns whether the call was still open.
    pub(super) fn cancel_call(&mut self, call_id: &str) -> bool {
        let call_id = call_id.to_owned();
        let Some(info) = self.calls.get_mut(&call_id) else {
            return false;
        };
        if let Some(ctx) = &info.ctx {
            ctx.cancel();
        }
        info.background = false;
        let (name, kind) = (info.name.clone(), info.kind);
        let (connected, questions) = {
            let mut state = lock(&self.browser.state);
            state.pending.remove(&call_id);
            state.sent_waiting.remove(&call_id);
            let questions: Vec<String> = state
                .approvals
                .iter()
                .filter(|(_, open)| open.call_id == call_id)
                .map(|(id, _)| id.clone())
                .collect();
            for id in &questions {
                state.approvals.remove(id);
            }
            (state.connected, questions)
        };
        if connected {
            for id in &questions {
                let text = browser::encode_approval_cancel(id, "interrupted");
                self.outputs.push_back(Output::ToBrowser(text));
            }
            if matches!(kind, CallKind::Client | CallKind::Notify) {
                let text = browser::encode_call_cancel(&call_id, "interrupted");
                self.outputs.push_back(Output::ToBrowser(text));
            }
        }
        if self.tracker.is_open(&call_id) {
            Counters::bump(&self.counters_ref().interrupted_calls);
            let outcome = CallOutcome::failed(&call_id, CallError::interrupted(&name));
            self.finish(&call_id, outcome);
            return true;
        }
        false
    }

    /// Whether the model may be asked for a response now: none is in progress, starting, or
    /// owed to a waiting continuation.
    pub(super) fn quiet(&self) -> bool {
        self.current_response.is_none()
            && self.filler_responses.is_empty()
            && self.response_requested.is_none()
            && !self.continuation_waiting
    }

    /// Adds the background results that arrived to the conversation, as system messages.
    pub(super) fn push_background_results(&mut self) -> bool {
        let mut any = false;
        while let Some((call_id, outcome)) = self.background_done.pop_front() {
            let Some(info) = self.calls.get(&call_id) else {
                continue;
            };
            let text = openai::background_result(
                &info.name,
                &call_id,
                outcome.is_error(),
                &outcome.output,
            );
            Counters::bump(&self.counters_ref().background_results);
            self.outputs.push_back(Output::ToModel(text));
            any = true;
        }
        any
    }

    /// At a quiet point, the background results that arrived and one `response.create` for
    /// them.
    pub(super) fn flush_background(&mut self) {
        if self.background_done.is_empty() || !self.quiet() {
            return;
        }
        if self.push_background_results() {
            self.request_response(true, openai::response_create);
        }
    }

    /// Sends a `session.update` with the current declarations when the live tools or the
    /// chosen toolsets changed since the model was last told.
    pub(super) fn redeclare_if_changed(&mut self) {
        // Live declares tools once, in `setup`: new live tools wait for the next session.
        if self.config.provider.is_live() {
            return;
        }
        let live_changed = self
            .config
            .live_tools
            .as_ref()
            .is_some_and(|live| self.live_generation != Some(live.current().0));
        if !live_changed && !self.selection_changed {
            return;
        }
        self.selection_changed = false;
        let (declarations, generation) = declared_now(&self.own_declarations, &self.config);
        self.declarations = declarations;
        self.live_generation = generation;
        let mut session = Map::new();
        session.insert("type".into(), Value::String("realtime".into()));
        session.insert("tools".into(), Value::Array(self.declarations.clone()));
        // Marker tools are declared in the instructions: those follow the tools too, with
        // what the application or browser set first.
        if let Some(instructions) = self.marker_instructions() {
            session.insert("instructions".into(), Value::String(instructions));
        }
        tracing::info!(
            session = %self.scope.session_id(),
            tools = self.declarations.len(),
            "tools changed: declared again"
        );
        self.outputs
            .push_back(Output::ToModel(openai::session_update(session)));
    }

    pub(super) fn schedule_filler(&mut self, call_id: &str, name: &str) {
        let Some(delay) = self.config.filler_delay else {
            return;
        };
        // Live has no out-of-band response to say a filler in without changing the
        // conversation.
        if self.config.provider.is_live() {
            return;
        }
        let has_phrases = self
            .registry
            .definition(name)
            .is_some_and(|d| !d.filler.is_empty());
        if !has_phrases || tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let tx = self.browser.tx.clone();
        let call_id = call_id.to_owned();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let _ = tx.send(Inner::FillerDue(call_id));
        });
    }

    /// Asks the model to go on. While another response is in progress (the user spoke and a new
    /// response started before the calls of the previous one finished, or a filler is being
    /// said), the model rejects a `response.create` (`conversation_already_has_active_response`),
    /// so the continuation waits for that response's `response.done`. It also waits while a
    /// request of this session has not started yet (a background result's, a filler's): that
    /// response's `response.done` is where it asks.
    pub(super) fn continuation(&mut self) {
        if self.config.provider.is_live() {
            // Live goes on per batch (`gemini_continuation`); nothing waits for a response.
            return;
        }
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
        self.redeclare_if_changed();
        // Background results that arrived go in before it, so one response covers both.
        self.push_background_results();
        Counters::bump(&self.counters_ref().continuations);
        self.request_response(true, openai::response_create);
    }

    /// Sends a `response.create` built by `create` around a fresh event id, so that an `error`
    /// refusing it can be told from errors about other events.
    pub(super) fn request_response(
        &mut self,
        continuation: bool,
        create: impl FnOnce(&str) -> String,
    ) {
        self.requests_sent += 1;
        let event_id = format!("{REQUEST_ID_PREFIX}{}", self.requests_sent);
        self.outputs.push_back(Output::ToModel(create(&event_id)));
        self.response_requested = Some(Requested {
            event_id,
            continuation,
        });
    }

    /// After a `response.done`: the continuation that waited for it, if any (one, also when
    /// the finished response's own calls want one too).
    pub(super) fn continuation_if_waiting(&mut self) {
        if self.continuation_waiting {
            self.continuation();
        }
    }

    /// Sends the result of an open call to the model and, when it was the last open call of a
    /// finished response, the continuation.
    pub(super) fn finish(&mut self, call_id: &str, outcome: CallOutcome) {
        if !self.tracker.is_open(call_id) {
            return;
        }
        // Later repeats get this result; those that waited for it get it now.
        for theirs in self.conversation.finished(call_id, &outcome) {
            let repeat = theirs.call_id.clone();
            self.finish(&repeat, theirs);
        }
        if let Status::Failed(error) = &outcome.status {
            let counters = self.counters_ref();
            Counters::bump(&counters.failed_calls);
            if error.kind() == CallErrorKind::NotApproved {
                Counters::bump(&counters.approvals_refused);
            }
            let kind = self.calls.get(call_id).map(|c| c.kind);
            if kind == Some(CallKind::Client) {
                match error.kind() {
                    CallErrorKind::Timeout => Counters::bump(&counters.client_timeouts),
                    _ if error.code() == Some("client_disconnected") => {
                        Counters::bump(&counters.client_disconnects)
                    }
                    _ => {}
                }
            }
            self.note(Note::CallFailed {
                call_id: call_id.to_owned(),
                tool: error.tool().to_owned(),
                kind: error.kind(),
                detail: error.detail().map(str::to_owned),
            });
        }
        if self.config.provider.is_live() {
            self.gemini_result(call_id, &outcome);
        } else {
            let marker_result = self
                .markers
                .as_mut()
                .and_then(|flow| flow.result_event(call_id, &outcome));
            self.outputs
                .push_back(Output::ToModel(marker_result.unwrap_or_else(|| {
                    openai::function_call_output(call_id, &outcome.output)
                })));
        }
        if self.config.trace_calls {
            self.trace(call_id, &outcome.status);
        }
        if self.tracker.resolve(call_id) == Resolved::Continue {
            match self.config.provider {
                Provider::OpenAi => self.continuation(),
                Provider::GeminiLive | Provider::VertexLive => {
                    if let Some(batch) = self.tracker.response_of(call_id).map(str::to_owned) {
                        self.gemini_continuation(&batch);
                    }
                }
            }
        }
    }

    /// The opt-in `toolc.trace` event for a resolved call (see [`SessionConfig::trace_calls`]).
    pub(super) fn trace(&mut self, call_id: &str, status: &Status) {
        let Some(info) = self.calls.get(call_id) else {
            return;
        };
        let routed_to_browser = matches!(info.kind, CallKind::Client | CallKind::Notify);
        let location = if routed_to_browser {
            crate::Location::Client
        } else {
            // A name the registry does not know came from the model alone: not worth a trace.
            match self.registry.location(&info.name) {
                Some(location) => location,
                None => return,
            }
        };
        let (status, error) = match status {
            Status::Ok => ("ok", None),
            Status::Acknowledged => ("acknowledged", None),
            Status::Failed(e) => ("error", Some(e.kind().as_str())),
        };
        let text = browser::encode_trace(&browser::Trace {
            // The browser already holds the ids of calls it was given, and no others.
            call_id: routed_to_browser.then_some(call_id),
            name: &info.name,
            location,
            duration: info.started.elapsed(),
            status,
            error,
        });
        if lock(&self.browser.state).connected {
            self.outputs.push_back(Output::ToBrowser(text));
        }
    }
}
