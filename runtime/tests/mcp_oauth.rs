//! `McpServer` over streamable HTTP as an OAuth 2.1 resource server: JWT access tokens checked
//! against a JWKS (signature, issuer, audience, expiry, scopes), `401`/`403` with the
//! `WWW-Authenticate` challenges MCP clients read, the protected resource metadata document
//! (RFC 9728), and the token's subject as the calls' principal, seen by an rmcp client on
//! loopback.
// Gated on `mcp` (which the workspace turns on): the dev-dependency on toolc-mcp brings `oauth`.
#![cfg(feature = "mcp")]

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use rmcp::model::CallToolRequestParams;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;
use serde_json::{json, Value};
use toolc_runtime::mcp::oauth::{AccessToken, JwtValidator, ResourceServer};
use toolc_runtime::mcp::McpServer;
use toolc_runtime::{definitions_from_str, executor_fn_with_context, CallContext, Registry};
use tower::ServiceExt as _;

const ISSUER: &str = "https://auth.example.com";
const RESOURCE: &str = "http://localhost/mcp";

const MANIFEST: &str = r#"version: 1
tools:
  - name: whoami
    description: Who the caller is.
    location: server
  - name: wipe
    description: Wipe everything.
    location: server
"#;

/// A signing key and the JWKS that publishes it.
struct Signer {
    key: EncodingKey,
    kid: String,
}

impl Signer {
    fn new(kid: &str) -> (Signer, Jwk) {
        let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let key = EncodingKey::from_ec_der(&pair.serialize_der());
        let mut jwk = Jwk::from_encoding_key(&key, Algorithm::ES256).unwrap();
        jwk.common.key_id = Some(kid.to_owned());
        (
            Signer {
                key,
                kid: kid.to_owned(),
            },
            jwk,
        )
    }

    fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.key).unwrap()
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn claims(sub: &str, scope: &str) -> Value {
    json!({"iss": ISSUER, "aud": RESOURCE, "sub": sub, "scope": scope,
           "exp": now() + 600, "iat": now(), "client_id": "host"})
}

fn registry() -> Arc<Registry> {
    let whoami = executor_fn_with_context(|ctx: CallContext, _args: Value| async move {
        let principal = ctx.principal().expect("a principal");
        let token = principal.data::<AccessToken>().expect("the access token");
        Ok(json!({
            "id": principal.id(),
            "scopes": token.scopes,
            "credential": principal.credential(),
        }))
    });
    let wipe = executor_fn_with_context(|_ctx: CallContext, _args: Value| async move {
        Ok(json!({"wiped": true}))
    });
    Arc::new(
        Registry::builder()
            .definitions(definitions_from_str("a.tools.yaml", MANIFEST).unwrap())
            .executor("whoami", whoami)
            .executor("wipe", wipe)
            .build()
            .unwrap(),
    )
}

fn resource_server(resource: &str, jwks: &JwkSet) -> ResourceServer {
    let validator = JwtValidator::new(jwks, ISSUER, resource).unwrap();
    ResourceServer::new(resource, validator)
        .authorization_server(ISSUER)
        .scopes_supported(["mcp:tools", "mcp:admin"])
        .require_scopes(["mcp:tools"])
        .tool_scopes("wipe", ["mcp:admin"])
        .resource_name("Support desk")
}

fn keys() -> (Signer, JwkSet) {
    let (signer, jwk) = Signer::new("k1");
    (signer, JwkSet { keys: vec![jwk] })
}

/// One request to the protected service, without sockets.
async fn request(
    service: &McpServer,
    token: Option<&str>,
    body: &Value,
) -> (http::StatusCode, http::HeaderMap, Value) {
    let mut builder = http::Request::post("/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("host", "localhost");
    if let Some(token) = token {
        builder = builder.header("authorization", format!("Bearer {token}"));
    }
    let request = builder
        .body(axum::body::Body::from(body.to_string()))
        .unwrap();
    let response = service
        .clone()
        .streamable_http()
        .oneshot(request)
        .await
        .unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = axum::body::to_bytes(axum::body::Body::new(response.into_body()), 1 << 20)
        .await
        .unwrap();
    (
        status,
        headers,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}})
}

