//! `toolc diff`: what changed between two versions of the tools, and whom it breaks.
//!
//! Tools have two kinds of consumers, and a change can break either without the other:
//! - **the model** produces the arguments (and prompts, evals and saved conversations assume
//!   their old shape): a schema that accepts less breaks it;
//! - **code** consumes the arguments and produces and reads the results (executors, browser
//!   handlers, whatever reads a result), and names the generated Rust and TypeScript items: a
//!   schema that accepts more, a result that changes, a renamed generated type breaks it.
//!
//! Every [`Change`] says how it affects each of them ([`Impact`]). Schemas are compared by
//! meaning, not text: `$ref`s are followed on both sides (a change inside `$defs` is reported where
//! it is used, and one nobody uses is no change), and the order of properties, `required`, `enum`
//! values, types and alternatives does not matter.

mod git;
mod schema;

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;

use crate::definition::{Location, ToolDefinition};
use crate::diagnostic::{count, Diagnostic, HumanRenderer, JsonLabel, Label};
use crate::emit;
use crate::ir::{Ir, IrTool};
use crate::{SourceMap, Span};

pub use git::{files_at_revision, GitError};

/// How a change affects one kind of consumer. Ordered from least to most serious.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Impact {
    /// This consumer cannot tell.
    Unaffected,
    /// Worth knowing (the model reads descriptions), nothing to do.
    Info,
    /// Old callers keep working.
    Compatible,
    /// Something that worked before fails now.
    Breaking,
}

impl Impact {
    /// The impact's name as the output prints it (`breaking`, `info`).
    pub fn as_str(self) -> &'static str {
        match self {
            Impact::Unaffected => "unaffected",
            Impact::Info => "info",
            Impact::Compatible => "compatible",
            Impact::Breaking => "breaking",
        }
    }
}

/// Who a change is judged for; `--only model` or `--only code` looks at one of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Audience {
    /// The model's arguments (and the prompts and conversations that assume them).
    Model,
    /// Executors, browser handlers, readers of results, and code naming generated items.
    Code,
}

/// One change between the two versions.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    /// Stable identifier, e.g. `toolc::diff::enum-value-removed`; listed in the README.
    pub code: &'static str,
    /// How it affects the model's calls.
    pub for_model: Impact,
    /// How it affects code: executors, browser handlers, readers of results, and code
    /// naming generated items.
    pub for_code: Impact,
    /// The tool it is about (the new name, for a rename); empty for a change to the whole
    /// list (`mcp.list_ttl`).
    pub tool: String,
    /// What changed, in one sentence.
    pub message: String,
    /// Where it was, in the old version (absent for something added).
    pub old: Option<Label>,
    /// Where it is, in the new version (absent for something removed).
    pub new: Option<Label>,
    /// What to do about it, when there is advice.
    pub help: Option<String>,
}

impl Change {
    /// How serious the change is for the audiences looked at (`None`: both).
    pub fn impact(&self, only: Option<Audience>) -> Impact {
        match only {
            Some(Audience::Model) => self.for_model,
            Some(Audience::Code) => self.for_code,
            None => self.for_model.max(self.for_code),
        }
    }

    /// Whether it breaks the model and whether it breaks code, among the audiences looked at.
    pub fn breaks(&self, only: Option<Audience>) -> (bool, bool) {
        (
            only != Some(Audience::Code) && self.for_model == Impact::Breaking,
            only != Some(Audience::Model) && self.for_code == Impact::Breaking,
        )
    }

    /// Whether it breaks one of the audiences looked at (`None`: both).
    pub fn is_breaking(&self, only: Option<Audience>) -> bool {
        self.impact(only) == Impact::Breaking
    }
}

