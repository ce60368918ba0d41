//! [`McpTools`](crate::McpTools) as an OAuth 2.1 client of a protected MCP server (feature
//! `client-oauth`), on rmcp's `auth` module: rmcp discovers, registers, logs in, exchanges,
//! refreshes and stores; this module decides when (the server's `401`/`403` challenges) and
//! hands the one step only the application can do, the user's login in a browser, to an
//! [`Authorize`] of the application's.
//!
//! What rmcp does, unchanged: protected resource metadata discovery (RFC 9728, from the
//! challenge's `resource_metadata` and the well-known paths) and the check that it describes
//! this server (its `resource`); authorization server metadata (RFC 8414, OpenID discovery,
//! and the 2025-03-26 fallbacks: metadata at the server's root, then `/authorize`, `/token`,
//! `/register`); the client's identity (a pre-registered client, else a client ID metadata
//! document when the server supports them, else dynamic registration); scope selection (the
//! challenge's `scope`, else the resource's `scopes_supported`, else none; `offline_access`
//! when the authorization server offers it); PKCE (S256) with `state` and the `iss` check
//! (RFC 9207); the `resource` indicator (RFC 8707) on every request, so the token's audience is
//! this server; client credentials (`client_secret_basic` or `_post` as the server says, and
//! `private_key_jwt` with `client-oauth-jwt`); refresh before expiry and after a rejected
//! token; scope step-up. What this module adds: the reactive order (connect, read the
//! challenge, authorize, connect again), a bounded number of authorizations per connection
//! and per call, an authorization server's `error` redirect read as such (rmcp reports only a
//! missing `code`), token revocation when the user signs out (RFC 7009, `revoke.rs`: rmcp has
//! no call for it), and errors that say what to do.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use rmcp::transport::auth::{
    AuthClient, AuthorizationCallback, AuthorizationManager, AuthorizationRequest,
    AuthorizationSession, WWWAuthenticateParams,
};
pub use rmcp::transport::auth::{
    AuthError, CredentialRefreshGuard, CredentialStore, InMemoryCredentialStore, StoredCredentials,
};

use super::McpError;

mod revoke;

/// What [`Authorize::authorize`] returns: the URL the authorization server redirected the
/// user's browser to (with `code`, `state` and perhaps `iss`), or why there is none.
pub type AuthorizeFuture<'a> = Pin<Box<dyn Future<Output = Result<String, String>> + Send + 'a>>;

/// The user's part of a login: given the authorization URL (the authorization server's login
/// page, with the client, scopes, PKCE challenge and `state` in it), show it to the user (open
/// a browser) and return the URL the server redirected to once the user agreed: the request
/// that reached the application's redirect URI (e.g. a loopback listener at
/// `http://127.0.0.1:PORT/callback`), whole. A closure `Fn(String) -> impl Future<Output =
/// Result<String, String>>` is one.
pub trait Authorize: Send + Sync {
    /// Logs the user in at `authorization_url`; the redirect URL, or why the login failed.
    fn authorize<'a>(&'a self, authorization_url: &'a str) -> AuthorizeFuture<'a>;
}

impl<F, Fut> Authorize for F
where
    F: Fn(String) -> Fut + Send + Sync,
    Fut: Future<Output = Result<String, String>> + Send + 'static,
{
    fn authorize<'a>(&'a self, authorization_url: &'a str) -> AuthorizeFuture<'a> {
        Box::pin(self(authorization_url.to_owned()))
    }
}

/// How the client gets its tokens.
#[derive(Clone)]
enum Grant {
    /// A user logs in (authorization code with PKCE).
    Code {
        redirect_uri: String,
        authorize: Arc<dyn Authorize>,
    },
    /// The client acts for itself (client credentials, SEP-1046) with a secret.
    Secret {
        client_id: String,
        client_secret: String,
    },
    /// Enterprise-managed authorization (SEP-990, cross-app access): the user's ID token from
    /// the enterprise's identity provider is exchanged there for an ID-JAG (RFC 8693), which
    /// the MCP server's authorization server takes for an access token (RFC 7523).
    Enterprise(Arc<Enterprise>),
    /// The client acts for itself, authenticated by a JWT signed with its private key.
    #[cfg(feature = "client-oauth-jwt")]
    PrivateKeyJwt {
        client_id: String,
        key_pem: Vec<u8>,
        algorithm: rmcp::transport::auth::JwtSigningAlgorithm,
    },
}

