//! Per-call dispatcher overhead: the routing primitive alone, and a whole call through a
//! realtime session (events in, executor, result and continuation out), with a no-op server
//! tool so the figure is the runtime's own cost. Also the cost of looking at an unrelated event.

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;
use toolc_runtime::dispatch::{self, NoClient, ToolCall};
use toolc_runtime::realtime::{script, RealtimeProvider, RealtimeSession, SessionConfig};
use toolc_runtime::{definitions_from_str, executor_fn, Registry};

const MANIFEST: &str = r#"
version: 1
tools:
  - name: noop
    description: Does nothing.
    location: server
    parameters:
      type: object
      properties: { q: { type: string } }
      required: [q]
"#;

fn registry() -> Arc<Registry> {
    let defs = definitions_from_str("bench.tools.yaml", MANIFEST).unwrap();
    Arc::new(
        Registry::builder()
            .definitions(defs)
            .executor("noop", executor_fn(|_| async { Ok(json!({"ok": true})) }))
            .build()
            .unwrap(),
    )
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // Sessions spawn call tasks: they must be created and fed inside the runtime.
    let _entered = rt.enter();
    let registry = registry();
    let call = ToolCall::new("c1", "noop", r#"{"q":"x"}"#);
    let scope = toolc_runtime::SessionScope::new();

    c.bench_function("dispatch/route_noop_server_call", |b| {
        b.iter(|| rt.block_on(dispatch::route(&registry, &scope, &call, &NoClient)))
    });

    // One call through a session: arguments.done + output_item.done + response.done in, the
    // executor on a task, function_call_output + response.create out.
    let mut config = SessionConfig::new(&registry);
    config.filler_delay = None;
    let config = Arc::new(config);
    let events: Vec<Vec<String>> = (0..4096)
        .map(|i| {
            script::response_with_calls(
                &format!("r{i}"),
                &[(&format!("c{i}"), "noop", r#"{"q":"x"}"#)],
            )
            .iter()
            .map(|e| e.to_string())
            .collect()
        })
        .collect();
    c.bench_function("session/one_server_call_round_trip", |b| {
        let (mut session, mut rx) = RealtimeSession::new(registry.clone(), config.clone());
        let mut i = 0usize;
        b.iter(|| {
            // Fresh call ids: a repeated id would be de-duplicated, not run.
            let batch = &events[i % events.len()];
            if i > 0 && i % events.len() == 0 {
                let fresh = RealtimeSession::new(registry.clone(), config.clone());
                session = fresh.0;
                rx = fresh.1;
            }
            i += 1;
            for e in batch {
                session.on_model_event(e);
            }
            rt.block_on(async {
                let ev = rx.recv().await.unwrap();
                session.on_event(ev);
            });
            session.drain_outputs().count()
        })
    });

    // The same call on Gemini Live: one `toolCall` in, one `toolResponse` out.
    let mut live_config = SessionConfig::for_provider(&registry, RealtimeProvider::GeminiLive);
    live_config.filler_delay = None;
    let live_config = Arc::new(live_config);
    let live_calls: Vec<String> = (0..4096)
        .map(|i| {
            script::live::tool_call(&[(&format!("c{i}"), "noop", json!({"q": "x"}))]).to_string()
        })
        .collect();
    c.bench_function("live/one_server_call_round_trip", |b| {
        let (mut session, mut rx) = RealtimeSession::new(registry.clone(), live_config.clone());
        let mut i = 0usize;
        b.iter(|| {
            if i > 0 && i % live_calls.len() == 0 {
                let fresh = RealtimeSession::new(registry.clone(), live_config.clone());
                session = fresh.0;
                rx = fresh.1;
            }
            session.on_model_event(&live_calls[i % live_calls.len()]);
            i += 1;
            rt.block_on(async {
                let ev = rx.recv().await.unwrap();
                session.on_event(ev);
            });
            session.drain_outputs().count()
        })
    });
    let live_audio = script::live::audio(&"A".repeat(4096)).to_string();
    c.bench_function("live/unrelated_4k_audio", |b| {
        let (mut session, _rx) = RealtimeSession::new(registry.clone(), live_config.clone());
        b.iter(|| session.on_model_event(&live_audio))
    });
    let live_input = json!({"realtimeInput": {"audio": {"mimeType": "audio/pcm;rate=16000", "data": "QUJD".repeat(75)}}}).to_string();
    c.bench_function("live/browser_300b_audio_input", |b| {
        let (mut session, _rx) = RealtimeSession::new(registry.clone(), live_config.clone());
        b.iter(|| session.on_browser_event(&live_input))
    });

    // The same call on GPT-Live: the delegated backend's response (created, the call's four
    // nested events, completed) in, `response.item.create` + `response.create` out.
    let mut gpt_config = SessionConfig::for_provider(&registry, RealtimeProvider::GptLive);
    gpt_config.filler_delay = None;
    let gpt_config = Arc::new(gpt_config);
    let gpt_calls: Vec<Vec<String>> = (0..4096)
        .map(|i| {
            script::gpt_live::response_with_calls(
                &format!("d{i}"),
                &format!("resp_{i}"),
                &[(&format!("c{i}"), "noop", r#"{"q":"x"}"#)],
            )
            .iter()
            .map(|e| e.to_string())
            .collect()
        })
        .collect();
    c.bench_function("gpt_live/one_server_call_round_trip", |b| {
        let (mut session, mut rx) = RealtimeSession::new(registry.clone(), gpt_config.clone());
        let mut i = 0usize;
        b.iter(|| {
            if i > 0 && i % gpt_calls.len() == 0 {
                let fresh = RealtimeSession::new(registry.clone(), gpt_config.clone());
                session = fresh.0;
                rx = fresh.1;
            }
            for e in &gpt_calls[i % gpt_calls.len()] {
                session.on_model_event(e);
            }
            i += 1;
            rt.block_on(async {
                let ev = rx.recv().await.unwrap();
                session.on_event(ev);
            });
            session.drain_outputs().count()
        })
    });
    let gpt_audio = script::gpt_live::audio(&"A".repeat(4096)).to_string();
    c.bench_function("gpt_live/unrelated_4k_audio", |b| {
        let (mut session, _rx) = RealtimeSession::new(registry.clone(), gpt_config.clone());
        b.iter(|| session.on_model_event(&gpt_audio))
    });
    let gpt_input =
        json!({"type": "session.input_audio.append", "audio": "QUJD".repeat(72)}).to_string();
    c.bench_function("gpt_live/browser_300b_audio_input", |b| {
        let (mut session, _rx) = RealtimeSession::new(registry.clone(), gpt_config.clone());
        b.iter(|| session.on_browser_event(&gpt_input))
    });

    let audio = json!({"type":"response.output_audio.delta","event_id":"ev_1","response_id":"r1","item_id":"i1","output_index":0,"content_index":0,"delta":"A".repeat(4096)}).to_string();
    c.bench_function("session/unrelated_4k_audio_delta", |b| {
        let (mut session, _rx) = RealtimeSession::new(registry.clone(), config.clone());
        b.iter(|| session.on_model_event(&audio))
    });

    // What the browser sends most: audio chunks, each read strictly before it is forwarded.
    let append = |len: usize| {
        json!({"type":"input_audio_buffer.append","event_id":"ev_1","audio":"QUJD".repeat(len / 4)})
            .to_string()
    };
    for (name, len) in [
        ("session/browser_300b_audio_append", 300),
        ("session/browser_8k_audio_append", 8192),
    ] {
        let text = append(len);
        c.bench_function(name, |b| {
            let (mut session, _rx) = RealtimeSession::new(registry.clone(), config.clone());
            b.iter(|| session.on_browser_event(&text))
        });
        // The least any full read costs: serde_json skipping over the event.
        c.bench_function(&name.replace("session/", "plain_json_scan/"), |b| {
            b.iter(|| serde_json::from_str::<serde::de::IgnoredAny>(&text).is_ok())
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
