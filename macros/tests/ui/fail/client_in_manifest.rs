use toolc_runtime::tool;

// The manifest declares `highlight_element` as `location: client`.
#[tool(manifest = "../manifests/support.tools.yaml")]
async fn highlight_element(selector: String, color: Option<String>) -> Result<bool, toolc_runtime::ToolError> {
    let _ = (selector, color);
    Ok(true)
}

fn main() {}
