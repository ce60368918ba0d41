//! A ready GPT-Live client delegate (feature `chat-delegate`): when the live model delegates a
//! task to the application, [`chat_delegate`] runs it with the chat turn runner over the
//! session's transcript and the registry's server tools, against any chat API toolc speaks over
//! HTTP ([`ChatModel`]: OpenAI Responses, OpenAI Chat Completions, Anthropic Messages; any
//! compatible base URL), and gives the model's answer back to the live model to say. An application that wants something else passes its own function
//! ([`realtime::client_delegate`](crate::realtime::client_delegate)).

use std::sync::Arc;

use crate::chat::http::{ChatModel, ModelError};
use crate::chat::TurnRunner;
use crate::context::SessionScope;
use crate::realtime::{ClientDelegate, Delegation, DelegationAnswer, Speaker};
use crate::{Location, Registry};

/// What the backend model is told unless the application sets its own
/// (each model's `instructions`).
pub const DEFAULT_INSTRUCTIONS: &str = "You are the backend of a voice assistant. The assistant \
     delegated a task to you: it is at the end of the conversation below. Do it, using your \
     tools where they help, and answer in a few short sentences the assistant can say to the \
     user as they are.";

/// What the live model is told when the task could not be done (the reason goes to the
/// application's log, not to the model).
pub const FAILED: &str = "The delegated task could not be done right now.";

/// A [`ClientDelegate`] that runs each client delegation with a [`TurnRunner`] over
/// `registry` against `model`.
///
/// - The model gets the transcript as one user message in its API's shape (`user:` and
///   `assistant:` lines: a conversation that ends with the assistant's turn would read, to
///   Anthropic, as the start of its own answer) and, unless the application declared tools
///   itself, every server tool of the registry in its API's format ([`ChatModel::declare`]).
///   Client tools are not declared: a delegated task has no page to run them.
/// - Calls run through the turn runner, in a scope with the session's principal; a call that
///   needs approval is refused (nobody can be asked), a `mode: async` call answers "started".
/// - The answer is said (`session.commentary.append`); a failure (the API refused, too many
///   turns) becomes silent context ([`FAILED`], `session.thinking.append`) and a warning. The
///   page leaving cancels the run.
pub fn chat_delegate(registry: Arc<Registry>, mut model: impl ChatModel) -> ClientDelegate {
    if model.declared_tools().is_empty() {
        let tools = registry
            .definitions()
            .filter(|def| def.location == Location::Server)
            .map(|def| model.declare(def))
            .collect();
        model.set_tools(tools);
    }
    let model = Arc::new(model);
    crate::realtime::client_delegate(move |delegation: Delegation, ctx| {
        let (registry, model) = (registry.clone(), model.clone());
        async move {
            let scope = SessionScope::with_id(ctx.session_id().to_owned())
                .with_principal(ctx.principal().cloned());
            let runner = TurnRunner::new(registry).with_scope(scope.clone());
            let prompt = transcript_text(&delegation);
            let answer = tokio::select! {
                answer = model.answer(&runner, &prompt) => answer,
                () = ctx.cancelled() => {
                    // The page left: the calls the run started are told to stop.
                    scope.cancel();
                    return DelegationAnswer::Think(FAILED.to_owned());
                }
            };
            match answer {
                Ok(answer) if !answer.text.trim().is_empty() => DelegationAnswer::Say(answer.text),
                Ok(_) => failed(&delegation.id, &ModelError::Unreadable("no text".into())),
                Err(e) => failed(&delegation.id, &e),
            }
        }
    })
}

fn failed(delegation: &str, error: &ModelError) -> DelegationAnswer {
    tracing::warn!(delegation, %error, "a client delegation failed");
    DelegationAnswer::Think(FAILED.to_owned())
}

/// The transcript as the backend model reads it: one line per speaker's turn.
fn transcript_text(delegation: &Delegation) -> String {
    let mut text = String::from("The conversation so far:\n");
    for line in &delegation.transcript {
        let who = match line.speaker {
            Speaker::User => "user",
            Speaker::Assistant => "assistant",
        };
        text.push_str(who);
        text.push_str(": ");
        text.push_str(line.text.trim());
        text.push('\n');
    }
    text
}
