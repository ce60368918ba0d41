//! The OpenAI Realtime API (GA) events the runtime reads and writes.
//!
//! Reading is deliberately shallow: [`head`] finds an event's `type` without building a tree, so
//! that the many events that are not about tools (audio, transcripts, rate limits) are forwarded
//! as the original text. Only the few tool-related types are parsed in full.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::{json, Map, Value};

use crate::ToolDefinition;

/// OpenAI's GA realtime endpoint; the model is chosen with the `model` query parameter:
/// `gpt-realtime-2.1` by default (`gpt-realtime` retires on 2027-01-20). Another model is another
/// URL (`RelayConfig::upstream`, or the relay example's `--upstream`).
pub const DEFAULT_URL: &str = "wss://api.openai.com/v1/realtime?model=gpt-realtime-2.1";

/// Metadata key that marks the runtime's own out-of-band filler responses, so that their
/// `response.created` / `response.done` can be told apart from the conversation's responses.
pub const FILLER_METADATA_KEY: &str = "toolc_filler_for";

/// The `type` of an event, found without building a JSON tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Head<'a> {
    /// A JSON object with exactly one string `type`.
    Typed(Cow<'a, str>),
    /// Valid JSON without a string `type` (not an object, or no `type` member).
    Untyped,
    /// An object with more than one `type` member. Parsers disagree on which one wins, so such
    /// an event could mean one thing here and another upstream: it is never forwarded.
    Ambiguous,
    /// Not JSON.
    Invalid,
}

/// Reads the `type` of an event from the model.
///
/// The model's events are OpenAI's serialisation, which writes `type` first: an event that
/// starts `{"type":"NAME"` with a plain name is read from that prefix alone, so the audio
/// deltas that make up most of the traffic are not scanned to the end. Anything else is read in
/// full. (Browser events are never read this way: see [`super::guard`].)
pub fn head(text: &str) -> Head<'_> {
    if let Some(kind) = leading_type(text) {
        return Head::Typed(Cow::Borrowed(kind));
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let found = match HeadSeed.deserialize_any_value(&mut de) {
        Ok(found) => found,
        Err(_) => return Head::Invalid,
    };
    if de.end().is_err() {
        return Head::Invalid;
    }
    match found {
        HeadFound::Type(t) => Head::Typed(t),
        HeadFound::None => Head::Untyped,
        HeadFound::Duplicate => Head::Ambiguous,
    }
}

/// `NAME` of an event that starts `{"type":"NAME",` (or `}`) when `NAME` has no escapes.
fn leading_type(text: &str) -> Option<&str> {
    let rest = text.strip_prefix(r#"{"type":""#)?;
    let end = memchr::memchr2(b'"', b'\\', rest.as_bytes())?;
    let (kind, after) = rest.split_at(end);
    let after = after.strip_prefix('"')?;
    matches!(after.as_bytes().first(), Some(b',' | b'}')).then_some(kind)
}

enum HeadFound<'a> {
    Type(Cow<'a, str>),
    None,
    Duplicate,
}

struct HeadSeed;

impl HeadSeed {
    fn deserialize_any_value<'de, D: Deserializer<'de>>(
        self,
        d: D,
    ) -> Result<HeadFound<'de>, D::Error> {
        d.deserialize_any(HeadVisitor)
    }
}

struct HeadVisitor;

/// A string that borrows from the input when it has no escapes.
pub(crate) struct MaybeBorrowed<'a>(pub(crate) Cow<'a, str>);