fn challenge(headers: &http::HeaderMap) -> String {
    headers
        .get(http::header::WWW_AUTHENTICATE)
        .expect("a WWW-Authenticate challenge")
        .to_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn a_request_without_a_token_is_a_401_pointing_at_the_metadata() {
    let (_, jwks) = keys();
    let server = McpServer::new(registry()).with_oauth(resource_server(RESOURCE, &jwks));
    let (status, headers, body) = request(&server, None, &initialize()).await;
    assert_eq!(status, http::StatusCode::UNAUTHORIZED);
    assert_eq!(
        challenge(&headers),
        "Bearer resource_metadata=\"http://localhost/.well-known/oauth-protected-resource/mcp\", scope=\"mcp:tools\""
    );
    assert_eq!(body["error"], "unauthorized", "{body}");
}

#[tokio::test]
async fn a_token_that_does_not_validate_is_a_401_invalid_token_saying_why() {
    let (signer, jwks) = keys();
    let (stranger, _) = Signer::new("k1");
    let server = McpServer::new(registry()).with_oauth(resource_server(RESOURCE, &jwks));
    let mut expired = claims("u1", "mcp:tools");
    expired["exp"] = json!(now() - 3600);
    let mut other_audience = claims("u1", "mcp:tools");
    other_audience["aud"] = json!("https://other.example.com/mcp");
    let mut other_issuer = claims("u1", "mcp:tools");
    other_issuer["iss"] = json!("https://evil.example.com");
    let mut not_yet = claims("u1", "mcp:tools");
    not_yet["nbf"] = json!(now() + 3600);
    let mut no_exp = claims("u1", "mcp:tools");
    no_exp.as_object_mut().unwrap().remove("exp");
    let mut no_sub = claims("u1", "mcp:tools");
    no_sub.as_object_mut().unwrap().remove("sub");
    let good = signer.sign(&claims("u1", "mcp:tools"));
    let (head, rest) = good.split_once('.').unwrap();
    // The same claims, with `alg: none` and no signature.
    let unsigned = format!(
        "eyJhbGciOiJub25lIiwidHlwIjoiSldUIiwia2lkIjoiazEifQ.{}.",
        rest.split_once('.').unwrap().0
    );
    // Signed with HMAC under the key's id (the public key as a "secret" is the classic attack).
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some("k1".into());
    let hmac = jsonwebtoken::encode(
        &header,
        &claims("u1", "mcp:tools"),
        &EncodingKey::from_secret(b"public").unwrap(),
    )
    .unwrap();
    let cases = [
        (signer.sign(&expired), "expired"),
        (signer.sign(&other_audience), "aud"),
        (signer.sign(&other_issuer), "iss"),
        (signer.sign(&not_yet), "nbf"),
        (signer.sign(&no_exp), "exp"),
        (signer.sign(&no_sub), "sub"),
        (stranger.sign(&claims("u1", "mcp:tools")), "signature"),
        (unsigned, "not a JWT"),
        (hmac, "algorithm"),
        (format!("{head}.e30.AAAA"), "token"),
        ("not-a-jwt".to_owned(), "not a JWT"),
        ("a.b.c".to_owned(), "not a JWT"),
        ("x".repeat(20_000), "Bearer"),
    ];
    for (token, why) in cases {
        let (status, headers, body) = request(&server, Some(&token), &initialize()).await;
        assert_eq!(status, http::StatusCode::UNAUTHORIZED, "{why}: {body}");
        let header = challenge(&headers);
        assert!(
            header.starts_with("Bearer error=\"invalid_token\""),
            "{header}"
        );
        assert!(
            header.contains(
                "resource_metadata=\"http://localhost/.well-known/oauth-protected-resource/mcp\""
            ),
            "{header}"
        );
        assert_eq!(body["error"], "invalid_token");
        let description = body["error_description"].as_str().unwrap();
        assert!(description.contains(why), "{why}: {description}");
    }
    // Not Bearer, or two headers.
    for value in ["Basic dTpw", "Bearer", "Bearer ", "bearer"] {
        let request = http::Request::post("/mcp")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("authorization", value)
            .body(axum::body::Body::from(initialize().to_string()))
            .unwrap();
        let response = server
            .clone()
            .streamable_http()
            .oneshot(request)
            .await
            .unwrap();
        assert_eq!(response.status(), http::StatusCode::UNAUTHORIZED, "{value}");
    }
    let request = http::Request::post("/mcp")
        .header("authorization", format!("Bearer {good}"))
        .header("authorization", format!("Bearer {good}"))
        .body(axum::body::Body::from(initialize().to_string()))
        .unwrap();
    let response = server
        .clone()
        .streamable_http()
        .oneshot(request)
        .await
        .unwrap();
    assert_eq!(response.status(), http::StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_token_without_the_scopes_is_a_403_insufficient_scope_naming_them() {
    let (signer, jwks) = keys();
    let server = McpServer::new(registry()).with_oauth(resource_server(RESOURCE, &jwks));
    // The scope every request needs.
    let token = signer.sign(&claims("u1", "profile"));
    let (status, headers, _) = request(&server, Some(&token), &initialize()).await;
    assert_eq!(status, http::StatusCode::FORBIDDEN);
    let header = challenge(&headers);
    assert!(
        header.starts_with("Bearer error=\"insufficient_scope\""),
        "{header}"
    );
    assert!(header.contains("scope=\"mcp:tools\""), "{header}");
    // A tool's own scope: the call is refused before rmcp sees it, naming every scope it needs.
    let token = signer.sign(&claims("u1", "mcp:tools"));
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "wipe", "arguments": {}}});
    let (status, headers, _) = request(&server, Some(&token), &call).await;
    assert_eq!(status, http::StatusCode::FORBIDDEN);
    let header = challenge(&headers);
    assert!(header.contains("error=\"insufficient_scope\""), "{header}");
    assert!(header.contains("scope=\"mcp:tools mcp:admin\""), "{header}");
    // A valid token with the scope passes on to rmcp.
    let (status, _, _) = request(&server, Some(&token), &initialize()).await;
    assert!(status.is_success(), "{status}");
}

