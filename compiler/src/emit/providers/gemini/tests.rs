use super::*;
use crate::definition::{Location, ToolDefinition};
use crate::ir::Ir;

/// The declaration of one tool with these schemas, and the warnings it gave.
fn declared(parameters: Value, returns: Option<Value>) -> (Value, Diagnostics) {
    let ir = Ir::from_definitions([ToolDefinition {
        name: "t".into(),
        description: "d".into(),
        location: Location::Server,
        parameters,
        returns,
        ..Default::default()
    }]);
    let mut diags = Diagnostics::default();
    let out = declaration(&ir.tools[0], &mut diags);
    (out, diags)
}

fn lower(parameters: Value) -> (Value, Vec<(String, String, String)>) {
    let (out, diags) = declared(parameters, None);
    let issues = diags
        .iter()
        .map(|d| {
            let keyword = d.message.split('`').nth(3).unwrap_or_default().to_owned();
            (d.code.to_owned(), keyword, d.message.clone())
        })
        .collect();
    (out, issues)
}

/// Parameters whose definitions each hold the next twice, `levels` deep (and a `D{levels}`
/// string at the bottom): inlined, 2^levels copies.
fn shared_definitions(levels: usize) -> Value {
    let mut defs = Map::new();
    for k in 0..levels {
        let next = json!({ "$ref": format!("#/$defs/D{}", k + 1) });
        defs.insert(
            format!("D{k}"),
            json!({ "type": "object", "properties": { "a": next, "b": next },
                    "required": ["a", "b"], "additionalProperties": false }),
        );
    }
    defs.insert(format!("D{levels}"), json!({ "type": "string" }));
    json!({ "type": "object", "properties": { "x": { "$ref": "#/$defs/D0" } },
            "required": ["x"], "additionalProperties": false, "$defs": defs })
}

#[test]
fn definitions_shared_past_the_budget_leave_the_parameters_out_with_one_warning() {
    // 2^40 copies were it inlined; the lowering stops at the budget.
    let (out, issues) = lower(shared_definitions(40));
    assert!(out.get("parameters").is_none(), "{out}");
    assert_eq!(issues.len(), 1, "{issues:?}");
    let (code, keyword, message) = &issues[0];
    assert_eq!(
        (code.as_str(), keyword.as_str()),
        (codes::GEMINI_UNSUPPORTED, "$ref")
    );
    assert!(
        message.contains(&format!("more than {MAX_INLINED} schemas")),
        "{message}"
    );

    // Within the budget, every copy is inlined and nothing is said.
    let (out, issues) = lower(shared_definitions(8));
    assert!(issues.is_empty(), "{issues:?}");
    let mut leaf = &out["parameters"]["properties"]["x"];
    for _ in 0..8 {
        assert_eq!(leaf["properties"]["a"], leaf["properties"]["b"]);
        leaf = &leaf["properties"]["b"];
    }
    assert_eq!(leaf, &json!({ "type": "STRING" }));
}

#[test]
fn nullable_const_and_types_are_lowered_without_warnings() {
    let (out, issues) = lower(json!({
        "type": "object",
        "properties": {
            "a": { "type": ["string", "null"], "description": "A." },
            "b": { "const": "fixed" },
            "c": { "anyOf": [{ "type": "integer", "exclusiveMinimum": 0 }, { "type": "null" }] },
            "d": { "oneOf": [{ "type": "string" }, { "type": "boolean" }] }
        },
        "required": ["a"],
        "additionalProperties": false
    }));
    assert!(issues.is_empty(), "{issues:?}");
    assert_eq!(
        out["parameters"],
        json!({
            "type": "OBJECT",
            "properties": {
                "a": { "type": "STRING", "description": "A.", "nullable": true },
                "b": { "enum": ["fixed"], "type": "STRING" },
                "c": { "type": "INTEGER", "minimum": 1, "nullable": true },
                "d": { "anyOf": [{ "type": "STRING" }, { "type": "BOOLEAN" }] }
            },
            "required": ["a"]
        })
    );
}

#[test]
fn no_parameters_means_no_parameters_field() {
    let (out, issues) = lower(ToolDefinition::empty_parameters());
    assert!(issues.is_empty());
    assert_eq!(out, json!({ "name": "t", "description": "d" }));
}

#[test]
fn allof_is_merged() {
    let (out, issues) = lower(json!({
        "type": "object",
        "allOf": [{ "$ref": "#/$defs/Base" }],
        "properties": { "b": { "type": "integer" } },
        "$defs": { "Base": { "type": "object", "properties": { "a": { "type": "string" } }, "required": ["a"] } }
    }));
    assert!(issues.is_empty(), "{issues:?}");
    assert_eq!(
        out["parameters"]["properties"],
        json!({ "a": { "type": "STRING" }, "b": { "type": "INTEGER" } })
    );
    assert_eq!(out["parameters"]["required"], json!(["a"]));
}

/// The `response` of a tool with these `returns`, and the warnings' messages.
fn response(returns: Value) -> (Option<Value>, Vec<String>) {
    let (out, diags) = declared(ToolDefinition::empty_parameters(), Some(returns));
    let messages = diags.iter().map(|d| d.message.clone()).collect();
    (out.get("response").cloned(), messages)
}

#[test]
fn returns_become_the_response_of_any_type() {
    let (out, warnings) = response(json!({
        "type": "object",
        "properties": { "found": { "type": "boolean" }, "at": { "type": ["string", "null"] } },
        "required": ["found"],
        "additionalProperties": false
    }));
    assert_eq!(
        out,
        Some(json!({
            "type": "OBJECT",
            "properties": {
                "found": { "type": "BOOLEAN" },
                "at": { "type": "STRING", "nullable": true }
            },
            "required": ["found"]
        }))
    );
    assert!(warnings.is_empty(), "{warnings:?}");
    // A list, and alternatives at the root: kept as they are, not flattened into an object
    // as `parameters` would be.
    let (out, _) = response(json!({ "type": "array", "items": { "type": "integer" } }));
    assert_eq!(
        out,
        Some(json!({ "type": "ARRAY", "items": { "type": "INTEGER" } }))
    );
    let (out, _) = response(json!({ "anyOf": [{ "type": "string" }, { "type": "integer" }] }));
    assert_eq!(
        out,
        Some(json!({ "anyOf": [{ "type": "STRING" }, { "type": "INTEGER" }] }))
    );
}

#[test]
fn a_response_gemini_cannot_declare_is_left_out_with_a_warning_about_returns() {
    for returns in [
        json!({ "description": "anything" }),
        json!({ "type": "object" }),
        json!(true),
    ] {
        let (out, warnings) = response(returns.clone());
        assert_eq!(out, None, "{returns}");
        assert_eq!(warnings.len(), 1, "{returns}: {warnings:?}");
        assert!(warnings[0].contains("of `returns`"), "{}", warnings[0]);
    }
}
