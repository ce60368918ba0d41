//! Property: for any mix of server and client calls with any outcomes (success, executor error,
//! panic, invalid or malformed arguments, unknown tool, client answer, client timeout, client
//! disconnect, fire-and-forget) and any repeated ids, every provider's follow-up carries exactly
//! one result per distinct call id, in the order of the calls' first occurrence — and a provider
//! response built from the calls decodes back to them.

mod common {
    pub mod chat;
}

use std::collections::HashSet;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use common::chat::*;
use proptest::prelude::*;
use serde_json::{json, Value};
use toolc_runtime::chat::{
    Anthropic, ChatCompletions, Codec, Gemini, Provider, Responses, ToolCall, TurnRunner,
};

/// Every behaviour a call can have, as (tool name, argument text).
fn behaviour(kind: u8) -> (&'static str, &'static str) {
    match kind % 12 {
        0 => ("search", r#"{"query":"ok"}"#),
        1 => ("search", r#"{"query":"ok","limit":null}"#),
        2 => ("search", r#"{"query":""}"#),
        3 => ("search", r#"{"query":"#),
        4 => ("fail", "{}"),
        5 => ("boom", ""),
        6 => ("nope", "{}"),
        7 => ("ask", r#"{"mode":"answer"}"#),
        8 => ("ask", r#"{"mode":"hang"}"#),
        9 => ("ask", r#"{"mode":"gone"}"#),
        10 => ("ask", r#"{"mode":"panic"}"#),
        _ => ("toast", r#"{"message":"m"}"#),
    }
}

fn calls_strategy() -> impl Strategy<Value = Vec<ToolCall>> {
    // Ids from a small pool, so that duplicates are frequent.
    prop::collection::vec((0u8..10, any::<u8>()), 0..12).prop_map(|specs| {
        specs
            .into_iter()
            .map(|(id, kind)| {
                let (name, args) = behaviour(kind);
                ToolCall::new(format!("call_{id}"), name, args)
            })
            .collect()
    })
}

/// The ids the follow-up answers, in order, as each provider carries them.
fn answered_ids(provider: Provider, follow_up: &[Value]) -> Vec<String> {
    let strs = |values: Vec<&Value>| {
        values
            .into_iter()
            .map(|v| v.as_str().expect("ids are strings").to_owned())
            .collect()
    };
    match provider {
        Provider::OpenaiChat => {
            assert!(follow_up
                .iter()
                .all(|m| m["role"] == "tool" && m["content"].is_string()));
            strs(follow_up.iter().map(|m| &m["tool_call_id"]).collect())
        }
        Provider::OpenaiResponses => {
            assert!(follow_up
                .iter()
                .all(|m| m["type"] == "function_call_output" && m["output"].is_string()));
            strs(follow_up.iter().map(|m| &m["call_id"]).collect())
        }
        Provider::Anthropic => {
            assert!(follow_up.len() <= 1, "at most one user message");
            strs(
                follow_up
                    .iter()
                    .flat_map(|m| m["content"].as_array().unwrap())
                    .map(|b| &b["tool_use_id"])
                    .collect(),
            )
        }
        Provider::Gemini => {
            assert!(follow_up.len() <= 1, "at most one content");
            strs(
                follow_up
                    .iter()
                    .flat_map(|m| m["parts"].as_array().unwrap())
                    .map(|p| {
                        assert!(p["functionResponse"]["response"].is_object());
                        &p["functionResponse"]["id"]
                    })
                    .collect(),
            )
        }
        other => unreachable!("{other:?} has no chat codec"),
    }
}

/// A response of `provider` that makes `calls`.
fn response(provider: Provider, calls: &[ToolCall]) -> Value {
    match provider {
        Provider::OpenaiChat => json!({ "choices": [{ "index": 0, "message": {
            "role": "assistant", "content": null,
            "tool_calls": calls.iter().map(|c| json!({ "id": c.call_id, "type": "function",
                "function": { "name": c.name, "arguments": c.arguments } })).collect::<Vec<_>>()
        } }] }),
        Provider::OpenaiResponses => json!({ "output": calls.iter().map(|c| json!({
            "type": "function_call", "id": format!("fc_{}", c.call_id), "call_id": c.call_id,
            "name": c.name, "arguments": c.arguments })).collect::<Vec<_>>() }),
        // These two carry arguments as objects: malformed text cannot be expressed there.
        Provider::Anthropic => json!({ "content": calls.iter().map(|c| json!({
            "type": "tool_use", "id": c.call_id, "name": c.name,
            "input": object_args(&c.arguments) })).collect::<Vec<_>>() }),
        Provider::Gemini => json!({ "candidates": [{ "content": { "role": "model",
            "parts": calls.iter().map(|c| json!({ "functionCall": { "id": c.call_id,
                "name": c.name, "args": object_args(&c.arguments) } })).collect::<Vec<_>>() } }] }),
        other => unreachable!("{other:?} has no chat codec"),
    }
}

fn object_args(text: &str) -> Value {
    match serde_json::from_str::<Value>(text) {
        Ok(v @ Value::Object(_)) => v,
        _ => json!({}),
    }
}

fn first_occurrences(calls: &[ToolCall]) -> Vec<String> {
    let mut seen = HashSet::new();
    calls
        .iter()
        .filter(|c| seen.insert(c.call_id.clone()))
        .map(|c| c.call_id.clone())
        .collect()
}

fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn one_result_per_call_id_in_order(calls in calls_strategy()) {
        let rt = paused_runtime();
        let runner = TurnRunner::new(registry(Arc::default()))
            .with_client(scripted_client(Arc::new(AtomicUsize::new(0))));
        let expected = first_occurrences(&calls);
        let codecs: [&dyn Codec; 4] = [&ChatCompletions, &Responses, &Anthropic, &Gemini];
        for codec in codecs {
            let body = response(codec.provider(), &calls);
            let decoded = codec.decode(&body).unwrap();
            prop_assert_eq!(
                decoded.iter().map(|c| (&c.call_id, &c.name)).collect::<Vec<_>>(),
                calls.iter().map(|c| (&c.call_id, &c.name)).collect::<Vec<_>>()
            );
            let outcome = rt.block_on(runner.run(&decoded));
            prop_assert_eq!(outcome.results.len() + outcome.duplicates.len(), calls.len());
            let follow_up = outcome.encode(codec).unwrap();
            prop_assert_eq!(answered_ids(codec.provider(), &follow_up), expected.clone());
            // Every failure is marked as one where the provider can say so.
            if codec.provider() == Provider::Anthropic {
                for (block, result) in follow_up.iter()
                    .flat_map(|m| m["content"].as_array().unwrap())
                    .zip(&outcome.results)
                {
                    prop_assert_eq!(block.get("is_error").is_some(), result.is_error());
                }
            }
        }
    }

    /// Gemini without ids: every call is answered, by position, and no made-up id is sent.
    #[test]
    fn gemini_without_ids_answers_every_call(kinds in prop::collection::vec(any::<u8>(), 0..10)) {
        let rt = paused_runtime();
        let runner = TurnRunner::new(registry(Arc::default()))
            .with_client(scripted_client(Arc::new(AtomicUsize::new(0))));
        let calls: Vec<(&str, &str)> = kinds.iter().map(|&k| behaviour(k)).collect();
        let body = json!({ "candidates": [{ "content": { "parts": calls.iter().map(|(n, a)|
            json!({ "functionCall": { "name": n, "args": object_args(a) } })).collect::<Vec<_>>() } }] });
        let decoded = Gemini.decode(&body).unwrap();
        let follow_up = rt.block_on(runner.run(&decoded)).encode(&Gemini).unwrap();
        let parts: Vec<&Value> = follow_up.iter().flat_map(|m| m["parts"].as_array().unwrap()).collect();
        prop_assert_eq!(parts.len(), calls.len());
        for (part, (name, _)) in parts.iter().zip(&calls) {
            prop_assert_eq!(&part["functionResponse"]["name"], name);
            prop_assert!(part["functionResponse"].get("id").is_none());
        }
    }
}
