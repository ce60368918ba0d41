//! Anthropic Messages: `tool_use` blocks (complete and streamed as `input_json_delta`) in, ONE
//! `user` message of `tool_result` blocks out.

mod common {
    pub mod chat;
}

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use common::chat::*;
use serde_json::{json, Value};
use toolc_runtime::chat::{Anthropic, AnthropicStream, Codec, ToolCall, TurnRunner};

fn runner() -> TurnRunner {
    TurnRunner::new(registry(Arc::default()))
        .with_client(scripted_client(Arc::new(AtomicUsize::new(0))))
}

fn message() -> Value {
    json!({
        "id": "msg_01Aq9w938a90dw8q",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [
            { "type": "text", "text": "I'll look that up and highlight it for you." },
            { "type": "tool_use", "id": "toolu_01A", "name": "search",
              "input": { "query": "refunds", "limit": 3 } },
            { "type": "tool_use", "id": "toolu_01B", "name": "ask", "input": { "mode": "gone" } },
            { "type": "tool_use", "id": "toolu_01C", "name": "lookup_order", "input": {} },
            { "type": "tool_use", "id": "toolu_01D", "name": "search", "input": { "limit": 0 } },
            { "type": "tool_use", "id": "toolu_01E", "name": "toast", "input": { "message": "hi" } }
        ],
        "stop_reason": "tool_use",
        "stop_sequence": null,
        "usage": { "input_tokens": 512, "output_tokens": 94 }
    })
}

#[tokio::test]
async fn one_user_message_with_tool_results_in_tool_use_order() {
    let body = message();
    let follow_up = runner().follow_up(&Anthropic, &body).await.unwrap();
    assert_eq!(follow_up.len(), 1, "exactly one user message");
    let message = &follow_up[0];
    assert_eq!(message["role"], "user");
    let blocks = message["content"].as_array().unwrap();
    let ids: Vec<&str> = blocks
        .iter()
        .map(|b| b["tool_use_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "toolu_01A",
            "toolu_01B",
            "toolu_01C",
            "toolu_01D",
            "toolu_01E"
        ]
    );
    for block in blocks {
        assert_eq!(block["type"], "tool_result");
        assert!(block["content"].is_string());
        let keys: Vec<&str> = block
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        for key in keys {
            assert!(
                ["type", "tool_use_id", "content", "is_error"].contains(&key),
                "unexpected key {key}"
            );
        }
    }
    let errors: Vec<bool> = blocks.iter().map(|b| b.get("is_error").is_some()).collect();
    assert_eq!(errors, [false, true, true, true, false]);
    assert!(blocks
        .iter()
        .all(|b| b.get("is_error") != Some(&json!(false))));
    assert_eq!(
        blocks[0]["content"],
        json!({ "received": { "query": "refunds", "limit": 3 } }).to_string()
    );
    let kind = |i: usize| error_kind(blocks[i]["content"].as_str().unwrap());
    assert_eq!(kind(1).as_deref(), Some("tool_failed")); // client disconnected
    assert!(blocks[1]["content"]
        .as_str()
        .unwrap()
        .contains("client_disconnected"));
    assert_eq!(kind(2).as_deref(), Some("unknown_tool"));
    assert_eq!(kind(3).as_deref(), Some("invalid_arguments"));

    let replay = Anthropic.assistant_turn(&body);
    assert_eq!(
        replay,
        vec![json!({ "role": "assistant", "content": body["content"] })]
    );
}

#[tokio::test]
async fn no_tool_use_means_no_follow_up() {
    let body = json!({ "id": "msg_1", "type": "message", "role": "assistant",
        "content": [{ "type": "text", "text": "Done." }], "stop_reason": "end_turn" });
    assert!(runner()
        .follow_up(&Anthropic, &body)
        .await
        .unwrap()
        .is_empty());
}

#[test]
fn malformed_messages_are_decode_errors() {
    for (body, pointer) in [
        (json!("text"), ""),
        (json!({ "content": "text" }), "/content"),
        (
            json!({ "content": [{ "type": "tool_use", "name": "a", "input": {} }] }),
            "/content/0/id",
        ),
        (json!({ "content": [7] }), "/content/0"),
    ] {
        assert_eq!(Anthropic.decode(&body).unwrap_err().pointer, pointer);
    }
}

