//! Every provider file for every manifest in `manifests/` is validated against the official wire
//! schemas in `shared/specs/` (OpenAI's OpenAPI extract, MCP 2025-11-25 and 2026-07-28), and
//! against the documented subsets where no machine-readable schema is published (OpenAI strict
//! mode, Anthropic's `input_schema` root, Gemini's `Schema`).
//!
//! The OpenAI extract is an OpenAPI 3.1 document. A component is validated by adding
//! `"$ref": "#/components/schemas/NAME"` at the document root, so that every
//! `#/components/schemas/...` reference resolves inside the same document. OpenAPI 3.0's
//! `nullable: true` (which 2020-12 validators ignore) appears once in the extract; it is rewritten
//! to `anyOf: [<schema>, {type: null}]` first so the validator sees what OpenAI means.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use jsonschema::{Draft, Validator};
use serde_json::{json, Value};
use toolc::emit::providers::{self, codes, Provider};
use toolc::{Diagnostics, Ir, Session};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn specs() -> PathBuf {
    repo().join("../shared/specs")
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn manifests() -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(repo().join("manifests"))
        .expect("manifests/ exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".tools.yaml"))
        .collect();
    found.sort();
    assert!(!found.is_empty(), "no manifests found");
    found
}

fn compile_source(name: &str, text: &str) -> (Session, Ir) {
    let mut session = Session::new();
    session.add_manifest(name, text.as_bytes());
    let ir = session
        .check()
        .unwrap_or_else(|| panic!("{name} does not compile:\n{}", session.render(false)));
    (session, ir)
}

fn compile(path: &Path) -> (Session, Ir) {
    let text = std::fs::read_to_string(path).expect("manifest readable");
    compile_source(&path.display().to_string(), &text)
}

/// The parsed provider files of one compilation, by provider.
fn provider_files(ir: &Ir, diags: &mut Diagnostics) -> Vec<(Provider, Value)> {
    let mut outputs = toolc::output::Outputs::new();
    providers::emit(ir, diags, &mut outputs);
    Provider::ALL
        .iter()
        .map(|p| {
            let text = &outputs[&format!("providers/{}.json", p.name())];
            (
                *p,
                serde_json::from_str(text).expect("provider file is JSON"),
            )
        })
        .collect()
}

// --- official schemas -------------------------------------------------------------------------

fn rewrite_nullable(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for v in map.values_mut() {
                rewrite_nullable(v);
            }
            if map.get("nullable") == Some(&Value::Bool(true)) {
                map.remove("nullable");
                let inner = Value::Object(std::mem::take(map));
                map.insert("anyOf".into(), json!([inner, { "type": "null" }]));
            }
        }
        Value::Array(items) => items.iter_mut().for_each(rewrite_nullable),
        _ => {}
    }
}

fn openai_doc() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| {
        let mut doc = read_json(&specs().join("openai/openai-tool-calling-schemas.extract.json"));
        rewrite_nullable(&mut doc);
        doc
    })
}

fn openai_component(name: &str) -> &'static Value {
    &openai_doc()["components"]["schemas"][name]
}

