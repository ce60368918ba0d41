use toolc_runtime::tool;

#[tool(manifest = "../manifests/support.tools.yaml")]
async fn search_help_article(query: String) -> Result<String, toolc_runtime::ToolError> {
    Ok(query)
}

fn main() {}
