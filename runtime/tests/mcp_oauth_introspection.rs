//! `IntrospectionValidator` (RFC 7662) against an introspection endpoint of the test's (axum, on
//! loopback): the token is posted with the resource server's credentials, an active answer
//! becomes the principal, and everything else an endpoint may send (refusals, errors, HTML,
//! huge or slow answers, a closed port) refuses the token with a reason and never panics; the
//! cache saves round trips and keeps a revoked token for at most its TTL. Through the
//! `McpServer`, an inactive token is a `401 invalid_token`, an endpoint that fails a `503`. The packaged authorization server's
//! test (`mcp_oauth_provider.rs`) runs it against a real one.
// Gated on `mcp` (which the workspace turns on): the dev-dependency on toolc-mcp brings `oauth`.
#![cfg(feature = "mcp")]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::State;
use axum::routing::post;
use base64::Engine;
use serde_json::{json, Value};
use toolc_runtime::mcp::oauth::{IntrospectionValidator, ResourceServer, TokenValidator};
use toolc_runtime::mcp::McpServer;
use toolc_runtime::{definitions_from_str, executor_fn, Registry};
use tower::ServiceExt as _;

const RESOURCE: &str = "http://localhost/mcp";
const ISSUER: &str = "https://auth.example.com";

/// What the fake endpoint answers, and what it was sent.
#[derive(Default)]
struct Endpoint {
    /// Status, content type and body of every answer.
    answer: Option<(u16, &'static str, String)>,
    /// Wait this long before answering.
    delay: Duration,
    /// Each request's `Authorization` header and form.
    seen: Vec<(String, HashMap<String, String>)>,
}

type Shared = Arc<Mutex<Endpoint>>;

async fn introspect(
    State(endpoint): State<Shared>,
    headers: http::HeaderMap,
    body: axum::body::Bytes,
) -> axum::response::Response {
    let form = url::form_urlencoded::parse(&body).into_owned().collect();
    let authorization = headers
        .get("authorization")
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let (answer, delay) = {
        let mut e = endpoint.lock().unwrap();
        e.seen.push((authorization, form));
        (e.answer.clone(), e.delay)
    };
    tokio::time::sleep(delay).await;
    let (status, kind, body) = answer.unwrap_or((200, "application/json", "{}".into()));
    http::Response::builder()
        .status(status)
        .header("content-type", kind)
        .body(axum::body::Body::from(body))
        .unwrap()
}

/// The endpoint on loopback: its URL and state.
async fn endpoint() -> (String, Shared) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/introspect", listener.local_addr().unwrap());
    let state = Shared::default();
    let app = axum::Router::new()
        .route("/introspect", post(introspect))
        .with_state(state.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, state)
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn active(sub: &str) -> String {
    json!({"active": true, "sub": sub, "aud": RESOURCE, "iss": ISSUER, "exp": now() + 600,
           "scope": "mcp:tools", "client_id": "host", "token_type": "Bearer"})
    .to_string()
}

fn answer(state: &Shared, status: u16, kind: &'static str, body: impl Into<String>) {
    state.lock().unwrap().answer = Some((status, kind, body.into()));
}

fn validator(url: &str) -> IntrospectionValidator {
    // A secret with characters RFC 6749 §2.3.1 wants form-encoded before Basic.
    IntrospectionValidator::new(url, "mcp server", "s:cret", RESOURCE)
        .unwrap()
        .issuer(ISSUER)
}

#[tokio::test]
async fn the_token_is_posted_as_the_resource_server_and_an_active_answer_is_its_principal() {
    let (url, state) = endpoint().await;
    answer(&state, 200, "application/json", active("ada"));
    let token = validator(&url).validate("opaque-token-1").await.unwrap();
    assert_eq!(token.subject, "ada");
    assert_eq!(token.client_id.as_deref(), Some("host"));
    assert!(token.scopes.contains("mcp:tools"));
    let seen = &state.lock().unwrap().seen;
    let (authorization, form) = &seen[0];
    let expected = base64::engine::general_purpose::STANDARD.encode("mcp+server:s%3Acret");
    assert_eq!(authorization, &format!("Basic {expected}"));
    assert_eq!(form["token"], "opaque-token-1");
    assert_eq!(form["token_type_hint"], "access_token");
}

#[tokio::test]
async fn whatever_the_endpoint_sends_refuses_the_token_with_a_reason() {
    let (url, state) = endpoint().await;
    let v = validator(&url)
        .with_timeout(Duration::from_millis(300))
        .unwrap();
    let cases: Vec<(u16, &'static str, String, &str)> = vec![
        (
            200,
            "application/json",
            json!({"active": false}).to_string(),
            "not active",
        ),
        (
            200,
            "application/json",
            json!({"active": "true", "sub": "ada"}).to_string(),
            "not active",
        ),
        (
            200,
            "application/json",
            active("ada").replace(RESOURCE, "http://other/mcp"),
            "(aud)",
        ),
        (
            200,
            "application/json",
            active("ada").replace(ISSUER, "https://evil.example"),
            "(iss)",
        ),
        (200, "application/json", "[]".into(), "not a JSON object"),
        (200, "text/html", "<html>sign in</html>".into(), "not JSON"),
        (200, "application/json", "".into(), "not JSON"),
        (
            200,
            "application/json",
            format!("{{\"active\":true,\"pad\":\"{}\"}}", "x".repeat(200_000)),
            "more than",
        ),
        (
            401,
            "application/json",
            json!({"error": "invalid_client"}).to_string(),
            "HTTP 401",
        ),
        (500, "text/plain", "oops".into(), "HTTP 500"),
        (302, "text/plain", "".into(), "HTTP 302"),
    ];
    for (status, kind, body, expected) in cases {
        answer(&state, status, kind, body.clone());
        let refused = v.validate("t").await.unwrap_err();
        assert!(
            refused.message().contains(expected),
            "{status} {}: {refused}",
            &body[..body.len().min(80)]
        );
        // The token itself refused (401, get another) or the endpoint failing (503, retry).
        let the_tokens_fault = ["not active", "(aud)", "(iss)"].contains(&expected);
        assert_eq!(refused.is_unavailable(), !the_tokens_fault, "{refused}");
    }
    // Slow: the deadline, not a hung request.
    answer(&state, 200, "application/json", active("ada"));
    state.lock().unwrap().delay = Duration::from_secs(5);
    let started = std::time::Instant::now();
    let refused = v.validate("t").await.unwrap_err();
    assert!(
        refused.message().contains("did not answer within 300 ms"),
        "{refused}"
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(refused.is_unavailable());
    // Nobody listening.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/introspect", l.local_addr().unwrap())
    };
    let refused = validator(&closed).validate("t").await.unwrap_err();
    assert!(
        refused.message().contains("could not be reached"),
        "{refused}"
    );
    assert!(refused.is_unavailable());
}

#[tokio::test]
async fn the_cache_saves_round_trips_and_keeps_a_revoked_token_at_most_its_ttl() {
    let (url, state) = endpoint().await;
    answer(&state, 200, "application/json", active("ada"));
    let cached = validator(&url).with_cache(Duration::from_millis(400), 100);
    for _ in 0..3 {
        assert_eq!(cached.validate("t1").await.unwrap().subject, "ada");
    }
    assert_eq!(state.lock().unwrap().seen.len(), 1, "one round trip");
    // Revoked at the authorization server: the cached answer holds until its TTL…
    answer(
        &state,
        200,
        "application/json",
        json!({"active": false}).to_string(),
    );
    assert!(cached.validate("t1").await.is_ok());
    // …and not after it.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(cached.validate("t1").await.is_err());
    // Inactive answers are not kept: the next request asks again.
    let asked = state.lock().unwrap().seen.len();
    assert!(cached.validate("t1").await.is_err());
    assert_eq!(state.lock().unwrap().seen.len(), asked + 1);
    // Without a cache, revocation takes effect at once.
    let uncached = validator(&url);
    assert!(uncached.validate("t1").await.is_err());
}

#[tokio::test]
async fn through_the_server_an_inactive_token_is_a_401_a_failing_endpoint_a_503() {
    let (url, state) = endpoint().await;
    let registry = Arc::new(
        Registry::builder()
            .definitions(
                definitions_from_str(
                    "a.tools.yaml",
                    "version: 1\ntools:\n  - name: ping\n    description: Ping.\n    location: server\n",
                )
                .unwrap(),
            )
            .executor("ping", executor_fn(|_args: Value| async { Ok(json!("pong")) }))
            .build()
            .unwrap(),
    );
    let auth = ResourceServer::new(RESOURCE, validator(&url)).authorization_server(ISSUER);
    let service = McpServer::new(registry).with_oauth(auth).streamable_http();
    let initialize = |token: &str| {
        http::Request::post("/mcp")
            .header("host", "localhost")
            .header("authorization", format!("Bearer {token}"))
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(axum::body::Body::from(
                json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"}}})
                .to_string(),
            ))
            .unwrap()
    };
    answer(
        &state,
        200,
        "application/json",
        json!({"active": false}).to_string(),
    );
    let refused = service.clone().oneshot(initialize("t")).await.unwrap();
    assert_eq!(refused.status(), 401);
    let challenge = refused.headers()["www-authenticate"].to_str().unwrap();
    assert!(
        challenge.contains("error=\"invalid_token\"") && challenge.contains("not active"),
        "{challenge}"
    );
    // The authorization server failing is not the token's fault: 503, retry later (a 401
    // would send the user through a new login for an outage).
    answer(&state, 500, "text/plain", "down");
    let unavailable = service.clone().oneshot(initialize("t")).await.unwrap();
    assert_eq!(unavailable.status(), 503);
    assert_eq!(unavailable.headers()["retry-after"], "5");
    assert!(!unavailable.headers().contains_key("www-authenticate"));
    answer(&state, 200, "application/json", active("ada"));
    let accepted = service.oneshot(initialize("t")).await.unwrap();
    assert_eq!(accepted.status(), 200);
}
