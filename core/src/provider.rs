//! The providers toolc speaks, one enum for the compiler (which writes their declarations)
//! and the runtime (whose chat codecs read and write their messages).

/// An LLM API or protocol whose tool declarations toolc writes, or whose messages it speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Provider {
    /// OpenAI's Realtime API (`session.tools`).
    OpenaiRealtime,
    /// OpenAI's Chat Completions API.
    OpenaiChat,
    /// OpenAI's Responses API.
    OpenaiResponses,
    /// Anthropic's Messages API.
    Anthropic,
    /// Google's Gemini API (`functionDeclarations`).
    Gemini,
    /// The Model Context Protocol (a `tools/list` result).
    Mcp,
}

impl Provider {
    /// Every provider, in the order their files are written and their warnings reported.
    pub const ALL: [Provider; 6] = [
        Provider::OpenaiRealtime,
        Provider::OpenaiChat,
        Provider::OpenaiResponses,
        Provider::Anthropic,
        Provider::Gemini,
        Provider::Mcp,
    ];

    /// The provider's name on the command line and in file names (`openai-chat`).
    pub fn name(self) -> &'static str {
        match self {
            Provider::OpenaiRealtime => "openai-realtime",
            Provider::OpenaiChat => "openai-chat",
            Provider::OpenaiResponses => "openai-responses",
            Provider::Anthropic => "anthropic",
            Provider::Gemini => "gemini",
            Provider::Mcp => "mcp",
        }
    }

    /// The provider whose `name` is `name`; `None` for any other text.
    pub fn parse(name: &str) -> Option<Provider> {
        Provider::ALL.into_iter().find(|p| p.name() == name)
    }

    /// Whether the provider has OpenAI's strict mode.
    pub fn has_strict_mode(self) -> bool {
        matches!(self, Provider::OpenaiChat | Provider::OpenaiResponses)
    }

    /// Whether `name` is a tool name this provider accepts, by its documented rule.
    pub fn accepts_name(self, name: &str) -> bool {
        let len = name.len();
        let mut chars = name.chars();
        match self {
            // OpenAI and Anthropic: ^[a-zA-Z0-9_-]{1,64}$
            Provider::OpenaiRealtime
            | Provider::OpenaiChat
            | Provider::OpenaiResponses
            | Provider::Anthropic => {
                (1..=64).contains(&len)
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            }
            // Gemini: starts with a letter or `_`; then letters, digits, `_ . : -`; at most 64.
            Provider::Gemini => {
                (1..=64).contains(&len)
                    && chars
                        .next()
                        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && chars.all(|c| c.is_ascii_alphanumeric() || "_.:-".contains(c))
            }
            // MCP (2025-11-25 and later): 1 to 128 of letters, digits, `_ - .`.
            Provider::Mcp => {
                (1..=128).contains(&len)
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
            }
        }
    }

    /// The provider's rule for tool names, in words.
    pub fn name_rule(self) -> &'static str {
        match self {
            Provider::Gemini => {
                "a letter or `_`, then up to 63 letters, digits, `_`, `.`, `:` or `-`"
            }
            Provider::Mcp => "1 to 128 letters, digits, `_`, `-` or `.`",
            _ => "1 to 64 letters, digits, `_` or `-`",
        }
    }
}
