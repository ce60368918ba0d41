//! Provider files written as text, in serde_json's pretty layout.
//!
//! The six files repeat the same schemas: realtime, Anthropic and MCP carry the parameters as
//! written, Chat and Responses the same strict schema. Serialising a `serde_json::Value` once per
//! file (and cloning it into each declaration first) was most of the providers' time, so each
//! schema is rendered once, at depth 0, and copied into every file that carries it at that file's
//! depth. Strings never hold a raw newline in JSON, so every newline of a rendered schema starts a
//! line that only needs the file's indentation in front. The small skeleton around the schemas
//! (`type`, `name`, `strict`, ...) is written here. `text_files_are_the_serde_files` in the parent
//! module keeps the result byte-identical to serialising [`super::lower`]'s values.

use serde_json::Value;

/// A JSON value of a provider file's skeleton.
pub(super) enum Json<'a> {
    Str(&'a str),
    Bool(bool),
    /// Pretty JSON text rendered at depth 0 ([`render`]).
    Rendered(&'a str),
    Object(Vec<(&'static str, Json<'a>)>),
    Array(Vec<Json<'a>>),
}

/// `value` as pretty JSON at depth 0, without a final newline.
pub(super) fn render(value: &Value) -> String {
    serde_json::to_string_pretty(value).expect("JSON values always serialise")
}

/// Appends `json` to `out` as if it were serialised pretty at nesting `depth`.
pub(super) fn write(out: &mut Vec<u8>, json: &Json<'_>, depth: usize) {
    match json {
        Json::Str(s) => serde_json::to_writer(&mut *out, s).expect("strings always serialise"),
        Json::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Json::Rendered(text) => splice(out, text, depth),
        Json::Object(members) if members.is_empty() => out.extend_from_slice(b"{}"),
        Json::Object(members) => {
            out.push(b'{');
            for (i, (key, value)) in members.iter().enumerate() {
                separator(out, i, depth + 1);
                serde_json::to_writer(&mut *out, key).expect("strings always serialise");
                out.extend_from_slice(b": ");
                write(out, value, depth + 1);
            }
            close(out, depth, b'}');
        }
        Json::Array(items) => {
            let mut array = ArrayWriter::open(out, depth);
            for item in items {
                let depth = array.next(out);
                write(out, item, depth);
            }
            array.close(out);
        }
    }
}

/// An array written item by item, for lists whose items are written by the caller.
pub(super) struct ArrayWriter {
    depth: usize,
    count: usize,
}

impl ArrayWriter {
    /// Opens an array that sits at nesting `depth`.
    pub(super) fn open(out: &mut Vec<u8>, depth: usize) -> ArrayWriter {
        out.push(b'[');
        ArrayWriter { depth, count: 0 }
    }

    /// Starts the next item; returns the depth to write it at.
    pub(super) fn next(&mut self, out: &mut Vec<u8>) -> usize {
        separator(out, self.count, self.depth + 1);
        self.count += 1;
        self.depth + 1
    }

    pub(super) fn close(self, out: &mut Vec<u8>) {
        if self.count == 0 {
            out.push(b']');
        } else {
            close(out, self.depth, b']');
        }
    }
}

/// The start of the `i`th member of a container whose members sit at `depth`.
fn separator(out: &mut Vec<u8>, i: usize, depth: usize) {
    if i > 0 {
        out.push(b',');
    }
    out.push(b'\n');
    indent(out, depth);
}

fn close(out: &mut Vec<u8>, depth: usize, bracket: u8) {
    out.push(b'\n');
    indent(out, depth);
    out.push(bracket);
}

fn indent(out: &mut Vec<u8>, depth: usize) {
    for _ in 0..depth {
        out.extend_from_slice(b"  ");
    }
}

/// Copies text rendered at depth 0 to `depth`: each line after the first gets the indentation.
fn splice(out: &mut Vec<u8>, text: &str, depth: usize) {
    let mut lines = text.split('\n');
    if let Some(first) = lines.next() {
        out.extend_from_slice(first.as_bytes());
    }
    for line in lines {
        out.push(b'\n');
        indent(out, depth);
        out.extend_from_slice(line.as_bytes());
    }
}

/// The finished file: the text and a final newline, as [`crate::emit::to_json_text`] ends it.
pub(super) fn finish(mut out: Vec<u8>) -> String {
    out.push(b'\n');
    String::from_utf8(out).expect("only UTF-8 text and ASCII punctuation were written")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn skeletons_and_spliced_schemas_read_as_serde_json_writes_them() {
        let schema = json!({
            "type": "object",
            "properties": {"q": {"type": "string", "description": "line\nbreak \"quoted\""}},
            "required": ["q"],
            "items": [],
            "x": {}
        });
        let rendered = render(&schema);
        let declaration = |name| {
            Json::Object(vec![
                ("type", Json::Str("function")),
                (
                    "function",
                    Json::Object(vec![
                        ("name", Json::Str(name)),
                        ("parameters", Json::Rendered(&rendered)),
                        ("strict", Json::Bool(true)),
                        ("empty", Json::Object(Vec::new())),
                    ]),
                ),
            ])
        };
        let mut out = Vec::new();
        let mut list = ArrayWriter::open(&mut out, 0);
        for name in ["a\"b\u{1}é", "c"] {
            let depth = list.next(&mut out);
            write(&mut out, &declaration(name), depth);
        }
        list.close(&mut out);
        let one = |name| {
            json!({
                "type": "function",
                "function": {"name": name, "parameters": schema, "strict": true, "empty": {}}
            })
        };
        let expected = json!([one("a\"b\u{1}é"), one("c")]);
        assert_eq!(finish(out), format!("{}\n", render(&expected)));

        let mut empty = Vec::new();
        ArrayWriter::open(&mut empty, 3).close(&mut empty);
        assert_eq!(empty, b"[]");
    }
}
