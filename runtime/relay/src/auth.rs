//! Who may open a relay session: the authorizer sees the browser's upgrade request and returns a
//! [`Principal`] or a [`Refusal`]; a refused browser gets 401/403 and no model connection is
//! opened for it.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;

use axum::http::{header, HeaderMap, StatusCode, Uri};

use crate::context::Principal;

/// The subprotocol prefix that carries a bearer token: browsers cannot set headers on a
/// websocket, so `new WebSocket(url, ["toolc", "toolc.bearer." + token])` is how a page sends it.
pub const BEARER_SUBPROTOCOL_PREFIX: &str = "toolc.bearer.";

/// The subprotocol the relay selects when a browser offers it (alongside a bearer token), so
/// that the token itself is never echoed back.
pub const SUBPROTOCOL: &str = "toolc";

/// What an authorizer sees of a browser's upgrade request.
#[derive(Clone, Debug)]
pub struct Handshake {
    /// The request's URI, with the query the page connected with.
    pub uri: Uri,
    /// The request's headers.
    pub headers: HeaderMap,
    /// The TCP peer, when the server knows it.
    pub remote: Option<SocketAddr>,
}

impl Handshake {
    /// The bearer token from `Authorization: Bearer TOKEN` or from a `toolc.bearer.TOKEN`
    /// subprotocol.
    pub fn bearer_token(&self) -> Option<&str> {
        let from_header = self
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                let (scheme, token) = v.trim().split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
            })
            .filter(|t| !t.is_empty());
        from_header.or_else(|| {
            self.subprotocols()
                .find_map(|p| p.strip_prefix(BEARER_SUBPROTOCOL_PREFIX))
                .filter(|t| !t.is_empty())
        })
    }

    /// The subprotocols the browser offered, in order.
    pub fn subprotocols(&self) -> impl Iterator<Item = &str> {
        self.headers
            .get_all(header::SEC_WEBSOCKET_PROTOCOL)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .filter(|p| !p.is_empty())
    }

    /// A cookie's value.
    pub fn cookie(&self, name: &str) -> Option<&str> {
        self.headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .find_map(|pair| {
                let (k, v) = pair.trim().split_once('=')?;
                (k == name).then_some(v)
            })
    }

    /// A query parameter's raw value (not percent-decoded).
    pub fn query(&self, name: &str) -> Option<&str> {
        self.uri.query()?.split('&').find_map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (k == name).then_some(v)
        })
    }

    /// The page's `Origin` header; `None` when the request is not from a browser page.
    pub fn origin(&self) -> Option<&str> {
        self.headers
            .get(header::ORIGIN)
            .and_then(|v| v.to_str().ok())
    }
}

/// Why a browser may not open a session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    status: StatusCode,
    message: String,
}

impl Refusal {
    /// 401: no credentials, or credentials the relay does not recognise.
    pub fn unauthorized(message: impl Into<String>) -> Refusal {
        Refusal {
            status: StatusCode::UNAUTHORIZED,
            message: message.into(),
        }
    }

    /// 403: a known caller who may not use the relay.
    pub fn forbidden(message: impl Into<String>) -> Refusal {
        Refusal {
            status: StatusCode::FORBIDDEN,
            message: message.into(),
        }
    }

    pub(crate) fn with_status(status: StatusCode, message: impl Into<String>) -> Refusal {
        Refusal {
            status,
            message: message.into(),
        }
    }

    /// The HTTP status the browser gets: 401, 403, or another the relay chose.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// Why, in words; the browser gets it in the response body.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.status.as_u16(), self.message)
    }
}

/// The future an authorizer returns.
pub type AuthFuture = Pin<Box<dyn Future<Output = Result<Principal, Refusal>> + Send>>;

/// Decides who a browser is. Implemented for closures
/// `Fn(Handshake) -> impl Future<Output = Result<Principal, Refusal>>`, and by [`StaticTokens`].
pub trait Authorizer: Send + Sync + 'static {
    /// Decides who the browser of `handshake` is: its principal, or why it may not connect.
    fn authorize(&self, handshake: Handshake) -> AuthFuture;
}

impl<F, Fut> Authorizer for F
where
    F: Fn(Handshake) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Principal, Refusal>> + Send + 'static,
{
    fn authorize(&self, handshake: Handshake) -> AuthFuture {
        Box::pin(self(handshake))
    }
}

/// Bearer tokens from a file of `TOKEN USER_ID` lines (`#` starts a comment): the token, sent as
/// `Authorization: Bearer TOKEN` or as the `toolc.bearer.TOKEN` subprotocol, makes the browser
/// the principal `USER_ID`, with the token as its credential (forwarded to a catalog).
#[derive(Clone)]
pub struct StaticTokens {
    users: Arc<HashMap<String, String>>,
}

impl fmt::Debug for StaticTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StaticTokens({} tokens)", self.users.len())
    }
}