/// The stable codes of every change kind.
pub mod codes {
    /// A tool is gone.
    pub const TOOL_REMOVED: &str = "toolc::diff::tool-removed";
    /// A tool is gone and one with the same schemas, location and waiting appeared.
    pub const TOOL_RENAMED: &str = "toolc::diff::tool-renamed";
    /// A new tool.
    pub const TOOL_ADDED: &str = "toolc::diff::tool-added";
    /// A tool moved between `server` and `client`.
    pub const LOCATION_CHANGED: &str = "toolc::diff::location-changed";
    /// A client tool's `wait_for_response` flipped.
    pub const WAIT_FOR_RESPONSE_CHANGED: &str = "toolc::diff::wait-for-response-changed";
    /// A tool's deadline changed (the client default included).
    pub const TIMEOUT_CHANGED: &str = "toolc::diff::timeout-changed";
    /// A tool's filler phrases changed.
    pub const FILLER_CHANGED: &str = "toolc::diff::filler-changed";
    /// `approval: required` was added or removed.
    pub const APPROVAL_CHANGED: &str = "toolc::diff::approval-changed";
    /// A server tool's `mode` flipped between `sync` and `async`.
    pub const MODE_CHANGED: &str = "toolc::diff::mode-changed";
    /// Whether an interruption cancels a tool's calls changed.
    pub const INTERRUPTION_CHANGED: &str = "toolc::diff::interruption-changed";
    /// Whether the page gets a tool's arguments while the model writes them changed.
    pub const STREAM_ARGUMENTS_CHANGED: &str = "toolc::diff::stream-arguments-changed";
    /// A background tool's `scheduling` changed.
    pub const SCHEDULING_CHANGED: &str = "toolc::diff::scheduling-changed";
    /// What a repeated call does (`on_duplicate`) or how long a repeat counts
    /// (`duplicate_window`) changed.
    pub const DUPLICATE_POLICY_CHANGED: &str = "toolc::diff::duplicate-policy-changed";
    /// A tool's `rate_limit` was added, removed or changed.
    pub const RATE_LIMIT_CHANGED: &str = "toolc::diff::rate-limit-changed";
    /// A tool's `retry` was added, removed or changed.
    pub const RETRY_CHANGED: &str = "toolc::diff::retry-changed";
    /// The OAuth scopes a tool's callers' tokens must carry (`scopes`) changed: one required
    /// now breaks the callers whose tokens lack it, one no longer required breaks nobody.
    pub const SCOPES_CHANGED: &str = "toolc::diff::scopes-changed";
    /// A tool's `toolset` or `defer_loading` changed.
    pub const TOOLSET_CHANGED: &str = "toolc::diff::toolset-changed";
    /// The manifests' `mcp.list_ttl` changed; reported once, for no tool.
    pub const LIST_TTL_CHANGED: &str = "toolc::diff::list-ttl-changed";
    /// A result schema where there was none.
    pub const RETURNS_ADDED: &str = "toolc::diff::returns-added";
    /// No result schema any more.
    pub const RETURNS_REMOVED: &str = "toolc::diff::returns-removed";
    /// A tool's `description`, or a schema's `description` or `title`, changed.
    pub const DESCRIPTION_CHANGED: &str = "toolc::diff::description-changed";
    /// A schema's `examples`, `deprecated`, `readOnly` or `writeOnly` changed.
    pub const ANNOTATION_CHANGED: &str = "toolc::diff::annotation-changed";
    /// A schema's `default` changed.
    pub const DEFAULT_CHANGED: &str = "toolc::diff::default-changed";
    /// An optional property was added.
    pub const PROPERTY_ADDED: &str = "toolc::diff::property-added";
    /// A required property was added.
    pub const REQUIRED_PROPERTY_ADDED: &str = "toolc::diff::required-property-added";
    /// A property is gone.
    pub const PROPERTY_REMOVED: &str = "toolc::diff::property-removed";
    /// An optional property became required.
    pub const PROPERTY_NOW_REQUIRED: &str = "toolc::diff::property-now-required";
    /// A required property became optional.
    pub const PROPERTY_NOW_OPTIONAL: &str = "toolc::diff::property-now-optional";
    /// `type` accepts fewer types, or an `anyOf` / `oneOf` appeared.
    pub const TYPE_NARROWED: &str = "toolc::diff::type-narrowed";
    /// `type` accepts more types, or an `anyOf` / `oneOf` went.
    pub const TYPE_WIDENED: &str = "toolc::diff::type-widened";
    /// `type` accepts other types (`integer` → `string`).
    pub const TYPE_CHANGED: &str = "toolc::diff::type-changed";
    /// A value of `enum` is gone, or a `const` changed.
    pub const ENUM_VALUE_REMOVED: &str = "toolc::diff::enum-value-removed";
    /// A new value of `enum`.
    pub const ENUM_VALUE_ADDED: &str = "toolc::diff::enum-value-added";
    /// An `enum` or `const` where any value went.
    pub const ENUM_ADDED: &str = "toolc::diff::enum-added";
    /// No `enum` or `const` any more.
    pub const ENUM_REMOVED: &str = "toolc::diff::enum-removed";
    /// A bound accepts fewer values: a `max…` lowered or added, a `min…` raised or
    /// added, `multipleOf` changed, `uniqueItems` added.
    pub const BOUND_TIGHTENED: &str = "toolc::diff::bound-tightened";
    /// A bound accepts more values: the opposite of `BOUND_TIGHTENED`.
    pub const BOUND_LOOSENED: &str = "toolc::diff::bound-loosened";
    /// A `pattern` was added.
    pub const PATTERN_ADDED: &str = "toolc::diff::pattern-added";
    /// A `pattern` changed.
    pub const PATTERN_CHANGED: &str = "toolc::diff::pattern-changed";
    /// A `pattern` was removed.
    pub const PATTERN_REMOVED: &str = "toolc::diff::pattern-removed";
    /// A `format` was added.
    pub const FORMAT_ADDED: &str = "toolc::diff::format-added";
    /// A `format` changed.
    pub const FORMAT_CHANGED: &str = "toolc::diff::format-changed";
    /// A `format` was removed.
    pub const FORMAT_REMOVED: &str = "toolc::diff::format-removed";
    /// `additionalProperties: false` was added.
    pub const OBJECT_CLOSED: &str = "toolc::diff::object-closed";
    /// `additionalProperties: false` was removed.
    pub const OBJECT_OPENED: &str = "toolc::diff::object-opened";
    /// An `anyOf` / `oneOf` alternative is gone.
    pub const ALTERNATIVE_REMOVED: &str = "toolc::diff::alternative-removed";
    /// A new `anyOf` / `oneOf` alternative.
    pub const ALTERNATIVE_ADDED: &str = "toolc::diff::alternative-added";
    /// A keyword toolc does not compare by meaning (`not`, `allOf`, `if`,
    /// `patternProperties`, …) changed.
    pub const SCHEMA_CHANGED: &str = "toolc::diff::schema-changed";
    /// A generated Rust type or server trait method name is gone.
    pub const RUST_NAMES_CHANGED: &str = "toolc::diff::rust-names-changed";
    /// A generated TypeScript type or stub function name is gone.
    pub const TYPESCRIPT_NAMES_CHANGED: &str = "toolc::diff::typescript-names-changed";
}

