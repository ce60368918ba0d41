//! The manifest and executors of the session properties (`realtime_props.rs` for OpenAI
//! Realtime and Gemini Live, `realtime_props_gpt_live.rs` for GPT-Live): a tool per kind of
//! call, and a server tool that answers, fails, overruns its timeout or panics by its argument.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use toolc_runtime::{definitions_from_str, executor_fn, Registry, ToolError};

pub const MANIFEST: &str = r#"
version: 1
tools:
  - name: srv
    description: Server tool.
    location: server
    timeout: 50ms
    parameters: { type: object, properties: { n: { type: integer } } }
  - name: cli
    description: Client tool.
    location: client
    timeout: 100ms
    filler: ["Hold on."]
    parameters: { type: object, properties: { n: { type: integer } } }
  - name: fire
    description: Fire and forget.
    location: client
    wait_for_response: false
  - name: ask
    description: Needs approval.
    location: server
    approval: required
  - name: bg
    description: Runs in the background.
    location: server
    mode: async
    approval: required
  - name: stream
    description: Streams its arguments.
    location: client
    stream_arguments: true
    approval: required
    timeout: 100ms
"#;

pub fn registry() -> Arc<Registry> {
    let defs = definitions_from_str("p.tools.yaml", MANIFEST).unwrap();
    Arc::new(
        Registry::builder()
            .definitions(defs)
            .executor("ask", executor_fn(|_| async { Ok(json!({"asked": true})) }))
            .executor(
                "bg",
                executor_fn(|_| async {
                    tokio::time::sleep(Duration::from_millis(30)).await;
                    Ok(json!({"done": true}))
                }),
            )
            .executor(
                "srv",
                executor_fn(|a: Value| async move {
                    match a["n"].as_i64().unwrap_or(0) % 4 {
                        0 => Ok(json!({"ok": true})),
                        1 => Err(ToolError::new("failed")),
                        2 => {
                            tokio::time::sleep(Duration::from_millis(500)).await;
                            Ok(json!({}))
                        }
                        _ => panic!("boom"),
                    }
                }),
            )
            .build()
            .unwrap(),
    )
}