#[tokio::test]
async fn the_protected_resource_metadata_document() {
    let (_, jwks) = keys();
    let rs = resource_server(RESOURCE, &jwks);
    assert_eq!(
        rs.metadata_path(),
        "/.well-known/oauth-protected-resource/mcp"
    );
    let app = axum::Router::new().route_service(&rs.metadata_path(), rs.metadata_service());
    let response = app
        .oneshot(
            http::Request::get("/.well-known/oauth-protected-resource/mcp")
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), http::StatusCode::OK);
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    let doc: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(
        doc,
        json!({
            "resource": RESOURCE,
            "authorization_servers": [ISSUER],
            "bearer_methods_supported": ["header"],
            "scopes_supported": ["mcp:tools", "mcp:admin"],
            "resource_name": "Support desk",
        })
    );
}

/// End to end on loopback: an rmcp client with a valid token lists and calls tools, and the
/// executor sees the token's subject as its principal (and no credential to pass on).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_subject_is_the_calls_principal() {
    // Beside the catalog feature's ring, the workspace build enables a second rustls provider:
    // reqwest's client then needs the process default chosen.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (signer, jwks) = keys();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let resource = format!("http://{addr}/mcp");
    let rs = resource_server(&resource, &jwks);
    let app = axum::Router::new()
        .route_service(&rs.metadata_path(), rs.metadata_service())
        .nest_service(
            "/mcp",
            McpServer::new(registry()).with_oauth(rs).streamable_http(),
        );
    let serving = tokio::spawn(async move { axum::serve(listener, app).await });

    let mut c = claims("user-42", "mcp:tools");
    c["aud"] = json!(resource);
    let token = signer.sign(&c);
    let config = StreamableHttpClientTransportConfig::with_uri(resource.clone()).auth_header(token);
    let client = tokio::time::timeout(
        Duration::from_secs(10),
        ().serve(StreamableHttpClientTransport::from_config(config)),
    )
    .await
    .unwrap()
    .expect("the client connects with its token");
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 2);
    let result = client
        .call_tool(CallToolRequestParams::new("whoami"))
        .await
        .unwrap();
    let text = result.content[0].as_text().unwrap().text.clone();
    let who: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        who,
        json!({"id": "user-42", "scopes": ["mcp:tools"], "credential": null})
    );
    // `wipe` needs mcp:admin: the HTTP 403 reaches the client as an error.
    let refused = client.call_tool(CallToolRequestParams::new("wipe")).await;
    assert!(refused.is_err(), "{refused:?}");
    client.cancel().await.unwrap();

    // Without a token the client cannot connect.
    let config = StreamableHttpClientTransportConfig::with_uri(resource.clone());
    let refused = tokio::time::timeout(
        Duration::from_secs(10),
        ().serve(StreamableHttpClientTransport::from_config(config)),
    )
    .await
    .unwrap();
    assert!(refused.is_err());
    serving.abort();
}

