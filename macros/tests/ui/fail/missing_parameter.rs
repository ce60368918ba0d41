use toolc_runtime::{tool, ToolError};

#[tool(manifest = "../manifests/support.tools.yaml")]
async fn search_help_articles(query: String) -> Result<serde_json::Value, ToolError> {
    Ok(serde_json::json!({ "query": query }))
}

#[tool(manifest = "../manifests/support.tools.yaml")]
fn get_order_status() -> Result<String, ToolError> {
    Ok(String::new())
}

fn main() {}
