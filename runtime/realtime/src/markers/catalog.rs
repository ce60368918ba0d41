//! The tool catalog as instruction text, for models that call tools by writing markers.
//!
//! The text is a pure function of the definitions (in the order given), the tag and the
//! authorization predicate: schema properties keep their declared order, nothing depends on hash
//! order, so the same registry always yields the same instructions.

use std::fmt::Write as _;

use serde_json::{Map, Value};

use super::MarkerTag;
use crate::ToolDefinition;

/// How deep nested objects and `$ref`s are followed; deeper parts are summarised by their type.
/// It also stops recursive `$ref`s.
const MAX_DEPTH: usize = 4;

/// Renders `tools` as instructions for a model without native tool calling: the exact marker
/// syntax with `tag`, then per tool its name, description, whether it requires authorization
/// (`requires_auth`), its parameters with their types and constraints, and an example marker.
pub fn catalog_instructions<'a, I, A>(tools: I, tag: &MarkerTag, requires_auth: A) -> String
where
    I: IntoIterator<Item = &'a ToolDefinition>,
    A: Fn(&ToolDefinition) -> bool,
{
    let mut out = String::new();
    let generic = tag.render_call("tool_name", r#"{"parameter":"value"}"#);
    // `write!` to a String cannot fail; the results are ignored on purpose throughout.
    let _ = write!(
        out,
        "# Tools\n\
         \n\
         You can use the tools listed below. To call a tool, write a call marker in your reply, \
         in exactly this form:\n\
         \n\
         {generic}\n\
         \n\
         - NAME is the tool's name, exactly as listed.\n\
         - ARGUMENTS is one JSON object with the tool's parameters. Include every required \
         parameter; leave out optional ones you do not need.\n\
         - Write the marker exactly as shown: no spaces around `:`, `=` and `,`, and `>>>` right \
         after the closing `}}`.\n\
         - To call several tools, write one marker for each.\n\
         - The user does not see markers. After writing your markers, stop: the results come \
         back in the next message, and then you answer the user.\n\
         - Call only the tools listed here, and never show the marker syntax to the user.\n\
         - A tool that requires authorization only runs for a signed-in user. If such a call is \
         refused, tell the user that they need to sign in.\n"
    );
    for tool in tools {
        render_tool(&mut out, tool, tag, requires_auth(tool));
    }
    out
}

fn render_tool(out: &mut String, tool: &ToolDefinition, tag: &MarkerTag, auth: bool) {
    let _ = write!(out, "\n## {}\n\n", tool.name);
    let description = one_line(&tool.description);
    if !description.is_empty() {
        let _ = writeln!(out, "{description}");
    }
    let _ = writeln!(
        out,
        "Requires authorization: {}",
        if auth { "yes" } else { "no" }
    );
    let root = &tool.parameters;
    let has_fields = properties(root).is_some_and(|p| !p.is_empty());
    if has_fields {
        let _ = writeln!(out, "Parameters:");
        render_fields(out, root, root, 0, 0);
    } else {
        let _ = writeln!(out, "Parameters: none");
    }
    let example = example_object(root, root, 0);
    let example = serde_json::to_string(&example).unwrap_or_else(|_| "{}".to_owned());
    let _ = writeln!(out, "Example:\n{}", tag.render_call(&tool.name, &example));
}

/// One bullet per property of the object `schema`, nested objects indented below their field.
fn render_fields(out: &mut String, schema: &Value, root: &Value, indent: usize, depth: usize) {
    let Some(props) = properties(schema) else {
        return;
    };
    let required = required(schema);
    for (name, prop) in props {
        let target = resolve(prop, root, depth);
        let mut facts = vec![describe_type(prop, root, depth)];
        facts.push(if required.contains(&name.as_str()) {
            "required".to_owned()
        } else {
            "optional".to_owned()
        });
        facts.extend(constraints(target));
        let _ = write!(out, "{:indent$}- {name} ({})", "", facts.join(", "));
        let description = prop
            .get("description")
            .or_else(|| target.get("description"))
            .and_then(Value::as_str)
            .map(one_line)
            .unwrap_or_default();
        if !description.is_empty() {
            let _ = write!(out, ": {description}");
        }
        out.push('\n');
        if depth + 1 < MAX_DEPTH {
            render_nested(out, target, root, indent + 2, depth + 1);
        }
    }
}

/// The fields of a property's object value, of its array items, or of the object alternatives
/// of an `anyOf`/`oneOf`, below the property's bullet.
fn render_nested(out: &mut String, target: &Value, root: &Value, indent: usize, depth: usize) {
    let has_fields = |s: &Value| properties(s).is_some_and(|p| !p.is_empty());
    if has_fields(target) {
        render_fields(out, target, root, indent, depth);
    } else if let Some(items) = target.get("items") {
        let items = resolve(items, root, depth);
        if has_fields(items) {
            let _ = writeln!(out, "{:indent$}each item has:", "");
            render_fields(out, items, root, indent + 2, depth + 1);
        }
    } else {
        let alternatives = ["anyOf", "oneOf"]
            .iter()
            .find_map(|k| target.get(*k).and_then(Value::as_array));
        for alternative in alternatives.into_iter().flatten() {
            let alternative = resolve(alternative, root, depth);
            if has_fields(alternative) {
                let _ = writeln!(out, "{:indent$}as an object, it has:", "");
                render_fields(out, alternative, root, indent + 2, depth + 1);
            }
        }
    }
}

/// A short type phrase: `string`, `integer or null`, `one of "a", "b"`, `array of string`.
fn describe_type(schema: &Value, root: &Value, depth: usize) -> String {
    let schema = resolve(schema, root, depth);
    let Some(obj) = schema.as_object() else {
        return match schema {
            Value::Bool(false) => "no value allowed".to_owned(),
            _ => "any JSON value".to_owned(),
        };
    };
    if let Some(value) = obj.get("const") {
        return format!("exactly {}", compact(value));
    }
    if let Some(Value::Array(values)) = obj.get("enum") {
        let listed: Vec<String> = values.iter().map(compact).collect();
        return format!("one of {}", listed.join(", "));
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(options)) = obj.get(key) {
            if depth >= MAX_DEPTH {
                return "one of several types".to_owned();
            }
            let listed: Vec<String> = options
                .iter()
                .map(|o| describe_type(o, root, depth + 1))
                .collect();
            return listed.join(" or ");
        }
    }
    let types: Vec<&str> = match obj.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ if obj.contains_key("properties") => vec!["object"],
        _ if obj.contains_key("items") => vec!["array"],
        _ => return "any JSON value".to_owned(),
    };
    let listed: Vec<String> = types
        .iter()
        .map(|t| match (*t, obj.get("items")) {
            ("array", Some(items)) if depth < MAX_DEPTH => {
                format!("array of {}", describe_type(items, root, depth + 1))
            }
            (t, _) => t.to_owned(),
        })
        .collect();
    listed.join(" or ")
}