use codes::*;

/// Compares two versions of a set of tools. Both IRs must come from one [`SourceMap`] (see
/// [`crate::Session::check_files`]) for the changes' labels to be rendered.
pub fn diff(old: &Ir, new: &Ir) -> Vec<Change> {
    let old_index: HashMap<&str, usize> = old
        .tools
        .iter()
        .enumerate()
        .map(|(i, t)| (t.def.name.as_str(), i))
        .collect();
    let new_names: HashSet<&str> = new.tools.iter().map(|t| t.def.name.as_str()).collect();
    let renamed = renames(old, new, &old_index, &new_names);

    // Each new tool is compared on its own, on every core; the changes keep the tools' order.
    let per_tool = crate::parallel::each_index(
        new.tools.len(),
        crate::parallel::cores(),
        || (),
        |_, new_i, _| {
            let mut changes = Vec::new();
            compare_new_tool(
                old,
                &new.tools[new_i],
                new_i,
                &old_index,
                &renamed,
                &mut changes,
            );
            changes
        },
    );
    let mut changes: Vec<Change> = per_tool.into_iter().flat_map(|(_, c)| c).collect();
    let renamed_from: HashSet<usize> = renamed.values().copied().collect();
    for (old_i, tool) in old.tools.iter().enumerate() {
        if new_names.contains(tool.def.name.as_str()) || renamed_from.contains(&old_i) {
            continue;
        }
        changes.push(Change {
            code: TOOL_REMOVED,
            for_model: Impact::Breaking,
            for_code: Impact::Breaking,
            tool: tool.def.name.clone(),
            message: format!("{} tool `{}` removed", tool.def.location, tool.def.name),
            old: label(name_span(tool), "removed"),
            new: None,
            help: Some(
                "the model, prompts and saved conversations may still call it, and code may \
                 still name its generated types: deprecate it in its description first"
                    .into(),
            ),
        });
    }
    changes.extend(compare_list_ttl(old, new));
    changes
}

/// The manifests' `mcp.list_ttl`: how long MCP hosts keep the tool list, so how soon they see
/// a change.
fn compare_list_ttl(old: &Ir, new: &Ir) -> Option<Change> {
    let (old_ttl, new_ttl) = (old.mcp_list_ttl(), new.mcp_list_ttl());
    if old_ttl.map(|(t, _)| t) == new_ttl.map(|(t, _)| t) {
        return None;
    }
    let describe = |ttl: Option<(Duration, Span)>| match ttl {
        Some((t, _)) => timeout_text(Some(t)),
        None => "unset".to_owned(),
    };
    Some(Change {
        code: LIST_TTL_CHANGED,
        for_model: Impact::Unaffected,
        for_code: Impact::Info,
        tool: String::new(),
        message: format!(
            "the MCP tool list's time to live (`mcp.list_ttl`) changed from {} to {}",
            describe(old_ttl),
            describe(new_ttl)
        ),
        old: label(old_ttl.map(|(_, s)| s), "was"),
        new: label(new_ttl.map(|(_, s)| s), "now"),
        help: Some(
            "MCP hosts keep `tools/list` up to this long (unset: `McpServer`'s default, 5 minutes; \
             0 in the generated mcp.json): a longer time means a changed tool reaches them later"
                .into(),
        ),
    })
}

/// The changes of one tool of the new version: compared with its old version, renamed, or added.
fn compare_new_tool(
    old: &Ir,
    tool: &IrTool,
    new_i: usize,
    old_index: &HashMap<&str, usize>,
    renamed: &HashMap<usize, usize>,
    changes: &mut Vec<Change>,
) {
    if let Some(&old_i) = old_index.get(tool.def.name.as_str()) {
        let before = &old.tools[old_i];
        // Most tools of a large manifest do not change between versions, and an equal
        // definition (object keys in any order) has nothing to report.
        if before.def == tool.def
            && before.toolset == tool.toolset
            && before.defer_loading == tool.defer_loading
        {
            return;
        }
        compare_tool(before, tool, changes);
        compare_names(
            before,
            tool,
            "Rust",
            RUST_NAMES_CHANGED,
            emit::rust::public_names,
            changes,
        );
        compare_names(
            before,
            tool,
            "TypeScript",
            TYPESCRIPT_NAMES_CHANGED,
            emit::typescript::public_names,
            changes,
        );
    } else if let Some(&old_i) = renamed.get(&new_i) {
        let before = &old.tools[old_i];
        changes.push(Change {
            code: TOOL_RENAMED,
            for_model: Impact::Breaking,
            for_code: Impact::Breaking,
            tool: tool.def.name.clone(),
            message: format!("tool `{}` renamed to `{}`", before.def.name, tool.def.name),
            old: label(name_span(before), "was this name"),
            new: label(name_span(tool), "now this name, with the same schemas"),
            help: Some(
                "the model, prompts and saved conversations call it by the old name, and \
                 executors, handlers and generated names follow the name: keep the old name, \
                 or keep both tools while callers move"
                    .into(),
            ),
        });
    } else {
        changes.push(Change {
            code: TOOL_ADDED,
            for_model: Impact::Compatible,
            for_code: Impact::Compatible,
            tool: tool.def.name.clone(),
            message: format!("{} tool `{}` added", tool.def.location, tool.def.name),
            old: None,
            new: label(name_span(tool), "new tool"),
            help: None,
        });
    }
}

