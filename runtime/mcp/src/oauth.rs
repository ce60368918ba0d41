//! The MCP server as an OAuth 2.1 resource server (MCP's authorization, 2025-06-18 on): every
//! HTTP request carries `Authorization: Bearer <access token>`, which a [`TokenValidator`]
//! checks (a [`JwtValidator`]: signature against the authorization server's JWKS, issuer,
//! audience = this resource, expiry; or an [`IntrospectionValidator`]: the authorization
//! server asked, RFC 7662) before rmcp sees the request; the scopes the server and
//! the called tool require are checked too. A request without a valid token is answered `401`,
//! one whose token lacks a scope `403`, each with the `WWW-Authenticate` header MCP clients read
//! (`resource_metadata="…"`, `error="invalid_token"` / `error="insufficient_scope"`,
//! `scope="…"`), and the protected resource metadata document (RFC 9728) that header points
//! to is served by [`ResourceServer::metadata_service`].
//!
//! The token's subject becomes the call's [`Principal`] (its id; the [`AccessToken`] is the
//! principal's data), as the relay's authenticated browser does. The token itself is **not**
//! the principal's credential: MCP forbids passing a client's token through to other services.

use std::collections::{BTreeMap, BTreeSet};
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{json, Value};

use crate::Principal;

mod introspection;
pub use introspection::{IntrospectionValidator, DEFAULT_INTROSPECTION_TIMEOUT};

/// An access token that passed validation: who it is for and what it allows.
#[derive(Clone, Debug, PartialEq)]
pub struct AccessToken {
    /// The subject (`sub`): the user (or client, for client credentials) the token stands for.
    pub subject: String,
    /// The scopes granted (`scope`, space-separated, or `scp`).
    pub scopes: BTreeSet<String>,
    /// The client the token was issued to (`client_id` or `azp`), when the token says.
    pub client_id: Option<String>,
    /// Every claim, for the application.
    pub claims: Value,
}

/// Why a token was not accepted; the text goes to the client as `error_description` (keep
/// secrets out of it). Either the token is refused ([`TokenError::new`]: `401 invalid_token`,
/// the client gets another token) or it could not be checked now
/// ([`TokenError::unavailable`]: the authorization server did not answer an introspection;
/// `503` with `Retry-After`, so that a client retries instead of sending its user through a
/// new login for an outage).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenError {
    message: String,
    unavailable: bool,
}

impl TokenError {
    /// The token is refused, for the reason `message`.
    pub fn new(message: impl Into<String>) -> TokenError {
        TokenError {
            message: message.into(),
            unavailable: false,
        }
    }

    /// The token could not be checked now (the authorization server is unreachable, slow or
    /// answered nonsense): not the client's fault, and not fixed by a new token.
    pub fn unavailable(message: impl Into<String>) -> TokenError {
        TokenError {
            message: message.into(),
            unavailable: true,
        }
    }

    /// What failed.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether the token could not be checked (rather than being refused).
    pub fn is_unavailable(&self) -> bool {
        self.unavailable
    }
}

impl std::fmt::Display for TokenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TokenError {}

/// The answer of a [`TokenValidator`].
pub type ValidationFuture<'a> =
    Pin<Box<dyn Future<Output = Result<AccessToken, TokenError>> + Send + 'a>>;

/// Checks an access token: signature or introspection, issuer, audience, expiry. The scopes
/// are checked by the [`ResourceServer`] against what it requires.
pub trait TokenValidator: Send + Sync {
    /// The token's subject and scopes, or why it is not accepted.
    fn validate<'a>(&'a self, token: &'a str) -> ValidationFuture<'a>;
}

/// Validates JWT access tokens (RFC 9068) against a JSON Web Key Set: the signature with the
/// key the token's `kid` names (with that key's own algorithm, never the one the token
/// claims), `iss`, `aud` (this resource), `exp` and `nbf`. Symmetric (`oct`) keys are not
/// accepted: a resource server verifies with the authorization server's public keys.
pub struct JwtValidator {
    keys: Vec<(Option<String>, DecodingKey, Vec<Algorithm>)>,
    issuers: Vec<String>,
    audiences: Vec<String>,
    leeway: u64,
}

impl std::fmt::Debug for JwtValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtValidator")
            .field("keys", &self.keys.len())
            .field("issuers", &self.issuers)
            .field("audiences", &self.audiences)
            .finish()
    }
}

