//! A realtime relay: browsers connect at `ws://LISTEN/`, each gets its own connection to the
//! model, the server tools run here (the support desk's, and a remote catalog's), the client tools
//! of any manifest go to the browser. See the README.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use toolc_runtime::catalog::{CatalogClient, LiveCatalog};
use toolc_runtime::engine::{OnUnavailable, RedisDuplicates, RedisLimiter};
use toolc_runtime::markers::MarkerTag;
use toolc_runtime::realtime::MarkerFlowConfig;
use toolc_runtime::realtime::{gpt_live, Naming, RealtimeProvider, Scheduling};
use toolc_runtime::relay::{Relay, RelayConfig, StaticTokens};
use toolc_runtime::Registry;

mod sideband;
mod tools;

#[derive(Debug, Parser)]
#[command(
    name = "realtime-relay",
    about = "Relay browsers to a realtime model, running server tools in-process."
)]
struct Args {
    /// Address browsers connect to (`ws://LISTEN/`). Port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:8787")]
    listen: String,
    /// The realtime model API: `openai` (Realtime GA), `gemini-live` (the Gemini API's Live),
    /// `vertex-live` (Live on Vertex AI) or `gpt-live` (OpenAI's Live API with Responses
    /// delegation). The browser protocol is the same for all.
    #[arg(long, default_value = "openai")]
    provider: RealtimeProvider,
    /// The model's websocket URL (default: the provider's public endpoint). With `--sideband`,
    /// the base the sideband attaches under (`{URL}/{session id}/attach`).
    #[arg(long)]
    upstream: Option<String>,
    /// GPT-Live: pages open their session over WebRTC (`POST /gpt-live/sessions` with their SDP
    /// offer, answered with the SDP answer and a ticket) and connect their websocket with
    /// `?sideband=TICKET`; the relay attaches to the session as a sideband and serves the tools
    /// from there. Audio never passes through the relay.
    #[arg(long)]
    sideband: bool,
    /// With `--sideband`: the base of OpenAI's REST API, where sessions are opened
    /// (`POST {URL}/live/sessions`).
    #[arg(
        long,
        value_name = "URL",
        default_value = "https://api.openai.com/v1",
        requires = "sideband"
    )]
    live_api: String,
    /// Live: the model named in `setup` (default `models/gemini-3.8-live`; on Vertex AI a
    /// resource name, `projects/P/locations/L/publishers/google/models/M`).
    #[arg(long, value_name = "MODEL")]
    model: Option<String>,
    /// Gemini Live: when the model takes up a `mode: async` tool's final result:
    /// `when_idle` (after it finishes speaking), `interrupt` (at once) or `silent` (into the
    /// context only).
    #[arg(long, default_value = "when_idle")]
    async_scheduling: Scheduling,
    /// Name of the environment variable that holds the API key (sent upstream only, never to a
    /// browser: `Authorization: Bearer KEY` to OpenAI and Vertex AI (an access token there),
    /// `x-goog-api-key: KEY` to Gemini).
    #[arg(long, value_name = "NAME")]
    api_key_env: Option<String>,
    /// Tool manifests (files or folders of `*.tools.yaml`); repeatable. Their client tools go to
    /// the browser and the `--catalog`'s tools run through it; the only server tools this
    /// binary executes itself are the support desk's (`search_help_articles`,
    /// `get_order_status`). For server tools of your own, write the relay program of the
    /// README's "A relay for your own tools" (ten lines around your registry).
    #[arg(long, num_args = 1.., default_values_os_t = [default_manifest()])]
    manifest: Vec<PathBuf>,
    /// Message names towards the browser: `function_call` or `tool.call`.
    #[arg(long, default_value = "function_call")]
    naming: String,
    /// Milliseconds a waiting client call may be open before the model says a filler phrase;
    /// 0 turns fillers off.
    #[arg(long, default_value_t = 1500)]
    filler_delay_ms: u64,
    /// Text-marker tool calls: scan the model's text for `<<<TAG:NAME=tool,ARGUMENTS={...}>>>`,
    /// hide the markers from the browser, run the calls and answer with a second response; the
    /// tool catalog is declared in the session instructions.
    #[arg(long, value_name = "TAG")]
    markers: Option<String>,
    /// A remote tool catalog (`http(s)://HOST[:PORT][/PATH]`): its tools (`GET URL/tools`) join
    /// the registry as server tools executed through it (`POST URL/execute`).
    #[arg(long, value_name = "URL")]
    catalog: Option<String>,
    /// Name of the environment variable holding the `Authorization` value (e.g. `Bearer ...`)
    /// forwarded to the catalog; without it, tools that require authorization are refused.
    #[arg(long, value_name = "NAME", requires = "catalog")]
    catalog_auth_env: Option<String>,
    /// A file of `TOKEN USER_ID` lines: a browser must present one of the tokens, as
    /// `Authorization: Bearer TOKEN` or as the `toolc.bearer.TOKEN` subprotocol, and is that
    /// user for every executor. Without it the relay listens only on loopback.
    #[arg(long, value_name = "FILE")]
    auth_tokens: Option<PathBuf>,
    /// An origin (`https://app.example.com`) whose pages may open sessions; repeatable. Without
    /// it any origin may.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    allow_origins: Vec<String>,
    /// Listen on a non-loopback address without `--auth-tokens`: anyone who reaches the port
    /// gets a model session paid for with your API key. Only behind a proxy that authenticates.
    #[arg(long, conflicts_with = "auth_tokens")]
    insecure_no_auth: bool,
    /// On SIGTERM (a deploy), how long sessions may take to finish their calls in flight
    /// before they are closed; a second SIGTERM ends the process at once.
    #[arg(long, default_value_t = 30)]
    drain_secs: u64,
    /// How long a session whose page's connection dropped waits for the page to resume with
    /// its token (`?resume=TOKEN`); 0 ends the session when its page leaves.
    #[arg(long, default_value_t = 30)]
    resume_grace_secs: u64,
    /// This relay's name in resume tokens, for a balancer in front of several relays to route
    /// a resuming page to the one that holds its session (default: random).
    #[arg(long, value_name = "NAME")]
    relay_id: Option<String>,
    /// Export the spans (a session, its responses, an `execute_tool` span per call, as the
    /// OpenTelemetry GenAI conventions name them) to an OTLP/HTTP collector, e.g.
    /// `http://localhost:4318/v1/traces`. Arguments and results are left out unless
    /// `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`.
    #[arg(long, value_name = "URL")]
    otlp_endpoint: Option<String>,
    /// Count the tools' `rate_limit`s in this Redis (`redis://HOST:PORT[/DB]`), shared by every
    /// relay that uses it: a user's `per principal` limit holds across the fleet. It also keeps
    /// the first calls of the conversations pages name (`?conversation=ID`, with
    /// `--auth-tokens`), so a repeat after the page reconnected to any relay gets the first
    /// call's result or is refused, as the tool's `on_duplicate` says. Without it, each relay
    /// counts alone, and remembers calls per session, in memory.
    #[arg(long, value_name = "URL")]
    redis: Option<String>,
    /// How long a limit check may wait for Redis before Redis counts as unavailable.
    #[arg(long, value_name = "MS", default_value_t = 250, requires = "redis")]
    redis_timeout_ms: u64,
    /// When Redis is unavailable, run calls of rate-limited tools uncounted (with a warning)
    /// instead of refusing them with a `rate_limit_unavailable` result (the default).
    #[arg(long, requires = "redis")]
    redis_fail_open: bool,
    /// When Redis is unavailable, refuse calls of tools that remember their calls
    /// (`on_duplicate: reuse | refuse`) in named conversations with a
    /// `duplicate_check_unavailable` result, instead of running them as first calls (the
    /// default: a repeat then goes unnoticed across relays, but no tool stops working).
    #[arg(long, requires = "redis")]
    redis_duplicates_fail_closed: bool,
}

