//! The catalog's HTTP transport: reqwest over hyper, with rustls (the ring provider) for
//! `https://` catalogs. One client per catalog, so connections are reused between calls.
//!
//! Trust roots are the system's, read by `rustls-native-certs`, which also honours
//! `SSL_CERT_FILE` and `SSL_CERT_DIR` (a private CA in a container, a test CA). A body larger
//! than the limit is refused while it is read, not after.

use std::fmt;
use std::sync::Arc;

use reqwest::header::{HeaderName, HeaderValue};
use reqwest::{Method, Url};

/// A catalog's base URL: `http(s)://HOST[:PORT][/PATH]`, without credentials, query or
/// fragment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BaseUrl {
    url: Url,
}

/// Why a base URL was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UrlError(pub String);

impl fmt::Display for UrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UrlError {}

impl BaseUrl {
    /// Checks and parses a catalog base URL; the error says what is wrong with `text`.
    pub fn parse(text: &str) -> Result<BaseUrl, UrlError> {
        let expected = || {
            UrlError(format!(
                "{text}: expected http://HOST[:PORT][/PATH] or https://HOST[:PORT][/PATH]"
            ))
        };
        if text.bytes().any(|b| b.is_ascii_control() || b == b' ') {
            return Err(UrlError(format!(
                "{text}: the URL has spaces or control characters"
            )));
        }
        let url = Url::parse(text).map_err(|_| expected())?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(UrlError(format!(
                "{text}: the catalog URL must start with http:// or https://"
            )));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(expected());
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(UrlError(format!(
                "{text}: no credentials in the URL; they are sent per call"
            )));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(UrlError(format!(
                "{text}: a catalog base URL has no query or fragment"
            )));
        }
        if url.port() == Some(0) {
            return Err(UrlError(format!("{text}: invalid port")));
        }
        Ok(BaseUrl { url })
    }

    /// The URL of `suffix` (which starts with `/`) under the base path.
    pub fn join(&self, suffix: &str) -> Url {
        let mut url = self.url.clone();
        let path = format!("{}{suffix}", self.url.path().trim_end_matches('/'));
        url.set_path(&path);
        url
    }

    /// Whether the catalog is reached over TLS.
    pub fn is_https(&self) -> bool {
        self.url.scheme() == "https"
    }
}

impl fmt::Display for BaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.url.as_str().trim_end_matches('/'))
    }
}

/// A complete response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    /// The HTTP status code.
    pub status: u16,
    /// The whole body, at most the `max_body` bytes given to [`Transport::send`].
    pub body: Vec<u8>,
}

/// Transport failures (a timeout is the caller's, around the whole exchange).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HttpError {
    /// The catalog could not be reached (connection refused, DNS, TLS handshake).
    Connect(String),
    /// The connection failed while the request was sent or the answer read.
    Io(String),
    /// The answer is not HTTP that hyper can read.
    Protocol(String),
    /// The body is longer than the limit (in bytes).
    TooLarge(usize),
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HttpError::Connect(e) => write!(f, "cannot connect: {e}"),
            HttpError::Io(e) => write!(f, "connection failed: {e}"),
            HttpError::Protocol(e) => write!(f, "not a readable HTTP answer: {e}"),
            HttpError::TooLarge(n) => write!(f, "the answer is larger than {n} bytes"),
        }
    }
}

/// The HTTP client of one catalog.
#[derive(Clone, Debug)]
pub struct Transport {
    base: BaseUrl,
    client: reqwest::Client,
}

