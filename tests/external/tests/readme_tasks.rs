//! The book's tasks beyond "Use it in your crate", done by this crate outside toolc's workspace
//! from the book's text (the functions shown in `docs/` are regions of this file, which
//! `compiler/tests/docs.rs` checks): the generated module's builder joined by another tool
//! source, its declarations as a chat request's `tools`, a step of an Anthropic chat loop with a
//! call that needs the user's approval (a scripted response: no network), and the settings of a
//! relay to Gemini Live with another model (built, not connected).

use std::sync::Arc;

use serde_json::json;
use toolc_runtime::{tool, tools, CallContext, ToolError};

mod orders {
    toolc_runtime::include_tools!("orders");
}

use orders::{OrderStatusArgs, OrderStatusOutput, OrderStatusOutputStatus, OrdersServer};
use orders::{RefundOrderArgs, RefundOrderOutput};

struct Shop;

impl OrdersServer for Shop {
    async fn order_status(
        &self,
        _ctx: &CallContext,
        _args: OrderStatusArgs,
    ) -> Result<OrderStatusOutput, ToolError> {
        Ok(OrderStatusOutput {
            status: OrderStatusOutputStatus::Shipped,
        })
    }

    async fn refund_order(
        &self,
        _ctx: &CallContext,
        args: RefundOrderArgs,
    ) -> Result<RefundOrderOutput, ToolError> {
        Ok(RefundOrderOutput {
            refunded: args.order_number,
        })
    }
}

/// Adds two numbers: a tool defined by its Rust signature alone.
#[tool]
async fn add(a: i64, b: i64) -> Result<i64, ToolError> {
    Ok(a + b)
}

fn registry() -> Arc<Registry> {
    Arc::new(
        tools!(builder = orders::registry_builder(Shop); add)
            .build()
            .unwrap(),
    )
}

use serde_json::Value;
use toolc_runtime::chat::{Anthropic, Codec, TurnRunner};

// One step of an Anthropic Messages loop: the model's response in, the messages to append to
// the next request out. Calls of `approval: required` tools wait for the user's answer, then
// join the others in the order of the calls; `encode` refuses a turn with a call left out.
pub async fn anthropic_step(
    runner: &TurnRunner,
    response: &Value,
    user_approves: impl Fn(&str, &Value) -> bool,
) -> Result<Vec<Value>, Box<dyn std::error::Error>> {
    let calls = Anthropic.decode(response)?;
    let mut outcome = runner.run(&calls).await; // every call that needs no approval, at once
    let answers = std::mem::take(&mut outcome.pending)
        .into_iter()
        .map(|pending| {
            if user_approves(&pending.call().name, pending.arguments()) {
                pending.approve()
            } else {
                pending.deny(Some("the customer said no".into()))
            }
        })
        .collect();
    outcome.complete(runner.resolve(answers).await);
    let mut messages = Anthropic.assistant_turn(response); // the model's own message first
    messages.extend(outcome.encode(&Anthropic)?); // one tool_result per tool_use, in order
    Ok(messages)
}

use toolc_runtime::realtime::RealtimeProvider;
use toolc_runtime::relay::RelayConfig;
use toolc_runtime::Registry;

// A relay to Gemini Live (its endpoint, the tools in `setup`) that talks to another model.
pub fn live_relay_config(registry: &Registry, api_key: String) -> RelayConfig {
    let mut config = RelayConfig::for_provider(registry, RealtimeProvider::GeminiLive)
        .model("models/gemini-live-2.5-flash-preview");
    config.api_key = Some(api_key); // sent to Google as `x-goog-api-key`, never to the page
    config
}

/// The model's response: a text block, then a call that runs at once and one that waits for
/// the user.
fn scripted_response() -> Value {
    json!({
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "stop_reason": "tool_use",
        "content": [
            { "type": "text", "text": "Let me look at that order." },
            { "type": "tool_use", "id": "toolu_refund", "name": "refund_order",
              "input": { "order_number": "AB-1234" } },
            { "type": "tool_use", "id": "toolu_status", "name": "order_status",
              "input": { "order_number": "AB-1234" } }
        ]
    })
}

/// The `tool_result` blocks of the user message that carries the results: (id, content, error).
fn results_of(messages: &[Value]) -> Vec<(String, String, bool)> {
    assert_eq!(messages.len(), 2, "{messages:#?}");
    assert_eq!(messages[0]["role"], "assistant");
    assert_eq!(messages[0]["content"], scripted_response()["content"]);
    assert_eq!(messages[1]["role"], "user");
    messages[1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|block| {
            assert_eq!(block["type"], "tool_result");
            (
                block["tool_use_id"].as_str().unwrap().to_owned(),
                block["content"].as_str().unwrap().to_owned(),
                block["is_error"].as_bool().unwrap_or(false),
            )
        })
        .collect()
}

