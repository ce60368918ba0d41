//! The server tools of `manifests/support.tools.yaml` over the examples' shared support desk
//! (the `support-desk` crate): the help articles that the page itself shows, one `section` per
//! page section, and the order book.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use toolc_runtime::{
    typed_executor, typed_executor_with_context, CallContext, Registry, ToolDefinition, ToolError,
};

pub use support_desk::{Article, Data, Order};

#[derive(Deserialize)]
struct SearchArgs {
    query: String,
    limit: Option<u64>,
}

#[derive(Serialize)]
struct ArticleOut<'a> {
    id: &'a str,
    title: &'a str,
    summary: &'a str,
    section: &'a str,
}

#[derive(Deserialize)]
struct OrderArgs {
    order_number: String,
}

#[derive(Deserialize)]
struct RefundArgs {
    order_number: String,
}

/// The manifests' definitions with this demo's three executors. Building the registry checks
/// the location rule, so manifests whose server tools differ from these are refused at startup.
/// `submit_refund_request` needs approval: the relay runs it only after the page said yes.
pub fn registry(definitions: Vec<ToolDefinition>, data: Arc<Data>) -> Result<Registry, String> {
    let search_data = data.clone();
    let order_data = data.clone();
    let refund_data = data;
    Registry::builder()
        .definitions(definitions)
        .executor(
            "search_help_articles",
            typed_executor(move |args: SearchArgs| {
                let data = search_data.clone();
                async move {
                    // The schema's default and bounds; validated already, clamped again so the
                    // executor is safe on its own.
                    let limit = args.limit.unwrap_or(3).clamp(1, 10) as usize;
                    let articles: Vec<serde_json::Value> = data
                        .search(&args.query, limit)
                        .into_iter()
                        .map(|a| {
                            serde_json::json!(ArticleOut {
                                id: &a.id,
                                title: &a.title,
                                summary: &a.summary,
                                section: &a.section,
                            })
                        })
                        .collect();
                    Ok::<_, ToolError>(serde_json::json!({ "articles": articles }))
                }
            }),
        )
        .executor(
            "get_order_status",
            typed_executor_with_context(move |ctx: CallContext, args: OrderArgs| {
                let data = order_data.clone();
                async move {
                    // A signed-in caller sees only their own orders (see `Data::order_of`).
                    let customer = ctx.principal().map(|p| p.id().to_owned());
                    match data.order_of(customer.as_deref(), &args.order_number) {
                        Some(o) => Ok(serde_json::json!({ "status": o.status, "eta": o.eta })),
                        None => Err(ToolError::new(format!(
                            "there is no order {}; ask the customer to read the number on the receipt again",
                            args.order_number
                        ))
                        .with_code("not_found")),
                    }
                }
            }),
        )
        .executor(
            "submit_refund_request",
            typed_executor_with_context(move |ctx: CallContext, args: RefundArgs| {
                let data = refund_data.clone();
                async move {
                    // A signed-in caller sees only their own orders (see `Data::order_of`).
                    let customer = ctx.principal().map(|p| p.id().to_owned());
                    match data.order_of(customer.as_deref(), &args.order_number) {
                        Some(o) if o.status == "delivered" => Ok(serde_json::json!({
                            // The same request for the same order: idempotent, as declared.
                            "request_id": format!("RR-{}", &o.order_number[3..]),
                            "order_number": o.order_number,
                            "status": "submitted",
                        })),
                        Some(o) => Err(ToolError::new(format!(
                            "order {} is {}; refunds are for delivered orders",
                            o.order_number, o.status
                        ))
                        .with_code("not_delivered")),
                        None => Err(ToolError::new(format!(
                            "there is no order {}",
                            args.order_number
                        ))
                        .with_code("not_found")),
                    }
                }
            }),
        )
        .build()
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A signed-in caller reaches only their own orders, for a lookup and for a refund; without
    /// a caller (this demo has no sign-in) every order is found.
    #[tokio::test]
    async fn a_signed_in_caller_reaches_only_their_own_orders() {
        let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let definitions = toolc_runtime::load_definitions([
            here.join("../../manifests/support.tools.yaml"),
            here.join("refunds.tools.yaml"),
        ])
        .unwrap();
        let registry = registry(definitions, Arc::new(Data::bundled().unwrap())).unwrap();
        let scope = |who: Option<&str>| {
            toolc_runtime::SessionScope::new()
                .with_principal(who.map(toolc_runtime::Principal::new))
        };
        let call = |who: Option<&'static str>, tool: &'static str| {
            // The refund tool asks for approval: the page said yes to exactly these arguments.
            let ctx = scope(who)
                .call(tool, "c1")
                .with_approval(toolc_runtime::ApprovalGrant::new(
                    tool,
                    "c1",
                    serde_json::json!({"order_number": "CD-000001"}),
                ));
            let registry = &registry;
            async move {
                registry
                    .call_with_context(ctx, r#"{"order_number":"CD-000001"}"#)
                    .await
            }
        };
        // CD-000001 is bob's order.
        assert!(call(Some("bob"), "get_order_status").await.is_ok());
        assert!(call(None, "get_order_status").await.is_ok());
        let theirs = call(Some("alice"), "get_order_status").await.unwrap_err();
        assert_eq!(theirs.code(), Some("not_found"));
        let refund = call(Some("alice"), "submit_refund_request")
            .await
            .unwrap_err();
        assert_eq!(
            refund.code(),
            Some("not_found"),
            "not `not_delivered`: nothing leaks"
        );
        let own = call(Some("bob"), "submit_refund_request")
            .await
            .unwrap_err();
        assert_eq!(own.code(), Some("not_delivered"));
    }

    #[test]
    fn orders_are_found_by_number() {
        let data = Data::bundled().unwrap();
        assert_eq!(data.order("AB-123456").unwrap().status, "delivered");
        assert!(data.order("ZZ-000000").is_none());
    }

    #[test]
    fn bundled_orders_fit_the_manifest() {
        let data = Data::bundled().unwrap();
        let pattern_ok = |n: &str| {
            let b = n.as_bytes();
            b.len() == 9
                && b[..2].iter().all(u8::is_ascii_uppercase)
                && b[2] == b'-'
                && b[3..].iter().all(u8::is_ascii_digit)
        };
        for o in &data.orders {
            assert!(pattern_ok(&o.order_number), "{}", o.order_number);
            assert!(
                ["placed", "packed", "shipped", "delivered", "cancelled"]
                    .contains(&o.status.as_str()),
                "{}",
                o.status
            );
        }
    }
}
