//! Manifest format version 1: from the spanned YAML tree to validated tools.
//!
//! Every field is checked here and every problem is pushed to the diagnostics context; a tool with
//! errors is still returned when its name is known, so that cross-item checks (duplicate names)
//! see it too.

use std::time::Duration;

use crate::definition::{
    Annotations, Approval, CallPolicy, Location, Mode, Scheduling, ToolDefinition,
};
use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::ir::{IrTool, Origin};
use crate::schema_check;
use crate::source::{FileId, SourceMap, Span};
use crate::suggest::{closest, did_you_mean};
use crate::yaml::{self, Limits, Node, SpanTree, Value};

mod annotations;
mod duplicates;
mod limits;
mod mcp_settings;
mod parts;
mod scopes;
mod targets;
mod toolsets;

use annotations::parse_annotations;
pub use annotations::ANNOTATION_FIELDS;
pub use limits::RETRY_FIELDS;
pub use mcp_settings::{MAX_LIST_TTL, MCP_FIELDS};
use parts::{load_file_in_parts, PARALLEL_PARSE_BYTES, PARALLEL_THRESHOLD};
pub use scopes::SCOPE_PATTERN;
pub use targets::{RealtimeTargets, REALTIME_TARGETS};
use toolsets::FileSettings;
pub use toolsets::TOOLSET_NAME_PATTERN;

/// The manifest format version this toolc reads (`version: 1`).
pub const FORMAT_VERSION: u64 = 1;

/// The fields a manifest's root may have, besides `x-` extension fields.
pub const ROOT_FIELDS: &[&str] = &["version", "realtime", "toolsets", "mcp", "tools"];
/// The fields a tool may have, besides `x-` extension fields.
pub const TOOL_FIELDS: &[&str] = &[
    "name",
    "description",
    "location",
    "parameters",
    "returns",
    "timeout",
    "wait_for_response",
    "filler",
    "title",
    "annotations",
    "approval",
    "mode",
    "scheduling",
    "cancel_on_interruption",
    "stream_arguments",
    "on_duplicate",
    "duplicate_window",
    "toolset",
    "defer_loading",
    "rate_limit",
    "retry",
    "scopes",
];
const CLIENT_ONLY_FIELDS: &[&str] = &["wait_for_response", "stream_arguments"];
const SERVER_ONLY_FIELDS: &[&str] = &["mode", "scheduling"];

/// Longest timeout a manifest may give; anything longer is almost certainly a unit mistake.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(3600);

/// Loads one manifest file. Returns its tools, including tools that had errors but a usable name.
///
/// One path with two ways to parse: a large file of the usual shape is parsed in parts on all
/// cores (`parts.rs`), anything else whole. Either way the root goes through `check_root` and
/// the tools through `load_tools`, so both give the same tools and diagnostics.
pub fn load_file(
    sources: &SourceMap,
    file: FileId,
    limits: Limits,
    diags: &mut Diagnostics,
) -> Vec<IrTool> {
    if let Some(tools) = load_file_in_parts(sources, file, limits, PARALLEL_PARSE_BYTES, diags) {
        return tools;
    }
    load_file_whole(sources, file, limits, diags)
}

fn empty_manifest(file_start: Span) -> Diagnostic {
    Diagnostic::error(
        crate::codes::MISSING_FIELD,
        "the manifest is empty: it has no `version` and no `tools`",
    )
    .at(file_start, "expected `version: 1` and a `tools` list")
    .help("start the file with `version: 1` and `tools:`")
}

