//! docs/rust.md, "From Rust fns: `#[tool]`" (and the README's example of `#[tool]`).

use toolc_runtime::{tool, tools, Registry, RegistryError, ToolError};

/// Search the documentation and return the best passages.
///
/// # Arguments
/// * `query` - What to look for.
#[tool(timeout = "5s")]
async fn search_docs(query: String, limit: Option<u8>) -> Result<Vec<String>, ToolError> {
    let passages = [
        "Returns are free for 30 days.",
        "Refunds reach your card in 5 days.",
    ];
    let query = query.to_lowercase();
    let found = passages
        .iter()
        .filter(|p| p.to_lowercase().contains(&query));
    let limit = usize::from(limit.unwrap_or(3));
    Ok(found.take(limit).map(|p| p.to_string()).collect())
}

/// Highlight an element on the page.
#[tool(client)]
fn highlight_element(selector: String); // client tools have no body

pub fn docs_registry() -> Result<Registry, RegistryError> {
    tools![search_docs, highlight_element].build()
}
