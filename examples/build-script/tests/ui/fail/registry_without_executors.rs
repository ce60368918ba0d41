// A type that does not implement the server trait cannot become the registry's executor.
mod support {
    include!("../generated/unchanged.rs");
}

struct NotAServer;

fn main() {
    let _registry = support::registry(NotAServer);
}
