//! The definition of one tool, shared by the compiler (which produces it from manifests and
//! `#[tool]` fns) and the runtime (which routes calls with it). It carries no source spans: those
//! live beside it in the compiler's IR, so that the runtime type stays small and serialisable.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Where a tool's handler runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Location {
    /// In-process on the server, through exactly one executor.
    Server,
    /// In the browser or app, forwarded over the client channel; never has a server executor.
    Client,
}

impl Location {
    /// As the manifest writes it: `server` or `client`.
    pub fn as_str(self) -> &'static str {
        match self {
            Location::Server => "server",
            Location::Client => "client",
        }
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Appended to the description of a tool with `approval: required`.
pub const APPROVAL_NOTE: &str =
    "Each call waits for the user's approval; if they decline, the result says so.";

/// Appended to the description of a tool with `mode: async`.
pub const BACKGROUND_NOTE: &str = "Runs in the background: the call's result only says that the work started; the outcome arrives later as a message, and the conversation can go on meanwhile.";

/// The default deadline for a client tool when its manifest gives none.
pub const DEFAULT_CLIENT_TIMEOUT: Duration = Duration::from_secs(10);

/// One tool, validated.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// The tool's name as the manifest writes it; unique among the tools compiled together.
    pub name: String,
    /// What the tool does, as the manifest writes it; the model reads `model_description`,
    /// which may add notes.
    pub description: String,
    /// Where the tool's handler runs: on the server or in the client.
    pub location: Location,
    /// JSON Schema 2020-12 of the arguments; the root is always an object schema.
    pub parameters: serde_json::Value,
    /// JSON Schema 2020-12 of the result, when the manifest declares one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub returns: Option<serde_json::Value>,
    /// Deadline for the executor (server) or for the browser's reply (client).
    #[serde(
        default,
        rename = "timeout_ms",
        with = "duration_ms",
        skip_serializing_if = "Option::is_none"
    )]
    pub timeout: Option<Duration>,
    /// Client tools only: `false` means fire-and-forget.
    #[serde(default = "yes")]
    pub wait_for_response: bool,
    /// Phrases a voice agent may say while it waits for a slow call (a client tool's browser,
    /// a server tool's executor).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub filler: Vec<String>,
    /// A human-readable name, for hosts that show tools to people (MCP's `title`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does to the world, as hints for hosts (MCP's tool annotations).
    #[serde(default, skip_serializing_if = "Annotations::is_empty")]
    pub annotations: Annotations,
    /// The OAuth scopes a caller's access token must carry to call the tool (the manifest's
    /// `scopes`, RFC 6749 scope tokens, each once, in the manifest's order). An MCP server
    /// acting as a resource server refuses a call without them (`403 insufficient_scope`); the
    /// other adapters have no token and do not read them. Empty: any token the server accepts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// How a call runs around its handler: approval, background mode, interruption, streamed
    /// arguments.
    #[serde(flatten)]
    pub policy: CallPolicy,
}

/// Whether a person must approve a call before it runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Approval {
    /// The call runs as soon as its arguments are valid.
    #[default]
    None,
    /// The call waits for the user's yes (asked through the browser, or the application in a
    /// chat turn); a no or no answer in time reaches the model as the call's result.
    Required,
}

/// When a server tool's result reaches the model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// The model waits for the result (the call's result is the executor's).
    #[default]
    Sync,
    /// The model is told at once that the work started and the conversation goes on; the
    /// result is added to the conversation when it arrives, and the model asked to respond at
    /// the next point where no response is in progress.
    Async,
}

/// When the model takes up the result of a background (`mode: async`) call, where the provider
/// lets the application say (Gemini Live's `FunctionResponse.scheduling`). OpenAI Realtime has
/// no such setting: a result goes in at the next point where no response is in progress.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scheduling {
    /// Once the model is idle: it finishes what it is saying first (the default).
    #[default]
    WhenIdle,
    /// At once: the model stops speaking and answers with the result.
    Interrupt,
    /// Into the context only: the model uses it when it next speaks, without being prompted.
    Silent,
}

