use toolc_runtime::{tool, ToolError};

// A struct of the user's that derives Deserialize but not schemars::JsonSchema.
#[derive(serde::Deserialize)]
struct Filter {
    text: String,
}

/// Search with a filter.
#[tool]
fn search(filter: Filter) -> Result<String, ToolError> {
    Ok(filter.text)
}

fn main() {}
