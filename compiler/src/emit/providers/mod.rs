//! Provider declaration files: one tool schema lowered to each provider's dialect.
//!
//! | file | shape | schema dialect |
//! | --- | --- | --- |
//! | `openai-realtime.json` | Realtime GA `session.tools` array | JSON Schema as written |
//! | `openai-chat.json` | Chat Completions `tools` | strict subset, or as written with `strict: false` |
//! | `openai-responses.json` | Responses `tools` | strict subset, or as written with `strict: false` |
//! | `anthropic.json` | Messages API `tools` | JSON Schema, no composition at the root |
//! | `gemini.json` | `{"functionDeclarations": [...]}` | OpenAPI 3.0 subset (`Schema`) |
//! | `mcp.json` | `tools/list` result | JSON Schema 2020-12 |
//!
//! What one provider cannot express is a warning with a fallback in that provider's file only;
//! it never stops the other files. Warning codes are listed in [`codes`].

mod anthropic;
mod gemini;
mod mcp;
mod openai;

use serde_json::{json, Value};

use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::emit::strict::{self, StrictIssue};
use crate::ir::{Ir, IrTool};
use crate::output::Outputs;
use crate::source::Span;

/// The stable codes of the warnings this module emits.
pub mod codes {
    /// OpenAI strict mode is not possible for a tool; it is declared with `strict: false`.
    pub const STRICT_MODE_UNAVAILABLE: &str = "toolc::strict-mode-unavailable";
    /// A keyword Gemini's `Schema` cannot express was dropped (its meaning moved into the description).
    pub const GEMINI_UNSUPPORTED: &str = "toolc::gemini-unsupported";
    /// A non-string `enum`/`const`, which Gemini does not take; the values moved into the description.
    pub const GEMINI_ENUM: &str = "toolc::gemini-non-string-enum";
    /// A recursive `$ref`, which Gemini cannot express; unrolled a few levels, deeper ones left out.
    pub const GEMINI_RECURSIVE_REF: &str = "toolc::gemini-recursive-ref";
    /// `anyOf`/`oneOf`/`allOf` at the root of `parameters`, which Anthropic rejects.
    pub const ANTHROPIC_UNSUPPORTED: &str = "toolc::anthropic-unsupported";
    /// A `returns` schema that is not an object schema; MCP's `outputSchema` is left out.
    pub const MCP_OUTPUT_SCHEMA: &str = "toolc::mcp-output-schema";
    /// A tool name a provider does not accept; the tool is left out of that provider's file.
    pub const PROVIDER_NAME: &str = "toolc::provider-name";
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Provider {
    OpenaiRealtime,
    OpenaiChat,
    OpenaiResponses,
    Anthropic,
    Gemini,
    Mcp,
}

impl Provider {
    pub const ALL: [Provider; 6] = [
        Provider::OpenaiRealtime,
        Provider::OpenaiChat,
        Provider::OpenaiResponses,
        Provider::Anthropic,
        Provider::Gemini,
        Provider::Mcp,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Provider::OpenaiRealtime => "openai-realtime",
            Provider::OpenaiChat => "openai-chat",
            Provider::OpenaiResponses => "openai-responses",
            Provider::Anthropic => "anthropic",
            Provider::Gemini => "gemini",
            Provider::Mcp => "mcp",
        }
    }

    pub fn parse(name: &str) -> Option<Provider> {
        Provider::ALL.into_iter().find(|p| p.name() == name)
    }

    /// Whether the provider has OpenAI's strict mode.
    pub fn has_strict_mode(self) -> bool {
        matches!(self, Provider::OpenaiChat | Provider::OpenaiResponses)
    }

    /// Whether `name` is a tool name this provider accepts, by its documented rule.
    pub fn accepts_name(self, name: &str) -> bool {
        let len = name.len();
        let mut chars = name.chars();
        match self {
            // OpenAI and Anthropic: ^[a-zA-Z0-9_-]{1,64}$
            Provider::OpenaiRealtime
            | Provider::OpenaiChat
            | Provider::OpenaiResponses
            | Provider::Anthropic => {
                (1..=64).contains(&len)
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            }
            // Gemini: starts with a letter or `_`; then letters, digits, `_ . : -`; at most 64.
            Provider::Gemini => {
                (1..=64).contains(&len)
                    && chars
                        .next()
                        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && chars.all(|c| c.is_ascii_alphanumeric() || "_.:-".contains(c))
            }
            // MCP (2025-11-25 and later): 1 to 128 of letters, digits, `_ - .`.
            Provider::Mcp => {
                (1..=128).contains(&len)
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
            }
        }
    }

