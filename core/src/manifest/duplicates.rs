//! The manifest's duplicate-call policy (`on_duplicate`, `duplicate_window`), and the
//! contradictions between it and the tool's own hints (`annotations`).

use super::*;
use crate::definition::OnDuplicate;

/// Reads `on_duplicate` and `duplicate_window` into `policy`, and warns where they contradict
/// each other or the tool's `annotations`.
pub(super) fn parse<'n>(
    field: &dyn Fn(&str) -> Option<(&'n Node, &'n Node)>,
    policy: &mut CallPolicy,
    annotations: &Annotations,
    what: &str,
    diags: &mut Diagnostics,
) {
    if let Some((_, v)) = field("on_duplicate") {
        match v.as_str().and_then(|s| s.parse::<OnDuplicate>().ok()) {
            Some(on) => policy.on_duplicate = Some(on),
            None => {
                let found = v
                    .as_str()
                    .map_or_else(|| v.kind().to_owned(), |s| format!("`{s}`"));
                diags.push(
                    Diagnostic::error(
                        crate::codes::INVALID_FIELD,
                        format!("`on_duplicate` of {what} must be `run`, `reuse` or `refuse`, found {found}"),
                    )
                    .at(v.span, "expected `run`, `reuse` or `refuse`")
                    .help(match closest(v.as_str().unwrap_or(""), OnDuplicate::NAMES.iter().copied()) {
                        Some(near) => format!("did you mean `on_duplicate: {near}`?"),
                        None => "`run` runs every call; `reuse` answers a repeat with the first call's result; `refuse` tells the model the same call already ran".to_owned(),
                    }),
                );
            }
        }
    }
    if let Some((_, v)) = field("duplicate_window") {
        match v.as_str().map(parse_timeout) {
            Some(Ok(window)) => policy.duplicate_window_ms = Some(window.as_millis() as u64),
            _ => diags.push(
                Diagnostic::error(
                    crate::codes::INVALID_TIMEOUT,
                    format!("the `duplicate_window` of {what} is not a duration of at most 1h"),
                )
                .at(v.span, "not a duration")
                .help(format!(
                    "write {TIMEOUT_GRAMMAR}, e.g. `duplicate_window: 2m`"
                )),
            ),
        }
    }
    contradictions(field, policy, annotations, what, diags);
}

fn contradictions<'n>(
    field: &dyn Fn(&str) -> Option<(&'n Node, &'n Node)>,
    policy: &CallPolicy,
    annotations: &Annotations,
    what: &str,
    diags: &mut Diagnostics,
) {
    let destructive_once =
        annotations.idempotent == Some(false) && annotations.destructive == Some(true);
    // The author says a repeat is a re-issue by bounding how soon it must come.
    let window_given = field("duplicate_window").is_some();
    if let (Some(OnDuplicate::Reuse), true, false, Some((_, v))) = (
        policy.on_duplicate,
        destructive_once,
        window_given,
        field("on_duplicate"),
    ) {
        diags.push(
            Diagnostic::warning(
                crate::codes::DUPLICATE_POLICY_CONTRADICTION,
                format!("{what} answers a repeated call with the first call's result, but it is destructive and not idempotent"),
            )
            .at(v.span, "a deliberate second call within the window would do nothing, and the model would be told it succeeded")
            .help("use `on_duplicate: refuse` (the model is told the call already ran and can ask the user), or, if a repeat that soon is always the model re-issuing the call, say how soon with `duplicate_window` (e.g. `duplicate_window: 15s`)"),
        );
    }
    if let (Some(OnDuplicate::Run), Some(false), Some((_, v))) = (
        policy.on_duplicate,
        annotations.idempotent,
        field("on_duplicate"),
    ) {
        diags.push(
            Diagnostic::warning(
                crate::codes::DUPLICATE_POLICY_CONTRADICTION,
                format!("{what} runs every repeated call, but it says calling it twice does more than once"),
            )
            .at(v.span, "a model re-issuing this call after an interruption runs it twice")
            .help("use `on_duplicate: reuse` (a repeat gets the first result) or `refuse`, or remove `on_duplicate` for the default (`reuse`, or `refuse` when it is destructive)"),
        );
    }
    let runs_anyway = policy
        .on_duplicate
        .unwrap_or_else(|| OnDuplicate::default_for(annotations))
        == OnDuplicate::Run;
    // An `on_duplicate` that could not be read is reported already; what it meant is unknown.
    let policy_read = field("on_duplicate").is_none() || policy.on_duplicate.is_some();
    if let (true, true, Some((key, _))) = (runs_anyway, policy_read, field("duplicate_window")) {
        diags.push(
            Diagnostic::warning(
                crate::codes::DUPLICATE_WINDOW_UNUSED,
                format!("{what} has a `duplicate_window` but every call of it runs"),
            )
            .at(key.span, "no duplicate is looked for")
            .help(
                "add `on_duplicate: reuse` or `on_duplicate: refuse`, or remove `duplicate_window`",
            ),
        );
    }
}