impl JwtValidator {
    /// Tokens of `issuer`, for `audience` (the resource's canonical URI, usually the MCP
    /// endpoint's URL), signed by one of `keys` (the issuer's `jwks_uri` document, fetched by
    /// the application). Fails when no key is usable.
    pub fn new(
        keys: &JwkSet,
        issuer: impl Into<String>,
        audience: impl Into<String>,
    ) -> Result<JwtValidator, TokenError> {
        if jsonwebtoken::crypto::CryptoProvider::try_get_default().is_none() {
            return Err(TokenError::new(
                "jsonwebtoken has no crypto provider (both or neither of its `aws_lc_rs` and `rust_crypto` features are on): install one with CryptoProvider::install_default"
            ));
        }
        let mut usable = Vec::new();
        let mut skipped = Vec::new();
        for jwk in &keys.keys {
            match key_of(jwk) {
                Ok(key) => usable.push(key),
                Err(why) => skipped.push(why),
            }
        }
        if usable.is_empty() {
            return Err(TokenError::new(format!(
                "the JWKS has no key usable to verify tokens ({})",
                if skipped.is_empty() {
                    "it is empty".to_owned()
                } else {
                    skipped.join("; ")
                }
            )));
        }
        Ok(JwtValidator {
            keys: usable,
            issuers: vec![issuer.into()],
            audiences: vec![audience.into()],
            leeway: 30,
        })
    }

    /// [`JwtValidator::new`] from the JWKS document's text.
    pub fn from_jwks_json(
        jwks: &str,
        issuer: impl Into<String>,
        audience: impl Into<String>,
    ) -> Result<JwtValidator, TokenError> {
        let keys: JwkSet = serde_json::from_str(jwks)
            .map_err(|e| TokenError::new(format!("the JWKS document does not parse: {e}")))?;
        JwtValidator::new(&keys, issuer, audience)
    }

    /// How many seconds of clock skew `exp` and `nbf` allow (default 30).
    pub fn with_leeway(mut self, seconds: u64) -> JwtValidator {
        self.leeway = seconds;
        self
    }

    /// The token's claims, checked.
    fn check(&self, token: &str) -> Result<AccessToken, TokenError> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| TokenError::new("the token is not a JWT of a signing algorithm"))?;
        let candidates: Vec<_> = match &header.kid {
            Some(kid) => self
                .keys
                .iter()
                .filter(|(id, ..)| id.as_deref() == Some(kid.as_str()))
                .collect(),
            None => self.keys.iter().collect(),
        };
        if candidates.is_empty() {
            return Err(TokenError::new(
                "the token is signed with a key this server does not know (kid)",
            ));
        }
        let mut last = TokenError::new("the token's signature does not verify");
        for (_, key, algorithms) in candidates {
            if !algorithms.contains(&header.alg) {
                last = TokenError::new("the token's algorithm is not its key's");
                continue;
            }
            let mut validation = Validation::new(header.alg);
            validation.algorithms = algorithms.clone();
            validation.set_issuer(&self.issuers);
            validation.set_audience(&self.audiences);
            validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
            validation.leeway = self.leeway;
            validation.validate_nbf = true;
            match jsonwebtoken::decode::<Value>(token, key, &validation) {
                Ok(data) => return Ok(access_token(data.claims)),
                Err(e) => last = TokenError::new(describe(&e)),
            }
        }
        Err(last)
    }
}

impl TokenValidator for JwtValidator {
    fn validate<'a>(&'a self, token: &'a str) -> ValidationFuture<'a> {
        Box::pin(std::future::ready(self.check(token)))
    }
}

