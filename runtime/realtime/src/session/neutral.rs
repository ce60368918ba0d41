//! The session's core: what every provider shares. Calls reported by a codec are admitted by
//! the call engine, run on tasks, tracked per response until each is answered once, and traced;
//! the page sees only the calls routed to it.

use super::*;

/// The provider-neutral state of a session.
pub(super) struct Core {
    pub(super) registry: Arc<Registry>,
    pub(super) config: Arc<SessionConfig>,
    pub(super) tracker: Tracker,
    /// The `toolc.response` spans of responses whose calls are still being reported.
    pub(super) response_spans: HashMap<String, tracing::Span>,
    /// The call engine: toolsets, validation, repeats (across the session's responses),
    /// approval and background decided for every call.
    pub(super) conversation: Conversation,
    pub(super) calls: HashMap<String, CallInfo>,
    /// Visibility to the browser of calls, by call id.
    pub(super) call_visible: Recent<bool>,
    /// Visibility to the browser of function-call items, by item id (the providers whose
    /// events name an item before, or instead of, its call).
    pub(super) item_visible: Recent<bool>,
    pub(super) browser: BrowserPath,
    pub(super) outputs: VecDeque<Output>,
    /// Calls reported so far, which number them.
    pub(super) next_seq: u64,
    /// The session's id and principal, which every executor sees; cancelled when the browser
    /// leaves.
    pub(super) scope: SessionScope,
    /// The function tools declared to the model now: the config's, with the live tools'
    /// current ones in place of theirs.
    pub(super) declarations: Vec<Value>,
    /// The generation of the live tools' declarations in `declarations`.
    pub(super) live_generation: Option<u64>,
    /// The registry's declarations the session offers: the config's, until
    /// [`RealtimeSession::select_toolsets`] changes them.
    pub(super) own_declarations: Vec<Value>,
    /// The browser event read last was audio input.
    pub(super) last_input_audio: bool,
    /// The codec's model can say filler phrases (fixed for the session).
    pub(super) fillers: bool,
}

impl Core {
    /// Forgets the calls of the responses the tracker forgot (it keeps the most recent done
    /// ones: [`crate::tracker::KEEP_DONE_RESPONSES`]), so a long session's state and the scans
    /// over its calls stay bounded. A background call still running is kept: its result has
    /// yet to be told.
    pub(super) fn forget_calls(&mut self) {
        for call_id in self.tracker.take_forgotten() {
            if self.calls.get(&call_id).is_some_and(|c| c.background) {
                continue;
            }
            self.calls.remove(&call_id);
            self.call_visible.remove(&call_id);
        }
    }

    /// Sends the background results in `done` to the model, each as `write` puts it for the
    /// provider (tool, call id, failed, output); whether any went. A result whose call the
    /// session no longer knows is dropped.
    pub(super) fn send_background_results(
        &mut self,
        done: &mut VecDeque<(String, CallOutcome)>,
        write: fn(&str, &str, bool, &str) -> String,
    ) -> bool {
        let mut any = false;
        while let Some((call_id, outcome)) = done.pop_front() {
            let Some(info) = self.calls.get(&call_id) else {
                continue;
            };
            let text = write(&info.name, &call_id, outcome.is_error(), &outcome.output);
            Counters::bump(&self.counters_ref().background_results);
            self.send_model(text);
            self.background_told(&call_id);
            any = true;
        }
        any
    }

    /// A background call's result reached the model: nothing more is told of it. Kept while
    /// its response is among the recent ones (it leaves with them, [`Core::forget_calls`]);
    /// forgotten now if that response was forgotten while the call ran, or a long session
    /// would keep every background call it ever made.
    pub(super) fn background_told(&mut self, call_id: &str) {
        if self.tracker.response_of(call_id).is_none() {
            self.calls.remove(call_id);
            self.call_visible.remove(call_id);
        }
    }