#[test]
fn a_jwks_without_a_usable_key_is_refused_at_construction() {
    let oct = r#"{"keys":[{"kty":"oct","k":"c2VjcmV0","kid":"s"}]}"#;
    let error = JwtValidator::from_jwks_json(oct, ISSUER, RESOURCE).unwrap_err();
    assert!(error.message().contains("symmetric"), "{error}");
    let error = JwtValidator::from_jwks_json("{}", ISSUER, RESOURCE).unwrap_err();
    assert!(error.message().contains("does not parse"), "{error}");
    let error = JwtValidator::from_jwks_json(r#"{"keys":[]}"#, ISSUER, RESOURCE).unwrap_err();
    assert!(error.message().contains("empty"), "{error}");
}

/// A `per principal` rate limit over MCP counts the token's subject, whichever token and
/// session it comes with: two tokens of one user share one allowance, another user has theirs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_per_principal_rate_limit_counts_the_token_subject_across_tokens_and_sessions() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    // The process's limiter is shared by every test here: a tool name of this test's own.
    const LIMITED: &str = r#"version: 1
tools:
  - name: page_oncall_mcp_oauth
    description: Page the on-call engineer.
    location: server
    rate_limit: 1/min per principal
"#;
    let registry = Arc::new(
        Registry::builder()
            .definitions(definitions_from_str("limited.tools.yaml", LIMITED).unwrap())
            .executor(
                "page_oncall_mcp_oauth",
                executor_fn_with_context(|_ctx: CallContext, _args: Value| async move {
                    Ok(json!({"paged": true}))
                }),
            )
            .build()
            .unwrap(),
    );
    let (signer, jwks) = keys();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let resource = format!("http://{addr}/mcp");
    let validator = JwtValidator::new(&jwks, ISSUER, &resource).unwrap();
    let rs = ResourceServer::new(&resource, validator).authorization_server(ISSUER);
    let app = axum::Router::new().nest_service(
        "/mcp",
        McpServer::new(registry).with_oauth(rs).streamable_http(),
    );
    let serving = tokio::spawn(async move { axum::serve(listener, app).await });

    // One call in a session of its own, with a token for `sub`; the result's text.
    let call = |sub: &str, jti: &str| {
        let mut c = claims(sub, "mcp:tools");
        c["aud"] = json!(resource);
        c["jti"] = json!(jti);
        let config = StreamableHttpClientTransportConfig::with_uri(resource.clone())
            .auth_header(signer.sign(&c));
        async move {
            let client =
                ().serve(StreamableHttpClientTransport::from_config(config))
                    .await
                    .unwrap();
            let result = client
                .call_tool(CallToolRequestParams::new("page_oncall_mcp_oauth"))
                .await
                .unwrap();
            client.cancel().await.unwrap();
            (
                result.is_error == Some(true),
                result.content[0].as_text().unwrap().text.clone(),
            )
        }
    };
    let (failed, text) = call("alice", "token-1").await;
    assert!(!failed, "{text}");
    // Alice again, with another token, in another session: over her limit.
    let (failed, text) = call("alice", "token-2").await;
    assert!(failed && text.contains("rate_limited"), "{text}");
    // Bob has his own allowance.
    let (failed, text) = call("bob", "token-3").await;
    assert!(!failed, "{text}");
    serving.abort();
}

