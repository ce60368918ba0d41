//! Signing out (RFC 7009): the stored refresh token and access token are revoked at the
//! authorization server's `revocation_endpoint` (from its metadata), authenticated as the client
//! was registered, and the credential store is cleared. rmcp's `auth` has no call for it, so
//! this is one form `POST` per token over reqwest.
//!
//! What the connection does afterwards is what a user who signed out expects: nothing signs
//! them in again behind their back. A call the server then refuses fails with
//! `mcp_unauthorized` saying the connection was signed out; connecting again
//! (`McpTools::connect_oauth`) is how to sign in. A token revoked *elsewhere* (an administrator,
//! the user at the provider's account page) is a different case: the server's `401` is then
//! answered with a new login, as for any token that stopped working.

use rmcp::transport::auth::{AuthorizationMetadata, StoredCredentials};
use serde_json::Value;

use super::{explain, Grant, Session};
use crate::McpError;

/// The largest revocation error response read.
const MAX_ERROR_BYTES: usize = 16 * 1024;

impl Session {
    /// Revokes the stored tokens at the authorization server and clears the store; from then
    /// on the connection does not authorize again. The store is cleared even when the
    /// authorization server could not be told (the error says so: those tokens stay valid
    /// there until they expire).
    pub(crate) async fn revoke(&self) -> Result<(), McpError> {
        self.signed_out
            .store(true, std::sync::atomic::Ordering::Relaxed);
        let url = self.url.as_str();
        let stored = self
            .config
            .store
            .load()
            .await
            .map_err(|e| explain("reading the tokens to revoke", url, e))?;
        let revoked = match stored {
            Some(credentials) if credentials.token_response.is_some() => {
                self.revoke_at_server(&credentials).await
            }
            // Nothing was issued: nothing to tell the server.
            _ => Ok(()),
        };
        // The user signed out: the local tokens go whatever the server said.
        let cleared = self
            .config
            .store
            .clear()
            .await
            .map_err(|e| explain("clearing the credential store", url, e));
        revoked.and(cleared)
    }

    /// One revocation request per token, the refresh token first (RFC 7009 §2.1: revoking it
    /// may end the whole grant, and a leaked refresh token is the longer-lived risk).
    async fn revoke_at_server(&self, credentials: &StoredCredentials) -> Result<(), McpError> {
        use oauth2::TokenResponse;
        let url = self.url.as_str();
        let Some(tokens) = &credentials.token_response else {
            return Ok(());
        };
        let metadata = self.metadata_for_revocation().await?;
        let Some(endpoint) = metadata
            .additional_fields
            .get("revocation_endpoint")
            .and_then(Value::as_str)
        else {
            return Err(McpError(format!(
                "OAuth for {url}: the authorization server offers no token revocation (its metadata has no `revocation_endpoint`); the tokens were deleted here but stay valid there until they expire"
            )));
        };
        let auth = self.revocation_auth(&metadata, &credentials.client_id)?;
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(std::time::Duration::from_secs(30))
            .build()
            .map_err(|e| McpError(format!("OAuth for {url}: no HTTP client: {e}")))?;
        let mut revoke = Vec::new();
        if let Some(refresh) = tokens.refresh_token() {
            revoke.push((refresh.secret().as_str(), "refresh_token"));
        }
        revoke.push((tokens.access_token().secret().as_str(), "access_token"));
        for (token, hint) in revoke {
            post_revocation(&http, endpoint, &auth, token, hint)
                .await
                .map_err(|why| {
                    McpError(format!(
                        "OAuth for {url}: revoking the {} at {endpoint} failed: {why}; the tokens were deleted here, but the authorization server may still accept them until they expire",
                        hint.replace('_', " ")
                    ))
                })?;
        }
        Ok(())
    }

    /// The authorization server's metadata: what this connection discovered, else discovered
    /// now (a connection that only ever used stored tokens has not looked).
    async fn metadata_for_revocation(&self) -> Result<AuthorizationMetadata, McpError> {
        if let Some(metadata) = self
            .metadata
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
        {
            return Ok(metadata);
        }
        let manager = self.client.auth_manager.lock().await;
        manager
            .resolve_metadata()
            .await
            .map(|resolution| resolution.metadata)
            .map_err(|e| explain("discovering where to revoke the tokens", &self.url, e))
    }

