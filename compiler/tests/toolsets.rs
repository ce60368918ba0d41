//! Toolsets and `defer_loading` on Responses: a toolset's tools are one namespace, declared
//! where its first tool is; a deferred tool says so, and hosted tool search is declared once
//! for them; every entry is a `Tool` of the official OpenAI spec. Providers without namespaces
//! declare every tool as before. Manifests compiled together agree on a toolset's description.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use toolc::emit::providers::{self, Provider};
use toolc::Session;

const MANIFEST: &str = r#"
version: 1
toolsets:
  orders: { description: Look up and change orders. }
  archive: { description: Old orders and exports. }
tools:
  - name: search_docs
    description: Search the help articles.
    location: server
  - name: get_order
    description: Look up an order.
    location: server
    toolset: orders
    parameters:
      type: object
      properties: { number: { type: string } }
      required: [number]
    returns:
      type: object
      properties: { status: { type: string } }
  - name: export_history
    description: Export the order history.
    location: server
    toolset: archive
    defer_loading: true
  - name: cancel_order
    description: Cancel an order.
    location: server
    toolset: orders
  - name: rarely
    description: A tool outside any toolset that is seldom needed.
    location: server
    defer_loading: true
"#;

fn compile(files: &[(&str, &str)]) -> (Session, Option<toolc::Ir>) {
    let mut session = Session::new();
    for (name, text) in files {
        session.add_manifest(name, text.as_bytes());
    }
    let ir = session.check();
    (session, ir)
}

fn spec() -> Value {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let candidates = [
        manifest.join("../../shared/specs/openai/openai-tool-calling-schemas.extract.json"),
        manifest.join("../shared/specs/openai/openai-tool-calling-schemas.extract.json"),
    ];
    let path = candidates
        .iter()
        .find(|p| Path::new(p).exists())
        .expect("the OpenAI spec extract (shared/specs next to the repository)");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn a_toolset_is_one_responses_namespace_and_deferred_tools_get_tool_search() {
    let (mut session, ir) = compile(&[("t.tools.yaml", MANIFEST)]);
    let ir = ir.unwrap_or_else(|| panic!("{}", session.render(false)));
    let file = providers::declarations(&ir, Provider::OpenaiResponses, &mut session.diagnostics);
    let entries = file.as_array().unwrap();
    let shape: Vec<(String, String)> = entries
        .iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap().to_owned(),
                e["name"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let expected = [
        ("function", "search_docs"),
        ("namespace", "orders"),
        ("namespace", "archive"),
        ("function", "rarely"),
        ("tool_search", ""),
    ];
    assert_eq!(
        shape,
        expected.map(|(t, n)| (t.to_owned(), n.to_owned())),
        "{file:#}"
    );
    let orders = &entries[1];
    assert_eq!(orders["description"], "Look up and change orders.");
    let members: Vec<&str> = orders["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(members, ["get_order", "cancel_order"], "in manifest order");
    assert_eq!(
        orders["tools"][0]["output_schema"]["properties"]["status"]["type"],
        "string"
    );
    assert!(orders["tools"][0].get("defer_loading").is_none());
    assert_eq!(entries[2]["tools"][0]["defer_loading"], true);
    assert_eq!(entries[3]["defer_loading"], true);

    // Every entry is one of the spec's `Tool`s.
    let mut doc = spec();
    doc["$ref"] = json!("#/components/schemas/Tool");
    let tool = jsonschema::draft202012::new(&doc).expect("the spec compiles");
    for entry in entries {
        let errors: Vec<String> = tool.iter_errors(entry).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{entry:#}\n{}", errors.join("\n"));
    }

    // No namespaces elsewhere: Chat Completions lists every tool.
    let chat = providers::declarations(&ir, Provider::OpenaiChat, &mut session.diagnostics);
    assert_eq!(chat.as_array().unwrap().len(), 5);
    assert!(!chat.to_string().contains("namespace"));
}

#[test]
fn manifests_compiled_together_agree_on_a_toolsets_description() {
    let a = "version: 1\ntoolsets:\n  orders: { description: Orders. }\ntools:\n  - name: a\n    description: A.\n    location: server\n    toolset: orders\n";
    let same = a.replace("name: a", "name: b").replace("A.", "B.");
    let (session, ir) = compile(&[("a.tools.yaml", a), ("b.tools.yaml", &same)]);
    assert!(ir.is_some(), "{}", session.render(false));
    let other = same.replace(
        "{ description: Orders. }",
        "{ description: Something else. }",
    );
    let (session, ir) = compile(&[("a.tools.yaml", a), ("b.tools.yaml", &other)]);
    assert!(ir.is_none());
    let text = session.render(false);
    assert!(text.contains("toolc::toolset-conflict"), "{text}");
    assert!(text.contains("b.tools.yaml"), "{text}");
}