/// The enterprise's identity provider and this client's registrations, for
/// [`OAuthClient::enterprise`].
#[derive(Clone)]
pub struct Enterprise {
    /// The identity provider's issuer (`https://idp.example`).
    pub idp_issuer: String,
    /// Its token endpoint, where the ID token is exchanged.
    pub idp_token_endpoint: String,
    /// This client at the identity provider.
    pub idp_client_id: String,
    /// Its secret there (HTTP Basic), or `None` for a public client.
    pub idp_client_secret: Option<String>,
    /// The user's ID token, from the identity provider's login.
    pub id_token: String,
    /// This client at the MCP server's authorization server.
    pub client_id: String,
    /// Its secret there (basic or post, as the server's metadata says).
    pub client_secret: String,
}

impl std::fmt::Debug for Enterprise {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // No secret, no token.
        f.debug_struct("Enterprise")
            .field("idp_issuer", &self.idp_issuer)
            .field("idp_client_id", &self.idp_client_id)
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

/// The signing algorithms of [`OAuthClient::private_key_jwt`].
#[cfg(feature = "client-oauth-jwt")]
pub use rmcp::transport::auth::JwtSigningAlgorithm;

/// How [`McpTools::connect_oauth`](crate::McpTools::connect_oauth) gets and keeps its tokens.
/// Cheap to clone.
#[derive(Clone)]
pub struct OAuthClient {
    grant: Grant,
    client_name: String,
    client_id: Option<(String, Option<String>)>,
    client_metadata_url: Option<String>,
    scopes: Vec<String>,
    store: Arc<dyn CredentialStore>,
    private_addresses: bool,
}

impl std::fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // No secret, no token.
        let grant = match &self.grant {
            Grant::Code { redirect_uri, .. } => format!("authorization code to {redirect_uri}"),
            Grant::Secret { client_id, .. } => format!("client credentials of {client_id}"),
            Grant::Enterprise(e) => format!("ID-JAG of {} from {}", e.client_id, e.idp_issuer),
            #[cfg(feature = "client-oauth-jwt")]
            Grant::PrivateKeyJwt { client_id, .. } => format!("private_key_jwt of {client_id}"),
        };
        f.debug_struct("OAuthClient")
            .field("grant", &grant)
            .field("client_name", &self.client_name)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

impl OAuthClient {
    fn new(grant: Grant) -> OAuthClient {
        OAuthClient {
            grant,
            client_name: "toolc".into(),
            client_id: None,
            client_metadata_url: None,
            scopes: Vec::new(),
            store: Arc::new(InMemoryCredentialStore::new()),
            private_addresses: false,
        }
    }

    /// A user logs in (authorization code with PKCE): `authorize` shows them the authorization
    /// server's page and returns the redirect to `redirect_uri` (see [`Authorize`]).
    pub fn authorization_code(
        redirect_uri: impl Into<String>,
        authorize: impl Authorize + 'static,
    ) -> OAuthClient {
        OAuthClient::new(Grant::Code {
            redirect_uri: redirect_uri.into(),
            authorize: Arc::new(authorize),
        })
    }