/// The checks of a manifest's root mapping, whichever way it was parsed: its fields, `version`,
/// the file-wide settings (`realtime`, `toolsets`, `mcp`) and that `tools` is there and a list
/// (or still empty). Returns the settings the tools are checked with; `None` when the root is
/// not a mapping.
fn check_root(root: &Node, file: FileId, diags: &mut Diagnostics) -> Option<FileSettings> {
    let Some(entries) = root.as_map() else {
        if root.value == Value::Null {
            diags.push(empty_manifest(Span::new(file, 0, 0)));
        } else {
            diags.push(
                Diagnostic::error(
                    crate::codes::INVALID_FIELD,
                    format!("the manifest must be a mapping, found {}", root.kind()),
                )
                .at(root.span, "expected `version` and `tools` here")
                .help("start the file with `version: 1` and `tools:`"),
            );
        }
        return None;
    };
    check_fields(entries, ROOT_FIELDS, "manifest", diags);

    match root.get("version") {
        None => diags.push(
            Diagnostic::error(crate::codes::MISSING_FIELD, "the manifest has no `version`")
                .at(root.span, "expected `version: 1` in this mapping")
                .help("add `version: 1` at the top of the file"),
        ),
        Some((_, v)) => match &v.value {
            Value::Number(n) if n.as_u64() == Some(FORMAT_VERSION) => {}
            _ => diags.push(
                Diagnostic::error(
                    crate::codes::UNSUPPORTED_VERSION,
                    format!("unsupported manifest version {}", v.to_json()),
                )
                .at(v.span, "this version of toolc reads format version 1")
                .help("write `version: 1`"),
            ),
        },
    }

    let settings = FileSettings::parse(root, diags);

    match root.get("tools") {
        None => diags.push(
            Diagnostic::error(
                crate::codes::MISSING_FIELD,
                "the manifest has no `tools` list",
            )
            .at(root.span, "expected a `tools` list in this mapping")
            .help("add `tools:` followed by one `- name: ...` entry per tool"),
        ),
        Some((_, tools)) if tools.as_seq().is_none() && tools.value != Value::Null => diags.push(
            Diagnostic::error(
                crate::codes::INVALID_FIELD,
                format!("`tools` must be a list, found {}", tools.kind()),
            )
            .at(tools.span, "expected a list of tools")
            .help("write each tool as a list entry starting with `- name: ...`"),
        ),
        Some(_) => {}
    }
    Some(settings)
}

/// [`load_file`] by parsing the file as one document.
fn load_file_whole(
    sources: &SourceMap,
    file: FileId,
    limits: Limits,
    diags: &mut Diagnostics,
) -> Vec<IrTool> {
    let source = sources.get(file);
    let mut errors = Vec::new();
    let root = yaml::parse(file, &source.text, limits, &mut errors);
    let parsed_cleanly = errors.is_empty();
    for e in errors {
        diags.push(e);
    }
    let Some(root) = root else {
        // No document at all (an empty or comment-only file) reads as "0 tools: ok" otherwise.
        if parsed_cleanly {
            diags.push(empty_manifest(Span::new(file, 0, 0)));
        }
        return Vec::new();
    };
    let Some(settings) = check_root(&root, file, diags) else {
        return Vec::new();
    };
    // The tool nodes are moved out of the tree, so that their schema nodes can be kept in the IR
    // without copying them.
    let Value::Map(entries) = root.value else {
        return Vec::new(); // not reached: `check_root` accepted a mapping
    };
    let items: Vec<Node> = entries
        .into_iter()
        .find_map(|(key, value)| match value.value {
            Value::Seq(items) if key.as_str() == Some("tools") => Some(items),
            _ => None,
        })
        .unwrap_or_default();
    // Checking a tool (its schemas above all) is independent of every other tool: large manifests
    // are checked on all cores, and the results are put back in declaration order.
    let threads = crate::parallel::cores().min(8);
    if items.len() < PARALLEL_THRESHOLD || threads == 1 {
        return load_tools(sources, &source.name, items, &settings, diags);
    }
    let chunk = items.len().div_ceil(threads);
    let mut parts: Vec<std::sync::Mutex<Vec<Node>>> = Vec::with_capacity(threads);
    let mut items = items.into_iter();
    loop {
        let part: Vec<Node> = items.by_ref().take(chunk).collect();
        if part.is_empty() {
            break;
        }
        parts.push(std::sync::Mutex::new(part));
    }
    let results = crate::parallel::each_index(
        parts.len(),
        threads,
        || (),
        |_, i, _| {
            // Each part is taken once; the lock only moves its nodes out to the thread.
            let part = std::mem::take(&mut *parts[i].lock().unwrap_or_else(|p| p.into_inner()));
            let mut part_diags = Diagnostics::default();
            let tools = load_tools(sources, &source.name, part, &settings, &mut part_diags);
            (tools, part_diags)
        },
    );
    let mut tools = Vec::new();
    for (_, (part_tools, part_diags)) in results {
        tools.extend(part_tools);
        diags.extend(part_diags);
    }
    tools
}