/// The constraints a model needs to produce a valid value, in a fixed order.
fn constraints(schema: &Value) -> Vec<String> {
    let mut facts = Vec::new();
    let num = |key: &str| schema.get(key).filter(|v| v.is_number()).map(compact);
    let count = |key: &str| schema.get(key).and_then(Value::as_u64);
    if let Some(format) = schema.get("format").and_then(Value::as_str) {
        facts.push(format!("format {format}"));
    }
    if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
        facts.push(format!("matching the pattern {pattern}"));
    }
    match (count("minLength"), count("maxLength")) {
        (Some(lo), Some(hi)) => facts.push(format!("{lo} to {hi} characters")),
        (Some(lo), None) => facts.push(format!("at least {lo} {}", plural(lo, "character"))),
        (None, Some(hi)) => facts.push(format!("at most {hi} {}", plural(hi, "character"))),
        (None, None) => {}
    }
    match (num("minimum"), num("maximum")) {
        (Some(lo), Some(hi)) => facts.push(format!("{lo} to {hi}")),
        (Some(lo), None) => facts.push(format!("at least {lo}")),
        (None, Some(hi)) => facts.push(format!("at most {hi}")),
        (None, None) => {}
    }
    if let Some(lo) = num("exclusiveMinimum") {
        facts.push(format!("greater than {lo}"));
    }
    if let Some(hi) = num("exclusiveMaximum") {
        facts.push(format!("less than {hi}"));
    }
    match (count("minItems"), count("maxItems")) {
        (Some(lo), Some(hi)) => facts.push(format!("{lo} to {hi} items")),
        (Some(lo), None) => facts.push(format!("at least {lo} {}", plural(lo, "item"))),
        (None, Some(hi)) => facts.push(format!("at most {hi} {}", plural(hi, "item"))),
        (None, None) => {}
    }
    if schema.get("uniqueItems") == Some(&Value::Bool(true)) {
        facts.push("no duplicates".to_owned());
    }
    if let Some(default) = schema.get("default") {
        facts.push(format!("default {}", compact(default)));
    }
    facts
}

