//! What a browser may send to the model. The browser is the less trusted side, and the relay
//! forwards most of its events as the original text, so an event must mean the same thing to the
//! relay and to the model's parser:
//!
//! - [`event_type`] reads a browser event strictly: one JSON object with a string `type`, no
//!   duplicate key at any depth (parsers disagree on which one wins), no number outside `f64`
//!   (`1e999`), no lone surrogate, no nesting past the parser's limit, nothing after the value.
//!   What fails is never forwarded.
//! - [`check_response_create`] keeps a browser's `response.create` from granting tools, naming a
//!   tool the session does not declare, putting call or output items in the model's input, or
//!   passing itself off as one of the relay's filler responses.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::gemini_live::spelling::{self, camel, TwoSpellings};
use super::openai::{MaybeBorrowed as Key, FILLER_METADATA_KEY};

/// Why a browser event was refused. Each kind has a stable [`code`](Refused::code), sent to the
/// browser in an `error` event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refused {
    /// Not JSON the relay can read the way every other parser reads it.
    Unparsable(String),
    /// An object with the same key twice.
    DuplicateKey(String),
    /// Not an object with a string `type`.
    NoType,
    /// `response.create` with a `response.tools` list: only the server declares tools.
    ToolsInResponse,
    /// A `tool_choice` that names a function the session does not declare.
    UnknownToolChoice(String),
    /// A `function_call` or `function_call_output` item (or any item with a `call_id`) in
    /// `response.input`: only the model makes calls, and results reach it through the relay.
    CallItemInInput,
    /// The relay's own filler marker in `response.metadata`.
    ReservedMetadata,
    /// A binary websocket frame: the realtime protocol is JSON text, and a binary frame would
    /// reach the model unread.
    BinaryFrame,
    /// Gemini Live: a `setup` from the browser. The server sends the one `setup`, with the
    /// declarations.
    SetupNotAllowed,
    /// Gemini Live: a `toolResponse` from the browser. A client call's result goes as the
    /// browser protocol's result event, where the session checks that the call is the
    /// browser's and open.
    ToolResponseNotAllowed,
    /// Gemini Live: a `functionCall` or `functionResponse` part in `clientContent.turns`: only
    /// the model makes calls, and results reach it through the relay.
    CallPartInContent,
    /// Gemini Live: not one client message (none, or several of `realtimeInput`,
    /// `clientContent`, ... in one object).
    NotOneMessage,
    /// Gemini Live: a member that is not a client message the relay forwards (the browser may
    /// send `realtimeInput`, `clientContent` and `contextUpdate`).
    UnknownLiveMessage(String),
    /// Gemini Live: `contextUpdate.tools` from the browser. Only the server declares tools: a
    /// page that replaced them could hand the model a server tool's name to call or take the
    /// declared ones away.
    ToolsInContextUpdate,
    /// Gemini Live: one field written in both spellings (`functionCall` and `function_call`)
    /// in one object; Google's parser keeps one of them and the relay cannot know which.
    TwoSpellings(String),
    /// Gemini Live: a field the relay must look into is not the shape the API defines.
    LiveShape(&'static str),
    /// GPT-Live: an event that is the server's to send (`session.start`, `session.update`,
    /// `response.item.create`, `response.create`, `decision.*`, or commentary bound to a
    /// delegation): it declares the tools, adds results and asks for responses.
    ServerOnly(String),
    /// GPT-Live: an event type the relay does not forward (not one a page sends).
    NotRelayed(String),
    /// GPT-Live attached as a sideband: a model event from the page, which talks to the model
    /// over its own WebRTC data channel; toolc's socket carries the browser protocol only.
    SidebandModelEvent(String),
}