    /// The client acts for itself (client credentials) with a secret, sent as the
    /// authorization server's metadata says (`client_secret_basic` or `client_secret_post`).
    pub fn client_secret(
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> OAuthClient {
        OAuthClient::new(Grant::Secret {
            client_id: client_id.into(),
            client_secret: client_secret.into(),
        })
    }

    /// Enterprise-managed authorization (SEP-990): no login here; the user's ID token from the
    /// enterprise's identity provider is exchanged for an access token to the MCP server (see
    /// [`Enterprise`]). When the token expires, the same ID token is exchanged again; once it
    /// has expired too, connecting fails until the application gets a new one.
    pub fn enterprise(enterprise: Enterprise) -> OAuthClient {
        OAuthClient::new(Grant::Enterprise(Arc::new(enterprise)))
    }

    /// The client acts for itself (client credentials), authenticated by a JWT it signs with
    /// `key_pem` (`private_key_jwt`, RFC 7523; the key registered with the server).
    #[cfg(feature = "client-oauth-jwt")]
    pub fn private_key_jwt(
        client_id: impl Into<String>,
        key_pem: impl Into<Vec<u8>>,
        algorithm: JwtSigningAlgorithm,
    ) -> OAuthClient {
        OAuthClient::new(Grant::PrivateKeyJwt {
            client_id: client_id.into(),
            key_pem: key_pem.into(),
            algorithm,
        })
    }

    /// The name dynamic registration gives the authorization server (default `toolc`).
    pub fn client_name(mut self, name: impl Into<String>) -> OAuthClient {
        self.client_name = name.into();
        self
    }

    /// A client registered with the authorization server beforehand: no registration. With a
    /// secret, it authenticates as the server's metadata says (basic or post).
    pub fn preregistered(
        mut self,
        client_id: impl Into<String>,
        client_secret: Option<String>,
    ) -> OAuthClient {
        self.client_id = Some((client_id.into(), client_secret));
        self
    }

    /// The `https://` URL of this client's metadata document (a client ID metadata document,
    /// SEP-991), used as the client ID where the authorization server supports them; elsewhere
    /// the client registers dynamically.
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> OAuthClient {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// The scopes to ask for. Without them, as MCP says: the challenge's `scope`, else the
    /// resource's `scopes_supported`, else none.
    pub fn scopes<I, S>(mut self, scopes: I) -> OAuthClient
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Where the tokens (and the registered client ID) are kept, for the next connection and
    /// the next run: a keychain, a file, a database. Default: in memory
    /// ([`InMemoryCredentialStore`]), lost with the process.
    pub fn credential_store(mut self, store: impl CredentialStore + 'static) -> OAuthClient {
        self.store = Arc::new(store);
        self
    }

    /// Lets discovery reach an authorization server at a private address (`10.0.0.9`) when the
    /// MCP server's own address is public. Loopback servers (`localhost`, `127.0.0.1`) may
    /// always name loopback authorization servers; link-local ones are always refused.
    pub fn allow_private_addresses(mut self) -> OAuthClient {
        self.private_addresses = true;
        self
    }
}

/// The store behind an `Arc`, as rmcp wants one by value.
struct Shared(Arc<dyn CredentialStore>);

#[async_trait::async_trait]
impl CredentialStore for Shared {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        self.0.load().await
    }
    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.0.save(credentials).await
    }
    async fn clear(&self) -> Result<(), AuthError> {
        self.0.clear().await
    }
    async fn on_refresh_token_rejected(
        &self,
        credentials: &StoredCredentials,
    ) -> Result<(), AuthError> {
        self.0.on_refresh_token_rejected(credentials).await
    }
    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        self.0.acquire_refresh_guard().await
    }
}

/// How many authorizations in a row (without a request going through in between) may be made
/// before the client gives up: a server that keeps refusing every new token must not loop the user
/// through logins (MCP: clients limit their retries).
pub(crate) const MAX_AUTHORIZATIONS: u32 = 3;

/// One server's OAuth state: rmcp's manager (shared with the transport's [`AuthClient`], which
/// puts the token on each request and refreshes it) and how to get a new token.
pub(crate) struct Session {
    pub(crate) client: AuthClient<reqwest::Client>,
    config: OAuthClient,
    url: String,
    base: url::Url,
    /// Authorizations since a request last went through after one (logins, step-ups, client
    /// credentials exchanges).
    authorizations: std::sync::atomic::AtomicU32,
    /// The authorization server's metadata as last discovered (for its `revocation_endpoint`,
    /// which rmcp's manager does not hand out).
    metadata: std::sync::Mutex<Option<rmcp::transport::auth::AuthorizationMetadata>>,
    /// The user signed out ([`Session::revoke`]): no authorization is made again.
    signed_out: std::sync::atomic::AtomicBool,
}

