//! docs/toolsets.md, "Large catalogs": what a realtime session and a chat conversation offer the model.

use std::sync::Arc;

use serde_json::Value;
use toolc_runtime::chat::TurnRunner;
use toolc_runtime::realtime::{RealtimeSession, SessionConfig};
use toolc_runtime::Registry;

type Chosen = (SessionConfig, TurnRunner, Option<Value>);

pub fn choose(
    registry: Arc<Registry>,
    session: &mut RealtimeSession,
    openai_chat_file: &Value,
) -> Result<Chosen, Box<dyn std::error::Error>> {
    // Realtime: start with one toolset, switch later (OpenAI: a `session.update` with the new
    // tools, at once or after the response in progress). Gemini Live takes tools once, in `setup`.
    let config = SessionConfig::new(&registry).with_toolsets(&registry, &["orders"])?;
    session.select_toolsets(&["orders", "archive"])?;
    // Chat: the runner refuses the other tools; declare the same choice from the compiled
    // file (`serde_json::from_str(tools::declarations(Provider::OpenaiChat))?`).
    let runner = TurnRunner::new(registry.clone()).with_toolsets(&["orders"])?;
    let tools = runner.selection().map(|s| s.declarations(openai_chat_file));
    Ok((config, runner, tools))
}