impl Refused {
    /// A stable code for the `error` event and logs.
    pub fn code(&self) -> &'static str {
        match self {
            Refused::Unparsable(_) => "unparsable_event",
            Refused::DuplicateKey(_) => "duplicate_key",
            Refused::NoType => "missing_type",
            Refused::ToolsInResponse => "tools_not_allowed",
            Refused::UnknownToolChoice(_) => "unknown_tool_choice",
            Refused::CallItemInInput => "call_item_not_allowed",
            Refused::ReservedMetadata => "reserved_metadata",
            Refused::BinaryFrame => "binary_frame",
            Refused::SetupNotAllowed => "setup_not_allowed",
            Refused::ToolResponseNotAllowed => "tool_response_not_allowed",
            Refused::NotOneMessage => "not_one_message",
            Refused::CallPartInContent => "call_part_not_allowed",
            Refused::UnknownLiveMessage(_) => "unknown_message",
            Refused::ToolsInContextUpdate => "tools_not_allowed",
            Refused::TwoSpellings(_) => "two_spellings",
            Refused::LiveShape(_) => "unexpected_shape",
            Refused::ServerOnly(_) => "server_only_event",
            Refused::NotRelayed(_) => "unknown_event",
            Refused::SidebandModelEvent(_) => "sideband_model_event",
        }
    }
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refused::Unparsable(why) => write!(f, "the event is not valid JSON: {why}"),
            Refused::DuplicateKey(key) => write!(f, "the key `{key}` appears twice in one object"),
            Refused::NoType => f.write_str("the event is not a JSON object with a string `type`"),
            Refused::ToolsInResponse => {
                f.write_str("`response.tools` is set by the server; a browser may not send it")
            }
            Refused::UnknownToolChoice(name) => write!(
                f,
                "`tool_choice` names `{name}`, which is not a tool of this session"
            ),
            Refused::CallItemInInput => f.write_str(
                "`response.input` may not hold function_call or function_call_output items",
            ),
            Refused::ReservedMetadata => write!(
                f,
                "`response.metadata.{FILLER_METADATA_KEY}` is reserved for the relay"
            ),
            Refused::BinaryFrame => {
                f.write_str("binary frames are not relayed; send each event as a JSON text frame")
            }
            Refused::SetupNotAllowed => f.write_str(
                "`setup` is sent by the server, with the tool declarations; a browser may not send it",
            ),
            Refused::ToolResponseNotAllowed => f.write_str(
                "`toolResponse` is not relayed; send a client call's result as a `function_call.result` event",
            ),
            Refused::CallPartInContent => f.write_str(
                "`clientContent.turns` may not hold functionCall or functionResponse parts",
            ),
            Refused::NotOneMessage => f.write_str(
                "a Live client message is an object with exactly one member (`realtimeInput`, `clientContent` or `contextUpdate`)",
            ),
            Refused::UnknownLiveMessage(member) => write!(
                f,
                "`{member}` is not a Live client message the relay forwards; send `realtimeInput`, `clientContent` or `contextUpdate`"
            ),
            Refused::ToolsInContextUpdate => f.write_str(
                "`contextUpdate.tools` is set by the server; a browser may not declare tools",
            ),
            Refused::TwoSpellings(field) => write!(
                f,
                "`{field}` is written twice, in both spellings; write it once"
            ),
            Refused::LiveShape(what) => write!(f, "{what}; send the shape the Live API defines"),
            Refused::NotRelayed(kind) => write!(
                f,
                "`{kind}` is not an event the relay forwards; a page sends audio (`session.input_audio.*`), `session.instructions.append`, `session.commentary.append`, `session.thinking.append`, `session.output_audio.fixture.play` or `session.close`"
            ),
            Refused::SidebandModelEvent(kind) => write!(
                f,
                "`{kind}` goes to the model over the page's own data channel: in sideband mode this socket carries call results and approval answers only"
            ),
            Refused::ServerOnly(kind) => write!(
                f,
                "`{kind}` is sent by the server, which declares the tools, adds results and asks for responses; send a client call's result as a `function_call.result` event"
            ),
        }
    }
}

/// The `type` of a browser event, read strictly (see the module docs).
pub fn event_type(text: &str) -> Result<Cow<'_, str>, Refused> {
    top_level(text)?.kind.ok_or(Refused::NoType)
}