impl Scheduling {
    /// The manifest's words for it, in order.
    pub const NAMES: &'static [&'static str] = &["when_idle", "interrupt", "silent"];

    /// As the manifest writes it.
    pub fn name(self) -> &'static str {
        match self {
            Scheduling::WhenIdle => "when_idle",
            Scheduling::Interrupt => "interrupt",
            Scheduling::Silent => "silent",
        }
    }

    /// Gemini Live's wire value (`FunctionResponseScheduling`).
    pub fn live_value(self) -> &'static str {
        match self {
            Scheduling::WhenIdle => "WHEN_IDLE",
            Scheduling::Interrupt => "INTERRUPT",
            Scheduling::Silent => "SILENT",
        }
    }
}

impl std::fmt::Display for Scheduling {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Scheduling {
    type Err = String;

    /// The manifest's word or the Live value (`when_idle`, `WHEN_IDLE`, `when-idle`).
    fn from_str(s: &str) -> Result<Scheduling, String> {
        match s.to_ascii_lowercase().replace('-', "_").as_str() {
            "when_idle" => Ok(Scheduling::WhenIdle),
            "interrupt" => Ok(Scheduling::Interrupt),
            "silent" => Ok(Scheduling::Silent),
            _ => Err(format!(
                "unknown scheduling `{s}`: use when_idle, interrupt or silent"
            )),
        }
    }
}

/// What a second call of a tool with the same (canonical) arguments within the duplicate window
/// does: a model re-issuing a call after the user interrupted it, a provider delivering one call
/// twice, a client retrying (the manifest's `on_duplicate`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnDuplicate {
    /// Runs again, as any call.
    Run,
    /// Does not run: it gets the first call's result (waiting for it if the first still runs).
    Reuse,
    /// Does not run: the model is told the same call already ran (or is running).
    Refuse,
}

impl OnDuplicate {
    /// The manifest's words for it, in order.
    pub const NAMES: &'static [&'static str] = &["run", "reuse", "refuse"];

    /// The policy of a tool whose manifest does not say, by its hints (see
    /// [`ToolDefinition::duplicate_policy`]).
    pub fn default_for(annotations: &Annotations) -> OnDuplicate {
        match (annotations.idempotent, annotations.destructive) {
            (Some(false), Some(true)) => OnDuplicate::Refuse,
            (Some(false), _) => OnDuplicate::Reuse,
            _ => OnDuplicate::Run,
        }
    }

    /// As the manifest writes it.
    pub fn name(self) -> &'static str {
        match self {
            OnDuplicate::Run => "run",
            OnDuplicate::Reuse => "reuse",
            OnDuplicate::Refuse => "refuse",
        }
    }
}

impl std::fmt::Display for OnDuplicate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for OnDuplicate {
    type Err = String;

    fn from_str(s: &str) -> Result<OnDuplicate, String> {
        match s {
            "run" => Ok(OnDuplicate::Run),
            "reuse" => Ok(OnDuplicate::Reuse),
            "refuse" => Ok(OnDuplicate::Refuse),
            _ => Err(format!(
                "unknown on_duplicate `{s}`: use run, reuse or refuse"
            )),
        }
    }
}

/// Whose calls a [`RateLimit`] counts: one user's across all their conversations (the
/// `CallContext` principal), or one conversation's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RateScope {
    /// Every conversation of one principal counts together (the default).
    #[default]
    Principal,
    /// Each conversation counts on its own.
    Conversation,
}

impl RateScope {
    /// As the manifest writes it (`per principal`).
    pub fn name(self) -> &'static str {
        match self {
            RateScope::Principal => "principal",
            RateScope::Conversation => "conversation",
        }
    }
}

/// The form of a `rate_limit` (for `toolc.schema.json`); [`RateLimit::parse`] takes it.
pub const RATE_LIMIT_PATTERN: &str =
    "^[1-9][0-9]*/([1-9][0-9]*)?(s|sec|second|min|minute|h|hour|day)( per (principal|conversation))?$";