/// A key of the set with the algorithms it verifies, or why it is not used.
fn key_of(jwk: &Jwk) -> Result<(Option<String>, DecodingKey, Vec<Algorithm>), String> {
    use jsonwebtoken::jwk::KeyAlgorithm as K;
    let kid = jwk.common.key_id.clone();
    let named = |what: &str| format!("key {}: {what}", kid.as_deref().unwrap_or("without kid"));
    let family: Vec<Algorithm> = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => vec![
            Algorithm::RS256,
            Algorithm::RS384,
            Algorithm::RS512,
            Algorithm::PS256,
            Algorithm::PS384,
            Algorithm::PS512,
        ],
        AlgorithmParameters::EllipticCurve(p) => match p.curve {
            EllipticCurve::P256 => vec![Algorithm::ES256],
            EllipticCurve::P384 => vec![Algorithm::ES384],
            _ => return Err(named("an unsupported curve")),
        },
        AlgorithmParameters::OctetKeyPair(_) => vec![Algorithm::EdDSA],
        AlgorithmParameters::OctetKey(_) => return Err(named("a symmetric key")),
        _ => return Err(named("an unknown key type")),
    };
    // A key that names its algorithm verifies only that one.
    let algorithms = match jwk.common.key_algorithm {
        None => family,
        Some(named_alg) => {
            let alg = match named_alg {
                K::ES256 => Algorithm::ES256,
                K::ES384 => Algorithm::ES384,
                K::RS256 => Algorithm::RS256,
                K::RS384 => Algorithm::RS384,
                K::RS512 => Algorithm::RS512,
                K::PS256 => Algorithm::PS256,
                K::PS384 => Algorithm::PS384,
                K::PS512 => Algorithm::PS512,
                K::EdDSA => Algorithm::EdDSA,
                _ => return Err(named("an algorithm that does not sign")),
            };
            if !family.contains(&alg) {
                return Err(named("an algorithm of another key type"));
            }
            vec![alg]
        }
    };
    if matches!(
        jwk.common.public_key_use,
        Some(jsonwebtoken::jwk::PublicKeyUse::Encryption)
    ) {
        return Err(named("an encryption key"));
    }
    let key = DecodingKey::from_jwk(jwk).map_err(|e| named(&format!("unusable ({e})")))?;
    Ok((kid, key, algorithms))
}

/// What a JWT failure means, for `error_description`.
fn describe(e: &jsonwebtoken::errors::Error) -> String {
    use jsonwebtoken::errors::ErrorKind as E;
    match e.kind() {
        E::ExpiredSignature => "the token has expired".into(),
        E::ImmatureSignature => "the token is not valid yet (nbf)".into(),
        E::InvalidAudience => "the token is not for this resource (aud)".into(),
        E::InvalidIssuer => "the token is not from a trusted issuer (iss)".into(),
        E::InvalidSignature => "the token's signature does not verify".into(),
        E::InvalidAlgorithm => "the token's algorithm is not its key's".into(),
        E::MissingRequiredClaim(claim) => format!("the token has no `{claim}` claim"),
        _ => "the token is malformed".into(),
    }
}

/// The claims as an [`AccessToken`].
pub(crate) fn access_token(claims: Value) -> AccessToken {
    let text = |k: &str| claims.get(k).and_then(Value::as_str).map(str::to_owned);
    let mut scopes = BTreeSet::new();
    if let Some(scope) = claims.get("scope").and_then(Value::as_str) {
        scopes.extend(scope.split_whitespace().map(str::to_owned));
    }
    match claims.get("scp") {
        Some(Value::String(s)) => scopes.extend(s.split_whitespace().map(str::to_owned)),
        Some(Value::Array(items)) => {
            scopes.extend(items.iter().filter_map(Value::as_str).map(str::to_owned))
        }
        _ => {}
    }
    AccessToken {
        subject: text("sub").unwrap_or_default(),
        scopes,
        client_id: text("client_id").or_else(|| text("azp")),
        claims,
    }
}

/// What the server protects, how, and what it tells clients about it (RFC 9728). Give it to
/// [`crate::McpServer::with_oauth`]; mount [`ResourceServer::metadata_service`] at
/// [`ResourceServer::metadata_path`].
#[derive(Clone)]
pub struct ResourceServer {
    resource: String,
    authorization_servers: Vec<String>,
    scopes_supported: Vec<String>,
    required: Vec<String>,
    /// By tool name, sorted so that the metadata lists the scopes in one order.
    tool_scopes: BTreeMap<String, Vec<String>>,
    resource_name: Option<String>,
    validator: Arc<dyn TokenValidator>,
}

impl std::fmt::Debug for ResourceServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceServer")
            .field("resource", &self.resource)
            .field("authorization_servers", &self.authorization_servers)
            .field("required", &self.required)
            .field("tool_scopes", &self.tool_scopes)
            .finish_non_exhaustive()
    }
}

