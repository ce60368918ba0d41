//! The session harness of the call-behaviour tests (`realtime_behaviours.rs` for OpenAI,
//! `realtime_behaviours_live.rs` for Gemini Live): one manifest with a tool per behaviour,
//! executors that count what they did, and a session driven on a paused clock.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use toolc_runtime::realtime::{
    script, Note, RealtimeProvider, RealtimeSession, SessionConfig, Verdict,
};
use toolc_runtime::{definitions_from_str, executor_fn, executor_fn_with_context, Registry};

use super::session::Wire;

pub const MANIFEST: &str = r#"
version: 1
tools:
  - name: delete_account
    description: Delete the user's account.
    location: server
    approval: required
    parameters:
      type: object
      properties: { user: { type: string } }
      required: [user]
      additionalProperties: false
  - name: checkout
    description: Pay for the cart.
    location: client
    approval: required
    timeout: 5s
    parameters:
      type: object
      properties: { total: { type: number } }
      required: [total]
  - name: generate_report
    description: Build a long report.
    location: server
    mode: async
    scheduling: silent
    parameters:
      type: object
      properties: { topic: { type: string } }
      required: [topic]
  - name: search
    description: A slow search.
    location: server
    filler: ["Let me check."]
    timeout: 30s
  - name: highlight
    description: Highlight an element.
    location: client
    timeout: 5s
    parameters:
      type: object
      properties: { selector: { type: string } }
      required: [selector]
  - name: play_video
    description: Play a video to its end.
    location: client
    timeout: 5s
    cancel_on_interruption: false
  - name: show_card
    description: Show a product card.
    location: client
    stream_arguments: true
    timeout: 5s
    parameters:
      type: object
      properties:
        title: { type: string }
        price: { type: number }
      required: [title]
"#;

#[derive(Default)]
pub struct Seen {
    pub deletions: AtomicUsize,
    pub reports: AtomicUsize,
    pub searches_cancelled: AtomicUsize,
    pub searches_finished: AtomicUsize,
}

pub struct Harness {
    pub wire: Wire,
    pub notes: Arc<Mutex<Vec<Note>>>,
    pub seen: Arc<Seen>,
}

super::session::derefs_to_wire!(Harness);

pub fn registry(seen: Arc<Seen>) -> Registry {
    let defs = definitions_from_str("behaviours.tools.yaml", MANIFEST).expect("manifest");
    let (deletions, reports, searches) = (seen.clone(), seen.clone(), seen);
    Registry::builder()
        .definitions(defs)
        .executor(
            "delete_account",
            executor_fn(move |args: Value| {
                let seen = deletions.clone();
                async move {
                    seen.deletions.fetch_add(1, Ordering::SeqCst);
                    Ok(json!({ "deleted": args["user"] }))
                }
            }),
        )
        .executor(
            "generate_report",
            executor_fn(move |args: Value| {
                let seen = reports.clone();
                async move {
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    seen.reports.fetch_add(1, Ordering::SeqCst);
                    Ok(json!({ "report": format!("all about {}", args["topic"].as_str().unwrap_or("")) }))
                }
            }),
        )
        .executor(
            "search",
            executor_fn_with_context(move |ctx, _args: Value| {
                let seen = searches.clone();
                async move {
                    tokio::select! {
                        () = ctx.cancelled() => {
                            seen.searches_cancelled.fetch_add(1, Ordering::SeqCst);
                            Ok(json!({ "stopped": true }))
                        }
                        () = tokio::time::sleep(Duration::from_secs(3)) => {
                            seen.searches_finished.fetch_add(1, Ordering::SeqCst);
                            Ok(json!({ "hits": 3 }))
                        }
                    }
                }
            }),
        )
        .build()
        .expect("registry")
}

impl Harness {
    pub fn new() -> Harness {
        Harness::with(|_| {})
    }

    pub fn with(configure: impl FnOnce(&mut SessionConfig)) -> Harness {
        Harness::for_provider(RealtimeProvider::OpenAi, configure)
    }

