use toolc_runtime::{tool, tools, ToolError};

#[tool(manifest = "../manifests/support.tools.yaml")]
async fn search_help_articles(query: String, limit: u32) -> Result<serde_json::Value, ToolError> {
    Ok(serde_json::json!({ "query": query, "limit": limit }))
}

fn main() {
    // `get_order_status` is a server tool of the manifest and has no executor here.
    let _ = tools!(manifest = "../manifests/support.tools.yaml"; search_help_articles);
}
