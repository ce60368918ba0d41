//! docs/gpt-live.md, "Client delegation": the application's delegate for GPT-Live.

use toolc_runtime::realtime::{client_delegate, ClientDelegate, DelegationAnswer, Speaker};

// Answers a delegated task from what the user said last.
pub fn delegate() -> ClientDelegate {
    client_delegate(|delegation, _ctx| async move {
        let asked = delegation
            .transcript
            .iter()
            .rev()
            .find(|line| line.speaker == Speaker::User)
            .map(|line| line.text.clone())
            .unwrap_or_default();
        // Run it with your own chat turn (e.g. toolc's `TurnRunner` over the same registry).
        DelegationAnswer::Say(format!("I looked into: {asked}"))
    })
}