/// The tools of a run of `tools:` items, in order: each item checked with its file's settings.
fn load_tools(
    sources: &SourceMap,
    file_name: &str,
    items: Vec<Node>,
    settings: &FileSettings,
    diags: &mut Diagnostics,
) -> Vec<IrTool> {
    items
        .into_iter()
        .filter_map(|item| load_tool(sources, file_name, item, settings, diags))
        .collect()
}

/// Reports keys that are not strings, and unknown keys with a suggestion.
fn check_fields(entries: &[(Node, Node)], known: &[&str], what: &str, diags: &mut Diagnostics) {
    for (key, _) in entries {
        match key.as_str() {
            Some(k) if known.contains(&k) => {}
            Some(k) if k.starts_with("x-") => {} // extension fields are the user's own
            Some(k) => diags.push(
                Diagnostic::error(
                    crate::codes::UNKNOWN_FIELD,
                    format!("unknown field `{k}` in {what}"),
                )
                .at(key.span, "not a field of format version 1")
                .help(format!(
                    "{}the fields are {}; fields starting with `x-` are kept for your own use",
                    did_you_mean(k, known.iter().copied()),
                    known
                        .iter()
                        .map(|f| format!("`{f}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            ),
            None => diags.push(
                Diagnostic::error(
                    crate::codes::INVALID_FIELD,
                    format!("keys in {what} must be strings, found {}", key.kind()),
                )
                .at(key.span, "not a string key")
                .help("quote the key"),
            ),
        }
    }
}

fn load_tool(
    sources: &SourceMap,
    file_name: &str,
    item: Node,
    settings: &FileSettings,
    diags: &mut Diagnostics,
) -> Option<IrTool> {
    let Some(entries) = item.as_map() else {
        diags.push(
            Diagnostic::error(
                crate::codes::INVALID_FIELD,
                format!("a tool must be a mapping, found {}", item.kind()),
            )
            .at(item.span, "expected `name`, `description`, `location`, ...")
            .help("write each tool as `- name: ...` followed by its other fields, indented"),
        );
        return None;
    };
    check_fields(entries, TOOL_FIELDS, "a tool", diags);
    let field = |name: &str| item.get(name);
    // A misspelt required field is reported once, as the unknown field with its suggestion.
    let misspelt = |name: &str| {
        entries.iter().any(|(k, _)| {
            k.as_str()
                .is_some_and(|k| !TOOL_FIELDS.contains(&k) && closest(k, [name]).is_some())
        })
    };

    // name
    let (name, name_span) = match field("name") {
        None => {
            if misspelt("name") {
                return None;
            }
            diags.push(
                Diagnostic::error(crate::codes::MISSING_FIELD, "a tool has no `name`")
                    .at(item.span, "this tool")
                    .help("add `name: your_tool_name`"),
            );
            return None;
        }
        Some((_, v)) => match v.as_str() {
            Some(s) => (s.to_owned(), v.span),
            None => {
                diags.push(type_error("name", "a string", v));
                return None;
            }
        },
    };
    check_name(&name, name_span, diags);
    let what = format!("tool `{name}`");

    // description
    let description = match field("description") {
        None if misspelt("description") => String::new(),
        None => {
            diags.push(
                Diagnostic::error(crate::codes::MISSING_FIELD, format!("{what} has no `description`"))
                    .at(name_span, "this tool")
                    .help("add `description:` saying what the tool does and when the model should call it"),
            );
            String::new()
        }
        Some((_, v)) => match v.as_str() {
            Some(s) if s.trim().is_empty() => {
                diags.push(
                    Diagnostic::error(crate::codes::EMPTY_DESCRIPTION, format!("{what} has an empty description"))
                        .at(v.span, "empty")
                        .help("the model chooses tools by their description: say what the tool does and when to call it"),
                );
                String::new()
            }
            Some(s) => s.trim_end().to_owned(),
            None => {
                diags.push(type_error("description", "a string", v));
                String::new()
            }
        },
    };

    // location
    let mut location_span = None;
    let location = match field("location") {
        None if misspelt("location") => Location::Server,
        None => {
            diags.push(
                Diagnostic::error(crate::codes::MISSING_FIELD, format!("{what} has no `location`"))
                    .at(name_span, "this tool")
                    .help("add `location: server` (runs in-process) or `location: client` (runs in the browser)"),
            );
            Location::Server
        }
        Some((_, v)) => {
            location_span = Some(v.span);
            match v.as_str() {
                Some("server") => Location::Server,
                Some("client") => Location::Client,
                other => {
                    let shown = other.map_or_else(|| v.kind().to_owned(), |s| format!("`{s}`"));
                    diags.push(
                        Diagnostic::error(crate::codes::UNKNOWN_LOCATION, format!("unknown location {shown} for {what}"))
                            .at(v.span, "expected `server` or `client`")
                            .help(format!(
                                "{}`server` tools run in-process with one executor; `client` tools run in the browser",
                                did_you_mean(other.unwrap_or(""), ["server", "client"])
                            )),
                    );
                    Location::Server
                }
            }
        }
    };

    if location == Location::Server {
        for f in CLIENT_ONLY_FIELDS {
            if let Some((k, _)) = field(f) {
                diags.push(
                    Diagnostic::error(
                        crate::codes::CLIENT_ONLY_FIELD,
                        format!("`{f}` is only for client tools, and {what} is a server tool"),
                    )
                    .at(k.span, "only meaningful for `location: client`")
                    .help(format!(
                        "remove `{f}`, or make the tool `location: client` if the browser runs it"
                    )),
                );
            }
        }
    }

    if location == Location::Client {
        for f in SERVER_ONLY_FIELDS {
            if let Some((k, _)) = field(f) {
                diags.push(
                    Diagnostic::error(
                        crate::codes::SERVER_ONLY_FIELD,
                        format!("`{f}` is only for server tools, and {what} is a client tool"),
                    )
                    .at(k.span, "only meaningful for `location: server`")
                    .help(format!(
                        "remove `{f}`; a slow browser handler is bounded by `timeout`, and a tool that should not hold up the model can be `wait_for_response: false`"
                    )),
                );
            }
        }
    }

    let timeout = field("timeout").and_then(|(_, v)| parse_timeout_field(v, &what, diags));

    let wait_for_response = bool_field(&field, "wait_for_response", diags).unwrap_or(true);
    let policy = parse_policy(&field, location, wait_for_response, &what, diags);

    let mut filler = Vec::new();
    if let Some((_, v)) = field("filler") {
        match v.as_seq() {
            Some(items) => {
                for item in items {
                    match item.as_str() {
                        Some(s) if !s.trim().is_empty() => filler.push(s.to_owned()),
                        _ => diags.push(
                            Diagnostic::error(
                                crate::codes::INVALID_FIELD,
                                format!(
                                    "filler phrases must be non-empty strings, found {}",
                                    item.kind()
                                ),
                            )
                            .at(item.span, "not a phrase")
                            .help(
                                "write each phrase as a string, e.g. `filler: [\"One moment.\"]`",
                            ),
                        ),
                    }
                }
            }
            None => diags.push(type_error("filler", "a list of phrases", v)),
        }
    }

    targets::check_tool(
        &field,
        &policy,
        !filler.is_empty(),
        &what,
        settings.targets,
        diags,
    );

    let title = match field("title") {
        None => None,
        Some((_, v)) => match v.as_str() {
            Some(t) if !t.trim().is_empty() => Some(t.to_owned()),
            _ => {
                diags.push(type_error("title", "a non-empty string", v));
                None
            }
        },
    };
    let annotations = field("annotations")
        .map(|(_, v)| parse_annotations(v, &what, diags))
        .unwrap_or_default();
    let scopes = field("scopes")
        .map(|(_, v)| scopes::parse(v, &what, diags))
        .unwrap_or_default();
    let mut policy = policy;
    duplicates::parse(&field, &mut policy, &annotations, &what, diags);
    limits::parse(&field, &mut policy, &annotations, location, &what, diags);
    let (toolset, defer_loading) =
        toolsets::tool_grouping(&field, &settings.toolsets, &what, diags);

    let parameters_node = field("parameters").map(|(_, v)| v);
    let parameters = match parameters_node {
        Some(node) if node.value != Value::Null => {
            schema_check::check_schema(sources, node, &what, "parameters", true, diags)
        }
        _ => ToolDefinition::empty_parameters(),
    };
    let returns = field("returns")
        .map(|(_, v)| v)
        .filter(|n| n.value != Value::Null)
        .map(|node| match node.as_str() {
            Some(crate::content::KEYWORD) => crate::content::schema().clone(),
            _ => schema_check::check_schema(sources, node, &what, "returns", false, diags),
        });
    let (parameters_node, returns_node) = take_schema_nodes(item);
    // `returns: content` has no schema node to point into.
    let returns_node = returns_node.filter(|n| n.as_str().is_none());

    let line = sources.get(name_span.file).line_col(name_span.start).0;
    Some(IrTool {
        def: ToolDefinition {
            name,
            description,
            location,
            parameters,
            returns,
            timeout,
            wait_for_response,
            filler,
            title,
            annotations,
            scopes,
            policy,
        },
        toolset,
        defer_loading,
        mcp_list_ttl: settings.mcp_list_ttl,
        origin: Origin {
            file: Some(file_name.to_owned()),
            line,
            name: Some(name_span),
            location: location_span,
            parameters: parameters_node.as_ref().map(SpanTree::new),
            returns: returns_node.as_ref().map(SpanTree::new),
        },
    })
}

/// Moves the `parameters` node and the non-null `returns` node out of a tool's mapping.
fn take_schema_nodes(item: Node) -> (Option<Node>, Option<Node>) {
    let (mut parameters, mut returns) = (None, None);
    if let Value::Map(entries) = item.value {
        for (key, value) in entries {
            match key.as_str() {
                Some("parameters") if parameters.is_none() => parameters = Some(value),
                Some("returns") if returns.is_none() && value.value != Value::Null => {
                    returns = Some(value)
                }
                _ => {}
            }
        }
    }
    (parameters, returns)
}

fn type_error(field: &str, expected: &str, found: &Node) -> Diagnostic {
    Diagnostic::error(
        crate::codes::INVALID_FIELD,
        format!("`{field}` must be {expected}, found {}", found.kind()),
    )
    .at(found.span, format!("expected {expected}"))
    .help(format!("write `{field}:` as {expected}"))
}

/// The regular expression every provider accepts for tool names.
pub fn is_valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn check_name(name: &str, span: Span, diags: &mut Diagnostics) {
    if is_valid_name(name) {
        return;
    }
    let fixed: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let fixed = if fixed.starts_with(|c: char| c.is_ascii_digit() || c == '-') {
        format!("_{fixed}")
    } else {
        fixed
    };
    let fixed: String = fixed.chars().take(64).collect();
    let why = if name.is_empty() {
        "it is empty".to_owned()
    } else if name.len() > 64 {
        format!("it is {} characters long; the limit is 64", name.len())
    } else {
        "names may only contain ASCII letters, digits, `_` and `-`, and must start with a letter or `_`".to_owned()
    };
    diags.push(
        Diagnostic::error(
            crate::codes::INVALID_NAME,
            format!("tool name `{name}` is not valid for every provider: {why}"),
        )
        .at(span, "must match ^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
        .help(if fixed.is_empty() {
            "give the tool a name such as `search_docs`".to_owned()
        } else {
            format!("try `{fixed}`")
        }),
    );
}

/// A boolean field: its value, `None` when it is absent or not a boolean (then reported).
fn bool_field<'n>(
    field: &dyn Fn(&str) -> Option<(&'n Node, &'n Node)>,
    name: &str,
    diags: &mut Diagnostics,
) -> Option<bool> {
    let (_, v) = field(name)?;
    match v.value {
        Value::Bool(b) => Some(b),
        _ => {
            diags.push(type_error(name, "`true` or `false`", v));
            None
        }
    }
}

/// The words `approval` and `mode` take.
pub const APPROVAL_VALUES: &[&str] = &["required", "none"];
/// The words `mode` takes.
pub const MODE_VALUES: &[&str] = &["sync", "async"];

/// `approval`, `mode`, `cancel_on_interruption` and `stream_arguments`, with the checks between
/// them and `wait_for_response` (the location-only fields are checked by the caller).
fn parse_policy<'n>(
    field: &dyn Fn(&str) -> Option<(&'n Node, &'n Node)>,
    location: Location,
    wait_for_response: bool,
    what: &str,
    diags: &mut Diagnostics,
) -> CallPolicy {
    let mut policy = CallPolicy::DEFAULT;
    let word = |name: &str, words: &[&str], diags: &mut Diagnostics| -> Option<String> {
        let (_, v) = field(name)?;
        match v.as_str() {
            Some(s) if words.contains(&s) => Some(s.to_owned()),
            other => {
                let shown = other.map_or_else(|| v.kind().to_owned(), |s| format!("`{s}`"));
                let expected: Vec<String> = words.iter().map(|w| format!("`{w}`")).collect();
                diags.push(
                    Diagnostic::error(
                        crate::codes::INVALID_FIELD,
                        format!(
                            "`{name}` of {what} must be {}, found {shown}",
                            expected.join(" or ")
                        ),
                    )
                    .at(v.span, format!("expected {}", expected.join(" or ")))
                    .help(
                        match closest(other.unwrap_or(""), words.iter().copied()) {
                            Some(near) => format!("did you mean `{name}: {near}`?"),
                            None => {
                                let each: Vec<String> =
                                    words.iter().map(|w| format!("`{name}: {w}`")).collect();
                                format!("write {}", each.join(" or "))
                            }
                        },
                    ),
                );
                None
            }
        }
    };
    if let Some(approval) = word("approval", APPROVAL_VALUES, diags) {
        policy.approval = if approval == "required" {
            Approval::Required
        } else {
            Approval::None
        };
    }
    if location == Location::Server {
        if let Some(mode) = word("mode", MODE_VALUES, diags) {
            policy.mode = if mode == "async" {
                Mode::Async
            } else {
                Mode::Sync
            };
        }
    }
    if location == Location::Server {
        if let Some(word) = word("scheduling", Scheduling::NAMES, diags) {
            if policy.mode == Mode::Async {
                policy.scheduling = word.parse().ok();
            } else if let Some((key, _)) = field("scheduling") {
                diags.push(
                    Diagnostic::error(
                        crate::codes::SCHEDULING_WITHOUT_ASYNC,
                        format!("{what} has a `scheduling` but is not `mode: async`"),
                    )
                    .at(key.span, "only a background call's result is scheduled")
                    .help("add `mode: async` if the model should talk on while the tool runs, or remove `scheduling`"),
                );
            }
        }
    }
    policy.cancel_on_interruption = bool_field(field, "cancel_on_interruption", diags);
    if location == Location::Client {
        policy.stream_arguments = bool_field(field, "stream_arguments", diags).unwrap_or(false);
    }
    if policy.approval == Approval::Required && location == Location::Client && !wait_for_response {
        if let Some((key, _)) = field("approval") {
            diags.push(
                Diagnostic::error(
                    crate::codes::APPROVAL_ON_FIRE_AND_FORGET,
                    format!("{what} needs approval but is fire-and-forget (`wait_for_response: false`)"),
                )
                .at(key.span, "approval makes the model wait for the user's answer")
                .help("remove `approval: required`, or remove `wait_for_response: false` so the model waits for the approved call's result"),
            );
        }
    }
    policy
}

fn parse_timeout_field(v: &Node, what: &str, diags: &mut Diagnostics) -> Option<Duration> {
    let text = match &v.value {
        Value::String(s) => s.clone(),
        Value::Number(n) => {
            diags.push(
                Diagnostic::error(
                    crate::codes::INVALID_TIMEOUT,
                    format!("the timeout of {what} has no unit"),
                )
                .at(v.span, "a bare number")
                .help(format!("write the unit: `{n}s` or `{n}ms`")),
            );
            return None;
        }
        _ => {
            diags.push(type_error("timeout", TIMEOUT_GRAMMAR, v));
            return None;
        }
    };
    match parse_timeout(&text) {
        Err(TimeoutError::Invalid(why)) => {
            diags.push(
                Diagnostic::error(
                    crate::codes::INVALID_TIMEOUT,
                    format!("invalid timeout `{text}` for {what}: {why}"),
                )
                .at(
                    v.span,
                    "expected a number followed by `ms`, `s`, `m` or `h`",
                )
                .help(format!("write {TIMEOUT_GRAMMAR}")),
            );
            None
        }
        Err(TimeoutError::OutOfRange) => {
            diags.push(
                Diagnostic::error(crate::codes::TIMEOUT_OUT_OF_RANGE, format!("timeout `{text}` of {what} is out of range"))
                    .at(v.span, "must be more than 0 and at most 1h")
                    .help("pick a deadline between `1ms` and `1h`; a tool that needs longer should start a job and return at once"),
            );
            None
        }
        Ok(d) => Some(d),
    }
}

/// The one timeout grammar, for manifests, `#[tool(timeout = "...")]` and `toolc.schema.json`:
/// a number (a fraction is allowed) right before its unit, `ms`, `s`, `m` or `h`, with nothing
/// around them. The value must be whole milliseconds, more than 0 and at most 1h.
pub const TIMEOUT_PATTERN: &str = "^[0-9]+(\\.[0-9]+)?(ms|s|m|h)$";

/// The grammar in words, for diagnostics and the editor schema.
pub const TIMEOUT_GRAMMAR: &str =
    "a number followed by `ms`, `s`, `m` or `h`, such as `250ms`, `1.5s`, `2m` or `1h`";

/// Parses a duration of [`TIMEOUT_PATTERN`]: `250ms`, `5s`, `1.5s`, `2m`, `1h`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    if number.is_empty() {
        return Err(if text.trim_start() != text {
            "it starts with a space".into()
        } else {
            "it does not start with a number".into()
        });
    }
    let well_formed = match number.split_once('.') {
        None => true,
        Some((whole, fraction)) => {
            !whole.is_empty() && !fraction.is_empty() && !fraction.contains('.')
        }
    };
    let value: f64 = match number.parse() {
        Ok(v) if well_formed => v,
        _ => return Err(format!("`{number}` is not a number")),
    };
    let millis = match unit {
        "ms" => value,
        "s" => value * 1e3,
        "m" => value * 60e3,
        "h" => value * 3600e3,
        "" => return Err("it has no unit".into()),
        other if matches!(other.trim(), "ms" | "s" | "m" | "h") => {
            return Err(format!(
                "no space may come between the number and the unit: write `{number}{}`",
                other.trim()
            ))
        }
        other => {
            return Err(format!(
                "unknown unit `{}` (the units are `ms`, `s`, `m` and `h`)",
                other.trim()
            ))
        }
    };
    if !millis.is_finite() || millis > 1e12 {
        return Err("the number is too large".into());
    }
    if millis.fract() != 0.0 {
        return Err("durations are whole milliseconds".into());
    }
    Ok(Duration::from_millis(millis as u64))
}

/// A timeout: a duration of the grammar, more than 0 and at most [`MAX_TIMEOUT`].
pub fn parse_timeout(text: &str) -> Result<Duration, TimeoutError> {
    let d = parse_duration(text).map_err(TimeoutError::Invalid)?;
    if d.is_zero() || d > MAX_TIMEOUT {
        return Err(TimeoutError::OutOfRange);
    }
    Ok(d)
}

/// Why a timeout was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TimeoutError {
    /// Not of the grammar; says why.
    Invalid(String),
    /// 0, or more than 1h.
    OutOfRange,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        for refused in [
            "5",
            "5 parsecs",
            "s",
            "5 s",
            " 5s",
            "5s ",
            ".5s",
            "5.s",
            "1.2.3s",
            "5min",
            "5S",
            "1.5ms",
            "5sec",
        ] {
            assert!(parse_duration(refused).is_err(), "{refused}");
        }
        assert_eq!(parse_timeout("0s"), Err(TimeoutError::OutOfRange));
        assert_eq!(parse_timeout("61m"), Err(TimeoutError::OutOfRange));
        assert_eq!(parse_timeout("60m"), Ok(Duration::from_secs(3600)));
    }

    /// The parser and the editor schema's pattern are one grammar: whatever the pattern
    /// accepts parses (unless it is a fraction of a millisecond or absurdly large), and whatever
    /// parses matches the pattern.
    #[test]
    fn the_parser_and_the_schema_pattern_agree() {
        let pattern =
            jsonschema::validator_for(&serde_json::json!({"pattern": TIMEOUT_PATTERN})).unwrap();
        let schema = crate::manifest_schema::manifest_json_schema();
        let timeout = &schema["$defs"]["Tool"]["properties"]["timeout"];
        assert_eq!(timeout["pattern"], TIMEOUT_PATTERN, "{timeout}");
        let alphabet = ['0', '1', '5', '.', 'm', 's', 'h', 'i', 'n', ' '];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..20_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let len = 1 + (seed % 6) as usize;
            let text: String = (0..len)
                .map(|i| alphabet[((seed >> (i * 5)) % alphabet.len() as u64) as usize])
                .collect();
            let matches = pattern.is_valid(&serde_json::Value::String(text.clone()));
            match parse_duration(&text) {
                Ok(_) => assert!(matches, "`{text}` parses but the pattern refuses it"),
                Err(why) => assert!(
                    !matches || why.contains("whole milliseconds") || why.contains("too large"),
                    "`{text}` matches the pattern but does not parse: {why}"
                ),
            }
        }
    }

    /// Tools, spans and diagnostics from the file parsed in parts are those of the file parsed
    /// whole; where they could differ, the parts are not used.
    #[test]
    fn parsing_in_parts_gives_what_parsing_whole_gives() {
        let synthetic = crate::synthetic::manifest(60);
        let reference = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../manifests");
        let mut texts: Vec<(String, bool)> = vec![
            (synthetic.clone(), true),
            // Tool-level warnings and errors come out the same, in the same order.
            (
                synthetic
                    .replace("minLength: 1,", "minLength: 1, weirdkeyword: 2,")
                    .replace("timeout: 2s", "timeout: 2 parsecs"),
                true,
            ),
            // Items at column 0, comments and blank lines between them, block and quoted
            // multi-line scalars, nested lists whose items look like tool items.
            (
                "# tools\nversion: 1\ntools:\n- name: a\n  description: |\n    Line one.\n    - not an item\n  location: server\n\n# between\n- name: b\n  description: \"two\n    lines\"\n  location: client\n  filler:\n  - One moment.\n  - Nearly.\n- name: c\n  description: >\n    folded\n    text\n  location: server\n  parameters: {type: object, properties: {q: {type: string}}}\n".to_owned(),
                true,
            ),
            // A quoted string whose next line looks like an item, a duplicate key: parsed whole.
            (
                "version: 1\ntools:\n- name: a\n  description: \"one\n- name: b\"\n  location: server\n- name: c\n  description: x\n  location: server\n".to_owned(),
                false,
            ),
            (
                "version: 1\ntools:\n  - name: a\n    description: x\n    description: y\n    location: server\n  - name: b\n    description: z\n    location: server\n".to_owned(),
                false,
            ),
            // Something after the list, or no version: parsed whole.
            (
                "version: 1\ntools:\n  - name: a\n    description: x\n    location: server\nx-extra: 1\n".to_owned(),
                false,
            ),
            (
                "tools:\n  - name: a\n    description: x\n    location: server\n".to_owned(),
                false,
            ),
        ];
        // An alias to an anchor in another part makes that part fail: parsed whole.
        let mut aliased = synthetic.replacen(
            "description: Search the records of collection 0",
            "description: &first Search the records of collection 0",
            1,
        );
        aliased.push_str("  - name: last\n    description: *first\n    location: server\n");
        texts.push((aliased, false));
        for entry in std::fs::read_dir(reference).expect("reference manifests") {
            let path = entry.expect("entry").path();
            texts.push((std::fs::read_to_string(path).expect("readable"), true));
        }
        for (text, in_parts) in texts {
            let mut sources = SourceMap::default();
            let file = sources.add("m.tools.yaml", text.clone());
            let mut whole_diags = Diagnostics::default();
            let whole = load_file_whole(&sources, file, Limits::default(), &mut whole_diags);
            let mut part_diags = Diagnostics::default();
            let parts = load_file_in_parts(&sources, file, Limits::default(), 0, &mut part_diags);
            assert_eq!(parts.is_some(), in_parts, "{text}");
            let Some(parts) = parts else {
                assert!(part_diags.is_empty());
                continue;
            };
            assert_eq!(parts.len(), whole.len());
            for (a, b) in parts.iter().zip(&whole) {
                assert_eq!(a.def, b.def);
                assert_eq!(a.origin.line, b.origin.line);
                assert_eq!(a.origin.name, b.origin.name);
                assert_eq!(a.origin.location, b.origin.location);
                assert_eq!(a.origin.parameters, b.origin.parameters, "{}", a.def.name);
                assert_eq!(a.origin.returns, b.origin.returns, "{}", a.def.name);
            }
            let render =
                |d: &Diagnostics| crate::HumanRenderer { colour: false }.render(&sources, d);
            assert_eq!(render(&part_diags), render(&whole_diags));
        }
    }

    #[test]
    fn provider_names() {
        assert!(is_valid_name("search_docs"));
        assert!(is_valid_name("_x-1"));
        assert!(!is_valid_name("1abc"));
        assert!(!is_valid_name("a.b"));
        assert!(!is_valid_name(&"a".repeat(65)));
        assert!(is_valid_name(&"a".repeat(64)));
    }
}