/// The SSE `data:` payloads of a streamed message with a text block and two `tool_use` blocks,
/// the second with its input split at `cuts`.
fn events(input: &str, cuts: &[usize]) -> Vec<Value> {
    let mut events = vec![
        json!({ "type": "message_start", "message": { "id": "msg_s", "type": "message",
            "role": "assistant", "content": [], "model": "claude-sonnet-4-5",
            "stop_reason": null, "stop_sequence": null,
            "usage": { "input_tokens": 10, "output_tokens": 1 } } }),
        json!({ "type": "content_block_start", "index": 0,
            "content_block": { "type": "text", "text": "" } }),
        json!({ "type": "content_block_delta", "index": 0,
            "delta": { "type": "text_delta", "text": "Checking" } }),
        json!({ "type": "content_block_delta", "index": 0,
            "delta": { "type": "text_delta", "text": " now." } }),
        json!({ "type": "content_block_stop", "index": 0 }),
        json!({ "type": "ping" }),
        json!({ "type": "content_block_start", "index": 1, "content_block": {
            "type": "tool_use", "id": "toolu_S1", "name": "toast", "input": {} } }),
        json!({ "type": "content_block_delta", "index": 1,
            "delta": { "type": "input_json_delta", "partial_json": "" } }),
        json!({ "type": "content_block_delta", "index": 1,
            "delta": { "type": "input_json_delta", "partial_json": "{\"message\": \"ok\"}" } }),
        json!({ "type": "content_block_stop", "index": 1 }),
        json!({ "type": "content_block_start", "index": 2, "content_block": {
            "type": "tool_use", "id": "toolu_S2", "name": "search", "input": {} } }),
    ];
    for piece in split_at_chars(input, cuts) {
        events.push(json!({ "type": "content_block_delta", "index": 2,
            "delta": { "type": "input_json_delta", "partial_json": piece } }));
    }
    events.extend([
        json!({ "type": "content_block_stop", "index": 2 }),
        json!({ "type": "message_delta", "delta": { "stop_reason": "tool_use", "stop_sequence": null },
            "usage": { "output_tokens": 89 } }),
        json!({ "type": "message_stop" }),
    ]);
    events
}

#[test]
fn streamed_input_json_is_assembled_per_block_wherever_it_is_split() {
    let input = r#"{"query": "caf\u00e9 \"x\" ü", "limit": 5}"#;
    let len = input.chars().count();
    for a in 0..=len {
        for b in [a, (a + 1).min(len), (a + 7).min(len)] {
            let mut stream = AnthropicStream::new();
            for event in events(input, &[a, b]) {
                stream.push_str(&event.to_string()).unwrap();
            }
            assert_eq!(
                stream.calls(),
                vec![
                    ToolCall::new("toolu_S1", "toast", r#"{"message": "ok"}"#),
                    ToolCall::new("toolu_S2", "search", input),
                ],
                "cuts {a} {b}"
            );
        }
    }
}

#[test]
fn stream_replay_rebuilds_text_and_tool_use_blocks() {
    let mut stream = AnthropicStream::new();
    for event in events(r#"{"query": "x"}"#, &[3]) {
        stream.push(&event).unwrap();
    }
    assert_eq!(
        stream.assistant_message(),
        json!({ "role": "assistant", "content": [
            { "type": "text", "text": "Checking now." },
            { "type": "tool_use", "id": "toolu_S1", "name": "toast", "input": { "message": "ok" } },
            { "type": "tool_use", "id": "toolu_S2", "name": "search", "input": { "query": "x" } }
        ] })
    );
}

#[tokio::test]
async fn a_tool_use_with_no_input_deltas_and_one_with_broken_json() {
    let mut stream = AnthropicStream::new();
    for event in [
        json!({ "type": "content_block_start", "index": 0, "content_block": {
            "type": "tool_use", "id": "toolu_E", "name": "fail", "input": {} } }),
        json!({ "type": "content_block_stop", "index": 0 }),
        json!({ "type": "content_block_start", "index": 1, "content_block": {
            "type": "tool_use", "id": "toolu_F", "name": "search", "input": {} } }),
        json!({ "type": "content_block_delta", "index": 1,
            "delta": { "type": "input_json_delta", "partial_json": "{\"query\": \"tru" } }),
    ] {
        stream.push(&event).unwrap();
    }
    let calls = stream.calls();
    assert_eq!(calls[0].arguments, "{}");
    let outcome = runner().run(&calls).await;
    let follow_up = outcome.encode(&Anthropic).unwrap();
    let blocks = follow_up[0]["content"].as_array().unwrap();
    assert_eq!(
        error_kind(blocks[0]["content"].as_str().unwrap()).as_deref(),
        Some("tool_failed")
    );
    assert_eq!(
        error_kind(blocks[1]["content"].as_str().unwrap()).as_deref(),
        Some("invalid_json")
    );
    // The replay must carry an object input even for the broken call.
    assert_eq!(stream.assistant_message()["content"][1]["input"], json!({}));
}

#[test]
fn a_delta_for_a_block_that_never_started_is_an_error() {
    let mut stream = AnthropicStream::new();
    let err = stream
        .push(&json!({ "type": "content_block_delta", "index": 4,
            "delta": { "type": "input_json_delta", "partial_json": "{}" } }))
        .unwrap_err();
    assert!(err.message.contains("block 4"), "{err}");
    assert!(stream.push_str("event: ping").is_err());
}