impl<'de> de::Deserialize<'de> for MaybeBorrowed<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MaybeBorrowed<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(MaybeBorrowed(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(MaybeBorrowed(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

/// A `type` member's value, the rest skipped.
type TypeValue<'a> = super::type_member::TypeValue<'a, super::type_member::Skip>;

impl<'de> Visitor<'de> for HeadVisitor {
    type Value = HeadFound<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found: Option<TypeValue<'de>> = None;
        let mut duplicate = false;
        while let Some(key) = map.next_key::<MaybeBorrowed<'de>>()? {
            if key.0 == "type" {
                let value = map.next_value::<TypeValue<'de>>()?;
                if found.is_some() {
                    duplicate = true;
                }
                found = Some(value);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(match (duplicate, found.and_then(|f| f.0)) {
            (true, _) => HeadFound::Duplicate,
            (false, Some(t)) => HeadFound::Type(t),
            _ => HeadFound::None,
        })
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(HeadFound::None)
    }

    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(HeadFound::None)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(HeadFound::None)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(HeadFound::None)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(HeadFound::None)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(HeadFound::None)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(HeadFound::None)
    }
}

/// Server event types the runtime acts on; every other type is forwarded untouched.
pub fn is_tool_related_server_event(kind: &str) -> bool {
    matches!(
        kind,
        "response.created"
            | "response.done"
            | "response.output_item.added"
            | "response.output_item.done"
            | "response.function_call_arguments.delta"
            | "response.function_call_arguments.done"
            | "conversation.item.added"
            | "conversation.item.done"
            | "conversation.item.created"
            | "conversation.item.retrieved"
    )
}

/// A `function_call` conversation item, as read from an event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionCallItem<'a> {
    /// The item's `id`; `None` when the event gave no string id.
    pub item_id: Option<&'a str>,
    /// The call's `call_id`, which its result must carry; `None` when missing.
    pub call_id: Option<&'a str>,
    /// The function's name; `None` when missing.
    pub name: Option<&'a str>,
    /// `None` while the item is still streaming (`status: in_progress`).
    pub arguments: Option<&'a str>,
}

/// Reads a `function_call` item; `None` for items of other types.
pub fn function_call_item(item: &Value) -> Option<FunctionCallItem<'_>> {
    if item.get("type").and_then(Value::as_str) != Some("function_call") {
        return None;
    }
    let status = item.get("status").and_then(Value::as_str);
    let arguments = match status {
        Some("in_progress") => None,
        _ => item.get("arguments").and_then(Value::as_str),
    };
    Some(FunctionCallItem {
        item_id: str_field(item, "id"),
        call_id: str_field(item, "call_id"),
        name: str_field(item, "name"),
        arguments,
    })
}

/// The `call_id` of a `function_call_output` item; `None` for items of other types.
pub fn function_call_output_call_id(item: &Value) -> Option<&str> {
    if item.get("type").and_then(Value::as_str) != Some("function_call_output") {
        return None;
    }
    str_field(item, "call_id")
}

pub(crate) fn str_field<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

/// The GA `session.tools` entry of one tool (`RealtimeFunctionTool`), as
/// [`toolc_core::declare::openai_realtime`] makes it for the compiler's files too.
pub fn declaration(def: &ToolDefinition) -> Value {
    toolc_core::declare::openai_realtime(def)
}

/// Declarations for every tool, in definition order.
pub fn declarations<'a>(defs: impl IntoIterator<Item = &'a ToolDefinition>) -> Vec<Value> {
    defs.into_iter().map(declaration).collect()
}

/// `session.update` with `session` as given (it should carry `type: realtime`).
pub fn session_update(session: Map<String, Value>) -> String {
    json!({ "type": "session.update", "session": Value::Object(session) }).to_string()
}

/// What merging a browser's `session.update` did, for logs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Merge {
    /// Function tools the browser declared that the server does not know; left out, because a
    /// call to them could not be routed.
    pub dropped_tools: Vec<String>,
}

/// Merges the server's tool declarations into a browser's `session.update` event. Everything the
/// browser set is kept (instructions, audio, turn detection, tool choice and non-function tools
/// such as MCP servers); function tools are the server's. A transcription session has no tools
/// and is left as it is.
pub fn merge_session_update(event: &mut Value, declarations: &[Value]) -> Merge {
    let mut merge = Merge::default();
    let Some(obj) = event.as_object_mut() else {
        return merge;
    };
    let session = obj
        .entry("session")
        .or_insert_with(|| Value::Object(Map::new()));
    if !session.is_object() {
        *session = Value::Object(Map::new());
    }
    let Some(session) = session.as_object_mut() else {
        return merge;
    };
    let theirs = session.remove("tools");
    match session.get("type").and_then(Value::as_str) {
        // A transcription session has no tools; whatever the browser listed goes nowhere.
        Some("transcription") => return merge,
        Some(_) => {}
        None => {
            session.insert("type".into(), Value::String("realtime".into()));
        }
    }
    let mut tools: Vec<Value> = declarations.to_vec();
    if let Some(Value::Array(theirs)) = theirs {
        for tool in theirs {
            // A tool without a string `type` would be read as a function by a lenient model
            // API, so it counts as one: only the server declares functions.
            let kind = tool.get("type").and_then(Value::as_str);
            if !matches!(kind, None | Some("function")) {
                tools.push(tool);
                continue;
            }
            let name = tool.get("name").and_then(Value::as_str).unwrap_or("");
            let ours = declarations
                .iter()
                .any(|d| d.get("name").and_then(Value::as_str) == Some(name));
            if !ours {
                merge.dropped_tools.push(name.to_owned());
            }
        }
    }
    session.insert("tools".into(), Value::Array(tools));
    merge
}

