//! Turning a manifest tool that has a `#[tool]` executor into a client tool must fail the build
//! with the tool's name. The crate's own `src/support.rs` is compiled (by trybuild) against a
//! copy of `manifests/support.tools.yaml` in which `get_order_status` says `location: client`.

use std::path::Path;

#[test]
fn a_server_tool_turned_client_fails_the_build() {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let original =
        std::fs::read_to_string(manifest_dir.join("../../manifests/support.tools.yaml")).unwrap();
    // Flip only `get_order_status`: its `location` is the first one after its name.
    let start = original.find("- name: get_order_status").unwrap();
    let at = start + original[start..].find("location: server").unwrap();
    let flipped = format!(
        "{}location: client{}",
        &original[..at],
        &original[at + "location: server".len()..]
    );
    assert_ne!(flipped, original);

    // Mirror the layout `examples/macro` → `../../manifests` under a scratch directory.
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("macro-example-client-flip");
    let crate_dir = root.join("examples/macro");
    std::fs::create_dir_all(&crate_dir).unwrap();
    std::fs::create_dir_all(root.join("manifests")).unwrap();
    std::fs::write(root.join("manifests/support.tools.yaml"), flipped).unwrap();
    // The macros resolve the trybuild package's relative manifest paths against this directory
    // instead of the crate's; `macro-example` itself, built in the same run, keeps its own.
    std::env::set_var(
        "TOOLC_MANIFEST_DIR",
        format!("macro-example-tests={}", crate_dir.display()),
    );

    trybuild::TestCases::new().compile_fail("tests/ui/client_flip.rs");
}
