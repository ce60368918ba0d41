//! Open calls per model response, and the one continuation each response earns.
//!
//! A response's calls are only all known once its `response.done` has arrived: until then a call
//! that resolves (a fast server tool) cannot be the last one. The continuation is due when the
//! response is done *and* its last open call resolved, whichever comes second, and it is due
//! once. A call that arrives for a response whose continuation was already sent (a protocol
//! anomaly) opens a new batch, so its result still reaches the model.

use std::collections::{HashMap, VecDeque};

/// Responses that are done and have no open call are forgotten, oldest first, beyond this many:
/// a session that runs for hours must not keep (and scan) every response and call it ever saw.
/// A call reported for a response this far back is no protocol anyone speaks.
pub const KEEP_DONE_RESPONSES: usize = 64;

#[derive(Clone, Debug, Default)]
struct ResponseCalls {
    open: usize,
    total: usize,
    done: bool,
    continued: bool,
    /// The ids of its calls, forgotten with it.
    calls: Vec<String>,
}

#[derive(Clone, Debug)]
struct CallEntry {
    response_id: String,
    open: bool,
}

/// What resolving a call led to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolved {
    /// It was the last open call of a finished response: send the continuation now.
    Continue,
    /// Other calls of the response are open, or the response is still streaming.
    Wait,
    /// The call was not open (unknown, or already resolved): nothing to do.
    NotOpen,
}

/// The per-response bookkeeping of one session.
#[derive(Clone, Debug, Default)]
pub struct Tracker {
    responses: HashMap<String, ResponseCalls>,
    calls: HashMap<String, CallEntry>,
    open: usize,
    /// Done responses, in the order they were done.
    done: VecDeque<String>,
    /// Calls of forgotten responses, for the session to forget too ([`Tracker::take_forgotten`]).
    forgotten: Vec<String>,
}

impl Tracker {
    /// A tracker with no responses or calls.
    pub fn new() -> Tracker {
        Tracker::default()
    }

    /// Records a call of `response_id`. Returns `false` for a `call_id` seen before (the same
    /// call reported by several events): it must not run again.
    pub fn register(&mut self, response_id: &str, call_id: &str) -> bool {
        if self.calls.contains_key(call_id) {
            return false;
        }
        self.calls.insert(
            call_id.to_owned(),
            CallEntry {
                response_id: response_id.to_owned(),
                open: true,
            },
        );
        let r = self.responses.entry(response_id.to_owned()).or_default();
        if r.continued {
            // A late call after the continuation: a new batch of this response.
            r.continued = false;
        }
        r.open += 1;
        r.total += 1;
        r.calls.push(call_id.to_owned());
        self.open += 1;
        true
    }

    /// Whether `call_id` was registered and has not resolved.
    pub fn is_open(&self, call_id: &str) -> bool {
        self.calls.get(call_id).is_some_and(|c| c.open)
    }

    /// Whether `call_id` was ever registered.
    pub fn is_known(&self, call_id: &str) -> bool {
        self.calls.contains_key(call_id)
    }

    /// The response a call belongs to.
    pub fn response_of(&self, call_id: &str) -> Option<&str> {
        self.calls.get(call_id).map(|c| c.response_id.as_str())
    }

    /// Whether `response.done` has arrived for `response_id`.
    pub fn is_done(&self, response_id: &str) -> bool {
        self.responses.get(response_id).is_some_and(|r| r.done)
    }

    /// Calls registered and not yet resolved, over all responses.
    pub fn open_calls(&self) -> usize {
        self.open
    }

    /// Marks a call resolved.
    pub fn resolve(&mut self, call_id: &str) -> Resolved {
        let Some(call) = self.calls.get_mut(call_id) else {
            return Resolved::NotOpen;
        };
        if !call.open {
            return Resolved::NotOpen;
        }
        call.open = false;
        self.open -= 1;
        let Some(r) = self.responses.get_mut(&call.response_id) else {
            return Resolved::Wait;
        };
        r.open = r.open.saturating_sub(1);
        if r.done && r.open == 0 && !r.continued {
            r.continued = true;
            Resolved::Continue
        } else {
            Resolved::Wait
        }
    }

    /// Marks a response done (its `response.done` arrived, so every call in it is known).
    /// Returns `true` when that completes a batch whose calls already all resolved.
    pub fn response_done(&mut self, response_id: &str) -> bool {
        let r = self.responses.entry(response_id.to_owned()).or_default();
        if r.done {
            return false;
        }
        r.done = true;
        let completes = r.total > 0 && r.open == 0 && !r.continued;
        if completes {
            r.continued = true;
        }
        self.done.push_back(response_id.to_owned());
        self.forget_old();
        completes
    }