/// `conversation.item.create` carrying a call's result.
pub fn function_call_output(call_id: &str, output: &str) -> String {
    // Written straight to its text, not through a `json!` tree: every call's result takes
    // this path.
    #[derive(serde::Serialize)]
    struct ItemCreate<'a> {
        r#type: &'static str,
        item: OutputItem<'a>,
    }
    #[derive(serde::Serialize)]
    struct OutputItem<'a> {
        r#type: &'static str,
        call_id: &'a str,
        output: &'a str,
    }
    let event = ItemCreate {
        r#type: "conversation.item.create",
        item: OutputItem {
            r#type: "function_call_output",
            call_id,
            output,
        },
    };
    serde_json::to_string(&event).expect("an item serializes")
}

/// A background call's result as a system message in the conversation (the call itself was
/// answered with "started" long ago, and a call id takes one output only).
pub fn background_result(tool: &str, call_id: &str, failed: bool, output: &str) -> String {
    let what = if failed { "failed" } else { "finished" };
    let text =
        format!("The background call of `{tool}` (call_id {call_id}) {what}. Its result: {output}");
    json!({
        "type": "conversation.item.create",
        "item": {
            "type": "message",
            "role": "system",
            "content": [{ "type": "input_text", "text": text }],
        },
    })
    .to_string()
}

/// Whether a `response.done`'s response was cancelled: the user barged in (`turn_detected`)
/// or the client sent `response.cancel`.
pub fn is_cancelled_response(response: &Value) -> bool {
    str_field(response, "status") == Some("cancelled")
}

/// The continuation: a plain `response.create`, so the model answers with every result in view.
pub fn response_create(event_id: &str) -> String {
    json!({ "type": "response.create", "event_id": event_id }).to_string()
}

/// An out-of-band response (`conversation: none`, no input, no tools) in which the model only
/// says `phrase` while `call_id` is still waiting for the browser. It is tagged in `metadata` so
/// that its events are recognised as a filler, never as the conversation's continuation.
pub fn filler_response_create(phrase: &str, call_id: &str, event_id: &str) -> String {
    json!({
        "type": "response.create",
        "event_id": event_id,
        "response": {
            "conversation": "none",
            "input": [],
            "tools": [],
            "tool_choice": "none",
            "instructions": format!(
                "Say exactly the following words, in the conversation's language, and nothing else: {phrase}"
            ),
            "metadata": { FILLER_METADATA_KEY: call_id },
        },
    })
    .to_string()
}

