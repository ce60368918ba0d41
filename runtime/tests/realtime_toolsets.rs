//! Toolsets choose what a realtime session and a chat conversation offer the model: the tools
//! in no toolset, and those of the chosen toolsets. A session starts with a choice and can
//! switch (OpenAI: a `session.update` with the new tools, at once or after the response in
//! progress); a call of a tool not offered is refused as unknown, however the model came by
//! its name. Gemini Live declares once, in `setup`.
#![cfg(feature = "testing")]

mod common {
    pub mod session;
}

use std::sync::Arc;

use common::session::Wire;
use serde_json::{json, Value};
use toolc_runtime::chat::{ChatCompletions, Codec, TurnRunner};
use toolc_runtime::realtime::{
    script, RealtimeProvider, RealtimeSession, SelectToolsetsError, SessionConfig,
};
use toolc_runtime::{definitions_from_str, executor_fn, Registry};

const MANIFEST: &str = r#"
version: 1
toolsets:
  orders: { description: Look up and change orders. }
  archive: { description: Old orders and exports. }
tools:
  - name: search_docs
    description: Search the help articles.
    location: server
  - name: get_order
    description: Look up an order.
    location: server
    toolset: orders
  - name: cancel_order
    description: Cancel an order.
    location: server
    toolset: orders
  - name: export_history
    description: Export the order history.
    location: server
    toolset: archive
"#;

/// The registry as the generated `registry()` builds it: definitions, toolsets, executors.
fn registry() -> Arc<Registry> {
    let ok = || executor_fn(|_| async { Ok(json!({ "ok": true })) });
    Arc::new(
        Registry::builder()
            .definitions(definitions_from_str("t.tools.yaml", MANIFEST).unwrap())
            .toolset(
                "orders",
                "Look up and change orders.",
                ["get_order", "cancel_order"],
            )
            .toolset("archive", "Old orders and exports.", ["export_history"])
            .executor("search_docs", ok())
            .executor("get_order", ok())
            .executor("cancel_order", ok())
            .executor("export_history", ok())
            .build()
            .unwrap(),
    )
}

