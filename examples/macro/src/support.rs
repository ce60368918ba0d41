//! The support agent's tools, bound to `manifests/support.tools.yaml`: each `#[tool]` signature is
//! compared with the manifest when this crate compiles, and [`registry`] fails to compile if a
//! server tool of the manifest has no executor here.

use serde::Serialize;
use toolc_runtime::{tool, tools, Registry, RegistryError, ToolError};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Article {
    pub id: String,
    pub title: String,
    pub summary: String,
    pub section: String,
}

#[derive(Debug, Serialize)]
pub struct Articles {
    pub articles: Vec<Article>,
}

const HELP_CENTRE: &[(&str, &str, &str, &str)] = &[
    (
        "a1",
        "Refunds",
        "How to get your money back for a return.",
        "refunds",
    ),
    (
        "a2",
        "Returns",
        "Send an item back within 30 days.",
        "returns",
    ),
    (
        "a3",
        "Delivery times",
        "When your order arrives.",
        "delivery",
    ),
    (
        "a4",
        "Changing your address",
        "Update where we deliver.",
        "account",
    ),
];

/// `limit` is a plain `u8`: the manifest gives it a default (3), which the executor applies
/// when the model leaves it out, and bounds (1..=10) that fit a `u8`.
#[tool(manifest = "../../manifests/support.tools.yaml")]
pub async fn search_help_articles(query: String, limit: u8) -> Result<Articles, ToolError> {
    let words: Vec<String> = query
        .to_lowercase()
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    let mut scored: Vec<(usize, Article)> = HELP_CENTRE
        .iter()
        .map(|&(id, title, summary, section)| {
            let text = format!("{title} {summary}").to_lowercase();
            let score = words.iter().filter(|w| text.contains(w.as_str())).count();
            let article = Article {
                id: id.into(),
                title: title.into(),
                summary: summary.into(),
                section: section.into(),
            };
            (score, article)
        })
        .filter(|(score, _)| *score > 0)
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.id.cmp(&b.1.id)));
    Ok(Articles {
        articles: scored
            .into_iter()
            .take(usize::from(limit))
            .map(|(_, a)| a)
            .collect(),
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Placed,
    Packed,
    Shipped,
    Delivered,
    Cancelled,
}

#[derive(Debug, Serialize)]
pub struct OrderStatus {
    pub status: Status,
    /// Serialized as `null` when unknown, as the manifest's `[string, "null"]` asks.
    pub eta: Option<String>,
}

/// The manifest's `pattern` has already been checked when this runs.
#[tool(manifest = "../../manifests/support.tools.yaml")]
pub fn get_order_status(order_number: &str) -> Result<OrderStatus, ToolError> {
    match order_number.get(..2) {
        Some("AB") => Ok(OrderStatus {
            status: Status::Shipped,
            eta: Some("2026-05-04".into()),
        }),
        Some("CD") => Ok(OrderStatus {
            status: Status::Placed,
            eta: None,
        }),
        _ => Err(ToolError::new(format!("no order {order_number}")).with_code("not_found")),
    }
}

// Client tools run in the browser: declared without a body, checked against the manifest.
#[tool(client, manifest = "../../manifests/support.tools.yaml")]
pub fn highlight_element(selector: String, color: Option<String>);

#[tool(client, manifest = "../../manifests/support.tools.yaml")]
pub fn scroll_to_section(section_id: String);

/// The registry of every tool in the manifest, with the executors above.
pub fn registry() -> Result<Registry, RegistryError> {
    tools!(manifest = "../../manifests/support.tools.yaml";
        search_help_articles, get_order_status, highlight_element, scroll_to_section)
    .build()
}
