use toolc_runtime::tool;

/// Highlight an element on the page.
#[tool(client)]
fn highlight(selector: String) {
    let _ = selector;
}

fn main() {}
