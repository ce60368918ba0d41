use super::*;
use serde_json::json;

fn compiles(schema: &Json) -> bool {
    jsonschema::draft202012::options()
        .should_validate_formats(false)
        .build(schema)
        .is_ok()
}

/// Every schema that skips compilation must be one that compiles: checked on the reference
/// manifests, synthetic tools and schemas that use every keyword without a risky value.
#[test]
fn schemas_that_skip_compilation_compile() {
    let mut corpus: Vec<Json> = vec![
        json!({"type": "object"}),
        json!(true),
        json!({"not": {}, "items": false, "prefixItems": [{"type": "string"}, true]}),
        json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}},
               "$defs": {"A": {"type": "object", "properties": {"next": {"$ref": "#/$defs/A"}}}}}),
        json!({"properties": {"b": {"$ref": "#"}}, "definitions": {"x-1.b": {"type": "null"}}}),
        json!({"enum": [1, "a", null, [1]], "const": {"k": [true]}, "default": {"pattern": 1}}),
        json!({"type": "string", "format": "no-such-format", "contentEncoding": "base64",
               "contentMediaType": "application/json", "contentSchema": {"type": "object"}}),
        json!({"dependentRequired": {"a": ["b"]}, "dependentSchemas": {"a": {"required": ["c"]}},
               "unevaluatedProperties": false, "unevaluatedItems": {"type": "integer"}}),
        json!({"if": {"minProperties": 1}, "then": {"maxProperties": 3}, "else": false,
               "propertyNames": {"maxLength": 3}, "additionalProperties": {"type": "string"}}),
        json!({"type": "array", "contains": {"type": "integer"}, "minContains": 1,
               "maxContains": 2, "uniqueItems": true, "minItems": 0, "maxItems": 9}),
        json!({"anyOf": [{"type": "integer", "multipleOf": 3, "exclusiveMinimum": -4}],
               "oneOf": [true], "allOf": [{}], "title": "t", "deprecated": true,
               "readOnly": false, "writeOnly": false, "examples": [1.5], "x-ext": {"pattern": "("}}),
    ];
    let manifests = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../manifests");
    let mut session = crate::Session::new();
    for entry in std::fs::read_dir(&manifests).expect("the reference manifests") {
        let path = entry.expect("a directory entry").path();
        if path.to_string_lossy().ends_with(".tools.yaml") {
            session.add_path(&path).expect("readable");
        }
    }
    session.add_manifest(
        "synthetic.tools.yaml",
        crate::synthetic::manifest(10).as_bytes(),
    );
    let ir = session.check().expect("the reference manifests are valid");
    for tool in ir.tools {
        corpus.push(tool.def.parameters);
        corpus.extend(tool.def.returns);
    }
    let meta = jsonschema::draft202012::meta::validator();
    let mut skipped = 0;
    for schema in &corpus {
        if meta.is_valid(schema) && !must_compile(schema) {
            skipped += 1;
            assert!(compiles(schema), "{schema}");
        }
    }
    assert!(skipped > corpus.len() / 2, "{skipped} of {}", corpus.len());
}

/// What only compilation finds is still found: a regular expression the engine rejects (also
/// as a `patternProperties` key), a non-integer where an integer is needed, an anchor or
/// dynamic reference that leads nowhere.
#[test]
fn schemas_that_can_fail_are_compiled() {
    let risky = [
        json!({"type": "string", "pattern": "(unclosed"}),
        json!({"type": "object", "patternProperties": {"[z-a]": {"type": "string"}}}),
        json!({"type": "string", "maxLength": 1e30}),
        json!({"$dynamicRef": "#nowhere"}),
        json!({"$schema": "https://example.invalid/unknown-meta-schema"}),
    ];
    for schema in &risky {
        assert!(must_compile(schema), "{schema}");
    }
    assert!(!compiles(&risky[0]));
    assert!(!compiles(&risky[1]));
    assert!(!must_compile(&json!({"$ref": "#/$defs/Line_item-2"})));
    assert!(must_compile(&json!({"$ref": "#/$defs/a~1b"})));
    // A pattern the engine knows is no risk; one it rejects still is, wherever it repeats.
    let good = json!({"type": "object", "properties": {
        "id": {"type": "string", "pattern": "^AC-[0-9]{6}$"},
        "code": {"type": "string", "pattern": "^[A-Z]{3}$"}}});
    assert!(!must_compile(&good), "each pattern compiles alone");
    assert!(!must_compile(&good), "and is known the second time");
    assert!(must_compile(&risky[0]));
    assert!(must_compile(&risky[0]), "a bad pattern is never remembered");
    assert!(must_compile(&risky[1]), "patternProperties compile whole");
    assert!(must_compile(
        &json!({"type": "string", "pattern": "^[A-Z]{3}$", "maxLength": 1e30})
    ));
    assert!(must_compile(&json!({"$ref": "#/properties/a"})));
}