    /// A Gemini Live session over the same manifest and executors.
    pub fn live() -> Harness {
        Harness::for_provider(RealtimeProvider::GeminiLive, |_| {})
    }

    pub fn for_provider(
        provider: RealtimeProvider,
        configure: impl FnOnce(&mut SessionConfig),
    ) -> Harness {
        let seen = Arc::new(Seen::default());
        let registry = Arc::new(registry(seen.clone()));
        let notes = Arc::new(Mutex::new(Vec::new()));
        let mut config = SessionConfig::for_provider(&registry, provider);
        config.filler_delay = None;
        config.approval_timeout = Duration::from_secs(20);
        let sink = notes.clone();
        config.observer = Some(Arc::new(move |n: &Note| {
            sink.lock().unwrap().push(n.clone())
        }));
        configure(&mut config);
        Harness {
            wire: Wire::new(RealtimeSession::new(registry, Arc::new(config))),
            notes,
            seen,
        }
    }

    /// The function-call outputs sent to the model, as (call id, parsed output).
    pub fn outputs(&self) -> Vec<(String, Value)> {
        self.to_model
            .iter()
            .filter(|e| {
                e["type"] == "conversation.item.create"
                    && e["item"]["type"] == "function_call_output"
            })
            .map(|e| {
                (
                    e["item"]["call_id"].as_str().unwrap().to_owned(),
                    serde_json::from_str(e["item"]["output"].as_str().unwrap()).unwrap(),
                )
            })
            .collect()
    }

    pub fn output_of(&self, call_id: &str) -> Value {
        let found: Vec<_> = self
            .outputs()
            .into_iter()
            .filter(|(c, _)| c == call_id)
            .collect();
        assert_eq!(found.len(), 1, "outputs for {call_id}: {found:?}");
        found[0].1.clone()
    }

    /// System messages added to the conversation (background results).
    pub fn system_messages(&self) -> Vec<String> {
        self.to_model
            .iter()
            .filter(|e| e["type"] == "conversation.item.create" && e["item"]["role"] == "system")
            .map(|e| e["item"]["content"][0]["text"].as_str().unwrap().to_owned())
            .collect()
    }

    pub fn continuations(&self) -> usize {
        self.to_model
            .iter()
            .filter(|e| e["type"] == "response.create" && e.get("response").is_none())
            .count()
    }

    pub fn browser_of(&self, kind: &str) -> Vec<&Value> {
        self.to_browser
            .iter()
            .filter(|e| e["type"] == kind)
            .collect()
    }

    pub fn approval_request(&self) -> Value {
        let requests = self.browser_of("toolc.approval.request");
        assert_eq!(requests.len(), 1, "{:#?}", self.to_browser);
        requests[0].clone()
    }

    pub fn answer_approval(
        &mut self,
        approval_id: &str,
        approved: bool,
        reason: Option<&str>,
    ) -> Verdict {
        let mut msg = json!({"type": "toolc.approval.response", "approval_id": approval_id, "approved": approved});
        if let Some(reason) = reason {
            msg["reason"] = json!(reason);
        }
        self.browser(&msg)
    }

    pub fn answer_call(&mut self, call_id: &str, output: &str) -> Verdict {
        self.browser(&json!({"type": "function_call.result", "call_id": call_id, "output": output}))
    }

    pub fn call_in(&mut self, response_id: &str, call_id: &str, name: &str, arguments: &str) {
        self.model(&script::response_created(response_id));
        self.model_all(&script::function_call(
            response_id,
            0,
            &format!("item_{call_id}"),
            call_id,
            name,
            arguments,
        ));
    }

    pub fn notes(&self) -> Vec<Note> {
        self.notes.lock().unwrap().clone()
    }

    /// Gemini Live: the `toolResponse` messages sent, each as its `functionResponses`.
    pub fn tool_responses(&self) -> Vec<Vec<Value>> {
        self.to_model
            .iter()
            .filter_map(|m| m["toolResponse"]["functionResponses"].as_array().cloned())
            .collect()
    }
}

// ---- approval ------------------------------------------------------------------------------