fn names(tools: &Value) -> Vec<String> {
    tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

fn session(toolsets: &[&str]) -> Wire {
    let registry = registry();
    let mut config = SessionConfig::new(&registry)
        .with_toolsets(&registry, toolsets)
        .unwrap();
    config.filler_delay = None;
    Wire::new(RealtimeSession::new(registry, Arc::new(config)))
}

#[tokio::test(start_paused = true)]
async fn a_session_declares_its_toolsets_and_refuses_the_other_tools() {
    let mut wire = session(&["orders"]);
    let opening: Value = serde_json::from_str(&wire.session.session_update()).unwrap();
    assert_eq!(
        names(&opening["session"]["tools"]),
        ["search_docs", "get_order", "cancel_order"]
    );
    assert_eq!(wire.session.toolsets(), Some(&["orders".to_owned()][..]));

    wire.model(&script::response_created("r1"));
    wire.model_all(&script::function_call(
        "r1",
        0,
        "i1",
        "c1",
        "export_history",
        "{}",
    ));
    wire.model_all(&script::function_call(
        "r1",
        1,
        "i2",
        "c2",
        "get_order",
        "{}",
    ));
    wire.model(&script::response_done("r1", vec![]));
    wire.settle(|w| w.model_events_of("conversation.item.create").len() == 2)
        .await;
    let output = |call: &str| -> Value {
        let item = wire
            .model_events_of("conversation.item.create")
            .into_iter()
            .find(|e| e["item"]["call_id"] == call)
            .unwrap_or_else(|| panic!("no output for {call}: {:?}", wire.to_model));
        serde_json::from_str(item["item"]["output"].as_str().unwrap()).unwrap()
    };
    let refused = output("c1");
    assert_eq!(refused["error"]["kind"], "unknown_tool", "{refused}");
    let text = refused.to_string();
    assert!(
        text.contains("get_order") && !text.contains("\"export_history\","),
        "{text}"
    );
    assert_eq!(output("c2"), json!({ "ok": true }));
}

#[tokio::test(start_paused = true)]
async fn switching_toolsets_redeclares_at_once_when_idle_and_after_a_response_otherwise() {
    let mut wire = session(&["orders"]);
    wire.session.select_toolsets(&["archive"]).unwrap();
    wire.drain();
    let updates = wire.model_events_of("session.update");
    assert_eq!(updates.len(), 1, "{:?}", wire.to_model);
    assert_eq!(
        names(&updates[0]["session"]["tools"]),
        ["search_docs", "export_history"]
    );

    // During a response the model keeps what it was told until the response is done.
    wire.model(&script::response_created("r1"));
    wire.session
        .select_toolsets(&["orders", "archive"])
        .unwrap();
    wire.drain();
    assert_eq!(wire.model_events_of("session.update").len(), 1);
    wire.model(&script::response_done("r1", vec![]));
    let updates = wire.model_events_of("session.update");
    assert_eq!(updates.len(), 2, "{:?}", wire.to_model);
    assert_eq!(
        names(&updates[1]["session"]["tools"]),
        ["search_docs", "get_order", "cancel_order", "export_history"]
    );

    let unknown = wire.session.select_toolsets(&["billing"]).unwrap_err();
    assert!(matches!(unknown, SelectToolsetsError::Unknown(_)));
    assert!(unknown.to_string().contains("orders, archive"), "{unknown}");
}

#[test]
fn gemini_live_takes_the_choice_in_setup_and_cannot_switch() {
    let registry = registry();
    let config = SessionConfig::for_provider(&registry, RealtimeProvider::GeminiLive)
        .with_toolsets(&registry, &["archive"])
        .unwrap();
    let (mut session, _events) = RealtimeSession::new(registry, Arc::new(config));
    let setup: Value = serde_json::from_str(&session.session_update()).unwrap();
    assert_eq!(
        names(&setup["setup"]["tools"][0]["functionDeclarations"]),
        ["search_docs", "export_history"]
    );
    assert_eq!(
        session.select_toolsets(&["orders"]),
        Err(SelectToolsetsError::DeclaredOnce(
            RealtimeProvider::GeminiLive
        ))
    );
}

#[tokio::test(start_paused = true)]
async fn gpt_live_switches_the_delegated_backends_tools_with_session_update() {
    let registry = registry();
    let mut config = SessionConfig::for_provider(&registry, RealtimeProvider::GptLive)
        .with_toolsets(&registry, &["orders"])
        .unwrap();
    config.session["delegation"]["responses"]
        .as_object_mut()
        .unwrap()
        .insert("tools".into(), json!([{ "type": "web_search" }]));
    let mut wire = Wire::new(RealtimeSession::new(registry, Arc::new(config)));
    let start: Value = serde_json::from_str(&wire.session.session_update()).unwrap();
    let tools = start["session"]["delegation"]["responses"]["tools"].clone();
    assert_eq!(tools[0], json!({ "type": "web_search" }));
    let declared = names(&json!(tools.as_array().unwrap()[1..]));
    assert_eq!(declared, ["search_docs", "get_order", "cancel_order"]);
    wire.session.select_toolsets(&["archive"]).unwrap();
    wire.drain();
    let update = wire.model_events_of("session.update");
    assert_eq!(update.len(), 1, "{:#?}", wire.to_model);
    let tools = &update[0]["session"]["delegation"]["responses"]["tools"];
    assert_eq!(
        tools[0],
        json!({ "type": "web_search" }),
        "hosted tools stay"
    );
    let declared = names(&json!(tools.as_array().unwrap()[1..]));
    assert_eq!(declared, ["search_docs", "export_history"]);
    assert_eq!(update[0]["session"]["delegation"]["type"], "responses");
}

#[tokio::test]
async fn a_chat_conversation_offers_and_declares_its_toolsets() {
    let runner = TurnRunner::new(registry())
        .with_toolsets(&["archive"])
        .unwrap();
    let codec = ChatCompletions;
    let response = json!({"choices": [{"message": {"role": "assistant", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get_order", "arguments": "{}"}},
        {"id": "c2", "type": "function", "function": {"name": "export_history", "arguments": "{}"}}
    ]}}]});
    let calls = codec.decode(&response).unwrap();
    let outcome = runner.run(&calls).await;
    let text = |i: usize| outcome.results[i].output.clone();
    assert!(text(0).contains("unknown_tool"), "{}", text(0));
    assert_eq!(
        serde_json::from_str::<Value>(&text(1)).unwrap(),
        json!({ "ok": true })
    );

    // The compiled provider files, cut down to the choice.
    let mut session = toolc::Session::new();
    session.add_manifest("t.tools.yaml", MANIFEST.as_bytes());
    let ir = session.check().unwrap();
    let selection = runner.selection().unwrap();
    let mut file = |provider| -> Value {
        serde_json::from_str(&toolc::emit::providers::file_text(
            &ir,
            provider,
            &mut session.diagnostics,
        ))
        .unwrap()
    };
    use toolc::emit::providers::Provider as P;
    let chat = selection.declarations(&file(P::OpenaiChat));
    let chat_names: Vec<&str> = chat
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(chat_names, ["search_docs", "export_history"]);
    // Responses: the chosen toolset's namespace whole, the other's not at all.
    let responses = selection.declarations(&file(P::OpenaiResponses));
    let kinds: Vec<(String, String)> = responses
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["type"].as_str().unwrap().to_owned(),
                t["name"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("function".to_owned(), "search_docs".to_owned()),
            ("namespace".to_owned(), "archive".to_owned())
        ]
    );
    let gemini = selection.declarations(&file(P::Gemini));
    assert_eq!(
        names(&gemini["functionDeclarations"]),
        ["search_docs", "export_history"]
    );
    let anthropic = selection.declarations(&file(P::Anthropic));
    assert_eq!(names(&anthropic), ["search_docs", "export_history"]);
}
