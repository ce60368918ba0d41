//! Provider declaration files: one tool schema lowered to each provider's dialect.
//!
//! | file | shape | schema dialect |
//! | --- | --- | --- |
//! | `openai-realtime.json` | Realtime GA `session.tools` array | JSON Schema as written |
//! | `openai-chat.json` | Chat Completions `tools` | strict subset, or as written with `strict: false` |
//! | `openai-responses.json` | Responses `tools` | strict subset, or as written with `strict: false` |
//! | `anthropic.json` | Messages API `tools` | JSON Schema, no composition at the root |
//! | `gemini.json` | `{"functionDeclarations": [...]}`, `returns` as `response` | OpenAPI 3.0 subset (`Schema`) |
//! | `mcp.json` | `tools/list` result | JSON Schema 2020-12 |
//!
//! What one provider cannot express is a warning with a fallback in that provider's file only;
//! it never stops the other files. Warning codes are listed in [`codes`].

mod anthropic;
mod gemini;
pub mod mcp;
mod openai;
mod text;

use serde_json::Value;

use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::ir::{Ir, IrTool};
use crate::output::Outputs;
use crate::Span;
use toolc_core::strict::{self, StrictIssue};

/// The stable codes of every diagnostic, the providers' warnings among them.
pub use toolc_core::codes;

pub use toolc_core::provider::Provider;

/// Writes `providers/<name>.json` for every provider. A strict-mode problem is reported once for
/// both OpenAI providers that have strict mode.
///
/// What several files share (each tool's schema as written and its strict form) is rendered
/// once, on all cores; then the six files are assembled on all cores. Files and warnings are
/// merged in provider order, as if made one by one.
/// How Gemini's `functionDeclarations` carry a tool's schemas.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum GeminiSchema {
    /// `parameters` and `response` in Gemini's OpenAPI 3.0 subset, lowered with warnings for
    /// what it cannot say: what every Gemini model accepts (the default).
    #[default]
    Subset,
    /// `parametersJsonSchema` and `responseJsonSchema`: the JSON Schema as written (`$ref`, type
    /// lists, `anyOf` beside other keywords kept), which current models accept. Mutually
    /// exclusive with `parameters`; nothing is lowered, so nothing is warned of.
    JsonSchema,
}

impl GeminiSchema {
    /// The names `--gemini-schema` takes.
    pub const NAMES: [&'static str; 2] = ["subset", "json-schema"];

    /// The form's name as `--gemini-schema` takes it.
    pub fn name(self) -> &'static str {
        match self {
            GeminiSchema::Subset => "subset",
            GeminiSchema::JsonSchema => "json-schema",
        }
    }

    /// The form `--gemini-schema` names; `None` for any other text.
    pub fn parse(name: &str) -> Option<GeminiSchema> {
        match name {
            "subset" => Some(GeminiSchema::Subset),
            "json-schema" => Some(GeminiSchema::JsonSchema),
            _ => None,
        }
    }
}

/// Every provider file into `outputs`, with Gemini's schemas in its subset (see
/// [`emit_with`]).
pub fn emit(ir: &Ir, diags: &mut Diagnostics, outputs: &mut Outputs) {
    emit_with(ir, GeminiSchema::default(), diags, outputs)
}

