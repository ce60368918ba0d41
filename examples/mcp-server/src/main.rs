//! The support desk of `manifests/support.tools.yaml` as an MCP server: `mcp-server` serves one
//! client over stdio (what desktop hosts and IDEs launch), `mcp-server --http 127.0.0.1:8790`
//! serves streamable HTTP at `/mcp`. Only the server tools are listed: the manifest's client
//! tools run in a browser, which an MCP host does not have.

use std::process::ExitCode;
use std::sync::Arc;

use build_script_example::{support, SupportDesk};
use clap::Parser;
use toolc_runtime::mcp::McpServer;

#[derive(Debug, Parser)]
#[command(name = "mcp-server", about = "The support desk's tools over MCP.")]
struct Args {
    /// Serve streamable HTTP at `http://ADDR/mcp` instead of stdio.
    #[arg(long, value_name = "ADDR")]
    http: Option<String>,
}

fn main() -> ExitCode {
    mcp_server::run(None, run(Args::parse()))
}

async fn run(args: Args) -> Result<(), String> {
    let registry = support::registry(SupportDesk::new()).map_err(|e| e.to_string())?;
    let server = McpServer::new(Arc::new(registry)).with_implementation("support-desk", "1.0.0");
    match args.http {
        None => server.serve_stdio().await.map_err(|e| e.to_string()),
        Some(addr) => {
            let app = axum::Router::new().nest_service("/mcp", server.streamable_http());
            let listener = tokio::net::TcpListener::bind(&addr)
                .await
                .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
            let bound = listener.local_addr().map_err(|e| e.to_string())?;
            // The first line is machine-readable: tests read the bound address from it.
            println!("listening on http://{bound}/mcp");
            axum::serve(listener, app).await.map_err(|e| e.to_string())
        }
    }
}
