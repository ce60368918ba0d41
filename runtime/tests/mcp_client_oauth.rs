//! `McpTools` as an OAuth client of a protected MCP server: toolc's own resource server
//! (`McpServer::with_oauth`) and a small authorization server of the test's, on loopback. The
//! server's `401` challenge leads discovery; the client registers, the scripted user logs in
//! (PKCE, `state`, the `resource` indicator checked by the authorization server), the tools are
//! called with the subject as principal; a tool that needs more scopes is a `403` the client
//! answers with a step-up login; an expiring token is refreshed without a login; a second
//! connection with the same credential store logs in no more; a refused login says so; a
//! redirect with another `state` is refused before its code is used; a scope never granted
//! ends in a bounded number of logins; signing out (`McpTools::revoke`) revokes the refresh and
//! access tokens at the revocation endpoint (RFC 7009) as the client is registered, clears the
//! store and leaves the connection signed out, and a revocation that fails says so.
#![cfg(all(feature = "mcp", feature = "mcp-client-oauth"))]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::State;
use axum::routing::{get, post};
use axum::Json;
use base64::Engine;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};
use sha2::Digest;
use toolc_runtime::mcp::client_oauth::{InMemoryCredentialStore, OAuthClient};
use toolc_runtime::mcp::oauth::{JwtValidator, ResourceServer};
use toolc_runtime::mcp::{McpServer, McpTools};
use toolc_runtime::{definitions_from_str, executor_fn_with_context, CallContext, Registry};

const MANIFEST: &str = r#"version: 1
tools:
  - name: whoami
    description: Who the caller is.
    location: server
  - name: wipe
    description: Wipe everything.
    location: server
"#;

const REDIRECT_URI: &str = "http://127.0.0.1:9/callback";

/// What the test's authorization server saw and holds.
#[derive(Default)]
struct Seen {
    /// Each authorization request's query.
    logins: Vec<HashMap<String, String>>,
    registrations: usize,
    refreshes: usize,
    /// Issued codes: their PKCE challenge, scope and resource.
    codes: HashMap<String, (String, String, String)>,
    /// Issued refresh tokens: their scope and resource.
    refresh_tokens: HashMap<String, (String, String)>,
    /// Whether the scripted user refuses.
    refuse: bool,
    /// Whether `mcp:admin` is never granted (the user may not have it).
    deny_admin: bool,
    /// Each revocation request: its `Authorization` header and form.
    revocations: Vec<(Option<String>, HashMap<String, String>)>,
    /// The status the revocation endpoint answers (default 200).
    revocation_status: Option<u16>,
    /// Whether the metadata leaves out `revocation_endpoint`.
    no_revocation: bool,
}

struct AuthServer {
    issuer: String,
    key: EncodingKey,
    seen: Mutex<Seen>,
    /// How long the access tokens it issues last.
    lifetime: u64,
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

impl AuthServer {
    fn token(&self, scope: &str, resource: &str) -> Value {
        let granted: Vec<&str> = scope
            .split(' ')
            .filter(|s| !(self.seen.lock().unwrap().deny_admin && *s == "mcp:admin"))
            .collect();
        let scope = &granted.join(" ");
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some("k1".into());
        let claims = json!({"iss": self.issuer, "aud": resource, "sub": "user-7", "scope": scope,
                            "exp": now() + self.lifetime, "iat": now()});
        let access = jsonwebtoken::encode(&header, &claims, &self.key).unwrap();
        let refresh = format!("r-{}", uuid());
        self.seen
            .lock()
            .unwrap()
            .refresh_tokens
            .insert(refresh.clone(), (scope.to_owned(), resource.to_owned()));
        json!({"access_token": access, "token_type": "Bearer", "expires_in": self.lifetime,
               "refresh_token": refresh, "scope": scope})
    }

