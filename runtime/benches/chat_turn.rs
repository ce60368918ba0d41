//! One model turn with 8 parallel no-op server calls: decode + dispatch + encode, against the
//! JSON parsing alone (the response body and the 8 argument strings).
//!
//! `cargo bench -p toolc-runtime --bench chat_turn -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::{json, Value};
use toolc_runtime::chat::{Anthropic, ChatCompletions, Codec, TurnRunner};
use toolc_runtime::{executor_fn, Location, Registry, ToolDefinition};

const CALLS: usize = 8;

fn registry() -> Arc<Registry> {
    let def = ToolDefinition {
        name: "lookup".into(),
        description: "No-op.".into(),
        location: Location::Server,
        parameters: json!({
            "type": "object",
            "properties": {
                "query": { "type": "string", "minLength": 1 },
                "limit": { "type": "integer", "minimum": 1, "maximum": 20 },
                "lang": { "type": "string", "enum": ["en", "de", "fr"] }
            },
            "required": ["query"],
            "additionalProperties": false
        }),
        ..Default::default()
    };
    Arc::new(
        Registry::builder()
            .definition(def)
            .executor(
                "lookup",
                executor_fn(|_| async { Ok(json!({ "ok": true })) }),
            )
            .build()
            .expect("bench registry"),
    )
}

fn arguments(i: usize) -> String {
    json!({ "query": format!("order status {i}"), "limit": 5, "lang": "en" }).to_string()
}

fn chat_body() -> String {
    let calls: Vec<Value> = (0..CALLS)
        .map(|i| {
            json!({ "id": format!("call_{i:02}abcdefghijklmnop"), "type": "function",
                    "function": { "name": "lookup", "arguments": arguments(i) } })
        })
        .collect();
    json!({
        "id": "chatcmpl-bench", "object": "chat.completion", "created": 1741569952,
        "model": "gpt-4.1-2025-04-14",
        "choices": [{ "index": 0, "finish_reason": "tool_calls", "logprobs": null,
            "message": { "role": "assistant", "content": null, "refusal": null, "tool_calls": calls } }],
        "usage": { "prompt_tokens": 82, "completion_tokens": 17, "total_tokens": 99 }
    })
    .to_string()
}

fn anthropic_body() -> String {
    let blocks: Vec<Value> = (0..CALLS)
        .map(|i| {
            let input: Value = serde_json::from_str(&arguments(i)).unwrap();
            json!({ "type": "tool_use", "id": format!("toolu_{i:02}abcdefghij"), "name": "lookup",
                    "input": input })
        })
        .collect();
    json!({ "id": "msg_bench", "type": "message", "role": "assistant", "model": "claude",
            "content": blocks, "stop_reason": "tool_use" })
    .to_string()
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let runner = TurnRunner::new(registry());
    let mut group = c.benchmark_group("chat_turn_8_calls");

    let chat = chat_body();
    group.bench_function("openai_chat/json_parse_only", |b| {
        b.iter(|| {
            let body: Value = serde_json::from_str(black_box(&chat)).unwrap();
            for call in body["choices"][0]["message"]["tool_calls"]
                .as_array()
                .unwrap()
            {
                let args: Value =
                    serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
                black_box(args);
            }
        })
    });
    group.bench_function("openai_chat/decode_dispatch_encode", |b| {
        b.iter(|| {
            let body: Value = serde_json::from_str(black_box(&chat)).unwrap();
            let calls = ChatCompletions.decode(&body).unwrap();
            let follow_up = rt
                .block_on(runner.run(&calls))
                .encode(&ChatCompletions)
                .unwrap();
            black_box(follow_up)
        })
    });

    let anthropic = anthropic_body();
    group.bench_function("anthropic/json_parse_only", |b| {
        b.iter(|| black_box(serde_json::from_str::<Value>(black_box(&anthropic)).unwrap()))
    });
    group.bench_function("anthropic/decode_dispatch_encode", |b| {
        b.iter(|| {
            let body: Value = serde_json::from_str(black_box(&anthropic)).unwrap();
            let calls = Anthropic.decode(&body).unwrap();
            let follow_up = rt.block_on(runner.run(&calls)).encode(&Anthropic).unwrap();
            black_box(follow_up)
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
