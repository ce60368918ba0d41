//! The arguments of a call while the model is still writing them: the longest prefix of the
//! JSON text that can be closed into a value, closed (`{"text": "Hel` → `{"text":"Hel"}`), so a
//! page can render a streaming client tool before the call is complete.
//!
//! The scanner is incremental (each delta is read once) and keeps only what closing needs: the
//! stack of open containers and where the last complete member ended. It never decides whether
//! the final text is valid; the complete call is validated as every call is.

use serde_json::Value;

/// Past this many bytes of arguments no more partial values are produced (closing the prefix
/// costs its length, once per delta).
pub const MAX_STREAMED_ARGUMENTS: usize = 16 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Container {
    Object,
    Array,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    /// A value (at the top, after `[`, `,` in an array, or `:`).
    Value,
    /// A key or `}` (after `{` or `,` in an object).
    Key,
    /// `:` after a key.
    Colon,
    /// `,` or the container's end, after a complete member.
    Next,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token {
    None,
    /// Inside a string; `key` when it is an object key; `escape` after a backslash; `unicode`
    /// counts the hex digits still due after `\u`.
    String {
        key: bool,
        escape: bool,
        unicode: u8,
    },
    /// Inside a number or literal (`true`, `false`, `null`).
    Scalar,
}

/// The partial-arguments state of one streaming call.
#[derive(Clone, Debug)]
pub struct PartialArguments {
    text: String,
    stack: Vec<Container>,
    expect: Expect,
    token: Token,
    /// Where the text was last closable without cutting (after a complete value), and the
    /// open containers then.
    safe: Option<(usize, Vec<Container>)>,
    /// Where the current value string started (its opening quote), when it is a value.
    value_string_start: usize,
    /// The text no longer parses as JSON (a stray character): no more partial values.
    broken: bool,
    last: Option<Value>,
}

impl Default for PartialArguments {
    fn default() -> Self {
        PartialArguments::new()
    }
}

impl PartialArguments {
    /// The state of a call whose arguments have not started yet.
    pub fn new() -> PartialArguments {
        PartialArguments {
            text: String::new(),
            stack: Vec::new(),
            expect: Expect::Value,
            token: Token::None,
            safe: None,
            value_string_start: 0,
            broken: false,
            last: None,
        }
    }

    /// Adds a delta; returns the partial arguments when they changed (always a JSON object).
    pub fn push(&mut self, delta: &str) -> Option<Value> {
        if self.broken || self.text.len() + delta.len() > MAX_STREAMED_ARGUMENTS {
            self.broken = true;
            return None;
        }
        let start = self.text.len();
        self.text.push_str(delta);
        for (offset, c) in delta.char_indices() {
            if !self.step(start + offset, c) {
                self.broken = true;
                return None;
            }
        }
        let value = self.close()?;
        if !value.is_object() || self.last.as_ref() == Some(&value) {
            return None;
        }
        self.last = Some(value.clone());
        Some(value)
    }

    fn mark_safe(&mut self, end: usize) {
        self.safe = Some((end, self.stack.clone()));
    }

    /// A complete value ended just before `end`.
    fn value_done(&mut self, end: usize) {
        self.expect = Expect::Next;
        self.mark_safe(end);
    }

    fn step(&mut self, at: usize, c: char) -> bool {
        match self.token {
            Token::String {
                key,
                escape,
                unicode,
            } => {
                if unicode > 0 {
                    if !c.is_ascii_hexdigit() {
                        return false;
                    }
                    self.token = Token::String {
                        key,
                        escape: false,
                        unicode: unicode - 1,
                    };
                } else if escape {
                    let unicode = match c {
                        'u' => 4,
                        '"' | '\\' | '/' | 'b' | 'f' | 'n' | 'r' | 't' => 0,
                        _ => return false,
                    };
                    self.token = Token::String {
                        key,
                        escape: false,
                        unicode,
                    };
                } else if c == '\\' {
                    self.token = Token::String {
                        key,
                        escape: true,
                        unicode: 0,
                    };
                } else if c == '"' {
                    self.token = Token::None;
                    if key {
                        self.expect = Expect::Colon;
                    } else {
                        self.value_done(at + 1);
                    }
                }
                return true;
            }
            Token::Scalar => {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+') {
                    return true;
                }
                self.token = Token::None;
                self.value_done(at);
            }
            Token::None => {}
        }
        if c.is_ascii_whitespace() {
            return true;
        }
        match (self.expect, c) {
            (Expect::Value, '{') => {
                self.stack.push(Container::Object);
                self.expect = Expect::Key;
                self.mark_safe(at + 1);
            }
            (Expect::Value, '[') => {
                self.stack.push(Container::Array);
                self.expect = Expect::Value;
                self.mark_safe(at + 1);
            }
            (Expect::Value, '"') => {
                self.value_string_start = at;
                self.token = Token::String {
                    key: false,
                    escape: false,
                    unicode: 0,
                };
            }
            (Expect::Value, c) if c == '-' || c.is_ascii_alphanumeric() => {
                self.token = Token::Scalar;
            }
            (Expect::Key, '"') => {
                self.token = Token::String {
                    key: true,
                    escape: false,
                    unicode: 0,
                };
            }
            (Expect::Colon, ':') => self.expect = Expect::Value,
            (Expect::Next, ',') => {
                self.expect = match self.stack.last() {
                    Some(Container::Object) => Expect::Key,
                    Some(Container::Array) => Expect::Value,
                    None => return false,
                };
            }
            // `]` right after `[` (or `}` after `{`) closes an empty container.
            (Expect::Next | Expect::Value | Expect::Key, ']' | '}') => {
                let wanted = if c == ']' {
                    Container::Array
                } else {
                    Container::Object
                };
                let empty_ok = match self.expect {
                    Expect::Next => true,
                    Expect::Value => wanted == Container::Array,
                    _ => wanted == Container::Object,
                };
                if !empty_ok || self.stack.pop() != Some(wanted) {
                    return false;
                }
                self.value_done(at + 1);
            }
            _ => return false,
        }
        true
    }

    /// The text so far, closed into a value.
    fn close(&self) -> Option<Value> {
        let mut text;
        let stack: &[Container];
        if let Token::String {
            key: false,
            escape,
            unicode,
        } = self.token
        {
            // Inside a value string: show what is written so far, without a half escape.
            let cut = if unicode > 0 {
                // `\u` and up to three hex digits: drop them.
                self.text.len() - (6 - unicode as usize)
            } else if escape {
                self.text.len() - 1
            } else {
                self.text.len()
            };
            debug_assert!(cut > self.value_string_start);
            text = self.text[..cut].to_owned();
            text.push('"');
            stack = &self.stack;
        } else {
            let (end, open) = self.safe.as_ref()?;
            text = self.text[..*end].to_owned();
            stack = open;
        }
        for container in stack.iter().rev() {
            text.push(match container {
                Container::Object => '}',
                Container::Array => ']',
            });
        }
        serde_json::from_str(&text).ok()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Every prefix of `full`, fed one character at a time, and the partial values seen.
    fn feed(full: &str) -> Vec<Value> {
        let mut p = PartialArguments::new();
        full.chars()
            .filter_map(|c| p.push(c.encode_utf8(&mut [0; 4])))
            .collect()
    }

    #[test]
    fn strings_grow_and_members_appear_whole() {
        let seen = feed(r#"{"text": "Hi \"you\"", "n": 12, "tags": ["a", "b"]}"#);
        assert_eq!(seen.first(), Some(&json!({})));
        assert!(seen.contains(&json!({"text": "Hi "})));
        assert!(seen.contains(&json!({"text": "Hi \"you\""})));
        // A number appears once it is complete, never as a prefix of itself.
        assert!(!seen.contains(&json!({"text": "Hi \"you\"", "n": 1})));
        assert!(seen.contains(&json!({"text": "Hi \"you\"", "n": 12, "tags": ["a"]})));
        assert_eq!(
            seen.last(),
            Some(&json!({"text": "Hi \"you\"", "n": 12, "tags": ["a", "b"]}))
        );
    }

    #[test]
    fn half_escapes_are_held_back() {
        let seen = feed(r#"{"t": "a\u00e9b"}"#);
        assert!(seen.contains(&json!({"t": "a"})));
        assert!(seen.contains(&json!({"t": "aé"})));
        assert!(seen
            .iter()
            .all(|v| v["t"].as_str().is_none_or(|t| !t.contains('\\'))));
    }

    #[test]
    fn nested_and_empty_containers_close() {
        let seen = feed(r#"{"a": {"b": [], "c": {}}, "d": [[1], {"e": null}]}"#);
        assert_eq!(
            seen.last(),
            Some(&json!({"a": {"b": [], "c": {}}, "d": [[1], {"e": null}]}))
        );
        assert!(seen.contains(&json!({"a": {"b": []}})));
    }

    #[test]
    fn text_that_is_not_json_stops_the_stream_without_panicking() {
        for bad in [r#"{"a" 1}"#, "[1,,2]", "{]", "}", r#"{"a": "\x"}"#, "1 2"] {
            let mut p = PartialArguments::new();
            for c in bad.chars() {
                let _ = p.push(c.encode_utf8(&mut [0; 4]));
            }
            assert!(p.broken, "{bad}");
        }
    }

    #[test]
    fn the_stream_stops_at_the_limit() {
        let mut p = PartialArguments::new();
        assert!(p.push(r#"{"t": ""#).is_some());
        let chunk = "x".repeat(1024);
        let mut values = 0;
        for _ in 0..32 {
            values += usize::from(p.push(&chunk).is_some());
        }
        assert!(values < 16);
        assert!(p.push("y").is_none());
    }

    #[test]
    fn arbitrary_deltas_never_panic() {
        use proptest::prelude::*;
        proptest!(|(chunks in proptest::collection::vec(".{0,8}", 0..40))| {
            let mut p = PartialArguments::new();
            for chunk in &chunks {
                if let Some(v) = p.push(chunk) {
                    prop_assert!(v.is_object());
                }
            }
        });
    }
}