/// The manifest's `rate_limit`: at most `calls` calls per `window_ms` milliseconds, counted per
/// [`RateScope`]. A call over the limit does not run; the model gets a `rate_limited` result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RateLimit {
    /// Calls allowed in one window.
    pub calls: u32,
    /// The window, in milliseconds.
    pub window_ms: u64,
    /// Whose calls count together.
    #[serde(default, skip_serializing_if = "is_default")]
    pub per: RateScope,
}

impl RateLimit {
    /// The window units the manifest takes, with their length in milliseconds.
    pub const UNITS: &'static [(&'static str, u64)] = &[
        ("s", 1_000),
        ("sec", 1_000),
        ("second", 1_000),
        ("min", 60_000),
        ("minute", 60_000),
        ("h", 3_600_000),
        ("hour", 3_600_000),
        ("day", 86_400_000),
    ];

    /// The window.
    pub fn window(&self) -> Duration {
        Duration::from_millis(self.window_ms)
    }

    /// Parses the manifest's form: `10/min`, `100/day per principal`, `5/min per conversation`,
    /// `3/10s`.
    pub fn parse(text: &str) -> Result<RateLimit, String> {
        let mut words = text.split_whitespace();
        let rate = words.next().ok_or("empty rate limit")?;
        let per = match (words.next(), words.next(), words.next()) {
            (None, _, _) => RateScope::Principal,
            (Some("per"), Some("principal"), None) => RateScope::Principal,
            (Some("per"), Some("conversation"), None) => RateScope::Conversation,
            _ => return Err("after the rate, write `per principal` or `per conversation`".into()),
        };
        let (calls, window) = rate
            .split_once('/')
            .ok_or("expected calls/window, such as `10/min`")?;
        let calls: u32 = calls
            .parse()
            .map_err(|_| format!("`{calls}` is not a whole number of calls"))?;
        if calls == 0 {
            return Err("a limit of 0 calls would never let the tool run".into());
        }
        let split = window
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(window.len());
        let count: u64 = if split == 0 {
            1
        } else {
            window[..split]
                .parse()
                .map_err(|_| format!("`{window}` is not a window"))?
        };
        let unit = &window[split..];
        let unit_ms = RateLimit::UNITS
            .iter()
            .find(|(u, _)| *u == unit)
            .map(|(_, ms)| *ms)
            .ok_or_else(|| format!("unknown window `{unit}`: use s, min, h or day"))?;
        let window_ms = count * unit_ms;
        if window_ms == 0 || window_ms > 31 * 86_400_000 {
            return Err("the window must be more than 0 and at most 31 days".into());
        }
        Ok(RateLimit {
            calls,
            window_ms,
            per,
        })
    }
}

impl std::fmt::Display for RateLimit {
    /// The manifest's form, with the window in its largest whole unit.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (count, unit) = [
            (86_400_000, "day"),
            (3_600_000, "h"),
            (60_000, "min"),
            (1_000, "s"),
        ]
        .into_iter()
        .find(|(ms, _)| self.window_ms % ms == 0)
        .map_or((self.window_ms, "ms"), |(ms, u)| (self.window_ms / ms, u));
        if count == 1 {
            write!(f, "{}/{unit} per {}", self.calls, self.per.name())
        } else {
            write!(f, "{}/{count}{unit} per {}", self.calls, self.per.name())
        }
    }
}

/// The manifest's `retry`: a failed call of a tool that is safe to repeat runs again, up to
/// `attempts` runs in all, waiting `backoff_ms` before the first retry and twice as long before
/// each next one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RetryPolicy {
    /// Runs in all, the first one included (at least 2).
    pub attempts: u32,
    /// The wait before the first retry, in milliseconds; it doubles for each next one.
    pub backoff_ms: u64,
    /// Whether a run that timed out is retried (`on: [timeout]`).
    pub on_timeout: bool,
    /// Whether a run whose executor returned an error is retried (`on: [tool_failed]`).
    pub on_tool_failed: bool,
}

