//! Reading what Google's Live servers send. Every message is read, whatever frame it came in
//! (Google sends its JSON in binary frames), and read as Google's own parser would: both
//! spellings of every field ([`super::spelling`]), escaped member names, duplicate keys refused.
//! What cannot be read is [`Read::Unreadable`]: the session drops it and notes it, and the page
//! never gets it (fail closed).
//!
//! Most of the traffic is audio in `serverContent`, so the top level is read strictly without
//! building a tree, and a `serverContent` is parsed in full only when its text holds one of the
//! few names that can carry a call or end a turn.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde_json::{Map, Value};

use super::spelling::{self, camel, TwoSpellings};
use crate::guard::Strict;
use crate::openai::MaybeBorrowed as Key;

/// What a server message means to the session.
#[derive(Debug)]
pub enum Read {
    /// Nothing about calls in it (audio, text, transcripts, usage, `setupComplete`, voice
    /// activity): forward it as it is.
    Plain(Plain),
    /// The message, parsed, with the calls and cancellations it carries.
    Calls(CallMessage),
    /// `goAway`: the connection ends soon.
    GoAway {
        /// `goAway.timeLeft`, when it was a readable duration.
        time_left: Option<Duration>,
    },
    /// `sessionResumptionUpdate`: where the session can be resumed from now.
    Resumption(ResumptionUpdate),
    /// Not a message the session can read: drop it, never forward it.
    Unreadable(Unreadable),
}

/// Facts about a message that is forwarded as it is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Plain {
    /// It is `setupComplete`: the server has taken the `setup` and reads input now.
    pub setup_complete: bool,
    /// It ends the model's turn (`serverContent.turnComplete` or `interrupted`), which closes
    /// a batch of calls that only model-turn parts reported.
    pub ends_turn: bool,
}

/// A `sessionResumptionUpdate`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResumptionUpdate {
    /// The handle to resume from this point; `None` when the server gave none (it gives none
    /// while the session cannot be resumed, e.g. during a call).
    pub new_handle: Option<String>,
    /// Whether the session can be resumed at this point.
    pub resumable: bool,
}

/// Why a server message could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unreadable {
    /// Not JSON (or JSON that parsers read differently: duplicate keys, `1e999`, lone
    /// surrogates).
    NotJson(String),
    /// JSON, but not an object.
    NotAnObject,
    /// A top-level member that is not a Live server message kind.
    UnknownMember(String),
    /// More than one message kind in one message (`toolCall` and `serverContent`, ...).
    SeveralKinds,
    /// A field written in both spellings in one object.
    TwoSpellings(String),
    /// A member that can carry calls is not the shape the API defines.
    Shape(&'static str),
}

impl fmt::Display for Unreadable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unreadable::NotJson(why) => write!(f, "not JSON the relay reads as Google does: {why}"),
            Unreadable::NotAnObject => f.write_str("not a JSON object"),
            Unreadable::UnknownMember(m) => write!(f, "`{m}` is not a Live server message"),
            Unreadable::SeveralKinds => f.write_str("several message kinds in one message"),
            Unreadable::TwoSpellings(m) => write!(f, "`{m}` is written in both spellings"),
            Unreadable::Shape(what) => write!(f, "{what}"),
        }
    }
}

impl From<TwoSpellings> for Unreadable {
    fn from(e: TwoSpellings) -> Unreadable {
        Unreadable::TwoSpellings(e.0)
    }
}

/// A function call the model made, as read from `toolCall.functionCalls` or a `functionCall`
/// part of `serverContent.modelTurn`.
#[derive(Clone, Debug, PartialEq)]
pub struct FunctionCall {
    /// The call's id; `None` when the message gave no string id.
    pub id: Option<String>,
    /// The function's name; `None` when the message gave no string name.
    pub name: Option<String>,
    /// The `args` object as JSON text (`{}` when the model sent none).
    pub arguments: String,
}

/// A parsed server message that carries calls or cancellations.
#[derive(Debug)]
pub struct CallMessage {
    /// The whole message, to be passed on only after [`scrub`] has removed what the browser must
    /// not see.
    pub message: Map<String, Value>,
    /// Calls from `toolCall.functionCalls` and from `functionCall` parts of
    /// `serverContent.modelTurn`, in message order.
    pub calls: Vec<FunctionCall>,
    /// Ids from `toolCallCancellation.ids`.
    pub cancelled: Vec<String>,
    /// The message closes the batch of calls it belongs to: it is the `toolCall` (which lists
    /// the batch), or it ends the model's turn. `functionCall` parts of a model turn alone
    /// leave the batch open for the `toolCall` that repeats them.
    pub ends_batch: bool,
}