/// A value that satisfies the common constraints of `schema`, for the example marker. Only
/// required properties are filled in, so the example is the smallest valid call.
fn example_value(schema: &Value, root: &Value, depth: usize) -> Value {
    let schema = resolve(schema, root, depth);
    let Some(obj) = schema.as_object() else {
        return Value::Null;
    };
    if let Some(Value::Array(examples)) = obj.get("examples") {
        if let Some(first) = examples.first() {
            return first.clone();
        }
    }
    for key in ["default", "const"] {
        if let Some(value) = obj.get(key) {
            return value.clone();
        }
    }
    if let Some(first) = obj
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|v| v.first())
    {
        return first.clone();
    }
    if let Some(first) = ["anyOf", "oneOf"]
        .iter()
        .find_map(|k| obj.get(*k).and_then(Value::as_array))
        .and_then(|v| v.first())
    {
        if depth < MAX_DEPTH {
            return example_value(first, root, depth + 1);
        }
    }
    let ty = match obj.get("type") {
        Some(Value::String(t)) => t.as_str(),
        // Prefer a non-null type of a nullable union, so the example shows a real value.
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if obj.contains_key("properties") => "object",
        _ => "string",
    };
    match ty {
        "string" => Value::String("...".to_owned()),
        "integer" => obj
            .get("minimum")
            .filter(|v| v.is_i64() || v.is_u64())
            .cloned()
            .unwrap_or(Value::from(1)),
        "number" => obj
            .get("minimum")
            .filter(|v| v.is_number())
            .cloned()
            .unwrap_or(Value::from(1.5)),
        "boolean" => Value::Bool(true),
        "null" => Value::Null,
        "array" => match obj.get("items") {
            Some(items) if depth < MAX_DEPTH => {
                Value::Array(vec![example_value(items, root, depth + 1)])
            }
            _ => Value::Array(Vec::new()),
        },
        "object" => example_object(schema, root, depth),
        _ => Value::Null,
    }
}

fn example_object(schema: &Value, root: &Value, depth: usize) -> Value {
    let mut map = Map::new();
    if depth < MAX_DEPTH {
        if let Some(props) = properties(schema) {
            let required = required(schema);
            for (name, prop) in props {
                if required.contains(&name.as_str()) {
                    map.insert(name.clone(), example_value(prop, root, depth + 1));
                }
            }
        }
    }
    Value::Object(map)
}

/// Follows a local `$ref` (`#/...`) within the tool's parameters schema, up to the depth limit.
fn resolve<'a>(schema: &'a Value, root: &'a Value, depth: usize) -> &'a Value {
    let mut current = schema;
    for _ in depth..MAX_DEPTH {
        match current
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix('#'))
            .and_then(|pointer| root.pointer(pointer))
        {
            Some(target) => current = target,
            None => break,
        }
    }
    current
}

fn properties(schema: &Value) -> Option<&Map<String, Value>> {
    schema.get("properties").and_then(Value::as_object)
}

fn required(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn compact(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

fn plural(n: u64, word: &str) -> String {
    if n == 1 {
        word.to_owned()
    } else {
        format!("{word}s")
    }
}

/// Descriptions may be folded YAML with line breaks; one line per bullet keeps the layout.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
