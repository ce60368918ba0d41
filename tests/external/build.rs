// build.rs: compiles the manifest into OUT_DIR/orders.rs (and reruns when it changes).
fn main() {
    toolc::Builder::new()
        .manifest("orders.tools.yaml")
        .compile_for_cargo();
}