/// What one strict read of a browser message learns of its top level.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TopLevel<'a> {
    /// The `type` member, when it is a string (OpenAI events, the browser protocol's own).
    pub kind: Option<Cow<'a, str>>,
    /// How many members the object has (0 for anything that is not an object).
    pub members: usize,
    /// The first member's name: what a Gemini Live client message is (`realtimeInput`, ...).
    pub first_member: Option<Cow<'a, str>>,
}

/// Reads a browser message strictly (see the module docs), once: its `type`, and the members a
/// Live client message is told apart by, without building the tree.
pub fn top_level(text: &str) -> Result<TopLevel<'_>, Refused> {
    let mut de = serde_json::Deserializer::from_str(text);
    let found = de
        .deserialize_any(TopVisitor)
        .and_then(|found| de.end().map(|()| found));
    match found {
        Ok(top) => Ok(top),
        // Only our visitors raise data errors, and only for a duplicate key.
        Err(e) if e.classify() == serde_json::error::Category::Data => {
            Err(Refused::DuplicateKey(duplicate_key_of(&e)))
        }
        Err(e) => Err(Refused::Unparsable(e.to_string())),
    }
}

const DUPLICATE: &str = "duplicate key ";

fn duplicate_key_of(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let rest = text.strip_prefix(DUPLICATE).unwrap_or(&text);
    // The key was written with `{:?}`; the position serde_json appends follows it.
    match rest.rfind(" at line ") {
        Some(end) => rest[..end].trim_matches('"').to_owned(),
        None => rest.trim_matches('"').to_owned(),
    }
}

/// Checks a browser's `response.create` against the session's declared function names.
pub fn check_response_create(
    event: &Value,
    declared: impl Fn(&str) -> bool,
) -> Result<(), Refused> {
    let Some(response) = event.get("response").and_then(Value::as_object) else {
        return Ok(());
    };
    match response.get("tools") {
        None => {}
        // An empty list grants nothing (a browser's own out-of-band response may turn tools off).
        Some(Value::Array(tools)) if tools.is_empty() => {}
        Some(_) => return Err(Refused::ToolsInResponse),
    }
    if let Some(choice) = response.get("tool_choice") {
        check_tool_choice(choice, &declared)?;
    }
    if let Some(Value::Array(items)) = response.get("input") {
        if items.iter().any(is_call_item) {
            return Err(Refused::CallItemInInput);
        }
    }
    let reserved = response
        .get("metadata")
        .and_then(Value::as_object)
        .is_some_and(|m| m.contains_key(FILLER_METADATA_KEY));
    if reserved {
        return Err(Refused::ReservedMetadata);
    }
    Ok(())
}

/// A `tool_choice` object naming a function (`{"type":"function","name":...}`) must name a
/// declared one; strings (`auto`, `none`, `required`) and other kinds (MCP) are the model's to
/// check.
fn check_tool_choice(choice: &Value, declared: &impl Fn(&str) -> bool) -> Result<(), Refused> {
    let Some(choice) = choice.as_object() else {
        return Ok(());
    };
    let names_a_function = choice.get("type").and_then(Value::as_str) == Some("function")
        || choice.contains_key("name");
    if !names_a_function {
        return Ok(());
    }
    match choice.get("name").and_then(Value::as_str) {
        Some(name) if declared(name) => Ok(()),
        Some(name) => Err(Refused::UnknownToolChoice(name.to_owned())),
        None => Err(Refused::UnknownToolChoice(String::new())),
    }
}

/// What to do with a Gemini Live client message from the browser, from its top level alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LiveInput {
    /// `realtimeInput` (audio, video, text, activity signals): forward it unread.
    Forward,
    /// `clientContent` or `contextUpdate`: parse it and [`check_live_client_message`].
    LookInside,
}

