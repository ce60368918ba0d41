//! `schemas/<tool>.parameters.json` and `schemas/<tool>.returns.json`: each a standalone JSON
//! Schema 2020-12 document with `$schema`, `title` and `description` added. With
//! [`SchemaLayout::Bundle`], the same documents are embedded in one file, `schemas/tools.json`,
//! for catalogs of thousands of tools where creating a file per schema is most of a build's
//! time on a busy disk.

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

use crate::ir::Ir;
use crate::output::Outputs;

/// The `$schema` every schema file declares: JSON Schema 2020-12.
pub const DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

/// The file [`SchemaLayout::Bundle`] writes.
pub const BUNDLE: &str = "schemas/tools.json";

/// How `toolc build` writes the tools' schemas (`--schemas`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SchemaLayout {
    /// A file per schema, `schemas/<tool>.parameters.json` and `schemas/<tool>.returns.json`
    /// (the default).
    #[default]
    Files,
    /// One compound document, `schemas/tools.json`: each schema embedded under `$defs` as
    /// `<tool>.parameters` / `<tool>.returns`, with the `$id` of its own file
    /// (`<tool>.parameters.json`; an `$id` the author wrote is kept instead), so that its
    /// `#/$defs/...` references still resolve inside it and a validator given the bundle finds
    /// each schema by that `$id`.
    Bundle,
}

impl SchemaLayout {
    /// The names `--schemas` takes.
    pub const NAMES: [&'static str; 2] = ["files", "bundle"];

    /// The layout's name as `--schemas` takes it.
    pub fn name(self) -> &'static str {
        match self {
            SchemaLayout::Files => "files",
            SchemaLayout::Bundle => "bundle",
        }
    }

    /// The layout `--schemas` names; `None` for any other text.
    pub fn parse(name: &str) -> Option<SchemaLayout> {
        match name {
            "files" => Some(SchemaLayout::Files),
            "bundle" => Some(SchemaLayout::Bundle),
            _ => None,
        }
    }
}

/// Writes the schemas of every tool into `outputs`, laid out as `layout` says.
pub fn emit_with(ir: &Ir, layout: SchemaLayout, outputs: &mut Outputs) {
    match layout {
        SchemaLayout::Files => emit(ir, outputs),
        SchemaLayout::Bundle => {
            outputs.insert(BUNDLE.to_owned(), bundle_text(ir));
        }
    }
}

/// One schema file of a tool, whichever layout writes it: `<tool>.parameters` or
/// `<tool>.returns`, with the title it gets when the author wrote none.
struct Document<'a> {
    name: String,
    title: String,
    schema: &'a Value,
    description: Option<&'a str>,
}

impl Document<'_> {
    fn standalone(&self) -> Standalone<'_> {
        Standalone {
            schema: self.schema,
            title: &self.title,
            description: self.description,
        }
    }
}

/// Every tool's documents, in tool order: its parameters, then its result when it has one.
fn documents(ir: &Ir) -> impl Iterator<Item = Document<'_>> {
    ir.tools.iter().flat_map(|tool| {
        let def = &tool.def;
        let parameters = Document {
            name: format!("{}.parameters", def.name),
            title: format!("{} parameters", def.name),
            schema: &def.parameters,
            description: Some(&def.description),
        };
        let returns = def.returns.as_ref().map(|returns| Document {
            name: format!("{}.returns", def.name),
            title: format!("{} result", def.name),
            schema: returns,
            description: None,
        });
        std::iter::once(parameters).chain(returns)
    })
}

/// Writes `schemas/<tool>.parameters.json` for every tool into `outputs`, and
/// `schemas/<tool>.returns.json` for each tool with a `returns` schema.
pub fn emit(ir: &Ir, outputs: &mut Outputs) {
    for document in documents(ir) {
        outputs.insert(
            format!("schemas/{}.json", document.name),
            document.standalone().to_json_text(),
        );
    }
}

/// The schemas as one compound 2020-12 document (see [`SchemaLayout::Bundle`]):
/// `{"$schema": ..., "$comment": ..., "$defs": {name: document with its file's `$id`}}`.
fn bundle_text(ir: &Ir) -> String {
    let mut text = serde_json::to_string_pretty(&Bundle(ir)).expect("JSON values always serialise");
    text.push('\n');
    text
}

struct Bundle<'a>(&'a Ir);

impl Serialize for Bundle<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        struct Defs<'a>(&'a Ir);
        impl Serialize for Defs<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut map = serializer.serialize_map(None)?;
                for document in documents(self.0) {
                    let id = format!("{}.json", document.name);
                    map.serialize_entry(
                        &document.name,
                        &Embedded {
                            id: &id,
                            document: document.standalone(),
                        },
                    )?;
                }
                map.end()
            }
        }
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("$schema", DIALECT)?;
        map.serialize_entry(
            "$comment",
            "Each tool's parameters and result schema, embedded under $defs with the $id of its own file.",
        )?;
        map.serialize_entry("$defs", &Defs(self.0))?;
        map.end()
    }
}

/// A standalone document with `$id` first, as it is embedded in the bundle.
struct Embedded<'a> {
    id: &'a str,
    document: Standalone<'a>,
}

impl Serialize for Embedded<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Value::Object(object) = self.document.schema else {
            // A boolean schema cannot carry an `$id`: `{"$id": ..., "not": {}}` says `false`,
            // `{"$id": ...}` says `true`.
            let mut map = serializer.serialize_map(None)?;
            map.serialize_entry("$id", self.id)?;
            if self.document.schema == &Value::Bool(false) {
                map.serialize_entry("not", &serde_json::json!({}))?;
            }
            return map.end();
        };
        // An `$id` the author wrote stays: references in the schema may use it.
        let id = (!object.contains_key("$id")).then_some(self.id);
        self.document.serialize_with_id(id, serializer)
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
        self.serialize_with_id(None, serializer)
    }
}

impl Standalone<'_> {
    /// The document, with `id` as its `$id` (before everything else) when given (only for a
    /// schema without one of its own).
    fn serialize_with_id<S: Serializer>(
        &self,
        id: Option<&str>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        let Value::Object(object) = self.schema else {
            // Boolean schemas stand alone as they are.
            return self.schema.serialize(serializer);
        };
        let mut map = serializer.serialize_map(None)?;
        if let Some(id) = id {
            map.serialize_entry("$id", id)?;
        }
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
