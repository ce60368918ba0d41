// build.rs                                   (toolc is a build-dependency)
fn main() {
    toolc::Builder::new()
        .manifest("manifests/support.tools.yaml")
        .compile_for_cargo();
}