/// Sorts a Live client message by its one member (an allow-list: anything the relay does not
/// know could be a way around it), in either spelling of its name (`clientContent` or
/// `client_content`), as Google's parser reads it.
pub fn live_input(top: &TopLevel<'_>) -> Result<LiveInput, Refused> {
    if top.members != 1 {
        return Err(Refused::NotOneMessage);
    }
    let member = top.first_member.as_deref().unwrap_or_default();
    match camel(member).as_ref() {
        "realtimeInput" => Ok(LiveInput::Forward),
        "clientContent" | "contextUpdate" => Ok(LiveInput::LookInside),
        "setup" => Err(Refused::SetupNotAllowed),
        "toolResponse" => Err(Refused::ToolResponseNotAllowed),
        _ => Err(Refused::UnknownLiveMessage(member.to_owned())),
    }
}

/// Checks a Gemini Live client message from the browser (already read strictly). Every field
/// is read in both spellings; a field the guard looks into that is not the shape the API
/// defines (`turns` or `parts` that are not lists, a part that is not an object) is refused,
/// not skipped, since Google's parser might read it some other way.
pub fn check_live_client_message(message: &serde_json::Map<String, Value>) -> Result<(), Refused> {
    let top = TopLevel {
        kind: None,
        members: message.len(),
        first_member: message.keys().next().map(|k| Cow::Borrowed(k.as_str())),
    };
    live_input(&top)?;
    let two = |e: TwoSpellings| Refused::TwoSpellings(e.0);
    if let Some(update) = spelling::value(message, "contextUpdate").map_err(two)? {
        let update = update
            .as_object()
            .ok_or(Refused::LiveShape("`contextUpdate` is not an object"))?;
        if spelling::value(update, "tools").map_err(two)?.is_some() {
            return Err(Refused::ToolsInContextUpdate);
        }
        return Ok(());
    }
    let Some(content) = spelling::value(message, "clientContent").map_err(two)? else {
        return Ok(());
    };
    let content = content
        .as_object()
        .ok_or(Refused::LiveShape("`clientContent` is not an object"))?;
    let turns = match spelling::value(content, "turns").map_err(two)? {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Array(turns)) => turns,
        Some(_) => return Err(Refused::LiveShape("`clientContent.turns` is not a list")),
    };
    for turn in turns {
        let turn = turn.as_object().ok_or(Refused::LiveShape(
            "a turn of `clientContent.turns` is not an object",
        ))?;
        let parts = match spelling::value(turn, "parts").map_err(two)? {
            None | Some(Value::Null) => continue,
            Some(Value::Array(parts)) => parts,
            Some(_) => return Err(Refused::LiveShape("a turn's `parts` is not a list")),
        };
        for part in parts {
            let part = part
                .as_object()
                .ok_or(Refused::LiveShape("a part of a turn is not an object"))?;
            for field in ["functionCall", "functionResponse"] {
                if spelling::value(part, field).map_err(two)?.is_some() {
                    return Err(Refused::CallPartInContent);
                }
            }
        }
    }
    Ok(())
}

fn is_call_item(item: &Value) -> bool {
    let kind = item.get("type").and_then(Value::as_str);
    matches!(kind, Some("function_call" | "function_call_output")) || item.get("call_id").is_some()
}

/// The top-level object: its `type` when it is a string, its first member and how many there
/// are, every member read strictly.
struct TopVisitor;

impl<'de> Visitor<'de> for TopVisitor {
    type Value = TopLevel<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut keys = Keys::new();
        let mut top = TopLevel::default();
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            let is_type = key == "type";
            if top.members == 0 {
                top.first_member = Some(key.clone());
            }
            top.members += 1;
            keys.insert::<A::Error>(key)?;
            if is_type {
                top.kind = map.next_value::<TypeValue<'de>>()?.0;
            } else {
                map.next_value::<Strict>()?;
            }
        }
        Ok(top)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<Strict>()?.is_some() {}
        Ok(TopLevel::default())
    }

    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(TopLevel::default())
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(TopLevel::default())
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(TopLevel::default())
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(TopLevel::default())
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(TopLevel::default())
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(TopLevel::default())
    }
}

