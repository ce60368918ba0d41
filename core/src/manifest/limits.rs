//! The manifest's load and failure policy (`rate_limit`, `retry`), and the rule between `retry`
//! and the tool's own hints: only a tool that is safe to repeat is retried.

use super::*;
use crate::definition::{RateLimit, RetryPolicy};

/// The fields a `retry` mapping may have.
pub const RETRY_FIELDS: &[&str] = &["attempts", "backoff", "on"];

/// Reads `rate_limit` and `retry` into `policy`. Called after `annotations` are read, since a
/// retry needs the tool to say it is idempotent (or read-only).
pub(super) fn parse<'n>(
    field: &dyn Fn(&str) -> Option<(&'n Node, &'n Node)>,
    policy: &mut CallPolicy,
    annotations: &Annotations,
    location: Location,
    what: &str,
    diags: &mut Diagnostics,
) {
    if let Some((_, v)) = field("rate_limit") {
        match v.as_str().map(RateLimit::parse) {
            Some(Ok(limit)) => policy.rate_limit = Some(limit),
            Some(Err(why)) => diags.push(
                Diagnostic::error(
                    crate::codes::INVALID_RATE_LIMIT,
                    format!("invalid `rate_limit` for {what}: {why}"),
                )
                .at(
                    v.span,
                    "expected calls/window, optionally `per principal` or `per conversation`",
                )
                .help(RATE_LIMIT_HELP),
            ),
            None => diags.push(
                Diagnostic::error(
                    crate::codes::INVALID_RATE_LIMIT,
                    format!(
                        "`rate_limit` of {what} must be a string, found {}",
                        v.kind()
                    ),
                )
                .at(v.span, "expected a string such as `10/min`")
                .help(RATE_LIMIT_HELP),
            ),
        }
    }
    let Some((key, v)) = field("retry") else {
        return;
    };
    let Some(retry) = parse_retry(v, what, diags) else {
        return;
    };
    if location == Location::Client {
        diags.push(
            Diagnostic::error(
                crate::codes::SERVER_ONLY_FIELD,
                format!("{what} is a client tool and has a `retry`"),
            )
            .at(key.span, "only a server tool's runs are retried")
            .help("remove `retry`; the browser's handler can retry on its own"),
        );
        return;
    }
    let safe = annotations.idempotent == Some(true) || annotations.read_only == Some(true);
    if !safe {
        diags.push(
            Diagnostic::error(
                crate::codes::RETRY_NOT_IDEMPOTENT,
                format!("{what} has a `retry` but does not say it is safe to repeat"),
            )
            .at(key.span, "a retried run may do its work twice")
            .help("if calling it twice with the same arguments does nothing more than once, say so with `annotations: { idempotent: true }` (or `read_only: true`); otherwise remove `retry`"),
        );
        return;
    }
    policy.retry = Some(retry);
}

const RATE_LIMIT_HELP: &str = "write calls per window, such as `10/min`, `100/day per principal` or `5/min per conversation` (windows: s, min, h, day, or a count of them: `3/10s`)";

fn parse_retry(v: &Node, what: &str, diags: &mut Diagnostics) -> Option<RetryPolicy> {
    let Some(entries) = v.as_map() else {
        diags.push(
            Diagnostic::error(
                crate::codes::INVALID_RETRY,
                format!("`retry` of {what} must be a mapping, found {}", v.kind()),
            )
            .at(v.span, "expected a mapping")
            .help("write `retry: { attempts: 3, backoff: 200ms, on: [timeout, tool_failed] }`"),
        );
        return None;
    };
    let mut ok = true;
    for (k, _) in entries {
        let name = k.as_str().unwrap_or("");
        if !RETRY_FIELDS.contains(&name) {
            ok = false;
            diags.push(
                Diagnostic::error(
                    crate::codes::INVALID_RETRY,
                    format!("`retry` of {what} has an unknown field `{name}`"),
                )
                .at(k.span, "not a field of `retry`")
                .help(match closest(name, RETRY_FIELDS.iter().copied()) {
                    Some(near) => format!("did you mean `{near}`?"),
                    None => "`retry` takes `attempts`, `backoff` and `on`".to_owned(),
                }),
            );
        }
    }
    let mut retry = RetryPolicy {
        attempts: 0,
        backoff_ms: RetryPolicy::DEFAULT_BACKOFF_MS,
        on_timeout: true,
        on_tool_failed: true,
    };
    match v.get("attempts") {
        None => {
            ok = false;
            diags.push(
                Diagnostic::error(
                    crate::codes::INVALID_RETRY,
                    format!("`retry` of {what} has no `attempts`"),
                )
                .at(v.span, "how many runs in all?")
                .help("add `attempts: 3` (runs in all, the first included)"),
            );
        }
        Some((_, n)) => match match &n.value {
            Value::Number(x) => x.as_u64(),
            _ => None,
        } {
            Some(a) if (2..=u64::from(RetryPolicy::MAX_ATTEMPTS)).contains(&a) => {
                retry.attempts = a as u32
            }
            _ => {
                ok = false;
                diags.push(
                    Diagnostic::error(
                        crate::codes::INVALID_RETRY,
                        format!(
                            "`retry.attempts` of {what} must be a whole number from 2 to {}",
                            RetryPolicy::MAX_ATTEMPTS
                        ),
                    )
                    .at(n.span, "runs in all, the first included")
                    .help("write `attempts: 3` for a first run and up to two retries"),
                );
            }
        },
    }
    if let Some((_, b)) = v.get("backoff") {
        match b.as_str().map(parse_timeout) {
            Some(Ok(d)) => retry.backoff_ms = d.as_millis() as u64,
            _ => {
                ok = false;
                diags.push(
                    Diagnostic::error(
                        crate::codes::INVALID_RETRY,
                        format!("`retry.backoff` of {what} is not a duration of at most 1h"),
                    )
                    .at(b.span, "not a duration")
                    .help(format!("write {TIMEOUT_GRAMMAR}, e.g. `backoff: 200ms`")),
                );
            }
        }
    }
    if let Some((_, on)) = v.get("on") {
        let items = match on.as_seq() {
            Some(items) if !items.is_empty() => items,
            _ => {
                diags.push(
                    Diagnostic::error(
                        crate::codes::INVALID_RETRY,
                        format!("`retry.on` of {what} must be a non-empty list of failures"),
                    )
                    .at(on.span, "expected a list")
                    .help("write `on: [timeout, tool_failed]`, or leave `on` out to retry both"),
                );
                return None;
            }
        };
        retry.on_timeout = false;
        retry.on_tool_failed = false;
        for item in items {
            match item.as_str() {
                Some("timeout") => retry.on_timeout = true,
                Some("tool_failed") => retry.on_tool_failed = true,
                other => {
                    ok = false;
                    diags.push(
                        Diagnostic::error(
                            crate::codes::INVALID_RETRY,
                            format!(
                                "`retry.on` of {what} names {}, which is not a retryable failure",
                                other.map_or_else(|| item.kind().to_owned(), |s| format!("`{s}`"))
                            ),
                        )
                        .at(item.span, "expected `timeout` or `tool_failed`")
                        .help(match closest(other.unwrap_or(""), RetryPolicy::FAILURES.iter().copied()) {
                            Some(near) => format!("did you mean `{near}`?"),
                            None => "only a run that timed out (`timeout`) or whose handler returned an error (`tool_failed`) is retried; invalid arguments and refusals never are".to_owned(),
                        }),
                    );
                }
            }
        }
    }
    ok.then_some(retry)
}
