//! The executors of the support manifest's server tools, over a small bundled help centre and
//! order book. Kept free of other crate paths except `crate::support`, so the location-rule
//! compile-fail tests can compile this exact file against modified manifests.

use toolc_runtime::{CallContext, ToolError};

use crate::support::{
    GetOrderStatusArgs, GetOrderStatusOutput, GetOrderStatusOutputStatus, SearchHelpArticlesArgs,
    SearchHelpArticlesOutput, SearchHelpArticlesOutputArticlesItem, SupportServer,
};

struct Article {
    id: &'static str,
    title: &'static str,
    summary: &'static str,
    section: &'static str,
}

const ARTICLES: &[Article] = &[
    Article {
        id: "kb-101",
        title: "Reset your password",
        summary: "Use the 'Forgot password' link on the sign-in page; the reset email arrives within five minutes.",
        section: "account-password",
    },
    Article {
        id: "kb-102",
        title: "Change the email address on your account",
        summary: "Open Settings, then Account, and enter the new address; we send a confirmation link to it.",
        section: "account-email",
    },
    Article {
        id: "kb-201",
        title: "Track your order",
        summary: "Your order number is on the receipt; enter it under Orders to see where the parcel is.",
        section: "orders-tracking",
    },
    Article {
        id: "kb-202",
        title: "Return an item",
        summary: "Items can be returned within 30 days; start a return under Orders and print the label.",
        section: "orders-returns",
    },
    Article {
        id: "kb-301",
        title: "Payment methods we accept",
        summary: "We accept cards, PayPal and gift cards; invoices are available for business accounts.",
        section: "billing-payment",
    },
    Article {
        id: "kb-302",
        title: "Download an invoice",
        summary: "Every order has a PDF invoice under Orders, then Details, then Invoice.",
        section: "billing-invoices",
    },
];

/// `(owner, order number, status, expected delivery date)`; the owner is the id of the
/// [`toolc_runtime::Principal`] that the relay's authorizer gave the customer's session.
const ORDERS: &[(&str, &str, GetOrderStatusOutputStatus, Option<&str>)] = &[
    (
        "alice",
        "AB-123456",
        GetOrderStatusOutputStatus::Shipped,
        Some("2026-05-14"),
    ),
    (
        "alice",
        "AB-200001",
        GetOrderStatusOutputStatus::Placed,
        Some("2026-05-20"),
    ),
    (
        "alice",
        "CD-654321",
        GetOrderStatusOutputStatus::Delivered,
        None,
    ),
    (
        "bob",
        "EF-000042",
        GetOrderStatusOutputStatus::Cancelled,
        None,
    ),
    (
        "bob",
        "GH-777777",
        GetOrderStatusOutputStatus::Packed,
        Some("2026-05-16"),
    ),
];

/// The executors of the support manifest's server tools.
#[derive(Debug, Default, Clone)]
pub struct SupportDesk {
    _private: (),
}

impl SupportDesk {
    pub fn new() -> SupportDesk {
        SupportDesk::default()
    }
}

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() > 2)
        .map(str::to_lowercase)
        .collect()
}

impl SupportServer for SupportDesk {
    async fn search_help_articles(
        &self,
        _ctx: &CallContext,
        args: SearchHelpArticlesArgs,
    ) -> Result<SearchHelpArticlesOutput, ToolError> {
        let query = words(&args.query);
        // Score = query words found in the title (twice) or the summary; ties keep catalogue order.
        let mut scored: Vec<(usize, usize)> = ARTICLES
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let title = words(a.title);
                let summary = words(a.summary);
                let score = query
                    .iter()
                    .map(|w| {
                        2 * usize::from(title.iter().any(|t| t.starts_with(w.as_str())))
                            + usize::from(summary.iter().any(|s| s.starts_with(w.as_str())))
                    })
                    .sum();
                (score, i)
            })
            .filter(|&(score, _)| score > 0)
            .collect();
        scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let limit = usize::try_from(args.limit).unwrap_or(0);
        let articles = scored
            .into_iter()
            .take(limit)
            .map(|(_, i)| {
                let a = &ARTICLES[i];
                SearchHelpArticlesOutputArticlesItem {
                    id: a.id.into(),
                    title: a.title.into(),
                    summary: a.summary.into(),
                    section: a.section.into(),
                }
            })
            .collect();
        Ok(SearchHelpArticlesOutput { articles })
    }

    /// Only the caller's own orders are found: someone else's order reads exactly like one that
    /// does not exist, so the tool cannot be used to probe which numbers are real.
    async fn get_order_status(
        &self,
        ctx: &CallContext,
        args: GetOrderStatusArgs,
    ) -> Result<GetOrderStatusOutput, ToolError> {
        let Some(customer) = ctx.principal() else {
            return Err(ToolError::new(
                "order lookups need a signed-in customer; ask the customer to sign in first",
            )
            .with_code("not_signed_in"));
        };
        let found = ORDERS
            .iter()
            .find(|(owner, n, _, _)| *owner == customer.id() && *n == args.order_number);
        match found {
            Some(&(_, _, status, eta)) => Ok(GetOrderStatusOutput {
                status,
                eta: eta.map(str::to_owned),
            }),
            None => Err(ToolError::new(format!(
                "there is no order {}; ask the customer to check the number on the receipt",
                args.order_number
            ))
            .with_code("order_not_found")),
        }
    }
}