#[tokio::test]
async fn the_generated_builder_takes_other_tools() {
    let registry = registry();
    let names: Vec<&str> = registry.names().collect();
    assert_eq!(names, ["order_status", "show_order", "refund_order", "add"]);
    assert_eq!(registry.call("add", r#"{"a":2,"b":3}"#).await.unwrap(), "5");
    assert_eq!(
        registry
            .call("order_status", r#"{"order_number":"AB-1234"}"#)
            .await
            .unwrap(),
        r#"{"status":"shipped"}"#
    );
    // `registry()` is the same builder, built: the manifest's tools alone.
    let alone = orders::registry(Shop).unwrap();
    assert_eq!(alone.names().count(), 3);
}

#[test]
fn declarations_are_a_chat_requests_tools() {
    let tools: Value = serde_json::from_str(orders::declarations(Anthropic.provider())).unwrap();
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["order_status", "show_order", "refund_order"]);
    assert_eq!(
        tools[0]["input_schema"]["required"],
        json!(["order_number"])
    );
    // The approval has no field in any provider: the description says it.
    let refund = tools[2]["description"].as_str().unwrap();
    assert!(refund.starts_with("Refund one of"), "{refund}");
    assert!(refund.len() > "Refund one of the signed-in customer's orders.".len());

    let chat: Value = serde_json::from_str(orders::declarations(
        toolc_runtime::Provider::OpenaiChat,
    ))
    .unwrap();
    assert_eq!(chat[0]["type"], "function");
    assert_eq!(chat[0]["function"]["name"], "order_status");
    assert_eq!(chat[0]["function"]["strict"], true);
    let mcp: Value =
        serde_json::from_str(orders::declarations(toolc_runtime::Provider::Mcp)).unwrap();
    let server_tools: Vec<&str> = mcp["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(server_tools, ["order_status", "refund_order"]);
}

#[tokio::test]
async fn an_anthropic_step_runs_the_approved_refund_and_answers_every_call_in_order() {
    let runner = TurnRunner::new(registry());
    let asked = std::sync::Mutex::new(Vec::new());
    let messages = anthropic_step(&runner, &scripted_response(), |name, arguments| {
        asked
            .lock()
            .unwrap()
            .push((name.to_owned(), arguments.clone()));
        true
    })
    .await
    .unwrap();
    assert_eq!(
        *asked.lock().unwrap(),
        [(
            "refund_order".to_owned(),
            json!({ "order_number": "AB-1234" })
        )]
    );
    assert_eq!(
        results_of(&messages),
        [
            (
                "toolu_refund".to_owned(),
                r#"{"refunded":"AB-1234"}"#.to_owned(),
                false
            ),
            (
                "toolu_status".to_owned(),
                r#"{"status":"shipped"}"#.to_owned(),
                false
            ),
        ]
    );
}

#[tokio::test]
async fn a_denied_refund_is_a_result_the_model_reads() {
    let runner = TurnRunner::new(registry());
    let messages = anthropic_step(&runner, &scripted_response(), |_, _| false)
        .await
        .unwrap();
    let results = results_of(&messages);
    assert_eq!(results[0].0, "toolu_refund");
    assert!(results[0].2, "is_error");
    assert!(results[0].1.contains("approval_denied"), "{}", results[0].1);
    assert!(
        results[0].1.contains("the customer said no"),
        "{}",
        results[0].1
    );
    assert_eq!(results[1].1, r#"{"status":"shipped"}"#);
}

#[tokio::test]
async fn a_turn_with_a_call_waiting_for_approval_is_not_encoded() {
    let runner = TurnRunner::new(registry());
    let calls = Anthropic.decode(&scripted_response()).unwrap();
    let mut outcome = runner.run(&calls).await;
    assert_eq!(outcome.pending.len(), 1);
    let refused = outcome.encode(&Anthropic).unwrap_err();
    assert_eq!(refused.pending, ["toolu_refund"]);
    // Resolved but not completed in: still refused.
    let pending = outcome.pending[0].clone();
    let resolved = runner.resolve(vec![pending.approve()]).await;
    assert!(outcome.encode(&Anthropic).is_err());
    outcome.complete(resolved);
    let messages = outcome.encode(&Anthropic).unwrap();
    let ids: Vec<&str> = messages[0]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["tool_use_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["toolu_refund", "toolu_status"]);
}

#[test]
fn a_gemini_live_relay_talks_to_the_model_it_is_given() {
    let registry = registry();
    let config = live_relay_config(&registry, "key-1".into());
    assert_eq!(config.session.provider, RealtimeProvider::GeminiLive);
    assert_eq!(
        config.session.session["model"],
        "models/gemini-live-2.5-flash-preview"
    );
    assert_eq!(config.upstream, RealtimeProvider::GeminiLive.default_url());
    assert!(
        config
            .upstream
            .contains("generativelanguage.googleapis.com"),
        "{}",
        config.upstream
    );
    assert_eq!(config.api_key.as_deref(), Some("key-1"));
    // The default model is replaced, not added beside.
    let default = RelayConfig::for_provider(&registry, RealtimeProvider::GeminiLive);
    assert_ne!(
        default.session.session.get("model"),
        config.session.session.get("model")
    );
    // An OpenAI relay takes its model in the URL instead.
    let openai = RelayConfig::for_provider(&registry, RealtimeProvider::OpenAi).model("gpt-realtime-mini");
    assert!(
        openai.upstream.ends_with("?model=gpt-realtime-mini"),
        "{}",
        openai.upstream
    );
}
