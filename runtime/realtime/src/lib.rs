//! Realtime sessions: the server between a browser and a realtime model (OpenAI Realtime GA or
//! Gemini Live, [`RealtimeProvider`]).
//!
//! - [`RealtimeSession`]: the transport-free session dispatcher. Server tools run in-process through the
//!   [`crate::Registry`]; client tools go to the browser with the tool's deadline; fire-and-forget
//!   tools are acknowledged at once. Open calls are tracked per model response ([`Tracker`]), and
//!   exactly one `response.create` follows the last result of a finished response. Browser
//!   results are accepted only for open calls that were routed to the browser. Server calls,
//!   their arguments and results never reach the browser.
//! - [`guard`]: what a browser may send upstream (strict parsing, `response.create` rules);
//!   [`openai`]: the GA events read and written; [`gemini_live`]: the Live API messages; [`browser`]: the browser protocol in both
//!   namings; `script` (feature `testing`): GA server events for scripted fake models and tests.
//! - The websocket relay that drives sessions is the `toolc-relay` crate (`toolc_runtime::relay`, feature `relay`).
#![warn(missing_docs)]

// The kernel's items at this crate's root, where `toolc-runtime` has them too, so that a path
// reads the same in every crate of the runtime (`crate::Registry`, `crate::dispatch::ToolCall`).
#[allow(unused_imports)]
use toolc_kernel::*;

pub mod browser;
pub mod gemini_live;
pub mod gpt_live;
pub mod guard;
pub mod marker_flow;
pub mod markers;
pub mod openai;
pub(crate) mod partial;
mod provider;
#[cfg(feature = "testing")]
pub mod script;
mod session;
mod tracker;
mod type_member;

pub use browser::Naming;
pub use gemini_live::Scheduling;
pub use gemini_live::{Compression, LiveOptions, SlidingWindow};
pub use marker_flow::{MarkerCounters, MarkerFlowConfig};
pub use provider::RealtimeProvider;
pub use session::{
    client_delegate, ClientDelegate, CounterSnapshot, Counters, Delegation, DelegationAnswer, Note,
    Observer, Output, RealtimeSession, Reconnect, RejectReason, ResumeRefused, SelectToolsetsError,
    SessionConfig, SessionEvent, SessionEvents, Speaker, TranscriptLine, Verdict,
    DEFAULT_APPROVAL_TIMEOUT, DEFAULT_FILLER_DELAY, DEFAULT_RESPONSE_START_TIMEOUT,
};
pub use tracker::{Resolved, Tracker};