fn default_manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../manifests/support.tools.yaml")
}

fn main() -> ExitCode {
    let args = Args::parse();
    let tracer = match init_logging(args.otlp_endpoint.as_deref()) {
        Ok(tracer) => tracer,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let ended = runtime.block_on(run(args));
    if let Some(tracer) = tracer {
        // The last spans go out before the process does.
        let _ = tracer.shutdown();
    }
    match ended {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), String> {
    let tools = load_tools(&args).await?;
    let registry = tools.registry.clone();
    let config = relay_config(&args, tools)?;
    let upstream = config.upstream.clone();
    let sideband_options = args.sideband.then(|| sideband::Options {
        sessions_url: format!("{}/live/sessions", args.live_api.trim_end_matches('/')),
        attach_base: upstream.clone(),
        api_key: config.api_key.clone(),
        session: gpt_live::webrtc_session(
            config.session.session.clone(),
            &config.session.declarations,
        ),
        max_tickets: config.limits.max_sessions,
        max_tickets_per_user: config.limits.max_sessions_per_principal,
    });
    let relay = Relay::bind(&args.listen, registry.clone(), config)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    let sideband = match sideband_options {
        Some(options) => Some(Arc::new(sideband::Sideband::new(
            relay.service().clone(),
            options,
        )?)),
        None => None,
    };
    let addr = relay.local_addr().map_err(|e| e.to_string())?;
    if args.auth_tokens.is_none() && !args.insecure_no_auth && !addr.ip().is_loopback() {
        return Err(format!(
            "refusing to listen on {addr} without authentication: anyone who reaches it would get \
             a model session on your API key. Give --auth-tokens FILE (lines `TOKEN USER_ID`), \
             listen on 127.0.0.1, or pass --insecure-no-auth behind an authenticating proxy"
        ));
    }
    // The first line is machine-readable: tests and scripts read the bound address from it.
    let mut banner = format!(
        "listening on ws://{addr}/\nupstream {upstream} ({})\ntools: {}\n",
        args.provider,
        registry.names().collect::<Vec<_>>().join(", ")
    );
    if let Some(tag) = &args.markers {
        banner.push_str(&format!("markers: {tag}\n"));
    }
    if args.sideband {
        banner.push_str(&format!(
            "sideband: pages open sessions at POST http://{addr}/gpt-live/sessions ({}/live/sessions)\n",
            args.live_api.trim_end_matches('/')
        ));
    }
    banner.push_str(&format!("relay id: {}\n", relay.service().relay_id()));
    if args.redis.is_some() {
        // Not the URL: it may hold a password.
        let failure = if args.redis_fail_open {
            "open"
        } else {
            "closed"
        };
        banner.push_str(&format!("rate limits: in Redis (fail {failure})\n"));
        let failure = if args.redis_duplicates_fail_closed {
            "closed"
        } else {
            "open"
        };
        banner.push_str(&format!(
            "repeats of named conversations: in Redis (fail {failure})\n"
        ));
    }
    banner.push_str(&match &args.auth_tokens {
        Some(path) => format!("auth: bearer tokens from {}\n", path.display()),
        None => "auth: none (every browser that reaches the port gets a session)\n".to_owned(),
    });
    // A server keeps serving when whoever started it stopped reading its output.
    let mut stdout = std::io::stdout();
    let _ = stdout
        .write_all(banner.as_bytes())
        .and_then(|()| stdout.flush());
    let service = relay.service().clone();
    let drain = std::time::Duration::from_secs(args.drain_secs);
    let serve = async move {
        match sideband {
            Some(sideband) => relay.serve_with(sideband.router()).await,
            None => relay.serve().await,
        }
    };
    tokio::select! {
        () = serve => Ok(()),
        signal = terminated() => {
            signal?;
            eprintln!("SIGTERM: draining (up to {drain:?}); a second SIGTERM ends at once");
            tokio::select! {
                () = service.drain(drain) => eprintln!("drained"),
                _ = terminated() => eprintln!("second SIGTERM: ending now"),
            }
            Ok(())
        }
    }
}

/// The next SIGTERM (on Unix; elsewhere, Ctrl-C).
async fn terminated() -> Result<(), String> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term =
            signal(SignalKind::terminate()).map_err(|e| format!("cannot watch SIGTERM: {e}"))?;
        term.recv().await;
        Ok(())
    }
    #[cfg(not(unix))]
    {
        tokio::signal::ctrl_c()
            .await
            .map_err(|e| format!("cannot watch Ctrl-C: {e}"))
    }
}

