//! A realtime session driven without sockets, as a relay would drive it: events go in as text,
//! and what the model and the browser would receive (forwarded events and queued outputs) is
//! recorded as JSON values.
#![allow(dead_code)]

use std::time::Duration;

use serde_json::Value;
use toolc_runtime::realtime::{Output, RealtimeSession, SessionEvents, Verdict};

pub struct Wire {
    pub session: RealtimeSession,
    pub events: SessionEvents,
    pub to_model: Vec<Value>,
    pub to_browser: Vec<Value>,
}

impl Wire {
    pub fn new((session, events): (RealtimeSession, SessionEvents)) -> Wire {
        Wire {
            session,
            events,
            to_model: Vec::new(),
            to_browser: Vec::new(),
        }
    }

    /// Moves the session's queued outputs to the side they are for.
    pub fn drain(&mut self) {
        for out in self.session.drain_outputs() {
            match out {
                Output::ToModel(t) => self.to_model.push(serde_json::from_str(&t).unwrap()),
                Output::ToBrowser(t) => self.to_browser.push(serde_json::from_str(&t).unwrap()),
            }
        }
    }

    /// One model event; what the browser gets is recorded like a relay would send it.
    pub fn model(&mut self, event: &Value) -> Verdict {
        let verdict = self.session.on_model_event(&event.to_string());
        record(&verdict, event, &mut self.to_browser);
        self.drain();
        verdict
    }

    pub fn model_all(&mut self, events: &[Value]) {
        for e in events {
            self.model(e);
        }
    }

    /// One browser event; what the model gets is recorded like a relay would send it.
    pub fn browser(&mut self, event: &Value) -> Verdict {
        let verdict = self.session.on_browser_event(&event.to_string());
        record(&verdict, event, &mut self.to_model);
        self.drain();
        verdict
    }

    /// Lets call tasks run for `d` (with a paused clock: virtual time), handling their events.
    pub async fn run_for(&mut self, d: Duration) {
        let until = tokio::time::Instant::now() + d;
        while let Ok(Some(ev)) = tokio::time::timeout_at(until, self.events.recv()).await {
            self.session.on_event(ev);
            self.drain();
        }
    }

    /// What was sent to the model with this `type`.
    pub fn model_events_of(&self, kind: &str) -> Vec<&Value> {
        self.to_model.iter().filter(|e| e["type"] == kind).collect()
    }

    /// Runs call tasks until `done` holds or a second passes.
    pub async fn settle(&mut self, done: impl Fn(&Wire) -> bool) {
        let until = tokio::time::Instant::now() + Duration::from_secs(1);
        while !done(self) {
            match tokio::time::timeout_at(until, self.events.recv()).await {
                Ok(Some(ev)) => {
                    self.session.on_event(ev);
                    self.drain();
                }
                _ => break,
            }
        }
    }
}

fn record(verdict: &Verdict, event: &Value, to: &mut Vec<Value>) {
    match verdict {
        Verdict::Forward => to.push(event.clone()),
        Verdict::Replace(t) => to.push(serde_json::from_str(t).unwrap()),
        Verdict::Drop => {}
    }
}

/// `Deref<Target = Wire>` for a test file's harness, a struct with a `wire: Wire` field and the
/// file's own state beside it: `h.model(..)` drives the session, `h.notes` reads the state.
#[allow(unused_macros)] // not every test file has a harness of its own
macro_rules! derefs_to_wire {
    ($harness:ty) => {
        impl std::ops::Deref for $harness {
            type Target = $crate::common::session::Wire;
            fn deref(&self) -> &$crate::common::session::Wire {
                &self.wire
            }
        }

        impl std::ops::DerefMut for $harness {
            fn deref_mut(&mut self) -> &mut $crate::common::session::Wire {
                &mut self.wire
            }
        }
    };
}
#[allow(unused_imports)]
pub(crate) use derefs_to_wire;
