//! The catalog instructions: a golden file over the reference manifests, and checks that what
//! the instructions tell a model to write is what the scanner accepts.

use std::collections::BTreeSet;
use std::path::PathBuf;

use toolc_runtime::markers::{catalog_instructions, MarkerScanner, MarkerTag, ScanEvent};
use toolc_runtime::{load_definitions, ToolDefinition};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn reference_tools() -> Vec<ToolDefinition> {
    let manifests = repo().join("manifests");
    load_definitions([
        manifests.join("support.tools.yaml"),
        manifests.join("commerce.tools.yaml"),
    ])
    .expect("the reference manifests load")
}

fn needs_auth() -> BTreeSet<&'static str> {
    ["get_order_status", "add_to_cart"].into_iter().collect()
}

fn render(tools: &[ToolDefinition]) -> String {
    let auth = needs_auth();
    let tag = MarkerTag::new("APIPILOT_CALL").unwrap();
    catalog_instructions(tools, &tag, |t| auth.contains(t.name.as_str()))
}

/// Set `UPDATE_GOLDEN=1` to rewrite the file; `git diff` is then the review.
#[test]
fn golden_catalog_of_the_reference_manifests() {
    let rendered = render(&reference_tools());
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/markers_catalog.golden.txt");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &rendered).unwrap();
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run with UPDATE_GOLDEN=1)", path.display()));
    assert!(
        rendered == expected,
        "the catalog differs from {}; rerun with UPDATE_GOLDEN=1 and review the diff.\n{rendered}",
        path.display()
    );
}

#[test]
fn rendering_is_deterministic_and_follows_the_given_order() {
    let tools = reference_tools();
    assert_eq!(render(&tools), render(&tools));
    let reversed: Vec<ToolDefinition> = tools.iter().rev().cloned().collect();
    let a = render(&tools);
    let b = render(&reversed);
    let first = |text: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix("## ").map(str::to_owned))
            .unwrap()
    };
    assert_eq!(first(&a), tools[0].name);
    assert_eq!(first(&b), tools[tools.len() - 1].name);
}

/// Every example in the catalog goes through the scanner as a call of that tool, and its
/// arguments satisfy the tool's schema (where the schema's constraints can be met without
/// knowing the domain: a `pattern` cannot).
#[test]
fn every_example_is_a_call_the_scanner_accepts_and_the_schema_validates() {
    let tools = reference_tools();
    let text = render(&tools);
    let tag = MarkerTag::new("APIPILOT_CALL").unwrap();
    let mut scanner = MarkerScanner::new(tag);
    let mut events = scanner.push_str(&text);
    events.extend(scanner.finish_events());
    let mut calls = Vec::new();
    for e in events {
        match e {
            ScanEvent::Call(c) => calls.push(c),
            ScanEvent::Error(e) => panic!("the catalog's own marker is rejected: {e}"),
            ScanEvent::Text(t) => assert!(!t.contains("<<<APIPILOT_CALL:NAME=")),
        }
    }
    // The first marker is the generic syntax line, for a placeholder `tool_name`.
    assert_eq!(calls[0].name, "tool_name");
    let examples = &calls[1..];
    assert_eq!(examples.len(), tools.len());
    for (call, tool) in examples.iter().zip(&tools) {
        assert_eq!(call.name, tool.name);
        let args = call.parse_arguments().unwrap();
        let validator = jsonschema::validator_for(&tool.parameters).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&args)
            .filter(|e| !e.to_string().contains("does not match"))
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{}: {args} -> {errors:?}", tool.name);
    }
}

#[test]
fn types_constraints_and_nesting_are_described() {
    let tool: ToolDefinition = serde_json::from_value(serde_json::json!({
        "name": "plan_trip",
        "description": "Plan a trip.\nTwo lines.",
        "location": "server",
        "parameters": {
            "type": "object",
            "properties": {
                "stops": {
                    "type": "array", "minItems": 1,
                    "items": { "$ref": "#/$defs/Stop" },
                    "description": "Where to go."
                },
                "mode": { "enum": ["car", "train", 3] },
                "budget": { "type": ["number", "null"], "exclusiveMinimum": 0 },
                "when": { "type": "string", "format": "date" },
                "tags": { "type": "array", "items": { "type": "string" }, "uniqueItems": true },
                "flexible": { "anyOf": [{ "type": "boolean" }, { "const": "ask" }] }
            },
            "required": ["stops", "when"],
            "$defs": {
                "Stop": {
                    "type": "object",
                    "properties": {
                        "city": { "type": "string", "minLength": 2 },
                        "nights": { "type": "integer", "minimum": 1, "maximum": 30 },
                        "next": { "$ref": "#/$defs/Stop" }
                    },
                    "required": ["city"]
                }
            }
        }
    }))
    .unwrap();
    let tag = MarkerTag::new("T").unwrap();
    let text = catalog_instructions([&tool], &tag, |_| true);
    let section = &text[text.find("## plan_trip").unwrap()..];
    for expected in [
        "Plan a trip. Two lines.\n",
        "Requires authorization: yes\n",
        "- stops (array of object, required, at least 1 item): Where to go.\n",
        "  each item has:\n",
        "    - city (string, required, at least 2 characters)\n",
        "    - nights (integer, optional, 1 to 30)\n",
        "- mode (one of \"car\", \"train\", 3, optional)\n",
        "- budget (number or null, optional, greater than 0)\n",
        "- when (string, required, format date)\n",
        "- tags (array of string, optional, no duplicates)\n",
        "- flexible (boolean or exactly \"ask\", optional)\n",
        "<<<T:NAME=plan_trip,ARGUMENTS={\"stops\":[{\"city\":\"...\"}],\"when\":\"...\"}>>>\n",
    ] {
        assert!(
            section.contains(expected),
            "missing {expected:?} in:\n{section}"
        );
    }
    // The recursive `$ref` is followed only to the depth limit.
    assert!(
        section.matches("- next (object, optional)").count() >= 1,
        "{section}"
    );

    let bare = ToolDefinition {
        title: None,
        annotations: Default::default(),
        policy: Default::default(),
        parameters: ToolDefinition::empty_parameters(),
        ..tool
    };
    let text = catalog_instructions([&bare], &tag, |_| false);
    assert!(text.contains("Requires authorization: no\nParameters: none\nExample:\n<<<T:NAME=plan_trip,ARGUMENTS={}>>>\n"), "{text}");
}