/// The relay's tools: the manifests' definitions with the support desk's executors, and the
/// `--catalog`'s tools when one is given.
struct Tools {
    registry: Arc<Registry>,
    /// Catalog tools that need the caller's authorization.
    needs_auth: BTreeSet<String>,
    /// The catalog, followed while sessions run.
    live_catalog: Option<Arc<LiveCatalog>>,
}

fn env_value(name: &Option<String>) -> Result<Option<String>, String> {
    match name {
        None => Ok(None),
        Some(name) => std::env::var(name)
            .map(Some)
            .map_err(|_| format!("the environment variable {name} is not set")),
    }
}

async fn load_tools(args: &Args) -> Result<Tools, String> {
    let definitions = toolc_runtime::load_definitions(&args.manifest).map_err(|e| {
        let names: Vec<String> = args
            .manifest
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        format!("cannot load {}:\n{e}", names.join(", "))
    })?;
    let mut builder = tools::builder(definitions.clone());
    let mut needs_auth = BTreeSet::new();
    let mut live_catalog = None;
    if let Some(url) = &args.catalog {
        let authorization = env_value(&args.catalog_auth_env)?;
        let client = CatalogClient::new(url)
            .map_err(|e| format!("--catalog: {e}"))?
            .with_observer(Arc::new(|e| {
                // Code, status and raw answer are for the operator; the model only sees the
                // message.
                tracing::warn!(
                    code = e.code(),
                    status = ?e.status(),
                    raw = e.raw().unwrap_or("-"),
                    "catalog error: {}",
                    e.message()
                );
            }));
        let catalog = Arc::new(client)
            .server_tools()
            .await
            .map_err(|e| format!("cannot read the tool catalog at {url}: {e}"))?;
        for (name, why) in catalog.catalog().skipped() {
            tracing::warn!(tool = %name, "catalog tool left out: {why}");
        }
        needs_auth = catalog
            .catalog()
            .tools()
            .iter()
            .filter(|t| t.requires_auth)
            .map(|t| t.name.clone())
            .collect();
        // Sessions follow the catalog while they run: tools that join it later are called
        // and declared, tools that leave answer with an error (refreshed every TTL).
        let live = LiveCatalog::new(&catalog, authorization.clone());
        live.spawn_refresher();
        live_catalog = Some(live);
        builder = catalog
            .merge_into(builder, &definitions, authorization)
            .map_err(|e| e.to_string())?;
    }
    let registry: Registry = builder.build().map_err(|e| {
        format!(
            "{e}\nthis relay executes the client tools of any manifest and the --catalog's \
             tools; a server tool of your own needs your executor: see \"A relay for your own \
             tools\" in the README"
        )
    })?;
    Ok(Tools {
        registry: Arc::new(registry),
        needs_auth,
        live_catalog,
    })
}

