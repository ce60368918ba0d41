//! Token introspection (RFC 7662): the resource server asks the authorization server whether a
//! token is active, for opaque access tokens (which a resource server cannot read) and for
//! tokens that must stop working the moment they are revoked (a JWT is checked offline, so a
//! revoked one is accepted until it expires).
//!
//! The authorization server's answer is checked as a JWT's claims are: `active` must be `true`,
//! `aud` must name this resource, `exp`/`nbf` must hold, `iss` must be the issuer (when one is
//! set), and a token bound to a key (`cnf`: DPoP, mTLS) or of another type than `Bearer` (a
//! refresh token shown as an access token) is refused, because this server checks no proof of
//! possession. Whatever the endpoint sends (a 500, HTML, `"active": "true"`, numbers where text
//! goes, a body of megabytes, nothing at all) ends in a [`TokenError`], never a panic.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::{access_token, AccessToken, TokenError, TokenValidator, ValidationFuture};

/// How long one introspection may take unless [`IntrospectionValidator::with_timeout`] says
/// otherwise: every request waits on it.
pub const DEFAULT_INTROSPECTION_TIMEOUT: Duration = Duration::from_secs(5);

/// The largest introspection response read.
const MAX_RESPONSE_BYTES: usize = 64 * 1024;

/// Validates access tokens by asking the authorization server (RFC 7662): a `POST` of the token
/// to its `introspection_endpoint`, authenticated as the resource server's own client
/// (`client_secret_basic`). See the module's documentation for what is checked.
///
/// With [`IntrospectionValidator::with_cache`], an active answer is reused for a short time, so
/// that a burst of requests costs one round trip; a token revoked meanwhile is then accepted
/// until its cached answer ages out (at most the cache's TTL, and never past the token's `exp`).
pub struct IntrospectionValidator {
    endpoint: String,
    client_id: String,
    client_secret: String,
    audience: String,
    issuer: Option<String>,
    leeway: u64,
    timeout: Duration,
    http: reqwest::Client,
    cache: Option<Cache>,
}

impl std::fmt::Debug for IntrospectionValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // No secret.
        f.debug_struct("IntrospectionValidator")
            .field("endpoint", &self.endpoint)
            .field("client_id", &self.client_id)
            .field("audience", &self.audience)
            .field("issuer", &self.issuer)
            .field("timeout", &self.timeout)
            .field("cache", &self.cache.as_ref().map(|c| c.ttl))
            .finish_non_exhaustive()
    }
}

