fn main() {
    // Writes OUT_DIR/support.rs, which `include_tools!("support")` pulls in. On a manifest error,
    // the diagnostics are printed as `cargo::error=` lines and cargo fails the build.
    toolc::Builder::new()
        .manifest("../../manifests/support.tools.yaml")
        .compile_for_cargo();
}
