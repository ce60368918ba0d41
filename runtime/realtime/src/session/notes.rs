//! What a session tells its driver and its observer: verdicts, outputs, notes, the reasons a
//! browser result is rejected, and the counters.

use super::*;

/// What the driver does with the event it just passed in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Forward the original frame unchanged.
    Forward,
    /// Forward this text instead (a tool-bearing event with server calls removed, or a merged
    /// `session.update`).
    Replace(String),
    /// Do not forward anything.
    Drop,
}

/// A message the session wants sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    /// A frame of text for the model's connection.
    ToModel(String),
    /// A frame of text for the browser's connection.
    ToBrowser(String),
}

/// Something worth a log line. Passed to [`SessionConfig::observer`].
#[derive(Clone, Debug, PartialEq)]
pub enum Note {
    /// A browser result was refused and not forwarded.
    ResultRejected {
        /// The call id the result named.
        call_id: String,
        /// Why it was refused.
        reason: RejectReason,
    },
    /// A call id reported a second time (e.g. by `response.output_item.done` after
    /// `response.function_call_arguments.done`); it runs once.
    DuplicateCall {
        /// The repeated call id.
        call_id: String,
    },
    /// A function call the model made inside one of the runtime's filler responses; fillers are
    /// declared without tools, so it is ignored.
    CallInFiller {
        /// The ignored call's id.
        call_id: String,
    },
    /// A function call without a `call_id` cannot be answered.
    CallWithoutId {
        /// The function's name; empty when it had none either.
        name: String,
    },
    /// A function tool from the browser's `session.update` that the server does not know.
    BrowserToolDropped {
        /// The tool's name, as the browser declared it.
        name: String,
    },
    /// A browser event the relay does not forward (unparsable, a duplicate key, a
    /// `response.create` that would grant tools or forge calls); the browser got an `error`
    /// event with the same code.
    BrowserEventRefused {
        /// The stable code, as in the browser's `error` event.
        code: &'static str,
        /// Why the event was refused, in words.
        message: String,
    },
    /// A `function_call` item the browser tried to add to the conversation, dropped: only the
    /// model makes calls.
    BrowserCallDropped {
        /// The item's `call_id`, when it had one.
        call_id: Option<String>,
    },
    /// An answer to an approval request was refused: no such open request, or unreadable.
    ApprovalAnswerRejected {
        /// The request id the answer named; empty when the answer could not be read.
        approval_id: String,
        /// Why the answer was refused, in words.
        why: String,
    },
    /// The user interrupted a response; its calls that cancel on interruption were cancelled.
    Interrupted {
        /// The interrupted response.
        response_id: String,
        /// How many of its calls were cancelled.
        cancelled: usize,
    },
    /// GPT-Live attached as a sideband ([`SessionConfig::sideband`]): the delegated backend
    /// went on (a new response of the delegation) while a server call of it had no result
    /// from this session and the session asked for nothing. Someone else, the page over its
    /// data channel most likely, answered the server call or asked for the response.
    ServerCallAnsweredElsewhere {
        /// The open server call.
        call_id: String,
        /// Its tool.
        tool: String,
        /// The delegation whose backend went on.
        delegation_id: String,
    },
    /// A tool-related model event the session could not read (not JSON it parses, an ambiguous
    /// `type`): dropped, because it might be about a server call the browser must not see.
    ModelEventUnreadable {
        /// The event's `type`, or a note in parentheses when it had no readable one.
        kind: String,
    },
    /// The model refused a `response.create` this session sent (an `error` event naming it):
    /// nothing starts for it; a continuation asks again after the next `response.done`.
    ResponseRefused {
        /// The `event_id` of the refused `response.create`, as this session sent it.
        event_id: String,
        /// The model's error code, if it gave one.
        code: Option<String>,
        /// The model's error message; empty when it gave none.
        message: String,
    },
    /// A `response.create` this session sent started no response within
    /// [`SessionConfig::response_start_timeout`]: it is forgotten, and a continuation is asked
    /// for again, so one lost request cannot keep the conversation silent.
    RequestUnanswered {
        /// The `event_id` of the request that started nothing.
        event_id: String,
        /// Whether the session asked again (a continuation; a filler is not asked again).
        asked_again: bool,
    },
    /// Gemini Live: the model connection said it ends soon (`goAway`); the session moves to a
    /// new connection.
    GoAway {
        /// The time the server said was left, when it gave a readable one.
        time_left: Option<Duration>,
    },
    /// Gemini Live: the session could not move to a new model connection; the conversation
    /// ended.
    ResumeFailed {
        /// Why, in words.
        why: String,
    },
    /// A call failed; `detail` holds what the model does not see (a panic message).
    CallFailed {
        /// The failed call's id.
        call_id: String,
        /// The tool's name, as the model gave it.
        tool: String,
        /// Why the call failed.
        kind: CallErrorKind,
        /// Detail for logs only, e.g. a panic message ([`CallError::detail`]).
        detail: Option<String>,
    },
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Note::ResultRejected { call_id, reason } => {
                write!(f, "browser result for call `{call_id}` rejected: {reason}")
            }
            Note::DuplicateCall { call_id } => write!(f, "call `{call_id}` reported again; ran once"),
            Note::CallInFiller { call_id } => {
                write!(f, "call `{call_id}` made inside a filler response; ignored")
            }
            Note::CallWithoutId { name } => write!(f, "call of `{name}` has no call_id; ignored"),
            Note::BrowserToolDropped { name } => write!(
                f,
                "browser session.update declared function tool `{name}`, which the server cannot route; left out"
            ),
            Note::ServerCallAnsweredElsewhere {
                call_id,
                tool,
                delegation_id,
            } => write!(
                f,
                "the backend of delegation `{delegation_id}` went on while server call `{call_id}` of `{tool}` was open and this session asked for nothing: someone else (the page?) answered it"
            ),
            Note::BrowserEventRefused { code, message } => {
                write!(f, "browser event refused ({code}): {message}")
            }
            Note::BrowserCallDropped { call_id } => write!(
                f,
                "browser tried to add a function_call item (call_id {}) to the conversation; dropped",
                call_id.as_deref().unwrap_or("none")
            ),
            Note::ApprovalAnswerRejected { approval_id, why } => {
                write!(f, "approval answer for `{approval_id}` refused: {why}")
            }
            Note::Interrupted {
                response_id,
                cancelled,
            } => write!(
                f,
                "response `{response_id}` interrupted; {cancelled} call(s) cancelled"
            ),
            Note::ModelEventUnreadable { kind } => write!(
                f,
                "model event `{kind}` could not be read; dropped, not forwarded to the browser"
            ),
            Note::ResponseRefused {
                event_id,
                code,
                message,
            } => write!(
                f,
                "the model refused response request `{event_id}` ({}): {message}",
                code.as_deref().unwrap_or("no code")
            ),
            Note::RequestUnanswered {
                event_id,
                asked_again,
            } => write!(
                f,
                "response request `{event_id}` started no response; {}",
                if *asked_again { "asked again" } else { "forgotten" }
            ),
            Note::GoAway { time_left } => match time_left {
                Some(left) => write!(
                    f,
                    "the model connection ends in {left:?} (goAway); moving to a new connection"
                ),
                None => f.write_str("the model connection ends soon (goAway); moving to a new connection"),
            },
            Note::ResumeFailed { why } => {
                write!(f, "the conversation could not be resumed on a new model connection: {why}")
            }
            Note::CallFailed {
                call_id,
                tool,
                kind,
                detail,
            } => {
                write!(f, "call `{call_id}` of `{tool}` failed: {kind}")?;
                if let Some(d) = detail {
                    write!(f, " ({d})")?;
                }
                Ok(())
            }
        }
    }
}

