//! `McpTools` as the client the official MCP conformance suite drives
//! (`conformance client --command mcp-conformance-client`, run by `tests/mcp-conformance`): it
//! connects to the URL the suite appends, lists the server's tools, calls each with arguments
//! made from its `inputSchema` (its required properties, each a plain value of its type) and
//! exits 0 when every step worked. The scenario (`MCP_CONFORMANCE_SCENARIO`) chooses only how
//! the client signs in (the `auth/*` scenarios' protected servers): an OAuth login through a
//! scripted user, a pre-registered client or client credentials from the scenario's context
//! (`MCP_CONFORMANCE_CONTEXT`); the rest is what any `McpTools` user's code does.

use std::process::ExitCode;

use serde_json::{json, Map, Value};
use toolc_runtime::mcp::client_oauth::{Enterprise, OAuthClient};
use toolc_runtime::mcp::McpTools;
use toolc_runtime::Registry;

/// Where the suite's authorization servers send the user back to; nothing listens there: the
/// scripted user reads the redirect instead of following it.
const REDIRECT_URI: &str = "http://localhost:3000/callback";
/// The client ID metadata document the `basic-cimd` scenario expects as the client ID.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

fn main() -> ExitCode {
    let Some(url) = std::env::args().nth(1) else {
        eprintln!("usage: mcp-conformance-client URL");
        return ExitCode::FAILURE;
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or(Value::Null);
    mcp_server::run(None, async move {
        let calls = run(&url, &scenario, &context)
            .await
            .map_err(|e| format!("{scenario}: {e}"))?;
        eprintln!("{scenario}: {calls} calls made");
        Ok(())
    })
}

async fn run(url: &str, scenario: &str, context: &Value) -> Result<usize, String> {
    let tools = match oauth(scenario, context)? {
        Some(oauth) => McpTools::connect_oauth(url, oauth).await,
        None => McpTools::connect_http(url).await,
    }
    .map_err(|e| e.to_string())?;
    let registry = tools
        .merge_into(Registry::builder(), &[])
        .map_err(|e| e.to_string())?
        .build()
        .map_err(|e| e.to_string())?;
    let mut calls = 0;
    for definition in tools.definitions() {
        let arguments = example(&definition.parameters);
        // A tool's own failure is its answer; only a failure to reach it is the client's.
        match registry.call_value(&definition.name, arguments).await {
            Ok(_) => {}
            Err(e) if e.code() == Some("tool_error") => {}
            Err(e) => return Err(format!("calling `{}`: {e}", definition.name)),
        }
        calls += 1;
    }
    Ok(calls)
}

/// How the client signs in to the scenario's server: `None` for the scenarios without auth.
fn oauth(scenario: &str, context: &Value) -> Result<Option<OAuthClient>, String> {
    if !scenario.starts_with("auth/") {
        return Ok(None);
    }
    let field = |name: &str| {
        context
            .get(name)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| format!("the scenario's context has no `{name}`"))
    };
    Ok(Some(match scenario {
        "auth/client-credentials-basic" => {
            OAuthClient::client_secret(field("client_id")?, field("client_secret")?)
        }
        "auth/client-credentials-jwt" => {
            let algorithm = match field("signing_algorithm")?.as_str() {
                "ES256" => toolc_runtime::mcp::client_oauth::JwtSigningAlgorithm::ES256,
                "ES384" => toolc_runtime::mcp::client_oauth::JwtSigningAlgorithm::ES384,
                "RS256" => toolc_runtime::mcp::client_oauth::JwtSigningAlgorithm::RS256,
                other => return Err(format!("no signing algorithm `{other}`")),
            };
            OAuthClient::private_key_jwt(field("client_id")?, field("private_key_pem")?, algorithm)
        }
        "auth/cross-app-access-complete-flow" => OAuthClient::enterprise(Enterprise {
            idp_issuer: field("idp_issuer")?,
            idp_token_endpoint: field("idp_token_endpoint")?,
            idp_client_id: field("idp_client_id")?,
            idp_client_secret: None,
            id_token: field("idp_id_token")?,
            client_id: field("client_id")?,
            client_secret: field("client_secret")?,
        }),
        _ => {
            let mut oauth = OAuthClient::authorization_code(REDIRECT_URI, scripted_user)
                .client_name("toolc conformance client")
                .client_metadata_url(CLIENT_METADATA_URL);
            if scenario == "auth/pre-registration" {
                oauth = oauth.preregistered(field("client_id")?, Some(field("client_secret")?));
            }
            oauth
        }
    }))
}

/// The user of the suite's authorization servers, which agree at once: the authorization URL
/// is fetched, and its redirect (the `Location` it answers with) is the login's result.
async fn scripted_user(authorization_url: String) -> Result<String, String> {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| e.to_string())?;
    let response = http
        .get(&authorization_url)
        .send()
        .await
        .map_err(|e| format!("the authorization URL did not answer: {e}"))?;
    response
        .headers()
        .get("location")
        .and_then(|l| l.to_str().ok())
        .map(str::to_owned)
        .ok_or_else(|| {
            format!(
                "the authorization URL answered {} without a redirect",
                response.status()
            )
        })
}

/// Arguments that satisfy a plain object schema: each required property with a value of its
/// type.
fn example(schema: &Value) -> Value {
    let mut arguments = Map::new();
    let properties = schema.get("properties").and_then(Value::as_object);
    let required = schema.get("required").and_then(Value::as_array);
    for name in required.into_iter().flatten().filter_map(Value::as_str) {
        let property = properties.and_then(|p| p.get(name)).unwrap_or(&Value::Null);
        arguments.insert(name.to_owned(), value_of(property));
    }
    Value::Object(arguments)
}

fn value_of(schema: &Value) -> Value {
    if let Some(first) = schema.get("enum").and_then(|e| e.get(0)) {
        return first.clone();
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("number") | Some("integer") => json!(1),
        Some("boolean") => json!(true),
        Some("array") => json!([]),
        Some("object") => example(schema),
        _ => json!("test"),
    }
}
