use toolc_runtime::{tool, ToolError};

#[tool(manifest = "../manifests/support.tools.yaml")]
fn get_order_status(order_number: u64) -> Result<String, ToolError> {
    Ok(order_number.to_string())
}

#[tool(manifest = "../manifests/support.tools.yaml")]
async fn search_help_articles(query: Vec<String>, limit: bool) -> Result<String, ToolError> {
    let _ = (query, limit);
    Ok(String::new())
}

// `guests` is an integer with no minimum: `u8` cannot hold the negative numbers it allows.
#[tool(manifest = "tests/manifests/shapes.tools.yaml")]
fn book_table(guests: u8, time: String, note: Option<String>, high_chair: Option<bool>) -> Result<bool, ToolError> {
    let _ = (guests, time, note, high_chair);
    Ok(true)
}

fn main() {}