impl ResourceServer {
    /// The resource at `resource` (its canonical URI: the MCP endpoint's URL, such as
    /// `https://mcp.example.com/mcp`, which tokens must name as their audience), whose tokens
    /// `validator` checks.
    pub fn new(
        resource: impl Into<String>,
        validator: impl TokenValidator + 'static,
    ) -> ResourceServer {
        ResourceServer {
            resource: resource.into(),
            authorization_servers: Vec::new(),
            scopes_supported: Vec::new(),
            required: Vec::new(),
            tool_scopes: BTreeMap::new(),
            resource_name: None,
            validator: Arc::new(validator),
        }
    }

    /// An authorization server (its issuer URL) whose tokens this resource accepts; listed in
    /// the metadata document, where clients find it.
    pub fn authorization_server(mut self, issuer: impl Into<String>) -> ResourceServer {
        self.authorization_servers.push(issuer.into());
        self
    }

    /// The scopes listed as `scopes_supported` in the metadata (a client asks for these when
    /// no `WWW-Authenticate` names any). The required ones are added to it.
    pub fn scopes_supported<S: Into<String>>(
        mut self,
        scopes: impl IntoIterator<Item = S>,
    ) -> ResourceServer {
        self.scopes_supported
            .extend(scopes.into_iter().map(Into::into));
        self
    }

    /// Scopes every request's token must have.
    pub fn require_scopes<S: Into<String>>(
        mut self,
        scopes: impl IntoIterator<Item = S>,
    ) -> ResourceServer {
        self.required.extend(scopes.into_iter().map(Into::into));
        self
    }

    /// Scopes a `tools/call` of `tool` needs beyond the required ones; a token without them
    /// gets `403 insufficient_scope` naming them (a client may step up and retry). The scopes
    /// a tool's manifest declares (`scopes`) need no call here: [`crate::McpServer::with_oauth`]
    /// adds them.
    pub fn tool_scopes<S: Into<String>>(
        mut self,
        tool: impl Into<String>,
        scopes: impl IntoIterator<Item = S>,
    ) -> ResourceServer {
        let needed = self.tool_scopes.entry(tool.into()).or_default();
        for scope in scopes {
            let scope = scope.into();
            if !needed.contains(&scope) {
                needed.push(scope);
            }
        }
        self
    }