impl Session {
    /// The manager for `url`, with the tokens the store has (none is fine: the first request
    /// goes without, and its challenge starts the login).
    pub(crate) async fn new(url: &str, config: OAuthClient) -> Result<Session, McpError> {
        let base =
            url::Url::parse(url).map_err(|e| McpError(format!("`{url}` is not a URL: {e}")))?;
        let manager = if config.private_addresses {
            AuthorizationManager::new_allowing_private_addresses(url).await
        } else {
            AuthorizationManager::new(url).await
        };
        let mut manager = manager.map_err(|e| explain("setting up OAuth", url, e))?;
        manager.set_credential_store(Shared(config.store.clone()));
        // Stored tokens from an earlier run: used (and refreshed) until the server refuses
        // them. A store that fails is the application's to fix, not a reason to log in again.
        match manager.initialize_from_store().await {
            Ok(_) => {}
            Err(AuthError::CredentialStoreError(e)) => {
                return Err(McpError(format!(
                    "OAuth for {url}: the credential store failed to load: {e}"
                )))
            }
            // Metadata that cannot be read now: the challenge will lead discovery.
            Err(e) => tracing::debug!(error = %e, "stored OAuth credentials not used"),
        }
        Ok(Session {
            client: AuthClient::new(reqwest::Client::new(), manager),
            config,
            url: url.to_owned(),
            base,
            authorizations: Default::default(),
            metadata: Default::default(),
            signed_out: Default::default(),
        })
    }

    /// The server refused a request with `challenge` (its `WWW-Authenticate`): get a token
    /// that answers it. `403 insufficient_scope` with a token: the scopes it names on top of
    /// the granted ones (step-up); anything else: a new authorization, discovery led by the
    /// challenge.
    pub(crate) async fn challenged(&self, challenge: Option<&str>) -> Result<(), McpError> {
        use std::sync::atomic::Ordering;
        if self.signed_out.load(Ordering::Relaxed) {
            return Err(McpError(format!(
                "OAuth for {}: this connection was signed out (its tokens revoked); connect again (McpTools::connect_oauth) to sign in",
                self.url
            )));
        }
        let made = self.authorizations.fetch_add(1, Ordering::Relaxed);
        if made >= MAX_AUTHORIZATIONS {
            return Err(McpError(format!(
                "OAuth for {}: the server still refuses after {made} authorizations ({}); check the scopes the server asks for and the ones the authorization server grants this client",
                self.url,
                challenge.unwrap_or("no challenge")
            )));
        }
        let params = challenge.map(|c| WWWAuthenticateParams::parse(c, &self.base));
        let mut manager = self.client.auth_manager.lock().await;
        let has_token = manager.get_access_token().await.is_ok();
        let step_up = params.as_ref().is_some_and(|p| p.is_insufficient_scope()) && has_token;
        let required = params.as_ref().and_then(|p| p.scope.clone());
        match (&self.config.grant, step_up) {
            (Grant::Code { authorize, .. }, true) => {
                let url = manager
                    .request_scope_upgrade(required.as_deref().unwrap_or_default())
                    .await
                    .map_err(|e| explain("asking for more scopes", &self.url, e))?;
                let callback = login(authorize.as_ref(), &url).await?;
                manager
                    .exchange_code_for_token_with_issuer(
                        &callback.code,
                        &callback.csrf_token,
                        callback.issuer.as_deref(),
                    )
                    .await
                    .map_err(|e| explain("exchanging the code for a token", &self.url, e))?;
                Ok(())
            }
            _ => self.authorize(&mut manager, challenge, required).await,
        }
    }

