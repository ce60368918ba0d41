//! The location rule fails the build: the example's real executors (`src/server.rs`) are compiled
//! against modified copies of `manifests/support.tools.yaml`, and each must fail with the tool's
//! name in the error.
//!
//! The modified manifests are derived from the real one on every run and generated with the same
//! emitter `build.rs` uses, into `tests/ui/generated/` (git-ignored).

use std::path::Path;

use toolc::emit::rust::{generate, RustOptions};

const MANIFEST: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../manifests/support.tools.yaml"
);

const NEW_SERVER_TOOL: &str = r#"
  - name: cancel_order
    description: Cancel an order that has not shipped yet.
    location: server
    parameters:
      type: object
      properties:
        order_number: { type: string }
      required: [order_number]
      additionalProperties: false
"#;

fn generate_case(name: &str, yaml: &str) {
    let mut session = toolc::Session::new();
    session.add_manifest(&format!("{name}.tools.yaml"), yaml.as_bytes());
    let ir = session
        .check()
        .unwrap_or_else(|| panic!("{name}: {}", session.render(false)));
    let options = RustOptions {
        server_trait: "SupportServer".into(),
        source: Some(format!(
            "{name}.tools.yaml (derived from support.tools.yaml)"
        )),
        ..RustOptions::default()
    };
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/ui/generated")
        .join(format!("{name}.rs"));
    toolc::output::write_if_changed(&path, &generate(&ir, &options)).unwrap();
}

/// `location: server` → `location: client` for one tool.
fn make_client(yaml: &str, tool: &str) -> String {
    let start = yaml
        .find(&format!("- name: {tool}\n"))
        .expect("the tool is in the manifest");
    let offset = yaml[start..]
        .find("location: server")
        .expect("the tool is a server tool");
    let at = start + offset;
    format!(
        "{}location: client{}",
        &yaml[..at],
        &yaml[at + "location: server".len()..]
    )
}

#[test]
fn location_rule_breaks_the_build() {
    let yaml = std::fs::read_to_string(MANIFEST).unwrap();
    generate_case(
        "new_server_tool",
        &format!("{}{NEW_SERVER_TOOL}", yaml.trim_end()),
    );
    generate_case("server_to_client", &make_client(&yaml, "get_order_status"));
    generate_case("unchanged", &yaml);
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
