//! Running calls: one spawn path for sync, background (`mode: async`) and live calls, their
//! interruption, fillers, the one continuation per response, and their end.

use super::*;

impl Core {
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
            let order = state.next_open();
            let away = state.away;
            state.pending.insert(
                call.call_id.clone(),
                PendingCall {
                    reply: tx,
                    text: text.clone(),
                    order,
                },
            );
            state.sent_waiting.insert(call.call_id.clone(), rx);
            if away {
                // The page gets it when it resumes (`RealtimeSession::browser_resumed`).
                return;
            }
        } else {
            state.sent_notify.insert(call.call_id.clone());
        }
        drop(state);
        self.outputs.push_back(Output::ToBrowser(text));
    }

    pub(super) fn spawn_call(&mut self, codec: &mut dyn Codec, admission: Admission) {
        let call_id = admission.call().call_id.clone();
        if tokio::runtime::Handle::try_current().is_err() {
            let error = CallError::no_runtime(&admission.call().name);
            return self.finish(codec, &call_id, CallOutcome::failed(&call_id, error));
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
    pub(super) fn spawn_background_call(&mut self, codec: &mut dyn Codec, admission: Admission) {
        let call = admission.call().clone();
        if tokio::runtime::Handle::try_current().is_err() {
            let outcome = CallOutcome::failed(&call.call_id, CallError::no_runtime(&call.name));
            return self.finish(codec, &call.call_id, outcome);
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
    pub(super) fn interrupt(&mut self, codec: &mut dyn Codec, response_id: &str) {
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
            if self.cancel_call(codec, &call_id) {
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
    pub(super) fn cancel_call(&mut self, codec: &mut dyn Codec, call_id: &str) -> bool {
        let ended = self.end_call(codec, call_id, "interrupted", CallError::interrupted);
        if ended {
            Counters::bump(&self.counters_ref().interrupted_calls);
        }
        ended
    }

    /// Cancels one call as [`Core::cancel_call`] does, telling the page why (`reason`) and
    /// ending an open call with `error`. Returns whether the call was still open.
    pub(super) fn end_call(
        &mut self,
        codec: &mut dyn Codec,
        call_id: &str,
        reason: &str,
        error: impl FnOnce(&str) -> CallError,
    ) -> bool {
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
                let text = browser::encode_approval_cancel(id, reason);
                self.outputs.push_back(Output::ToBrowser(text));
            }
            if matches!(kind, CallKind::Client | CallKind::Notify) {
                let text = browser::encode_call_cancel(&call_id, reason);
                self.outputs.push_back(Output::ToBrowser(text));
            }
        }
        if self.tracker.is_open(&call_id) {
            let outcome = CallOutcome::failed(&call_id, error(&name));
            self.finish(codec, &call_id, outcome);
            return true;
        }
        false
    }

    pub(super) fn schedule_filler(&mut self, call_id: &str, name: &str) {
        let Some(delay) = self.config.filler_delay else {
            return;
        };
        // Not every model can say a filler without changing the conversation (Live cannot).
        if !self.fillers {
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

    /// Sends the result of an open call to the model and, when it was the last open call of a
    /// finished response, the continuation.
    pub(super) fn finish(&mut self, codec: &mut dyn Codec, call_id: &str, outcome: CallOutcome) {
        if !self.tracker.is_open(call_id) {
            return;
        }
        // Later repeats get this result; those that waited for it get it now.
        for theirs in self.conversation.finished(call_id, &outcome) {
            let repeat = theirs.call_id.clone();
            self.finish(codec, &repeat, theirs);
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
        codec.write_result(self, call_id, &outcome);
        if self.config.trace_calls {
            self.trace(call_id, &outcome.status);
        }
        if self.tracker.resolve(call_id) == Resolved::Continue {
            if let Some(response) = self.tracker.response_of(call_id).map(str::to_owned) {
                codec.all_resolved(self, &response);
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
        self.send_browser(text);
    }
}
