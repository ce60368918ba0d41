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

/// Call behaviours that do not fit: a client tool in the background, an approval nobody
/// waits for, words the options do not take.
#[tool(client, mode = "async")]
fn paint(colour: String);

/// Nudge the user.
#[tool(client, wait_for_response = false, approval = "required")]
fn ping_user(message: String);

/// Look a key up.
#[tool(approval = "always", mode = "later")]
fn c(key: String) -> String {
    key
}

fn main() {}
