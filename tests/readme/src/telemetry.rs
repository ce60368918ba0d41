//! docs/tracing.md, "Tracing": the runtime's spans exported to OpenTelemetry.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanExporter};
use tracing_subscriber::prelude::*;
use tracing_subscriber::EnvFilter;

// `exporter` is yours: `otlp_exporter(..)?` (below) for a collector, or any other
// `SpanExporter` (the tests give an in-memory one).
pub fn init_tracing(exporter: impl SpanExporter + 'static) -> SdkTracerProvider {
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter) // `with_batch_exporter` in production
        .build();
    // `RUST_LOG` if set, else `info`: toolc's spans are INFO.
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::registry()
        .with(filter)
        .with(tracing_subscriber::fmt::layer())
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("voice-relay")))
        .init();
    provider // call `provider.shutdown()` before exiting, to flush the last spans
}

use opentelemetry_otlp::{ExporterBuildError, WithExportConfig as _};

// A collector over OTLP/HTTP, `http://localhost:4318/v1/traces` (features `http-proto` and
// `reqwest-blocking-client`); over gRPC, the `grpc-tonic` feature and `.with_tonic()`.
pub fn otlp_exporter(
    endpoint: &str,
) -> Result<opentelemetry_otlp::SpanExporter, ExporterBuildError> {
    // With toolc-runtime's `catalog` feature in the build, reqwest has no default TLS crypto
    // provider: install ring's (nothing happens when one is installed already).
    let _ = rustls::crypto::ring::default_provider().install_default();
    opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(endpoint)
        .build()
}
