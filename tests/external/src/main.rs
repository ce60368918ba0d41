// src/main.rs: the generated module, its server trait, a `#[tool]` fn, and calls.
mod orders {
    toolc_runtime::include_tools!("orders");
}

use orders::{OrderStatusArgs, OrderStatusOutput, OrderStatusOutputStatus, OrdersServer};
use toolc_runtime::{tool, tools, CallContext, ToolError};

struct Shop;

// One async fn per server tool of the manifest; leaving one out does not compile.
impl OrdersServer for Shop {
    async fn order_status(
        &self,
        _ctx: &CallContext,
        args: OrderStatusArgs,
    ) -> Result<OrderStatusOutput, ToolError> {
        let status = match args.order_number.as_str() {
            "AB-1234" => OrderStatusOutputStatus::Shipped,
            _ => OrderStatusOutputStatus::Processing,
        };
        Ok(OrderStatusOutput { status })
    }
}

/// Adds two numbers: a tool defined by its Rust signature alone.
#[tool]
async fn add(a: i64, b: i64) -> Result<i64, ToolError> {
    Ok(a + b)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = orders::registry(Shop)?;
    let status = registry
        .call("order_status", r#"{"order_number":"AB-1234"}"#)
        .await?;
    assert_eq!(status, r#"{"status":"shipped"}"#);
    // Arguments are validated before the executor runs.
    let refused = registry
        .call("order_status", r#"{"order_number":"nope"}"#)
        .await
        .unwrap_err();
    assert_eq!(refused.kind().as_str(), "invalid_arguments");
    // A client tool has no server executor: the registry says where it runs.
    assert!(registry.definition("show_order").is_some());

    let maths = tools![add].build()?;
    assert_eq!(maths.call("add", r#"{"a":2,"b":3}"#).await?, "5");
    println!("order_status: {status}; add: 5");
    Ok(())
}
