//! `cargo run -p voice-agent`: serves the help-centre page at `http://LISTEN/` and relays it to
//! a realtime model. See the README.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use serde_json::{json, Value};
use toolc_runtime::realtime::RealtimeProvider;
use voice_agent::{Model, Options, Server};

#[derive(Debug, Parser)]
#[command(
    name = "voice-agent",
    about = "A realtime support agent whose client tools run in the page you open."
)]
struct Args {
    /// Address of the page and of its relay websocket. Port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: String,
    /// The realtime model API: `openai` (Realtime GA events), `gemini-live` (Live API
    /// messages) or `gpt-live` (OpenAI's Live API with Responses delegation). The scripted model
    /// speaks each; the page's tool protocol is the same.
    #[arg(long, default_value = "openai")]
    provider: RealtimeProvider,
    /// Talk to the model at this websocket URL instead of the scripted one (the default with
    /// the provider's API key set, OPENAI_API_KEY, GEMINI_API_KEY or VERTEX_ACCESS_TOKEN, is its public endpoint).
    #[arg(long, value_name = "URL")]
    upstream: Option<String>,
    /// Play the bundled scripted conversation even when the provider's API key is set.
    #[arg(long, conflicts_with = "upstream")]
    scripted: bool,
    /// Milliseconds between the streamed pieces of the scripted model's text.
    #[arg(long, default_value_t = 40)]
    pace_ms: u64,
    /// With a real model: milliseconds a waiting client call may be open before the model says
    /// one of the tool's filler phrases; 0 turns fillers off. The scripted model has none.
    #[arg(long, default_value_t = 1500)]
    filler_delay_ms: u64,
    /// The folder with the page (index.html, style.css, dist/).
    #[arg(long, value_name = "DIR")]
    web: Option<PathBuf>,
    /// A tool manifest (repeat for several); their server tools must be the three this demo
    /// implements. Default: the support manifest and `refunds.tools.yaml`.
    #[arg(long, value_name = "PATH")]
    manifest: Vec<PathBuf>,
    /// Serve GET /_test/model: what the scripted model received and the relay's counters. For
    /// the browser test; do not turn it on for anything else.
    #[arg(long)]
    test_endpoints: bool,
}

/// What the agent is told when a real model plays it.
const INSTRUCTIONS: &str = "You are the voice support agent of the Northwind Outfitters help \
centre. The customer is looking at the help-centre page. Look answers up with \
search_help_articles before you answer how something works, and order states with \
get_order_status. Show things on the page: scroll_to_section with an article's section, \
highlight_element with a CSS selector (the refund button is #refund-button), fill_form_field for \
the refund form, show_toast for short confirmations. Keep answers short and friendly.";

fn main() -> ExitCode {
    let args = Args::parse();
    let options = match options(&args) {
        Ok(o) => o,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(2);
        }
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
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
    match runtime.block_on(run(options)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn options(args: &Args) -> Result<Options, String> {
    let mut options = Options::new(&args.listen);
    if let Some(web) = &args.web {
        options.web_dir = web.clone();
    }
    if !args.manifest.is_empty() {
        options.manifests = args.manifest.clone();
    }
    options.test_endpoints = args.test_endpoints;
    options.provider = args.provider;
    let api_key = std::env::var(api_key_variable(args.provider))
        .ok()
        .filter(|k| !k.trim().is_empty() && !args.scripted);
    options.model = match (&args.upstream, api_key) {
        (None, None) => Model::Scripted {
            pace: Duration::from_millis(args.pace_ms),
        },
        (url, api_key) => {
            let url = url
                .clone()
                .unwrap_or_else(|| args.provider.default_url().to_owned());
            options.filler_delay =
                (args.filler_delay_ms > 0).then(|| Duration::from_millis(args.filler_delay_ms));
            match args.provider {
                RealtimeProvider::OpenAi => {
                    options
                        .session
                        .insert("instructions".into(), Value::String(INSTRUCTIONS.into()));
                }
                RealtimeProvider::GptLive => {
                    // Frontend instructions (voice, turn-taking); the business rules go to the
                    // delegated backend.
                    options
                        .session
                        .insert("instructions".into(), Value::String(INSTRUCTIONS.into()));
                }
                RealtimeProvider::GeminiLive | RealtimeProvider::VertexLive => {
                    // Live answers in audio; its transcript is what the page shows as text.
                    options.session.insert(
                        "systemInstruction".into(),
                        json!({ "parts": [{ "text": INSTRUCTIONS }] }),
                    );
                    options
                        .session
                        .insert("outputAudioTranscription".into(), json!({}));
                }
            }
            Model::Remote { url, api_key }
        }
    };
    Ok(options)
}

/// The environment variable that holds the provider's API key.
fn api_key_variable(provider: RealtimeProvider) -> &'static str {
    match provider {
        RealtimeProvider::OpenAi | RealtimeProvider::GptLive => "OPENAI_API_KEY",
        RealtimeProvider::GeminiLive => "GEMINI_API_KEY",
        // An OAuth access token (`gcloud auth print-access-token`), sent as a bearer token.
        RealtimeProvider::VertexLive => "VERTEX_ACCESS_TOKEN",
    }
}

async fn run(options: Options) -> Result<(), String> {
    let web_dir = options.web_dir.clone();
    let scripted = matches!(options.model, Model::Scripted { .. });
    let provider = options.provider;
    let server = Server::bind(options).await?;
    let addr = server.local_addr().map_err(|e| e.to_string())?;
    // The first line is machine-readable: the browser test reads the address from it.
    println!("listening on http://{addr}/");
    if scripted {
        println!(
            "model: the bundled scripted conversation in {} messages (set {} for a real one)",
            provider.as_str(),
            api_key_variable(provider)
        );
    } else {
        println!("model: {}", server.upstream());
    }
    println!("tools: {}", server.tool_names().join(", "));
    if !web_dir.join("dist/main.js").is_file() {
        eprintln!(
            "warning: {} has no dist/main.js yet; build the page with `npm ci && npm run build` in that folder",
            web_dir.display()
        );
    }
    server.serve().await;
    Ok(())
}