fn openai(name: &str) -> Validator {
    let mut doc = openai_doc().clone();
    assert!(openai_component(name).is_object(), "no component {name}");
    doc["$ref"] = json!(format!("#/components/schemas/{name}"));
    jsonschema::options()
        .with_draft(Draft::Draft202012)
        .build(&doc)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

const MCP_VERSIONS: [&str; 2] = ["2025-11-25", "2026-07-28"];

fn mcp(version: &str, name: &str) -> Validator {
    let mut doc = read_json(&specs().join(format!("mcp/{version}/schema.json")));
    assert!(doc["$defs"][name].is_object(), "no {name} in MCP {version}");
    doc["$ref"] = json!(format!("#/$defs/{name}"));
    jsonschema::options()
        .with_draft(Draft::Draft202012)
        .build(&doc)
        .unwrap_or_else(|e| panic!("MCP {version} {name}: {e}"))
}

struct Official {
    chat_tool: Validator,
    function_parameters: Validator,
    responses_tool: Validator,
    realtime_tool: Validator,
    realtime_session: Validator,
    realtime_session_update: Validator,
    mcp_tool: Vec<(&'static str, Validator)>,
    mcp_list: Vec<(&'static str, Validator)>,
    anthropic: Validator,
    gemini: Validator,
}

fn official() -> &'static Official {
    static OFFICIAL: OnceLock<Official> = OnceLock::new();
    OFFICIAL.get_or_init(|| Official {
        chat_tool: openai("ChatCompletionTool"),
        function_parameters: openai("FunctionParameters"),
        responses_tool: openai("FunctionTool"),
        realtime_tool: openai("RealtimeFunctionTool"),
        realtime_session: openai("RealtimeSessionCreateRequestGA"),
        realtime_session_update: openai("RealtimeClientEventSessionUpdate"),
        mcp_tool: MCP_VERSIONS.iter().map(|v| (*v, mcp(v, "Tool"))).collect(),
        mcp_list: MCP_VERSIONS
            .iter()
            .map(|v| (*v, mcp(v, "ListToolsResult")))
            .collect(),
        anthropic: jsonschema::validator_for(&anthropic_tools_schema()).expect("anthropic schema"),
        gemini: jsonschema::validator_for(&gemini_schema()).expect("gemini schema"),
    })
}

/// Anthropic publishes no schema file; this is its documented `tools` entry: a name matching
/// `^[a-zA-Z0-9_-]{1,64}$`, and an `input_schema` with `type: object` and no `anyOf`, `oneOf` or
/// `allOf` at the root (the API answers "input_schema does not support oneOf, allOf, or anyOf at
/// the top level").
fn anthropic_tools_schema() -> Value {
    json!({
        "type": "array",
        "items": {
            "type": "object",
            "required": ["name", "input_schema"],
            "additionalProperties": false,
            "properties": {
                "name": { "type": "string", "pattern": "^[a-zA-Z0-9_-]{1,64}$" },
                "description": { "type": "string" },
                "input_schema": {
                    "type": "object",
                    "required": ["type"],
                    "properties": { "type": { "const": "object" } },
                    "not": { "anyOf": [{ "required": ["anyOf"] }, { "required": ["oneOf"] }, { "required": ["allOf"] }] }
                }
            }
        }
    })
}

/// Gemini publishes no schema file either; this is its documented `FunctionDeclaration` and
/// `Schema` (the OpenAPI 3.0 subset): only the listed fields, upper-case types, string enums,
/// and an OBJECT needs properties ("should be non-empty for OBJECT type").
fn gemini_schema() -> Value {
    json!({
        "type": "object",
        "required": ["functionDeclarations"],
        "additionalProperties": false,
        "properties": {
            "functionDeclarations": { "type": "array", "items": { "$ref": "#/$defs/FunctionDeclaration" } }
        },
        "$defs": {
            "FunctionDeclaration": {
                "type": "object",
                "required": ["name"],
                "additionalProperties": false,
                "properties": {
                    "name": { "type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$" },
                    "description": { "type": "string" },
                    "parameters": {
                        "allOf": [
                            { "$ref": "#/$defs/Schema" },
                            { "required": ["type", "properties"], "properties": { "type": { "const": "OBJECT" } } }
                        ]
                    },
                    "response": { "$ref": "#/$defs/Schema" }
                }
            },
            "Schema": {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "type": { "enum": ["STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"] },
                    "format": { "type": "string" },
                    "title": { "type": "string" },
                    "description": { "type": "string" },
                    "nullable": { "type": "boolean" },
                    "enum": { "type": "array", "items": { "type": "string" }, "minItems": 1 },
                    "maxItems": { "type": "integer", "minimum": 0 },
                    "minItems": { "type": "integer", "minimum": 0 },
                    "minProperties": { "type": "integer", "minimum": 0 },
                    "maxProperties": { "type": "integer", "minimum": 0 },
                    "minLength": { "type": "integer", "minimum": 0 },
                    "maxLength": { "type": "integer", "minimum": 0 },
                    "pattern": { "type": "string" },
                    "example": {},
                    "default": {},
                    "minimum": { "type": "number" },
                    "maximum": { "type": "number" },
                    "properties": { "type": "object", "minProperties": 1, "additionalProperties": { "$ref": "#/$defs/Schema" } },
                    "required": { "type": "array", "items": { "type": "string" } },
                    "items": { "$ref": "#/$defs/Schema" },
                    "anyOf": { "type": "array", "minItems": 1, "items": { "$ref": "#/$defs/Schema" } },
                    "propertyOrdering": { "type": "array", "items": { "type": "string" } }
                },
                "anyOf": [{ "required": ["type"] }, { "required": ["anyOf"] }],
                "allOf": [
                    { "if": { "required": ["type"], "properties": { "type": { "const": "OBJECT" } } }, "then": { "required": ["properties"] } },
                    { "if": { "required": ["type"], "properties": { "type": { "const": "ARRAY" } } }, "then": { "required": ["items"] } },
                    { "if": { "required": ["enum"] }, "then": { "properties": { "type": { "const": "STRING" } } } }
                ]
            }
        }
    })
}

fn errors(validator: &Validator, instance: &Value) -> Vec<String> {
    validator
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

/// The keys of `instance` that the official component does not declare. The OpenAI tool schemas
/// are open (no `additionalProperties: false`), so a misspelled field would pass them silently.
fn undeclared_keys(instance: &Value, component: &Value) -> Vec<String> {
    let declared = component["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    instance
        .as_object()
        .map(|m| {
            m.keys()
                .filter(|k| !declared.contains_key(*k))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

// --- OpenAI strict mode, as documented ------------------------------------------------------------

const STRICT_KEYWORDS: &[&str] = &[
    "type",
    "description",
    "title",
    "enum",
    "const",
    "pattern",
    "format",
    "multipleOf",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minItems",
    "maxItems",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "anyOf",
    "$ref",
    "$defs",
    "definitions",
];
const STRICT_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Checks a schema sent with `strict: true` against the rules of OpenAI's Structured Outputs
/// guide; returns what breaks them.
fn strict_violations(schema: &Value, pointer: &str, out: &mut Vec<String>) {
    let Some(map) = schema.as_object() else {
        out.push(format!("{pointer}: not an object schema"));
        return;
    };
    for key in map.keys() {
        if !STRICT_KEYWORDS.contains(&key.as_str()) {
            out.push(format!("{pointer}: keyword `{key}`"));
        }
    }
    if map.contains_key("$ref") && map.len() > 1 {
        out.push(format!("{pointer}: keywords beside `$ref`"));
    }
    if let Some(f) = map.get("format") {
        if !STRICT_FORMATS.contains(&f.as_str().unwrap_or_default()) {
            out.push(format!("{pointer}: format {f}"));
        }
    }
    let is_object = match map.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
        _ => map.contains_key("properties"),
    };
    if is_object {
        if map.get("additionalProperties") != Some(&Value::Bool(false)) {
            out.push(format!("{pointer}: object not closed"));
        }
        let props: Vec<&String> = map
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().collect())
            .unwrap_or_default();
        let required: Vec<&str> = map
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if props.len() != required.len() || props.iter().any(|p| !required.contains(&p.as_str())) {
            out.push(format!("{pointer}: `required` is not every property"));
        }
    }
    for key in ["properties", "$defs", "definitions"] {
        if let Some(Value::Object(children)) = map.get(key) {
            for (name, sub) in children {
                strict_violations(sub, &format!("{pointer}/{key}/{name}"), out);
            }
        }
    }
    if let Some(items) = map.get("items") {
        strict_violations(items, &format!("{pointer}/items"), out);
    }
    if let Some(Value::Array(branches)) = map.get("anyOf") {
        for (i, b) in branches.iter().enumerate() {
            strict_violations(b, &format!("{pointer}/anyOf/{i}"), out);
        }
    }
}

// --- the check itself -------------------------------------------------------------------------------

/// Validates one provider file; returns every problem found, each naming the tool.
fn validate(provider: Provider, file: &Value) -> Vec<String> {
    let o = official();
    let mut problems = Vec::new();
    fn check(
        problems: &mut Vec<String>,
        provider: Provider,
        what: &str,
        validator: &Validator,
        instance: &Value,
    ) {
        for e in errors(validator, instance) {
            problems.push(format!("{}: {what}: {e}", provider.name()));
        }
    }
    let tools = |file: &Value| file.as_array().cloned().unwrap_or_default();
    match provider {
        Provider::OpenaiChat => {
            check(
                &mut problems,
                provider,
                "tools array",
                &jsonschema::validator_for(&json!({ "type": "array" })).unwrap(),
                file,
            );
            for tool in tools(file) {
                let name = tool["function"]["name"].to_string();
                check(
                    &mut problems,
                    provider,
                    &format!("{name} vs ChatCompletionTool"),
                    &o.chat_tool,
                    &tool,
                );
                check(
                    &mut problems,
                    provider,
                    &format!("{name} parameters vs FunctionParameters"),
                    &o.function_parameters,
                    &tool["function"]["parameters"],
                );
                let mut extra = undeclared_keys(&tool, openai_component("ChatCompletionTool"));
                extra.extend(undeclared_keys(
                    &tool["function"],
                    openai_component("FunctionObject"),
                ));
                if !extra.is_empty() {
                    problems.push(format!(
                        "openai-chat: {name}: fields the spec does not declare: {extra:?}"
                    ));
                }
                check_parameters(
                    &mut problems,
                    provider,
                    &name,
                    &tool["function"]["parameters"],
                    tool["function"]["strict"] == json!(true),
                );
            }
        }
        Provider::OpenaiResponses => {
            for tool in tools(file) {
                let name = tool["name"].to_string();
                check(
                    &mut problems,
                    provider,
                    &format!("{name} vs FunctionTool"),
                    &o.responses_tool,
                    &tool,
                );
                let extra = undeclared_keys(&tool, openai_component("FunctionTool"));
                if !extra.is_empty() {
                    problems.push(format!(
                        "openai-responses: {name}: fields the spec does not declare: {extra:?}"
                    ));
                }
                check_parameters(
                    &mut problems,
                    provider,
                    &name,
                    &tool["parameters"],
                    tool["strict"] == json!(true),
                );
            }
        }
        Provider::OpenaiRealtime => {
            check(
                &mut problems,
                provider,
                "session with these tools vs RealtimeSessionCreateRequestGA",
                &o.realtime_session,
                &json!({ "type": "realtime", "tools": file }),
            );
            check(
                &mut problems,
                provider,
                "session.update event vs RealtimeClientEventSessionUpdate",
                &o.realtime_session_update,
                &json!({ "type": "session.update", "session": { "type": "realtime", "tools": file } }),
            );
            for tool in tools(file) {
                let name = tool["name"].to_string();
                check(
                    &mut problems,
                    provider,
                    &format!("{name} vs RealtimeFunctionTool"),
                    &o.realtime_tool,
                    &tool,
                );
                let extra = undeclared_keys(&tool, openai_component("RealtimeFunctionTool"));
                if !extra.is_empty() {
                    problems.push(format!(
                        "openai-realtime: {name}: fields the spec does not declare: {extra:?}"
                    ));
                }
                check_parameters(&mut problems, provider, &name, &tool["parameters"], false);
            }
        }
        Provider::Mcp => {
            for (version, validator) in &o.mcp_list {
                check(
                    &mut problems,
                    provider,
                    &format!("ListToolsResult {version}"),
                    validator,
                    file,
                );
            }
            for tool in tools(&file["tools"]) {
                let name = tool["name"].to_string();
                for (version, validator) in &o.mcp_tool {
                    check(
                        &mut problems,
                        provider,
                        &format!("{name} vs Tool {version}"),
                        validator,
                        &tool,
                    );
                }
                check_parameters(&mut problems, provider, &name, &tool["inputSchema"], false);
                if let Some(output) = tool.get("outputSchema") {
                    check_parameters(&mut problems, provider, &name, output, false);
                }
            }
        }
        Provider::Anthropic => {
            check(
                &mut problems,
                provider,
                "tools vs Anthropic's documented rules",
                &o.anthropic,
                file,
            );
            for tool in tools(file) {
                let name = tool["name"].to_string();
                check_parameters(&mut problems, provider, &name, &tool["input_schema"], false);
            }
        }
        Provider::Gemini => {
            check(
                &mut problems,
                provider,
                "functionDeclarations vs Gemini's documented Schema",
                &o.gemini,
                file,
            );
            for decl in tools(&file["functionDeclarations"]) {
                required_declared(
                    &decl["parameters"],
                    &format!("gemini: {}", decl["name"]),
                    &mut problems,
                );
            }
        }
    }
    problems
}

/// A JSON Schema parameter object: valid 2020-12, and (when declared strict) in the strict subset.
fn check_parameters(
    problems: &mut Vec<String>,
    provider: Provider,
    name: &str,
    schema: &Value,
    strict: bool,
) {
    if let Err(e) = jsonschema::meta::validate(schema) {
        problems.push(format!(
            "{}: {name}: not a valid JSON Schema: {e}",
            provider.name()
        ));
    }
    if strict {
        let mut violations = Vec::new();
        strict_violations(schema, "", &mut violations);
        if schema.get("anyOf").is_some() || schema["type"] != json!("object") {
            violations.push("root is not a plain object".into());
        }
        for v in violations {
            problems.push(format!("{}: {name}: strict: {v}", provider.name()));
        }
    }
}

/// Gemini rejects `required` names that are not declared properties.
fn required_declared(schema: &Value, what: &str, problems: &mut Vec<String>) {
    let Some(map) = schema.as_object() else {
        return;
    };
    if let Some(Value::Array(required)) = map.get("required") {
        for r in required {
            if map
                .get("properties")
                .and_then(|p| p.get(r.as_str().unwrap_or_default()))
                .is_none()
            {
                problems.push(format!("{what}: required {r} is not a property"));
            }
        }
    }
    if let Some(Value::Object(props)) = map.get("properties") {
        for sub in props.values() {
            required_declared(sub, what, problems);
        }
    }
    if let Some(items) = map.get("items") {
        required_declared(items, what, problems);
    }
    if let Some(Value::Array(branches)) = map.get("anyOf") {
        for b in branches {
            required_declared(b, what, problems);
        }
    }
}

#[test]
fn every_manifest_validates_against_the_official_schemas() {
    for path in manifests() {
        let (mut session, ir) = compile(&path);
        let files = provider_files(&ir, &mut session.diagnostics);
        let mut problems = Vec::new();
        for (provider, file) in &files {
            problems.extend(validate(*provider, file));
        }
        assert!(
            problems.is_empty(),
            "{}:\n{}",
            path.display(),
            problems.join("\n")
        );
        // Every tool is in every file (the reference manifests use names valid everywhere),
        // except that MCP lists the server tools only: a host cannot run a client tool.
        let server_tools = ir
            .tools
            .iter()
            .filter(|t| t.def.location == toolc::Location::Server)
            .count();
        for (provider, file) in &files {
            let (count, expected) = match provider {
                Provider::Gemini => (
                    file["functionDeclarations"].as_array().map(Vec::len),
                    ir.tools.len(),
                ),
                Provider::Mcp => (file["tools"].as_array().map(Vec::len), server_tools),
                _ => (file.as_array().map(Vec::len), ir.tools.len()),
            };
            assert_eq!(
                count,
                Some(expected),
                "{} {}",
                path.display(),
                provider.name()
            );
        }
    }
}

#[test]
fn synthetic_manifests_validate_too() {
    let (mut session, ir) = compile_source("synthetic.tools.yaml", &toolc::synthetic::manifest(60));
    let files = provider_files(&ir, &mut session.diagnostics);
    for (provider, file) in &files {
        let problems = validate(*provider, file);
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }
}

#[test]
fn declarations_function_agrees_with_emit() {
    for path in manifests() {
        let (_, ir) = compile(&path);
        let mut diags = Diagnostics::default();
        let files = provider_files(&ir, &mut diags);
        for (provider, file) in files {
            let mut single = Diagnostics::default();
            assert_eq!(
                providers::declarations(&ir, provider, &mut single),
                file,
                "{}",
                provider.name()
            );
        }
    }
}

/// One way to break a valid provider file.
type Breakage = Box<dyn Fn(&mut Value)>;

/// Takes a valid file, breaks it in one way, and expects the validation to say so.
#[test]
fn broken_declarations_fail_validation() {
    let (mut session, ir) = compile(&repo().join("manifests/support.tools.yaml"));
    let files = provider_files(&ir, &mut session.diagnostics);
    let file = |p: Provider| {
        files
            .iter()
            .find(|(q, _)| *q == p)
            .map(|(_, f)| f.clone())
            .unwrap()
    };

    let breakages: Vec<(Provider, &str, Breakage)> = vec![
        (
            Provider::OpenaiChat,
            "function name missing",
            Box::new(|f| {
                f[0]["function"].as_object_mut().unwrap().remove("name");
            }),
        ),
        (
            Provider::OpenaiChat,
            "type not `function`",
            Box::new(|f| f[0]["type"] = json!("tool")),
        ),
        (
            Provider::OpenaiChat,
            "misspelled field",
            Box::new(|f| {
                f[0]["function"]
                    .as_object_mut()
                    .unwrap()
                    .insert("paramters".into(), json!({}));
            }),
        ),
        (
            Provider::OpenaiChat,
            "strict schema with an open object",
            Box::new(|f| {
                let strict = f
                    .as_array_mut()
                    .unwrap()
                    .iter_mut()
                    .find(|t| t["function"]["strict"] == json!(true))
                    .unwrap();
                strict["function"]["parameters"]["additionalProperties"] = json!(true);
            }),
        ),
        (
            Provider::OpenaiChat,
            "strict schema with an optional property",
            Box::new(|f| {
                let strict = f
                    .as_array_mut()
                    .unwrap()
                    .iter_mut()
                    .find(|t| t["function"]["strict"] == json!(true))
                    .unwrap();
                strict["function"]["parameters"]["required"] = json!([]);
            }),
        ),
        (
            Provider::OpenaiResponses,
            "`strict` missing",
            Box::new(|f| {
                f[0].as_object_mut().unwrap().remove("strict");
            }),
        ),
        (
            Provider::OpenaiResponses,
            "parameters not an object",
            Box::new(|f| f[0]["parameters"] = json!("none")),
        ),
        (
            Provider::OpenaiRealtime,
            "name not a string",
            Box::new(|f| f[0]["name"] = json!(42)),
        ),
        (
            Provider::OpenaiRealtime,
            "chat-shaped tool",
            Box::new(|f| {
                let inner = f[0].clone();
                f[0] = json!({ "type": "function", "function": inner });
            }),
        ),
        (
            Provider::Mcp,
            "inputSchema not an object schema",
            Box::new(|f| f["tools"][0]["inputSchema"] = json!({ "type": "array" })),
        ),
        (
            Provider::Mcp,
            "tools not a list",
            Box::new(|f| f["tools"] = json!({})),
        ),
        (
            Provider::Mcp,
            "2026 fields missing",
            Box::new(|f| {
                f.as_object_mut().unwrap().remove("ttlMs");
            }),
        ),
        (
            Provider::Mcp,
            "outputSchema not an object schema (2025-11-25)",
            Box::new(|f| f["tools"][0]["outputSchema"] = json!({ "type": "array" })),
        ),
        (
            Provider::Anthropic,
            "anyOf at the root",
            Box::new(|f| f[0]["input_schema"]["anyOf"] = json!([{ "required": ["query"] }])),
        ),
        (
            Provider::Anthropic,
            "name with a dot",
            Box::new(|f| f[0]["name"] = json!("help.search")),
        ),
        (
            Provider::Gemini,
            "lower-case type",
            Box::new(|f| f["functionDeclarations"][0]["parameters"]["type"] = json!("object")),
        ),
        (
            Provider::Gemini,
            "integer enum",
            Box::new(|f| {
                f["functionDeclarations"][0]["parameters"]["properties"]["limit"]["enum"] =
                    json!([1, 2])
            }),
        ),
        (
            Provider::Gemini,
            "$ref",
            Box::new(|f| {
                f["functionDeclarations"][0]["parameters"]["properties"]["limit"] =
                    json!({ "$ref": "#/$defs/X" })
            }),
        ),
        (
            Provider::Gemini,
            "empty OBJECT",
            Box::new(|f| f["functionDeclarations"][0]["parameters"]["properties"] = json!({})),
        ),
    ];
    for (provider, what, breakage) in breakages {
        let mut broken = file(provider);
        assert!(
            validate(provider, &broken).is_empty(),
            "{}: the unbroken file must pass",
            provider.name()
        );
        breakage(&mut broken);
        assert!(
            !validate(provider, &broken).is_empty(),
            "{}: `{what}` was not caught",
            provider.name()
        );
    }
}

// --- schemas each provider cannot express ------------------------------------------------------------

const EXTRA: &str = r##"version: 1
tools:
  - name: rate_item
    description: Rate an item from one to five stars.
    location: server
    parameters:
      type: object
      properties:
        item_id: { type: string }
        stars: { type: integer, enum: [1, 2, 3, 4, 5], description: How many stars. }
      required: [item_id, stars]
      additionalProperties: false
  - name: save_tree
    description: Save a category tree.
    location: server
    parameters:
      type: object
      properties:
        root: { $ref: "#/$defs/Node" }
      required: [root]
      additionalProperties: false
      $defs:
        Node:
          type: object
          properties:
            label: { type: string }
            children: { type: array, items: { $ref: "#/$defs/Node" } }
          required: [label]
          additionalProperties: false
  - name: set_labels
    description: Set free-form labels on the page.
    location: client
    parameters:
      type: object
      properties:
        title: { type: string }
        labels:
          type: object
          patternProperties:
            "^[a-z]+$": { type: string }
          additionalProperties: false
      required: [title]
      additionalProperties: false
  - name: open_target
    description: Open a page by URL or by record id.
    location: server
    parameters:
      type: object
      properties:
        target:
          oneOf:
            - { type: string, description: A URL. }
            - { type: integer, description: A record id. }
      required: [target]
      additionalProperties: false
  - name: update_profile
    description: Update the customer's profile.
    location: server
    parameters:
      type: object
      properties:
        name: { type: string }
        address:
          type: object
          properties:
            street: { type: string }
            city: { type: string }
          required: [city]
          additionalProperties: false
      required: [name]
      additionalProperties: false
    returns:
      type: array
      items: { type: string }
  - name: find_customer
    description: Find a customer by email or by id.
    location: server
    parameters:
      type: object
      anyOf:
        - properties: { email: { type: string, format: email } }
          required: [email]
        - properties: { id: { type: integer } }
          required: [id]
"##;

fn tool<'a>(file: &'a Value, provider: Provider, name: &str) -> &'a Value {
    let list = match provider {
        Provider::Gemini => &file["functionDeclarations"],
        Provider::Mcp => &file["tools"],
        _ => file,
    };
    let found = list.as_array().and_then(|l| {
        l.iter()
            .find(|t| t["name"] == name || t["function"]["name"] == name)
    });
    found.unwrap_or_else(|| panic!("{name} not in {}", provider.name()))
}

#[test]
fn what_a_provider_cannot_express_is_a_warning_with_a_fallback() {
    let (mut session, ir) = compile_source("extra.tools.yaml", EXTRA);
    assert!(session.diagnostics.is_empty(), "{}", session.render(false));
    let files = provider_files(&ir, &mut session.diagnostics);
    let file = |p: Provider| files.iter().find(|(q, _)| *q == p).map(|(_, f)| f).unwrap();

    // Every fallback still validates.
    for (provider, f) in &files {
        let problems = validate(*provider, f);
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }

    let rendered = session.render(false);
    let warnings: Vec<(&str, String)> = session
        .diagnostics
        .iter()
        .map(|d| (d.code, d.message.clone()))
        .collect();
    let has = |code: &str, parts: &[&str]| {
        warnings
            .iter()
            .any(|(c, m)| *c == code && parts.iter().all(|p| m.contains(p)))
    };
    assert!(!session.diagnostics.has_errors());

    // Integer enum: fine for OpenAI strict mode; Gemini lists the values in the description.
    assert!(
        has(
            codes::GEMINI_ENUM,
            &["rate_item", "/properties/stars", "enum"]
        ),
        "{rendered}"
    );
    let stars = &tool(file(Provider::Gemini), Provider::Gemini, "rate_item")["parameters"]
        ["properties"]["stars"];
    assert_eq!(
        stars,
        &json!({ "type": "INTEGER", "description": "How many stars. Allowed values: 1, 2, 3, 4, 5." })
    );
    assert_eq!(
        tool(
            file(Provider::OpenaiChat),
            Provider::OpenaiChat,
            "rate_item"
        )["function"]["strict"],
        json!(true)
    );

    // Recursive $ref: strict mode takes it; Gemini unrolls it twice and leaves the rest out.
    assert!(
        has(
            codes::GEMINI_RECURSIVE_REF,
            &["save_tree", "/$defs/Node/properties/children/items", "$ref"]
        ),
        "{rendered}"
    );
    let root = &tool(file(Provider::Gemini), Provider::Gemini, "save_tree")["parameters"]
        ["properties"]["root"];
    assert_eq!(root["properties"]["label"], json!({ "type": "STRING" }));
    let inner = &root["properties"]["children"]["items"];
    assert_eq!(inner["properties"]["label"], json!({ "type": "STRING" }));
    assert!(inner["properties"].get("children").is_none(), "{inner}");
    assert_eq!(
        tool(
            file(Provider::OpenaiResponses),
            Provider::OpenaiResponses,
            "save_tree"
        )["strict"],
        json!(true)
    );

    // patternProperties: not strict; Gemini drops the free-form object.
    assert!(
        has(
            codes::STRICT_MODE_UNAVAILABLE,
            &[
                "set_labels",
                "openai-chat and openai-responses",
                "patternProperties",
                "/properties/labels"
            ]
        ),
        "{rendered}"
    );
    let chat = tool(
        file(Provider::OpenaiChat),
        Provider::OpenaiChat,
        "set_labels",
    );
    assert_eq!(chat["function"]["strict"], json!(false));
    assert_eq!(
        chat["function"]["parameters"],
        ir.get("set_labels").unwrap().def.parameters
    );
    assert!(
        has(
            codes::GEMINI_UNSUPPORTED,
            &["set_labels", "patternProperties"]
        ),
        "{rendered}"
    );
    let labels =
        &tool(file(Provider::Gemini), Provider::Gemini, "set_labels")["parameters"]["properties"];
    assert_eq!(labels, &json!({ "title": { "type": "STRING" } }));

    // oneOf: not strict (strict mode has only anyOf); Gemini turns it into anyOf.
    assert!(
        has(
            codes::STRICT_MODE_UNAVAILABLE,
            &["open_target", "oneOf", "/properties/target"]
        ),
        "{rendered}"
    );
    assert_eq!(
        tool(
            file(Provider::OpenaiResponses),
            Provider::OpenaiResponses,
            "open_target"
        )["strict"],
        json!(false)
    );
    let target = &tool(file(Provider::Gemini), Provider::Gemini, "open_target")["parameters"]
        ["properties"]["target"];
    assert_eq!(
        target,
        &json!({ "anyOf": [{ "type": "STRING", "description": "A URL." }, { "type": "INTEGER", "description": "A record id." }] })
    );

    // Optional nested object: strict, nullable, with its own optional property nullable too.
    let profile = &tool(
        file(Provider::OpenaiResponses),
        Provider::OpenaiResponses,
        "update_profile",
    );
    assert_eq!(profile["strict"], json!(true));
    let address = &profile["parameters"]["properties"]["address"];
    assert_eq!(address["type"], json!(["object", "null"]));
    assert_eq!(
        address["properties"]["street"]["type"],
        json!(["string", "null"])
    );
    assert_eq!(address["required"], json!(["street", "city"]));
    assert_eq!(
        profile["parameters"]["required"],
        json!(["name", "address"])
    );
    // ...and its array result has no MCP outputSchema.
    assert!(
        has(codes::MCP_OUTPUT_SCHEMA, &["update_profile", "type: array"]),
        "{rendered}"
    );
    assert!(tool(file(Provider::Mcp), Provider::Mcp, "update_profile")
        .get("outputSchema")
        .is_none());

    // Root anyOf: Anthropic and Gemini declare the alternatives' properties as optional.
    assert!(
        has(codes::ANTHROPIC_UNSUPPORTED, &["find_customer", "anyOf"]),
        "{rendered}"
    );
    let input = &tool(
        file(Provider::Anthropic),
        Provider::Anthropic,
        "find_customer",
    )["input_schema"];
    assert_eq!(
        input,
        &json!({ "type": "object", "properties": { "email": { "type": "string", "format": "email" }, "id": { "type": "integer" } } })
    );
    assert!(
        has(
            codes::GEMINI_UNSUPPORTED,
            &["find_customer", "anyOf", "the root"]
        ),
        "{rendered}"
    );
    let params = &tool(file(Provider::Gemini), Provider::Gemini, "find_customer")["parameters"];
    assert_eq!(
        params,
        &json!({ "type": "OBJECT", "properties": { "email": { "type": "STRING", "format": "email" }, "id": { "type": "INTEGER" } } })
    );
    assert!(
        has(
            codes::STRICT_MODE_UNAVAILABLE,
            &["find_customer", "anyOf", "root"]
        ),
        "{rendered}"
    );

    // Warnings point into the manifest: strict-mode warning at the keyword's line.
    let strict_labels = session
        .diagnostics
        .iter()
        .find(|d| d.code == codes::STRICT_MODE_UNAVAILABLE && d.message.contains("set_labels"))
        .unwrap();
    let span = strict_labels
        .primary
        .as_ref()
        .expect("manifest tools have spans")
        .span;
    let text = &session.sources.get(span.file).text;
    let line = text[..span.start].lines().count();
    assert!(
        text.lines()
            .nth(line - 1)
            .unwrap()
            .contains("patternProperties"),
        "{rendered}"
    );

    // The checks found each problem once: one strict warning per tool, not one per provider.
    let strict_count = warnings
        .iter()
        .filter(|(c, m)| *c == codes::STRICT_MODE_UNAVAILABLE && m.contains("set_labels"))
        .count();
    assert_eq!(strict_count, 1);
}

#[test]
fn tools_without_a_manifest_get_no_spans_and_bad_names_are_left_out() {
    let def = |name: &str, parameters: Value| toolc::ToolDefinition {
        name: name.into(),
        description: "A tool.".into(),
        location: toolc::Location::Server,
        parameters,
        ..Default::default()
    };
    let ir = Ir::from_definitions([
        def(
            "lookup",
            json!({ "type": "object", "properties": { "q": { "type": "string", "not": { "const": "" } } } }),
        ),
        def(
            "files.read",
            json!({ "type": "object", "properties": { "path": { "type": "string" } }, "required": ["path"] }),
        ),
    ]);
    let mut diags = Diagnostics::default();
    let files = provider_files(&ir, &mut diags);
    assert!(diags.iter().all(|d| d.primary.is_none()));
    let strict: Vec<_> = diags
        .iter()
        .filter(|d| d.code == codes::STRICT_MODE_UNAVAILABLE)
        .collect();
    assert_eq!(strict.len(), 1, "{strict:?}");
    assert!(
        strict[0].message.contains("`not` at `/properties/q`"),
        "{}",
        strict[0].message
    );
    // `files.read` is fine for Gemini and MCP, not for OpenAI or Anthropic.
    let names: Vec<&str> = diags
        .iter()
        .filter(|d| d.code == codes::PROVIDER_NAME)
        .map(|d| d.message.as_str())
        .collect();
    assert_eq!(names.len(), 4, "{names:?}");
    for (provider, file) in &files {
        let problems = validate(*provider, file);
        assert!(problems.is_empty(), "{}", problems.join("\n"));
        let text = file.to_string();
        let expected = matches!(provider, Provider::Gemini | Provider::Mcp);
        assert_eq!(text.contains("files.read"), expected, "{}", provider.name());
    }
}

#[test]
fn two_emits_are_byte_identical() {
    let mut all = Session::new();
    for path in manifests() {
        all.add_manifest(&path.display().to_string(), &std::fs::read(&path).unwrap());
    }
    all.add_manifest("extra.tools.yaml", EXTRA.as_bytes());
    let ir = all.check().expect("manifests compile together");
    let emit = || {
        let mut diags = Diagnostics::default();
        let mut outputs = toolc::output::Outputs::new();
        providers::emit(&ir, &mut diags, &mut outputs);
        (outputs, format!("{:?}", diags.into_vec()))
    };
    let first = emit();
    let second = emit();
    assert_eq!(first, second);
    // A fresh compilation of the same input gives the same bytes too.
    let (_, again) = compile_source("extra.tools.yaml", EXTRA);
    let (_, once) = compile_source("extra.tools.yaml", EXTRA);
    let text = |ir: &Ir| {
        let mut outputs = toolc::output::Outputs::new();
        providers::emit(ir, &mut Diagnostics::default(), &mut outputs);
        outputs
    };
    assert_eq!(text(&again), text(&once));
}
