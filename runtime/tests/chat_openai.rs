//! OpenAI Chat Completions and Responses: decoding real-shaped responses and streams, running
//! the turn, and validating every emitted message against the official schemas.

mod common {
    pub mod chat;
}

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use common::chat::*;
use serde_json::{json, Value};
use toolc_runtime::chat::{
    ChatCompletions, ChatCompletionsStream, Codec, Responses, ResponsesStream, ToolCall, TurnRunner,
};

fn runner() -> TurnRunner {
    TurnRunner::new(registry(Arc::default()))
        .with_client(scripted_client(Arc::new(AtomicUsize::new(0))))
}

/// A `chat.completion` as the API returns it when the model makes parallel calls: a server
/// call, a client call, a call with malformed argument JSON, a fire-and-forget call and a call
/// of a tool that does not exist.
fn chat_completion() -> Value {
    json!({
        "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
        "object": "chat.completion",
        "created": 1741569952,
        "model": "gpt-4.1-2025-04-14",
        "choices": [{
            "index": 0,
            "message": {
                "role": "assistant",
                "content": null,
                "tool_calls": [
                    { "id": "call_a1", "type": "function",
                      "function": { "name": "search", "arguments": "{\"query\":\"refund policy\",\"limit\":null}" } },
                    { "id": "call_b2", "type": "function",
                      "function": { "name": "ask", "arguments": "{\"mode\":\"answer\"}" } },
                    { "id": "call_c3", "type": "function",
                      "function": { "name": "search", "arguments": "{\"query\": \"refund" } },
                    { "id": "call_d4", "type": "function",
                      "function": { "name": "toast", "arguments": "{\"message\":\"Done\"}" } },
                    { "id": "call_e5", "type": "function",
                      "function": { "name": "serch", "arguments": "{}" } }
                ],
                "refusal": null,
                "annotations": []
            },
            "logprobs": null,
            "finish_reason": "tool_calls"
        }],
        "usage": { "prompt_tokens": 82, "completion_tokens": 17, "total_tokens": 99 }
    })
}

#[tokio::test]
async fn chat_completions_turn_validates_against_the_spec() {
    let body = chat_completion();
    let response_schema = openai_validator("ChatCompletionResponseMessage");
    assert_valid(
        &response_schema,
        "ChatCompletionResponseMessage",
        &body["choices"][0]["message"],
    );

    let calls = ChatCompletions.decode(&body).unwrap();
    let ids: Vec<&str> = calls.iter().map(|c| c.call_id.as_str()).collect();
    assert_eq!(ids, ["call_a1", "call_b2", "call_c3", "call_d4", "call_e5"]);
    assert_eq!(calls[2].arguments, "{\"query\": \"refund");

    let follow_up = runner().follow_up(&ChatCompletions, &body).await.unwrap();
    assert_eq!(follow_up.len(), 5);
    let tool_message = openai_validator("ChatCompletionRequestToolMessage");
    for (message, id) in follow_up.iter().zip(&ids) {
        assert_valid(&tool_message, "ChatCompletionRequestToolMessage", message);
        assert_eq!(message["role"], "tool");
        assert_eq!(message["tool_call_id"], *id);
    }
    let content = |i: usize| follow_up[i]["content"].as_str().unwrap().to_owned();
    // Strict mode's null for the optional `limit` never reached the executor.
    assert_eq!(
        serde_json::from_str::<Value>(&content(0)).unwrap(),
        json!({ "received": { "query": "refund policy" } })
    );
    assert_eq!(content(1), r#"{"answered":"call_b2"}"#);
    assert_eq!(error_kind(&content(2)).as_deref(), Some("invalid_json"));
    assert!(content(3).contains("\"sent\""), "{}", content(3));
    assert_eq!(error_kind(&content(4)).as_deref(), Some("unknown_tool"));
    assert!(
        content(4).contains("Did you mean `search`?"),
        "{}",
        content(4)
    );

    // The assistant message to replay is a valid request message too.
    let replay = ChatCompletions.assistant_turn(&body);
    assert_eq!(replay.len(), 1);
    assert_valid(
        &openai_validator("ChatCompletionRequestAssistantMessage"),
        "ChatCompletionRequestAssistantMessage",
        &replay[0],
    );
}

#[test]
fn the_schema_validation_can_fail() {
    let tool_message = openai_validator("ChatCompletionRequestToolMessage");
    for bad in [
        json!({ "role": "tool", "content": "x" }),
        json!({ "role": "tool", "tool_call_id": "c", "content": 42 }),
        json!({ "role": "assistant", "tool_call_id": "c", "content": "x" }),
        json!({ "role": "tool", "tool_call_id": "c", "content": [] }),
    ] {
        assert!(
            !openai_errors(&tool_message, &bad).is_empty(),
            "accepted {bad}"
        );
    }
    let output_item = openai_validator("FunctionCallOutputItemParam");
    for bad in [
        json!({ "type": "function_call_output", "call_id": "c" }),
        json!({ "type": "function_call_output", "call_id": "x".repeat(65), "output": "{}" }),
        json!({ "type": "function_call", "call_id": "c", "output": "{}" }),
        json!({ "type": "function_call_output", "call_id": "c", "output": { "a": 1 } }),
    ] {
        assert!(
            !openai_errors(&output_item, &bad).is_empty(),
            "accepted {bad}"
        );
    }
}

#[tokio::test]
async fn a_response_without_tool_calls_needs_no_follow_up() {
    let body = json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{ "index": 0, "finish_reason": "stop",
                      "message": { "role": "assistant", "content": "Hello!", "refusal": null } }]
    });
    assert!(runner()
        .follow_up(&ChatCompletions, &body)
        .await
        .unwrap()
        .is_empty());
}