    /// The user at the authorization URL: agrees (or refuses), and is redirected.
    fn authorize(&self, authorization_url: &str) -> String {
        let url = url::Url::parse(authorization_url).unwrap();
        let query: HashMap<String, String> = url.query_pairs().into_owned().collect();
        let mut seen = self.seen.lock().unwrap();
        seen.logins.push(query.clone());
        let state = &query["state"];
        if seen.refuse {
            return format!("{REDIRECT_URI}?error=access_denied&error_description=the+user+said+no&state={state}");
        }
        let code = format!("c-{}", uuid());
        seen.codes.insert(
            code.clone(),
            (
                query["code_challenge"].clone(),
                query.get("scope").cloned().unwrap_or_default(),
                query["resource"].clone(),
            ),
        );
        format!("{REDIRECT_URI}?code={code}&state={state}")
    }
}

fn uuid() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed).to_string()
}

async fn metadata(State(a): State<Arc<AuthServer>>) -> Json<Value> {
    let mut document = json!({
        "issuer": a.issuer,
        "authorization_endpoint": format!("{}/authorize", a.issuer),
        "token_endpoint": format!("{}/token", a.issuer),
        "registration_endpoint": format!("{}/register", a.issuer),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none", "client_secret_basic"],
    });
    if !a.seen.lock().unwrap().no_revocation {
        document["revocation_endpoint"] = json!(format!("{}/revoke", a.issuer));
    }
    Json(document)
}

/// RFC 7009: `200` for any token, or the status the test asks for, with an error body.
async fn revoke(
    State(a): State<Arc<AuthServer>>,
    headers: http::HeaderMap,
    body: axum::body::Bytes,
) -> (http::StatusCode, Json<Value>) {
    let form = url::form_urlencoded::parse(&body).into_owned().collect();
    let authorization = headers
        .get("authorization")
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned);
    let mut seen = a.seen.lock().unwrap();
    seen.revocations.push((authorization, form));
    match seen.revocation_status {
        Some(status) => (
            http::StatusCode::from_u16(status).unwrap(),
            Json(json!({"error": "temporarily_unavailable", "error_description": "try later"})),
        ),
        None => (http::StatusCode::OK, Json(json!({}))),
    }
}

async fn register(
    State(a): State<Arc<AuthServer>>,
    Json(body): Json<Value>,
) -> (http::StatusCode, Json<Value>) {
    a.seen.lock().unwrap().registrations += 1;
    (
        http::StatusCode::CREATED,
        Json(
            json!({"client_id": "client-1", "redirect_uris": body["redirect_uris"],
                    "token_endpoint_auth_method": "none"}),
        ),
    )
}

async fn token(
    State(a): State<Arc<AuthServer>>,
    body: axum::body::Bytes,
) -> Result<Json<Value>, (http::StatusCode, Json<Value>)> {
    let form: HashMap<String, String> = url::form_urlencoded::parse(&body).into_owned().collect();
    let refuse = |why: &str| {
        Err((
            http::StatusCode::BAD_REQUEST,
            Json(json!({"error": "invalid_grant", "error_description": why})),
        ))
    };
    match form.get("grant_type").map(String::as_str) {
        Some("authorization_code") => {
            let Some((challenge, scope, resource)) =
                a.seen.lock().unwrap().codes.remove(&form["code"])
            else {
                return refuse("unknown or used code");
            };
            let verifier = form.get("code_verifier").cloned().unwrap_or_default();
            let hashed = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(sha2::Sha256::digest(verifier.as_bytes()));
            if hashed != challenge {
                return refuse("PKCE verifier does not match");
            }
            if form.get("resource") != Some(&resource) {
                return refuse("the token request's resource differs from the authorization's");
            }
            Ok(Json(a.token(&scope, &resource)))
        }
        Some("refresh_token") => {
            let found = a
                .seen
                .lock()
                .unwrap()
                .refresh_tokens
                .remove(&form["refresh_token"]);
            let Some((scope, resource)) = found else {
                return refuse("unknown refresh token");
            };
            a.seen.lock().unwrap().refreshes += 1;
            Ok(Json(a.token(&scope, &resource)))
        }
        _ => refuse("unsupported grant"),
    }
}