/// The kinds of Live server message, by their JSON names. Google's proto puts them in one
/// `oneof`, but its servers send some together (`serverContent` beside `voiceActivity` or
/// `usageMetadata`, in captured traffic), so a message may hold several; `goAway` and
/// `sessionResumptionUpdate`, which the session consumes, must come alone (usage aside).
const KINDS: [&str; 9] = [
    "setupComplete",
    "serverContent",
    "toolCall",
    "toolCallCancellation",
    "goAway",
    "sessionResumptionUpdate",
    "voiceActivityDetectionSignal",
    "voiceActivity",
    "usageMetadata",
];

/// Reads a server message (see the module docs).
pub fn read(text: &str) -> Read {
    let top = match top_members(text) {
        Ok(top) => top,
        Err(e) => return Read::Unreadable(e),
    };
    let mut kinds: Vec<&'static str> = Vec::with_capacity(top.len());
    for member in &top {
        let name = camel(member);
        let Some(known) = KINDS.iter().find(|k| **k == name) else {
            return Read::Unreadable(Unreadable::UnknownMember(member.to_string()));
        };
        if kinds.contains(known) {
            return Read::Unreadable(Unreadable::TwoSpellings(name.into_owned()));
        }
        kinds.push(known);
    }
    let has = |kind: &str| kinds.contains(&kind);
    for control in ["goAway", "sessionResumptionUpdate"] {
        if has(control) {
            if kinds.iter().any(|k| *k != control && *k != "usageMetadata") {
                return Read::Unreadable(Unreadable::SeveralKinds);
            }
            return parse(text, control).unwrap_or_else(Read::Unreadable);
        }
    }
    let needs_parse = has("toolCall")
        || has("toolCallCancellation")
        || (has("serverContent") && may_matter(text));
    if !needs_parse {
        return Read::Plain(Plain {
            setup_complete: has("setupComplete"),
            ends_turn: false,
        });
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(message)) => calls_of(message, &kinds).unwrap_or_else(Read::Unreadable),
        Ok(_) => Read::Unreadable(Unreadable::NotAnObject),
        Err(e) => Read::Unreadable(Unreadable::NotJson(e.to_string())),
    }
}

/// Whether a `serverContent` message may carry a call or end a turn: its text names
/// `functionCall` / `function_call`, `turnComplete` / `turn_complete` or `interrupted`, or has
/// an escape (a name could be spelt with `\u` escapes). Base64 audio holds none of `\`, `_`;
/// it may hold `Call` or `urnComplete` by chance, and then the message is merely parsed.
fn may_matter(text: &str) -> bool {
    let bytes = text.as_bytes();
    memchr::memchr2(b'\\', b'_', bytes).is_some()
        || finders().iter().any(|f| f.find(bytes).is_some())
}

fn finders() -> &'static [memchr::memmem::Finder<'static>; 3] {
    static FINDERS: std::sync::OnceLock<[memchr::memmem::Finder<'static>; 3]> =
        std::sync::OnceLock::new();
    FINDERS.get_or_init(|| {
        [
            memchr::memmem::Finder::new(b"Call"),
            memchr::memmem::Finder::new(b"urnComplete"),
            memchr::memmem::Finder::new(b"interrupted"),
        ]
    })
}

/// Parses a `goAway` or `sessionResumptionUpdate` (it was read strictly already).
fn parse(text: &str, kind: &str) -> Result<Read, Unreadable> {
    let message = match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(message)) => message,
        Ok(_) => return Err(Unreadable::NotAnObject),
        Err(e) => return Err(Unreadable::NotJson(e.to_string())),
    };
    let body = spelling::value(&message, kind)?.unwrap_or(&Value::Null);
    if kind == "goAway" {
        let go_away = object_or_empty(body, "`goAway` is not an object")?;
        let time_left = spelling::value(go_away, "timeLeft")?
            .and_then(Value::as_str)
            .and_then(parse_duration);
        return Ok(Read::GoAway { time_left });
    }
    let update = object_or_empty(body, "`sessionResumptionUpdate` is not an object")?;
    let new_handle = spelling::value(update, "newHandle")?
        .and_then(Value::as_str)
        .filter(|h| !h.is_empty())
        .map(str::to_owned);
    let resumable = spelling::value(update, "resumable")? == Some(&Value::Bool(true));
    Ok(Read::Resumption(ResumptionUpdate {
        new_handle,
        resumable,
    }))
}

