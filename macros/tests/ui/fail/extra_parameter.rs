use toolc_runtime::{tool, ToolError};

#[tool(manifest = "../manifests/support.tools.yaml")]
fn get_order_status(order_number: String, verbose: bool, ordr: Option<String>) -> Result<String, ToolError> {
    let _ = (verbose, ordr);
    Ok(order_number)
}

fn main() {}