/// The relay's settings from the command line.
fn relay_config(args: &Args, tools: Tools) -> Result<RelayConfig, String> {
    let registry = &tools.registry;
    let naming = Naming::parse(&args.naming).ok_or_else(|| {
        format!(
            "unknown naming `{}` (use function_call or tool.call)",
            args.naming
        )
    })?;
    if args.model.is_some() && !args.provider.is_live() {
        return Err(
            "--model names the Live model; OpenAI's goes in the --upstream URL (`?model=...`)"
                .to_owned(),
        );
    }
    if args.markers.is_some() && args.provider != RealtimeProvider::OpenAi {
        return Err("--markers works with --provider openai only".to_owned());
    }
    if args.sideband && args.provider != RealtimeProvider::GptLive {
        return Err("--sideband works with --provider gpt-live only".to_owned());
    }
    let mut config = RelayConfig::for_provider(registry, args.provider);
    if let Some(upstream) = &args.upstream {
        config = config.upstream(upstream.clone());
    }
    if let Some(model) = &args.model {
        config = config.model(model.clone());
    }
    config.api_key = env_value(&args.api_key_env)?;
    let mut session = (*config.session).clone();
    session.async_scheduling = args.async_scheduling;
    // The relay is attached to a session the page opened: it sends the tools by
    // `session.update`, and no model event goes to the page, which has its own data channel.
    session.sideband = args.sideband;
    session.naming = naming;
    session.filler_delay =
        (args.filler_delay_ms > 0).then(|| Duration::from_millis(args.filler_delay_ms));
    // Notes, refusals and every call are logged through `tracing` (see `init_logging`).
    if let Some(tag) = &args.markers {
        let tag = MarkerTag::new(tag).map_err(|e| format!("--markers: {e}"))?;
        let needs_auth = &tools.needs_auth;
        let flow = MarkerFlowConfig::for_registry(tag, registry, |d| needs_auth.contains(&d.name));
        session.markers = Some(Arc::new(flow));
    }
    if let Some(live) = tools.live_catalog {
        session.live_tools = Some(live);
    }
    if let Some(url) = &args.redis {
        let choice = if args.redis_fail_open {
            OnUnavailable::FailOpen
        } else {
            OnUnavailable::FailClosed
        };
        let limiter = RedisLimiter::open(url)
            .map_err(|e| format!("--redis: {e}"))?
            .with_timeout(Duration::from_millis(args.redis_timeout_ms))
            .on_unavailable(choice);
        session.limiter = Some(Arc::new(limiter));
        let choice = if args.redis_duplicates_fail_closed {
            OnUnavailable::FailClosed
        } else {
            OnUnavailable::FailOpen
        };
        let duplicates = RedisDuplicates::open(url)
            .map_err(|e| format!("--redis: {e}"))?
            .with_timeout(Duration::from_millis(args.redis_timeout_ms))
            .on_unavailable(choice);
        session.duplicates = Some(Arc::new(duplicates));
    }
    config.session = Arc::new(session);
    if let Some(path) = &args.auth_tokens {
        let tokens = StaticTokens::from_file(path).map_err(|e| format!("--auth-tokens {e}"))?;
        config.authorizer = Some(Arc::new(tokens));
    }
    if !args.allow_origins.is_empty() {
        config.allowed_origins = Some(args.allow_origins.clone());
    }
    config.limits.resume_grace = Duration::from_secs(args.resume_grace_secs);
    if let Some(id) = &args.relay_id {
        config.relay_id = id.clone();
    }
    Ok(config)
}

