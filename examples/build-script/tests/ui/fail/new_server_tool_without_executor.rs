// The manifest gains a server tool, `cancel_order`, but the executors are unchanged.
mod support {
    include!("../generated/new_server_tool.rs");
}
#[path = "../../../src/server.rs"]
mod server;

fn main() {
    let _registry = support::registry(server::SupportDesk::new());
}
