//! The life of a Gemini Live session's model connection: `setupComplete`, resumption handles,
//! `goAway`, and moving the session to a new connection.
//!
//! A Live connection lasts about ten minutes. With resumption on ([`LiveOptions::resumption`])
//! the `setup` asks for `sessionResumption` and the server sends `sessionResumptionUpdate`s; the
//! session keeps the latest handle it may resume from, and the number of calls reported when it
//! came. When the connection ends (`goAway`, or a close the driver sees), the driver opens a new
//! one and sends [`Session::resume_setup`]'s `setup`, which carries that handle.
//!
//! Google's semantics decide what happens to calls in flight: a resumed session is the session
//! as it was at the handle. Calls reported before it are known to it, so their results go on the
//! new connection, once. Calls reported after it are unknown to it, as if the server had sent
//! `toolCallCancellation` for them: they take the cancellation path (the executor's signal,
//! `toolc.cancel` to the page, no result sent), and the model calls again if it still needs to.
//! (Google gives no handle while a blocking call is running: `resumable` is false then.)

use super::*;
use crate::gemini_live::{LiveOptions, ResumptionUpdate};

/// Where a Live session's model connection stands.
#[derive(Debug)]
pub(super) struct LiveLink {
    /// The server took the current connection's `setup` (`setupComplete`).
    ready: bool,
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
/// ([`Session::reconnect_due`]).
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
    pub(super) fn new() -> LiveLink {
        LiveLink {
            ready: false,
            connections: 1,
            handle: None,
            resumable: false,
            going_away: None,
        }
    }
}

impl Session {
    fn live_options(&self) -> &LiveOptions {
        &self.config.live
    }

    /// Whether the model has taken the current connection's first message and reads input:
    /// always for OpenAI, after `setupComplete` for Gemini Live. A driver holds the page's
    /// input (and the session's own messages) until then, and sends them in order.
    pub fn upstream_ready(&self) -> bool {
        !self.config.provider.is_live() || self.live.ready
    }

    /// Whether the driver should move the session to a new model connection, and when.
    pub fn reconnect_due(&self) -> Reconnect {
        match self.live.going_away {
            None => Reconnect::No,
            Some(_) if self.live.resumable && self.live.handle.is_some() => Reconnect::Now,
            Some(left) => Reconnect::Within(left),
        }
    }

    /// Whether a model connection that ended may be replaced by a resumed one.
    pub fn can_resume(&self) -> Result<(), ResumeRefused> {
        if !self.config.provider.is_live() || !self.live_options().resumption {
            return Err(ResumeRefused::Off);
        }
        if self.live.handle.is_none() {
            return Err(ResumeRefused::NoHandle);
        }
        Ok(())
    }

    /// The session moves to a new model connection: the first message to send on it (`setup`
    /// with the latest handle). Calls the resumed session will not know of are cancelled as
    /// Google's semantics say (module docs); the page gets a `toolc.upstream` notice when
    /// [`LiveOptions::notify_page`] is on. Until the new connection's `setupComplete`,
    /// [`Session::upstream_ready`] is false.
    pub fn resume_setup(&mut self) -> Result<String, ResumeRefused> {
        self.can_resume()?;
        let Some((handle, reported)) = self.live.handle.clone() else {
            return Err(ResumeRefused::NoHandle);
        };
        // Every call reported after the handle is unknown to the resumed session: nothing
        // about it may go there. Those still running take the cancellation path; those that
        // resolved (a fire-and-forget call, a result waiting for its batch) just keep quiet.
        let lost = self.calls_in_order(|_, info| info.seq > reported);
        for call_id in &lost {
            self.forget_result(call_id);
        }
        let running: Vec<String> = lost.into_iter().filter(|id| self.running(id)).collect();
        self.provider_cancel(&running);
        self.open_batch = None;
        self.live.ready = false;
        self.live.resumable = false;
        self.live.going_away = None;
        self.live.connections += 1;
        Counters::bump(&self.counters_ref().reconnections);
        self.notice_page("reconnecting", None);
        Ok(self.setup_message(Some(&handle)))
    }

    /// The new connection could not be opened or refused the handle: the conversation ends.
    /// The page gets an `error` event (`upstream_resume_failed`), every open call is cancelled
    /// (its executor's signal, `toolc.cancel` to the page) and none of them answers the model.
    pub fn resume_failed(&mut self, why: &str) {
        let open = self.calls_in_order(|id, _| self.running(id));
        self.provider_cancel(&open);
        Counters::bump(&self.counters_ref().failed_reconnections);
        let error = json!({
            "type": "error",
            "error": {
                "type": "relay_error",
                "code": "upstream_resume_failed",
                "message": format!("the model connection ended and the conversation could not be resumed: {why}"),
            },
        });
        self.outputs.push_back(Output::ToBrowser(error.to_string()));
        self.note(Note::ResumeFailed {
            why: why.to_owned(),
        });
    }

    /// The ids of the session's calls that `keep` accepts, in the order they were reported.
    fn calls_in_order(&self, keep: impl Fn(&str, &CallInfo) -> bool) -> Vec<String> {
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
    fn running(&self, call_id: &str) -> bool {
        self.tracker.is_open(call_id) || self.calls.get(call_id).is_some_and(|c| c.background)
    }

    /// `setup` for a connection: the application's settings, the declarations, and the
    /// resumption and compression settings of [`LiveOptions`].
    pub(super) fn setup_message(&self, handle: Option<&str>) -> String {
        let mut setup = self.config.session.clone();
        self.live_options().apply(&mut setup, handle);
        gemini_live::setup(setup, &self.declarations)
    }

    /// `setupComplete`: forwarded to the page for the first connection only (a resumed one is
    /// the same conversation).
    pub(super) fn live_setup_complete(&mut self) -> Verdict {
        self.live.ready = true;
        if self.live.connections > 1 {
            self.notice_page("resumed", None);
            return Verdict::Drop;
        }
        Verdict::Forward
    }

    /// `goAway`: the driver moves the session ([`Session::reconnect_due`]). The page does not
    /// get it when the session can resume; otherwise it does, since the conversation ends.
    pub(super) fn live_go_away(&mut self, time_left: Option<Duration>) -> Verdict {
        if self.can_resume() == Err(ResumeRefused::Off) {
            return Verdict::Forward;
        }
        self.live.going_away = Some(time_left);
        self.note(Note::GoAway { time_left });
        Verdict::Drop
    }

    /// `sessionResumptionUpdate`: kept, never forwarded (a handle resumes the conversation; it
    /// is the server's).
    pub(super) fn live_resumption(&mut self, update: ResumptionUpdate) -> Verdict {
        self.live.resumable = update.resumable && update.new_handle.is_some();
        if let (true, Some(handle)) = (update.resumable, update.new_handle) {
            self.live.handle = Some((handle, self.next_seq));
        }
        Verdict::Drop
    }

    fn notice_page(&mut self, state: &str, detail: Option<&str>) {
        if !self.live_options().notify_page || !self.browser_connected() {
            return;
        }
        let mut notice = json!({ "type": "toolc.upstream", "state": state });
        if let Some(detail) = detail {
            notice["detail"] = json!(detail);
        }
        self.outputs
            .push_back(Output::ToBrowser(notice.to_string()));
    }
}
