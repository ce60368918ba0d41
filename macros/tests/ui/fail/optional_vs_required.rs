use toolc_runtime::{tool, ToolError};

// `time` is required, `note` optional without a default, `high_chair` required but nullable.
#[tool(manifest = "tests/manifests/shapes.tools.yaml")]
fn book_table(guests: i32, time: Option<String>, note: String, high_chair: bool) -> Result<bool, ToolError> {
    let _ = (guests, time, note, high_chair);
    Ok(true)
}

fn main() {}
