//! Spans as the OpenTelemetry GenAI semantic conventions name them, built on `tracing`.
//!
//! Every call runs in a `toolc.call` span that a `tracing-opentelemetry` layer exports as
//! `execute_tool {tool}` (kind internal) with `gen_ai.operation.name = "execute_tool"`,
//! `gen_ai.tool.name`, `gen_ai.tool.call.id`, `gen_ai.tool.type = "function"` and, when it
//! fails, `error.type` and an error status. Its parents are toolc's own: a `toolc.session` per
//! realtime session (`gen_ai.provider.name`, `gen_ai.conversation.id`), a `toolc.response` per
//! model response or Gemini Live batch (`gen_ai.response.id`) and a `toolc.turn` per chat turn;
//! an MCP call's span is a child of whatever span is current. A client tool's span lasts until
//! the browser answers, so the page's time is part of the call.
//!
//! Arguments and results can hold personal data: they are recorded
//! (`gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`) only when the application opts in,
//! with [`capture_payloads`] or the environment variable
//! `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true` (the name OpenTelemetry's GenAI
//! instrumentations read).

use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use tracing::field::Empty;
use tracing::Span;

use crate::dispatch::{CallOutcome, Status, ToolCall};

/// The environment variable that opts in to recording arguments and results on call spans.
pub const CAPTURE_ENV: &str = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";

const UNSET: u8 = 0;
const OFF: u8 = 1;
const ON: u8 = 2;

static CAPTURE: AtomicU8 = AtomicU8::new(UNSET);

/// Opts in (or out) to recording every call's arguments and result on its span, for the whole
/// process; wins over [`CAPTURE_ENV`]. Off by default: they can hold personal data.
pub fn capture_payloads(on: bool) {
    CAPTURE.store(if on { ON } else { OFF }, Ordering::Relaxed);
}

/// Whether call spans record arguments and results: [`capture_payloads`], else [`CAPTURE_ENV`]
/// set to `true` (read once).
pub fn captures_payloads() -> bool {
    match CAPTURE.load(Ordering::Relaxed) {
        ON => true,
        OFF => false,
        _ => {
            let on =
                std::env::var(CAPTURE_ENV).is_ok_and(|v| v.trim().eq_ignore_ascii_case("true"));
            // A racing `capture_payloads` wins: only an unset value is replaced.
            let _ = CAPTURE.compare_exchange(
                UNSET,
                if on { ON } else { OFF },
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
            CAPTURE.load(Ordering::Relaxed) == ON
        }
    }
}

/// The `toolc.call` span of one call, a child of the current span. `location` is where it runs
/// (`server`, `client`, `client_notify`, `server_async`, `mcp`, ...).
pub fn call_span(call: &ToolCall, session: &str, location: &'static str) -> Span {
    let span = tracing::info_span!(
        "toolc.call",
        "otel.name" = %format_args!("execute_tool {}", call.name),
        "otel.kind" = "internal",
        "otel.status_code" = Empty,
        "gen_ai.operation.name" = "execute_tool",
        "gen_ai.tool.name" = %call.name,
        "gen_ai.tool.call.id" = %call.call_id,
        "gen_ai.tool.type" = "function",
        "gen_ai.tool.call.arguments" = Empty,
        "gen_ai.tool.call.result" = Empty,
        "error.type" = Empty,
        tool = %call.name,
        call_id = %call.call_id,
        session = %session,
        location,
        outcome = Empty,
        error = Empty,
        duration_ms = Empty,
    );
    if !span.is_disabled() && captures_payloads() {
        span.record("gen_ai.tool.call.arguments", call.arguments.as_str());
    }
    span
}

/// Records how a call ended on its span.
pub fn record_outcome(span: &Span, outcome: &CallOutcome, took: Duration) {
    span.record("duration_ms", took.as_secs_f64() * 1e3);
    match &outcome.status {
        Status::Ok => {
            span.record("outcome", "ok");
        }
        Status::Acknowledged => {
            span.record("outcome", "acknowledged");
        }
        Status::Failed(error) => {
            let kind = error.kind().as_str();
            span.record("outcome", "error");
            span.record("error", kind);
            span.record("error.type", kind);
            span.record("otel.status_code", "ERROR");
        }
    }
    if !span.is_disabled() && captures_payloads() {
        span.record("gen_ai.tool.call.result", outcome.output.as_str());
    }
}

/// The `toolc.response` span of one model response (OpenAI) or batch of calls (Gemini Live):
/// the parent of its calls' spans, a child of the current span (the session's).
pub fn response_span(response_id: &str) -> Span {
    tracing::info_span!(
        "toolc.response",
        "otel.name" = "realtime response",
        "gen_ai.response.id" = %response_id,
    )
}

/// The `toolc.turn` span of one chat turn's calls.
pub fn turn_span(conversation: &str, calls: usize) -> Span {
    tracing::info_span!(
        "toolc.turn",
        "otel.name" = "tool turn",
        "gen_ai.conversation.id" = %conversation,
        calls,
    )
}

/// The W3C `traceparent` of `span` once exported to OpenTelemetry (feature `otel`), for a page
/// whose own span should join the call's trace; `None` when the span is not sampled or not
/// exported.
#[cfg(feature = "otel")]
pub fn traceparent(span: &Span) -> Option<String> {
    use opentelemetry::trace::TraceContextExt as _;
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;
    let context = span.context();
    let otel_span = context.span();
    let sc = otel_span.span_context();
    sc.is_valid().then(|| {
        format!(
            "00-{}-{}-{:02x}",
            sc.trace_id(),
            sc.span_id(),
            sc.trace_flags().to_u8()
        )
    })
}

/// Without the `otel` feature there is no OpenTelemetry context to hand on.
#[cfg(not(feature = "otel"))]
pub fn traceparent(_span: &Span) -> Option<String> {
    None
}