/// Whether a `response` object (from `response.created` / `response.done`) is a filler.
pub fn is_filler_response(response: &Value) -> bool {
    response
        .get("metadata")
        .and_then(|m| m.get(FILLER_METADATA_KEY))
        .is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_reads_the_type_wherever_it_is() {
        assert_eq!(head(r#"{"type":"a.b"}"#), Head::Typed("a.b".into()));
        assert_eq!(
            head(r#"{"event_id":"e","delta":"xyz","type":"response.done"}"#),
            Head::Typed("response.done".into())
        );
        assert_eq!(
            head(r#"{"item":{"type":"inner"},"type":"outer"}"#),
            Head::Typed("outer".into())
        );
        assert_eq!(head(r#"{"typ\u0065":"x"}"#), Head::Typed("x".into()));
        assert_eq!(head(r#"{"type":"a\"b"}"#), Head::Typed("a\"b".into()));
    }

    #[test]
    fn a_leading_plain_type_is_read_from_the_prefix() {
        assert_eq!(
            leading_type(r#"{"type":"response.done","x":1}"#),
            Some("response.done")
        );
        assert_eq!(leading_type(r#"{"type":"a"}"#), Some("a"));
        // Escapes, another first key, spaces, or a string that does not end the value: in full.
        assert_eq!(leading_type(r#"{"type":"a\u0062","x":1}"#), None);
        assert_eq!(leading_type(r#"{"x":1,"type":"a"}"#), None);
        assert_eq!(leading_type(r#"{ "type":"a"}"#), None);
        assert_eq!(leading_type(r#"{"type":"a"x}"#), None);
        assert_eq!(leading_type(r#"{"type":"a"#), None);
        assert_eq!(
            head(r#"{"type":"a\u0062","x":1}"#),
            Head::Typed("ab".into())
        );
    }

    #[test]
    fn head_classifies_everything_else() {
        assert_eq!(head(r#"{"type":1}"#), Head::Untyped);
        assert_eq!(head(r#"[1,2]"#), Head::Untyped);
        assert_eq!(head(r#""type""#), Head::Untyped);
        assert_eq!(head(r#"{}"#), Head::Untyped);
        assert_eq!(head(r#"{"x":1,"type":"a","type":"b"}"#), Head::Ambiguous);
        assert_eq!(head(r#"{"type":"a""#), Head::Invalid);
        assert_eq!(head(r#"{"x":0,"type":"a"} x"#), Head::Invalid);
        assert_eq!(head(""), Head::Invalid);
        assert_eq!(head("\u{0}\u{ffff}"), Head::Invalid);
    }

    #[test]
    fn function_call_items_are_read_only_when_complete() {
        let item = json!({"type":"function_call","id":"i1","call_id":"c1","name":"f","arguments":"{}","status":"completed"});
        let read = function_call_item(&item).unwrap();
        assert_eq!(read.arguments, Some("{}"));
        assert_eq!(read.call_id, Some("c1"));
        let streaming = json!({"type":"function_call","id":"i1","call_id":"c1","name":"f","arguments":"","status":"in_progress"});
        assert_eq!(function_call_item(&streaming).unwrap().arguments, None);
        assert!(function_call_item(&json!({"type":"message"})).is_none());
        assert!(function_call_item(&json!("function_call")).is_none());
    }

    #[test]
    fn merging_keeps_browser_settings_and_replaces_function_tools() {
        let ours = vec![json!({"type":"function","name":"a","parameters":{}})];
        let mut event = json!({
            "type": "session.update",
            "session": {
                "type": "realtime",
                "instructions": "be brief",
                "tool_choice": "auto",
                "tools": [
                    {"type":"function","name":"a","description":"old"},
                    {"type":"function","name":"mine"},
                    {"type":"mcp","server_label":"x","server_url":"https://x"}
                ]
            }
        });
        let merge = merge_session_update(&mut event, &ours);
        assert_eq!(merge.dropped_tools, vec!["mine".to_owned()]);
        assert_eq!(event["session"]["instructions"], "be brief");
        assert_eq!(event["session"]["tool_choice"], "auto");
        let tools = event["session"]["tools"].as_array().unwrap();
        assert_eq!(tools.len(), 2);
        assert_eq!(tools[0], ours[0]);
        assert_eq!(tools[1]["type"], "mcp");
    }

    #[test]
    fn merging_fills_in_a_missing_session_and_leaves_transcription_alone() {
        let ours = vec![json!({"type":"function","name":"a","parameters":{}})];
        let mut bare = json!({"type":"session.update"});
        merge_session_update(&mut bare, &ours);
        assert_eq!(bare["session"]["type"], "realtime");
        assert_eq!(bare["session"]["tools"][0]["name"], "a");
        let mut tr = json!({"type":"session.update","session":{"type":"transcription"}});
        let before = tr.clone();
        merge_session_update(&mut tr, &ours);
        assert_eq!(tr, before);
        // Tools listed in a transcription session go nowhere.
        let mut tr = json!({"type":"session.update","session":{"type":"transcription","tools":[{"name":"x"}]}});
        merge_session_update(&mut tr, &ours);
        assert_eq!(tr, before);
    }

    #[test]
    fn browser_tools_without_a_type_count_as_functions() {
        let ours = vec![json!({"type":"function","name":"a","parameters":{}})];
        let mut event = json!({"type":"session.update","session":{"tools":[
            {"name":"steal","parameters":{}},
            {"type":7,"name":"odd"},
            "not a tool",
            {"type":"mcp","server_label":"x"}
        ]}});
        let merge = merge_session_update(&mut event, &ours);
        assert_eq!(merge.dropped_tools, vec!["steal", "odd", ""]);
        let tools = event["session"]["tools"].as_array().unwrap();
        assert_eq!(
            tools,
            &vec![ours[0].clone(), json!({"type":"mcp","server_label":"x"})]
        );
    }

    #[test]
    fn filler_responses_are_recognisable() {
        let v: Value = serde_json::from_str(&filler_response_create(
            "One moment.",
            "c1",
            "toolc_response_1",
        ))
        .unwrap();
        assert!(is_filler_response(&v["response"]));
        assert_eq!(v["response"]["conversation"], "none");
        assert!(!is_filler_response(&json!({"id":"r1"})));
    }
}
