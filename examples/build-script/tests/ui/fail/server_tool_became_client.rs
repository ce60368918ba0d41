// `get_order_status` is now a client tool, but the executors still implement it.
mod support {
    include!("../generated/server_to_client.rs");
}
#[path = "../../../src/server.rs"]
mod server;

fn main() {
    let _registry = support::registry(server::SupportDesk::new());
}