    /// A whole authorization: discovery (from the challenge), then the grant.
    async fn authorize(
        &self,
        slot: &mut AuthorizationManager,
        challenge: Option<&str>,
        required: Option<String>,
    ) -> Result<(), McpError> {
        let url = self.url.as_str();
        let metadata = match slot.resolve_metadata_from_challenge(challenge).await {
            Ok(resolution) => resolution.metadata,
            Err(e @ AuthError::AuthorizationServerMismatch { .. }) => {
                match legacy_metadata(&self.base).await {
                    Some(metadata) => metadata,
                    None => return Err(explain("discovering the authorization server", url, e)),
                }
            }
            Err(e) => return Err(explain("discovering the authorization server", url, e)),
        };
        let metadata_copy = metadata.clone();
        *self.metadata.lock().unwrap_or_else(|e| e.into_inner()) = Some(metadata.clone());
        slot.set_metadata(metadata);
        match &self.config.grant {
            Grant::Code {
                redirect_uri,
                authorize,
            } => {
                let mut request = AuthorizationRequest::new(redirect_uri.clone())
                    .with_client_name(self.config.client_name.clone());
                // MCP's rule for a login: the challenge's scopes, else the resource's
                // `scopes_supported` (not both: least privilege; a tool that needs more says so
                // with a 403, and the step-up adds them).
                request = if self.config.scopes.is_empty() {
                    request.with_initial_scope_selection()
                } else {
                    request.with_scopes(self.config.scopes.iter().cloned())
                };
                if let Some((id, secret)) = &self.config.client_id {
                    request = request.with_preregistered_client(id.clone());
                    if let Some(secret) = secret {
                        request = request.with_client_secret(secret.clone());
                    }
                }
                if let Some(metadata) = &self.config.client_metadata_url {
                    request = request.with_client_metadata_url(metadata.clone());
                }
                // rmcp's session takes the manager; a fresh one holds its place meanwhile.
                let placeholder = AuthorizationManager::new(url)
                    .await
                    .map_err(|e| explain("setting up OAuth", url, e))?;
                let manager = std::mem::replace(slot, placeholder);
                let session = match AuthorizationSession::new(manager, request).await {
                    Ok(session) => session,
                    Err((manager, e)) => {
                        *slot = manager;
                        return Err(explain("registering the client", url, e));
                    }
                };
                let result = async {
                    let callback =
                        login(authorize.as_ref(), session.get_authorization_url()).await?;
                    session
                        .handle_callback_with_issuer(
                            &callback.code,
                            &callback.csrf_token,
                            callback.issuer.as_deref(),
                        )
                        .await
                        .map_err(|e| explain("exchanging the code for a token", url, e))
                }
                .await;
                *slot = session.auth_manager;
                result.map(drop)
            }
            Grant::Enterprise(enterprise) => {
                self.enterprise(&metadata_copy, enterprise, required).await
            }
            grant => {
                let config = self.credentials_config(grant, required);
                slot.validate_client_credentials_metadata(&config)
                    .and_then(|()| slot.configure_client_credentials(&config))
                    .map_err(|e| explain("setting up client credentials", url, e))?;
                #[cfg(feature = "client-oauth-jwt")]
                return self.exchange_apart(metadata_copy, config).await;
                #[cfg(not(feature = "client-oauth-jwt"))]
                slot.exchange_client_credentials(&config)
                    .await
                    .map(drop)
                    .map_err(|e| explain("getting a token with the client's credentials", url, e))
            }
        }
    }

