//! The support agent's tools, bound to `manifests/support.tools.yaml`: each `#[tool]` signature is
//! compared with the manifest when this crate compiles, and [`registry`] fails to compile if a
//! server tool of the manifest has no executor here.

use serde::{Deserialize, Serialize};
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

/// The examples' shared help centre and order book, parsed on first use.
static DATA: std::sync::LazyLock<Result<support_desk::Data, String>> =
    std::sync::LazyLock::new(support_desk::Data::bundled);

fn data() -> Result<&'static support_desk::Data, ToolError> {
    DATA.as_ref()
        .map_err(|e| ToolError::new(format!("the bundled support desk is broken: {e}")))
}

/// `limit` is a plain `u8`: the manifest gives it a default (3), which the executor applies
/// when the model leaves it out, and bounds (1..=10) that fit a `u8`.
#[tool(manifest = "../../manifests/support.tools.yaml")]
pub async fn search_help_articles(query: String, limit: u8) -> Result<Articles, ToolError> {
    let articles = data()?
        .search(&query, usize::from(limit))
        .into_iter()
        .map(|a| Article {
            id: a.id.clone(),
            title: a.title.clone(),
            summary: a.summary.clone(),
            section: a.section.clone(),
        })
        .collect();
    Ok(Articles { articles })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
    let Some(order) = data()?.order(order_number) else {
        return Err(ToolError::new(format!("no order {order_number}")).with_code("not_found"));
    };
    let status = serde_json::from_value(serde_json::Value::String(order.status.clone()))
        .map_err(|e| ToolError::new(format!("order {order_number}: {e}")))?;
    Ok(OrderStatus {
        status,
        eta: order.eta.clone(),
    })
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