/// The keys of one object so far. Most objects have a handful, where a scan of an inline array
/// beats hashing and allocating; past [`FEW`] keys a set takes over.
struct Keys<'a> {
    few: [Option<Cow<'a, str>>; FEW],
    len: usize,
    many: Option<HashSet<Cow<'a, str>>>,
}

const FEW: usize = 8;

impl<'a> Keys<'a> {
    fn new() -> Keys<'a> {
        Keys {
            few: Default::default(),
            len: 0,
            many: None,
        }
    }

    fn insert<E: de::Error>(&mut self, key: Cow<'a, str>) -> Result<(), E> {
        let duplicate = match &self.many {
            Some(set) => set.contains(&key),
            None => self.few[..self.len].iter().flatten().any(|k| *k == key),
        };
        if duplicate {
            return Err(E::custom(format_args!("{DUPLICATE}{key:?}")));
        }
        match &mut self.many {
            Some(set) => {
                set.insert(key);
            }
            None if self.len < FEW => {
                self.few[self.len] = Some(key);
                self.len += 1;
            }
            None => {
                let mut set: HashSet<Cow<'a, str>> =
                    self.few.iter_mut().filter_map(Option::take).collect();
                set.insert(key);
                self.many = Some(set);
            }
        }
        Ok(())
    }
}

/// The value of the top-level `type`: the string, or `None` for any other value, read strictly.
type TypeValue<'a> = super::type_member::TypeValue<'a, StrictVisitor>;

impl super::type_member::Rest for StrictVisitor {
    fn seq<'de, A: SeqAccess<'de>>(seq: A) -> Result<(), A::Error> {
        StrictVisitor.visit_seq(seq).map(|_| ())
    }

    fn map<'de, A: MapAccess<'de>>(map: A) -> Result<(), A::Error> {
        StrictVisitor.visit_map(map).map(|_| ())
    }
}

/// Any JSON value, read in full (unlike `IgnoredAny`, which skips numbers without checking
/// their range) and with duplicate keys refused.
pub(crate) struct Strict;