    pub(super) fn new(
        registry: Arc<Registry>,
        config: Arc<SessionConfig>,
        fillers: bool,
    ) -> (Core, SessionEvents) {
        let (tx, rx) = mpsc::unbounded_channel();
        let browser = BrowserPath {
            state: Arc::new(Mutex::new(BrowserState {
                connected: true,
                away: false,
                naming: config.naming,
                pending: HashMap::new(),
                sent_waiting: HashMap::new(),
                sent_notify: HashSet::new(),
                approvals: HashMap::new(),
                next_approval: 0,
                next_open: 0,
            })),
            tx,
            approval_timeout: config.approval_timeout,
            counters: config.counters.clone(),
        };
        let own_declarations = config.declarations.clone();
        let mut conversation = Conversation::new(registry.clone())
            .with_selection(config.selection.clone())
            .with_live_tools(config.live_tools.clone())
            .with_duplicate_store(config.duplicates.clone());
        if let Some(limiter) = &config.limiter {
            conversation = conversation.with_limiter(limiter.clone());
        }
        let (declarations, live_generation) = declared_now(&own_declarations, &config);
        let core = Core {
            registry,
            config,
            tracker: Tracker::new(),
            response_spans: HashMap::new(),
            conversation,
            calls: HashMap::new(),
            call_visible: Recent::default(),
            item_visible: Recent::default(),
            browser,
            outputs: VecDeque::new(),
            next_seq: 0,
            scope: SessionScope::new(),
            declarations,
            live_generation,
            own_declarations,
            last_input_audio: false,
            fillers,
        };
        (core, SessionEvents { rx })
    }

    pub(super) fn note(&self, note: Note) {
        match &note {
            // Calls trace themselves (`toolc.call` spans); the GA API reports each call thrice.
            Note::CallFailed { .. } | Note::DuplicateCall { .. } => {}
            Note::BrowserEventRefused { code, .. } => {
                tracing::warn!(session = %self.scope.session_id(), code, "{note}")
            }
            Note::ResultRejected { .. } | Note::BrowserCallDropped { .. } => {
                tracing::warn!(session = %self.scope.session_id(), "{note}")
            }
            _ => tracing::debug!(session = %self.scope.session_id(), "{note}"),
        }
        if let Some(observer) = &self.config.observer {
            observer(&note);
        }
    }

    pub(super) fn counters_ref(&self) -> &Counters {
        &self.config.counters
    }

    /// Whether the browser is still attached.
    pub(super) fn browser_connected(&self) -> bool {
        lock(&self.browser.state).connected
    }

    /// Queues a message for the page, if it is still there.
    pub(super) fn send_browser(&mut self, text: String) {
        if self.browser_connected() {
            self.outputs.push_back(Output::ToBrowser(text));
        }
    }

    /// Queues a message for the model.
    pub(super) fn send_model(&mut self, text: String) {
        self.outputs.push_back(Output::ToModel(text));
    }

    /// Whether the browser may see a call of `name`: only calls that are routed to it.
    pub(super) fn visible_name(&self, name: Option<&str>) -> bool {
        name.and_then(|n| self.registry.location(n)) == Some(crate::Location::Client)
    }

    /// Records whether the page may see the call `call_id` of `name` (when the name is known;
    /// else what was learned before, hidden if nothing was), and returns it.
    pub(super) fn learn_call(&mut self, call_id: Option<&str>, name: Option<&str>) -> bool {
        self.learn_item(None, call_id, name)
    }

    /// Records whether the page may see a function-call item and its call: from the tool's
    /// name when the event has it, else from what was learned of the item or the call, hidden
    /// if nothing was. Returns it.
    pub(super) fn learn_item(
        &mut self,
        item_id: Option<&str>,
        call_id: Option<&str>,
        name: Option<&str>,
    ) -> bool {
        let visible = match name {
            Some(_) => self.visible_name(name),
            None => self.known_item(item_id, call_id),
        };
        if let Some(item_id) = item_id {
            self.item_visible.insert(item_id.to_owned(), visible);
        }
        if let Some(call_id) = call_id {
            self.call_visible.insert(call_id.to_owned(), visible);
        }
        visible
    }

