use toolc_runtime::tool;

/// Unknown option.
#[tool(manifset = "x.yaml")]
fn a(key: String) -> String {
    key
}

/// Bad timeout and name.
#[tool(timeout = "soon", name = "has space")]
fn b(key: String) -> String {
    key
}

// Description, timeout and parameter descriptions come from the manifest when bound.
#[tool(manifest = "../manifests/support.tools.yaml", description = "Look up an order.", timeout = "2s")]
fn get_order_status(#[arg(description = "The number.")] order_number: String) -> String {
    order_number
}

fn main() {}
