//! toolc's MCP client against a server made with the official Python SDK
//! (`tests/mcp/server.py`, run from the virtualenv `scripts/setup` makes): its tools join a
//! registry as server tools, arguments are validated before a call leaves the process, results
//! come back structured, a tool's error is a tool error, a name clash is refused, and a tool the
//! server adds later (`notifications/tools/list_changed`) is seen and callable.
#![cfg(all(feature = "mcp", feature = "mcp-client"))]

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;
use toolc_runtime::live::LiveTools;
use toolc_runtime::mcp::McpTools;
use toolc_runtime::{definitions_from_str, CallContext, Registry};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

async fn python_server() -> std::sync::Arc<McpTools> {
    let python = repo().join("tests/mcp/.venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup (it installs the MCP Python SDK there)",
        python.display()
    );
    let mut command = tokio::process::Command::new(python);
    command.arg(repo().join("tests/mcp/server.py"));
    tokio::time::timeout(Duration::from_secs(30), McpTools::spawn(command))
        .await
        .expect("the Python server starts in time")
        .expect("it initializes")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tools_of_a_python_sdk_server_join_a_registry() {
    let tools = python_server().await;
    let mut names: Vec<String> = tools.definitions().into_iter().map(|d| d.name).collect();
    names.sort();
    assert_eq!(names, ["add_tide_tool", "forecast"]);
    let forecast = tools
        .definitions()
        .into_iter()
        .find(|d| d.name == "forecast")
        .unwrap();
    assert!(
        forecast.returns.is_some(),
        "its outputSchema is the result schema"
    );

    let local = definitions_from_str(
        "page.tools.yaml",
        "version: 1\ntools:\n  - name: highlight\n    description: Highlight.\n    location: client\n",
    )
    .unwrap();
    let builder = Registry::builder().definitions(local.clone());
    let registry = tools.merge_into(builder, &local).unwrap().build().unwrap();

    let out = registry
        .call_value("forecast", json!({"city": "Oslo"}))
        .await
        .unwrap();
    assert_eq!(out, json!({"city": "Oslo", "celsius": 21.5}));
    // Checked here, before the call leaves the process.
    let bad = registry
        .call_value("forecast", json!({"city": 5}))
        .await
        .unwrap_err();
    assert_eq!(bad.kind().as_str(), "invalid_arguments");
    // The server's `isError` result is the tool's error, with its text.
    let failed = registry
        .call_value("forecast", json!({"city": "Atlantis"}))
        .await
        .unwrap_err();
    assert!(failed.message().contains("under the sea"), "{failed:?}");

    // A local definition of the same name is refused.
    let clash = definitions_from_str(
        "dup.tools.yaml",
        "version: 1\ntools:\n  - name: forecast\n    description: Mine.\n    location: client\n",
    )
    .unwrap();
    let refused = tools
        .merge_into(Registry::builder().definitions(clash.clone()), &clash)
        .unwrap_err();
    assert!(refused.to_string().contains("`forecast`"), "{refused}");

    // The registry keeps the connection: no other handle is needed.
    drop(tools);
    let again = registry
        .call_value("forecast", json!({"city": "Rome"}))
        .await
        .unwrap();
    assert_eq!(again["city"], "Rome");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_the_server_adds_later_is_seen_and_callable() {
    let tools = python_server().await;
    let (before, _) = tools.current();
    assert!(!tools.is_live("tide"));
    let registry = tools
        .merge_into(Registry::builder(), &[])
        .unwrap()
        .build()
        .unwrap();
    let added = registry
        .call_value("add_tide_tool", json!({}))
        .await
        .unwrap();
    // A `str` result of the Python SDK is structured as `{"result": ...}`.
    assert_eq!(added, json!({"result": "added"}));
    // The list-changed notification makes the client list the tools again.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !tools.is_live("tide") {
        assert!(
            tokio::time::Instant::now() < deadline,
            "tide never appeared"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (after, declarations) = tools.current();
    assert_ne!(before, after, "a new generation");
    assert!(declarations.iter().any(|d| d.name == "tide"));
    let tide = tools
        .call(
            CallContext::detached("tide", "c1"),
            "tide",
            json!({"port": "Bergen"}),
        )
        .await
        .unwrap();
    assert_eq!(tide, json!({"result": "high tide at Bergen: 14:05"}));
    let bad = tools
        .call(CallContext::detached("tide", "c2"), "tide", json!({}))
        .await
        .unwrap_err();
    assert_eq!(bad.code(), Some("invalid_arguments"));
}

/// Over streamable HTTP: toolc's client of toolc's server, mounted in an axum app.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tools_of_a_streamable_http_server_join_a_registry() {
    use toolc_runtime::executor_fn;
    use toolc_runtime::mcp::McpServer;
    let served = Registry::builder()
        .definitions(
            definitions_from_str(
                "s.tools.yaml",
                "version: 1\ntools:\n  - name: double\n    description: Doubles.\n    location: server\n    parameters:\n      type: object\n      properties: { n: { type: integer } }\n      required: [n]\n    returns:\n      type: object\n      properties: { n: { type: integer } }\n      required: [n]\n  - name: whoami\n    description: Who is calling.\n    location: server\n  - name: wave\n    description: Waves in the page.\n    location: client\n",
            )
            .unwrap(),
        )
        .executor(
            "whoami",
            toolc_runtime::executor_fn_with_context(
                |ctx: CallContext, _args: serde_json::Value| async move {
                    Ok::<_, toolc_runtime::ToolError>(json!({
                        "user": ctx.principal().map(|p| p.id().to_owned()),
                        "session": ctx.session_id(),
                    }))
                },
            ),
        )
        .executor(
            "double",
            executor_fn(|args: serde_json::Value| async move {
                Ok::<_, toolc_runtime::ToolError>(json!({ "n": args["n"].as_i64().unwrap_or(0) * 2 }))
            }),
        )
        .build()
        .unwrap();
    let app = axum::Router::new().nest_service(
        "/mcp",
        // The caller, from the HTTP request: here a header every client sends, standing in
        // for what an authentication middleware would have checked.
        McpServer::new(std::sync::Arc::new(served))
            .with_principal(|parts| {
                let value = parts.headers.get("content-type")?.to_str().ok()?;
                Some(toolc_runtime::Principal::new(value.to_owned()))
            })
            .streamable_http(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let tools = McpTools::connect_http(&format!("http://{addr}/mcp"))
        .await
        .unwrap();
    // Only the server tool crosses: the client tool is not the host's to run.
    let mut names: Vec<String> = tools.definitions().into_iter().map(|d| d.name).collect();
    names.sort();
    assert_eq!(names, ["double", "whoami"]);
    let registry = tools
        .merge_into(Registry::builder(), &[])
        .unwrap()
        .build()
        .unwrap();
    assert_eq!(
        registry
            .call_value("double", json!({"n": 21}))
            .await
            .unwrap(),
        json!({"n": 42})
    );
    // The request's parts reached the executor as its principal. (2026-07-28 has no sessions:
    // each request is served on its own, so each call has a session id of its own.)
    let first = registry.call_value("whoami", json!({})).await.unwrap();
    assert_eq!(first["user"], "application/json", "{first}");
}