    /// Whether the page may see an event that names no tool, by what was learned of its item
    /// or its call: hidden if nothing was (the arguments of an unknown call could belong to a
    /// server tool).
    pub(super) fn known_item(&self, item_id: Option<&str>, call_id: Option<&str>) -> bool {
        item_id
            .and_then(|i| self.item_visible.get(i).copied())
            .or_else(|| call_id.and_then(|c| self.call_is_visible(c)))
            .unwrap_or(false)
    }

    /// Whether the page may see the call `call_id`, as learned so far.
    pub(super) fn call_is_visible(&self, call_id: &str) -> Option<bool> {
        self.call_visible.get(call_id).copied()
    }

    /// Drops a model event that could not be read (see [`Note::ModelEventUnreadable`]).
    pub(super) fn unreadable_model_event(&mut self, kind: &str) -> Verdict {
        Counters::bump(&self.counters_ref().unreadable_model_events);
        self.note(Note::ModelEventUnreadable {
            kind: kind.to_owned(),
        });
        Verdict::Drop
    }

    /// Forwards what the page may see, drops (and counts) what it may not.
    pub(super) fn keep_if(&self, visible: bool) -> Verdict {
        if visible {
            Verdict::Forward
        } else {
            Counters::bump(&self.counters_ref().scrubbed_events);
            Verdict::Drop
        }
    }

    /// A call the model reported in `response` (a response, or a Live batch): admitted by the
    /// call engine, then answered at once, left waiting for the first of its repeats, or run.
    pub(super) fn call_reported(
        &mut self,
        codec: &mut dyn Codec,
        response_id: &str,
        call_id: Option<&str>,
        name: Option<&str>,
        arguments: &str,
    ) {
        let name = name.unwrap_or("");
        let Some(call_id) = call_id else {
            self.note(Note::CallWithoutId {
                name: name.to_owned(),
            });
            return;
        };
        if !self.tracker.register(response_id, call_id) {
            Counters::bump(&self.counters_ref().duplicate_calls);
            self.note(Note::DuplicateCall {
                call_id: call_id.to_owned(),
            });
            return;
        }
        Counters::bump(&self.counters_ref().calls);
        let call = ToolCall::new(call_id, name, arguments);
        let admission = self.conversation.admit(call);
        let kind = match admission.route() {
            Route::Server { .. } | Route::Live { .. } => CallKind::Server,
            Route::Client { .. } => CallKind::Client,
            Route::Notify { .. } => CallKind::Notify,
            Route::Reject(_) => CallKind::Invalid,
        };
        let counter = match kind {
            CallKind::Server => &self.counters_ref().server_calls,
            CallKind::Client => &self.counters_ref().client_calls,
            CallKind::Notify => &self.counters_ref().notify_calls,
            CallKind::Invalid => &self.counters_ref().invalid_calls,
        };
        Counters::bump(counter);
        self.next_seq += 1;
        self.calls
            .insert(call_id.to_owned(), CallInfo::new(name, kind, self.next_seq));
        match admission.next() {
            Next::Answer(outcome) => {
                // A call that cannot run is not a repeat; a reused or refused one is.
                if kind != CallKind::Invalid {
                    Counters::bump(&self.counters_ref().repeated_calls);
                }
                return self.finish(codec, call_id, outcome.clone());
            }
            // The first call's end answers it (`finish`).
            Next::Wait { .. } => return Counters::bump(&self.counters_ref().repeated_calls),
            Next::Run { .. } => {}
        }
        let background = admission.runs_in_background();
        // A slow call deserves "let me check", the browser's or the server's; a background
        // call answers at once.
        if kind == CallKind::Client || (kind == CallKind::Server && !background) {
            self.schedule_filler(call_id, name);
        }
        if background {
            return self.spawn_background_call(codec, admission);
        }
        // A call that waits for approval reaches the browser only once approved, and one whose
        // rate limit a shared store is still counting only once it is allowed (its task sends
        // it then).
        if !admission.needs_approval() && !admission.limit_pending() {
            self.send_to_browser_now(admission.call(), admission.route());
        }
        self.spawn_call(codec, admission)
    }