    /// rmcp's client credentials exchange, on a thread of its own: with rmcp 3.11's
    /// `auth-client-credentials-jwt`, its future is not `Send` (the `private_key_jwt` branch
    /// holds a form serializer across an await), so it cannot run on the caller's task. A manager of its own there, with the same metadata and store, does the
    /// exchange and saves the token, where the connection's manager reads it.
    #[cfg(feature = "client-oauth-jwt")]
    async fn exchange_apart(
        &self,
        metadata: rmcp::transport::auth::AuthorizationMetadata,
        config: rmcp::transport::auth::ClientCredentialsConfig,
    ) -> Result<(), McpError> {
        let (url, store, private) = (
            self.url.clone(),
            self.config.store.clone(),
            self.config.private_addresses,
        );
        let (tx, rx) = tokio::sync::oneshot::channel();
        let exchange = move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| {
                    AuthError::InternalError(format!("no runtime for the exchange: {e}"))
                })?;
            runtime.block_on(async move {
                let mut manager = if private {
                    AuthorizationManager::new_allowing_private_addresses(url.as_str()).await?
                } else {
                    AuthorizationManager::new(url.as_str()).await?
                };
                manager.set_credential_store(Shared(store));
                manager.set_metadata(metadata);
                manager.configure_client_credentials(&config)?;
                manager.exchange_client_credentials(&config).await.map(drop)
            })
        };
        std::thread::Builder::new()
            .name("toolc-oauth-jwt".into())
            .spawn(move || {
                let _ = tx.send(exchange());
            })
            .map_err(|e| {
                McpError(format!(
                    "OAuth for {}: cannot start a thread: {e}",
                    self.url
                ))
            })?;
        match rx.await {
            Ok(result) => result.map_err(|e| {
                explain(
                    "getting a token with the client's credentials",
                    &self.url,
                    e,
                )
            }),
            Err(_) => Err(McpError(format!(
                "OAuth for {}: the client assertion exchange stopped",
                self.url
            ))),
        }
    }

    /// rmcp's enterprise-managed exchange (ID token → ID-JAG at the identity provider → access
    /// token at the MCP server's authorization server); the token is saved in the store, where
    /// the transport reads it.
    async fn enterprise(
        &self,
        metadata: &rmcp::transport::auth::AuthorizationMetadata,
        enterprise: &Enterprise,
        required: Option<String>,
    ) -> Result<(), McpError> {
        use rmcp::transport::auth::enterprise::{
            EmaAuthorizationServer, EmaClientAuthentication, EmaExchangeRequest,
        };
        let url = self.url.as_str();
        let secret = |s: &str| oauth2::ClientSecret::new(s.to_owned());
        let Some(issuer) = metadata.issuer.clone() else {
            return Err(McpError(format!(
                "OAuth for {url}: the authorization server's metadata has no issuer, which the ID-JAG's audience must be"
            )));
        };
        let token_endpoint = metadata.token_endpoint.clone();
        let methods: Vec<&str> = metadata
            .additional_fields
            .get("token_endpoint_auth_methods_supported")
            .and_then(serde_json::Value::as_array)
            .map(|m| m.iter().filter_map(serde_json::Value::as_str).collect())
            .unwrap_or_default();
        let only_post =
            methods.contains(&"client_secret_post") && !methods.contains(&"client_secret_basic");
        let resource_auth = if only_post {
            EmaClientAuthentication::ClientSecretPost(secret(&enterprise.client_secret))
        } else {
            EmaClientAuthentication::ClientSecretBasic(secret(&enterprise.client_secret))
        };
        let idp_auth = match &enterprise.idp_client_secret {
            Some(s) => EmaClientAuthentication::ClientSecretBasic(secret(s)),
            None => EmaClientAuthentication::None,
        };
        let idp = EmaAuthorizationServer::new(
            enterprise.idp_issuer.clone(),
            enterprise.idp_token_endpoint.clone(),
            enterprise.idp_client_id.clone(),
        )
        .with_client_authentication(idp_auth);
        let resource_as =
            EmaAuthorizationServer::new(issuer, token_endpoint, enterprise.client_id.clone())
                .with_client_authentication(resource_auth);
        let mut scopes = self.config.scopes.clone();
        for scope in required.iter().flat_map(|s| s.split_whitespace()) {
            if !scopes.iter().any(|s| s == scope) {
                scopes.push(scope.to_owned());
            }
        }
        let http = rmcp::transport::auth::default_oauth_http_client()
            .map_err(|e| explain("setting up OAuth", url, e))?;
        let token = EmaExchangeRequest::new_with_id_token(idp, resource_as, url, &enterprise.id_token)
            .with_scopes(scopes)
            .exchange(&http, &http)
            .await
            .map_err(|e| {
                McpError(format!(
                    "OAuth for {url}: the enterprise-managed exchange failed: {e} (an `invalid_grant` at the IdentityProvider stage: the ID token expired or is not for this client; log the user in at the identity provider again)"
                ))
            })?;
        let mut response = serde_json::json!({
            "access_token": token.access_token.secret(),
            "token_type": "Bearer",
        });
        if let Some(expires_in) = token.expires_in {
            response["expires_in"] = expires_in.as_secs().into();
        }
        let response = serde_json::from_value(response).map_err(|e| {
            McpError(format!(
                "OAuth for {url}: the access token is unusable: {e}"
            ))
        })?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .ok();
        let granted = token.scopes.into_iter().collect();
        let stored =
            StoredCredentials::new(enterprise.client_id.clone(), Some(response), granted, now);
        self.config
            .store
            .save(stored)
            .await
            .map_err(|e| explain("saving the token", url, e))
    }

    /// rmcp's client credentials settings for this server: the `resource` is the server's
    /// URL (the token's audience), the scopes the configured ones and those challenged.
    fn credentials_config(
        &self,
        grant: &Grant,
        required: Option<String>,
    ) -> rmcp::transport::auth::ClientCredentialsConfig {
        use rmcp::transport::auth::ClientCredentialsConfig;
        let mut scopes = self.config.scopes.clone();
        for scope in required.iter().flat_map(|s| s.split_whitespace()) {
            if !scopes.iter().any(|s| s == scope) {
                scopes.push(scope.to_owned());
            }
        }
        let resource = Some(self.url.clone());
        match grant {
            #[cfg(feature = "client-oauth-jwt")]
            Grant::PrivateKeyJwt {
                client_id,
                key_pem,
                algorithm,
            } => ClientCredentialsConfig::PrivateKeyJwt {
                client_id: client_id.clone(),
                signing_key: key_pem.clone(),
                signing_algorithm: *algorithm,
                token_endpoint_audience: None,
                scopes,
                resource,
            },
            Grant::Secret {
                client_id,
                client_secret,
            } => ClientCredentialsConfig::ClientSecret {
                client_id: client_id.clone(),
                client_secret: client_secret.clone(),
                scopes,
                resource,
            },
            // Not reached: these grants do not get here.
            Grant::Code { .. } | Grant::Enterprise(_) => ClientCredentialsConfig::ClientSecret {
                client_id: String::new(),
                client_secret: String::new(),
                scopes,
                resource,
            },
        }
    }
}