#[test]
fn malformed_chat_responses_are_decode_errors_not_panics() {
    for (body, pointer) in [
        (json!([]), ""),
        (json!({ "choices": {} }), "/choices"),
        (
            json!({ "choices": [{ "message": { "tool_calls": [{ "type": "function", "function": { "name": "a" } }] } }] }),
            "/choices/0/message/tool_calls/0/id",
        ),
        (
            json!({ "choices": [{ "message": { "tool_calls": [{ "id": "c", "function": { "name": 3 } }] } }] }),
            "/choices/0/message/tool_calls/0/function/name",
        ),
        (json!({ "object": "list" }), ""),
    ] {
        let err = ChatCompletions.decode(&body).unwrap_err();
        assert_eq!(err.pointer, pointer, "{body}: {err}");
    }
}

/// Two calls whose argument text is split into fragments at `cuts`, streamed as the API
/// streams them: the first chunk of a call carries `id`, `type`, `name` and empty arguments,
/// later chunks only `index` and an argument fragment; the two calls' chunks interleave.
fn chat_chunks(args: [&str; 2], cuts: &[usize]) -> Vec<Value> {
    let chunk = |delta: Value, finish: Value| {
        json!({
            "id": "chatcmpl-stream", "object": "chat.completion.chunk", "created": 1741569952,
            "model": "gpt-4.1-2025-04-14", "system_fingerprint": "fp_1",
            "choices": [{ "index": 0, "delta": delta, "logprobs": null, "finish_reason": finish }]
        })
    };
    let mut chunks = vec![chunk(
        json!({ "role": "assistant", "content": null, "refusal": null }),
        Value::Null,
    )];
    let names = ["search", "ask"];
    let ids = ["call_s1", "call_s2"];
    for i in 0..2 {
        chunks.push(chunk(
            json!({ "tool_calls": [{ "index": i, "id": ids[i], "type": "function",
                                     "function": { "name": names[i], "arguments": "" } }] }),
            Value::Null,
        ));
    }
    let pieces: Vec<Vec<String>> = args.iter().map(|a| split_at_chars(a, cuts)).collect();
    let longest = pieces.iter().map(Vec::len).max().unwrap_or(0);
    for p in 0..longest {
        for (i, call_pieces) in pieces.iter().enumerate() {
            if let Some(piece) = call_pieces.get(p) {
                chunks.push(chunk(
                    json!({ "tool_calls": [{ "index": i, "function": { "arguments": piece } }] }),
                    Value::Null,
                ));
            }
        }
    }
    chunks.push(chunk(json!({}), json!("tool_calls")));
    chunks
}

