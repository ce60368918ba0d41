//! Repeated calls: the same tool with the same arguments (compared canonically: key order and
//! number spelling do not matter) within the tool's `duplicate_window`. A model re-issues a
//! create-type call after the user interrupted it, a provider reports one call twice, a client
//! retries; the tool's `on_duplicate` says whether the repeat runs, gets the first call's
//! result, or is refused. One [`Seen`] per conversation (a realtime session, a chat runner, an
//! MCP session): a repeat is only ever matched against calls of the same user.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;
use toolc_core::definition::{OnDuplicate, ToolDefinition};

use crate::dispatch::CallOutcome;

/// More remembered calls than this and the oldest are forgotten first: a conversation cannot
/// grow the table without bound by calling with ever new arguments.
const MAX_REMEMBERED: usize = 1024;

/// A first call's result longer than this is not kept for its repeats (which then run): 1,024
/// remembered calls must not hold gigabytes of results, nor a shared store a hostile result.
pub(super) const MAX_KEPT_RESULT: usize = 256 * 1024;

/// What to do with a call.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Repeat {
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
    state: State,
}

#[derive(Debug)]
enum State {
    Running,
    /// Succeeded; the result, unless it was too long to keep.
    Succeeded(Option<CallOutcome>),
    /// Failed or was cancelled: not a first call for anything.
    Failed,
}

/// A call's tool and arguments: the tool's name, and a keyed hash of the canonical arguments
/// (the arguments themselves can be large; the key is this table's own, so a hostile model
/// cannot aim two different argument sets at one hash).
type Key = (String, u64);

/// The calls of one conversation that later calls may repeat.
#[derive(Debug, Default)]
pub(super) struct Seen {
    entries: HashMap<Key, Entry>,
    key_of: HashMap<String, Key>,
    hasher: std::collections::hash_map::RandomState,
}

impl Seen {
    /// Looks the (validated) arguments of a call of `def` up, and remembers the call if it is
    /// the first of its kind. Tools whose policy is `run` are not remembered.
    /// `canonical` is [`canonical_value`] of the arguments.
    pub(super) fn check(&mut self, def: &ToolDefinition, call_id: &str, canonical: &str) -> Repeat {
        let policy = def.duplicate_policy();
        if policy == OnDuplicate::Run {
            return Repeat::First;
        }
        let key = (def.name.clone(), self.hasher.hash_one(canonical));
        let now = Instant::now();
        if let Some(first) = self.entries.get(&key) {
            let fresh = now.duration_since(first.at) <= first.window;
            if fresh && first.call_id != call_id {
                let answer = match (policy, &first.state) {
                    (_, State::Failed) | (OnDuplicate::Reuse, State::Succeeded(None)) => None,
                    (OnDuplicate::Reuse, State::Succeeded(Some(outcome))) => {
                        Some(Repeat::Reuse(CallOutcome {
                            call_id: call_id.to_owned(),
                            ..outcome.clone()
                        }))
                    }
                    (OnDuplicate::Reuse, State::Running) => {
                        Some(Repeat::WaitFor(first.call_id.clone()))
                    }
                    _ => Some(Repeat::Refuse {
                        first: first.call_id.clone(),
                        running: matches!(first.state, State::Running),
                    }),
                };
                if let Some(answer) = answer {
                    return answer;
                }
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
                state: State::Running,
            },
        );
        Repeat::First
    }

    /// Whether `call_id` is a first call whose result later repeats may get (so its outcome is
    /// worth handing to [`Seen::finished`]).
    pub(super) fn remembers(&self, call_id: &str) -> bool {
        self.key_of.contains_key(call_id)
    }

    /// The first call `call_id` ended: later repeats get (or, failed, no longer match) this.
    pub(super) fn finished(&mut self, call_id: &str, outcome: &CallOutcome) {
        let Some(key) = self.key_of.get(call_id) else {
            return;
        };
        if let Some(entry) = self.entries.get_mut(key) {
            if entry.call_id == call_id {
                entry.state = if outcome.is_error() {
                    State::Failed
                } else if outcome.output.len() > MAX_KEPT_RESULT {
                    State::Succeeded(None)
                } else {
                    State::Succeeded(Some(outcome.clone()))
                };
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
pub(super) fn canonical_value(value: &Value) -> String {
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

    fn reuse_tool() -> ToolDefinition {
        let manifest = "version: 1\ntools:\n  - name: create\n    description: Create.\n    location: server\n    annotations: { idempotent: false }\n";
        let def = crate::definitions_from_str("d.tools.yaml", manifest)
            .unwrap()
            .remove(0);
        assert_eq!(def.duplicate_policy(), OnDuplicate::Reuse);
        def
    }

    #[test]
    fn a_result_too_long_to_keep_lets_the_repeat_run_and_a_failed_first_is_no_first() {
        let def = reuse_tool();
        let args = serde_json::json!({"a": 1});
        let mut seen = Seen::default();
        assert_eq!(
            seen.check(&def, "c1", &canonical_value(&args)),
            Repeat::First
        );
        assert!(seen.remembers("c1"));
        let long = CallOutcome::ok("c1", "x".repeat(MAX_KEPT_RESULT + 1));
        seen.finished("c1", &long);
        assert_eq!(
            seen.check(&def, "c2", &canonical_value(&args)),
            Repeat::First,
            "nothing kept to reuse"
        );
        seen.finished("c2", &CallOutcome::ok("c2", "{}".into()));
        assert!(
            matches!(seen.check(&def, "c3", &canonical_value(&args)), Repeat::Reuse(o) if o.call_id == "c3")
        );
        let other = serde_json::json!({"a": 2});
        assert_eq!(
            seen.check(&def, "d1", &canonical_value(&other)),
            Repeat::First
        );
        let error = crate::CallError::duplicate("create", "x", false);
        seen.finished("d1", &CallOutcome::failed("d1", error));
        assert_eq!(
            seen.check(&def, "d2", &canonical_value(&other)),
            Repeat::First,
            "a failed first runs again"
        );
    }

    #[test]
    fn the_table_stays_bounded_under_ever_new_arguments() {
        let def = reuse_tool();
        let mut seen = Seen::default();
        for i in 0..5 * MAX_REMEMBERED {
            let id = format!("c{i}");
            assert_eq!(
                seen.check(&def, &id, &canonical_value(&serde_json::json!({ "n": i }))),
                Repeat::First
            );
        }
        assert!(seen.entries.len() <= MAX_REMEMBERED);
        assert!(seen.key_of.len() <= MAX_REMEMBERED);
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
