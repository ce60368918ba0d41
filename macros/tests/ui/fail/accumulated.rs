use toolc_runtime::{tool, ToolError};

// Every disagreement with the manifest is reported at once, each at its own parameter.
#[tool(manifest = "../manifests/support.tools.yaml")]
async fn search_help_articles(qurey: String, limit: Option<String>, page: u32) -> Result<String, ToolError> {
    let _ = (qurey, limit, page);
    Ok(String::new())
}

fn main() {}