impl RetryPolicy {
    /// The failures `retry.on` may name (the `CallError` codes).
    pub const FAILURES: &'static [&'static str] = &["timeout", "tool_failed"];
    /// Most runs a `retry` may ask for.
    pub const MAX_ATTEMPTS: u32 = 10;
    /// The backoff when the manifest gives none.
    pub const DEFAULT_BACKOFF_MS: u64 = 200;

    /// The wait before retry number `retry` (1 for the first retry).
    pub fn backoff(&self, retry: u32) -> Duration {
        let factor = 1u64 << retry.saturating_sub(1).min(16);
        Duration::from_millis(self.backoff_ms.saturating_mul(factor))
    }

    /// Whether a failure with this code (`timeout`, `tool_failed`) is retried.
    pub fn retries(&self, code: &str) -> bool {
        match code {
            "timeout" => self.on_timeout,
            "tool_failed" => self.on_tool_failed,
            _ => false,
        }
    }
}

/// How long after a call a second one with the same arguments counts as its duplicate, unless
/// the manifest's `duplicate_window` says otherwise.
pub const DEFAULT_DUPLICATE_WINDOW: Duration = Duration::from_secs(60);

/// How a call of one tool runs around its handler (the manifest's `approval`, `mode`,
/// `scheduling`, `cancel_on_interruption`, `stream_arguments`, `on_duplicate`,
/// `duplicate_window`, `rate_limit` and `retry`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CallPolicy {
    /// Whether a person must approve each call before it runs.
    #[serde(default, skip_serializing_if = "is_default")]
    pub approval: Approval,
    /// Server tools only.
    #[serde(default, skip_serializing_if = "is_default")]
    pub mode: Mode,
    /// `mode: async` tools only: when the model takes up the result; `None` leaves it to the
    /// session's setting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling: Option<Scheduling>,
    /// Whether a call still running when the user interrupts the response that made it is
    /// cancelled; `None` means the default ([`ToolDefinition::cancels_on_interruption`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel_on_interruption: Option<bool>,
    /// Client tools only: the browser gets the arguments while the model writes them.
    #[serde(default, skip_serializing_if = "is_default")]
    pub stream_arguments: bool,
    /// What a duplicate call does; `None` means the default
    /// ([`ToolDefinition::duplicate_policy`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_duplicate: Option<OnDuplicate>,
    /// How long a call's duplicates are recognised, in milliseconds; `None` means
    /// [`DEFAULT_DUPLICATE_WINDOW`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicate_window_ms: Option<u64>,
    /// At most so many calls per window; `None` means no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<RateLimit>,
    /// Server tools that are safe to repeat: how a failed run is retried; `None` means never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryPolicy>,
}

fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

impl CallPolicy {
    /// A call that runs at once, waits for its result, is cancelled by an interruption when it
    /// waits, and gets its arguments whole.
    pub const DEFAULT: CallPolicy = CallPolicy {
        approval: Approval::None,
        mode: Mode::Sync,
        scheduling: None,
        cancel_on_interruption: None,
        stream_arguments: false,
        on_duplicate: None,
        duplicate_window_ms: None,
        rate_limit: None,
        retry: None,
    };

    /// Whether every setting is the default (`CallPolicy::DEFAULT`).
    pub fn is_default(&self) -> bool {
        *self == CallPolicy::DEFAULT
    }
}

/// Behaviour hints of a tool (the manifest's `annotations`, MCP's `*Hint`s). Unset means the
/// manifest does not say; hosts then assume MCP's defaults (not read-only, destructive, not
/// idempotent, open world).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Annotations {
    /// It does not change its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// It may destroy or overwrite (meaningful when not read-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    /// Calling it twice with the same arguments does nothing more than once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// It reaches an open world (the web, other people), not a closed domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world: Option<bool>,
}

