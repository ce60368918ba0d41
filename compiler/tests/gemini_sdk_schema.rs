//! Gemini's declarations against Google's own types: every `functionDeclarations` entry of
//! `providers/gemini.json`, in both schema forms (`--gemini-schema subset` and `json-schema`),
//! validates as the `FunctionDeclaration` of the Gen AI SDK's pydantic models
//! (`specs/gemini-live/client-message.schema.json`, generated from `google-genai` 3.6.1; its
//! README says how), which forbid unknown members. The hand-written subset schema in
//! `provider_specs.rs` checks what the SDK leaves loose (upper-case types, non-empty objects).

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use toolc::emit::providers::{file_text_with, GeminiSchema, Provider};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn function_declaration_validator() -> jsonschema::Validator {
    let path = repo().join("specs/gemini-live/client-message.schema.json");
    let spec: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let schema = json!({
        "$ref": "#/$defs/FunctionDeclaration",
        "$defs": spec["$defs"],
    });
    jsonschema::validator_for(&schema).unwrap()
}

#[test]
fn every_gemini_declaration_is_a_function_declaration_of_googles_sdk() {
    let validator = function_declaration_validator();
    let mut session = toolc::Session::new();
    for name in ["support.tools.yaml", "commerce.tools.yaml"] {
        session
            .add_path(&repo().join("manifests").join(name))
            .unwrap();
    }
    session
        .add_path(&repo().join("runtime/tests/fixtures/edge.tools.yaml"))
        .unwrap();
    let synthetic = toolc::synthetic::manifest(200);
    session.add_manifest("synthetic.tools.yaml", synthetic.as_bytes());
    let ir = session
        .check()
        .unwrap_or_else(|| panic!("{}", session.render(false)));
    for form in [GeminiSchema::Subset, GeminiSchema::JsonSchema] {
        let text = file_text_with(&ir, Provider::Gemini, form, &mut session.diagnostics);
        let file: Value = serde_json::from_str(&text).unwrap();
        let declarations = file["functionDeclarations"].as_array().unwrap();
        assert!(declarations.len() > 200);
        for declaration in declarations {
            let errors: Vec<String> = validator
                .iter_errors(declaration)
                .map(|e| format!("{e} at {}", e.instance_path()))
                .collect();
            assert!(
                errors.is_empty(),
                "{form:?} {}: {errors:#?}",
                declaration["name"]
            );
        }
    }
}

#[test]
fn the_sdk_schema_refuses_what_gemini_does_not_know() {
    let validator = function_declaration_validator();
    for bad in [
        json!({ "name": "x", "parameters": { "type": "OBJECT" }, "inputSchema": {} }),
        json!({ "name": "x", "parameters": { "type": "OBJECT", "properties": { "a": { "type": "STRING", "const": "y" } } } }),
        json!({ "name": 5 }),
    ] {
        assert!(!validator.is_valid(&bad), "{bad}");
    }
}