    /// Adds the scopes each definition declares (the manifest's `scopes`) to those its calls
    /// need, after any set with [`ResourceServer::tool_scopes`]. The server's registry is the
    /// one place that knows them, so [`crate::McpServer::with_oauth`] calls this with it.
    pub(crate) fn declared_scopes<'d>(
        mut self,
        definitions: impl IntoIterator<Item = &'d crate::ToolDefinition>,
    ) -> ResourceServer {
        for definition in definitions {
            if !definition.scopes.is_empty() {
                self = self.tool_scopes(definition.name.clone(), definition.scopes.iter().cloned());
            }
        }
        self
    }

    /// A human-readable name of the resource, for the metadata (`resource_name`).
    pub fn resource_name(mut self, name: impl Into<String>) -> ResourceServer {
        self.resource_name = Some(name.into());
        self
    }

    /// The protected resource metadata document (RFC 9728).
    pub fn metadata(&self) -> Value {
        let mut scopes: Vec<&str> = Vec::new();
        for s in self
            .scopes_supported
            .iter()
            .chain(&self.required)
            .chain(self.tool_scopes.values().flatten())
        {
            if !scopes.contains(&s.as_str()) {
                scopes.push(s);
            }
        }
        let mut doc = json!({
            "resource": self.resource,
            "authorization_servers": self.authorization_servers,
            "bearer_methods_supported": ["header"],
        });
        if !scopes.is_empty() {
            doc["scopes_supported"] = json!(scopes);
        }
        if let Some(name) = &self.resource_name {
            doc["resource_name"] = json!(name);
        }
        doc
    }

    /// Where the metadata document is served (RFC 9728 §3.1): `/.well-known/oauth-protected-resource`
    /// followed by the resource's path (`/.well-known/oauth-protected-resource/mcp` for
    /// `https://host/mcp`).
    pub fn metadata_path(&self) -> String {
        let path = split_url(&self.resource).1;
        format!("/.well-known/oauth-protected-resource{path}")
    }

    /// The metadata document's URL, as `WWW-Authenticate` gives it.
    pub fn metadata_url(&self) -> String {
        format!("{}{}", split_url(&self.resource).0, self.metadata_path())
    }

    /// A tower service that answers `GET` with the metadata document; mount it at
    /// [`ResourceServer::metadata_path`] (and, for clients that look only there, at
    /// `/.well-known/oauth-protected-resource`).
    pub fn metadata_service(&self) -> MetadataService {
        MetadataService {
            document: Bytes::from(self.metadata().to_string()),
        }
    }

    /// The principal of a request, or the response that refuses it. `body` is the request's
    /// JSON-RPC message (`None` before it is read, or for a `GET`/`DELETE`).
    pub(crate) async fn authenticate(
        &self,
        parts: &http::request::Parts,
    ) -> Result<AccessToken, Box<HttpResponse>> {
        let mut headers = parts.headers.get_all(http::header::AUTHORIZATION).iter();
        let (Some(header), None) = (headers.next(), headers.next()) else {
            if parts.headers.contains_key(http::header::AUTHORIZATION) {
                return Err(self.invalid("several Authorization headers"));
            }
            // No credentials: no error code (RFC 6750 §3.1), the metadata and the scopes.
            return Err(self.challenge(http::StatusCode::UNAUTHORIZED, None, &self.required));
        };
        let token = header
            .to_str()
            .ok()
            .and_then(|h| h.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim())
            .filter(|t| !t.is_empty() && t.len() <= 16 * 1024);
        let Some(token) = token else {
            return Err(self.invalid("the Authorization header is not `Bearer <token>`"));
        };
        let token = self
            .validator
            .validate(token)
            .await
            .map_err(|e| match e.is_unavailable() {
                true => self.unavailable(e.message()),
                false => self.invalid(e.message()),
            })?;
        if token.subject.is_empty() {
            return Err(self.invalid("the token names no subject"));
        }
        let missing: Vec<String> = self
            .required
            .iter()
            .filter(|s| !token.scopes.contains(*s))
            .cloned()
            .collect();
        if !missing.is_empty() {
            return Err(self.insufficient(&self.required));
        }
        Ok(token)
    }

    /// `403` when the message calls a tool whose scopes the token lacks.
    pub(crate) fn authorize_message(
        &self,
        token: &AccessToken,
        body: &[u8],
    ) -> Result<(), Box<HttpResponse>> {
        if self.tool_scopes.is_empty() {
            return Ok(());
        }
        let Ok(message) = serde_json::from_slice::<Value>(body) else {
            // Not JSON: the JSON-RPC edge answers it; nothing runs.
            return Ok(());
        };
        let messages = match &message {
            Value::Array(items) => items.iter().collect(),
            single => vec![single],
        };
        for message in messages {
            if message.get("method").and_then(Value::as_str) != Some("tools/call") {
                continue;
            }
            let Some(tool) = message
                .get("params")
                .and_then(|p| p.get("name"))
                .and_then(Value::as_str)
            else {
                continue;
            };
            let Some(needed) = self.tool_scopes.get(tool) else {
                continue;
            };
            if needed.iter().any(|s| !token.scopes.contains(s)) {
                // Everything the call needs, so that one step up is enough.
                // A tool may declare a scope every request needs too: named once.
                let mut all: Vec<String> = self.required.clone();
                for scope in needed {
                    if !all.contains(scope) {
                        all.push(scope.clone());
                    }
                }
                return Err(self.insufficient(&all));
            }
        }
        Ok(())
    }

    fn invalid(&self, why: &str) -> Box<HttpResponse> {
        self.challenge(
            http::StatusCode::UNAUTHORIZED,
            Some(("invalid_token", why)),
            &self.required,
        )
    }

    /// `503`: the token could not be checked now; the client should retry later, not log in.
    fn unavailable(&self, why: &str) -> Box<HttpResponse> {
        let body = json!({ "error": "temporarily_unavailable", "error_description": why });
        Box::new(
            http::Response::builder()
                .status(http::StatusCode::SERVICE_UNAVAILABLE)
                .header(http::header::RETRY_AFTER, "5")
                .header(http::header::CONTENT_TYPE, "application/json")
                .body(Full::new(Bytes::from(body.to_string())).boxed())
                .unwrap_or_else(|_| {
                    let mut response = http::Response::new(Full::new(Bytes::new()).boxed());
                    *response.status_mut() = http::StatusCode::SERVICE_UNAVAILABLE;
                    response
                }),
        )
    }

    fn insufficient(&self, scopes: &[String]) -> Box<HttpResponse> {
        self.challenge(
            http::StatusCode::FORBIDDEN,
            Some((
                "insufficient_scope",
                "the token does not have the scopes this request needs",
            )),
            scopes,
        )
    }

    /// A `401`/`403` with its `WWW-Authenticate` challenge and a JSON body saying the same.
    fn challenge(
        &self,
        status: http::StatusCode,
        error: Option<(&str, &str)>,
        scopes: &[String],
    ) -> Box<HttpResponse> {
        let mut params = vec![format!(
            "resource_metadata=\"{}\"",
            quoted(&self.metadata_url())
        )];
        if let Some((code, why)) = error {
            params.insert(0, format!("error=\"{code}\""));
            params.push(format!("error_description=\"{}\"", quoted(why)));
        }
        let mut unique: Vec<&str> = Vec::new();
        for s in scopes {
            if !unique.contains(&s.as_str()) {
                unique.push(s);
            }
        }
        if !unique.is_empty() {
            params.push(format!("scope=\"{}\"", quoted(&unique.join(" "))));
        }
        let header = format!("Bearer {}", params.join(", "));
        let body = match error {
            Some((code, why)) => json!({ "error": code, "error_description": why }),
            None => {
                json!({ "error": "unauthorized", "error_description": "this MCP server needs an OAuth access token (Authorization: Bearer)" })
            }
        };
        Box::new(
            http::Response::builder()
                .status(status)
                .header(http::header::WWW_AUTHENTICATE, header)
                .header(http::header::CONTENT_TYPE, "application/json")
                .body(Full::new(Bytes::from(body.to_string())).boxed())
                .unwrap_or_else(|_| {
                    let mut response = http::Response::new(Full::new(Bytes::new()).boxed());
                    *response.status_mut() = status;
                    response
                }),
        )
    }
}