fn object_or_empty<'a>(
    value: &'a Value,
    what: &'static str,
) -> Result<&'a Map<String, Value>, Unreadable> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    match value {
        Value::Object(o) => Ok(o),
        Value::Null => Ok(EMPTY.get_or_init(Map::new)),
        _ => Err(Unreadable::Shape(what)),
    }
}

/// A protobuf `Duration` in its JSON form: seconds with up to nine decimals and an `s`
/// (`"12s"`, `"0.5s"`).
pub fn parse_duration(text: &str) -> Option<Duration> {
    let seconds: f64 = text.strip_suffix('s')?.parse().ok()?;
    (0.0..1e12)
        .contains(&seconds)
        .then(|| Duration::from_secs_f64(seconds))
}

/// The calls, cancellations and end of turn of a message with `toolCall`,
/// `toolCallCancellation` or `serverContent` among its `kinds`. A member that can carry calls
/// and is not the shape the API defines makes the message unreadable: a call the relay cannot
/// see must not reach the page.
fn calls_of(message: Map<String, Value>, kinds: &[&str]) -> Result<Read, Unreadable> {
    let mut calls = Vec::new();
    let mut cancelled = Vec::new();
    let mut ends_turn = false;
    let body = |kind: &str| -> Result<&Value, Unreadable> {
        Ok(spelling::value(&message, kind)?.unwrap_or(&Value::Null))
    };
    if kinds.contains(&"serverContent") {
        let content = object_or_empty(body("serverContent")?, "`serverContent` is not an object")?;
        for part in model_turn_parts(content)? {
            if let Some(call) = spelling::value(part, "functionCall")? {
                calls.push(function_call(call)?);
            }
        }
        ends_turn = ends_turn_in(content)?;
    }
    if kinds.contains(&"toolCall") {
        let tool_call = object_or_empty(body("toolCall")?, "`toolCall` is not an object")?;
        for call in list(
            tool_call,
            "functionCalls",
            "`toolCall.functionCalls` is not a list",
        )? {
            calls.push(function_call(call)?);
        }
    }
    if kinds.contains(&"toolCallCancellation") {
        let cancellation = object_or_empty(
            body("toolCallCancellation")?,
            "`toolCallCancellation` is not an object",
        )?;
        for id in list(
            cancellation,
            "ids",
            "`toolCallCancellation.ids` is not a list",
        )? {
            match id {
                Value::String(id) => cancelled.push(id.clone()),
                _ => return Err(Unreadable::Shape("a cancelled call id is not a string")),
            }
        }
    }
    let names_calls = kinds.contains(&"toolCall") || kinds.contains(&"toolCallCancellation");
    if !names_calls && calls.is_empty() {
        return Ok(Read::Plain(Plain {
            setup_complete: kinds.contains(&"setupComplete"),
            ends_turn,
        }));
    }
    Ok(Read::Calls(CallMessage {
        message,
        calls,
        cancelled,
        ends_batch: kinds.contains(&"toolCall") || ends_turn,
    }))
}

/// `object[field]` as a list (none when absent); anything but a list is unreadable, with
/// `not_a_list` as the reason.
fn list<'a>(
    object: &'a Map<String, Value>,
    field: &str,
    not_a_list: &'static str,
) -> Result<&'a [Value], Unreadable> {
    match spelling::value(object, field)? {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(items)) => Ok(items),
        Some(_) => Err(Unreadable::Shape(not_a_list)),
    }
}

fn model_turn_parts(content: &Map<String, Value>) -> Result<Vec<&Map<String, Value>>, Unreadable> {
    let turn = match spelling::value(content, "modelTurn")? {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(turn)) => turn,
        Some(_) => {
            return Err(Unreadable::Shape(
                "`serverContent.modelTurn` is not an object",
            ))
        }
    };
    list(turn, "parts", "`modelTurn.parts` is not a list")?
        .iter()
        .map(|part| {
            part.as_object()
                .ok_or(Unreadable::Shape("a `modelTurn` part is not an object"))
        })
        .collect()
}

fn ends_turn_in(content: &Map<String, Value>) -> Result<bool, Unreadable> {
    Ok(
        spelling::value(content, "turnComplete")? == Some(&Value::Bool(true))
            || spelling::value(content, "interrupted")? == Some(&Value::Bool(true)),
    )
}

