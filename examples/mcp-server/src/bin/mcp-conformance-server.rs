//! The fixture tools of the official MCP conformance suite (`@modelcontextprotocol/conformance`)
//! served by `McpServer` over streamable HTTP, so that the suite's server scenarios can run
//! against toolc (`tests/mcp-conformance`, run by `npm test`). The tools are an ordinary manifest
//! and ordinary executors: what the suite sees is what any registry gets.
//!
//! `mcp-conformance-server [ADDR]` (default `127.0.0.1:0`) prints `listening on
//! http://ADDR/mcp` once it accepts connections.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use toolc_runtime::mcp::McpServer;
use toolc_runtime::{
    definitions_from_str, executor_fn, executor_fn_with_context, Registry, ToolContent, ToolError,
};

/// The suite's fixture tools, by the names and arguments its scenarios call.
const FIXTURES: &str = r#"
version: 1
tools:
  - name: test_simple_text
    description: Answers with a fixed text.
    location: server
  - name: test_image_content
    description: Answers with a small PNG image.
    location: server
    returns: content
  - name: test_audio_content
    description: Answers with a short WAV sound.
    location: server
    returns: content
  - name: test_embedded_resource
    description: Answers with an embedded text resource.
    location: server
    returns: content
  - name: test_multiple_content_types
    description: Answers with text, an image and a resource.
    location: server
    returns: content
  - name: test_tool_with_logging
    description: Logs three messages while it runs.
    location: server
  - name: test_error_handling
    description: Always fails, as a tool error.
    location: server
  - name: test_tool_with_progress
    description: Reports progress three times before it answers.
    location: server
  - name: test_sampling
    description: Asks the client's model to complete a prompt.
    location: server
    parameters:
      type: object
      properties:
        prompt: { type: string, description: The prompt to send to the LLM }
      required: [prompt]
  - name: test_elicitation
    description: Asks the user for input.
    location: server
    parameters:
      type: object
      properties:
        message: { type: string, description: The message to show the user }
      required: [message]
"#;

const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
const WAV: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

fn registry() -> Result<Registry, String> {
    let definitions =
        definitions_from_str("conformance.tools.yaml", FIXTURES).map_err(|e| e.to_string())?;
    let fixed = |value: Value| executor_fn(move |_| std::future::ready(Ok(value.clone())));
    let content = |blocks: ToolContent| fixed(serde_json::to_value(blocks).unwrap_or_default());
    Registry::builder()
        .definitions(definitions)
        .executor(
            "test_simple_text",
            fixed(json!("This is a simple text response for testing.")),
        )
        .executor(
            "test_image_content",
            content(ToolContent::new().image(PNG, "image/png")),
        )
        .executor(
            "test_audio_content",
            content(ToolContent::new().audio(WAV, "audio/wav")),
        )
        .executor(
            "test_embedded_resource",
            content(ToolContent::new().resource_text(
                "test://embedded-resource",
                "text/plain",
                "This is an embedded resource content.",
            )),
        )
        .executor(
            "test_multiple_content_types",
            content(
                ToolContent::new()
                    .text("Multiple content types test:")
                    .image(PNG, "image/png")
                    .resource_text(
                        "test://mixed-content-resource",
                        "application/json",
                        r#"{"test":"data","value":123}"#,
                    ),
            ),
        )
        .executor(
            "test_tool_with_logging",
            executor_fn(|_| async {
                for (i, step) in [
                    "Tool execution started",
                    "Tool processing data",
                    "Tool execution completed",
                ]
                .into_iter()
                .enumerate()
                {
                    if i > 0 {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    tracing::info!(target: "conformance", "{step}");
                }
                Ok(json!("Tool with logging executed successfully"))
            }),
        )
        .executor(
            "test_error_handling",
            executor_fn(|_| async {
                Err::<Value, _>(ToolError::new(
                    "This tool intentionally returns an error for testing",
                ))
            }),
        )
        .executor(
            "test_tool_with_progress",
            executor_fn_with_context(|ctx, _| async move {
                for (i, progress) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    let message = format!("Completed step {progress} of 100");
                    ctx.report_progress(progress, Some(100.0), Some(&message));
                }
                Ok(json!("Progress test completed"))
            }),
        )
        // A toolc executor cannot ask the client's model or user mid-call (sampling,
        // elicitation): these answer so, and the suite's scenarios for them are expected to fail.
        .executor(
            "test_sampling",
            fixed(json!("sampling is not available to toolc executors")),
        )
        .executor(
            "test_elicitation",
            fixed(json!("elicitation is not available to toolc executors")),
        )
        .build()
        .map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    // Events recorded during a call reach the client that set a level (the logging scenario).
    use tracing_subscriber::layer::SubscriberExt;
    let _ = tracing::subscriber::set_global_default(
        tracing_subscriber::registry().with(toolc_runtime::mcp::log_layer()),
    );
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".to_owned());
    mcp_server::run(None, serve(addr))
}

async fn serve(addr: String) -> Result<(), String> {
    let server = McpServer::new(Arc::new(registry()?))
        .with_implementation("toolc-conformance-fixtures", env!("CARGO_PKG_VERSION"));
    let app = axum::Router::new().nest_service("/mcp", server.streamable_http());
    let listener = tokio::net::TcpListener::bind(&addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let bound = listener.local_addr().map_err(|e| e.to_string())?;
    println!("listening on http://{bound}/mcp");
    axum::serve(listener, app).await.map_err(|e| e.to_string())
}
