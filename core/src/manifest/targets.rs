//! The manifest's `realtime` targets (`openai`, `gemini-live`, `vertex-live`, `gpt-live`) and the behaviours a target cannot
//! give: a tool that asks for one is a warning naming the tool and the target at build time,
//! rather than a behaviour that silently does not happen in a live call.

use super::*;

/// The realtime providers a manifest says its tools are served on. None named: no checks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RealtimeTargets {
    /// The manifest names `openai` (OpenAI Realtime).
    pub openai: bool,
    /// The manifest names `gemini-live` (Gemini Live).
    pub gemini_live: bool,
    /// The manifest names `vertex-live` (Gemini Live on Vertex AI).
    pub vertex_live: bool,
    /// The manifest names `gpt-live` (OpenAI GPT-Live, Responses delegation).
    pub gpt_live: bool,
}

/// The words `realtime` takes.
pub const REALTIME_TARGETS: &[&str] = &["openai", "gemini-live", "vertex-live", "gpt-live"];

/// Reads the root's `realtime` list, reporting what is not a target.
pub(super) fn parse_targets(root: &Node, diags: &mut Diagnostics) -> RealtimeTargets {
    let mut targets = RealtimeTargets::default();
    let Some((_, list)) = root.get("realtime") else {
        return targets;
    };
    let Some(items) = list.as_seq() else {
        diags.push(type_error(
            "realtime",
            "a list of realtime targets, e.g. `[openai, gemini-live, vertex-live, gpt-live]`",
            list,
        ));
        return targets;
    };
    for item in items {
        match item.as_str() {
            Some("openai") => targets.openai = true,
            Some("gemini-live") => targets.gemini_live = true,
            Some("vertex-live") => targets.vertex_live = true,
            Some("gpt-live") => targets.gpt_live = true,
            other => {
                let shown = other.map_or_else(|| item.kind().to_owned(), |s| format!("`{s}`"));
                diags.push(
                    Diagnostic::error(
                        crate::codes::INVALID_FIELD,
                        format!("unknown realtime target {shown}"),
                    )
                    .at(item.span, "expected `openai`, `gemini-live`, `vertex-live` or `gpt-live`")
                    .help(format!(
                        "{}the realtime targets are `openai` (OpenAI Realtime), `gemini-live` (Gemini Live), `vertex-live` (Gemini Live on Vertex AI) and `gpt-live` (OpenAI GPT-Live)",
                        did_you_mean(other.unwrap_or(""), REALTIME_TARGETS.iter().copied())
                    )),
                );
            }
        }
    }
    targets
}

/// What one tool asks for that a target cannot give.
pub(super) fn check_tool<'n>(
    field: &dyn Fn(&str) -> Option<(&'n Node, &'n Node)>,
    policy: &CallPolicy,
    has_filler: bool,
    what: &str,
    targets: RealtimeTargets,
    diags: &mut Diagnostics,
) {
    let mut cannot = |name: &str, target: &str, why: &str, help: &str| {
        if let Some((key, _)) = field(name) {
            diags.push(
                Diagnostic::warning(
                    crate::codes::TARGET_CANNOT_HONOUR,
                    format!("`{name}` of {what} has no effect on realtime target `{target}`"),
                )
                .at(key.span, why.to_owned())
                .help(help.to_owned()),
            );
        }
    };
    // Both Live endpoints speak one protocol: what it lacks, each lacks.
    for (live, target) in [
        (targets.gemini_live, "gemini-live"),
        (targets.vertex_live, "vertex-live"),
    ] {
        if !live {
            continue;
        }
        if has_filler {
            cannot(
                "filler",
                target,
                "Gemini Live has no out-of-band response to say a filler in",
                "keep it for OpenAI, or remove `filler` (a Live model may say a phrase itself while a `BLOCKING` call runs)",
            );
        }
        if policy.stream_arguments {
            cannot(
                "stream_arguments",
                target,
                "Gemini Live sends a call's arguments whole",
                "keep it for OpenAI, or remove `stream_arguments: true`; on Live the page gets the call once, complete",
            );
        }
    }
    if targets.openai && policy.scheduling.is_some() {
        cannot(
            "scheduling",
            "openai",
            "OpenAI Realtime has no result scheduling",
            "keep it for Gemini Live, or remove `scheduling`; on OpenAI a background result goes in at the next point where no response is in progress (like `when_idle`)",
        );
    }
    if targets.gpt_live {
        if has_filler {
            cannot(
                "filler",
                "gpt-live",
                "the GPT-Live model speaks its own acknowledgement while a delegated task runs",
                "keep it for OpenAI Realtime, or remove `filler`; on GPT-Live set `session.delegation.acknowledgement_delay_ms` instead",
            );
        }
        if policy.stream_arguments {
            cannot(
                "stream_arguments",
                "gpt-live",
                "the relay does not stream a delegated call's arguments to the page",
                "keep it for OpenAI Realtime, or remove `stream_arguments: true`; on GPT-Live the page gets the call once, complete",
            );
        }
        if policy.scheduling.is_some() {
            cannot(
                "scheduling",
                "gpt-live",
                "GPT-Live has no result scheduling",
                "keep it for Gemini Live, or remove `scheduling`; on GPT-Live a background result goes in when no delegated response is in progress",
            );
        }
    }
    if targets.vertex_live && policy.scheduling.is_some() {
        cannot(
            "scheduling",
            "vertex-live",
            "Vertex AI's Live function responses take no `scheduling`",
            "keep it for the Gemini API's Live, or remove `scheduling`; on Vertex a `mode: async` result goes once, when it is done, and the model takes it up as it sees fit",
        );
    }
}
