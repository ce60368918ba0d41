//! Both spellings of a Live field. Google's JSON reader is proto3 JSON: it takes a field by its
//! lowerCamel JSON name (`functionCall`) or by its proto name (`function_call`), and so do its
//! SDKs. Whatever the relay reads, from the model or from the page, it reads the same way, or a
//! page could say with `function_call` what the guard refuses as `functionCall`.

use std::borrow::Cow;

use serde_json::{Map, Value};

/// The proto (snake_case) name of a lowerCamel JSON name: `toolCallCancellation` →
/// `tool_call_cancellation`.
pub(crate) fn snake(camel: &str) -> String {
    let mut out = String::with_capacity(camel.len() + 4);
    for c in camel.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The lowerCamel JSON name of a member as written: `tool_call` → `toolCall`; a name already in
/// lowerCamel is returned as it is. This is how proto3 JSON derives a JSON name from a proto
/// name, so it maps each proto spelling onto the one JSON name.
pub(crate) fn camel(name: &str) -> Cow<'_, str> {
    if !name.contains('_') {
        return Cow::Borrowed(name);
    }
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// An object that names one field twice, once in each spelling: Google's reader takes one of
/// them and the relay cannot know which, so the message is not read at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TwoSpellings(pub(crate) String);

/// The field `camel` of `object` in either spelling, with the key it was found under.
pub(crate) fn field<'a>(
    object: &'a Map<String, Value>,
    camel: &str,
) -> Result<Option<(&'a str, &'a Value)>, TwoSpellings> {
    let snake = snake(camel);
    let first = object.get_key_value(camel);
    let second = if snake == camel {
        None
    } else {
        object.get_key_value(snake.as_str())
    };
    match (first, second) {
        (Some(_), Some(_)) => Err(TwoSpellings(camel.to_owned())),
        (Some((k, v)), None) | (None, Some((k, v))) => Ok(Some((k.as_str(), v))),
        (None, None) => Ok(None),
    }
}

/// Like [`field`], the value only.
pub(crate) fn value<'a>(
    object: &'a Map<String, Value>,
    camel: &str,
) -> Result<Option<&'a Value>, TwoSpellings> {
    field(object, camel).map(|f| f.map(|(_, v)| v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_proto_name_maps_onto_its_json_name_and_back() {
        for (camel_name, snake_name) in [
            ("toolCall", "tool_call"),
            ("toolCallCancellation", "tool_call_cancellation"),
            ("functionResponse", "function_response"),
            ("setupComplete", "setup_complete"),
            ("ids", "ids"),
        ] {
            assert_eq!(snake(camel_name), snake_name);
            assert_eq!(camel(snake_name), camel_name);
            assert_eq!(camel(camel_name), camel_name);
        }
    }

    #[test]
    fn a_field_is_found_in_either_spelling_and_both_at_once_is_refused() {
        let camel_only = json!({"functionCall": 1});
        let snake_only = json!({"function_call": 2});
        let both = json!({"functionCall": 1, "function_call": 2});
        let get = |v: &Value| value(v.as_object().unwrap(), "functionCall").map(|f| f.cloned());
        assert_eq!(get(&camel_only), Ok(Some(json!(1))));
        assert_eq!(get(&snake_only), Ok(Some(json!(2))));
        assert_eq!(get(&both), Err(TwoSpellings("functionCall".into())));
        assert_eq!(get(&json!({"other": 1})), Ok(None));
    }
}
