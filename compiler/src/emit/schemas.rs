//! `schemas/<tool>.parameters.json` and `schemas/<tool>.returns.json`: each a standalone JSON
//! Schema 2020-12 document with `$schema`, `title` and `description` added.

use serde_json::{Map, Value};

use crate::emit::to_json_text;
use crate::ir::Ir;
use crate::output::Outputs;

pub const DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

pub fn emit(ir: &Ir, outputs: &mut Outputs) {
    for tool in &ir.tools {
        let def = &tool.def;
        let parameters = standalone(
            &def.parameters,
            &format!("{} parameters", def.name),
            Some(&def.description),
        );
        outputs.insert(
            format!("schemas/{}.parameters.json", def.name),
            to_json_text(&parameters),
        );
        if let Some(returns) = &def.returns {
            let returns = standalone(returns, &format!("{} result", def.name), None);
            outputs.insert(
                format!("schemas/{}.returns.json", def.name),
                to_json_text(&returns),
            );
        }
    }
}

/// The schema with `$schema` first and a title, keeping everything the author wrote.
pub fn standalone(schema: &Value, title: &str, description: Option<&str>) -> Value {
    let Value::Object(object) = schema else {
        // Boolean schemas stand alone as they are.
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