impl IntrospectionValidator {
    /// Tokens for `audience` (this resource's canonical URI, as for [`super::JwtValidator`]),
    /// checked at `endpoint` (the authorization server's `introspection_endpoint`) by the client
    /// `client_id` with `client_secret` (the resource server's registration there). Fails when
    /// `endpoint` is not an `http(s)` URL.
    pub fn new(
        endpoint: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
        audience: impl Into<String>,
    ) -> Result<IntrospectionValidator, TokenError> {
        let endpoint = endpoint.into();
        match url::Url::parse(&endpoint) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.has_host() => {}
            _ => {
                return Err(TokenError::new(format!(
                    "the introspection endpoint `{endpoint}` is not an http(s) URL: give the authorization server's `introspection_endpoint`"
                )))
            }
        }
        // reqwest is built without a TLS provider of its own (see the crate's `rustls`
        // dependency): install ring's before the first client, unless one is set.
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let http = client(DEFAULT_INTROSPECTION_TIMEOUT)?;
        Ok(IntrospectionValidator {
            endpoint,
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            audience: audience.into(),
            issuer: None,
            leeway: 30,
            timeout: DEFAULT_INTROSPECTION_TIMEOUT,
            http,
            cache: None,
        })
    }

    /// The issuer whose tokens are accepted: an answer whose `iss` is another (or absent) is
    /// refused. Without it, `iss` is not checked (the endpoint is the issuer's own).
    pub fn issuer(mut self, issuer: impl Into<String>) -> IntrospectionValidator {
        self.issuer = Some(issuer.into());
        self
    }

    /// How long an introspection may take before the token is refused (default
    /// [`DEFAULT_INTROSPECTION_TIMEOUT`]).
    pub fn with_timeout(mut self, timeout: Duration) -> Result<IntrospectionValidator, TokenError> {
        self.http = client(timeout)?;
        self.timeout = timeout;
        Ok(self)
    }

    /// How many seconds of clock skew `exp` and `nbf` allow (default 30).
    pub fn with_leeway(mut self, seconds: u64) -> IntrospectionValidator {
        self.leeway = seconds;
        self
    }

    /// Reuses an active answer for `ttl` (capped by the token's `exp`), for at most `entries`
    /// tokens at once: a revoked token is accepted for up to `ttl` after its revocation.
    /// Inactive answers are not kept (a token may be a moment away from being issued).
    pub fn with_cache(mut self, ttl: Duration, entries: usize) -> IntrospectionValidator {
        self.cache = Some(Cache {
            ttl,
            entries: entries.max(1),
            answers: Mutex::new(HashMap::new()),
        });
        self
    }

    /// One introspection, checked.
    async fn introspect(&self, token: &str) -> Result<AccessToken, TokenError> {
        if let Some(cached) = self.cache.as_ref().and_then(|c| c.get(token)) {
            return Ok(cached);
        }
        let body = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("token", token)
            .append_pair("token_type_hint", "access_token")
            .finish();
        // RFC 6749 §2.3.1: the id and secret are form-encoded before they are joined.
        let encode =
            |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
        let request = self
            .http
            .post(&self.endpoint)
            .basic_auth(encode(&self.client_id), Some(encode(&self.client_secret)))
            .header(
                http::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .header(http::header::ACCEPT, "application/json")
            .body(body);
        let unavailable = |why: String| {
            TokenError::unavailable(format!(
                "the token could not be checked: the authorization server's introspection endpoint {why}"
            ))
        };
        let mut response = request.send().await.map_err(|e| {
            unavailable(if e.is_timeout() {
                format!("did not answer within {} ms", self.timeout.as_millis())
            } else {
                "could not be reached".to_owned()
            })
        })?;
        let status = response.status();
        let mut bytes = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    if bytes.len() + chunk.len() > MAX_RESPONSE_BYTES {
                        return Err(unavailable(format!(
                            "answered more than {MAX_RESPONSE_BYTES} bytes"
                        )));
                    }
                    bytes.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                Err(_) => return Err(unavailable("broke off its answer".to_owned())),
            }
        }
        if !status.is_success() {
            // 401: the resource server's own credentials were refused, which is this
            // server's configuration to fix, not the caller's token; said so in the log.
            tracing::warn!(
                status = status.as_u16(),
                endpoint = %self.endpoint,
                "token introspection failed (check the resource server's client id and secret)"
            );
            return Err(unavailable(format!("answered HTTP {}", status.as_u16())));
        }
        let answer: Value = serde_json::from_slice(&bytes)
            .map_err(|_| unavailable("answered something that is not JSON".to_owned()))?;
        let token_info = self.check(answer)?;
        if let Some(cache) = &self.cache {
            cache.put(token, &token_info);
        }
        Ok(token_info)
    }

    /// The introspection answer's claims, checked as a JWT's would be.
    fn check(&self, answer: Value) -> Result<AccessToken, TokenError> {
        let Value::Object(claims) = &answer else {
            return Err(TokenError::unavailable(
                "the introspection answer is not a JSON object",
            ));
        };
        if claims.get("active") != Some(&Value::Bool(true)) {
            return Err(TokenError::new(
                "the token is not active (revoked, expired or unknown to the authorization server)",
            ));
        }
        if let Some(kind) = claims.get("token_type") {
            if !kind
                .as_str()
                .is_some_and(|k| k.eq_ignore_ascii_case("bearer"))
            {
                return Err(TokenError::new("the token is not a bearer access token"));
            }
        }
        if claims.contains_key("cnf") {
            return Err(TokenError::new(
                "the token is bound to a key (cnf), whose proof this server does not check",
            ));
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let time = |name: &str| -> Result<Option<u64>, TokenError> {
            match claims.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(v) => v
                    .as_u64()
                    .or_else(|| v.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
                    .map(Some)
                    .ok_or_else(|| TokenError::new(format!("the token's `{name}` is not a time"))),
            }
        };
        if time("exp")?.is_some_and(|exp| exp.saturating_add(self.leeway) <= now) {
            return Err(TokenError::new("the token has expired"));
        }
        if time("nbf")?.is_some_and(|nbf| nbf > now.saturating_add(self.leeway)) {
            return Err(TokenError::new("the token is not valid yet (nbf)"));
        }
        let for_us = match claims.get("aud") {
            Some(Value::String(aud)) => *aud == self.audience,
            Some(Value::Array(auds)) => auds.iter().any(|a| a.as_str() == Some(&self.audience)),
            _ => false,
        };
        if !for_us {
            return Err(TokenError::new("the token is not for this resource (aud)"));
        }
        if let Some(issuer) = &self.issuer {
            if claims.get("iss").and_then(Value::as_str) != Some(issuer.as_str()) {
                return Err(TokenError::new(
                    "the token is not from a trusted issuer (iss)",
                ));
            }
        }
        if !claims.get("sub").is_some_and(Value::is_string) {
            return Err(TokenError::new("the token has no `sub` claim"));
        }
        Ok(access_token(answer))
    }
}

impl TokenValidator for IntrospectionValidator {
    fn validate<'a>(&'a self, token: &'a str) -> ValidationFuture<'a> {
        Box::pin(self.introspect(token))
    }
}

/// The HTTP client of the introspection requests: no redirects (an endpoint that moves is a
/// misconfiguration, and a redirect would carry the token elsewhere), a deadline on each.
fn client(timeout: Duration) -> Result<reqwest::Client, TokenError> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(timeout)
        .build()
        .map_err(|e| TokenError::new(format!("no HTTP client for introspection: {e}")))
}

/// Active answers by token, each until its deadline.
struct Cache {
    ttl: Duration,
    entries: usize,
    answers: Mutex<HashMap<String, (Instant, AccessToken)>>,
}