impl Annotations {
    /// No hint given.
    pub const NONE: Annotations = Annotations {
        read_only: None,
        destructive: None,
        idempotent: None,
        open_world: None,
    };

    /// Whether no hint is given.
    pub fn is_empty(&self) -> bool {
        *self == Annotations::NONE
    }
}

fn yes() -> bool {
    true
}

/// An unnamed server tool that takes no arguments, with every optional part at its default: the
/// base of a definition written as a struct literal (`ToolDefinition { name, description,
/// location, parameters, ..Default::default() }`), so that a field added later with a default
/// changes no literal that does not set it (the generated registries' among them).
impl Default for ToolDefinition {
    fn default() -> ToolDefinition {
        ToolDefinition {
            name: String::new(),
            description: String::new(),
            location: Location::Server,
            parameters: ToolDefinition::empty_parameters(),
            returns: None,
            timeout: None,
            wait_for_response: true,
            filler: Vec::new(),
            title: None,
            annotations: Annotations::NONE,
            scopes: Vec::new(),
            policy: CallPolicy::DEFAULT,
        }
    }
}

impl ToolDefinition {
    /// The schema used when a tool declares no parameters: an object that accepts no properties.
    pub fn empty_parameters() -> serde_json::Value {
        serde_json::json!({ "type": "object", "properties": {}, "additionalProperties": false })
    }

    /// The description the model reads: the manifest's, followed by what no provider has a
    /// field for (that a call waits for approval, that a background call answers at once).
    pub fn model_description(&self) -> std::borrow::Cow<'_, str> {
        let mut notes = Vec::new();
        if self.requires_approval() {
            notes.push(APPROVAL_NOTE);
        }
        if self.runs_in_background() {
            notes.push(BACKGROUND_NOTE);
        }
        if notes.is_empty() {
            return std::borrow::Cow::Borrowed(&self.description);
        }
        let mut text = self.description.clone();
        for note in notes {
            text.push_str("\n\n");
            text.push_str(note);
        }
        std::borrow::Cow::Owned(text)
    }

    /// Whether the tool answers with content blocks (`returns: content`).
    pub fn returns_content(&self) -> bool {
        crate::content::is_content(self.returns.as_ref())
    }

    /// Whether the tool's calls need a person's approval before they run.
    pub fn requires_approval(&self) -> bool {
        self.policy.approval == Approval::Required
    }

    /// Whether the model is answered at once and the result follows later (`mode: async`).
    pub fn runs_in_background(&self) -> bool {
        self.location == Location::Server && self.policy.mode == Mode::Async
    }

    /// Whether the user interrupting the response that made a call cancels the call if it is
    /// still running: as the manifest says, or by default for the calls the model waits for (a
    /// waiting client tool, a sync server tool), not for fire-and-forget or background ones.
    pub fn cancels_on_interruption(&self) -> bool {
        self.policy
            .cancel_on_interruption
            .unwrap_or(match self.location {
                Location::Client => self.wait_for_response,
                Location::Server => self.policy.mode == Mode::Sync,
            })
    }

    /// What a second call with the same arguments within [`ToolDefinition::duplicate_window`]
    /// does: as the manifest says, else by its `idempotent` hint. A tool that says calling it
    /// twice changes nothing more runs again; one that says it does gets the first result
    /// (a create-type call re-issued after an interruption finds what it created), or, when it
    /// is also destructive, is refused (a deliberate second transfer must not be answered with
    /// the first's receipt, nor run unasked). Without the hint, calls run as they come.
    pub fn duplicate_policy(&self) -> OnDuplicate {
        self.policy
            .on_duplicate
            .unwrap_or_else(|| OnDuplicate::default_for(&self.annotations))
    }

    /// How long after a call a second one with the same arguments is its duplicate.
    pub fn duplicate_window(&self) -> Duration {
        self.policy
            .duplicate_window_ms
            .map_or(DEFAULT_DUPLICATE_WINDOW, Duration::from_millis)
    }

    /// Whether the browser gets this tool's arguments while the model writes them.
    pub fn streams_arguments(&self) -> bool {
        self.location == Location::Client && self.policy.stream_arguments
    }

    /// The deadline that applies to a call of this tool: its own, or for client tools the default.
    pub fn effective_timeout(&self) -> Option<Duration> {
        match (self.timeout, self.location) {
            (Some(t), _) => Some(t),
            (None, Location::Client) => Some(DEFAULT_CLIENT_TIMEOUT),
            (None, Location::Server) => None,
        }
    }
}

