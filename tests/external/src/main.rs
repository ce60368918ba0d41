// src/main.rs: the generated module, its server trait, a `#[tool]` fn, and calls.
mod orders {
    toolc_runtime::include_tools!("orders");
}

use orders::{OrderStatusArgs, OrderStatusOutput, OrderStatusOutputStatus, OrdersServer};
use orders::{RefundOrderArgs, RefundOrderOutput};
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

    // `approval: required`: runs only once the user said yes (see "Call behaviours").
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
    // Without the user's approval, a refund does not run.
    let unapproved = registry
        .call("refund_order", r#"{"order_number":"AB-1234"}"#)
        .await
        .unwrap_err();
    assert_eq!(unapproved.code(), Some("approval_required"));

    let maths = tools![add].build()?;
    assert_eq!(maths.call("add", r#"{"a":2,"b":3}"#).await?, "5");
    // `#[tool]` fns (or an MCP server's, a catalog's tools) join the typed ones before `build()`.
    let shop = tools!(builder = orders::registry_builder(Shop); add).build()?;
    assert_eq!(shop.call("add", r#"{"a":40,"b":2}"#).await?, "42");
    println!(
        "order_status: {status}; add: 5; one registry: {}",
        shop.len()
    );
    Ok(())
}
