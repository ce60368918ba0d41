//! A live catalog in a realtime session: a tool that joins the catalog after the session
//! started runs when the model calls it, the model is told of the new set with a
//! `session.update` between responses (before the continuation), and a tool that left answers
//! with the catalog's error.
#![cfg(all(feature = "catalog", feature = "testing"))]

mod common {
    pub mod session;
}

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::routing::{get, post};
use axum::{Json, Router};
use common::session::Wire;
use serde_json::{json, Value};
use toolc_runtime::catalog::{CatalogClient, LiveCatalog};
use toolc_runtime::realtime::{script, RealtimeSession, SessionConfig};
use toolc_runtime::{definitions_from_str, Registry};

type Tools = Arc<Mutex<Vec<Value>>>;

fn tool(name: &str) -> Value {
    json!({"name": name, "description": format!("The {name} tool."),
           "parameters": {"type": "object", "properties": {}}, "requires_auth": false})
}

/// A catalog service whose tool list the test changes while it runs.
async fn catalog(tools: Tools) -> String {
    async fn list(State(tools): State<Tools>) -> Json<Value> {
        let tools = tools.lock().unwrap().clone();
        Json(
            json!({"success": true, "data": {"tools": tools, "count": tools.len(), "include_unauthorized": true}}),
        )
    }
    async fn execute(State(tools): State<Tools>, Json(request): Json<Value>) -> Json<Value> {
        let known = tools
            .lock()
            .unwrap()
            .iter()
            .any(|t| t["name"] == request["name"]);
        Json(if known {
            json!({"success": true, "data": {"ran": request["name"]}})
        } else {
            json!({"success": false, "error": {"message": "no such tool", "code": "unknown", "status_code": 404}})
        })
    }
    let app = Router::new()
        .route("/tools", get(list))
        .route("/execute", post(execute))
        .with_state(tools);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

/// A catalog service serving `tools`, its tools merged into a registry beside a local client
/// tool (`highlight`), and the live catalog refreshed every `ttl_ms`.
async fn live_registry(
    tools: Tools,
    ttl_ms: u64,
) -> (Arc<Registry>, Arc<LiveCatalog>, tokio::task::JoinHandle<()>) {
    let base = catalog(tools).await;
    let client = Arc::new(
        CatalogClient::new(&base)
            .unwrap()
            .with_ttl(Duration::from_millis(ttl_ms)),
    );
    let discovered = client.server_tools().await.unwrap();
    let local = definitions_from_str(
        "l.tools.yaml",
        "version: 1\ntools:\n  - name: highlight\n    description: Highlight.\n    location: client\n",
    )
    .unwrap();
    let builder = Registry::builder().definitions(local.clone());
    let registry = Arc::new(
        discovered
            .merge_into(builder, &local, None)
            .unwrap()
            .build()
            .unwrap(),
    );
    let live = LiveCatalog::new(&discovered, None);
    let refresher = live.spawn_refresher();
    (registry, live, refresher)
}

fn declared(event: &Value) -> Vec<String> {
    let mut names: Vec<String> = event["session"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_that_join_or_leave_the_catalog_reach_running_sessions() {
    let tools: Tools = Arc::new(Mutex::new(vec![tool("get_weather")]));
    let (registry, live, _refresher) = live_registry(tools.clone(), 150).await;
    let mut config = SessionConfig::new(&registry);
    config.filler_delay = None;
    config.live_tools = Some(live.clone());
    let mut wire = Wire::new(RealtimeSession::new(registry, Arc::new(config)));
    let first: Value = serde_json::from_str(&wire.session.session_update()).unwrap();
    assert_eq!(declared(&first), ["get_weather", "highlight"]);

    // A tool joins the catalog; the model calls it before anyone refreshed.
    tools.lock().unwrap().push(tool("get_time"));
    wire.model_all(&script::response_with_calls(
        "r1",
        &[("c1", "get_time", "{}")],
    ));
    wire.settle(|w| !w.model_events_of("response.create").is_empty())
        .await;
    let outputs = wire.model_events_of("conversation.item.create");
    assert_eq!(outputs.len(), 1);
    let output: Value =
        serde_json::from_str(outputs[0]["item"]["output"].as_str().unwrap()).unwrap();
    assert_eq!(output, json!({"ran": "get_time"}));
    // The browser never saw the call of this server tool.
    assert!(
        wire.to_browser
            .iter()
            .all(|e| !e.to_string().contains("c1")),
        "{:?}",
        wire.to_browser
    );

    // The new set is declared between responses: the update comes before the continuation.
    let kinds: Vec<&str> = wire
        .to_model
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    let update = kinds.iter().position(|k| *k == "session.update");
    let create = kinds.iter().position(|k| *k == "response.create");
    assert!(update.is_some() && update < create, "{kinds:?}");
    assert_eq!(
        declared(&wire.model_events_of("session.update")[0].clone()),
        ["get_time", "get_weather", "highlight"]
    );

    // A tool leaves; the refresher notices within its TTL; the next response's end declares it
    // gone, and a call of it gets the catalog's answer.
    tools.lock().unwrap().retain(|t| t["name"] != "get_weather");
    tokio::time::sleep(Duration::from_millis(600)).await;
    wire.model_all(&script::response_with_calls(
        "r2",
        &[("c2", "get_weather", "{}")],
    ));
    wire.settle(|w| w.model_events_of("response.create").len() == 2)
        .await;
    let updates = wire.model_events_of("session.update");
    assert_eq!(updates.len(), 2, "{updates:?}");
    assert_eq!(declared(&updates[1].clone()), ["get_time", "highlight"]);
    let outputs = wire.model_events_of("conversation.item.create");
    let gone = outputs[1]["item"]["output"].as_str().unwrap();
    assert!(
        gone.contains("get_weather") && gone.contains("error"),
        "{gone}"
    );
}

/// With the text-marker flow the tools are declared in the instructions: those follow the live
/// catalog too, and keep the instructions the application and then the browser set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn marker_instructions_follow_the_live_catalog_and_keep_the_browsers_own() {
    use toolc_runtime::markers::MarkerTag;
    use toolc_runtime::realtime::MarkerFlowConfig;

    let mut needs_sign_in = tool("get_balance");
    needs_sign_in["requires_auth"] = json!(true);
    let tools: Tools = Arc::new(Mutex::new(vec![tool("get_weather")]));
    let (registry, live, _refresher) = live_registry(tools.clone(), 100).await;
    let tag = MarkerTag::new("CALL").unwrap();
    let mut config = SessionConfig::new(&registry);
    config.filler_delay = None;
    config.live_tools = Some(live.clone());
    config.markers = Some(Arc::new(MarkerFlowConfig::for_registry(
        tag,
        &registry,
        |_| false,
    )));
    config
        .session
        .insert("instructions".into(), json!("You are a helpful agent."));
    let mut wire = Wire::new(RealtimeSession::new(registry, Arc::new(config)));
    let first: Value = serde_json::from_str(&wire.session.session_update()).unwrap();
    let text = first["session"]["instructions"].as_str().unwrap();
    assert!(
        text.starts_with("You are a helpful agent.\n\n# Tools"),
        "{text}"
    );
    assert!(text.contains("\n## get_weather\n") && text.contains("\n## highlight\n"));

    // The browser sets its own instructions: the catalog stays after them.
    wire.browser(&json!({"type": "session.update", "session": {"type": "realtime", "instructions": "Answer in French."}}));
    let forwarded = wire.model_events_of("session.update");
    let text = forwarded[0]["session"]["instructions"].as_str().unwrap();
    assert!(text.starts_with("Answer in French.\n\n# Tools"), "{text}");
    assert!(!text.contains("helpful agent"), "{text}");

    // Tools join and leave the catalog; the refresher sees it; the next response's end declares
    // the new catalog in the instructions, after the browser's.
    {
        let mut tools = tools.lock().unwrap();
        tools.retain(|t| t["name"] != "get_weather");
        tools.push(needs_sign_in);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    wire.model(&script::response_created("r1"));
    wire.model(&script::response_done("r1", Vec::new()));
    let updates = wire.model_events_of("session.update");
    assert_eq!(updates.len(), 2, "{updates:?}");
    let text = updates[1]["session"]["instructions"].as_str().unwrap();
    assert!(text.starts_with("Answer in French.\n\n# Tools"), "{text}");
    assert!(text.contains("\n## get_balance\n"), "{text}");
    assert!(!text.contains("get_weather"), "{text}");
    assert!(text.contains("\n## highlight\n"), "{text}");
    // The catalog's `requires_auth` reaches the model's text.
    let balance = &text[text.find("## get_balance").unwrap()..];
    assert!(balance.contains("Requires authorization: yes"), "{balance}");
    assert_eq!(declared(&updates[1].clone()), ["get_balance", "highlight"]);
}