impl Transport {
    /// The client of the catalog at `base`. Fails for an `https://` catalog when no trusted root
    /// certificate is found, or when the HTTP client cannot be set up.
    pub fn new(base: BaseUrl) -> Result<Transport, UrlError> {
        let mut builder = reqwest::Client::builder()
            // A catalog is a service the operator names: no proxy from the environment in
            // between, and no redirect to somewhere the credentials were not meant for.
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("toolc-runtime/", env!("CARGO_PKG_VERSION")));
        // Always our own rustls set-up: reqwest has no crypto provider of its own here. An
        // `http://` catalog never uses it, so it needs no roots.
        builder = builder.tls_backend_preconfigured(tls_config(base.is_https())?);
        let client = builder
            .build()
            .map_err(|e| UrlError(format!("{base}: cannot set up the HTTP client: {e}")))?;
        Ok(Transport { base, client })
    }

    /// The catalog's base URL.
    pub fn base(&self) -> &BaseUrl {
        &self.base
    }

    /// One request; the body is read up to `max_body` bytes.
    pub async fn send(
        &self,
        method: &str,
        suffix: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
        max_body: usize,
    ) -> Result<Response, HttpError> {
        let method = Method::from_bytes(method.as_bytes())
            .map_err(|e| HttpError::Protocol(e.to_string()))?;
        let mut request = self.client.request(method, self.base.join(suffix));
        for (name, value) in headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|e| HttpError::Protocol(e.to_string()))?;
            let value =
                HeaderValue::from_str(value).map_err(|e| HttpError::Protocol(e.to_string()))?;
            request = request.header(name, value);
        }
        if let Some(body) = body {
            request = request
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.to_vec());
        }
        let mut response = request.send().await.map_err(transport_error)?;
        let status = response.status().as_u16();
        if response
            .content_length()
            .is_some_and(|n| n > max_body as u64)
        {
            return Err(HttpError::TooLarge(max_body));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(transport_error)? {
            if body.len() + chunk.len() > max_body {
                return Err(HttpError::TooLarge(max_body));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Response { status, body })
    }
}

fn transport_error(e: reqwest::Error) -> HttpError {
    // The whole chain: reqwest's own message is only "error sending request".
    let mut text = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    // A connection the service accepted and closed without a whole answer, or bytes that are
    // not HTTP, is an unreadable answer (the service is there); a refused or failed connect
    // is an unreachable service.
    let unreadable = [
        "closed before message completed",
        "parse",
        "invalid",
        "incomplete",
    ];
    if e.is_connect() {
        HttpError::Connect(text)
    } else if e.is_body() || e.is_decode() || unreadable.iter().any(|u| text.contains(u)) {
        HttpError::Protocol(text)
    } else {
        HttpError::Io(text)
    }
}

/// rustls with the ring provider and the system's roots (`SSL_CERT_FILE` / `SSL_CERT_DIR`
/// when set).
fn tls_config(with_roots: bool) -> Result<rustls::ClientConfig, UrlError> {
    let mut roots = rustls::RootCertStore::empty();
    let found = if with_roots {
        rustls_native_certs::load_native_certs()
    } else {
        rustls_native_certs::CertificateResult::default()
    };
    for cert in found.certs {
        // A certificate the store cannot use is skipped, as a browser would.
        let _ = roots.add(cert);
    }
    if with_roots && roots.is_empty() {
        let why: Vec<String> = found.errors.iter().map(ToString::to_string).collect();
        return Err(UrlError(format!(
            "no trusted root certificates found for https catalogs (set SSL_CERT_FILE to a PEM bundle){}",
            if why.is_empty() {
                String::new()
            } else {
                format!(": {}", why.join("; "))
            }
        )));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| UrlError(format!("cannot set up TLS: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls() {
        let u = BaseUrl::parse("http://127.0.0.1:8080/api/").unwrap();
        assert_eq!(u.join("/tools").as_str(), "http://127.0.0.1:8080/api/tools");
        assert_eq!(u.to_string(), "http://127.0.0.1:8080/api");
        let u = BaseUrl::parse("http://catalog.internal").unwrap();
        assert_eq!(u.join("/tools").as_str(), "http://catalog.internal/tools");
        let u = BaseUrl::parse("http://[::1]:9000").unwrap();
        assert_eq!(u.join("/execute").as_str(), "http://[::1]:9000/execute");
        let u = BaseUrl::parse("https://tools.example/v1").unwrap();
        assert!(u.is_https());
        assert_eq!(u.join("/tools").as_str(), "https://tools.example/v1/tools");
        for bad in [
            "ftp://x",
            "http://",
            "http://u:p@x",
            "http://x:0",
            "http://x:99999",
            "http://x/a?b",
            "http://x/a#b",
            "http://x/a b",
            "not a url",
        ] {
            assert!(BaseUrl::parse(bad).is_err(), "{bad}");
        }
    }
}
