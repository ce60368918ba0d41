//! The life of a Gemini Live session's model connection: `setupComplete`, resumption handles,
//! `goAway`, and moving the session to a new connection.
//!
//! A Live connection lasts about ten minutes. With resumption on ([`LiveOptions::resumption`])
//! the `setup` asks for `sessionResumption` and the server sends `sessionResumptionUpdate`s; the
//! session keeps the latest handle it may resume from, and the number of calls reported when it
//! came. When the connection ends (`goAway`, or a close the driver sees), the driver opens a new
//! one and sends [`RealtimeSession::resume_setup`]'s `setup`, which carries that handle.
//!
//! Google's semantics decide what happens to calls in flight: a resumed session is the session
//! as it was at the handle. Calls reported before it are known to it, so their results go on the
//! new connection, once. Calls reported after it are unknown to it, as if the server had sent
//! `toolCallCancellation` for them: they take the cancellation path (the executor's signal,
//! `toolc.cancel` to the page, no result sent), and the model calls again if it still needs to.
//! (Google gives no handle while a blocking call is running: `resumable` is false then.)

use super::gemini_live::LiveCodec;
use super::*;
use crate::gemini_live::{self as wire, LiveOptions, ResumptionUpdate};

/// Where a Live session's model connection stands.
#[derive(Debug)]
pub(super) struct LiveLink {
    /// Resumption, compression, and whether the page hears of a move.
    options: LiveOptions,
    /// The server took the current connection's `setup` (`setupComplete`).
    pub(super) ready: bool,
    /// Model connections opened so far, the first included.
    connections: u32,
    /// The latest handle to resume from, and how many calls had been reported when it came:
    /// calls numbered after it are unknown to a session resumed from it.
    handle: Option<(String, u64)>,
    /// The latest update said the session can be resumed at this point.
    resumable: bool,
    /// The current connection sent `goAway`, with the time it said was left.
    going_away: Option<Option<Duration>>,
}

/// When the driver should move a Live session to a new model connection
/// ([`RealtimeSession::reconnect_due`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reconnect {
    /// The connection is not ending.
    No,
    /// The connection is ending and the session is at a point it can be resumed from: move now.
    Now,
    /// The connection ends within this time (`goAway.timeLeft`; `None` when it gave none) and
    /// the session is not at a resumable point yet: move at the next one, or just before then.
    Within(Option<Duration>),
}

/// Why a Live session cannot move to a new connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResumeRefused {
    /// The session does not ask for resumption ([`LiveOptions::resumption`] is off), or the
    /// provider has none.
    Off,
    /// The server has not given a handle yet.
    NoHandle,
}

impl fmt::Display for ResumeRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResumeRefused::Off => f.write_str("session resumption is off"),
            ResumeRefused::NoHandle => {
                f.write_str("the model has not yet given a handle to resume the session from")
            }
        }
    }
}

impl LiveLink {
    pub(super) fn new(options: LiveOptions) -> LiveLink {
        LiveLink {
            options,
            ready: false,
            connections: 1,
            handle: None,
            resumable: false,
            going_away: None,
        }
    }
}

impl LiveLink {
    /// Whether the driver should move the session to a new model connection, and when.
    pub(super) fn reconnect_due(&self) -> Reconnect {
        match self.going_away {
            None => Reconnect::No,
            Some(_) if self.resumable && self.handle.is_some() => Reconnect::Now,
            Some(left) => Reconnect::Within(left),
        }
    }

    /// Whether a model connection that ended may be replaced by a resumed one.
    pub(super) fn can_resume(&self) -> Result<(), ResumeRefused> {
        if !self.options.resumption {
            return Err(ResumeRefused::Off);
        }
        if self.handle.is_none() {
            return Err(ResumeRefused::NoHandle);
        }
        Ok(())
    }
}

impl LiveCodec {
    /// The session moves to a new model connection: the first message to send on it (`setup`
    /// with the latest handle). Calls the resumed session will not know of are cancelled as
    /// Google's semantics say (module docs); the page gets a `toolc.upstream` notice when
    /// [`LiveOptions::notify_page`] is on. Until the new connection's `setupComplete`,
    /// the upstream is not ready.
    pub(super) fn resume(&mut self, core: &mut Core) -> Result<String, ResumeRefused> {
        self.link.can_resume()?;
        let Some((handle, reported)) = self.link.handle.clone() else {
            return Err(ResumeRefused::NoHandle);
        };
        // Every call reported after the handle is unknown to the resumed session: nothing
        // about it may go there. Those still running take the cancellation path; those that
        // resolved (a fire-and-forget call, a result waiting for its batch) just keep quiet.
        let lost = core.calls_in_order(|_, info| info.seq > reported);
        for call_id in &lost {
            self.forget_result(core, call_id);
        }
        let running: Vec<String> = lost.into_iter().filter(|id| core.running(id)).collect();
        self.provider_cancel(core, &running);
        self.open_batch = None;
        self.link.ready = false;
        self.link.resumable = false;
        self.link.going_away = None;
        self.link.connections += 1;
        Counters::bump(&core.counters_ref().reconnections);
        self.notice_page(core, "reconnecting");
        Ok(self.setup_message(core, Some(&handle)))
    }

    /// `setup` for a connection: the application's settings, the declarations, and the
    /// resumption and compression settings of [`LiveOptions`].
    pub(super) fn setup_message(&self, core: &Core, handle: Option<&str>) -> String {
        let mut setup = core.config.session.clone();
        self.link.options.apply(&mut setup, handle);
        wire::setup(setup, &core.declarations)
    }

    /// `setupComplete`: forwarded to the page for the first connection only (a resumed one is
    /// the same conversation).
    pub(super) fn setup_complete(&mut self, core: &mut Core) -> Verdict {
        self.link.ready = true;
        if self.link.connections > 1 {
            self.notice_page(core, "resumed");
            return Verdict::Drop;
        }
        Verdict::Forward
    }

    /// `goAway`: the driver moves the session ([`RealtimeSession::reconnect_due`]). The page does not
    /// get it when the session can resume; otherwise it does, since the conversation ends.
    pub(super) fn go_away(&mut self, core: &mut Core, time_left: Option<Duration>) -> Verdict {
        if self.link.can_resume() == Err(ResumeRefused::Off) {
            return Verdict::Forward;
        }
        self.link.going_away = Some(time_left);
        core.note(Note::GoAway { time_left });
        Verdict::Drop
    }

    /// `sessionResumptionUpdate`: kept, never forwarded (a handle resumes the conversation; it
    /// is the server's).
    pub(super) fn resumption(&mut self, core: &mut Core, update: ResumptionUpdate) -> Verdict {
        self.link.resumable = update.resumable && update.new_handle.is_some();
        if let (true, Some(handle)) = (update.resumable, update.new_handle) {
            self.link.handle = Some((handle, core.next_seq));
        }
        Verdict::Drop
    }

    fn notice_page(&self, core: &mut Core, state: &str) {
        if !self.link.options.notify_page {
            return;
        }
        let notice = json!({ "type": "toolc.upstream", "state": state });
        core.send_browser(notice.to_string());
    }
}
