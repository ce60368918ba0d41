//! Repeated calls: the same tool with the same arguments (compared canonically: key order and
//! number spelling do not matter) within the tool's `duplicate_window`. A model re-issues a
//! create-type call after the user interrupted it, a provider reports one call twice, a client
//! retries; the tool's `on_duplicate` says whether the repeat runs, gets the first call's
//! result, or is refused. One [`Seen`] per conversation (a realtime session, a chat runner, an
//! MCP session): a repeat is only ever matched against calls of the same user.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;
use toolc_core::definition::{OnDuplicate, ToolDefinition};

use crate::dispatch::CallOutcome;

/// More remembered calls than this and the oldest are forgotten first: a conversation cannot
/// grow the table without bound by calling with ever new arguments.
const MAX_REMEMBERED: usize = 1024;

/// What to do with a call.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Repeat {
    /// Not a repeat (or the tool runs every call): run it.
    First,
    /// A repeat whose first call succeeded: answer with its result, under this call's id.
    Reuse(CallOutcome),
    /// A repeat whose first call is still running: answer with its result when it comes.
    WaitFor(String),
    /// A repeat the tool refuses; the first call and whether it is still running.
    Refuse { first: String, running: bool },
}

#[derive(Debug)]
struct Entry {
    call_id: String,
    at: Instant,
    window: Duration,
    outcome: Option<CallOutcome>,
}

/// The calls of one conversation that later calls may repeat.
#[derive(Debug, Default)]
pub(crate) struct Seen {
    entries: HashMap<(String, String), Entry>,
    key_of: HashMap<String, (String, String)>,
}

impl Seen {
    /// Looks the (validated) `arguments` of a call of `def` up, and remembers the call if it is
    /// the first of its kind. Tools whose policy is `run` are not remembered.
    pub(crate) fn check(
        &mut self,
        def: &ToolDefinition,
        call_id: &str,
        arguments: &Value,
    ) -> Repeat {
        let policy = def.duplicate_policy();
        if policy == OnDuplicate::Run {
            return Repeat::First;
        }
        let canonical = canonical_value(arguments);
        let now = Instant::now();
        let key = (def.name.clone(), canonical);
        if let Some(first) = self.entries.get(&key) {
            let fresh = now.duration_since(first.at) <= first.window;
            let failed = matches!(&first.outcome, Some(o) if o.is_error());
            if fresh && !failed && first.call_id != call_id {
                return match (policy, &first.outcome) {
                    (OnDuplicate::Reuse, Some(outcome)) => Repeat::Reuse(CallOutcome {
                        call_id: call_id.to_owned(),
                        ..outcome.clone()
                    }),
                    (OnDuplicate::Reuse, None) => Repeat::WaitFor(first.call_id.clone()),
                    _ => Repeat::Refuse {
                        first: first.call_id.clone(),
                        running: first.outcome.is_none(),
                    },
                };
            }
            self.key_of.remove(&first.call_id);
        }
        if self.entries.len() >= MAX_REMEMBERED {
            self.forget_oldest(now);
        }
        self.key_of.insert(call_id.to_owned(), key.clone());
        self.entries.insert(
            key,
            Entry {
                call_id: call_id.to_owned(),
                at: now,
                window: def.duplicate_window(),
                outcome: None,
            },
        );
        Repeat::First
    }

    /// The first call `call_id` ended: later repeats get (or, failed, no longer match) this.
    pub(crate) fn finished(&mut self, call_id: &str, outcome: &CallOutcome) {
        let Some(key) = self.key_of.get(call_id) else {
            return;
        };
        if let Some(entry) = self.entries.get_mut(key) {
            if entry.call_id == call_id {
                entry.outcome = Some(outcome.clone());
            }
        }
    }

    /// Drops the expired entries, and if none had expired the oldest one.
    fn forget_oldest(&mut self, now: Instant) {
        let before = self.entries.len();
        self.entries
            .retain(|_, e| now.duration_since(e.at) <= e.window);
        if self.entries.len() == before {
            if let Some(oldest) = self
                .entries
                .iter()
                .min_by_key(|(_, e)| e.at)
                .map(|(k, _)| k.clone())
            {
                self.entries.remove(&oldest);
            }
        }
        let entries = &self.entries;
        self.key_of
            .retain(|call_id, key| entries.get(key).is_some_and(|e| e.call_id == *call_id));
    }
}

/// The arguments in one spelling: object keys sorted at every depth, numbers and strings as
/// serde_json writes them.
pub(crate) fn canonical_value(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_unstable();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        // `10`, `10.0` and `1e1` are one number.
        Value::Number(n) if n.is_f64() => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 => {
                out.push_str(&(f as i64).to_string())
            }
            _ => out.push_str(&n.to_string()),
        },
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canonical_arguments(text: &str) -> Option<String> {
        serde_json::from_str(text).ok().map(|v| canonical_value(&v))
    }

    #[test]
    fn the_same_arguments_in_any_order_are_the_same() {
        let a = canonical_arguments(r#"{"b":1,"a":{"y":[1,{"d":2,"c":3}],"x":"s"}}"#).unwrap();
        let b =
            canonical_arguments(r#" { "a" : { "x":"s","y":[1,{"c":3,"d":2}]}, "b":1 } "#).unwrap();
        assert_eq!(a, b);
        assert_eq!(a, r#"{"a":{"x":"s","y":[1,{"c":3,"d":2}]},"b":1}"#);
        assert_ne!(
            canonical_arguments(r#"{"a":[1,2]}"#),
            canonical_arguments(r#"{"a":[2,1]}"#),
            "array order is meaning"
        );
        assert_ne!(
            canonical_arguments(r#"{"a":"1"}"#),
            canonical_arguments(r#"{"a":1}"#)
        );
        assert_eq!(canonical_arguments("not json"), None);
        assert_eq!(
            canonical_arguments(r#"{"n":10}"#),
            canonical_arguments(r#"{"n":10.0}"#)
        );
        assert_eq!(
            canonical_arguments(r#"{"n":10}"#),
            canonical_arguments(r#"{"n":1e1}"#)
        );
        assert_ne!(
            canonical_arguments(r#"{"n":10.5}"#),
            canonical_arguments(r#"{"n":10}"#)
        );
    }
}