/// Logs to stderr, filtered by `RUST_LOG` (default `info`: sessions, refusals, failed and
/// timed-out calls; `toolc_runtime=debug` adds every note, `toolc::payloads=trace` arguments and
/// results). To export spans to OpenTelemetry instead, add a `tracing-opentelemetry` layer to
/// this subscriber (see the README).
/// Logs to stderr (`RUST_LOG`, default `info`), and with `otlp_endpoint` the spans to an
/// OTLP/HTTP collector as well, batched on the exporter's own thread.
fn init_logging(
    otlp_endpoint: Option<&str>,
) -> Result<Option<opentelemetry_sdk::trace::SdkTracerProvider>, String> {
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_otlp::WithExportConfig as _;
    use tracing_subscriber::prelude::*;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    let Some(endpoint) = otlp_endpoint else {
        tracing_subscriber::registry()
            .with(filter)
            .with(logs)
            .init();
        return Ok(None);
    };
    // The exporter's reqwest client shares the runtime's rustls, built without a default
    // crypto provider: ring, as the runtime's own clients use.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(endpoint)
        .build()
        .map_err(|e| format!("--otlp-endpoint {endpoint}: {e}"))?;
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(
            opentelemetry_sdk::Resource::builder()
                .with_service_name("realtime-relay")
                .build(),
        )
        .build();
    let spans = tracing_opentelemetry::layer().with_tracer(provider.tracer("realtime-relay"));
    tracing_subscriber::registry()
        .with(filter)
        .with(logs)
        .with(spans)
        .init();
    Ok(Some(provider))
}