#[test]
fn a_bad_pattern_is_reported_at_its_node() {
    let text = "version: 1\ntools:\n  - name: t\n    description: d\n    location: server\n    parameters:\n      type: object\n      properties:\n        id: { type: string, pattern: \"(unclosed\" }\n";
    let mut session = crate::Session::new();
    session.add_manifest("p.tools.yaml", text.as_bytes());
    assert!(session.check().is_none());
    let d = &session.diagnostics.iter().next().expect("one diagnostic");
    assert_eq!(d.code, crate::codes::INVALID_SCHEMA);
    let span = d.primary.as_ref().expect("a span").span;
    assert!(text[span.start..].starts_with("\"(unclosed\""), "{span:?}");
}

/// Codes of the diagnostics for a manifest with one server tool of these parameters.
fn codes_for(parameters: &Json) -> Vec<&'static str> {
    let text = format!(
        "version: 1\ntools:\n  - name: t\n    description: d\n    location: server\n    parameters: {parameters}\n"
    );
    let mut session = crate::Session::new();
    session.add_manifest("c.tools.yaml", text.as_bytes());
    session.check();
    session.diagnostics.iter().map(|d| d.code).collect()
}

#[test]
fn schemas_made_only_of_themselves_are_ref_cycles() {
    let cycles = [
        json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}},
               "$defs": {"A": {"$ref": "#/$defs/A"}}}),
        json!({"type": "object", "allOf": [{"$ref": "#"}]}),
        json!({"type": "object", "$defs": {
            "B": {"oneOf": [{"type": "null"}, {"anyOf": [{"$ref": "#/definitions/C"}]}]}},
               "definitions": {"C": {"$ref": "#/$defs/B"}}}),
        json!({"type": "object", "$defs": {"a/b": {"$ref": "#/$defs/a~1b"}}}),
    ];
    for schema in &cycles {
        assert_eq!(codes_for(schema), [crate::codes::REF_CYCLE], "{schema}");
    }
    let two = json!({"type": "object", "$defs": {
        "A": {"$ref": "#/$defs/A"}, "B": {"$ref": "#/$defs/C"}, "C": {"$ref": "#/$defs/B"}}});
    assert_eq!(
        codes_for(&two),
        [crate::codes::REF_CYCLE, crate::codes::REF_CYCLE]
    );
    let recursions = [
        json!({"type": "object", "properties": {"next": {"$ref": "#"}}}),
        json!({"type": "object", "$defs": {"Tree": {"type": "object", "properties": {
            "children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}}}}}),
        json!({"type": "object", "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"type": "string"}}}),
        json!({"type": "object", "$defs": {"L": {"anyOf": [{"type": "null"},
            {"type": "object", "properties": {"tail": {"$ref": "#/$defs/L"}}}]}}}),
    ];
    for schema in &recursions {
        assert!(codes_for(schema).is_empty(), "{schema}");
    }
}

#[test]
fn definitions_that_multiply_past_the_limit_are_an_error() {
    let shared = |levels: usize, make: &dyn Fn(Json) -> Json| {
        let mut defs = serde_json::Map::new();
        for k in 0..levels {
            defs.insert(
                format!("D{k}"),
                make(json!({ "$ref": format!("#/$defs/D{}", k + 1) })),
            );
        }
        defs.insert(format!("D{levels}"), json!({ "type": "string" }));
        json!({ "type": "object", "properties": { "x": { "$ref": "#/$defs/D0" } }, "$defs": defs })
    };
    let any_of = |r: Json| json!({ "anyOf": [r.clone(), r] });
    let props = |r: Json| json!({ "type": "object", "properties": { "a": r.clone(), "b": r } });
    for make in [&any_of as &dyn Fn(Json) -> Json, &props] {
        assert_eq!(
            codes_for(&shared(40, make)),
            [crate::codes::SCHEMA_TOO_LARGE]
        );
        // 2^12 copies: large, and allowed.
        assert!(codes_for(&shared(12, make)).is_empty());
    }
}

#[test]
fn required_without_properties_is_a_constraint_of_its_own() {
    // "These keys, any values" (a real tool of a public function-calling set).
    let keys = json!({"type": "object", "properties": {"meta": {
        "type": "object", "required": ["id", "kind"]}}});
    assert!(codes_for(&keys).is_empty());
    // With `additionalProperties: false` the keys can never be there: one error.
    let closed = json!({"type": "object", "required": ["id"], "additionalProperties": false});
    assert_eq!(codes_for(&closed), [crate::codes::UNSATISFIABLE_SCHEMA]);
}

#[test]
fn values_a_schema_accepts_are_not_reported() {
    let fine = [json!({"type": "object", "properties": {
            "n": {"type": "integer", "enum": [1, 2.0], "default": 2, "minimum": 1, "maximum": 2},
            "x": {"type": ["string", "null"], "enum": ["a", null], "default": null},
            "t": {"type": "string", "minLength": 2, "maxLength": 2, "examples": ["ab", "é€"]},
            "m": {"type": "number", "multipleOf": 0.1, "default": 0.3},
            "p": {"type": "string", "pattern": "^[A-Z]{2}$", "default": "AB"},
            "o": {"type": "object", "properties": {"k": {"type": "string"}},
                  "required": ["k"], "default": {"k": "v"}},
            "a": {"type": "array", "items": {"enum": ["x", "y"]}, "default": ["x"]},
            "r": {"$ref": "#/$defs/Colour", "default": "red"},
            "c": {"const": 3, "enum": [3, 4]},
            "e": {"exclusiveMinimum": 0, "maximum": 1}
        }, "$defs": {"Colour": {"type": "string", "enum": ["red", "green"]}}})];
    for schema in &fine {
        assert!(
            codes_for(schema).is_empty(),
            "{schema}: {:?}",
            codes_for(schema)
        );
    }
    let wrong = [
        (
            json!({"type": "object", "properties": {"p": {"type": "string", "pattern": "^[A-Z]{2}$", "default": "abc"}}}),
            crate::codes::INVALID_DEFAULT,
        ),
        (
            json!({"type": "object", "properties": {"r": {"$ref": "#/$defs/C", "default": "blue"}},
                "$defs": {"C": {"type": "string", "enum": ["red"]}}}),
            crate::codes::INVALID_DEFAULT,
        ),
        (
            json!({"type": "object", "properties": {"o": {"type": "object", "properties": {"k": {"type": "string"}},
                "required": ["k"], "default": {}}}}),
            crate::codes::INVALID_DEFAULT,
        ),
        (
            json!({"type": "object", "properties": {"e": {"exclusiveMinimum": 1, "maximum": 1}}}),
            crate::codes::UNSATISFIABLE_SCHEMA,
        ),
        (
            json!({"type": "object", "properties": {"e": {"minimum": 1, "exclusiveMaximum": 1}}}),
            crate::codes::UNSATISFIABLE_SCHEMA,
        ),
        (
            json!({"type": "object", "properties": {"a": {"type": "array", "minItems": 3, "maxItems": 1}}}),
            crate::codes::UNSATISFIABLE_SCHEMA,
        ),
        (
            json!({"type": "object", "minProperties": 2, "maxProperties": 1}),
            crate::codes::UNSATISFIABLE_SCHEMA,
        ),
        (
            json!({"type": "object", "properties": {"c": {"type": "string", "const": 5}}}),
            crate::codes::UNSATISFIABLE_SCHEMA,
        ),
    ];
    for (schema, code) in &wrong {
        assert_eq!(codes_for(schema), [*code], "{schema}");
    }
}

#[test]
fn required_in_an_applicator_names_the_parents_properties() {
    let one_of_two = json!({
        "type": "object",
        "properties": { "email": { "type": "string" }, "phone": { "type": "string" } },
        "anyOf": [{ "required": ["email"] }, { "required": ["phone"] }],
        "if": { "required": ["email"] },
        "then": { "not": { "required": ["phone"] } }
    });
    assert!(codes_for(&one_of_two).is_empty());
    // Outside an applicator a name must still be declared, also in a property called `not`.
    let typo = json!({
        "type": "object",
        "properties": { "email": { "type": "string" },
                        "not": { "type": "object", "properties": {}, "required": ["x"] } },
        "required": ["emial"]
    });
    assert_eq!(
        codes_for(&typo),
        [
            crate::codes::UNDECLARED_REQUIRED,
            crate::codes::UNDECLARED_REQUIRED
        ]
    );
}