impl super::client::Reauthorize for Session {
    fn challenged<'a>(
        &'a self,
        challenge: &'a str,
    ) -> Pin<Box<dyn Future<Output = Result<(), McpError>> + Send + 'a>> {
        Box::pin(Session::challenged(self, Some(challenge)))
    }

    fn revoke(&self) -> Pin<Box<dyn Future<Output = Result<(), McpError>> + Send + '_>> {
        Box::pin(Session::revoke(self))
    }

    fn settled(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            self.authorizations
                .store(0, std::sync::atomic::Ordering::Relaxed);
            // rmcp counts step-ups over the manager's life; a token that went through ends
            // this run of them.
            self.client
                .auth_manager
                .lock()
                .await
                .reset_scope_upgrade_attempts()
                .await;
        })
    }
}

/// The largest authorization server metadata document read.
const MAX_METADATA_BYTES: usize = 64 * 1024;

/// A 2025-03-26 server's authorization server metadata, at its origin's
/// `/.well-known/oauth-authorization-server`, whose `issuer` names a path on that origin
/// (`https://mcp.example/oauth`), when the server has no protected resource metadata. RFC 8414
/// wants the issuer to be the URL the document was found from, and rmcp refuses the
/// document; but under 2025-03-26 the MCP server's origin *is* its authorization server, so a
/// document it serves about an issuer on its own origin comes from the party that was asked
/// (the mix-up the check guards against needs a second party). Any other origin stays refused.
async fn legacy_metadata(
    server: &url::Url,
) -> Option<rmcp::transport::auth::AuthorizationMetadata> {
    let mut at = server.clone();
    at.set_path("/.well-known/oauth-authorization-server");
    at.set_query(None);
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(std::time::Duration::from_secs(30))
        .build()
        .ok()?;
    let mut response = http.get(at).send().await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.ok()? {
        if body.len() + chunk.len() > MAX_METADATA_BYTES {
            return None;
        }
        body.extend_from_slice(&chunk);
    }
    let metadata: rmcp::transport::auth::AuthorizationMetadata =
        serde_json::from_slice(&body).ok()?;
    let issuer = url::Url::parse(metadata.issuer.as_deref()?).ok()?;
    let endpoints = [&metadata.authorization_endpoint, &metadata.token_endpoint];
    let same_origin = |u: &url::Url| u.origin() == server.origin();
    (same_origin(&issuer)
        && endpoints
            .iter()
            .all(|e| url::Url::parse(e).is_ok_and(|u| same_origin(&u))))
    .then(|| {
        tracing::info!(issuer = %issuer, "2025-03-26 authorization server metadata on the MCP server's origin accepted");
        metadata
    })
}