#[test]
fn chat_stream_assembles_calls_split_anywhere() {
    // Escapes and a non-ASCII character, so that cuts fall inside `\"`, `\u00e9` and `é`.
    let args = [
        r#"{"query":"caf\u00e9 \"menu\" é","limit":2}"#,
        r#"{"mode":"answer"}"#,
    ];
    let chunk_schema = openai_validator("ChatCompletionMessageToolCallChunk");
    let len = args[0].chars().count();
    for a in 0..=len {
        for b in (a..=len).step_by(3) {
            let chunks = chat_chunks(args, &[a, b]);
            let mut stream = ChatCompletionsStream::new();
            for chunk in &chunks {
                for piece in chunk["choices"][0]["delta"]["tool_calls"]
                    .as_array()
                    .into_iter()
                    .flatten()
                {
                    assert_valid(&chunk_schema, "ChatCompletionMessageToolCallChunk", piece);
                }
                // Through the SSE text path, as a client reading `data:` lines would.
                stream.push_str(&chunk.to_string()).unwrap();
            }
            stream.push_str("[DONE]").unwrap();
            let calls = stream.calls().unwrap();
            assert_eq!(
                calls,
                vec![
                    ToolCall::new("call_s1", "search", args[0]),
                    ToolCall::new("call_s2", "ask", args[1]),
                ],
                "cuts at {a}, {b}"
            );
        }
    }
}