/// Why a browser result was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RejectReason {
    /// No call with this id was ever made in this session.
    UnknownCall,
    /// The call exists but was not routed to the browser (a server tool, a fire-and-forget tool,
    /// or a call rejected before routing).
    NotRoutedToBrowser,
    /// The call was routed to the browser but is no longer open (answered, timed out, failed).
    NotOpen,
    /// The message could not be read.
    Malformed(Malformed),
}

impl fmt::Display for RejectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RejectReason::UnknownCall => f.write_str("no such call"),
            RejectReason::NotRoutedToBrowser => {
                f.write_str("the call was not routed to the browser")
            }
            RejectReason::NotOpen => f.write_str("the call is no longer open"),
            RejectReason::Malformed(m) => f.write_str(m.as_str()),
        }
    }
}

/// Receives [`Note`]s (for logging).
pub type Observer = Arc<dyn Fn(&Note) + Send + Sync>;

macro_rules! counters {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {
        /// Counters of one session or, when a config is shared, of all its sessions.
        #[derive(Debug, Default)]
        pub struct Counters {
            $($(#[$doc])* pub $name: AtomicU64,)*
        }

        /// A copy of [`Counters`] at one moment.
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct CounterSnapshot {
            $($(#[$doc])* pub $name: u64,)*
        }

        impl Counters {
            /// The counters' current values, each read on its own.
            pub fn snapshot(&self) -> CounterSnapshot {
                CounterSnapshot { $($name: self.$name.load(Ordering::Relaxed),)* }
            }
        }
    };
}

counters! {
    /// Calls started (each call id once).
    calls,
    /// Call ids reported again and not run again.
    duplicate_calls,
    /// New calls that repeat an earlier one (same tool and arguments, within the tool's
    /// `duplicate_window`) and were answered without running: the first call's result, or a
    /// refusal, as the tool's `on_duplicate` says.
    repeated_calls,
    /// Calls that ran on the server.
    server_calls,
    /// Calls sent to the browser that wait for a reply.
    client_calls,
    /// Fire-and-forget calls sent to the browser.
    notify_calls,
    /// Calls refused before routing (unknown tool, invalid JSON or arguments).
    invalid_calls,
    /// Calls whose result is an error (any cause).
    failed_calls,
    /// Client calls whose deadline passed.
    client_timeouts,
    /// Client calls failed because the browser was gone.
    client_disconnects,
    /// Browser results accepted.
    results_accepted,
    /// Browser results refused (never forwarded).
    results_rejected,
    /// `response.create` continuations sent.
    continuations,
    /// Filler responses requested.
    fillers,
    /// Approval requests sent to the browser.
    approvals_requested,
    /// Approval requests the browser approved.
    approvals_granted,
    /// Calls not run for want of approval (declined, timed out, nobody to ask).
    approvals_refused,
    /// Calls cancelled because the user interrupted the response that made them.
    interrupted_calls,
    /// Results of background (`mode: async`) calls added to the conversation.
    background_results,
    /// Partial-arguments events sent for streaming client tools.
    argument_deltas,
    /// Model events dropped or rewritten so the browser does not see a server call.
    scrubbed_events,
    /// Model events that could not be read where a call might be in them: dropped (fail
    /// closed), never forwarded.
    unreadable_model_events,
    /// `response.create`s of this session (continuations, fillers) the model refused with an
    /// `error` event.
    refused_responses,
    /// `response.create`s of this session that started no response in time, forgotten (and a
    /// continuation asked for again).
    unanswered_requests,
    /// Browser events dropped: `function_call` items the browser tried to add to the
    /// conversation.
    dropped_browser_events,
    /// Browser events refused with an `error` event to the browser: unparsable ones, duplicate
    /// keys, events without a type, and `response.create`s that would grant tools or forge calls.
    refused_browser_events,
    /// GPT-Live sideband: backend responses that went on while a server call was open and the
    /// session asked for nothing ([`Note::ServerCallAnsweredElsewhere`]).
    server_calls_answered_elsewhere,
    /// Gemini Live: moves to a new model connection (resumed with a handle).
    reconnections,
    /// Gemini Live: moves to a new model connection that failed (no handle, connection refused,
    /// handle refused); each ended its conversation.
    failed_reconnections,
}

impl Counters {
    pub(super) fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}