    /// A call that could not be made (a broken text marker): an error result for the model, in
    /// the same batch as the response's other calls.
    pub(super) fn call_refused(
        &mut self,
        codec: &mut dyn Codec,
        response_id: &str,
        call_id: &str,
        error: CallError,
    ) -> bool {
        if !self.tracker.register(response_id, call_id) {
            return false;
        }
        Counters::bump(&self.counters_ref().calls);
        Counters::bump(&self.counters_ref().invalid_calls);
        self.next_seq += 1;
        self.calls.insert(
            call_id.to_owned(),
            CallInfo::new(error.tool(), CallKind::Invalid, self.next_seq),
        );
        self.finish(codec, call_id, CallOutcome::failed(call_id, error));
        true
    }

    /// An event from [`SessionEvents`].
    pub(super) fn on_event(&mut self, codec: &mut dyn Codec, event: SessionEvent) {
        match event.0 {
            Inner::Done { call_id, outcome } => self.finish(codec, &call_id, outcome),
            Inner::Background { call_id, outcome } => {
                // Cancelled meanwhile (interrupted, or the browser left): nothing to add.
                let Some(info) = self.calls.get_mut(&call_id) else {
                    return;
                };
                if !std::mem::take(&mut info.background) || !self.browser_connected() {
                    return;
                }
                codec.background_result(self, &call_id, outcome);
            }
            Inner::ToBrowser(text) => self.send_browser(text),
            Inner::FillerDue(call_id) => codec.filler_due(self, &call_id),
            Inner::RequestDue(event_id) => codec.request_due(self, &event_id),
            Inner::Delegated {
                delegation_id,
                answer,
            } => codec.delegation_answered(self, &delegation_id, answer),
        }
    }

    /// Reports `event_id` back after [`SessionConfig::response_start_timeout`], so the codec can
    /// tell whether the response it asked for started.
    pub(super) fn watch_request(&mut self, event_id: &str) {
        let Some(after) = self.config.response_start_timeout else {
            return;
        };
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let tx = self.browser.tx.clone();
        let event_id = event_id.to_owned();
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            let _ = tx.send(Inner::RequestDue(event_id));
        });
    }

    /// Runs a delegated task on a task of its own, with the session's scope (its principal;
    /// cancelled when the browser leaves); its answer comes back through [`SessionEvents`].
    pub(super) fn spawn_delegation(&mut self, delegate: ClientDelegate, delegation: Delegation) {
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let ctx = self.scope.call("delegation", &delegation.id);
        let tx = self.browser.tx.clone();
        let delegation_id = delegation.id.clone();
        let task = async move {
            // A delegate that panics still answers, so the live model does not wait forever.
            let answer = match tokio::spawn(delegate(delegation, ctx)).await {
                Ok(answer) => answer,
                Err(failed) => {
                    let why = match failed.try_into_panic() {
                        Ok(payload) => crate::executor::panic_message(&*payload),
                        Err(_) => "cancelled".to_owned(),
                    };
                    tracing::warn!(delegation = %delegation_id, "the client delegate failed: {why}");
                    DelegationAnswer::Think(
                        "The delegated task failed; tell the user it could not be done now.".into(),
                    )
                }
            };
            let _ = tx.send(Inner::Delegated {
                delegation_id,
                answer,
            });
        };
        tokio::spawn(tracing::Instrument::instrument(
            task,
            tracing::Span::current(),
        ));
    }

    /// The ids of the session's calls that `keep` accepts, in the order they were reported.
    pub(super) fn calls_in_order(&self, keep: impl Fn(&str, &CallInfo) -> bool) -> Vec<String> {
        let mut ids: Vec<(u64, &String)> = self
            .calls
            .iter()
            .filter(|(id, info)| keep(id, info))
            .map(|(id, info)| (info.seq, id))
            .collect();
        ids.sort();
        ids.into_iter().map(|(_, id)| id.clone()).collect()
    }

    /// Whether a call still runs: open, or a background call whose result has not gone yet.
    pub(super) fn running(&self, call_id: &str) -> bool {
        self.tracker.is_open(call_id) || self.calls.get(call_id).is_some_and(|c| c.background)
    }
}