fn function_call(call: &Value) -> Result<FunctionCall, Unreadable> {
    let Value::Object(call) = call else {
        return Err(Unreadable::Shape("a function call is not an object"));
    };
    let text = |key: &str| -> Result<Option<String>, Unreadable> {
        Ok(spelling::value(call, key)?
            .and_then(Value::as_str)
            .map(str::to_owned))
    };
    Ok(FunctionCall {
        id: text("id")?,
        name: text("name")?,
        arguments: match spelling::value(call, "args")? {
            None | Some(Value::Null) => "{}".to_owned(),
            Some(args) => args.to_string(),
        },
    })
}

/// The message for the browser: only the calls and cancellations `visible` lets through, in
/// whichever spelling the server used. `None` when nothing is left of it.
pub fn scrub(mut message: Map<String, Value>, visible: impl Fn(&str) -> bool) -> Option<String> {
    let call_id = |c: &Value| -> Option<String> {
        let call = c.as_object()?;
        spelling::value(call, "id")
            .ok()
            .flatten()
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let call_visible = |c: &Value| call_id(c).is_some_and(|id| visible(&id));
    retain_in(&mut message, "toolCall", "functionCalls", call_visible);
    retain_in(&mut message, "toolCallCancellation", "ids", |id| {
        id.as_str().is_some_and(&visible)
    });
    if let Some(parts) = model_turn_parts_mut(&mut message) {
        parts.retain(|p| {
            let call = p
                .as_object()
                .and_then(|p| spelling::value(p, "functionCall").ok().flatten());
            call.is_none_or(call_visible)
        });
    }
    (!message.is_empty()).then(|| Value::Object(message).to_string())
}

fn key_of(object: &Map<String, Value>, camel: &str) -> Option<String> {
    spelling::field(object, camel)
        .ok()
        .flatten()
        .map(|(k, _)| k.to_owned())
}

fn model_turn_parts_mut(message: &mut Map<String, Value>) -> Option<&mut Vec<Value>> {
    let content_key = key_of(message, "serverContent")?;
    let content = message.get_mut(&content_key)?.as_object_mut()?;
    let turn_key = key_of(content, "modelTurn")?;
    let turn = content.get_mut(&turn_key)?.as_object_mut()?;
    let parts_key = key_of(turn, "parts")?;
    turn.get_mut(&parts_key)?.as_array_mut()
}

/// Keeps the entries of `message[member][list]` that `keep` accepts; removes `member` when
/// none is left or it is not that shape (what the session could not read, the page does not
/// get).
fn retain_in(
    message: &mut Map<String, Value>,
    member: &str,
    list: &str,
    keep: impl FnMut(&Value) -> bool,
) {
    let Some(member_key) = key_of(message, member) else {
        return;
    };
    let kept = match message.get_mut(&member_key) {
        Some(Value::Object(body)) => match key_of(body, list) {
            Some(list_key) => match body.get_mut(&list_key) {
                Some(Value::Array(entries)) => {
                    entries.retain(keep);
                    !entries.is_empty()
                }
                _ => false,
            },
            None => false,
        },
        _ => false,
    };
    if !kept {
        message.remove(&member_key);
    }
}

/// The names of the top-level members, the whole text read strictly (duplicate keys at any
/// depth, numbers out of range, lone surrogates and trailing text refused) without building a
/// tree.
fn top_members(text: &str) -> Result<Vec<Cow<'_, str>>, Unreadable> {
    let mut de = serde_json::Deserializer::from_str(text);
    let found = de
        .deserialize_any(TopMembers)
        .and_then(|found| de.end().map(|()| found));
    match found {
        Ok(Some(members)) => Ok(members),
        Ok(None) => Err(Unreadable::NotAnObject),
        Err(e) => Err(Unreadable::NotJson(e.to_string())),
    }
}

struct TopMembers;

impl<'de> Visitor<'de> for TopMembers {
    type Value = Option<Vec<Cow<'de, str>>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut members: Vec<Cow<'de, str>> = Vec::with_capacity(2);
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            if members.contains(&key) {
                return Err(de::Error::custom(format_args!("duplicate key {key:?}")));
            }
            map.next_value::<Strict>()?;
            members.push(key);
        }
        Ok(Some(members))
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<Strict>()?.is_some() {}
        Ok(None)
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

#[cfg(test)]
mod tests;
