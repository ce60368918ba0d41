// A relay for your own tools: your manifest, your executors, the relay of toolc-runtime.
use std::sync::Arc;

use toolc_runtime::relay::{Relay, RelayConfig, StaticTokens};
use toolc_runtime::{executor_fn, load_definitions, Registry, ToolError};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // With build.rs and `include_tools!`, this is `Arc::new(billing::registry(Billing)?)`.
    let registry = Arc::new(
        Registry::builder()
            .definitions(load_definitions(["billing.tools.yaml"])?)
            .executor(
                "refund_order",
                executor_fn(|args: serde_json::Value| async move {
                    Ok::<_, ToolError>(serde_json::json!({ "refunded": args["order_number"] }))
                }),
            )
            .build()?,
    );
    let mut config = RelayConfig::new(&registry);
    config.api_key = Some(std::env::var("OPENAI_API_KEY")?);
    config.authorizer = Some(Arc::new(StaticTokens::from_file("tokens.txt".as_ref())?));
    Relay::bind("127.0.0.1:8787", registry, config)
        .await?
        .serve()
        .await;
    Ok(())
}
