// The example's executors against the unchanged manifest compile without warnings.
#![deny(warnings)]

mod support {
    include!("../generated/unchanged.rs");
}
#[path = "../../../src/server.rs"]
mod server;

fn main() {
    let _registry = support::registry(server::SupportDesk::new());
}
