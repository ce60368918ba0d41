//! Every event the scripted model sends validates against the matching server-event schema of
//! the OpenAI Realtime GA spec (`shared/specs/openai/openai-tool-calling-schemas.extract.json`),
//! so the demo plays what a real model would send.
//!
//! The extract is an OpenAPI 3.1 document: a schema is checked by putting
//! `{"$ref": "#/components/schemas/NAME"}` at the root of a copy of the whole document, so that
//! every `$ref` inside it resolves.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;
use toolc_runtime::relay::testing::Step;
use voice_agent::conversation;

fn spec() -> Value {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    // CI clones the repository to X/main with the specs at X/shared.
    let candidates = [
        manifest.join("../../../shared/specs/openai/openai-tool-calling-schemas.extract.json"),
        manifest.join("../../shared/specs/openai/openai-tool-calling-schemas.extract.json"),
    ];
    let path = candidates
        .iter()
        .find(|p| p.exists())
        .expect("the OpenAI spec extract (shared/specs next to the repository)");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).expect("the spec is JSON")
}

/// Server-event type (`response.done`) → schema name (`RealtimeServerEventResponseDone`).
fn server_event_schemas(spec: &Value) -> BTreeMap<String, String> {
    spec["components"]["schemas"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(name, _)| name.starts_with("RealtimeServerEvent"))
        .filter_map(|(name, schema)| {
            let kind = schema["properties"]["type"]["enum"][0].as_str()?;
            Some((kind.to_owned(), name.clone()))
        })
        .collect()
}

#[test]
fn every_scripted_event_is_a_valid_ga_server_event() {
    let spec = spec();
    let schemas = server_event_schemas(&spec);
    assert!(schemas.contains_key("response.output_text.delta"));
    let script = conversation::script(Duration::from_millis(1));
    let mut checked = BTreeMap::<String, usize>::new();
    for step in &script.steps {
        let Step::Send(event) = step else { continue };
        let kind = event["type"].as_str().expect("every event has a type");
        let name = schemas
            .get(kind)
            .unwrap_or_else(|| panic!("no GA schema for `{kind}`"));
        let mut doc = spec.clone();
        doc["$ref"] = Value::String(format!("#/components/schemas/{name}"));
        let validator = jsonschema::draft202012::new(&doc).expect("the spec compiles");
        let errors: Vec<String> = validator
            .iter_errors(event)
            .map(|e| format!("{e} at {}", e.instance_path().as_str()))
            .collect();
        assert!(
            errors.is_empty(),
            "{name} rejects {event}:\n{}",
            errors.join("\n")
        );
        *checked.entry(kind.to_owned()).or_default() += 1;
    }
    // The kinds a GA text response with function calls is made of, all present.
    for kind in [
        "response.created",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.done",
    ] {
        assert!(checked.contains_key(kind), "{kind} missing: {checked:?}");
    }
    assert_eq!(checked["response.done"], 3);
    assert_eq!(checked["response.function_call_arguments.done"], 6);
}

/// The repository's schema of Gemini Live messages from one side (`client` or `server`),
/// generated from Google's Gen AI SDK (`specs/gemini-live/README.md` names the source).
fn live_schema(side: &str) -> jsonschema::Validator {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!(
        "../../specs/gemini-live/{side}-message.schema.json"
    ));
    let text = std::fs::read_to_string(&path).expect("specs/gemini-live is in the repository");
    let schema: Value = serde_json::from_str(&text).expect("the schema is JSON");
    jsonschema::draft202012::new(&schema).expect("the schema compiles")
}

#[test]
fn every_scripted_live_message_is_a_valid_live_server_message() {
    let server = live_schema("server");
    let script = conversation::live_script(Duration::from_millis(1));
    let mut sent = 0;
    for step in &script.steps {
        let Step::Send(message) = step else { continue };
        let errors: Vec<String> = server
            .iter_errors(message)
            .map(|e| format!("{e} at {}", e.instance_path().as_str()))
            .collect();
        assert!(errors.is_empty(), "{message}:\n{}", errors.join("\n"));
        sent += 1;
    }
    assert!(sent > 10, "the conversation was checked ({sent} messages)");
    // The schema is not one that accepts anything.
    let unknown = serde_json::json!({"toolCall": {"functionCalls": [{"id": "c", "nme": "x"}]}});
    assert!(!server.is_valid(&unknown));

    // What the page sends as the customer's question is a valid client message.
    let client = live_schema("client");
    let question = serde_json::json!({"clientContent": {
        "turns": [{"role": "user", "parts": [{"text": conversation::QUESTION}]}],
        "turnComplete": true,
    }});
    assert!(client.is_valid(&question));
}