/// Removed tools whose definition reappears, unchanged but for the name, as an added tool: new
/// index → old index. Pairs are made in order, each tool at most once.
fn renames(
    old: &Ir,
    new: &Ir,
    old_index: &HashMap<&str, usize>,
    new_names: &HashSet<&str>,
) -> HashMap<usize, usize> {
    let mut removed: Vec<(usize, String)> = old
        .tools
        .iter()
        .enumerate()
        .filter(|(_, t)| !new_names.contains(t.def.name.as_str()))
        .map(|(i, t)| (i, fingerprint(t)))
        .collect();
    let mut out = HashMap::new();
    for (new_i, tool) in new.tools.iter().enumerate() {
        if old_index.contains_key(tool.def.name.as_str()) || removed.is_empty() {
            continue;
        }
        let print = fingerprint(tool);
        if let Some(at) = removed.iter().position(|(_, p)| *p == print) {
            let (old_i, _) = removed.remove(at);
            out.insert(new_i, old_i);
        }
    }
    out
}

/// Everything of a tool but its name and description, canonically.
fn fingerprint(tool: &IrTool) -> String {
    let def = &tool.def;
    format!(
        "{}|{}|{}|{}",
        def.location,
        def.wait_for_response,
        schema::canonical(&def.parameters),
        def.returns
            .as_ref()
            .map(schema::canonical)
            .unwrap_or_default()
    )
}

/// Makes one change of a tool: code, impact for the model and for code, message, help.
type MakeChange<'a> = dyn Fn(&'static str, Impact, Impact, String, Option<&str>) -> Change + 'a;

/// The call policy of a tool whose location stayed: approval, mode, interruption, scheduling,
/// toolset, repeats, limits, retries, streaming, scopes; one change each, in that order.
fn compare_policy(old: &IrTool, new: &IrTool, change: &MakeChange<'_>, out: &mut Vec<Change>) {
    let (o, n) = (&old.def, &new.def);
    let found = [
        approval_change(o, n, change),
        mode_change(o, n, change),
        interruption_change(o, n, change),
        scheduling_change(o, n, change),
        toolset_change(old, new, change),
        duplicate_change(o, n, change),
        rate_limit_change(o, n, change),
        retry_change(o, n, change),
        streaming_change(o, n, change),
        scopes_change(o, n, change),
    ];
    for mut c in found.into_iter().flatten() {
        c.old = label(name_span(old), "before");
        c.new = label(name_span(new), "now");
        out.push(c);
    }
}

/// Approval asked or no longer asked.
fn approval_change(
    o: &ToolDefinition,
    n: &ToolDefinition,
    change: &MakeChange<'_>,
) -> Option<Change> {
    if o.requires_approval() != n.requires_approval() {
        return Some(if n.requires_approval() {
            change(
                APPROVAL_CHANGED,
                Impact::Info,
                Impact::Breaking,
                format!("`{}` now needs the user's approval before it runs", n.name),
                Some("the page must answer approval requests (the dispatcher's `approve` option), and the model may now get a denial as the result"),
            )
        } else {
            change(
                APPROVAL_CHANGED,
                Impact::Info,
                Impact::Compatible,
                format!("`{}` no longer needs approval", n.name),
                Some("its calls run without asking the user"),
            )
        });
    }
    None
}

/// Foreground or background (`mode`).
fn mode_change(o: &ToolDefinition, n: &ToolDefinition, change: &MakeChange<'_>) -> Option<Change> {
    if o.runs_in_background() != n.runs_in_background() {
        let (message, help) = if n.runs_in_background() {
            (
                format!("`{}` now runs in the background (`mode: async`)", n.name),
                "the model is answered that the work started, and gets the result later as a message: prompts that expect the result in the call's output break",
            )
        } else {
            (
                format!("`{}` no longer runs in the background", n.name),
                "the model now waits for the result in the call's output",
            )
        };
        return Some(change(
            MODE_CHANGED,
            Impact::Breaking,
            Impact::Unaffected,
            message,
            Some(help),
        ));
    }
    None
}

/// Cancelled on interruption or not.
fn interruption_change(
    o: &ToolDefinition,
    n: &ToolDefinition,
    change: &MakeChange<'_>,
) -> Option<Change> {
    if o.cancels_on_interruption() != n.cancels_on_interruption() {
        let now = if n.cancels_on_interruption() {
            "is now cancelled"
        } else {
            "is no longer cancelled"
        };
        return Some(change(
            INTERRUPTION_CHANGED,
            Impact::Info,
            Impact::Info,
            format!("a call of `{}` {now} when the user interrupts", n.name),
            None,
        ));
    }
    None
}