impl StaticTokens {
    /// Reads the token file at `path` (see [`StaticTokens::parse`]); the error names the file and
    /// line.
    pub fn from_file(path: &Path) -> Result<StaticTokens, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        StaticTokens::parse(&text).map_err(|e| format!("{}:{e}", path.display()))
    }

    /// Parses `TOKEN USER_ID` lines; an error names the line and what is wrong with it.
    pub fn parse(text: &str) -> Result<StaticTokens, String> {
        let mut users = HashMap::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut fields = line.split_whitespace();
            let (Some(token), Some(user), None) = (fields.next(), fields.next(), fields.next())
            else {
                return Err(format!(
                    "{}: expected `TOKEN USER_ID` (two fields separated by spaces)",
                    i + 1
                ));
            };
            if token.len() < 16 {
                return Err(format!(
                    "{}: the token is {} characters long; use at least 16 random characters",
                    i + 1,
                    token.len()
                ));
            }
            if users.insert(token.to_owned(), user.to_owned()).is_some() {
                return Err(format!("{}: this token is already listed", i + 1));
            }
        }
        if users.is_empty() {
            return Err("1: the file lists no tokens".to_owned());
        }
        Ok(StaticTokens {
            users: Arc::new(users),
        })
    }

    /// The number of tokens.
    pub fn len(&self) -> usize {
        self.users.len()
    }

    /// Whether no token is listed; never true for a parsed file, which must list one.
    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
    }

    /// The principal of a handshake, or why not.
    pub fn principal(&self, handshake: &Handshake) -> Result<Principal, Refusal> {
        let Some(token) = handshake.bearer_token() else {
            return Err(Refusal::unauthorized(
                "send a bearer token: `Authorization: Bearer TOKEN` or the `toolc.bearer.TOKEN` subprotocol",
            ));
        };
        match self.users.get(token) {
            Some(user) => Ok(Principal::new(user.as_str()).with_credential(token)),
            None => Err(Refusal::unauthorized("the bearer token is not recognised")),
        }
    }
}

impl Authorizer for StaticTokens {
    fn authorize(&self, handshake: Handshake) -> AuthFuture {
        let result = self.principal(&handshake);
        Box::pin(async move { result })
    }
}

/// Whether `origin` is on the allow-list (compared without case: scheme and host are
/// case-insensitive, and a browser sends them in lower case).
pub(crate) fn origin_allowed(allowed: &[String], origin: &str) -> bool {
    allowed.iter().any(|a| a.eq_ignore_ascii_case(origin))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn handshake(headers: &[(&str, &str)], uri: &str) -> Handshake {
        let mut map = HeaderMap::new();
        for (k, v) in headers {
            map.append(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        Handshake {
            uri: uri.parse().unwrap(),
            headers: map,
            remote: None,
        }
    }

    #[test]
    fn the_token_comes_from_the_header_or_the_subprotocol() {
        let h = handshake(&[("authorization", "Bearer abc")], "/");
        assert_eq!(h.bearer_token(), Some("abc"));
        let h = handshake(
            &[("sec-websocket-protocol", "toolc, toolc.bearer.xyz")],
            "/",
        );
        assert_eq!(h.bearer_token(), Some("xyz"));
        let h = handshake(&[("authorization", "Basic abc")], "/");
        assert_eq!(h.bearer_token(), None);
        let h = handshake(
            &[("cookie", "a=1; session=s2"), ("origin", "https://x")],
            "/?naming=tool&t=9",
        );
        assert_eq!(h.cookie("session"), Some("s2"));
        assert_eq!(h.query("t"), Some("9"));
        assert_eq!(h.origin(), Some("https://x"));
    }

    #[test]
    fn token_files_are_checked_line_by_line() {
        let tokens = StaticTokens::parse("# users\n0123456789abcdef alice\n").unwrap();
        let h = handshake(&[("authorization", "Bearer 0123456789abcdef")], "/");
        let p = tokens.principal(&h).unwrap();
        assert_eq!(p.id(), "alice");
        assert_eq!(p.credential(), Some("0123456789abcdef"));
        let wrong = handshake(&[("authorization", "Bearer 0123456789abcdeX")], "/");
        assert_eq!(
            tokens.principal(&wrong).unwrap_err().status(),
            StatusCode::UNAUTHORIZED
        );
        assert!(StaticTokens::parse("short alice\n")
            .unwrap_err()
            .starts_with("1: the token is 5"));
        assert!(StaticTokens::parse("\n0123456789abcdef\n")
            .unwrap_err()
            .starts_with("2: expected"));
        assert!(
            StaticTokens::parse("0123456789abcdef a\n0123456789abcdef b\n")
                .unwrap_err()
                .starts_with("2: this token")
        );
        assert!(StaticTokens::parse("# nothing\n").is_err());
    }
}
