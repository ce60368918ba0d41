//! The server executors of `manifests/support.tools.yaml`, over the examples' shared support
//! desk (the `support-desk` crate).

use serde_json::{json, Value};
use support_desk::Data;
use toolc_runtime::{
    executor_fn, executor_fn_with_context, CallContext, Location, Registry, RegistryBuilder,
    ToolDefinition, ToolError,
};

/// The examples' shared help centre and order book, parsed once.
static DATA: std::sync::LazyLock<Result<Data, String>> = std::sync::LazyLock::new(Data::bundled);

fn data() -> Result<&'static Data, ToolError> {
    DATA.as_ref()
        .map_err(|e| ToolError::new(format!("the bundled support desk is broken: {e}")))
}

/// Articles ranked by [`Data::search`], as `search_help_articles` returns them.
pub fn search(query: &str, limit: usize) -> Result<Value, ToolError> {
    let articles = data()?.search(query, limit);
    Ok(json!({ "articles": articles }))
}

/// With a signed-in customer (the relay's `--auth-tokens`), only that customer's orders are
/// found, and someone else's order reads exactly like one that does not exist, so the tool
/// cannot be used to probe which numbers are real. Without authentication (a relay on loopback
/// for development) there is no caller to tell apart, and every order is found.
pub fn order_status(customer: Option<&str>, order_number: &str) -> Result<Value, ToolError> {
    data()?
        .order_of(customer, order_number)
        .map(|o| json!({ "status": o.status, "eta": o.eta }))
        .ok_or_else(|| {
            ToolError::new(format!("there is no order {order_number}; ask the customer to check the number on the receipt"))
                .with_code("not_found")
        })
}

/// The registry before it is built: the manifests' definitions plus the executors of those of
/// this example's tools that they declare as server tools, so that more tools (a remote
/// catalog's) can join. The location rule is checked when it is built, so a manifest with a
/// server tool nobody executes is refused.
pub fn builder(definitions: Vec<ToolDefinition>) -> RegistryBuilder {
    let declared = |name: &str| {
        definitions
            .iter()
            .any(|d| d.name == name && d.location == Location::Server)
    };
    let (search_declared, orders_declared) = (
        declared("search_help_articles"),
        declared("get_order_status"),
    );
    let mut builder = Registry::builder().definitions(definitions);
    if search_declared {
        builder = builder.executor(
            "search_help_articles",
            executor_fn(|args: Value| async move {
                let query = args["query"].as_str().unwrap_or_default();
                let limit = args["limit"].as_u64().unwrap_or(3).clamp(1, 10) as usize;
                search(query, limit)
            }),
        );
    }
    if orders_declared {
        builder = builder.executor(
            "get_order_status",
            executor_fn_with_context(|ctx: CallContext, args: Value| async move {
                let customer = ctx.principal().map(|p| p.id());
                order_status(customer, args["order_number"].as_str().unwrap_or_default())
            }),
        );
    }
    builder
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_ranks_by_matching_words() {
        let found = search("how do I get a refund", 3).unwrap();
        assert_eq!(found["articles"][0]["id"], "request-refund");
        assert_eq!(found["articles"][0]["section"], "refunds");
        assert!(found["articles"][0].get("keywords").is_none());
        let none = search("zzzz", 3).unwrap();
        assert_eq!(none["articles"].as_array().unwrap().len(), 0);
        let orders = search("cancel order", 1).unwrap();
        assert_eq!(orders["articles"].as_array().unwrap().len(), 1);
        assert_eq!(orders["articles"][0]["id"], "cancel-order");
    }

    #[test]
    fn order_status_knows_its_orders() {
        assert_eq!(
            order_status(None, "AB-123456").unwrap()["status"],
            "delivered"
        );
        assert_eq!(order_status(None, "AB-123456").unwrap()["eta"], Value::Null);
        assert_eq!(
            order_status(None, "CD-000001").unwrap()["eta"],
            "2026-12-07"
        );
        assert_eq!(
            order_status(None, "ZZ-999999").unwrap_err().code(),
            Some("not_found")
        );
    }

    #[test]
    fn a_signed_in_customer_finds_only_their_own_orders() {
        assert_eq!(
            order_status(Some("alice"), "AB-123456").unwrap()["status"],
            "delivered"
        );
        // Bob's order reads like one that does not exist.
        let theirs = order_status(Some("alice"), "CD-000001").unwrap_err();
        let missing = order_status(Some("alice"), "ZZ-999999").unwrap_err();
        assert_eq!(theirs.code(), missing.code());
        assert_eq!(
            order_status(Some("bob"), "CD-000001").unwrap()["status"],
            "packed"
        );
    }
}