/// When a background result is taken up (Gemini Live).
fn scheduling_change(
    o: &ToolDefinition,
    n: &ToolDefinition,
    change: &MakeChange<'_>,
) -> Option<Change> {
    if o.runs_in_background()
        && n.runs_in_background()
        && o.policy.scheduling != n.policy.scheduling
    {
        let shown = |s: Option<toolc_core::Scheduling>| {
            s.map_or("the session's setting".to_owned(), |s| format!("`{s}`"))
        };
        return Some(change(
            SCHEDULING_CHANGED,
            Impact::Info,
            Impact::Unaffected,
            format!(
                "`{}`'s result is now taken up {} (was {})",
                n.name,
                shown(n.policy.scheduling),
                shown(o.policy.scheduling)
            ),
            Some("on Gemini Live, when the model hears a background result: after it finishes speaking, at once, or only when it next speaks"),
        ));
    }
    None
}

/// The toolset (namespace) and tool-search loading.
fn toolset_change(old: &IrTool, new: &IrTool, change: &MakeChange<'_>) -> Option<Change> {
    let n = &new.def;
    let toolset = |t: &IrTool| t.toolset.as_ref().map(|s| s.name.clone());
    if toolset(old) != toolset(new) || old.defer_loading != new.defer_loading {
        let shown = |t: &IrTool| {
            let place =
                toolset(t).map_or("in no toolset".to_owned(), |s| format!("in toolset `{s}`"));
            if t.defer_loading {
                format!("{place}, loaded only through tool search")
            } else {
                place
            }
        };
        return Some(change(
            TOOLSET_CHANGED,
            Impact::Info,
            Impact::Unaffected,
            format!("`{}` is now {} (was {})", n.name, shown(new), shown(old)),
            Some("on Responses the model finds it in another namespace, or through tool search"),
        ));
    }
    None
}

/// What a repeated call gets, and within which window.
fn duplicate_change(
    o: &ToolDefinition,
    n: &ToolDefinition,
    change: &MakeChange<'_>,
) -> Option<Change> {
    let (old_dup, new_dup) = (o.duplicate_policy(), n.duplicate_policy());
    let window_matters = new_dup != toolc_core::OnDuplicate::Run;
    if old_dup != new_dup || (window_matters && o.duplicate_window() != n.duplicate_window()) {
        let shown = |d: &toolc_core::ToolDefinition| match d.duplicate_policy() {
            toolc_core::OnDuplicate::Run => "every call runs".to_owned(),
            policy => format!(
                "a repeat within {} gets `{policy}`",
                timeout_text(Some(d.duplicate_window()))
            ),
        };
        return Some(change(
            DUPLICATE_POLICY_CHANGED,
            Impact::Info,
            Impact::Unaffected,
            format!("`{}`: {} (was: {})", n.name, shown(n), shown(o)),
            Some("a call the model repeats with the same arguments runs again, gets the first result, or is refused"),
        ));
    }
    None
}

/// The rate limit; a tighter one breaks the model's expectations.
fn rate_limit_change(
    o: &ToolDefinition,
    n: &ToolDefinition,
    change: &MakeChange<'_>,
) -> Option<Change> {
    if o.policy.rate_limit != n.policy.rate_limit {
        let shown = |l: Option<toolc_core::RateLimit>| {
            l.map_or("no rate limit".to_owned(), |l| format!("at most `{l}`"))
        };
        let tighter = match (o.policy.rate_limit, n.policy.rate_limit) {
            (_, None) => false,
            (None, Some(_)) => true,
            (Some(a), Some(b)) => {
                a.per != b.per
                    || u128::from(b.calls) * u128::from(a.window_ms)
                        < u128::from(a.calls) * u128::from(b.window_ms)
            }
        };
        return Some(change(
            RATE_LIMIT_CHANGED,
            if tighter { Impact::Breaking } else { Impact::Compatible },
            Impact::Unaffected,
            format!(
                "`{}`: {} (was: {})",
                n.name,
                shown(n.policy.rate_limit),
                shown(o.policy.rate_limit)
            ),
            Some("a call over the limit does not run: the model gets a `rate_limited` result saying when to try again"),
        ));
    }
    None
}

/// Whether and how failed runs are retried.
fn retry_change(o: &ToolDefinition, n: &ToolDefinition, change: &MakeChange<'_>) -> Option<Change> {
    if o.policy.retry != n.policy.retry {
        let shown = |r: Option<toolc_core::RetryPolicy>| {
            r.map_or("no retry".to_owned(), |r| {
                let mut on = Vec::new();
                if r.on_timeout {
                    on.push("timeout");
                }
                if r.on_tool_failed {
                    on.push("tool_failed");
                }
                format!(
                    "{} runs at most, backoff {}ms, on {}",
                    r.attempts,
                    r.backoff_ms,
                    on.join(" and ")
                )
            })
        };
        return Some(change(
            RETRY_CHANGED,
            Impact::Info,
            Impact::Unaffected,
            format!(
                "`{}`: {} (was: {})",
                n.name,
                shown(n.policy.retry),
                shown(o.policy.retry)
            ),
            Some("a failed run of the tool is run again before the model gets the failure; the tool's executor may see a call more than once"),
        ));
    }
    None
}

/// Whether the page gets the arguments while the model writes them.
fn streaming_change(
    o: &ToolDefinition,
    n: &ToolDefinition,
    change: &MakeChange<'_>,
) -> Option<Change> {
    if o.streams_arguments() != n.streams_arguments() {
        let now = if n.streams_arguments() {
            "now gets"
        } else {
            "no longer gets"
        };
        return Some(change(
            STREAM_ARGUMENTS_CHANGED,
            Impact::Unaffected,
            Impact::Compatible,
            format!(
                "the page {now} `{}`'s arguments while the model writes them",
                n.name
            ),
            None,
        ));
    }
    None
}