/// The scopes a manifest declares (`scopes`) are enforced by a resource server attached with
/// `with_oauth`, merged with those set in code, and listed in the metadata the server hands
/// out: a token without the declared scope gets `403 insufficient_scope` naming it, one with it
/// calls the tool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scopes_declared_in_the_manifest_are_enforced_and_published() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    const SCOPED: &str = r#"version: 1
tools:
  - name: close_ticket
    description: Close a support ticket.
    location: server
    scopes: [tickets:write, tickets:read]
  - name: wipe
    description: Wipe everything.
    location: server
    scopes: [audit:write]
"#;
    let executor = || {
        executor_fn_with_context(|_ctx: CallContext, _args: Value| async move {
            Ok(json!({"done": true}))
        })
    };
    let registry = Arc::new(
        Registry::builder()
            .definitions(definitions_from_str("scoped.tools.yaml", SCOPED).unwrap())
            .executor("close_ticket", executor())
            .executor("wipe", executor())
            .build()
            .unwrap(),
    );
    let (signer, jwks) = keys();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let resource = format!("http://{addr}/mcp");
    let validator = JwtValidator::new(&jwks, ISSUER, &resource).unwrap();
    // `wipe` needs `mcp:admin` by code and `audit:write` by its manifest: both.
    let rs = ResourceServer::new(&resource, validator)
        .authorization_server(ISSUER)
        .require_scopes(["mcp:tools"])
        .tool_scopes("wipe", ["mcp:admin"]);
    let metadata_path = rs.metadata_path();
    let server = McpServer::new(registry).with_oauth(rs);

    // Without the declared scope: refused before rmcp, naming every scope the call needs.
    let sign = |scope: &str| {
        let mut c = claims("u1", scope);
        c["aud"] = json!(resource);
        signer.sign(&c)
    };
    let call = |tool: &str| {
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": tool, "arguments": {}}})
    };
    let (status, headers, _) = request(
        &server,
        Some(&sign("mcp:tools tickets:read")),
        &call("close_ticket"),
    )
    .await;
    assert_eq!(status, http::StatusCode::FORBIDDEN);
    let header = challenge(&headers);
    assert!(header.contains("error=\"insufficient_scope\""), "{header}");
    assert!(
        header.contains("scope=\"mcp:tools tickets:write tickets:read\""),
        "{header}"
    );
    let (status, headers, _) =
        request(&server, Some(&sign("mcp:tools audit:write")), &call("wipe")).await;
    assert_eq!(status, http::StatusCode::FORBIDDEN);
    let header = challenge(&headers);
    assert!(
        header.contains("scope=\"mcp:tools mcp:admin audit:write\""),
        "{header}"
    );

    // The metadata the server hands out lists the declared scopes, in one order.
    let metadata = server.oauth_metadata_service().expect("OAuth is on");
    let app = axum::Router::new()
        .route_service(&metadata_path, metadata)
        .nest_service("/mcp", server.streamable_http());
    let response = app
        .clone()
        .oneshot(
            http::Request::get(&metadata_path)
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    let doc: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(
        doc["scopes_supported"],
        json!([
            "mcp:tools",
            "tickets:write",
            "tickets:read",
            "mcp:admin",
            "audit:write"
        ])
    );

    // With the declared scopes the call runs, through a real client on loopback.
    let serving = tokio::spawn(async move { axum::serve(listener, app).await });
    let config = StreamableHttpClientTransportConfig::with_uri(resource.clone())
        .auth_header(sign("mcp:tools tickets:write tickets:read"));
    let client = tokio::time::timeout(
        Duration::from_secs(10),
        ().serve(StreamableHttpClientTransport::from_config(config)),
    )
    .await
    .unwrap()
    .expect("the client connects with its token");
    let result = client
        .call_tool(CallToolRequestParams::new("close_ticket"))
        .await
        .unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let text = result.content[0].as_text().unwrap().text.clone();
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        json!({"done": true})
    );
    // The same client lacks `wipe`'s scopes: the 403 reaches it as an error.
    let refused = client.call_tool(CallToolRequestParams::new("wipe")).await;
    assert!(refused.is_err(), "{refused:?}");
    client.cancel().await.unwrap();
    serving.abort();
}