    /// How the client authenticates at the revocation endpoint: as it was registered. A
    /// public client (dynamic registration, rmcp's `none`) sends its id; one with a secret
    /// sends it as the server's metadata says (`revocation_endpoint_auth_methods_supported`,
    /// else the token endpoint's methods: basic unless only post is offered).
    fn revocation_auth(
        &self,
        metadata: &AuthorizationMetadata,
        stored_client_id: &str,
    ) -> Result<ClientAuth, McpError> {
        let secret = match &self.config.grant {
            Grant::Secret {
                client_id,
                client_secret,
            } => Some((client_id.clone(), client_secret.clone())),
            Grant::Enterprise(e) => Some((e.client_id.clone(), e.client_secret.clone())),
            #[cfg(feature = "client-oauth-jwt")]
            Grant::PrivateKeyJwt { .. } => {
                return Err(McpError(format!(
                    "OAuth for {}: revoking tokens as a `private_key_jwt` client is not supported; the tokens were deleted here and stay valid at the authorization server until they expire",
                    self.url
                )))
            }
            Grant::Code { .. } => match &self.config.client_id {
                Some((id, Some(secret))) => Some((id.clone(), secret.clone())),
                _ => None,
            },
        };
        let Some((client_id, client_secret)) = secret else {
            let client_id = match &self.config.client_id {
                Some((id, None)) => id.clone(),
                _ => stored_client_id.to_owned(),
            };
            return Ok(ClientAuth::Public { client_id });
        };
        let methods = |field: &str| -> Option<Vec<String>> {
            metadata
                .additional_fields
                .get(field)
                .and_then(Value::as_array)
                .map(|m| {
                    m.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
        };
        let offered = methods("revocation_endpoint_auth_methods_supported")
            .or_else(|| methods("token_endpoint_auth_methods_supported"))
            .unwrap_or_default();
        let has = |m: &str| offered.iter().any(|o| o == m);
        Ok(
            if has("client_secret_post") && !has("client_secret_basic") {
                ClientAuth::Post {
                    client_id,
                    client_secret,
                }
            } else {
                ClientAuth::Basic {
                    client_id,
                    client_secret,
                }
            },
        )
    }
}

/// The client's authentication at the revocation endpoint.
enum ClientAuth {
    /// A public client: its id in the form.
    Public { client_id: String },
    /// `client_secret_basic`.
    Basic {
        client_id: String,
        client_secret: String,
    },
    /// `client_secret_post`.
    Post {
        client_id: String,
        client_secret: String,
    },
}

/// One RFC 7009 request: `token` and `token_type_hint` as a form. `200` is success, also for a
/// token the server does not know (§2.2); anything else is the server's error, in its words.
async fn post_revocation(
    http: &reqwest::Client,
    endpoint: &str,
    auth: &ClientAuth,
    token: &str,
    hint: &str,
) -> Result<(), String> {
    // The form serializer is not `Send`: made and done with before the request is awaited.
    let (request, form) = {
        let mut form = url::form_urlencoded::Serializer::new(String::new());
        form.append_pair("token", token)
            .append_pair("token_type_hint", hint);
        let mut request = http.post(endpoint);
        match auth {
            ClientAuth::Public { client_id } => {
                form.append_pair("client_id", client_id);
            }
            ClientAuth::Post {
                client_id,
                client_secret,
            } => {
                form.append_pair("client_id", client_id)
                    .append_pair("client_secret", client_secret);
            }
            ClientAuth::Basic {
                client_id,
                client_secret,
            } => {
                // RFC 6749 §2.3.1: form-encoded before they are joined.
                let encode = |s: &str| {
                    url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>()
                };
                request = request.basic_auth(encode(client_id), Some(encode(client_secret)));
            }
        }
        (request, form.finish())
    };
    let mut response = request
        .header(
            http::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .body(form)
        .send()
        .await
        .map_err(|e| {
            if e.is_timeout() {
                "the authorization server did not answer within 30 s".to_owned()
            } else {
                "the authorization server could not be reached".to_owned()
            }
        })?;
    let status = response.status();
    if status.is_success() {
        return Ok(());
    }
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        if body.len() + chunk.len() > MAX_ERROR_BYTES {
            break;
        }
        body.extend_from_slice(&chunk);
    }
    let said = serde_json::from_slice::<Value>(&body).ok();
    let field = |name: &str| {
        said.as_ref()
            .and_then(|v| v.get(name))
            .and_then(Value::as_str)
            .map(|s| s.chars().take(300).collect::<String>())
    };
    Err(match (field("error"), field("error_description")) {
        (Some(error), Some(description)) => {
            format!("HTTP {}: {error} ({description})", status.as_u16())
        }
        (Some(error), None) => format!("HTTP {}: {error}", status.as_u16()),
        _ => format!("HTTP {}", status.as_u16()),
    })
}