#[test]
fn chat_stream_replays_a_valid_assistant_message() {
    let mut stream = ChatCompletionsStream::new();
    for chunk in chat_chunks([r#"{"query":"x"}"#, r#"{"mode":"hang"}"#], &[4]) {
        stream.push(&chunk).unwrap();
    }
    let message = stream.assistant_message().unwrap();
    assert_valid(
        &openai_validator("ChatCompletionRequestAssistantMessage"),
        "ChatCompletionRequestAssistantMessage",
        &message,
    );
    assert_eq!(
        message["tool_calls"][1]["function"]["arguments"],
        r#"{"mode":"hang"}"#
    );
}

#[test]
fn chat_stream_reports_calls_that_never_got_an_id() {
    let mut stream = ChatCompletionsStream::new();
    stream
        .push(
            &json!({ "choices": [{ "index": 0, "delta": { "tool_calls": [
            { "index": 0, "function": { "arguments": "{}" } }
        ] } }] }),
        )
        .unwrap();
    let err = stream.calls().unwrap_err();
    assert!(err.message.contains("id"), "{err}");
    assert!(stream.push_str("{not json").is_err());
    let err = stream
        .push(&json!({ "choices": [{ "delta": { "tool_calls": [{ "index": -1 }] } }] }))
        .unwrap_err();
    assert!(err.pointer.contains("index"), "{err}");
}

/// A Responses `response` object with a reasoning item, a message and three function calls.
fn response_object() -> Value {
    json!({
        "id": "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
        "object": "response",
        "created_at": 1741476542,
        "status": "completed",
        "model": "gpt-4.1-2025-04-14",
        "output": [
            { "type": "reasoning", "id": "rs_1", "summary": [] },
            { "type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
              "content": [{ "type": "output_text", "text": "Let me check.", "annotations": [] }] },
            { "type": "function_call", "id": "fc_1", "call_id": "call_r1", "name": "search",
              "arguments": "{\"query\":\"shipping\",\"limit\":null}", "status": "completed" },
            { "type": "function_call", "id": "fc_2", "call_id": "call_r2", "name": "fail",
              "arguments": "{}", "status": "completed" },
            { "type": "function_call", "id": "fc_3", "call_id": "call_r3", "name": "search",
              "arguments": "{\"query\":\"\"}", "status": "completed" }
        ],
        "parallel_tool_calls": true
    })
}

#[tokio::test]
async fn responses_turn_validates_against_the_spec() {
    let body = response_object();
    let call_schema = openai_validator("FunctionToolCall");
    for item in body["output"].as_array().unwrap().iter().skip(2) {
        assert_valid(&call_schema, "FunctionToolCall", item);
    }
    let follow_up = runner().follow_up(&Responses, &body).await.unwrap();
    let param = openai_validator("FunctionCallOutputItemParam");
    let output = openai_validator("FunctionToolCallOutput");
    let ids: Vec<&str> = follow_up
        .iter()
        .map(|item| {
            assert_valid(&param, "FunctionCallOutputItemParam", item);
            assert_valid(&output, "FunctionToolCallOutput", item);
            item["call_id"].as_str().unwrap()
        })
        .collect();
    assert_eq!(ids, ["call_r1", "call_r2", "call_r3"]);
    let out = |i: usize| follow_up[i]["output"].as_str().unwrap().to_owned();
    assert_eq!(out(0), r#"{"received":{"query":"shipping"}}"#);
    assert_eq!(error_kind(&out(1)).as_deref(), Some("tool_failed"));
    assert!(out(1).contains("nope"), "{}", out(1));
    assert_eq!(error_kind(&out(2)).as_deref(), Some("invalid_arguments"));
    assert!(out(2).contains("/query"), "{}", out(2));
    // The replay is every output item, reasoning included.
    assert_eq!(Responses.assistant_turn(&body).len(), 5);
}

/// The events of a streamed Response with two function calls, argument deltas split at `cut`.
fn response_events(cut: usize) -> Vec<Value> {
    let args = [r#"{"query":"a \"b\""}"#, r#"{"mode":"answer"}"#];
    let mut seq = 0;
    let mut next = || {
        seq += 1;
        seq
    };
    let mut events = vec![
        json!({ "type": "response.created", "sequence_number": next(),
        "response": { "id": "resp_1", "object": "response", "status": "in_progress", "output": [] } }),
    ];
    let names = ["search", "ask"];
    for (i, arg) in args.iter().enumerate() {
        let output_index = i + 1;
        let item_id = format!("fc_{i}");
        let call_id = format!("call_{i}");
        events.push(
            json!({ "type": "response.output_item.added", "output_index": output_index,
            "sequence_number": next(),
            "item": { "type": "function_call", "id": item_id, "call_id": call_id, "name": names[i],
                      "arguments": "", "status": "in_progress" } }),
        );
        for piece in split_at_chars(arg, &[cut, cut + 2]) {
            events.push(json!({ "type": "response.function_call_arguments.delta",
                "item_id": item_id, "output_index": output_index, "sequence_number": next(),
                "delta": piece }));
        }
        events.push(
            json!({ "type": "response.function_call_arguments.done", "item_id": item_id,
            "name": names[i], "output_index": output_index, "sequence_number": next(),
            "arguments": arg }),
        );
        events.push(
            json!({ "type": "response.output_item.done", "output_index": output_index,
            "sequence_number": next(),
            "item": { "type": "function_call", "id": item_id, "call_id": call_id, "name": names[i],
                      "arguments": arg, "status": "completed" } }),
        );
    }
    events.insert(
        1,
        json!({ "type": "response.output_item.added", "output_index": 0, "sequence_number": 0,
            "item": { "type": "reasoning", "id": "rs_1", "summary": [] } }),
    );
    events.push(
        json!({ "type": "response.completed", "sequence_number": next(),
        "response": { "id": "resp_1", "object": "response", "status": "completed" } }),
    );
    events
}

#[test]
fn responses_stream_assembles_calls_and_events_match_the_spec() {
    let schemas = [
        (
            "response.output_item.added",
            openai_validator("ResponseOutputItemAddedEvent"),
        ),
        (
            "response.output_item.done",
            openai_validator("ResponseOutputItemDoneEvent"),
        ),
        (
            "response.function_call_arguments.delta",
            openai_validator("ResponseFunctionCallArgumentsDeltaEvent"),
        ),
        (
            "response.function_call_arguments.done",
            openai_validator("ResponseFunctionCallArgumentsDoneEvent"),
        ),
    ];
    for cut in 0..18 {
        let events = response_events(cut);
        let mut stream = ResponsesStream::new();
        for event in &events {
            if let Some((name, schema)) = schemas.iter().find(|(t, _)| event["type"] == *t) {
                assert_valid(schema, name, event);
            }
            stream.push(event).unwrap();
        }
        assert_eq!(
            stream.calls().unwrap(),
            vec![
                ToolCall::new("call_0", "search", r#"{"query":"a \"b\""}"#),
                ToolCall::new("call_1", "ask", r#"{"mode":"answer"}"#),
            ]
        );
        assert_eq!(stream.output_items().len(), 2);
    }
}

#[test]
fn responses_stream_without_done_events_uses_the_deltas() {
    let mut stream = ResponsesStream::new();
    for event in response_events(5).iter().filter(|e| {
        !matches!(
            e["type"].as_str(),
            Some("response.output_item.done" | "response.function_call_arguments.done")
        )
    }) {
        stream.push(event).unwrap();
    }
    let calls = stream.calls().unwrap();
    assert_eq!(calls[0].arguments, r#"{"query":"a \"b\""}"#);
    assert_eq!(calls[1].arguments, r#"{"mode":"answer"}"#);
}
