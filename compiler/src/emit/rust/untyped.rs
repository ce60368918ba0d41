//! Which tools can have a place the generated Rust leaves as `serde_json::Value`, decided from
//! their schemas alone. `toolc check` reports such places by name, and names come from the plan
//! of the whole module (a type's name depends on every name taken before it), but planning every
//! tool to find that none is untyped was a fifth of `check`'s time at 10,000 tools. The plan now
//! runs only as far as the last tool this scan cannot clear.
//!
//! The scan follows [`Gen::map`](super::Gen) branch by branch and answers "maybe" wherever the
//! plan could produce an untyped type; it may answer "maybe" where the plan then types the value
//! (map values), never "no" where the plan does not. `warnings_follow_the_plan` holds it to that.

use serde_json::Value;

use super::plan::{
    additional_is_schema, alternatives, keyword, local_def, member, Alternatives,
    OUTSIDE_THE_TYPED_SUBSET,
};
use crate::definition::ToolDefinition;

/// Whether planning `def` can give an untyped field or output type (see the module docs).
pub(super) fn may_be_untyped(def: &ToolDefinition) -> bool {
    if root_may_be_untyped(&def.parameters) {
        return true;
    }
    match &def.returns {
        // Content blocks are typed, and no `returns` is untyped on purpose (not reported).
        Some(_) if def.returns_content() => false,
        Some(returns) => root_may_be_untyped(returns),
        None => false,
    }
}

/// A root schema and each of its `$defs` (the plan emits every definition, used or not).
fn root_may_be_untyped(root: &Value) -> bool {
    let scan = Scan { root };
    scan.schema(root)
        || scan
            .defs()
            .flat_map(|map| map.values())
            .any(|def| scan.schema(def))
}

/// The scan of one root schema, whose definitions its `$ref`s name.
struct Scan<'a> {
    root: &'a Value,
}