/// The user's login: the application's [`Authorize`], its redirect read (an authorization
/// server's `error` redirect said as such).
async fn login(
    authorize: &dyn Authorize,
    authorization_url: &str,
) -> Result<AuthorizationCallback, McpError> {
    let redirect = authorize
        .authorize(authorization_url)
        .await
        .map_err(|why| McpError(format!("the OAuth login did not complete: {why}")))?;
    callback(&redirect)
}

/// The code, `state` and `iss` of a redirect URL; an `error` redirect (RFC 6749 §4.1.2.1: the
/// user refused, the client is not allowed) as the server's words.
fn callback(redirect: &str) -> Result<AuthorizationCallback, McpError> {
    let parsed = url::Url::parse(redirect).map_err(|e| {
        McpError(format!(
            "the OAuth login returned `{redirect}`, which is not the redirect URL ({e}): return the whole URL the authorization server redirected to"
        ))
    })?;
    let field = |name: &str| {
        parsed
            .query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    };
    if let Some(error) = field("error") {
        let description = field("error_description").unwrap_or_default();
        return Err(McpError(format!(
            "the authorization server refused the login: {error} {description}"
        )));
    }
    AuthorizationCallback::from_redirect_url(redirect).map_err(|e| {
        McpError(format!(
            "the OAuth redirect is incomplete ({e}): it needs the `code` and `state` the authorization server added"
        ))
    })
}

/// An rmcp auth error as what failed, at which server, and what to do.
fn explain(doing: &str, url: &str, error: AuthError) -> McpError {
    let help = match &error {
        AuthError::NoAuthorizationSupport | AuthError::MetadataError(_) | AuthError::DiscoveryRequestFailed { .. } => {
            "the server's protected resource metadata and its authorization server's metadata could not be read; check the URL, and that both servers are up"
        }
        AuthError::ProtectedResourceMetadataInvalid { .. } => {
            "the server's protected resource metadata is not for this URL: connect to the URL it names as `resource`, or fix the server's metadata"
        }
        AuthError::AuthorizationServersUnavailable { .. } => {
            "none of the authorization servers the resource names could be reached"
        }
        AuthError::RegistrationFailed(_) => {
            "the authorization server did not register the client: register it beforehand and use `OAuthClient::preregistered`, or host a client ID metadata document (`client_metadata_url`)"
        }
        AuthError::PkceUnsupported => {
            "the authorization server does not offer PKCE with S256, which OAuth 2.1 requires; it cannot be used"
        }
        AuthError::AuthorizationServerMismatch { .. } | AuthError::AuthorizationServerMissingIssuer { .. } => {
            "the redirect did not come from the authorization server that was asked (a mix-up attack, or a misconfigured issuer); log in again"
        }
        AuthError::TokenExchangeFailed(_) | AuthError::AuthorizationFailed(_) => {
            "the authorization server refused the code or the client; log in again, and check the client's registration (redirect URI, secret)"
        }
        AuthError::ClientCredentialsError(_) => {
            "check the client ID and secret (or key), and that the authorization server allows the client_credentials grant"
        }
        AuthError::InvalidScope(_) => "the scopes asked for were refused",
        AuthError::CredentialStoreError(_) => "the credential store failed: fix the store",
        _ => "see the error",
    };
    McpError(format!("OAuth for {url}: {doing} failed: {error} ({help})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_login_says_what_the_server_said() {
        let refused =
            callback("http://127.0.0.1:1/cb?error=access_denied&error_description=no&state=s")
                .err()
                .map(|e| e.0)
                .unwrap_or_default();
        assert!(refused.contains("access_denied no"), "{refused}");
        let partial = callback("http://127.0.0.1:1/cb?code=c")
            .err()
            .map(|e| e.0)
            .unwrap_or_default();
        assert!(partial.contains("`code` and `state`"), "{partial}");
        let junk = callback("not a url").err().map(|e| e.0).unwrap_or_default();
        assert!(junk.contains("return the whole URL"), "{junk}");
        let good = callback("http://127.0.0.1:1/cb?code=c&state=s&iss=https%3A%2F%2Fas").ok();
        assert_eq!(
            good.map(|c| (c.code, c.csrf_token, c.issuer)),
            Some(("c".into(), "s".into(), Some("https://as".into())))
        );
    }
}