/// The OAuth scopes a caller's token must carry, compared as sets (their order means nothing).
/// A scope required now refuses the callers whose tokens were granted only the old ones, so it
/// breaks them (code, in this diff's terms: the host and the authorization server's grants, not
/// the model's arguments); a scope no longer required lets more callers in.
fn scopes_change(
    o: &ToolDefinition,
    n: &ToolDefinition,
    change: &MakeChange<'_>,
) -> Option<Change> {
    let added: Vec<&str> = n
        .scopes
        .iter()
        .filter(|s| !o.scopes.contains(s))
        .map(String::as_str)
        .collect();
    let removed: Vec<&str> = o
        .scopes
        .iter()
        .filter(|s| !n.scopes.contains(s))
        .map(String::as_str)
        .collect();
    if added.is_empty() && removed.is_empty() {
        return None;
    }
    let listed = |scopes: &[&str]| {
        scopes
            .iter()
            .map(|s| format!("`{s}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut parts = Vec::new();
    if !added.is_empty() {
        parts.push(format!("now requires {}", listed(&added)));
    }
    if !removed.is_empty() {
        parts.push(format!("no longer requires {}", listed(&removed)));
    }
    let shown = |d: &ToolDefinition| {
        if d.scopes.is_empty() {
            "any token".to_owned()
        } else {
            let all: Vec<&str> = d.scopes.iter().map(String::as_str).collect();
            listed(&all)
        }
    };
    let message = format!(
        "`{}` {} of a caller's token (scopes now: {}; was: {})",
        n.name,
        parts.join(" and "),
        shown(n),
        shown(o)
    );
    Some(if added.is_empty() {
        change(
            SCOPES_CHANGED,
            Impact::Unaffected,
            Impact::Compatible,
            message,
            Some("tokens without the scopes no longer required are now let in"),
        )
    } else {
        change(
            SCOPES_CHANGED,
            Impact::Unaffected,
            Impact::Breaking,
            message,
            Some("an MCP server refuses a token without the new scopes (`403 insufficient_scope`): grant them to the callers' clients, or their calls fail until they sign in again with them"),
        )
    })
}

fn compare_tool(old: &IrTool, new: &IrTool, out: &mut Vec<Change>) {
    let (o, n) = (&old.def, &new.def);
    let name = n.name.clone();
    let change = |code, for_model, for_code, message: String, help: Option<&str>| Change {
        code,
        for_model,
        for_code,
        tool: name.clone(),
        message,
        old: None,
        new: None,
        help: help.map(str::to_owned),
    };
    if o.location != n.location {
        let mut c = change(
            LOCATION_CHANGED,
            Impact::Breaking,
            Impact::Breaking,
            format!(
                "`{}` moved from the {} to the {}",
                n.name, o.location, n.location
            ),
            Some(match n.location {
                Location::Client => {
                    "its server executor no longer runs: the browser must now handle it, and the \
                     server trait loses its method"
                }
                Location::Server => {
                    "the browser's handler no longer runs: the server trait needs a new method, \
                     and the tool no longer sees what only the page knows"
                }
            }),
        );
        c.old = label(old.origin.location.or(name_span(old)), "was here");
        c.new = label(new.origin.location.or(name_span(new)), "now here");
        out.push(c);
    } else if n.location == Location::Client && o.wait_for_response != n.wait_for_response {
        let (message, help) = if n.wait_for_response {
            (
                format!("`{}` now waits for the browser's reply", n.name),
                "the model now waits for a result the browser's handler must return, and a \
                 handler that returns nothing times out",
            )
        } else {
            (
                format!(
                    "`{}` is now fire-and-forget (`wait_for_response: false`)",
                    n.name
                ),
                "the model no longer gets the handler's result, and prompts that expect one \
                 break",
            )
        };
        let mut c = change(
            WAIT_FOR_RESPONSE_CHANGED,
            Impact::Breaking,
            Impact::Breaking,
            message,
            Some(help),
        );
        c.old = label(name_span(old), "before");
        c.new = label(name_span(new), "now");
        out.push(c);
    }
    if o.location == n.location && o.effective_timeout() != n.effective_timeout() {
        let mut c = change(
            TIMEOUT_CHANGED,
            Impact::Info,
            Impact::Info,
            format!(
                "`{}`'s timeout changed from {} to {}",
                n.name,
                timeout_text(o.effective_timeout()),
                timeout_text(n.effective_timeout())
            ),
            None,
        );
        c.old = label(name_span(old), "before");
        c.new = label(name_span(new), "now");
        out.push(c);
    }
    if o.location == n.location && o.filler != n.filler {
        let mut c = change(
            FILLER_CHANGED,
            Impact::Info,
            Impact::Unaffected,
            format!("`{}`'s filler phrases changed", n.name),
            None,
        );
        c.old = label(name_span(old), "before");
        c.new = label(name_span(new), "now");
        out.push(c);
    }
    if o.location == n.location {
        compare_policy(old, new, &change, out);
    }
    if o.description != n.description {
        let mut c = change(
            DESCRIPTION_CHANGED,
            Impact::Info,
            Impact::Unaffected,
            format!("`{}`'s description changed", n.name),
            Some("the model reads descriptions: check that prompts and evals still hold"),
        );
        c.old = label(name_span(old), "before");
        c.new = label(name_span(new), "now");
        out.push(c);
    }
    schema::compare(old, new, schema::Side::Parameters, out);
    match (&o.returns, &n.returns) {
        (Some(_), Some(_)) => schema::compare(old, new, schema::Side::Returns, out),
        (None, Some(_)) => {
            let mut c = change(
                RETURNS_ADDED,
                Impact::Compatible,
                Impact::Breaking,
                format!("`{}` now declares its result (`returns`)", n.name),
                Some(
                    "results are now validated against it, and the generated result type is no \
                     longer any JSON value: executors and handlers must return that shape",
                ),
            );
            c.old = label(name_span(old), "declared no result");
            c.new = label(new.returns_span("").or(name_span(new)), "now declared");
            out.push(c);
        }
        (Some(_), None) => {
            let mut c = change(
                RETURNS_REMOVED,
                Impact::Compatible,
                Impact::Breaking,
                format!("`{}` no longer declares its result (`returns`)", n.name),
                Some(
                    "the generated result type becomes any JSON value, and code that reads the \
                     result loses its type",
                ),
            );
            c.old = label(old.returns_span("").or(name_span(old)), "was declared");
            c.new = label(name_span(new), "declares no result now");
            out.push(c);
        }
        (None, None) => {}
    }
}

fn timeout_text(timeout: Option<Duration>) -> String {
    match timeout {
        None => "none".into(),
        Some(t) if t.as_millis() % 1000 == 0 => format!("{}s", t.as_secs()),
        Some(t) => format!("{}ms", t.as_millis()),
    }
}

fn name_span(tool: &IrTool) -> Option<Span> {
    tool.origin.name
}

fn label(span: Option<Span>, message: &str) -> Option<Label> {
    span.map(|span| Label {
        span,
        message: message.to_owned(),
    })
}

/// Reports the generated names of a tool's old version that its new version no longer has.
/// Each version is planned on its own, so a name that changes only because another tool's new
/// type took it first (and it got a numbered suffix) is not seen.
fn compare_names(
    old: &IrTool,
    new: &IrTool,
    language: &str,
    code: &'static str,
    names: fn(&Ir) -> Vec<Vec<String>>,
    out: &mut Vec<Change>,
) {
    let (o, n) = (&old.def, &new.def);
    if o.location == n.location && o.parameters == n.parameters && o.returns == n.returns {
        return;
    }
    // The names come from the definition alone; the origin's YAML trees are not needed.
    let alone = |tool: &IrTool| {
        names(&Ir::from_definitions([tool.def.clone()]))
            .pop()
            .unwrap_or_default()
    };
    let (before, after) = (alone(old), alone(new));
    let gone: Vec<&String> = before.iter().filter(|n| !after.contains(n)).collect();
    if gone.is_empty() {
        return;
    }
    let added: Vec<&String> = after.iter().filter(|n| !before.contains(n)).collect();
    let list = |names: &[&String]| {
        names
            .iter()
            .map(|n| n.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut help = "code that names them no longer compiles; the names follow the tool's name, \
                    its property names and its `$defs` keys"
        .to_owned();
    if !added.is_empty() {
        let _ = write!(help, " (new now: {})", list(&added));
    }
    out.push(Change {
        code,
        for_model: Impact::Unaffected,
        for_code: Impact::Breaking,
        tool: new.def.name.clone(),
        message: format!(
            "`{}`: generated {language} names gone: {}",
            new.def.name,
            list(&gone)
        ),
        old: label(name_span(old), "before"),
        new: label(name_span(new), "now"),
        help: Some(help),
    });
}

/// How many changes of each impact (for the audiences looked at) a comparison found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Changes that break an audience looked at.
    pub breaking: usize,
    /// Breaking changes that break the model's calls (a change that breaks both
    /// audiences counts here and in `breaking_code`).
    pub breaking_model: usize,
    /// Breaking changes that break code.
    pub breaking_code: usize,
    /// Changes that old callers survive.
    pub compatible: usize,
    /// Changes worth a note, with nothing to do.
    pub info: usize,
}

impl Summary {
    /// Counts `changes` by their impact for the audiences looked at (`None`: both).
    pub fn of(changes: &[Change], only: Option<Audience>) -> Summary {
        let mut s = Summary::default();
        for c in changes {
            match c.impact(only) {
                Impact::Breaking => {
                    s.breaking += 1;
                    let (model, code) = c.breaks(only);
                    s.breaking_model += usize::from(model);
                    s.breaking_code += usize::from(code);
                }
                Impact::Compatible => s.compatible += 1,
                Impact::Info => s.info += 1,
                Impact::Unaffected => {}
            }
        }
        s
    }

    /// The counts as one line, such as `1 breaking change (1 for the model, 0 for code)`;
    /// `no changes` when there is nothing to count.
    pub fn line(&self) -> String {
        if self.breaking + self.compatible + self.info == 0 {
            return "no changes".into();
        }
        let mut parts = Vec::new();
        if self.breaking > 0 {
            parts.push(format!(
                "{} ({} for the model, {} for code)",
                count(self.breaking, "breaking change"),
                self.breaking_model,
                self.breaking_code
            ));
        }
        if self.compatible > 0 {
            parts.push(count(self.compatible, "compatible change"));
        }
        if self.info > 0 {
            parts.push(format!("{} to note", count(self.info, "change")));
        }
        parts.join(", ")
    }
}

/// The changes as text, rustc-style, each under `breaking`, `compatible` or `info`, followed by
/// a summary line. Changes the audiences looked at cannot tell are left out.
pub fn render_human(
    sources: &SourceMap,
    changes: &[Change],
    only: Option<Audience>,
    colour: bool,
) -> String {
    let renderer = HumanRenderer { colour };
    let mut out = String::new();
    for c in changes {
        let impact = c.impact(only);
        let colour_code = match impact {
            Impact::Unaffected => continue,
            Impact::Breaking => "\x1b[1;31m",
            Impact::Compatible => "\x1b[1;32m",
            Impact::Info => "\x1b[1;36m",
        };
        let mut notes = Vec::new();
        if impact == Impact::Breaking {
            let (model, code) = c.breaks(only);
            notes.push(
                match (model, code) {
                    (true, true) => "breaks the model's calls and code",
                    (true, false) => "breaks the model's calls",
                    _ => "breaks code",
                }
                .to_owned(),
            );
        }
        renderer.render_headed(
            &mut out,
            sources,
            &as_diagnostic(c),
            impact.as_str(),
            colour_code,
            &notes,
        );
        out.push('\n');
    }
    out.push_str(&Summary::of(changes, only).line());
    out.push('\n');
    out
}

fn as_diagnostic(c: &Change) -> Diagnostic {
    let mut d = Diagnostic::warning(c.code, c.message.clone());
    d.primary = c.new.clone().or_else(|| c.old.clone());
    if c.new.is_some() {
        d.secondary.extend(c.old.clone());
    }
    d.help = c.help.clone();
    d
}

/// The changes as JSON, one object per line (`--message-format json`).
pub fn render_json(sources: &SourceMap, changes: &[Change], only: Option<Audience>) -> String {
    #[derive(Serialize)]
    struct JsonChange<'a> {
        code: &'a str,
        /// The impact for the audiences looked at.
        severity: Impact,
        model: Impact,
        #[serde(rename = "code_impact")]
        code_impact: Impact,
        tool: &'a str,
        message: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        old: Option<JsonLabel>,
        #[serde(skip_serializing_if = "Option::is_none")]
        new: Option<JsonLabel>,
        #[serde(skip_serializing_if = "Option::is_none")]
        help: Option<&'a str>,
    }
    let mut out = String::new();
    for c in changes {
        let severity = c.impact(only);
        if severity == Impact::Unaffected {
            continue;
        }
        let json = JsonChange {
            code: c.code,
            severity,
            model: c.for_model,
            code_impact: c.for_code,
            tool: &c.tool,
            message: &c.message,
            old: c.old.as_ref().map(|l| JsonLabel::new(sources, l)),
            new: c.new.as_ref().map(|l| JsonLabel::new(sources, l)),
            help: c.help.as_deref(),
        };
        out.push_str(&serde_json::to_string(&json).expect("changes serialise"));
        out.push('\n');
    }
    out
}

/// Two versions of a set of tools, loaded into one session (so that diagnostics and changes can
/// quote both), checked, and compared.
#[derive(Debug)]
pub struct Comparison {
    /// Both versions' files and every problem found in them.
    pub session: crate::Session,
    /// The changes; `None` when either version has errors (they are in the session).
    pub changes: Option<Vec<Change>>,
}

/// Loads `old` and `new` (`(name, bytes)` per manifest file) and compares them. Either side may
/// be empty (every tool added, or removed).
pub fn compare_sources(
    old: impl IntoIterator<Item = (String, Vec<u8>)>,
    new: impl IntoIterator<Item = (String, Vec<u8>)>,
) -> Comparison {
    let mut session = crate::Session::new();
    let mut load = |files: &mut dyn Iterator<Item = (String, Vec<u8>)>| {
        let mut ids = Vec::new();
        let mut readable = true;
        for (name, bytes) in files {
            match session.add_manifest(&name, &bytes) {
                Some(id) => ids.push(id),
                None => readable = false,
            }
        }
        (ids, readable)
    };
    let (old_ids, old_ok) = load(&mut old.into_iter());
    let (new_ids, new_ok) = load(&mut new.into_iter());
    let old_ir = session.check_files(&old_ids);
    let new_ir = session.check_files(&new_ids);
    let changes = match (old_ir, new_ir) {
        (Some(old), Some(new)) if old_ok && new_ok => Some(diff(&old, &new)),
        _ => None,
    };
    Comparison { session, changes }
}

/// Reads the manifests `paths` name (files, or folders of `*.tools.yaml`) as `(name, bytes)`.
pub fn read_paths(paths: &[std::path::PathBuf]) -> std::io::Result<Vec<(String, Vec<u8>)>> {
    crate::manifest_paths(paths)?
        .into_iter()
        .map(|path| {
            std::fs::read(&path)
                .map(|bytes| (path.display().to_string(), bytes))
                .map_err(|e| {
                    std::io::Error::new(e.kind(), format!("cannot read {}: {e}", path.display()))
                })
        })
        .collect()
}
