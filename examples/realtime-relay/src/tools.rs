//! The server executors of `manifests/support.tools.yaml`, over a small bundled help centre and
//! order book.

use serde_json::{json, Value};
use toolc_runtime::{
    executor_fn, executor_fn_with_context, CallContext, Location, Registry, RegistryBuilder,
    ToolDefinition, ToolError,
};

struct Article {
    id: &'static str,
    title: &'static str,
    summary: &'static str,
    section: &'static str,
}

const ARTICLES: &[Article] = &[
    Article {
        id: "refunds",
        title: "Asking for a refund",
        summary: "Refunds are possible within 30 days of delivery from the Orders page: choose the order, then Request refund.",
        section: "refunds",
    },
    Article {
        id: "shipping-times",
        title: "Shipping times",
        summary: "Standard shipping takes 3 to 5 working days; express shipping arrives the next working day when ordered before 2 pm.",
        section: "shipping",
    },
    Article {
        id: "change-address",
        title: "Changing the delivery address",
        summary: "The delivery address can be changed until the order is packed, under Orders, Edit address.",
        section: "orders",
    },
    Article {
        id: "reset-password",
        title: "Resetting your password",
        summary: "Use Forgot password on the sign-in page; the reset link in the e-mail is valid for one hour.",
        section: "account",
    },
    Article {
        id: "cancel-order",
        title: "Cancelling an order",
        summary: "Orders can be cancelled free of charge until they are shipped, from the order's page.",
        section: "orders",
    },
];

/// `(customer, number, status, eta)`.
const ORDERS: &[(&str, &str, &str, Option<&str>)] = &[
    ("alice", "AB-123456", "shipped", Some("2026-12-03")),
    ("alice", "AB-654321", "packed", Some("2026-12-05")),
    ("bob", "CD-000001", "delivered", None),
    ("bob", "EF-777777", "cancelled", None),
];

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() > 2)
        .map(str::to_lowercase)
        .collect()
}

/// Articles ranked by how many query words they contain (title words count double); ties keep
/// the bundled order, so results are deterministic.
pub fn search(query: &str, limit: usize) -> Value {
    let terms = words(query);
    let mut scored: Vec<(usize, usize)> = ARTICLES
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let title = words(a.title);
            let body = words(a.summary);
            let score = terms
                .iter()
                .map(|t| {
                    2 * title.iter().filter(|w| w.starts_with(t.as_str())).count()
                        + body.iter().filter(|w| w.starts_with(t.as_str())).count()
                })
                .sum();
            (score, i)
        })
        .filter(|(score, _)| *score > 0)
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let articles: Vec<Value> = scored
        .into_iter()
        .take(limit)
        .map(|(_, i)| {
            let a = &ARTICLES[i];
            json!({ "id": a.id, "title": a.title, "summary": a.summary, "section": a.section })
        })
        .collect();
    json!({ "articles": articles })
}

/// With a signed-in customer (the relay's `--auth-tokens`), only that customer's orders are
/// found, and someone else's order reads exactly like one that does not exist, so the tool
/// cannot be used to probe which numbers are real. Without authentication (a relay on loopback
/// for development) there is no caller to tell apart, and every order is found.
pub fn order_status(customer: Option<&str>, order_number: &str) -> Result<Value, ToolError> {
    ORDERS
        .iter()
        .filter(|(owner, ..)| customer.is_none_or(|c| c == *owner))
        .find(|(_, n, _, _)| *n == order_number)
        .map(|(_, _, status, eta)| json!({ "status": status, "eta": eta }))
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
                Ok(search(query, limit))
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
        let found = search("how do I get a refund", 3);
        assert_eq!(found["articles"][0]["id"], "refunds");
        let none = search("zzzz", 3);
        assert_eq!(none["articles"].as_array().unwrap().len(), 0);
        let orders = search("cancel order", 1);
        assert_eq!(orders["articles"].as_array().unwrap().len(), 1);
        assert_eq!(orders["articles"][0]["id"], "cancel-order");
    }

    #[test]
    fn order_status_knows_its_orders() {
        assert_eq!(
            order_status(None, "AB-123456").unwrap()["status"],
            "shipped"
        );
        assert_eq!(order_status(None, "CD-000001").unwrap()["eta"], Value::Null);
        assert_eq!(
            order_status(None, "ZZ-999999").unwrap_err().code(),
            Some("not_found")
        );
    }

    #[test]
    fn a_signed_in_customer_finds_only_their_own_orders() {
        assert_eq!(
            order_status(Some("alice"), "AB-123456").unwrap()["status"],
            "shipped"
        );
        // Bob's order reads like one that does not exist.
        let theirs = order_status(Some("alice"), "CD-000001").unwrap_err();
        let missing = order_status(Some("alice"), "ZZ-999999").unwrap_err();
        assert_eq!(theirs.code(), missing.code());
        assert_eq!(
            order_status(Some("bob"), "CD-000001").unwrap()["status"],
            "delivered"
        );
    }
}