impl<'a> Scan<'a> {
    /// The root's `$defs` and `definitions` maps, as the planner allocates names for them.
    fn defs(&self) -> impl Iterator<Item = &'a serde_json::Map<String, Value>> {
        let root = self.root;
        ["$defs", "definitions"]
            .into_iter()
            .filter_map(move |key| keyword(root, key).and_then(Value::as_object))
    }

    fn has_def(&self, name: &str) -> bool {
        self.defs().any(|map| map.contains_key(name))
    }

    /// Mirrors `Gen::map`: `true` wherever it returns `Ty::Value` or plans an item that does.
    fn schema(&self, schema: &Value) -> bool {
        let Value::Object(obj) = schema else {
            return true; // a boolean schema, or not a schema
        };
        if let Some(reference) = member(obj, "$ref") {
            return !reference
                .as_str()
                .and_then(local_def)
                .is_some_and(|def| self.has_def(&def));
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(branches) = member(obj, key).and_then(Value::as_array) {
                match alternatives(obj, branches) {
                    Alternatives::PresenceOnly => continue,
                    Alternatives::Optional(inner) => return self.schema(inner),
                    Alternatives::Untyped => return true,
                }
            }
        }
        if OUTSIDE_THE_TYPED_SUBSET
            .iter()
            .any(|key| member(obj, key).is_some())
        {
            return true;
        }
        let mut non_null = Vec::new();
        let mut nullable = false;
        match member(obj, "type") {
            Some(Value::String(t)) => {
                nullable = t == "null";
                if !nullable {
                    non_null.push(t.as_str());
                }
            }
            Some(Value::Array(types)) => {
                for t in types.iter().filter_map(Value::as_str) {
                    if t == "null" {
                        nullable = true;
                    } else {
                        non_null.push(t);
                    }
                }
            }
            Some(_) => return true,
            None => {}
        }
        match non_null.as_slice() {
            [] if nullable => true,
            [] if member(obj, "properties").is_some() => self.of_type("object", obj),
            [] => match member(obj, "enum").and_then(Value::as_array) {
                Some(values) if values.iter().all(Value::is_string) => self.of_type("string", obj),
                _ => true,
            },
            [one] => self.of_type(one, obj),
            _ => true,
        }
    }

    /// Mirrors `Gen::map_type`.
    fn of_type(&self, ty: &str, obj: &serde_json::Map<String, Value>) -> bool {
        match ty {
            "string" => member(obj, "enum")
                .and_then(Value::as_array)
                .is_some_and(|values| {
                    let strings = values.iter().filter(|v| v.is_string()).count();
                    let nulls = values.iter().filter(|v| v.is_null()).count();
                    strings == 0 || strings + nulls != values.len()
                }),
            "integer" | "number" | "boolean" => false,
            "array" => match member(obj, "items") {
                Some(items) if items.is_object() => self.schema(items),
                _ => true,
            },
            "object" => match member(obj, "properties").and_then(Value::as_object) {
                Some(properties) if !additional_is_schema(obj) => {
                    properties.values().any(|property| self.schema(property))
                }
                // The values' own type is swallowed into a plain map when untyped, but a struct
                // planned for them can still have untyped fields: "maybe".
                None if additional_is_schema(obj) => {
                    member(obj, "additionalProperties").is_none_or(|values| self.schema(values))
                }
                _ => false,
            },
            _ => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{json, Value};

    use crate::diagnostic::Diagnostics;
    use crate::ir::Ir;

    /// Schemas made of the keywords the planner decides on, nested, in every combination the
    /// strategy reaches: types (single, listed, nullable), enums of mixed values, `$ref`s to
    /// defs that exist or not, `anyOf`s of every shape, maps, arrays with and without items.
    fn schema() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(json!({"type": "string"})),
            Just(json!({"type": "integer"})),
            Just(json!({"type": ["number", "null"]})),
            Just(json!({"type": "null"})),
            Just(json!({"type": ["string", "integer"]})),
            Just(json!({"type": 5})),
            Just(json!({"type": "strange"})),
            Just(json!({"type": "string", "enum": ["a", "b", null]})),
            Just(json!({"type": "string", "enum": ["a", 1]})),
            Just(json!({"type": "string", "enum": []})),
            Just(json!({"enum": ["x", "y"]})),
            Just(json!({"enum": []})),
            Just(json!({"enum": [1]})),
            Just(json!({"type": "array"})),
            Just(json!({"type": "array", "items": false})),
            Just(json!({"type": "object"})),
            Just(json!({"$ref": "#/$defs/Thing"})),
            Just(json!({"$ref": "#/$defs/Missing"})),
            Just(json!({"$ref": "#/properties/a"})),
            Just(json!({"not": {}})),
            Just(json!({})),
            Just(json!(true)),
            Just(json!({"description": "no type"})),
        ];
        leaf.prop_recursive(4, 24, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(|props| {
                    let properties: serde_json::Map<String, Value> = props
                        .into_iter()
                        .enumerate()
                        .map(|(i, p)| (format!("p{i}"), p))
                        .collect();
                    json!({"type": "object", "properties": properties, "required": ["p0"]})
                }),
                prop::collection::vec(inner.clone(), 1..3).prop_map(|props| {
                    let properties: serde_json::Map<String, Value> = props
                        .into_iter()
                        .enumerate()
                        .map(|(i, p)| (format!("q{i}"), p))
                        .collect();
                    json!({"properties": properties})
                }),
                inner
                    .clone()
                    .prop_map(|items| json!({"type": "array", "items": items})),
                inner
                    .clone()
                    .prop_map(|values| json!({"type": "object", "additionalProperties": values})),
                inner
                    .clone()
                    .prop_map(|s| json!({"anyOf": [s, {"type": "null"}]})),
                inner
                    .clone()
                    .prop_map(|s| json!({"oneOf": [s, {"type": "null"}], "description": "d"})),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| json!({"anyOf": [a, b]})),
                inner.clone().prop_map(|s| json!({
                    "type": "object",
                    "properties": {"a": s, "b": {"type": "string"}},
                    "anyOf": [{"required": ["a"]}, {"required": ["b"]}]
                })),
            ]
        })
    }

    fn tool(i: usize, parameters: Value, returns: Option<Value>, def: Value) -> Value {
        let mut parameters = json!({"type": "object", "properties": {"x": parameters}});
        parameters["$defs"] = json!({ "Thing": def });
        json!({
            "name": format!("tool_{i}"),
            "description": "d",
            "location": "server",
            "parameters": parameters,
            "returns": returns,
        })
    }

    /// The warnings of the whole plan, as `toolc build` reports them.
    fn planned_warnings(ir: &Ir) -> Vec<String> {
        let plan = super::super::Gen::new(ir, "Server").plan();
        let mut diags = Diagnostics::default();
        super::super::warn_untyped(ir, &plan, &mut diags);
        diags.iter().map(|d| d.message.clone()).collect()
    }

    fn scanned_warnings(ir: &Ir) -> Vec<String> {
        let mut diags = Diagnostics::default();
        super::super::untyped_warnings(ir, &mut diags);
        diags.iter().map(|d| d.message.clone()).collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]
        /// The scan never clears a tool the plan reports, and `toolc check` reports what `toolc
        /// build` does, word for word.
        #[test]
        fn warnings_follow_the_plan(
            tools in prop::collection::vec(
                (schema(), prop::option::of(schema()), schema()), 1..5)
        ) {
            let defs: Vec<crate::definition::ToolDefinition> = tools
                .into_iter()
                .enumerate()
                .map(|(i, (parameters, returns, def))| {
                    serde_json::from_value(tool(i, parameters, returns, def))
                        .expect("a definition")
                })
                .collect();
            let ir = Ir::from_definitions(defs);
            let planned = planned_warnings(&ir);
            for (tool, warned) in ir.tools.iter().map(|t| {
                let warned = planned.iter().any(|w| w.starts_with(&format!("`{}` ", t.def.name)));
                (t, warned)
            }) {
                prop_assert!(!warned || super::may_be_untyped(&tool.def), "{}", tool.def.parameters);
            }
            prop_assert_eq!(scanned_warnings(&ir), planned);
        }
    }

    /// The typed shapes the scan clears, so that `check` skips the plan for them.
    #[test]
    fn typed_tools_are_cleared() {
        let typed = json!({
            "type": "object",
            "properties": {
                "id": {"type": "string", "pattern": "^a$"},
                "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
                "when": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                "meta": {"type": "object"},
                "next": {"$ref": "#/$defs/Node"}
            },
            "$defs": {"Node": {"type": "object", "properties": {"n": {"$ref": "#/$defs/Node"}}}}
        });
        let def: crate::definition::ToolDefinition = serde_json::from_value(json!({
            "name": "t", "description": "d", "location": "server",
            "parameters": typed, "returns": {"type": "array", "items": {"type": "integer"}}
        }))
        .expect("a definition");
        assert!(!super::may_be_untyped(&def));
        let synthetic = crate::synthetic::manifest(50);
        let mut session = toolc_core::Session::new();
        session.add_manifest("synthetic.tools.yaml", synthetic.as_bytes());
        let ir = session.check().expect("the synthetic manifest is valid");
        assert!(ir.tools.iter().all(|t| !super::may_be_untyped(&t.def)));
    }
}