fn registry() -> Arc<Registry> {
    let whoami = executor_fn_with_context(|ctx: CallContext, _args: Value| async move {
        Ok(json!({"id": ctx.principal().map(|p| p.id().to_owned())}))
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

/// The authorization server and the protected MCP server on loopback: the MCP endpoint's URL
/// and the authorization server.
async fn servers(lifetime: u64) -> (String, Arc<AuthServer>) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let key = EncodingKey::from_ec_der(&pair.serialize_der());
    let mut jwk = Jwk::from_encoding_key(&key, Algorithm::ES256).unwrap();
    jwk.common.key_id = Some("k1".into());
    let jwks = JwkSet { keys: vec![jwk] };

    let as_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}", as_listener.local_addr().unwrap());
    let auth = Arc::new(AuthServer {
        issuer: issuer.clone(),
        key,
        seen: Mutex::default(),
        lifetime,
    });
    let as_app = axum::Router::new()
        .route("/.well-known/oauth-authorization-server", get(metadata))
        .route("/register", post(register))
        .route("/token", post(token))
        .route("/revoke", post(revoke))
        .with_state(auth.clone());
    tokio::spawn(async move { axum::serve(as_listener, as_app).await });

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let resource = format!("http://{}/mcp", listener.local_addr().unwrap());
    let validator = JwtValidator::new(&jwks, issuer.clone(), resource.clone()).unwrap();
    let rs = ResourceServer::new(&resource, validator)
        .authorization_server(issuer)
        .scopes_supported(["mcp:tools", "mcp:admin"])
        .require_scopes(["mcp:tools"])
        .tool_scopes("wipe", ["mcp:admin"]);
    let app = axum::Router::new()
        .route_service(&rs.metadata_path(), rs.metadata_service())
        .nest_service(
            "/mcp",
            McpServer::new(registry()).with_oauth(rs).streamable_http(),
        );
    tokio::spawn(async move { axum::serve(listener, app).await });
    (resource, auth)
}

fn client(auth: &Arc<AuthServer>, store: &InMemoryCredentialStore) -> OAuthClient {
    let user = auth.clone();
    OAuthClient::authorization_code(REDIRECT_URI, move |url: String| {
        let redirect = user.authorize(&url);
        async move { Ok(redirect) }
    })
    .client_name("toolc test")
    .credential_store(store.clone())
}

async fn call(tools: &Arc<McpTools>, name: &str) -> Result<Value, String> {
    let registry = tools
        .merge_into(Registry::builder(), &[])
        .unwrap()
        .build()
        .unwrap();
    registry
        .call_value(name, json!({}))
        .await
        .map_err(|e| e.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_logs_in_from_the_challenge_steps_up_and_calls_as_the_user() {
    let (resource, auth) = servers(600).await;
    let store = InMemoryCredentialStore::new();
    let tools = tokio::time::timeout(
        Duration::from_secs(20),
        McpTools::connect_oauth(&resource, client(&auth, &store)),
    )
    .await
    .unwrap()
    .unwrap();
    {
        let seen = auth.seen.lock().unwrap();
        assert_eq!((seen.registrations, seen.logins.len()), (1, 1));
        let login = &seen.logins[0];
        assert_eq!(login["code_challenge_method"], "S256");
        assert_eq!(
            login["resource"], resource,
            "the token's audience is asked for"
        );
        assert_eq!(login["client_id"], "client-1");
        // The challenge names the scope every request needs.
        assert_eq!(login["scope"], "mcp:tools");
    }
    assert_eq!(
        call(&tools, "whoami").await.unwrap(),
        json!({"id": "user-7"})
    );

    // `wipe` needs mcp:admin: the 403 leads to a login for both scopes, and the call goes again.
    assert_eq!(call(&tools, "wipe").await.unwrap(), json!({"wiped": true}));
    {
        let seen = auth.seen.lock().unwrap();
        assert_eq!(seen.logins.len(), 2);
        let scopes: Vec<&str> = seen.logins[1]["scope"].split(' ').collect();
        assert!(
            scopes.contains(&"mcp:tools") && scopes.contains(&"mcp:admin"),
            "{scopes:?}"
        );
    }

    // Another connection with the same store: the stored token, no login.
    let again = McpTools::connect_oauth(&resource, client(&auth, &store))
        .await
        .unwrap();
    assert_eq!(
        call(&again, "whoami").await.unwrap(),
        json!({"id": "user-7"})
    );
    assert_eq!(auth.seen.lock().unwrap().logins.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expiring_token_is_refreshed_without_a_login() {
    let (resource, auth) = servers(2).await;
    let store = InMemoryCredentialStore::new();
    let tools = McpTools::connect_oauth(&resource, client(&auth, &store))
        .await
        .unwrap();
    assert_eq!(
        call(&tools, "whoami").await.unwrap(),
        json!({"id": "user-7"})
    );
    // Expired (rmcp counts whole seconds): refreshed before it is sent, or after the server's
    // 401; either way with the refresh token, not a login.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(
        call(&tools, "whoami").await.unwrap(),
        json!({"id": "user-7"})
    );
    let seen = auth.seen.lock().unwrap();
    assert!(seen.refreshes >= 1, "refreshed {} times", seen.refreshes);
    assert_eq!(seen.logins.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_login_fails_the_connection_with_the_servers_words() {
    let (resource, auth) = servers(600).await;
    auth.seen.lock().unwrap().refuse = true;
    let error = McpTools::connect_oauth(&resource, client(&auth, &InMemoryCredentialStore::new()))
        .await
        .unwrap_err();
    assert!(
        error.0.contains("access_denied") && error.0.contains("the user said no"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scope_never_granted_fails_the_call_after_bounded_logins_and_the_rest_still_works() {
    let (resource, auth) = servers(600).await;
    auth.seen.lock().unwrap().deny_admin = true;
    let tools = McpTools::connect_oauth(&resource, client(&auth, &InMemoryCredentialStore::new()))
        .await
        .unwrap();
    let error = call(&tools, "wipe").await.unwrap_err();
    assert!(
        error.contains("refused the call for want of authorization") && error.contains("mcp:admin"),
        "{error}"
    );
    // The first login, and a bounded number of step-ups (not a loop).
    let logins = auth.seen.lock().unwrap().logins.len();
    assert!((2..=3).contains(&logins), "{logins} logins");
    // The token it has still does what it may.
    assert_eq!(
        call(&tools, "whoami").await.unwrap(),
        json!({"id": "user-7"})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_with_another_state_is_refused_and_its_code_never_exchanged() {
    let (resource, auth) = servers(600).await;
    let user = auth.clone();
    // A redirect forged, or meant for another login: the right code, the wrong `state`.
    let forged = OAuthClient::authorization_code(REDIRECT_URI, move |url: String| {
        let redirect = user.authorize(&url);
        let state = redirect
            .split("state=")
            .nth(1)
            .unwrap_or_default()
            .to_owned();
        async move { Ok(redirect.replace(&state, "forged")) }
    });
    let error = McpTools::connect_oauth(&resource, forged)
        .await
        .unwrap_err();
    assert!(
        error.0.contains("exchanging the code for a token failed"),
        "{error}"
    );
    // The code was never taken to the token endpoint.
    assert_eq!(auth.seen.lock().unwrap().codes.len(), 1);
}

/// The stored (access token, refresh token), read as rmcp stores them.
async fn stored_tokens(store: &InMemoryCredentialStore) -> Option<(String, String)> {
    use toolc_runtime::mcp::client_oauth::CredentialStore;
    let stored = serde_json::to_value(store.load().await.unwrap()?).unwrap();
    let tokens = &stored["token_response"];
    Some((
        tokens["access_token"].as_str()?.to_owned(),
        tokens["refresh_token"].as_str()?.to_owned(),
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signing_out_revokes_both_tokens_and_the_connection_stays_signed_out() {
    let (resource, auth) = servers(600).await;
    let store = InMemoryCredentialStore::new();
    let tools = McpTools::connect_oauth(&resource, client(&auth, &store))
        .await
        .unwrap();
    let (access, refresh) = stored_tokens(&store).await.unwrap();
    tools.revoke().await.unwrap();
    {
        let seen = auth.seen.lock().unwrap();
        // The refresh token first, then the access token; a public client names itself.
        let sent: Vec<_> = seen
            .revocations
            .iter()
            .map(|(authorization, form)| {
                (
                    authorization.clone(),
                    form["token"].clone(),
                    form["token_type_hint"].clone(),
                    form["client_id"].clone(),
                )
            })
            .collect();
        assert_eq!(
            sent,
            [
                (None, refresh, "refresh_token".into(), "client-1".into()),
                (None, access, "access_token".into(), "client-1".into()),
            ]
        );
    }
    assert!(
        stored_tokens(&store).await.is_none(),
        "the store is cleared"
    );
    let error = call(&tools, "whoami").await.unwrap_err();
    assert!(error.contains("signed out"), "{error}");
    assert_eq!(
        auth.seen.lock().unwrap().logins.len(),
        1,
        "no login after signing out"
    );
    // Signing out again has nothing to revoke.
    tools.revoke().await.unwrap();
    assert_eq!(auth.seen.lock().unwrap().revocations.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_with_a_secret_revokes_with_it() {
    let (resource, auth) = servers(600).await;
    let store = InMemoryCredentialStore::new();
    let oauth = client(&auth, &store).preregistered("client-1", Some("s3cret".into()));
    let tools = McpTools::connect_oauth(&resource, oauth).await.unwrap();
    tools.revoke().await.unwrap();
    let seen = auth.seen.lock().unwrap();
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("client-1:s3cret")
    );
    assert_eq!(seen.revocations.len(), 2);
    for (authorization, form) in &seen.revocations {
        assert_eq!(authorization.as_deref(), Some(basic.as_str()));
        assert!(!form.contains_key("client_secret"), "{form:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revocation_that_fails_is_reported_and_the_tokens_are_forgotten_anyway() {
    let (resource, auth) = servers(600).await;
    let store = InMemoryCredentialStore::new();
    let tools = McpTools::connect_oauth(&resource, client(&auth, &store))
        .await
        .unwrap();
    auth.seen.lock().unwrap().revocation_status = Some(503);
    let error = tools.revoke().await.unwrap_err();
    assert!(
        error.0.contains("revoking the refresh token at")
            && error
                .0
                .contains("HTTP 503: temporarily_unavailable (try later)")
            && error.0.contains("may still accept them"),
        "{error}"
    );
    assert!(stored_tokens(&store).await.is_none());

    // An authorization server without a revocation endpoint: said so.
    let (resource, auth) = servers(600).await;
    auth.seen.lock().unwrap().no_revocation = true;
    let store = InMemoryCredentialStore::new();
    let tools = McpTools::connect_oauth(&resource, client(&auth, &store))
        .await
        .unwrap();
    let error = tools.revoke().await.unwrap_err();
    assert!(error.0.contains("no `revocation_endpoint`"), "{error}");
    assert!(stored_tokens(&store).await.is_none());

    // Tools connected without OAuth have nothing to revoke.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let open = format!("http://{}/mcp", listener.local_addr().unwrap());
    let app =
        axum::Router::new().nest_service("/mcp", McpServer::new(registry()).streamable_http());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let plain = McpTools::connect_http(&open).await.unwrap();
    let error = plain.revoke().await.unwrap_err();
    assert!(error.0.contains("not connected with OAuth"), "{error}");
}
