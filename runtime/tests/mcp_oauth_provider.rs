//! End to end against a real, packaged authorization server: panva's `oidc-provider` (npm,
//! `tests/oauth-server/`, configured by its `server.mjs` and nothing else), started by each test
//! on a free loopback port and killed at its end. toolc's `McpServer` is the resource server —
//! JWT access tokens checked against the provider's JWKS, or opaque ones introspected (RFC 7662)
//! — and `McpTools::connect_oauth` the client: the server's `401` leads to its protected resource
//! metadata, then to the provider's metadata; the client registers itself (RFC 7591); a
//! scripted user logs in and consents on the provider's own pages (PKCE, `state`, `iss`, the
//! `resource` indicator); a tool runs as the provider's subject; after the access token's
//! expiry the next call refreshes it, without a login; a token revoked at the provider
//! (introspection then says inactive) leads to a new login; `McpTools::revoke` signs out:
//! the tokens are revoked at the provider and the calls fail, saying so.
//!
//! Needs Node (20 or later) and `npm ci` in `tests/oauth-server` (`scripts/setup` does it);
//! without them these tests fail, saying so.
#![cfg(all(feature = "mcp", feature = "mcp-client-oauth"))]

use std::io::BufRead;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use toolc_runtime::mcp::client_oauth::{CredentialStore, InMemoryCredentialStore, OAuthClient};
use toolc_runtime::mcp::oauth::{
    IntrospectionValidator, JwtValidator, ResourceServer, TokenValidator,
};
use toolc_runtime::mcp::{McpServer, McpTools};
use toolc_runtime::{definitions_from_str, executor_fn_with_context, CallContext, Registry};

const MANIFEST: &str = r#"version: 1
tools:
  - name: whoami
    description: Who the caller is, and what their token allows.
    location: server
"#;

/// Where the authorization server sends the browser back; the scripted user stops there.
const REDIRECT_URI: &str = "http://127.0.0.1:9/callback";

/// The resource servers' own client at the provider (`server.mjs`'s settings).
const INTROSPECTOR: (&str, &str) = ("mcp-resource-server", "resource-server-secret");

/// How long the provider's access tokens last, in seconds: short, for the refresh step.
const ACCESS_TOKEN_TTL: u64 = 5;

/// The packaged authorization server, running; killed when dropped.
struct Provider {
    child: Child,
    issuer: String,
    metadata: Value,
}

