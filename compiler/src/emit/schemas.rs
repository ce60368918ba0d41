//! `schemas/<tool>.parameters.json` and `schemas/<tool>.returns.json`: each a standalone JSON
//! Schema 2020-12 document with `$schema`, `title` and `description` added.

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

use crate::ir::Ir;
use crate::output::Outputs;

/// The `$schema` every schema file declares: JSON Schema 2020-12.
pub const DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

/// Writes `schemas/<tool>.parameters.json` for every tool into `outputs`, and
/// `schemas/<tool>.returns.json` for each tool with a `returns` schema.
pub fn emit(ir: &Ir, outputs: &mut Outputs) {
    for tool in &ir.tools {
        let def = &tool.def;
        let title = format!("{} parameters", def.name);
        let parameters = Standalone {
            schema: &def.parameters,
            title: &title,
            description: Some(&def.description),
        };
        outputs.insert(
            format!("schemas/{}.parameters.json", def.name),
            parameters.to_json_text(),
        );
        if let Some(returns) = &def.returns {
            let title = format!("{} result", def.name);
            let returns = Standalone {
                schema: returns,
                title: &title,
                description: None,
            };
            outputs.insert(
                format!("schemas/{}.returns.json", def.name),
                returns.to_json_text(),
            );
        }
    }
}

/// A schema as a standalone document: `$schema` first, then a `title` and `description` where
/// the author wrote none, then everything the author wrote. Serialised straight from the
/// borrowed schema, which is not copied.
struct Standalone<'a> {
    schema: &'a Value,
    title: &'a str,
    description: Option<&'a str>,
}

impl Standalone<'_> {
    /// Pretty JSON with a final newline, as `emit::to_json_text` writes a value.
    fn to_json_text(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("JSON values always serialise");
        text.push('\n');
        text
    }
}

impl Serialize for Standalone<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Value::Object(object) = self.schema else {
            // Boolean schemas stand alone as they are.
            return self.schema.serialize(serializer);
        };
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("$schema", DIALECT)?;
        if !object.contains_key("title") {
            map.serialize_entry("title", self.title)?;
        }
        if let (Some(d), false) = (self.description, object.contains_key("description")) {
            map.serialize_entry("description", d)?;
        }
        for (k, v) in object {
            // A member written above is written once, in its first place, as a map would keep it.
            if k != "$schema" {
                map.serialize_entry(k, v)?;
            }
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emit::to_json_text;
    use serde_json::{json, Map};

    /// The document as a `serde_json::Map` would build it: inserting a key again keeps its
    /// first place.
    fn as_map(schema: &Value, title: &str, description: Option<&str>) -> Value {
        let Value::Object(object) = schema else {
            return schema.clone();
        };
        let mut out = Map::new();
        out.insert("$schema".into(), Value::String(DIALECT.into()));
        if !object.contains_key("title") {
            out.insert("title".into(), Value::String(title.into()));
        }
        if let (Some(d), false) = (description, object.contains_key("description")) {
            out.insert("description".into(), Value::String(d.into()));
        }
        for (k, v) in object {
            if k != "$schema" {
                out.insert(k.clone(), v.clone());
            }
        }
        Value::Object(out)
    }

    #[test]
    fn documents_are_written_as_the_map_would_be() {
        let schemas = [
            json!({"type": "object", "properties": {"q": {"type": "string"}}}),
            json!({"$schema": "x", "title": "Mine", "description": "Own", "type": "object"}),
            json!({"description": "d\n\"q\"", "type": "string"}),
            json!(true),
            json!({}),
        ];
        for schema in &schemas {
            for description in [None, Some("A tool.")] {
                let doc = Standalone {
                    schema,
                    title: "t parameters",
                    description,
                };
                assert_eq!(
                    doc.to_json_text(),
                    to_json_text(&as_map(schema, "t parameters", description))
                );
            }
        }
    }
}
