use toolc_runtime::{tool, tools, ToolError};

#[tool(manifest = "../manifests/support.tools.yaml")]
async fn search_help_articles(query: String, limit: u32) -> Result<serde_json::Value, ToolError> {
    Ok(serde_json::json!({ "query": query, "limit": limit }))
}

/// Look up an order (defined from Rust alone, so its signature was never checked).
#[tool]
fn get_order_status(order_number: String) -> String {
    order_number
}

fn main() {
    let _ = tools!(manifest = "../manifests/support.tools.yaml"; search_help_articles, get_order_status);
}