impl Provider {
    /// Starts `server.mjs` for `resources` (MCP endpoint URL → `jwt` or `opaque`) and waits for
    /// its discovery document.
    async fn start(resources: &[(&str, &str)]) -> Provider {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/oauth-server");
        let node = Command::new("node").arg("--version").output();
        assert!(
            node.is_ok_and(|o| o.status.success()),
            "node is not installed: this test runs a packaged OAuth server (oidc-provider) on Node 20 or later"
        );
        assert!(
            dir.join("node_modules/oidc-provider").is_dir(),
            "tests/oauth-server has no node_modules: run scripts/setup (or `npm ci` in tests/oauth-server)"
        );
        let settings = json!({
            "port": 0,
            "resources": resources.iter().map(|(r, f)| (r.to_string(), json!(f))).collect::<serde_json::Map<_, _>>(),
            "scope": "mcp:tools",
            "accessTokenTTL": ACCESS_TOKEN_TTL,
            "introspector": {"client_id": INTROSPECTOR.0, "client_secret": INTROSPECTOR.1},
        });
        let mut child = Command::new("node")
            .arg("server.mjs")
            .arg(settings.to_string())
            .current_dir(&dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("node starts");
        // Its first line names the issuer; read on a thread, waited for with a deadline.
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(issuer) = line.strip_prefix("listening ") {
                    let _ = tx.send(issuer.to_owned());
                }
            }
        });
        let issuer = match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(issuer) => issuer,
            Err(_) => {
                let _ = child.kill();
                panic!("the OAuth server (node tests/oauth-server/server.mjs) did not start within 30 s")
            }
        };
        let mut provider = Provider {
            child,
            issuer,
            metadata: Value::Null,
        };
        let discovery = format!("{}/.well-known/openid-configuration", provider.issuer);
        for _ in 0..100 {
            if let Ok(response) = reqwest::get(&discovery).await {
                if response.status().is_success() {
                    provider.metadata = response.json().await.unwrap();
                    return provider;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("the OAuth server did not serve {discovery}");
    }

    fn endpoint(&self, name: &str) -> String {
        self.metadata[name].as_str().unwrap().to_owned()
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the tests can see of the client's side: how often the user was asked to log in.
#[derive(Clone, Default)]
struct User {
    logins: Arc<AtomicUsize>,
}

impl User {
    /// The OAuth client of `McpTools::connect_oauth`: dynamic registration, and this user
    /// logging in as `ada` at the provider's pages.
    fn client(&self, store: &InMemoryCredentialStore) -> OAuthClient {
        let logins = self.logins.clone();
        OAuthClient::authorization_code(REDIRECT_URI, move |url: String| {
            logins.fetch_add(1, Ordering::SeqCst);
            async move { log_in(&url, "ada").await }
        })
        .client_name("toolc end-to-end test")
        .credential_store(store.clone())
    }

    fn logins(&self) -> usize {
        self.logins.load(Ordering::SeqCst)
    }
}

/// The scripted user: a browser (cookies kept, redirects followed by hand) at the
/// authorization URL, which fills in the provider's login form (any name and password, its
/// development login) and confirms its consent form, until the provider redirects to
/// [`REDIRECT_URI`]: that URL (with `code`, `state` and `iss`) is the result.
async fn log_in(authorization_url: &str, name: &str) -> Result<String, String> {
    let browser = reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| e.to_string())?;
    let mut at = url::Url::parse(authorization_url).map_err(|e| e.to_string())?;
    let mut form: Option<Vec<(String, String)>> = None;
    for _ in 0..16 {
        let request = match form.take() {
            Some(fields) => browser.post(at.clone()).form(&fields),
            None => browser.get(at.clone()),
        };
        let response = request.send().await.map_err(|e| e.to_string())?;
        let status = response.status();
        if status.is_redirection() {
            let location = response
                .headers()
                .get("location")
                .and_then(|l| l.to_str().ok())
                .ok_or("a redirect without a location")?;
            at = at.join(location).map_err(|e| e.to_string())?;
            if at.as_str().starts_with(REDIRECT_URI) {
                return Ok(at.into());
            }
            continue;
        }
        let page = response.text().await.map_err(|e| e.to_string())?;
        if !status.is_success() {
            return Err(format!("the provider answered {status}: {page}"));
        }
        let (action, mut fields) =
            html_form(&page).ok_or_else(|| format!("a page without a form: {page}"))?;
        // The login page asks for a name and a password; the consent page only to confirm.
        if fields.iter().any(|(k, _)| k == "login") {
            fields.retain(|(k, _)| k != "login" && k != "password");
            fields.push(("login".into(), name.into()));
            fields.push(("password".into(), "any password".into()));
        }
        at = at.join(&action).map_err(|e| e.to_string())?;
        form = Some(fields);
    }
    Err("the provider never redirected back".into())
}

/// The first form of a page: its `action` and its inputs' names and values. Small on
/// purpose: the provider's development pages are one form of plain inputs each.
fn html_form(page: &str) -> Option<(String, Vec<(String, String)>)> {
    let start = page.find("<form")?;
    let end = page[start..]
        .find("</form>")
        .map_or(page.len(), |e| start + e);
    let form = &page[start..end];
    let tag_end = form.find('>')?;
    let action = attribute(&form[..tag_end], "action")?;
    let mut fields = Vec::new();
    for input in form.split("<input").skip(1) {
        let tag = &input[..input.find('>').unwrap_or(input.len())];
        if let Some(name) = attribute(tag, "name") {
            fields.push((name, attribute(tag, "value").unwrap_or_default()));
        }
    }
    Some((action, fields))
}

/// An attribute's value in a tag (double-quoted, as the provider writes them), unescaped.
fn attribute(tag: &str, name: &str) -> Option<String> {
    let marker = format!(" {name}=\"");
    let start = tag.find(&marker)? + marker.len();
    let value = &tag[start..start + tag[start..].find('"')?];
    Some(
        value
            .replace("&quot;", "\"")
            .replace("&#39;", "'")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&"),
    )
}

fn registry() -> Arc<Registry> {
    let whoami = executor_fn_with_context(|ctx: CallContext, _args: Value| async move {
        use toolc_runtime::mcp::oauth::AccessToken;
        let principal = ctx.principal();
        let token = principal.and_then(|p| p.data::<AccessToken>());
        Ok(json!({
            "id": principal.map(|p| p.id().to_owned()),
            "scopes": token.map(|t| t.scopes.iter().cloned().collect::<Vec<_>>()),
        }))
    });
    Arc::new(
        Registry::builder()
            .definitions(definitions_from_str("a.tools.yaml", MANIFEST).unwrap())
            .executor("whoami", whoami)
            .build()
            .unwrap(),
    )
}

/// toolc's MCP server on `listener`, protected by `validator`, naming the provider as its
/// authorization server. Returns the MCP endpoint's URL.
fn serve(
    listener: tokio::net::TcpListener,
    provider: &Provider,
    validator: impl TokenValidator + 'static,
) -> String {
    let resource = format!("http://{}/mcp", listener.local_addr().unwrap());
    let rs = ResourceServer::new(&resource, validator)
        .authorization_server(&provider.issuer)
        .scopes_supported(["mcp:tools"])
        .require_scopes(["mcp:tools"]);
    let app = axum::Router::new()
        .route_service(&rs.metadata_path(), rs.metadata_service())
        .nest_service(
            "/mcp",
            McpServer::new(registry()).with_oauth(rs).streamable_http(),
        );
    tokio::spawn(async move { axum::serve(listener, app).await });
    resource
}

async fn call(tools: &Arc<McpTools>) -> Result<Value, String> {
    let registry = tools
        .merge_into(Registry::builder(), &[])
        .unwrap()
        .build()
        .unwrap();
    registry
        .call_value("whoami", json!({}))
        .await
        .map_err(|e| e.to_string())
}

/// The stored tokens: (client id, access token, refresh token), read as rmcp stores them.
async fn tokens(store: &InMemoryCredentialStore) -> Option<(String, String, Option<String>)> {
    let stored = serde_json::to_value(store.load().await.unwrap()?).unwrap();
    let tokens = stored.get("token_response").filter(|t| !t.is_null())?;
    let text = |v: &Value| v.as_str().map(str::to_owned);
    Some((
        text(&stored["client_id"])?,
        text(&tokens["access_token"])?,
        text(&tokens["refresh_token"]),
    ))
}

/// An `initialize` sent to the MCP server with `token`, as any client would: the status and
/// the `WWW-Authenticate` header.
async fn initialize_with(resource: &str, token: &str) -> (u16, String) {
    let response = reqwest::Client::new()
        .post(resource)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"}}})
            .to_string(),
        )
        .send()
        .await
        .unwrap();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (response.status().as_u16(), challenge)
}

/// A refresh at the provider's token endpoint with `refresh_token`, as the public client
/// `client_id`: the provider's answer.
async fn refresh_at(provider: &Provider, client_id: &str, refresh_token: &str) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(provider.endpoint("token_endpoint"))
        .form(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
            ("client_id", client_id),
        ])
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn install_crypto() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jwt_access_tokens_discovery_login_call_refresh_and_sign_out() {
    install_crypto();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let resource = format!("http://{}/mcp", listener.local_addr().unwrap());
    let provider = Provider::start(&[(&resource, "jwt")]).await;
    // The resource server's keys: the provider's JWKS document, fetched as an application would.
    let jwks = reqwest::get(provider.endpoint("jwks_uri"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let validator = JwtValidator::from_jwks_json(&jwks, &provider.issuer, &resource)
        .unwrap()
        .with_leeway(0);
    assert_eq!(serve(listener, &provider, validator), resource);

    let (user, store) = (User::default(), InMemoryCredentialStore::new());
    let tools = tokio::time::timeout(
        Duration::from_secs(30),
        McpTools::connect_oauth(&resource, user.client(&store)),
    )
    .await
    .expect("the login ends")
    .expect("the login succeeds");
    assert_eq!(user.logins(), 1);
    let (client_id, first_access, first_refresh) = tokens(&store).await.unwrap();
    assert_eq!(
        first_access.split('.').count(),
        3,
        "a JWT access token for this resource"
    );
    let first_refresh = first_refresh.expect("a refresh token (offline access)");
    assert_eq!(
        call(&tools).await.unwrap(),
        json!({"id": "ada", "scopes": ["mcp:tools"]}),
        "the tool runs as the provider's subject, with the granted scope"
    );

    // Past the access token's expiry: refreshed (the provider rotates the refresh token), not
    // a second login.
    tokio::time::sleep(Duration::from_secs(ACCESS_TOKEN_TTL + 1)).await;
    assert_eq!(
        call(&tools).await.unwrap(),
        json!({"id": "ada", "scopes": ["mcp:tools"]})
    );
    assert_eq!(user.logins(), 1, "a refresh, not a login");
    let (_, second_access, second_refresh) = tokens(&store).await.unwrap();
    let second_refresh = second_refresh.unwrap();
    assert_ne!(second_access, first_access);
    assert_ne!(second_refresh, first_refresh, "rotated");

    // Signing out revokes the refresh token at the provider and forgets the tokens here.
    tools.revoke().await.unwrap();
    assert!(tokens(&store).await.is_none(), "the store is cleared");
    let (status, answer) = refresh_at(&provider, &client_id, &second_refresh).await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (400, Some("invalid_grant")),
        "the revoked refresh token is refused: {answer}"
    );
    // The connection does not log in again behind the user's back.
    let error = call(&tools).await.unwrap_err();
    assert!(
        error.contains("signed out") && error.contains("connect again"),
        "{error}"
    );
    assert_eq!(user.logins(), 1);
    // A JWT is checked offline: a revoked one still passes until it expires (what the
    // introspection path is for). Said here so that the docs stay true.
    let (status, _) = initialize_with(&resource, &second_access).await;
    assert_eq!(status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opaque_tokens_introspected_revocation_elsewhere_logs_in_again_and_sign_out_ends_it() {
    install_crypto();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let resource = format!("http://{}/mcp", listener.local_addr().unwrap());
    let provider = Provider::start(&[(&resource, "opaque")]).await;
    let validator = IntrospectionValidator::new(
        provider.endpoint("introspection_endpoint"),
        INTROSPECTOR.0,
        INTROSPECTOR.1,
        &resource,
    )
    .unwrap()
    .issuer(&provider.issuer)
    .with_leeway(0);
    serve(listener, &provider, validator);

    let (user, store) = (User::default(), InMemoryCredentialStore::new());
    let tools = McpTools::connect_oauth(&resource, user.client(&store))
        .await
        .expect("the login succeeds");
    let (client_id, first_access, first_refresh) = tokens(&store).await.unwrap();
    assert_eq!(
        first_access.split('.').count(),
        1,
        "an opaque access token: only introspection can check it"
    );
    assert_eq!(
        call(&tools).await.unwrap(),
        json!({"id": "ada", "scopes": ["mcp:tools"]})
    );

    // Expired: the introspection says so, and the client refreshes without a login.
    tokio::time::sleep(Duration::from_secs(ACCESS_TOKEN_TTL + 1)).await;
    let (status, challenge) = initialize_with(&resource, &first_access).await;
    assert_eq!(status, 401, "the expired token is refused");
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    assert_eq!(
        call(&tools).await.unwrap(),
        json!({"id": "ada", "scopes": ["mcp:tools"]})
    );
    assert_eq!(user.logins(), 1, "a refresh, not a login");
    let (_, access, refresh) = tokens(&store).await.unwrap();
    assert_ne!(access, first_access);
    assert_ne!(refresh, first_refresh);

    // Revoked elsewhere (the user at the provider, an administrator): the grant ends there,
    // the introspection says inactive at once, the refresh is refused, and the client asks
    // the user to log in again.
    let revoked = reqwest::Client::new()
        .post(provider.endpoint("revocation_endpoint"))
        .form(&[
            ("token", refresh.as_deref().unwrap()),
            ("token_type_hint", "refresh_token"),
            ("client_id", &client_id),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(revoked.status(), 200);
    let (status, challenge) = initialize_with(&resource, &access).await;
    assert_eq!(status, 401, "inactive at once: {challenge}");
    assert!(challenge.contains("not active"), "{challenge}");
    assert_eq!(
        call(&tools).await.unwrap(),
        json!({"id": "ada", "scopes": ["mcp:tools"]})
    );
    assert_eq!(user.logins(), 2, "logged in again");

    // Signing out: both tokens revoked at the provider, the next call fails and says why.
    let (_, access, _) = tokens(&store).await.unwrap();
    assert_eq!(initialize_with(&resource, &access).await.0, 200);
    tools.revoke().await.unwrap();
    let (status, challenge) = initialize_with(&resource, &access).await;
    assert_eq!(status, 401, "the revoked access token is inactive");
    assert!(challenge.contains("not active"), "{challenge}");
    let error = call(&tools).await.unwrap_err();
    assert!(error.contains("signed out"), "{error}");
    assert_eq!(user.logins(), 2, "no login behind the user's back");
}

#[test]
fn the_form_reader_reads_the_providers_pages() {
    let login = r#"<div><form autocomplete="off" action="/interaction/abc/login?x=1&amp;y=2" method="post">
  <input type="hidden" name="prompt" value="login"/>
  <input required type="text" name="login" placeholder="Enter any login" autofocus="on">
  <input required type="password" name="password" placeholder="and password" >
  <button type="submit" class="login login-submit">Sign-in</button></form></div>"#;
    let (action, fields) = html_form(login).unwrap();
    assert_eq!(action, "/interaction/abc/login?x=1&y=2");
    assert_eq!(
        fields,
        [
            ("prompt".into(), "login".into()),
            ("login".into(), String::new()),
            ("password".into(), String::new())
        ]
    );
    assert!(html_form("<p>no form</p>").is_none());
    assert!(html_form("<form method=post>").is_none(), "no action");
}