/// The principal a validated token stands for: its subject, with the token as data (no
/// credential: the token is not forwarded anywhere).
pub(crate) fn principal(token: AccessToken) -> Principal {
    Principal::new(token.subject.clone()).with_data(token)
}

/// Text fit for a quoted-string of a header: printable ASCII without `"` or `\`.
fn quoted(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '"' | '\\' => '\'',
            c if c.is_ascii_graphic() || c == ' ' => c,
            _ => '?',
        })
        .take(300)
        .collect()
}

/// The origin (`https://host:port`) and the path of a URL; a text that is no URL is taken as
/// an origin without a path.
fn split_url(url: &str) -> (String, String) {
    match url::Url::parse(url) {
        Ok(parsed) if parsed.has_host() => (
            parsed.origin().ascii_serialization(),
            parsed.path().trim_end_matches('/').to_owned(),
        ),
        _ => (url.trim_end_matches('/').to_owned(), String::new()),
    }
}

pub(crate) type HttpResponse = http::Response<BoxBody<Bytes, Infallible>>;

/// Serves the protected resource metadata document (see [`ResourceServer::metadata_service`]).
#[derive(Clone, Debug)]
pub struct MetadataService {
    document: Bytes,
}

impl<B> tower_service::Service<http::Request<B>> for MetadataService {
    type Response = HttpResponse;
    type Error = Infallible;
    type Future = std::future::Ready<Result<HttpResponse, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let response =
            if request.method() == http::Method::GET || request.method() == http::Method::HEAD {
                http::Response::builder()
                    .header(http::header::CONTENT_TYPE, "application/json")
                    .header(http::header::ACCESS_CONTROL_ALLOW_ORIGIN, "*")
                    .header(http::header::CACHE_CONTROL, "max-age=300")
                    .body(Full::new(self.document.clone()).boxed())
            } else {
                http::Response::builder()
                    .status(http::StatusCode::METHOD_NOT_ALLOWED)
                    .header(http::header::ALLOW, "GET, HEAD")
                    .body(Full::new(Bytes::new()).boxed())
            };
        std::future::ready(Ok(
            response.unwrap_or_else(|_| http::Response::new(Full::new(Bytes::new()).boxed()))
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed(Result<AccessToken, TokenError>);

    impl TokenValidator for Fixed {
        fn validate<'a>(&'a self, _token: &'a str) -> ValidationFuture<'a> {
            Box::pin(std::future::ready(self.0.clone()))
        }
    }

    fn token(scopes: &[&str]) -> AccessToken {
        AccessToken {
            subject: "u1".into(),
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
            client_id: None,
            claims: Value::Null,
        }
    }

    #[test]
    fn the_metadata_lives_under_the_resource_path() {
        let rs = ResourceServer::new("https://mcp.example.com/mcp", Fixed(Ok(token(&[]))));
        assert_eq!(
            rs.metadata_path(),
            "/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            rs.metadata_url(),
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
        );
        let root = ResourceServer::new("https://mcp.example.com", Fixed(Ok(token(&[]))));
        assert_eq!(
            root.metadata_path(),
            "/.well-known/oauth-protected-resource"
        );
        assert_eq!(split_url("not a url"), ("not a url".into(), String::new()));
        assert_eq!(
            split_url("http://127.0.0.1:80/a/b/"),
            ("http://127.0.0.1".into(), "/a/b".into())
        );
    }

    #[test]
    fn scopes_come_from_scope_and_scp() {
        let t = access_token(json!({"sub": "a", "scope": "a b", "scp": ["c", 5], "azp": "cl"}));
        assert_eq!(t.scopes.into_iter().collect::<Vec<_>>(), ["a", "b", "c"]);
        assert_eq!(t.client_id.as_deref(), Some("cl"));
        let t = access_token(json!({"sub": 5, "scope": 7}));
        assert!(t.subject.is_empty() && t.scopes.is_empty());
    }

    #[test]
    fn header_text_is_quoted_safely() {
        assert_eq!(quoted("a\"b\\c\nd"), "a'b'c?d");
        assert_eq!(quoted(&"x".repeat(1000)).len(), 300);
    }

    #[tokio::test]
    async fn tool_scopes_are_checked_on_calls_only() {
        let rs = ResourceServer::new("http://h/mcp", Fixed(Ok(token(&["read"]))))
            .tool_scopes("wipe", ["admin"]);
        let t = token(&["read"]);
        let call = |name: &str| {
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name}})
                .to_string()
        };
        assert!(rs.authorize_message(&t, call("lookup").as_bytes()).is_ok());
        let refused = rs
            .authorize_message(&t, call("wipe").as_bytes())
            .unwrap_err();
        assert_eq!(refused.status(), 403);
        let header = refused.headers()[http::header::WWW_AUTHENTICATE]
            .to_str()
            .unwrap();
        assert!(header.contains("error=\"insufficient_scope\""), "{header}");
        assert!(header.contains("scope=\"admin\""), "{header}");
        // In a batch too; and what is not JSON is left to the JSON-RPC edge.
        let batch = format!("[{}]", call("wipe"));
        assert!(rs.authorize_message(&t, batch.as_bytes()).is_err());
        assert!(rs.authorize_message(&t, b"{nope").is_ok());
        assert!(rs
            .authorize_message(&t, br#"{"method":"tools/call","params":{"name":5}}"#)
            .is_ok());
    }

    /// A tool's scopes from its definition and from code are merged, each once, and a scope
    /// the tool shares with every request is named once in the challenge.
    #[test]
    fn declared_and_coded_scopes_merge_each_once() {
        let declared = crate::ToolDefinition {
            name: "wipe".into(),
            scopes: vec!["read".into(), "admin".into()],
            ..Default::default()
        };
        let rs = ResourceServer::new("http://h/mcp", Fixed(Ok(token(&["read"]))))
            .require_scopes(["read"])
            .tool_scopes("wipe", ["admin", "admin"])
            .declared_scopes([&declared]);
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                          "params": {"name": "wipe"}})
        .to_string();
        let refused = rs
            .authorize_message(&token(&["read"]), call.as_bytes())
            .unwrap_err();
        let header = refused.headers()[http::header::WWW_AUTHENTICATE]
            .to_str()
            .unwrap();
        assert!(header.contains("scope=\"read admin\""), "{header}");
        assert!(rs
            .authorize_message(&token(&["read", "admin"]), call.as_bytes())
            .is_ok());
        assert_eq!(rs.metadata()["scopes_supported"], json!(["read", "admin"]));
    }
}
