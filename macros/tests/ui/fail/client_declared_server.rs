use toolc_runtime::tool;

// The manifest declares `get_order_status` as `location: server`.
#[tool(client, manifest = "../manifests/support.tools.yaml")]
fn get_order_status(order_number: String);

fn main() {}