impl Cache {
    fn get(&self, token: &str) -> Option<AccessToken> {
        let mut answers = self.answers.lock().unwrap_or_else(|e| e.into_inner());
        match answers.get(token) {
            Some((until, answer)) if *until > Instant::now() => Some(answer.clone()),
            Some(_) => {
                answers.remove(token);
                None
            }
            None => None,
        }
    }

    fn put(&self, token: &str, answer: &AccessToken) {
        let now = Instant::now();
        // Never past the token's own expiry.
        let left = answer
            .claims
            .get("exp")
            .and_then(Value::as_u64)
            .and_then(|exp| {
                let at = SystemTime::now().duration_since(UNIX_EPOCH).ok()?.as_secs();
                Some(Duration::from_secs(exp.saturating_sub(at)))
            })
            .unwrap_or(self.ttl);
        let until = now + self.ttl.min(left);
        let mut answers = self.answers.lock().unwrap_or_else(|e| e.into_inner());
        if answers.len() >= self.entries {
            answers.retain(|_, (deadline, _)| *deadline > now);
        }
        // Full of live answers: this one is not kept (the next request asks again).
        if answers.len() < self.entries {
            answers.insert(token.to_owned(), (until, answer.clone()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn validator() -> IntrospectionValidator {
        IntrospectionValidator::new("http://127.0.0.1:9/introspect", "rs", "s", "http://h/mcp")
            .unwrap()
            .issuer("http://as")
    }

    fn now() -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs()
    }

    fn why(answer: Value) -> String {
        validator()
            .check(answer)
            .err()
            .map(|e| e.message().to_owned())
            .unwrap_or_default()
    }

    #[test]
    fn an_active_answer_for_this_resource_is_the_token() {
        let t = validator()
            .check(
                json!({"active": true, "sub": "ada", "aud": ["x", "http://h/mcp"],
                          "iss": "http://as", "exp": now() + 60, "scope": "mcp:tools",
                          "client_id": "c1", "token_type": "Bearer"}),
            )
            .unwrap();
        assert_eq!(t.subject, "ada");
        assert_eq!(t.client_id.as_deref(), Some("c1"));
        assert!(t.scopes.contains("mcp:tools"));
    }

    #[test]
    fn every_other_answer_is_refused_with_its_reason() {
        let base = || {
            json!({"active": true, "sub": "ada", "aud": "http://h/mcp", "iss": "http://as",
                   "exp": now() + 60})
        };
        let with = |k: &str, v: Value| {
            let mut a = base();
            a[k] = v;
            a
        };
        assert!(why(with("active", json!(false))).contains("not active"));
        assert!(why(with("active", json!("true"))).contains("not active"));
        assert!(why(json!({"sub": "ada"})).contains("not active"));
        assert!(why(json!([1, 2])).contains("not a JSON object"));
        assert!(why(with("aud", json!("http://other/mcp"))).contains("(aud)"));
        assert!(why(with("aud", json!(7))).contains("(aud)"));
        assert!(why(with("aud", Value::Null)).contains("(aud)"));
        assert!(why(with("iss", json!("http://evil"))).contains("(iss)"));
        assert!(why(with("exp", json!(now() - 120))).contains("expired"));
        assert!(why(with("exp", json!("soon"))).contains("not a time"));
        assert!(why(with("exp", json!(-5))).contains("not a time"));
        assert!(why(with("nbf", json!(now() + 600))).contains("not valid yet"));
        assert!(why(with("sub", json!(5))).contains("`sub`"));
        assert!(why(with("token_type", json!("refresh_token"))).contains("bearer"));
        assert!(why(with("cnf", json!({"jkt": "x"}))).contains("bound to a key"));
        // Huge numbers are times far away, not overflows.
        assert!(validator().check(with("exp", json!(u64::MAX))).is_ok());
        assert!(validator().check(with("exp", json!(1e300))).is_ok());
    }

    #[test]
    fn a_bad_endpoint_is_refused_at_construction() {
        let e = IntrospectionValidator::new("/introspect", "rs", "s", "http://h/mcp").unwrap_err();
        assert!(e.message().contains("not an http(s) URL"), "{e}");
    }

    #[test]
    fn the_cache_keeps_active_answers_until_their_deadline_and_is_bounded() {
        let cache = Cache {
            ttl: Duration::from_secs(60),
            entries: 2,
            answers: Mutex::new(HashMap::new()),
        };
        let answer = |exp: u64| access_token(json!({"sub": "ada", "exp": exp}));
        cache.put("a", &answer(now() + 600));
        cache.put("b", &answer(now() + 600));
        cache.put("c", &answer(now() + 600));
        assert!(cache.get("a").is_some() && cache.get("b").is_some());
        assert!(cache.get("c").is_none(), "full of live answers: not kept");
        // A token that expires now is not kept past it.
        let cache = Cache {
            ttl: Duration::from_secs(60),
            entries: 2,
            answers: Mutex::new(HashMap::new()),
        };
        cache.put("old", &answer(now()));
        assert!(cache.get("old").is_none());
    }
}