    fn name_rule(self) -> &'static str {
        match self {
            Provider::Gemini => {
                "a letter or `_`, then up to 63 letters, digits, `_`, `.`, `:` or `-`"
            }
            Provider::Mcp => "1 to 128 letters, digits, `_`, `-` or `.`",
            _ => "1 to 64 letters, digits, `_` or `-`",
        }
    }
}

/// Writes `providers/<name>.json` for every provider. A strict-mode problem is reported once for
/// both OpenAI providers that have strict mode.
///
/// The six files are lowered and serialised on all cores (they only read the IR and the strict
/// outcomes); files and warnings are merged in provider order, as if made one by one.
pub fn emit(ir: &Ir, diags: &mut Diagnostics, outputs: &mut Outputs) {
    let strict = strict_outcomes(ir);
    // As many threads as cores, each taking the next file: every thread has its own allocator
    // heap, and pages first touched cost the kernel's zeroing.
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, Provider::ALL.len());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut made: Vec<(Provider, String, Diagnostics)> = std::thread::scope(|scope| {
        let (strict, next) = (&strict, &next);
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(move || {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(&provider) = Provider::ALL.get(i) else {
                            break done;
                        };
                        let mut provider_diags = Diagnostics::default();
                        let text = lower_to_text(ir, provider, &mut provider_diags, strict);
                        done.push((provider, text, provider_diags));
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    });
    made.sort_by_key(|(provider, _, _)| *provider);
    for (provider, text, provider_diags) in made {
        outputs.insert(format!("providers/{}.json", provider.name()), text);
        diags.extend(provider_diags);
    }
    warn_strict(
        ir,
        &strict,
        &[Provider::OpenaiChat, Provider::OpenaiResponses],
        diags,
    );
}

/// One provider's declarations, with that provider's warnings pushed to `diags`.
pub fn declarations(ir: &Ir, provider: Provider, diags: &mut Diagnostics) -> Value {
    let strict = if provider.has_strict_mode() {
        strict_outcomes(ir)
    } else {
        Vec::new()
    };
    let value = lower(ir, provider, diags, &strict);
    warn_strict(ir, &strict, &[provider], diags);
    value
}

/// Per tool (by index): the strict schema, or why there is none.
type StrictOutcomes = Vec<Result<Value, Vec<StrictIssue>>>;

fn strict_outcomes(ir: &Ir) -> StrictOutcomes {
    ir.tools
        .iter()
        .map(|t| strict::to_strict(&t.def.parameters))
        .collect()
}

fn lower(ir: &Ir, provider: Provider, diags: &mut Diagnostics, strict: &StrictOutcomes) -> Value {
    let mut tools = Vec::with_capacity(ir.tools.len());
    lower_each(ir, provider, diags, strict, |declaration| {
        tools.push(declaration)
    });
    match provider {
        Provider::Gemini => object([("functionDeclarations", Value::Array(tools))]),
        Provider::Mcp => mcp::list_result(tools),
        _ => Value::Array(tools),
    }
}

/// `to_json_text(&lower(..))`, written one declaration at a time: each is made when the
/// serializer asks for it and dropped once written, instead of all of them (copies of every
/// schema) being held at once. serde_json writes it, so the text is the same.
fn lower_to_text(
    ir: &Ir,
    provider: Provider,
    diags: &mut Diagnostics,
    strict: &StrictOutcomes,
) -> String {
    let list = LazyList {
        ir,
        provider,
        strict,
        diags: std::cell::RefCell::new(std::mem::take(diags)),
    };
    let file = LazyFile(&list);
    let mut text = serde_json::to_string_pretty(&file).expect("JSON values always serialise");
    text.push('\n');
    *diags = list.diags.into_inner();
    text
}

/// The list of declarations of one provider, made as it is serialised.
struct LazyList<'a> {
    ir: &'a Ir,
    provider: Provider,
    strict: &'a StrictOutcomes,
    diags: std::cell::RefCell<Diagnostics>,
}