/// Every provider file into `outputs`, Gemini's schemas as `gemini` says.
pub fn emit_with(ir: &Ir, gemini: GeminiSchema, diags: &mut Diagnostics, outputs: &mut Outputs) {
    let made = std::sync::Mutex::new(Vec::new());
    emit_each_file(ir, gemini, diags, &|path, text| {
        made.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((path, text));
    });
    outputs.extend(
        made.into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
}

/// [`emit_with`], handing each file (path, text) to `done` as soon as it is made, on the thread
/// that made it, in no fixed order: `toolc build` writes a file and frees its text while the
/// others are still being made. The warnings are pushed in provider order.
pub fn emit_each_file(
    ir: &Ir,
    gemini: GeminiSchema,
    diags: &mut Diagnostics,
    done: &(dyn Fn(String, String) + Sync),
) {
    emit_each_provider(ir, gemini, diags, &|provider, text| {
        done(path(provider), text)
    })
}

/// Where `toolc build` writes `provider`'s file: `providers/<name>.json`.
pub fn path(provider: Provider) -> String {
    format!("providers/{}.json", provider.name())
}

/// Every provider file's text, in [`Provider::ALL`] order: what the generated Rust module's
/// `declarations()` gives. The warnings are pushed as [`emit_each_file`] pushes them.
pub fn files(ir: &Ir, gemini: GeminiSchema, diags: &mut Diagnostics) -> Vec<(Provider, String)> {
    let made = std::sync::Mutex::new(Vec::new());
    emit_each_provider(ir, gemini, diags, &|provider, text| {
        made.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((provider, text));
    });
    let mut files = made
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    files.sort_by_key(|(provider, _)| *provider);
    files
}

/// [`emit_each_file`], with each file's provider instead of its path.
pub(crate) fn emit_each_provider(
    ir: &Ir,
    gemini: GeminiSchema,
    diags: &mut Diagnostics,
    done: &(dyn Fn(Provider, String) + Sync),
) {
    let threads = crate::parallel::cores();
    let shared = shared_renders(ir, threads);
    let made = crate::parallel::each_index(
        Provider::ALL.len(),
        threads,
        || (),
        |_, i, _| {
            let provider = Provider::ALL[i];
            let mut provider_diags = Diagnostics::default();
            let text = file(ir, provider, &shared, gemini, &mut provider_diags);
            done(provider, text);
            provider_diags
        },
    );
    for (_, provider_diags) in made {
        diags.extend(provider_diags);
    }
    warn_strict(
        ir,
        &shared,
        &[Provider::OpenaiChat, Provider::OpenaiResponses],
        diags,
    );
}

/// The warnings [`emit`] reports, without writing any file: what `toolc check` shows. Each
/// provider's lowering runs (its warnings come from it), but nothing is rendered as text.
/// Tools are taken in chunks on all cores; the warnings are merged in the order [`emit`] pushes
/// them (provider by provider, then strict mode).
pub fn warnings(ir: &Ir, diags: &mut Diagnostics) {
    warnings_with(ir, GeminiSchema::default(), diags)
}

/// [`warnings`] with Gemini's schemas as `gemini` says.
pub fn warnings_with(ir: &Ir, gemini: GeminiSchema, diags: &mut Diagnostics) {
    let threads = crate::parallel::cores();
    // Several chunks per thread, taken as threads come free: the Rust plan's thread runs beside
    // these, and one chunk per thread left a core idle while the other finished.
    let chunks: Vec<&[IrTool]> = ir
        .tools
        .chunks(ir.tools.len().div_ceil(threads.max(1) * 8).max(64))
        .collect();
    let strict_providers = [Provider::OpenaiChat, Provider::OpenaiResponses];
    let found = crate::parallel::each_index(
        chunks.len(),
        threads,
        || (),
        |_, i, _| {
            let mut per_provider: Vec<Diagnostics> = Provider::ALL
                .iter()
                .map(|_| Diagnostics::default())
                .collect();
            let mut strict_diags = Diagnostics::default();
            for tool in chunks[i] {
                for (provider, diags) in Provider::ALL.iter().zip(&mut per_provider) {
                    tool_warnings(tool, *provider, gemini, diags);
                }
                let issues = strict::strict_issues(&tool.def.parameters);
                if !issues.is_empty() {
                    if let Some(d) = strict_warning(tool, &issues, &strict_providers) {
                        strict_diags.push(d);
                    }
                }
            }
            (per_provider, strict_diags)
        },
    );
    let mut strict_all = Diagnostics::default();
    let mut per_provider: Vec<Diagnostics> = Provider::ALL
        .iter()
        .map(|_| Diagnostics::default())
        .collect();
    for (_, (chunk_providers, chunk_strict)) in found {
        for (all, chunk) in per_provider.iter_mut().zip(chunk_providers) {
            all.extend(chunk);
        }
        strict_all.extend(chunk_strict);
    }
    for provider_diags in per_provider {
        diags.extend(provider_diags);
    }
    diags.extend(strict_all);
}

/// The warnings one tool's declaration in `provider`'s file has (see [`file`]).
fn tool_warnings(tool: &IrTool, provider: Provider, gemini: GeminiSchema, diags: &mut Diagnostics) {
    if !declares(tool, provider, diags) {
        return;
    }
    match provider {
        Provider::OpenaiRealtime | Provider::OpenaiChat | Provider::OpenaiResponses => {}
        Provider::Anthropic => anthropic::warnings(tool, diags),
        Provider::Gemini if gemini == GeminiSchema::JsonSchema => {}
        Provider::Gemini => gemini::warnings(tool, diags),
        Provider::Mcp => mcp::warnings(tool, diags),
    }
}

/// One provider's file, as `toolc build` writes it, with that provider's warnings pushed to
/// `diags`.
pub fn file_text(ir: &Ir, provider: Provider, diags: &mut Diagnostics) -> String {
    file_text_with(ir, provider, GeminiSchema::default(), diags)
}

/// [`file_text`] with Gemini's schemas as `gemini` says.
pub fn file_text_with(
    ir: &Ir,
    provider: Provider,
    gemini: GeminiSchema,
    diags: &mut Diagnostics,
) -> String {
    let shared = shared_renders(ir, 1);
    let text = file(ir, provider, &shared, gemini, diags);
    if provider.has_strict_mode() {
        warn_strict(ir, &shared, &[provider], diags);
    }
    text
}

/// One provider's declarations (the file's JSON), with that provider's warnings pushed to `diags`.
pub fn declarations(ir: &Ir, provider: Provider, diags: &mut Diagnostics) -> Value {
    serde_json::from_str(&file_text(ir, provider, diags)).expect("provider files are JSON")
}

/// What several provider files carry for one tool, rendered once ([`text::render`]).
struct Shared {
    /// `parameters` as written, with `type: object` at the root.
    as_written: String,
    /// The strict schema, or why there is none.
    strict: Result<String, Vec<StrictIssue>>,
    /// The description with the policy notes no provider has a field for, when there are any.
    noted_description: Option<String>,
    /// `returns` as written, for the providers that declare a result schema (Responses'
    /// `output_schema`).
    returns: Option<String>,
}

impl Shared {
    /// What the model reads as the tool's description ([`ToolDefinition::model_description`]).
    fn description<'a>(&'a self, def: &'a crate::definition::ToolDefinition) -> &'a str {
        self.noted_description
            .as_deref()
            .unwrap_or(&def.description)
    }
}

/// [`Shared`] for every tool, in tool order, rendered on up to `threads` threads.
fn shared_renders(ir: &Ir, threads: usize) -> Vec<Shared> {
    let render = |tool: &IrTool| Shared {
        as_written: text::render(&object_root(&tool.def.parameters)),
        strict: strict::to_strict(&tool.def.parameters).map(|schema| text::render(&schema)),
        noted_description: match tool.def.model_description() {
            std::borrow::Cow::Owned(text) => Some(text),
            std::borrow::Cow::Borrowed(_) => None,
        },
        returns: tool.def.returns.as_ref().map(text::render),
    };
    let chunks: Vec<&[IrTool]> = ir
        .tools
        .chunks(ir.tools.len().div_ceil(threads.max(1)).max(64))
        .collect();
    let rendered = crate::parallel::each_index(
        chunks.len(),
        threads,
        || (),
        |_, i, _| chunks[i].iter().map(render).collect::<Vec<_>>(),
    );
    rendered.into_iter().flat_map(|(_, part)| part).collect()
}

/// One provider's whole file.
fn file(
    ir: &Ir,
    provider: Provider,
    shared: &[Shared],
    gemini: GeminiSchema,
    diags: &mut Diagnostics,
) -> String {
    // Each declaration repeats its schemas, indented, beside its name and description: at
    // 1,000 synthetic tools the files measured 0.6-1.1 times this estimate. Room for twice it
    // is reserved, so the text is never copied to a larger buffer; what is not written to is
    // never touched, so it costs no memory.
    let estimate: usize = shared
        .iter()
        .map(|s| s.as_written.len() + s.returns.as_ref().map_or(0, String::len) + 256)
        .sum();
    let mut out = Vec::with_capacity(estimate * 2);
    let list_depth = match provider {
        Provider::Gemini => {
            out.extend_from_slice(b"{\n  \"functionDeclarations\": ");
            1
        }
        Provider::Mcp => {
            out.extend_from_slice(b"{\n  \"resultType\": \"complete\",\n  \"tools\": ");
            1
        }
        _ => 0,
    };
    let mut list = text::ArrayWriter::open(&mut out, list_depth);
    // Responses: a toolset's tools go in one namespace, written where its first tool is.
    let mut namespaced: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for (tool, shared_one) in ir.tools.iter().zip(shared) {
        if !declares(tool, provider, diags) {
            continue;
        }
        if let (Provider::OpenaiResponses, Some(toolset)) = (provider, &tool.toolset) {
            if namespaced.insert(&toolset.name) {
                let members = ir.tools.iter().zip(shared).filter(|(t, _)| {
                    t.toolset.as_ref().is_some_and(|s| s.name == toolset.name)
                        && provider.accepts_name(&t.def.name)
                });
                let depth = list.next(&mut out);
                text::write(&mut out, &openai::namespace(toolset, members), depth);
            }
            continue;
        }
        let shared = shared_one;
        let depth = list.next(&mut out);
        match provider {
            Provider::OpenaiRealtime => {
                text::write(&mut out, &openai::realtime(tool, shared), depth)
            }
            Provider::OpenaiChat => text::write(&mut out, &openai::chat(tool, shared), depth),
            Provider::OpenaiResponses => {
                text::write(&mut out, &openai::responses(tool, shared), depth)
            }
            Provider::Anthropic => anthropic::write(&mut out, depth, tool, shared, diags),
            Provider::Gemini if gemini == GeminiSchema::JsonSchema => {
                gemini::write_json_schema(&mut out, depth, tool)
            }
            Provider::Gemini => gemini::write(&mut out, depth, tool, diags),
            Provider::Mcp => mcp::write(&mut out, depth, tool, shared, diags),
        }
    }
    let deferred = ir
        .tools
        .iter()
        .any(|t| t.defer_loading && provider.accepts_name(&t.def.name));
    if provider == Provider::OpenaiResponses && deferred {
        let depth = list.next(&mut out);
        text::write(&mut out, &openai::tool_search(), depth);
    }
    list.close(&mut out);
    match provider {
        Provider::Gemini => out.extend_from_slice(b"\n}"),
        Provider::Mcp => {
            // The file is a snapshot: without the manifest's `mcp.list_ttl` a client should
            // list again rather than trust it.
            let ttl_ms = ir.mcp_list_ttl().map_or(0, |(ttl, _)| ttl.as_millis());
            out.extend_from_slice(b",\n  \"cacheScope\": \"public\",\n  \"ttlMs\": ");
            out.extend_from_slice(ttl_ms.to_string().as_bytes());
            out.extend_from_slice(b"\n}");
        }
        _ => {}
    }
    text::finish(out)
}

/// Whether `provider`'s file declares `tool`; a name the provider refuses is warned of here.
fn declares(tool: &IrTool, provider: Provider, diags: &mut Diagnostics) -> bool {
    // An MCP host runs tools itself, and a client tool runs only in the browser: MCP lists
    // the server tools (as `toolc_runtime::mcp::McpServer` does).
    if provider == Provider::Mcp && tool.def.location == crate::definition::Location::Client {
        return false;
    }
    if !provider.accepts_name(&tool.def.name) {
        diags.push(name_warning(tool, provider));
        return false;
    }
    true
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

fn warn_strict(ir: &Ir, shared: &[Shared], providers: &[Provider], diags: &mut Diagnostics) {
    for (tool, shared) in ir.tools.iter().zip(shared) {
        if let Err(issues) = &shared.strict {
            if let Some(d) = strict_warning(tool, issues, providers) {
                diags.push(d);
            }
        }
    }
}

/// The warning that `tool` cannot use strict mode in `providers` (those that accept its name).
fn strict_warning(
    tool: &IrTool,
    issues: &[StrictIssue],
    providers: &[Provider],
) -> Option<Diagnostic> {
    let names: Vec<&str> = providers.iter().map(|p| p.name()).collect();
    if !providers.iter().any(|p| p.accepts_name(&tool.def.name)) {
        return None;
    }
    let first = issues.first()?;
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
    Some(d)
}

/// The most precise span for a keyword of the parameters schema: the keyword itself, else the
/// schema that holds it, else the `parameters` node. Tools without a manifest have none.
fn parameters_span(tool: &IrTool, pointer: &str, keyword: Option<&str>) -> Option<Span> {
    let keyword_span = keyword.and_then(|k| {
        let node = tool.origin.parameters.as_ref()?;
        let (key, value) = node.pointer(&format!("{pointer}/{}", strict::escape_pointer(k)))?;
        Some(key.unwrap_or(value))
    });
    keyword_span
        .or_else(|| tool.parameters_span(pointer))
        .or_else(|| tool.parameters_span(""))
}

/// [`parameters_span`] for a keyword of the `returns` schema.
fn returns_keyword_span(tool: &IrTool, pointer: &str, keyword: &str) -> Option<Span> {
    let node = tool.origin.returns.as_ref();
    let keyword_span = node.and_then(|node| {
        let (key, value) =
            node.pointer(&format!("{pointer}/{}", strict::escape_pointer(keyword)))?;
        Some(key.unwrap_or(value))
    });
    keyword_span.or_else(|| returns_span(tool, pointer))
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

use toolc_core::schema_util::object_root;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emit::to_json_text;
    use serde_json::json;

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

    /// The files assembled from rendered schemas are laid out exactly as serde_json lays out
    /// their values (their content is pinned by the snapshots in `tests/provider_snapshots.rs`),
    /// whichever files a schema is shared by, for the reference manifests, synthetic tools, an
    /// empty manifest, names a provider refuses and schemas each provider lowers; and
    /// [`warnings`] reports exactly what [`emit`] does.
    #[test]
    fn text_files_are_the_serde_files() {
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
        synthetic.tools[5].def.parameters = json!({
            "anyOf": [{"properties": {"a": true, "b": false}}, {"properties": {"c": {}}}],
            "description": "line\nbreak"
        });
        synthetic.tools[6].def.parameters = json!({});
        irs.push(synthetic);
        for ir in &irs {
            let (mut together, mut one_by_one) = (Outputs::new(), Diagnostics::default());
            let mut diags = Diagnostics::default();
            emit(ir, &mut diags, &mut together);
            // `toolc check`'s path: the same warnings, in the same order, without the files.
            let mut checked = Diagnostics::default();
            warnings(ir, &mut checked);
            let shown = |d: &Diagnostics| d.iter().map(|d| format!("{d:?}")).collect::<Vec<_>>();
            assert_eq!(shown(&checked), shown(&diags));
            for provider in Provider::ALL {
                let text = &together[&format!("providers/{}.json", provider.name())];
                let value: Value = serde_json::from_str(text).expect("JSON");
                assert_eq!(&to_json_text(&value), text, "{provider:?}");
                assert_eq!(
                    &file_text(ir, provider, &mut one_by_one),
                    text,
                    "{provider:?}"
                );
                assert_eq!(
                    declarations(ir, provider, &mut Diagnostics::default()),
                    value
                );
            }
            assert_eq!(
                diags.iter().count(),
                one_by_one.iter().count() - strict_warnings(&diags),
                "the strict warnings are given once by `emit`, once per provider by `file_text`"
            );
        }
    }

    fn strict_warnings(diags: &Diagnostics) -> usize {
        diags
            .iter()
            .filter(|d| d.code == codes::STRICT_MODE_UNAVAILABLE)
            .count()
    }

    #[test]
    fn parse_round_trips() {
        for p in Provider::ALL {
            assert_eq!(Provider::parse(p.name()), Some(p));
        }
        assert_eq!(Provider::parse("openai"), None);
    }
}
