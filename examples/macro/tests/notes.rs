//! Tools defined in Rust alone: calls, and every output the manifest path has.

use toolc::emit::{self, Kind};
use toolc::{Diagnostics, Ir};
use toolc_runtime::Location;

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
        .block_on(f)
}

#[test]
fn notes_are_added_and_found() {
    let registry = macro_example::notes::registry().unwrap();
    block_on(async {
        let added = registry
            .call(
                "add_note",
                r#"{"title":"Groceries","body":"milk, eggs","tags":["home"]}"#,
            )
            .await
            .unwrap();
        assert!(added.contains(r#""title":"Groceries""#), "{added}");
        let found = registry
            .call("find_notes", r#"{"query":"EGGS","tag":"home"}"#)
            .await
            .unwrap();
        assert!(found.contains("milk, eggs"), "{found}");
        let err = registry
            .call("add_note", r#"{"title":" ","body":""}"#)
            .await
            .unwrap_err();
        assert_eq!(err.code(), Some("empty_title"));
        // `tags` is optional, `title` is not.
        let err = registry
            .call("add_note", r#"{"body":"x"}"#)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), toolc_runtime::CallErrorKind::InvalidArguments);
    });
}

#[test]
fn rust_definitions_reach_every_output() {
    let registry = macro_example::notes::registry().unwrap();
    assert_eq!(registry.location("open_note"), Some(Location::Client));
    let ir = Ir::from_definitions(registry.definitions().cloned());
    let mut diagnostics = Diagnostics::default();
    let outputs = emit::emit(&ir, &Kind::ALL, &emit::Config::default(), &mut diagnostics);
    let names: Vec<&str> = outputs.keys().map(String::as_str).collect();
    for expected in [
        "schemas/add_note.parameters.json",
        "schemas/add_note.returns.json",
        "schemas/find_notes.parameters.json",
        "tools.ts",
        "tools.rs",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    assert!(
        names.iter().filter(|n| n.starts_with("providers/")).count() >= 4,
        "{names:?}"
    );
    let ts = &outputs["tools.ts"];
    assert!(ts.contains("open_note") && ts.contains("add_note"), "{ts}");
    // The argument struct's doc comments became descriptions in the schema.
    let find: serde_json::Value =
        serde_json::from_str(&outputs["schemas/find_notes.parameters.json"]).unwrap();
    assert_eq!(
        find["properties"]["query"]["description"],
        "Words in the title, body or tags."
    );
    // The returned struct is an object schema at the root, so MCP declares an `outputSchema`.
    let returns: serde_json::Value =
        serde_json::from_str(&outputs["schemas/add_note.returns.json"]).unwrap();
    assert_eq!(returns["type"], "object", "{returns}");
    assert!(
        outputs["providers/mcp.json"].contains("outputSchema"),
        "{}",
        outputs["providers/mcp.json"]
    );
}