    /// Forgets the oldest done responses beyond [`KEEP_DONE_RESPONSES`] whose calls all
    /// resolved, and their calls. One with an open call (a slow client call) waits its turn
    /// again.
    fn forget_old(&mut self) {
        // Two looks per response done: one may be a response kept for its open call (put back
        // at the end), and the queue still shrinks back to its bound.
        for _ in 0..2 {
            if self.done.len() <= KEEP_DONE_RESPONSES {
                return;
            }
            let Some(oldest) = self.done.pop_front() else {
                return;
            };
            if self.responses.get(&oldest).is_some_and(|r| r.open > 0) {
                self.done.push_back(oldest);
                continue;
            }
            let Some(r) = self.responses.remove(&oldest) else {
                continue;
            };
            for call_id in r.calls {
                if self
                    .calls
                    .get(&call_id)
                    .is_some_and(|c| c.response_id == oldest)
                {
                    self.calls.remove(&call_id);
                    self.forgotten.push(call_id);
                }
            }
        }
    }

    /// The calls forgotten since the last time this was asked (see `KEEP_DONE_RESPONSES`).
    pub fn take_forgotten(&mut self) -> Vec<String> {
        std::mem::take(&mut self.forgotten)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_done_responses_and_their_resolved_calls_are_forgotten() {
        let mut t = Tracker::new();
        // r0 has a call that stays open; r1.. have one resolved call each.
        t.register("r0", "open");
        t.response_done("r0");
        for i in 1..=3 * KEEP_DONE_RESPONSES {
            t.register(&format!("r{i}"), &format!("c{i}"));
            t.resolve(&format!("c{i}"));
            t.response_done(&format!("r{i}"));
        }
        assert!(t.responses.len() <= KEEP_DONE_RESPONSES + 1);
        assert!(t.calls.len() <= KEEP_DONE_RESPONSES + 1);
        let forgotten = t.take_forgotten();
        assert!(forgotten.contains(&"c1".to_owned()));
        assert!(!forgotten.contains(&"open".to_owned()));
        // The open call is still tracked and still earns its continuation.
        assert!(t.is_open("open"));
        assert_eq!(t.resolve("open"), Resolved::Continue);
        // The most recent responses are remembered: a repeat of their call id is no new call.
        let last = 3 * KEEP_DONE_RESPONSES;
        assert!(!t.register(&format!("r{last}"), &format!("c{last}")));
        assert!(t.take_forgotten().is_empty());
    }

    #[test]
    fn continuation_waits_for_response_done() {
        let mut t = Tracker::new();
        assert!(t.register("r1", "a"));
        // A fast call resolves while the response is still streaming: no continuation yet.
        assert_eq!(t.resolve("a"), Resolved::Wait);
        assert!(t.register("r1", "b"));
        assert_eq!(t.resolve("b"), Resolved::Wait);
        assert!(t.response_done("r1"));
        assert!(!t.response_done("r1"));
    }

    #[test]
    fn continuation_comes_with_the_last_call_after_done() {
        let mut t = Tracker::new();
        t.register("r1", "a");
        t.register("r1", "b");
        t.register("r1", "c");
        assert!(!t.response_done("r1"));
        assert_eq!(t.resolve("b"), Resolved::Wait);
        assert_eq!(t.resolve("a"), Resolved::Wait);
        assert_eq!(t.resolve("c"), Resolved::Continue);
        assert_eq!(t.resolve("c"), Resolved::NotOpen);
        assert_eq!(t.open_calls(), 0);
    }

    #[test]
    fn responses_are_tracked_separately() {
        let mut t = Tracker::new();
        t.register("r1", "a");
        t.register("r2", "b");
        t.response_done("r1");
        t.response_done("r2");
        assert_eq!(t.resolve("b"), Resolved::Continue);
        assert_eq!(t.resolve("a"), Resolved::Continue);
    }

    #[test]
    fn duplicates_are_refused_and_responses_without_calls_never_continue() {
        let mut t = Tracker::new();
        assert!(t.register("r1", "a"));
        assert!(!t.register("r1", "a"));
        assert!(!t.register("r2", "a"));
        assert!(!t.response_done("r9"));
        assert_eq!(t.resolve("zzz"), Resolved::NotOpen);
        assert!(t.is_open("a"));
        assert_eq!(t.response_of("a"), Some("r1"));
    }

    #[test]
    fn a_late_call_opens_a_new_batch() {
        let mut t = Tracker::new();
        t.register("r1", "a");
        t.response_done("r1");
        assert_eq!(t.resolve("a"), Resolved::Continue);
        t.register("r1", "late");
        assert_eq!(t.resolve("late"), Resolved::Continue);
    }
}