mod duration_ms {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(d) => s.serialize_u64(d.as_millis() as u64),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.map(Duration::from_millis))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_limits_read_as_written() {
        let l = RateLimit::parse("10/min").unwrap();
        assert_eq!(
            (l.calls, l.window_ms, l.per),
            (10, 60_000, RateScope::Principal)
        );
        let l = RateLimit::parse("100/day per principal").unwrap();
        assert_eq!(
            (l.calls, l.window_ms, l.per),
            (100, 86_400_000, RateScope::Principal)
        );
        let l = RateLimit::parse("5/min per conversation").unwrap();
        assert_eq!(l.per, RateScope::Conversation);
        assert_eq!(RateLimit::parse("3/10s").unwrap().window_ms, 10_000);
        assert_eq!(l.to_string(), "5/min per conversation");
        assert_eq!(
            RateLimit::parse("3/90s").unwrap().to_string(),
            "3/90s per principal"
        );
        for bad in [
            "",
            "10",
            "0/min",
            "10/fortnight",
            "10/min per user",
            "x/min",
            "1/0s",
            "1/32day",
        ] {
            assert!(RateLimit::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_rate_limit_parser_and_pattern_agree() {
        let pattern = regex_lite(RATE_LIMIT_PATTERN);
        for ok in [
            "10/min",
            "100/day per principal",
            "5/min per conversation",
            "3/10s",
            "1/h",
        ] {
            assert!(RateLimit::parse(ok).is_ok() && pattern(ok), "{ok}");
        }
        for bad in ["0/min", "10/fortnight", "10/min per user", "10/0s"] {
            assert!(RateLimit::parse(bad).is_err() && !pattern(bad), "{bad}");
        }
    }

    /// The pattern through the JSON Schema validator the core already uses.
    fn regex_lite(pattern: &str) -> impl Fn(&str) -> bool {
        let schema = serde_json::json!({ "type": "string", "pattern": pattern });
        let validator = jsonschema::draft202012::new(&schema).unwrap();
        move |text| validator.is_valid(&serde_json::json!(text))
    }

    /// A definition without scopes is written as before they existed (the JSON `#[tool]`
    /// embeds, a catalog's, `load_definitions`'), and reads back either way.
    #[test]
    fn scopes_are_written_only_when_there_are_some() {
        let plain = ToolDefinition {
            name: "t".into(),
            description: "T.".into(),
            ..Default::default()
        };
        let json = serde_json::to_value(&plain).unwrap();
        assert!(json.get("scopes").is_none(), "{json}");
        assert_eq!(
            serde_json::from_value::<ToolDefinition>(json).unwrap(),
            plain
        );
        let scoped = ToolDefinition {
            scopes: vec!["tickets:write".into(), "tickets:read".into()],
            ..plain
        };
        let json = serde_json::to_value(&scoped).unwrap();
        assert_eq!(
            json["scopes"],
            serde_json::json!(["tickets:write", "tickets:read"])
        );
        assert_eq!(
            serde_json::from_value::<ToolDefinition>(json).unwrap(),
            scoped
        );
    }

    #[test]
    fn backoff_doubles() {
        let r = RetryPolicy {
            attempts: 4,
            backoff_ms: 100,
            on_timeout: true,
            on_tool_failed: false,
        };
        assert_eq!(r.backoff(1), Duration::from_millis(100));
        assert_eq!(r.backoff(3), Duration::from_millis(400));
        assert!(r.retries("timeout") && !r.retries("tool_failed") && !r.retries("panic"));
    }
}