impl<'de> de::Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrictVisitor)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Strict;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Strict, A::Error> {
        let mut keys = Keys::new();
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            keys.insert::<A::Error>(key)?;
            map.next_value::<Strict>()?;
        }
        Ok(Strict)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Strict, A::Error> {
        while seq.next_element::<Strict>()?.is_some() {}
        Ok(Strict)
    }

    fn visit_borrowed_str<E>(self, _: &'de str) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_str<E>(self, _: &str) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_unit<E>(self) -> Result<Strict, E> {
        Ok(Strict)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn one_read_sorts_a_live_message_by_its_one_member() {
        let audio = top_level(r#"{"realtimeInput":{"audio":{"data":"AAAA"}}}"#).unwrap();
        assert_eq!((audio.kind.as_deref(), audio.members), (None, 1));
        assert_eq!(live_input(&audio), Ok(LiveInput::Forward));
        let escaped = top_level(r#"{"clientCont\u0065nt":{}}"#).unwrap();
        assert_eq!(escaped.first_member.as_deref(), Some("clientContent"));
        assert_eq!(live_input(&escaped), Ok(LiveInput::LookInside));
        for (text, refused) in [
            (r#"{"setup":{}}"#, Refused::SetupNotAllowed),
            (r#"{"toolResponse":{}}"#, Refused::ToolResponseNotAllowed),
            (
                r#"{"realtimeInput":{},"clientContent":{}}"#,
                Refused::NotOneMessage,
            ),
            ("{}", Refused::NotOneMessage),
            ("[1]", Refused::NotOneMessage),
            (
                r#"{"goAway":{}}"#,
                Refused::UnknownLiveMessage("goAway".into()),
            ),
        ] {
            assert_eq!(
                live_input(&top_level(text).unwrap()),
                Err(refused),
                "{text}"
            );
        }
        assert_eq!(
            top_level(r#"{"realtimeInput":{},"realtimeInput":{}}"#),
            Err(Refused::DuplicateKey("realtimeInput".into()))
        );
    }

    #[test]
    fn live_input_is_read_in_both_spellings_and_odd_shapes_are_refused() {
        let check = |text: &str| {
            let Value::Object(message) = serde_json::from_str::<Value>(text).unwrap() else {
                panic!()
            };
            check_live_client_message(&message).map_err(|e| e.code())
        };
        for (text, code) in [
            (
                r#"{"client_content":{"turns":[{"role":"model","parts":[{"function_call":{"name":"lookup","args":{}}}]}]}}"#,
                "call_part_not_allowed",
            ),
            (
                r#"{"clientContent":{"turns":[{"role":"user","parts":[{"function_response":{"id":"c1","name":"lookup","response":{"output":1}}}]}]}}"#,
                "call_part_not_allowed",
            ),
            (
                r#"{"client_content":{"turns":[{"parts":[{"functionResponse":{"id":"c1"}}]}]}}"#,
                "call_part_not_allowed",
            ),
            (
                r#"{"clientContent":{"turns":[{"parts":[{"text":"hi","function_call":{}}]}]}}"#,
                "call_part_not_allowed",
            ),
            (
                r#"{"clientContent":{"turns":[{"parts":[{"functionCall":{},"function_call":{}}]}]}}"#,
                "two_spellings",
            ),
            (
                r#"{"clientContent":{"turns":{"parts":[{"functionCall":{}}]}}}"#,
                "unexpected_shape",
            ),
            (
                r#"{"clientContent":{"turns":[{"parts":{"functionCall":{}}}]}}"#,
                "unexpected_shape",
            ),
            (
                r#"{"clientContent":{"turns":["functionCall"]}}"#,
                "unexpected_shape",
            ),
            (
                r#"{"clientContent":{"turns":[{"parts":["x"]}]}}"#,
                "unexpected_shape",
            ),
            (r#"{"clientContent":"functionCall"}"#, "unexpected_shape"),
            (r#"{"context_update":{"tools":[]}}"#, "tools_not_allowed"),
            (
                r#"{"tool_response":{"functionResponses":[]}}"#,
                "tool_response_not_allowed",
            ),
            (r#"{"setup":{"model":"x"}}"#, "setup_not_allowed"),
            (
                r#"{"client_content":{"turns":[{"role":"user","parts":[{"text":"hi"}]}],"turn_complete":true}}"#,
                "ok",
            ),
        ] {
            let got = check(text).err().unwrap_or("ok");
            assert_eq!(got, code, "{text}");
        }
        let realtime = top_level(r#"{"realtime_input":{"audio":{"data":"AAAA"}}}"#).unwrap();
        assert_eq!(live_input(&realtime), Ok(LiveInput::Forward));
        let escaped = top_level(r#"{"tool\u005fresponse":{}}"#).unwrap();
        assert_eq!(live_input(&escaped), Err(Refused::ToolResponseNotAllowed));
    }

    #[test]
    fn well_formed_events_give_their_type() {
        assert_eq!(event_type(r#"{"type":"a.b"}"#).unwrap(), "a.b");
        assert_eq!(
            event_type(r#"{"audio":"AAAA","type":"input_audio_buffer.append"}"#).unwrap(),
            "input_audio_buffer.append"
        );
        assert_eq!(event_type(r#"{"typ\u0065":"x"}"#).unwrap(), "x");
        assert_eq!(
            event_type(r#"{"type":"a","item":{"type":"b","x":[1,2.5,{"y":null}]}}"#).unwrap(),
            "a"
        );
        // Same key in different objects is fine; a surrogate pair is fine.
        assert_eq!(
            event_type(r#"{"type":"a","x":{"k":1},"y":{"k":"\ud83d\ude00"}}"#).unwrap(),
            "a"
        );
    }

    #[test]
    fn duplicate_keys_at_any_depth_are_refused() {
        for (text, key) in [
            (r#"{"type":"a","type":"b"}"#, "type"),
            (
                r#"{"type":"a","item":{"call_id":"1","call_id":"2"}}"#,
                "call_id",
            ),
            (r#"{"type":"a","x":[[{"k":1,"k":2}]]}"#, "k"),
            // The same key spelt with an escape is the same key.
            (r#"{"type":"a","o":{"ab":1,"a\u0062":2}}"#, "ab"),
        ] {
            assert_eq!(
                event_type(text),
                Err(Refused::DuplicateKey(key.into())),
                "{text}"
            );
        }
        // Past the point where a scan turns into a set.
        let mut many: Vec<String> = (0..40).map(|i| format!("\"k{i}\":{i}")).collect();
        many.push("\"k33\":0".into());
        let text = format!(r#"{{"type":"a","o":{{{}}}}}"#, many.join(","));
        assert_eq!(event_type(&text), Err(Refused::DuplicateKey("k33".into())));
    }

    #[test]
    fn what_parsers_read_differently_is_unparsable() {
        let deep = format!(
            r#"{{"type":"a","x":{}{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        for text in [
            r#"{"type":"a","n":1e999}"#.to_owned(),
            r#"{"type":"a","n":-1e400}"#.to_owned(),
            r#"{"type":"a","s":"\ud800"}"#.to_owned(),
            r#"{"type":"a","s":"\udc00x"}"#.to_owned(),
            r#"{"type":"a"} {"type":"b"}"#.to_owned(),
            r#"{"type":"a",}"#.to_owned(),
            "not json".to_owned(),
            String::new(),
            deep,
        ] {
            assert!(
                matches!(event_type(&text), Err(Refused::Unparsable(_))),
                "{text}: {:?}",
                event_type(&text)
            );
        }
    }

    #[test]
    fn events_without_a_string_type_are_refused() {
        for text in [r#"{}"#, r#"{"type":1}"#, r#"[1]"#, r#""x""#, "null"] {
            assert_eq!(event_type(text), Err(Refused::NoType), "{text}");
        }
    }

    #[test]
    fn a_browser_response_create_grants_nothing() {
        let declared = |n: &str| n == "highlight";
        let ok = [
            json!({"type":"response.create"}),
            json!({"type":"response.create","response":{"instructions":"hi","tools":[],"tool_choice":"none"}}),
            json!({"type":"response.create","response":{"tool_choice":{"type":"function","name":"highlight"}}}),
            json!({"type":"response.create","response":{"tool_choice":{"type":"mcp","server_label":"x"}}}),
            json!({"type":"response.create","response":{"conversation":"none","input":[
                {"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]},
                {"type":"item_reference","id":"item_1"}
            ],"metadata":{"topic":"x"}}}),
        ];
        for event in ok {
            assert_eq!(check_response_create(&event, declared), Ok(()), "{event}");
        }
        let refused = [
            (
                json!({"response":{"tools":[{"type":"function","name":"steal"}]}}),
                "tools_not_allowed",
            ),
            (json!({"response":{"tools":{}}}), "tools_not_allowed"),
            (
                json!({"response":{"tool_choice":{"type":"function","name":"lookup"}}}),
                "unknown_tool_choice",
            ),
            (
                json!({"response":{"tool_choice":{"name":"lookup"}}}),
                "unknown_tool_choice",
            ),
            (
                json!({"response":{"tool_choice":{"type":"function"}}}),
                "unknown_tool_choice",
            ),
            (
                json!({"response":{"input":[{"type":"function_call","call_id":"c","name":"lookup","arguments":"{}"}]}}),
                "call_item_not_allowed",
            ),
            (
                json!({"response":{"input":[{"type":"function_call_output","call_id":"c","output":"1"}]}}),
                "call_item_not_allowed",
            ),
            (
                json!({"response":{"input":[{"call_id":"c","output":"1"}]}}),
                "call_item_not_allowed",
            ),
            (
                json!({"response":{"metadata":{FILLER_METADATA_KEY:"c1"}}}),
                "reserved_metadata",
            ),
        ];
        for (event, code) in refused {
            assert_eq!(
                check_response_create(&event, declared).map_err(|e| e.code()),
                Err(code),
                "{event}"
            );
        }
    }
}
