//! What the marker scanner reads and hands out: the tag that opens a marker, the calls found,
//! why a marker failed, and the scanner's events, borrowed or owned.

use std::fmt;

/// The configurable TAG of `<<<TAG:NAME=...>>>`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MarkerTag {
    tag: String,
    /// `<<<TAG:NAME=`, the literal that opens every marker.
    pub(super) opening: String,
}

impl MarkerTag {
    /// A tag of 1 to 64 ASCII letters, digits, `_` or `-`. The restriction keeps `<`, `:` and
    /// `>` out of it, so that the opening cannot overlap itself in surprising ways and the
    /// marker stays easy for a model to reproduce.
    pub fn new(tag: &str) -> Result<MarkerTag, InvalidTag> {
        let ok = !tag.is_empty()
            && tag.len() <= 64
            && tag
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !ok {
            return Err(InvalidTag(tag.to_owned()));
        }
        Ok(MarkerTag {
            tag: tag.to_owned(),
            opening: format!("<<<{tag}:NAME="),
        })
    }

    /// The tag itself, without `<<<` or `:NAME=`.
    pub fn as_str(&self) -> &str {
        &self.tag
    }

    /// The literal every marker starts with: `<<<TAG:NAME=`.
    pub fn opening(&self) -> &str {
        &self.opening
    }

    /// Writes a marker for a call. `arguments` must be the JSON text of an object.
    pub fn render_call(&self, name: &str, arguments: &str) -> String {
        format!("{}{name},ARGUMENTS={arguments}>>>", self.opening)
    }
}

impl fmt::Display for MarkerTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.tag)
    }
}

/// A tag that [`MarkerTag::new`] refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidTag(pub String);

impl fmt::Display for InvalidTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid marker tag {:?}: use 1 to 64 ASCII letters, digits, `_` or `-`",
            self.0
        )
    }
}

impl std::error::Error for InvalidTag {}

/// A complete tool call found in the text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MarkerCall {
    /// The tool's name, as the model wrote it.
    pub name: String,
    /// The JSON text of the arguments object, exactly as the model wrote it. It is known to be
    /// syntactically valid JSON and an object; it is kept as text because the dispatcher takes
    /// arguments as a JSON string and validates them against the tool's schema itself.
    pub arguments: String,
}

impl MarkerCall {
    /// Parses [`MarkerCall::arguments`] into a JSON value; it is known to be valid JSON.
    pub fn parse_arguments(&self) -> Result<serde_json::Value, serde_json::Error> {
        serde_json::from_str(&self.arguments)
    }
}

/// Why a marker was not turned into a call. The messages name the tool but never repeat the
/// marker's text, so they can be logged or shown to the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MarkerError {
    /// The marker does not follow `NAME=tool,ARGUMENTS={...}>>>`; `name` is set when the tool
    /// name had been read completely.
    Malformed {
        /// The tool's name, when it had been read completely.
        name: Option<String>,
        /// What is wrong with the marker, in a few words.
        reason: &'static str,
    },
    /// The marker grew past the configured limit; the rest of it is skipped.
    TooLong {
        /// The tool's name, when it had been read completely.
        name: Option<String>,
        /// The limit that was passed, in bytes.
        limit: usize,
    },
    /// The arguments are not valid JSON (or not UTF-8).
    InvalidJson {
        /// The tool's name.
        name: String,
        /// What is wrong with the arguments (the parser's message, or that they are not UTF-8).
        message: String,
    },
    /// The tool is not in the set of known tools.
    UnknownTool {
        /// The name the model wrote.
        name: String,
    },
    /// The stream ended inside a marker.
    Unterminated {
        /// The tool's name, when it had been read completely.
        name: Option<String>,
    },
}

impl MarkerError {
    /// The tool's name, when the marker got far enough to have one.
    pub fn tool_name(&self) -> Option<&str> {
        match self {
            MarkerError::Malformed { name, .. }
            | MarkerError::TooLong { name, .. }
            | MarkerError::Unterminated { name } => name.as_deref(),
            MarkerError::InvalidJson { name, .. } | MarkerError::UnknownTool { name } => Some(name),
        }
    }
}

impl fmt::Display for MarkerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let of = |name: &Option<String>| match name {
            Some(n) => format!(" for `{n}`"),
            None => String::new(),
        };
        match self {
            MarkerError::Malformed { name, reason } => {
                write!(f, "malformed tool call marker{}: {reason}", of(name))
            }
            MarkerError::TooLong { name, limit } => write!(
                f,
                "tool call marker{} is longer than the limit of {limit} bytes",
                of(name)
            ),
            MarkerError::InvalidJson { name, message } => write!(
                f,
                "the arguments of the call to `{name}` are not valid JSON: {message}"
            ),
            MarkerError::UnknownTool { name } => write!(f, "unknown tool `{name}`"),
            MarkerError::Unterminated { name } => write!(
                f,
                "the text ended inside a tool call marker{} (no closing `>>>`)",
                of(name)
            ),
        }
    }
}

impl std::error::Error for MarkerError {}

/// One output of the scanner. Text and calls borrow from the input chunk or the scanner's
/// buffers, so scanning allocates nothing unless the sink keeps what it is given
/// ([`into_owned`](Self::into_owned)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MarkerEvent<'a> {
    /// Text to show the user; it never holds any byte of a marker.
    Text(&'a str),
    /// A complete call; `arguments` is as in [`MarkerCall::arguments`].
    Call {
        /// The tool's name, as the model wrote it.
        name: &'a str,
        /// The JSON text of the arguments object.
        arguments: &'a str,
    },
    /// A marker that could not be turned into a call; it is hidden from the user all the same.
    Error(MarkerError),
}

impl MarkerEvent<'_> {
    /// Copies the borrowed text into an owned [`ScanEvent`].
    pub fn into_owned(self) -> ScanEvent {
        match self {
            MarkerEvent::Text(t) => ScanEvent::Text(t.to_owned()),
            MarkerEvent::Call { name, arguments } => ScanEvent::Call(MarkerCall {
                name: name.to_owned(),
                arguments: arguments.to_owned(),
            }),
            MarkerEvent::Error(e) => ScanEvent::Error(e),
        }
    }
}

/// An owned [`MarkerEvent`], as collected by [`MarkerScanner::push`](super::MarkerScanner::push).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScanEvent {
    /// Text to show the user; it never holds any byte of a marker.
    Text(String),
    /// A complete call.
    Call(MarkerCall),
    /// A marker that could not be turned into a call; it is hidden from the user all the same.
    Error(MarkerError),
}
