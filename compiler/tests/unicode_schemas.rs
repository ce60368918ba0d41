//! Arbitrary Unicode in every string of a schema — property names, `$defs` names, `$ref`s,
//! `pattern`, `format`, `enum` values, descriptions — through the checks and every emitter:
//! never a panic, and the diagnostics point inside the file.

use proptest::prelude::*;
use serde_json::{json, Value};
use toolc::emit::{self, Kind};
use toolc::Session;

const SEED: &str = include_str!("../../manifests/commerce.tools.yaml");

/// The seed's tools as JSON (JSON is YAML, so a mutated copy is still a manifest).
fn seed_tools() -> Vec<Value> {
    let mut session = Session::new();
    session.add_manifest("seed.tools.yaml", SEED.as_bytes());
    let ir = session.check().expect("the seed manifest is valid");
    ir.tools
        .iter()
        .map(|t| {
            let mut tool = json!({
                "name": t.def.name,
                "description": t.def.description,
                "location": if t.def.location == toolc::Location::Server { "server" } else { "client" },
                "parameters": t.def.parameters,
            });
            if let Some(returns) = &t.def.returns {
                tool["returns"] = returns.clone();
            }
            tool
        })
        .collect()
}

/// Replaces the `index`-th string (keys and values, in document order, counted modulo how many
/// there are) of `value` by `with`.
fn replace_string(value: &mut Value, index: usize, with: &str) {
    let total = count_strings(value);
    if total == 0 {
        return;
    }
    let mut n = index % total;
    replace_nth(value, &mut n, with);
}

fn count_strings(value: &Value) -> usize {
    match value {
        Value::String(_) => 1,
        Value::Array(items) => items.iter().map(count_strings).sum(),
        Value::Object(map) => map.iter().map(|(_, v)| 1 + count_strings(v)).sum(),
        _ => 0,
    }
}

/// `true` once replaced.
fn replace_nth(value: &mut Value, n: &mut usize, with: &str) -> bool {
    match value {
        Value::String(s) => {
            if *n == 0 {
                *s = with.to_owned();
                return true;
            }
            *n -= 1;
            false
        }
        Value::Array(items) => items.iter_mut().any(|v| replace_nth(v, n, with)),
        Value::Object(map) => {
            let keys: Vec<String> = map.keys().cloned().collect();
            for key in keys {
                if *n == 0 {
                    let v = map.remove(&key).unwrap_or(Value::Null);
                    map.insert(with.to_owned(), v);
                    return true;
                }
                *n -= 1;
                if let Some(v) = map.get_mut(&key) {
                    if replace_nth(v, n, with) {
                        return true;
                    }
                }
            }
            false
        }
        _ => false,
    }
}

fn nasty() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "\\PC{0,12}",
        Just("#%aé".to_owned()),
        Just("#/$defs/%".to_owned()),
        Just("#/$defs/a~2b".to_owned()),
        Just("#/properties/%C3%A9".to_owned()),
        Just("~/~0~1".to_owned()),
        Just("(?<x>".to_owned()),
        Just("\u{0}\u{7f}\u{200b}\u{feff}".to_owned()),
        Just("𝔘𝔫𝔦𝔠𝔬𝔡𝔢 👩‍👩‍👧".to_owned()),
        Just("\u{d7ff}\u{e000}\u{10ffff}".to_owned()),
    ]
}

fn run(tools: &[Value]) {
    let manifest = json!({"version": 1, "tools": tools}).to_string();
    let mut session = Session::new();
    session.add_manifest("unicode.tools.yaml", manifest.as_bytes());
    let ir = session.check();
    for d in session.diagnostics.iter() {
        if let Some(label) = &d.primary {
            let text = &session.sources.get(label.span.file).text;
            assert!(
                label.span.end <= text.len(),
                "{} points past the end",
                d.code
            );
            assert!(
                text.is_char_boundary(label.span.start),
                "{} splits a character",
                d.code
            );
        }
    }
    let _ = session.render(false);
    if let Some(ir) = ir {
        let outputs = emit::emit(
            &ir,
            &Kind::ALL,
            &emit::Config::default(),
            &mut session.diagnostics,
        );
        assert!(outputs.contains_key("tools.rs") && outputs.contains_key("tools.ts"));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_unicode_in_any_schema_string_never_panics(
        edits in proptest::collection::vec((any::<usize>(), any::<usize>(), nasty()), 1..6)
    ) {
        let mut tools = seed_tools();
        for (tool, index, with) in &edits {
            let n = tools.len();
            let target = &mut tools[tool % n];
            let field = if index % 3 == 0 && target.get("returns").is_some() { "returns" } else { "parameters" };
            replace_string(&mut target[field], *index, with);
        }
        run(&tools);
    }
}

/// Every string of every schema replaced in turn by each fixed nasty value: the exhaustive
/// small version of the property above.
#[test]
fn each_schema_string_replaced_by_each_nasty_value() {
    let fixed = ["#%aé", "#/$defs/%", "%", "#/%ZZ", "~", "é", "\u{0}", "(("];
    let seed = seed_tools();
    for (t, tool) in seed.iter().enumerate() {
        let strings = count_strings(&tool["parameters"]);
        for index in 0..strings {
            for with in fixed {
                let mut tools = seed.clone();
                replace_string(&mut tools[t]["parameters"], index, with);
                run(&tools);
            }
        }
    }
}
