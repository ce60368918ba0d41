//! Snapshots of every provider file for every manifest in `manifests/`, and of the warnings the
//! lowering gives for it. A new manifest gets new snapshots; review them with `cargo insta review`.

use std::path::{Path, PathBuf};

use toolc::emit::providers::{self, Provider};
use toolc::Session;

fn manifests() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../manifests");
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("manifests/ exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".tools.yaml"))
        .collect();
    found.sort();
    assert!(!found.is_empty(), "no manifests found");
    found
}

#[test]
fn provider_files_match_their_snapshots() {
    for path in manifests() {
        let file_name = path.file_name().unwrap().to_string_lossy().into_owned();
        let stem = file_name.trim_end_matches(".tools.yaml");
        let mut session = Session::new();
        // The name shown in warnings is repo-relative, so snapshots do not depend on the checkout.
        session.add_manifest(
            &format!("manifests/{file_name}"),
            &std::fs::read(&path).unwrap(),
        );
        let ir = session.check().expect("reference manifests compile");
        let mut outputs = toolc::output::Outputs::new();
        providers::emit(&ir, &mut session.diagnostics, &mut outputs);
        for provider in Provider::ALL {
            let file = &outputs[&format!("providers/{}.json", provider.name())];
            insta::assert_snapshot!(format!("{stem}__{}", provider.name()), file);
        }
        insta::assert_snapshot!(format!("{stem}__warnings"), session.render(false));
    }
}

/// Responses declares a tool's result schema: `output_schema` is `returns` as written, and a
/// tool without `returns` has none (the field is nullable, but absent says the same).
#[test]
fn responses_output_schema_is_the_tools_returns() {
    for path in manifests() {
        let mut session = Session::new();
        session.add_manifest("m.tools.yaml", &std::fs::read(&path).unwrap());
        let ir = session.check().expect("reference manifests compile");
        let file =
            providers::declarations(&ir, Provider::OpenaiResponses, &mut session.diagnostics);
        let declared = file.as_array().expect("a list of tools");
        for (tool, declaration) in ir.tools.iter().zip(declared) {
            assert_eq!(declaration["name"], tool.def.name.as_str());
            match &tool.def.returns {
                Some(returns) => assert_eq!(&declaration["output_schema"], returns),
                None => assert!(declaration.get("output_schema").is_none()),
            }
        }
    }
}

/// A tool's `scopes` are for the MCP server's token checks, not for the model: no provider file,
/// schema or TypeScript output carries them. Only `tools.rs` (whose definitions the runtime
/// enforces them from) differs from the same manifest without them.
#[test]
fn scopes_reach_no_declaration() {
    let emit_all = |manifest: &str| {
        let mut session = Session::new();
        session.add_manifest("scopes.tools.yaml", manifest.as_bytes());
        let ir = session.check().expect("the manifest compiles");
        let config = toolc::emit::Config::default();
        toolc::emit::emit(
            &ir,
            &toolc::emit::Kind::ALL,
            &config,
            &mut session.diagnostics,
        )
    };
    let manifest = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../manifests/support.tools.yaml"),
    )
    .unwrap();
    // The same manifest with and without scopes on every tool, with a comment in their place so
    // that the lines (which the outputs name) stay the same.
    let put =
        |line: &str| manifest.replace("    location: ", &format!("    {line}\n    location: "));
    let without = put("# no scopes");
    let with = put("scopes: [support:write, \"https://api.example.com/support\"]");
    assert!(with.matches("support:write").count() > 1);
    let (a, b) = (emit_all(&without), emit_all(&with));
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
    for (path, text) in &a {
        if path == "tools.rs" {
            assert_ne!(text, &b[path], "tools.rs carries the scopes");
            assert!(b[path].contains("support:write"));
        } else {
            assert_eq!(text, &b[path], "{path} changed");
            assert!(!b[path].contains("support:write"), "{path} carries a scope");
        }
    }
}