impl serde::Serialize for LazyList<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = serializer.serialize_seq(None)?;
        let mut result = Ok(());
        let mut diags = self.diags.borrow_mut();
        lower_each(
            self.ir,
            self.provider,
            &mut diags,
            self.strict,
            |declaration| {
                if result.is_ok() {
                    result = seq.serialize_element(&declaration);
                }
            },
        );
        result?;
        seq.end()
    }
}

/// A provider's whole file around its [`LazyList`], as [`lower`] shapes it.
struct LazyFile<'a, 'b>(&'b LazyList<'a>);

impl serde::Serialize for LazyFile<'_, '_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self.0.provider {
            Provider::Gemini => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("functionDeclarations", self.0)?;
                map.end()
            }
            Provider::Mcp => {
                let mut map = serializer.serialize_map(Some(4))?;
                map.serialize_entry("resultType", "complete")?;
                map.serialize_entry("tools", self.0)?;
                map.serialize_entry("cacheScope", "public")?;
                map.serialize_entry("ttlMs", &0)?;
                map.end()
            }
            _ => self.0.serialize(serializer),
        }
    }
}

/// Each declaration of `provider`'s file, in tool order, to `each`.
fn lower_each(
    ir: &Ir,
    provider: Provider,
    diags: &mut Diagnostics,
    strict: &StrictOutcomes,
    mut each: impl FnMut(Value),
) {
    for (index, tool) in ir.tools.iter().enumerate() {
        if !provider.accepts_name(&tool.def.name) {
            diags.push(name_warning(tool, provider));
            continue;
        }
        let strict = strict.get(index).and_then(|o| o.as_ref().ok());
        let declaration = match provider {
            Provider::OpenaiRealtime => openai::realtime(tool),
            Provider::OpenaiChat => openai::chat(tool, strict),
            Provider::OpenaiResponses => openai::responses(tool, strict),
            Provider::Anthropic => anthropic::declaration(tool, diags),
            Provider::Gemini => gemini::declaration(tool, diags),
            Provider::Mcp => mcp::declaration(tool, diags),
        };
        each(declaration);
    }
}

fn name_warning(tool: &IrTool, provider: Provider) -> Diagnostic {
    let mut d = Diagnostic::warning(
        codes::PROVIDER_NAME,
        format!(
            "tool `{}` is left out of {}: the name is not valid there",
            tool.def.name,
            provider.name()
        ),
    )
    .help(format!(
        "{} tool names are {}",
        provider.name(),
        provider.name_rule()
    ));
    if let Some(span) = tool.origin.name {
        d = d.at(span, format!("not a valid {} tool name", provider.name()));
    }
    d
}

fn warn_strict(ir: &Ir, strict: &StrictOutcomes, providers: &[Provider], diags: &mut Diagnostics) {
    let names: Vec<&str> = providers.iter().map(|p| p.name()).collect();
    for (tool, outcome) in ir.tools.iter().zip(strict) {
        let Err(issues) = outcome else { continue };
        if !providers.iter().any(|p| p.accepts_name(&tool.def.name)) {
            continue;
        }
        let Some(first) = issues.first() else {
            continue;
        };
        let at = |i: &StrictIssue| {
            if i.pointer.is_empty() {
                format!("`{}` at the root", i.keyword)
            } else {
                format!("`{}` at `{}`", i.keyword, i.pointer)
            }
        };
        let mut help = format!(
            "declared with `strict: false` and the schema as written; arguments are still validated against it at run time. For strict mode, {}",
            first.fix()
        );
        if issues.len() > 1 {
            let others: Vec<String> = issues[1..].iter().map(at).collect();
            help.push_str(&format!("; also: {}", others.join(", ")));
        }
        let mut d = Diagnostic::warning(
            codes::STRICT_MODE_UNAVAILABLE,
            format!(
                "tool `{}` cannot use OpenAI strict mode in {}: {} {}",
                tool.def.name,
                names.join(" and "),
                at(first),
                first.reason
            ),
        )
        .help(help);
        if let Some(span) = parameters_span(tool, &first.pointer, Some(&first.keyword)) {
            d = d.at(span, format!("`{}` prevents strict mode", first.keyword));
        }
        for other in issues.iter().skip(1) {
            if let Some(span) = parameters_span(tool, &other.pointer, Some(&other.keyword)) {
                d = d.also(span, format!("`{}` prevents strict mode", other.keyword));
            }
        }
        diags.push(d);
    }
}

