//! `cargo run -p chat-loop -- [--api chat|anthropic] [--stream]`
//!
//! Starts a scripted fake provider on 127.0.0.1, then runs one conversation against it: the model
//! calls server and client tools in parallel, the results go back in the provider's format, and
//! the model answers.

use std::process::ExitCode;
use std::sync::Arc;

use chat_loop::fake_provider::FakeProvider;
use chat_loop::{converse, load_tools, manifest_path, start_browser, Api};
use toolc_runtime::chat::TurnRunner;

const USAGE: &str = "usage: chat-loop [--api chat|anthropic] [--stream]";

#[tokio::main]
async fn main() -> ExitCode {
    let mut api = Api::Chat;
    let mut stream = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--api" => match args.next().as_deref().and_then(Api::parse) {
                Some(a) => api = a,
                None => {
                    eprintln!("{USAGE}");
                    return ExitCode::from(2);
                }
            },
            "--stream" => stream = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            other => {
                eprintln!("unknown argument `{other}`\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    let tools = match load_tools(&manifest_path()) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let provider = match FakeProvider::start().await {
        Ok(p) => p,
        Err(e) => {
            eprintln!("cannot start the fake provider: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (client, browser) = start_browser();
    let runner = TurnRunner::new(tools.registry.clone()).with_client(Arc::new(client));
    println!(
        "fake provider on http://{} ({api:?}, stream: {stream})",
        provider.addr
    );
    let question = "I want to return my order 12345. How?";
    match converse(
        &provider.addr.to_string(),
        api,
        stream,
        &tools,
        &runner,
        question,
        4,
    )
    .await
    {
        Ok(conversation) => {
            for r in &conversation.results {
                let mark = if r.is_error() { "error" } else { "ok" };
                println!(
                    "  {} {} [{mark}] -> {}",
                    r.call.call_id, r.call.name, r.output
                );
            }
            if let Ok(seen) = browser.lock() {
                for (name, args) in seen.iter() {
                    println!("  browser got {name} {args}");
                }
            }
            println!(
                "model ({} requests): {}",
                conversation.requests, conversation.answer
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("conversation failed: {e}");
            ExitCode::FAILURE
        }
    }
}
