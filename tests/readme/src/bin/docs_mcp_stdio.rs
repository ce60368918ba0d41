//! The book's `serve_stdio` (docs/mcp.md) serving the `#[tool]` snippet's registry: the MCP server the
//! snippet tests spawn as another tool source for the generated module's builder.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = readme_snippets::fn_tools::docs_registry()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(readme_snippets::mcp::serve_stdio(registry))?;
    Ok(())
}