/// The most precise span for a keyword of the parameters schema: the keyword itself, else the
/// schema that holds it, else the `parameters` node. Tools without a manifest have none.
fn parameters_span(tool: &IrTool, pointer: &str, keyword: Option<&str>) -> Option<Span> {
    let keyword_span = keyword.and_then(|k| {
        let node = tool.origin.parameters.as_ref()?;
        let (key, value) = node.pointer(&format!("{pointer}/{}", strict::escape_pointer(k)))?;
        Some(key.map_or(value.span, |key| key.span))
    });
    keyword_span
        .or_else(|| tool.parameters_span(pointer))
        .or_else(|| tool.parameters_span(""))
}

fn returns_span(tool: &IrTool, pointer: &str) -> Option<Span> {
    tool.returns_span(pointer).or_else(|| tool.returns_span(""))
}

/// `pointer` for a message: the root is named as such.
fn describe_pointer(pointer: &str) -> String {
    if pointer.is_empty() {
        "the root".into()
    } else {
        format!("`{pointer}`")
    }
}

/// A JSON object with these members in this order. Unlike `json!`, which serialises every value
/// it is given into a new one, this moves the values in: the schemas are large.
fn object<const N: usize>(members: [(&str, Value); N]) -> Value {
    Value::Object(
        members
            .into_iter()
            .map(|(key, value)| (key.to_owned(), value))
            .collect(),
    )
}

/// The parameters schema with `type: object` at the root, which every provider requires (the
/// manifest checks demand it; tools built from Rust definitions may leave it implicit).
fn object_root(schema: &Value) -> Value {
    match schema {
        Value::Object(map) if map.get("type").and_then(Value::as_str) == Some("object") => {
            schema.clone()
        }
        Value::Object(map) => {
            let mut out = serde_json::Map::new();
            out.insert("type".into(), "object".into());
            for (k, v) in map {
                if k != "type" {
                    out.insert(k.clone(), v.clone());
                }
            }
            Value::Object(out)
        }
        _ => json!({ "type": "object" }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emit::to_json_text;

    #[test]
    fn name_rules_follow_each_provider() {
        let long = "a".repeat(65);
        for p in Provider::ALL {
            assert!(p.accepts_name("search_docs-2"), "{p:?}");
            assert!(!p.accepts_name(""), "{p:?}");
            assert!(!p.accepts_name("has space"), "{p:?}");
        }
        assert!(!Provider::OpenaiChat.accepts_name(&long));
        assert!(Provider::Mcp.accepts_name(&long));
        assert!(Provider::Mcp.accepts_name("files.read"));
        assert!(!Provider::Anthropic.accepts_name("files.read"));
        assert!(Provider::Gemini.accepts_name("ns:files.read"));
        assert!(!Provider::Gemini.accepts_name("1st"));
        assert!(Provider::OpenaiChat.accepts_name("1st"));
    }

    /// The files written one declaration at a time are the files serialised whole, for the
    /// reference manifests, synthetic tools, an empty manifest and names a provider refuses.
    #[test]
    fn files_written_by_declaration_are_the_whole_files() {
        let reference = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../manifests");
        let mut irs = vec![Ir::default()];
        for entry in std::fs::read_dir(reference).expect("reference manifests") {
            let mut session = crate::Session::new();
            session
                .add_path(&entry.expect("entry").path())
                .expect("readable");
            irs.push(session.check().expect("valid"));
        }
        let mut session = crate::Session::new();
        session.add_manifest("s.tools.yaml", crate::synthetic::manifest(12).as_bytes());
        let mut synthetic = session.check().expect("valid");
        synthetic.tools[3].def.name = "a.b".into(); // MCP and Gemini only
        synthetic.tools[4].def.name = "9lives".into(); // not Gemini
        irs.push(synthetic);
        for ir in &irs {
            let strict = strict_outcomes(ir);
            for provider in Provider::ALL {
                let (mut a, mut b) = (Diagnostics::default(), Diagnostics::default());
                let whole = to_json_text(&lower(ir, provider, &mut a, &strict));
                assert_eq!(
                    lower_to_text(ir, provider, &mut b, &strict),
                    whole,
                    "{provider:?}"
                );
                assert_eq!(a.iter().count(), b.iter().count());
            }
        }
    }

    #[test]
    fn parse_round_trips() {
        for p in Provider::ALL {
            assert_eq!(Provider::parse(p.name()), Some(p));
        }
        assert_eq!(Provider::parse("openai"), None);
    }
}
