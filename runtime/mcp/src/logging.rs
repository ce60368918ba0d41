//! MCP logging (`logging/setLevel`, `notifications/message`) with the runtime's `tracing` as the
//! source: an event recorded while a call runs (by its executor, or by the runtime about it)
//! goes to the MCP client that made the call, once that client has set a level the event
//! meets. Nothing of one client's calls reaches another.
//!
//! The route from an event to its client is a span: [`McpServer`](super::McpServer) runs each
//! call of a client that set a level inside a `mcp_logging` span whose `route` field names the
//! client's sink, and [`log_layer`] (added to the application's subscriber) finds that span
//! above the event. Without the layer, `logging/setLevel` is accepted and nothing is sent.

// MCP logging is deprecated by SEP-2577 (rmcp marks its types so), but every protocol version
// served here still has it, and hosts and the conformance suite use it.
#![allow(deprecated)]

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use rmcp::model::LoggingLevel;
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// One log message on its way to a client.
#[derive(Debug)]
pub(super) struct Message {
    pub(super) level: LoggingLevel,
    pub(super) logger: String,
    pub(super) data: Value,
}

/// Where the events of one call go: the lowest level its client wants, and the sender.
struct Sink {
    threshold: LoggingLevel,
    tx: mpsc::UnboundedSender<Message>,
}

/// The sinks of the calls running now, by route. A route lives exactly as long as its call
/// ([`Route`] removes it on drop).
fn sinks() -> &'static Mutex<HashMap<u64, Sink>> {
    static SINKS: OnceLock<Mutex<HashMap<u64, Sink>>> = OnceLock::new();
    SINKS.get_or_init(Mutex::default)
}

/// A call's route: registered while the call runs, removed when it is dropped.
pub(super) struct Route(u64);

impl Route {
    /// Registers a sink for events of at least `threshold`.
    pub(super) fn open(threshold: LoggingLevel) -> (Route, mpsc::UnboundedReceiver<Message>) {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::unbounded_channel();
        sinks()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, Sink { threshold, tx });
        (Route(id), rx)
    }

    /// The span a call runs in so that [`log_layer`] finds its route.
    pub(super) fn span(&self) -> tracing::Span {
        tracing::info_span!("mcp_logging", route = self.0)
    }
}

impl Drop for Route {
    fn drop(&mut self) {
        sinks()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.0);
    }
}

/// MCP's severity of a `tracing` level (MCP has no trace: it is debug).
fn mcp_level(level: &tracing::Level) -> LoggingLevel {
    match *level {
        tracing::Level::ERROR => LoggingLevel::Error,
        tracing::Level::WARN => LoggingLevel::Warning,
        tracing::Level::INFO => LoggingLevel::Info,
        _ => LoggingLevel::Debug,
    }
}

/// Severity order, least severe first (RFC 5424 as MCP uses it).
pub(super) fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// The `tracing_subscriber` layer that forwards the events of MCP calls to their clients:
/// `tracing_subscriber::registry().with(fmt::layer()).with(toolc_runtime::mcp::log_layer())`.
pub fn log_layer() -> McpLogLayer {
    McpLogLayer { _private: () }
}

/// See [`log_layer`].
#[derive(Debug)]
pub struct McpLogLayer {
    _private: (),
}

/// The route a `mcp_logging` span carries, kept in the span's extensions.
struct RouteOf(u64);

struct RouteVisitor(Option<u64>);

impl Visit for RouteVisitor {
    fn record_u64(&mut self, field: &Field, value: u64) {
        if field.name() == "route" {
            self.0 = Some(value);
        }
    }

    fn record_debug(&mut self, _: &Field, _: &dyn std::fmt::Debug) {}
}

/// An event's message and fields as the `data` of a log message: the message alone when it
/// has no fields, else an object with `message` and each field.
#[derive(Default)]
struct DataVisitor {
    message: Option<String>,
    fields: Map<String, Value>,
}

impl Visit for DataVisitor {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, Value::String(value.to_owned()));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, Value::from(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, Value::from(value));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, Value::Bool(value));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let mut text = String::new();
        let _ = write!(text, "{value:?}");
        self.put(field, Value::String(text));
    }
}

impl DataVisitor {
    fn put(&mut self, field: &Field, value: Value) {
        match (field.name(), value) {
            ("message", Value::String(text)) => self.message = Some(text),
            (name, value) => {
                self.fields.insert(name.to_owned(), value);
            }
        }
    }

    fn into_data(self) -> Value {
        match (self.message, self.fields.is_empty()) {
            (Some(message), true) => Value::String(message),
            (message, _) => {
                let mut object = self.fields;
                if let Some(message) = message {
                    object.insert("message".into(), Value::String(message));
                }
                Value::Object(object)
            }
        }
    }
}

impl<S> Layer<S> for McpLogLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if attrs.metadata().name() != "mcp_logging" {
            return;
        }
        let mut visitor = RouteVisitor(None);
        attrs.record(&mut visitor);
        if let (Some(route), Some(span)) = (visitor.0, ctx.span(id)) {
            span.extensions_mut().insert(RouteOf(route));
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let Some(scope) = ctx.event_scope(event) else {
            return;
        };
        let Some(route) = scope
            .into_iter()
            .find_map(|span| span.extensions().get::<RouteOf>().map(|r| r.0))
        else {
            return;
        };
        let level = mcp_level(event.metadata().level());
        let tx = {
            let sinks = sinks().lock().unwrap_or_else(|e| e.into_inner());
            match sinks.get(&route) {
                Some(sink) if rank(level) >= rank(sink.threshold) => sink.tx.clone(),
                _ => return,
            }
        };
        let mut data = DataVisitor::default();
        event.record(&mut data);
        let _ = tx.send(Message {
            level,
            logger: event.metadata().target().to_owned(),
            data: data.into_data(),
        });
    }
}

/// A client's chosen level, shared by its session's calls (`None`: it has not asked for logs).
pub(super) type LevelSetting = Arc<Mutex<Option<LoggingLevel>>>;
