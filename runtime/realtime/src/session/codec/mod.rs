//! What a session needs of a model's wire, behind one trait: each realtime provider is a codec
//! that reads its model events into the core's calls, cancellations and responses, writes the
//! core's results and continuations in its own messages, scrubs what the page sees of them,
//! checks what the page sends, and keeps whatever state only its protocol has (OpenAI's
//! responses and fillers, Live's batches and connection life).
//!
//! The core ([`Core`]) holds the rules every provider shares: the call engine, the tracker of
//! open calls per response, the browser path, visibility of calls, traces and counters. A codec
//! gets the core with every call and calls back into it; the core calls the codec where a rule
//! meets the wire (a result to write, a response whose calls all resolved). A new provider is a
//! new file here and one arm in [`for_provider`] (GPT-Live was: `gpt_live.rs`).

use super::*;

mod gemini_live;
mod gpt_live;
mod live_link;
mod openai;

pub use live_link::{Reconnect, ResumeRefused};

/// One provider's side of a session.
pub(super) trait Codec: Send + Sync {
    /// The first message on the model connection (`session.update`, Live's `setup`).
    fn first_message(&self, core: &Core) -> String;

    /// An event from the model: the calls it reports are handed to the core
    /// ([`Core::call_reported`]); the verdict says what the page gets.
    fn on_model_event(&mut self, core: &mut Core, text: &str) -> Verdict;

    /// Whether a browser event is audio input, which a driver may drop, oldest first, when too
    /// much waits for a model that is not ready.
    fn is_audio_input(&self, top: &guard::TopLevel<'_>) -> bool;

    /// Whether a model event the page gets is audio output, which a driver may drop, oldest
    /// first, for a page that reads too slowly or is away. Read from the event's first bytes.
    fn is_audio_output(&self, text: &str) -> bool;

    /// An event from the page, read strictly already (`top`), that is not the browser
    /// protocol's own (results and approval answers, which the core took): what goes upstream
    /// is checked against this provider's rules.
    fn on_browser_event(
        &mut self,
        core: &mut Core,
        top: guard::TopLevel<'_>,
        text: &str,
    ) -> Verdict;

    /// A resolved call's result for the model (sent now, or kept for its batch).
    fn write_result(&mut self, core: &mut Core, call_id: &str, outcome: &CallOutcome);

    /// The last open call of `response` resolved: the model goes on, once.
    fn all_resolved(&mut self, core: &mut Core, response: &str);

    /// The final result of a background (`mode: async`) call, after its "started" result.
    fn background_result(&mut self, core: &mut Core, call_id: &str, outcome: CallOutcome);

    /// A request of this session for a response was sent [`SessionConfig::response_start_timeout`]
    /// ago: if it started nothing, forget it and ask again.
    fn request_due(&mut self, core: &mut Core, event_id: &str);

    /// A delegated task's answer ([`SessionConfig::client_delegate`]), for the providers that
    /// delegate.
    fn delegation_answered(
        &mut self,
        core: &mut Core,
        delegation_id: &str,
        answer: DelegationAnswer,
    );

    /// Whether the model can say a tool's filler phrase while a slow call runs.
    fn speaks_fillers(&self) -> bool;

    /// A filler timer of `call_id` fired.
    fn filler_due(&mut self, core: &mut Core, call_id: &str);

    /// Whether the provider takes the session's tools once, when it starts.
    fn declares_once(&self) -> bool;

    /// The core chose other toolsets: tell the model when it can listen.
    fn tools_chosen(&mut self, core: &mut Core);

    /// The model takes no result for these calls any more (the conversation ended with them
    /// open): each takes the cancellation path, and none answers the model.
    fn abandon(&mut self, core: &mut Core, call_ids: &[String]);

    /// Whether the model reads input on the current connection.
    fn upstream_ready(&self) -> bool;

    /// Whether the driver should move the session to a new model connection, and when.
    fn reconnect_due(&self) -> Reconnect;

    /// Whether a model connection that ended may be replaced by a resumed one.
    fn can_resume(&self) -> Result<(), ResumeRefused>;

    /// The first message on a new connection that resumes the session.
    fn resume_setup(&mut self, core: &mut Core) -> Result<String, ResumeRefused>;
}

/// The codec of `provider`.
pub(super) fn for_provider(config: &SessionConfig) -> Box<dyn Codec> {
    match config.provider {
        RealtimeProvider::OpenAi => Box::new(openai::OpenAiCodec::new(config)),
        RealtimeProvider::GeminiLive => Box::new(gemini_live::LiveCodec::new(config, true)),
        // Vertex's function responses take no `scheduling` and no interim result.
        RealtimeProvider::VertexLive => Box::new(gemini_live::LiveCodec::new(config, false)),
        RealtimeProvider::GptLive => Box::new(gpt_live::GptLiveCodec::new(config)),
    }
}
