//! Which realtime model API a session speaks upstream. The session's rules (the location rule,
//! deadlines, approvals, async tools, interruptions, one continuation per batch of calls) are
//! the same for every provider; each provider is a codec of its own events beside the core
//! ([`super::openai`], [`super::gemini_live`]).

use std::fmt;
use std::str::FromStr;

use serde_json::{Map, Value};

use super::{gemini_live, gpt_live, openai};
use crate::ToolDefinition;

/// A realtime model API.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum RealtimeProvider {
    /// OpenAI Realtime (GA): `session.update`, `response.*` events, `response.create`.
    #[default]
    OpenAi,
    /// Gemini Live (`BidiGenerateContent`): `setup`, `toolCall`, `toolResponse`,
    /// `toolCallCancellation`.
    GeminiLive,
    /// Gemini Live on Vertex AI (Google Cloud's `LlmBidiService`): the same messages, a regional
    /// endpoint ([`gemini_live::vertex_url`]), an OAuth access token as `Authorization: Bearer`,
    /// the model as a resource name ([`gemini_live::vertex_model`]). Its function responses take
    /// no `scheduling` and no interim (`willContinue`) result, so a `mode: async` tool's result
    /// goes once, when it is done.
    VertexLive,
    /// OpenAI GPT-Live (`/v1/live/sessions`) with Responses delegation: the tools are the
    /// delegated backend's (`session.delegation.responses.tools`), its calls arrive nested in
    /// `response.event`, results go as `response.item.create`, then one `response.create`.
    GptLive,
}

impl RealtimeProvider {
    /// Every provider, in the order the CLI lists them.
    pub const ALL: [RealtimeProvider; 4] = [
        RealtimeProvider::OpenAi,
        RealtimeProvider::GeminiLive,
        RealtimeProvider::VertexLive,
        RealtimeProvider::GptLive,
    ];

    /// The name used by `--provider` and in configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            RealtimeProvider::OpenAi => "openai",
            RealtimeProvider::GeminiLive => "gemini-live",
            RealtimeProvider::VertexLive => "vertex-live",
            RealtimeProvider::GptLive => "gpt-live",
        }
    }

    /// The provider's name in OpenTelemetry's GenAI conventions (`gen_ai.provider.name`).
    pub fn otel_name(self) -> &'static str {
        match self {
            RealtimeProvider::OpenAi => "openai",
            RealtimeProvider::GeminiLive => "gcp.gemini",
            RealtimeProvider::VertexLive => "gcp.vertex_ai",
            RealtimeProvider::GptLive => "openai",
        }
    }

    /// The provider's public websocket endpoint.
    pub fn default_url(self) -> &'static str {
        match self {
            RealtimeProvider::OpenAi => openai::DEFAULT_URL,
            RealtimeProvider::GeminiLive => gemini_live::DEFAULT_URL,
            RealtimeProvider::VertexLive => gemini_live::VERTEX_DEFAULT_URL,
            RealtimeProvider::GptLive => gpt_live::DEFAULT_URL,
        }
    }

    /// The tool declarations of `defs` as this provider takes them.
    pub fn declarations<'a>(
        self,
        defs: impl IntoIterator<Item = &'a ToolDefinition>,
    ) -> Vec<Value> {
        match self {
            RealtimeProvider::OpenAi => openai::declarations(defs),
            RealtimeProvider::GeminiLive | RealtimeProvider::VertexLive => {
                gemini_live::declarations(defs)
            }
            RealtimeProvider::GptLive => gpt_live::declarations(defs),
        }
    }

    /// The first message's settings before the application's own: OpenAI's `session.update`
    /// session (`type: realtime`), Live's `setup` (the default model).
    pub fn default_session(self) -> Map<String, Value> {
        let mut session = Map::new();
        let (key, value) = match self {
            RealtimeProvider::GptLive => return gpt_live::default_session(),
            RealtimeProvider::OpenAi => ("type", "realtime".to_owned()),
            RealtimeProvider::GeminiLive => ("model", gemini_live::DEFAULT_MODEL.to_owned()),
            // Vertex names a model by its resource name, which holds the application's
            // project: `gemini_live::vertex_model` makes it.
            RealtimeProvider::VertexLive => (
                "model",
                format!(
                    "publishers/google/models/{}",
                    gemini_live::VERTEX_DEFAULT_MODEL
                ),
            ),
        };
        session.insert(key.into(), Value::String(value));
        session
    }

    /// Whether the model is named in the session's first message (`setup.model`,
    /// `session.start`'s `session.model`) rather than in the endpoint's URL.
    pub fn model_in_first_message(self) -> bool {
        !matches!(self, RealtimeProvider::OpenAi)
    }

    /// Whether this is a Gemini Live endpoint (the `BidiGenerateContent` protocol).
    pub fn is_live(self) -> bool {
        matches!(
            self,
            RealtimeProvider::GeminiLive | RealtimeProvider::VertexLive
        )
    }

    /// Whether a function response may carry `scheduling` and an interim result
    /// (`willContinue`): the Gemini API's Live, not Vertex AI's.
    pub fn takes_result_scheduling(self) -> bool {
        matches!(self, RealtimeProvider::GeminiLive)
    }

    /// The HTTP header that carries the API key upstream, and its value.
    pub fn api_key_header(self, key: &str) -> (&'static str, String) {
        match self {
            RealtimeProvider::OpenAi => ("authorization", format!("Bearer {key}")),
            RealtimeProvider::GeminiLive => ("x-goog-api-key", key.to_owned()),
            RealtimeProvider::VertexLive | RealtimeProvider::GptLive => {
                ("authorization", format!("Bearer {key}"))
            }
        }
    }
}

impl fmt::Display for RealtimeProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for RealtimeProvider {
    type Err = String;

    fn from_str(s: &str) -> Result<RealtimeProvider, String> {
        RealtimeProvider::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| {
                format!("unknown realtime provider `{s}`: use openai, gemini-live, vertex-live or gpt-live")
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_ones_say_what_is_known() {
        for p in RealtimeProvider::ALL {
            assert_eq!(p.as_str().parse::<RealtimeProvider>(), Ok(p));
        }
        let err = "gemini".parse::<RealtimeProvider>().unwrap_err();
        assert!(
            err.contains("openai, gemini-live, vertex-live or gpt-live"),
            "{err}"
        );
        assert_eq!(RealtimeProvider::VertexLive.otel_name(), "gcp.vertex_ai");
        assert_eq!(
            RealtimeProvider::VertexLive.api_key_header("ya29.token"),
            ("authorization", "Bearer ya29.token".to_owned())
        );
        assert!(
            RealtimeProvider::VertexLive.is_live()
                && !RealtimeProvider::VertexLive.takes_result_scheduling()
        );
    }
}
