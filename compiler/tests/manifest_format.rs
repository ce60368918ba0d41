//! The manifest format at scale and in its edge cases: the JSON Schema of the format agrees with
//! the loader, 10,000 tools build, JSON (a subset of YAML 1.2) is accepted.

use std::path::Path;

use toolc::emit::{self, Kind};
use toolc::manifest::TOOL_FIELDS;
use toolc::Session;

fn check(name: &str, text: &str) -> (Session, Option<toolc::Ir>) {
    let mut session = Session::new();
    session.add_manifest(name, text.as_bytes());
    let ir = session.check();
    (session, ir)
}

#[test]
fn the_format_schema_accepts_the_reference_manifests_and_rejects_unknown_fields() {
    let schema = toolc::manifest_schema::manifest_json_schema();
    let validator = jsonschema::draft202012::options().build(&schema).unwrap();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../manifests");
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let mut errors = Vec::new();
        let node =
            toolc::yaml::parse(toolc::FileId(0), &text, Default::default(), &mut errors).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&node.to_json())
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{}: {errors:?}", path.display());
        seen += 1;
    }
    assert!(seen >= 2);
    let bad = serde_json::json!({"version": 1, "tools": [{"name": "a", "description": "b", "location": "server", "colour": 1}]});
    assert!(!validator.is_valid(&bad));
    // The schema and the loader agree on which call behaviours fit which tools.
    let tool = |extra: serde_json::Value| {
        let mut t = serde_json::json!({"name": "a", "description": "b"});
        t.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        serde_json::json!({"version": 1, "tools": [t]})
    };
    let cases = [
        (
            serde_json::json!({"location": "server", "filler": ["One moment."]}),
            true,
        ),
        (
            serde_json::json!({"location": "server", "wait_for_response": true}),
            false,
        ),
        (
            serde_json::json!({"location": "server", "stream_arguments": true}),
            false,
        ),
        (
            serde_json::json!({"location": "server", "mode": "async", "approval": "required"}),
            true,
        ),
        (
            serde_json::json!({"location": "client", "mode": "sync"}),
            false,
        ),
        (
            serde_json::json!({"location": "client", "approval": "required", "wait_for_response": false}),
            false,
        ),
        (
            serde_json::json!({"location": "client", "approval": "required", "stream_arguments": true}),
            true,
        ),
        (
            serde_json::json!({"location": "client", "wait_for_response": false, "cancel_on_interruption": true}),
            true,
        ),
        (
            serde_json::json!({"location": "server", "approval": "always"}),
            false,
        ),
        (
            serde_json::json!({"location": "server", "mode": "background"}),
            false,
        ),
    ];
    for (extra, valid) in cases {
        let manifest = tool(extra.clone());
        assert_eq!(validator.is_valid(&manifest), valid, "schema: {extra}");
        let (session, _) = check("case.tools.yaml", &manifest.to_string());
        assert_eq!(!session.diagnostics.has_errors(), valid, "loader: {extra}");
    }
}

#[test]
fn the_format_schema_documents_every_tool_field() {
    let schema = toolc::manifest_schema::manifest_json_schema();
    let documented: Vec<&str> = schema["$defs"]["Tool"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(documented, TOOL_FIELDS);
}

#[test]
fn ten_thousand_tools_build() {
    let text = toolc::synthetic::manifest(10_000);
    let (session, ir) = check("big.tools.yaml", &text);
    assert!(
        !session.diagnostics.has_errors(),
        "{}",
        session.render(false)
    );
    let ir = ir.unwrap();
    assert_eq!(ir.tools.len(), 10_000);
    let mut diags = toolc::Diagnostics::default();
    let outputs = emit::emit(
        &ir,
        &[Kind::Schemas, Kind::Providers],
        &emit::Config::default(),
        &mut diags,
    );
    assert!(outputs.len() > 10_000);
}

#[test]
fn a_manifest_written_in_json_builds() {
    let text = r#"{"version": 1, "tools": [
        {"name": "lookup", "description": "Look something up.", "location": "server",
         "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
         "timeout": "2s"},
        {"name": "beep", "description": "Beep in the browser.", "location": "client", "wait_for_response": false}
    ]}"#;
    let (session, ir) = check("tools.json", text);
    assert!(session.diagnostics.is_empty(), "{}", session.render(false));
    let ir = ir.unwrap();
    assert_eq!(
        ir.tools[0].def.timeout,
        Some(std::time::Duration::from_secs(2))
    );
    assert!(!ir.tools[1].def.wait_for_response);
    assert_eq!(
        ir.tools[1].def.parameters,
        toolc::ToolDefinition::empty_parameters()
    );
}

#[test]
fn yaml_one_one_booleans_stay_strings() {
    let text = "version: 1\ntools:\n  - name: answer\n    description: Answer.\n    location: server\n    parameters:\n      type: object\n      properties:\n        reply: { type: string, enum: [yes, no, on, off] }\n";
    let (session, ir) = check("norway.tools.yaml", text);
    assert!(session.diagnostics.is_empty(), "{}", session.render(false));
    let ir = ir.unwrap();
    assert_eq!(
        ir.tools[0].def.parameters["properties"]["reply"]["enum"],
        serde_json::json!(["yes", "no", "on", "off"])
    );
}

#[test]
fn client_defaults() {
    let text = "version: 1\ntools:\n  - name: open\n    description: Open.\n    location: client\n";
    let (_, ir) = check("c.tools.yaml", text);
    let def = &ir.unwrap().tools[0].def;
    assert!(def.wait_for_response);
    assert_eq!(def.effective_timeout(), Some(toolc::DEFAULT_CLIENT_TIMEOUT));
}
