//! docs/gpt-live.md, "Client delegation": the ready delegate, on the chat turn runner against
//! OpenAI's Responses API.

use std::sync::Arc;

use toolc_runtime::chat::http::{ModelError, ResponsesModel};
use toolc_runtime::delegate::chat_delegate;
use toolc_runtime::realtime::ClientDelegate;
use toolc_runtime::Registry;

// Delegated tasks run on a Responses model with the registry's server tools.
pub fn delegate(registry: Arc<Registry>, api_key: String) -> Result<ClientDelegate, ModelError> {
    let model = ResponsesModel::openai(api_key, "gpt-5.5")?
        .instructions("Answer as the shop's support desk, in two sentences at most.");
    Ok(chat_delegate(registry, model))
}
