//! Just enough HTTP/1.1 for the catalog: one request per connection (`Connection: close`), a
//! JSON body, and a response read by `Content-Length`, `Transfer-Encoding: chunked` or until
//! the server closes. Plain `http://` only: `https://` would need a TLS stack (rustls or
//! native-tls wrapping the `TcpStream` before the request is written), which this crate does
//! not pull in; put a TLS-terminating proxy in front of an `https` catalog instead.

use std::fmt;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A response head larger than this is refused.
const MAX_HEAD: usize = 64 * 1024;

/// A parsed `http://host[:port][/path]` base URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BaseUrl {
    host: String,
    port: u16,
    /// The path prefix without a trailing `/` (`""` for the root).
    path: String,
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
    pub fn parse(url: &str) -> Result<BaseUrl, UrlError> {
        let rest = if let Some(rest) = url.strip_prefix("http://") {
            rest
        } else if url.starts_with("https://") {
            return Err(UrlError(format!(
                "{url}: https is not supported by the built-in client (no TLS); use an http:// URL, e.g. through a local TLS-terminating proxy"
            )));
        } else {
            return Err(UrlError(format!(
                "{url}: the catalog URL must start with http://"
            )));
        };
        let (authority, path) = match rest.find(['/', '?', '#']) {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if path.contains(['?', '#']) {
            return Err(UrlError(format!(
                "{url}: a catalog base URL has no query or fragment"
            )));
        }
        if authority.is_empty() || authority.contains('@') {
            return Err(UrlError(format!(
                "{url}: expected http://HOST[:PORT][/PATH] (no credentials in the URL)"
            )));
        }
        let (host, port) = split_host_port(authority)
            .ok_or_else(|| UrlError(format!("{url}: invalid host or port")))?;
        let path = path.trim_end_matches('/').to_owned();
        if path.bytes().any(|b| b.is_ascii_control() || b == b' ') {
            return Err(UrlError(format!(
                "{url}: the path has spaces or control characters"
            )));
        }
        Ok(BaseUrl { host, port, path })
    }

    /// `host:port`, for connecting.
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The request target for `suffix` (which starts with `/`).
    pub fn target(&self, suffix: &str) -> String {
        format!("{}{suffix}", self.path)
    }
}

impl fmt::Display for BaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "http://{}{}", self.authority(), self.path)
    }
}

fn split_host_port(authority: &str) -> Option<(String, u16)> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let end = rest.find(']')?;
        let host = &rest[..end];
        match &rest[end + 1..] {
            "" => (host, None),
            p => (host, Some(p.strip_prefix(':')?)),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty()
        || host
            .bytes()
            .any(|b| b.is_ascii_control() || b == b' ' || b == b'/')
    {
        return None;
    }
    let port = match port {
        None => 80,
        Some(p) => p.parse().ok().filter(|&p| p != 0)?,
    };
    Some((host.to_owned(), port))
}

/// A complete response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
}

/// Transport failures (a timeout is the caller's, around the whole exchange).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HttpError {
    Connect(String),
    Io(String),
    /// The response is not HTTP/1.x as this client reads it.
    Protocol(String),
    /// The body is larger than the limit.
    TooLarge(usize),
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HttpError::Connect(e) => write!(f, "cannot connect: {e}"),
            HttpError::Io(e) => write!(f, "connection error: {e}"),
            HttpError::Protocol(e) => write!(f, "invalid HTTP response: {e}"),
            HttpError::TooLarge(n) => write!(f, "the response is larger than {n} bytes"),
        }
    }
}

/// Sends one request and reads the whole response (no timeout here; wrap the future).
pub async fn send(
    base: &BaseUrl,
    method: &str,
    suffix: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
    max_body: usize,
) -> Result<Response, HttpError> {
    let mut stream = TcpStream::connect(base.authority())
        .await
        .map_err(|e| HttpError::Connect(e.to_string()))?;
    let _ = stream.set_nodelay(true);
    let mut head = format!(
        "{method} {} HTTP/1.1\r\nHost: {}\r\nAccept: application/json\r\nConnection: close\r\n",
        base.target(suffix),
        base.authority()
    );
    if let Some(body) = body {
        head.push_str("Content-Type: application/json\r\n");
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    for (name, value) in headers {
        // A header value with a line break would let a caller inject headers.
        if value.bytes().any(|b| b == b'\r' || b == b'\n') {
            return Err(HttpError::Protocol(format!(
                "the {name} header has a line break"
            )));
        }
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut out = head.into_bytes();
    if let Some(body) = body {
        out.extend_from_slice(body);
    }
    stream
        .write_all(&out)
        .await
        .map_err(|e| HttpError::Io(e.to_string()))?;
    read_response(&mut stream, max_body).await
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Framing {
    Length(usize),
    Chunked,
    UntilClose,
}

async fn read_response(stream: &mut TcpStream, max_body: usize) -> Result<Response, HttpError> {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = vec![0u8; 16 * 1024];
    let mut eof = false;
    let head_end = loop {
        if let Some(end) = memchr::memmem::find(&buf, b"\r\n\r\n") {
            break end;
        }
        if buf.len() > MAX_HEAD {
            return Err(HttpError::Protocol("the response head is too large".into()));
        }
        let n = read_some(stream, &mut chunk).await?;
        if n == 0 {
            return Err(HttpError::Protocol(
                "the connection closed before the response head ended".into(),
            ));
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = std::str::from_utf8(&buf[..head_end])
        .map_err(|_| HttpError::Protocol("the response head is not UTF-8".into()))?;
    let (status, framing) = parse_head(head)?;
    let mut body = buf.split_off(head_end + 4);
    loop {
        match framing {
            Framing::Length(n) => {
                if n > max_body {
                    return Err(HttpError::TooLarge(max_body));
                }
                if body.len() >= n {
                    body.truncate(n);
                    return Ok(Response { status, body });
                }
                if eof {
                    return Err(HttpError::Protocol(
                        "the connection closed inside the body".into(),
                    ));
                }
            }
            Framing::Chunked => match dechunk(&body, max_body)? {
                Some(decoded) => {
                    return Ok(Response {
                        status,
                        body: decoded,
                    })
                }
                None if eof => {
                    return Err(HttpError::Protocol(
                        "the connection closed inside a chunked body".into(),
                    ))
                }
                None => {}
            },
            Framing::UntilClose => {
                if body.len() > max_body {
                    return Err(HttpError::TooLarge(max_body));
                }
                if eof {
                    return Ok(Response { status, body });
                }
            }
        }
        // Chunked framing adds a little to the payload; allow for it before giving up.
        if body.len() > max_body + max_body / 8 + 1024 {
            return Err(HttpError::TooLarge(max_body));
        }
        let n = read_some(stream, &mut chunk).await?;
        if n == 0 {
            eof = true;
        } else {
            body.extend_from_slice(&chunk[..n]);
        }
    }
}

async fn read_some(stream: &mut TcpStream, chunk: &mut [u8]) -> Result<usize, HttpError> {
    stream
        .read(chunk)
        .await
        .map_err(|e| HttpError::Io(e.to_string()))
}

fn parse_head(head: &str) -> Result<(u16, Framing), HttpError> {
    let mut lines = head.split("\r\n");
    let start = lines.next().unwrap_or("");
    let mut parts = start.splitn(3, ' ');
    let version = parts.next().unwrap_or("");
    let status = parts.next().unwrap_or("");
    if !version.starts_with("HTTP/1.") {
        return Err(HttpError::Protocol(format!(
            "unexpected status line {start:?}"
        )));
    }
    let status: u16 = status
        .parse()
        .ok()
        .filter(|s| (100..600).contains(s))
        .ok_or_else(|| HttpError::Protocol(format!("unexpected status line {start:?}")))?;
    let mut length = None;
    let mut chunked = false;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let (name, value) = (name.trim(), value.trim());
        if name.eq_ignore_ascii_case("content-length") {
            let n: usize = value
                .parse()
                .map_err(|_| HttpError::Protocol(format!("bad Content-Length {value:?}")))?;
            if length.is_some_and(|m| m != n) {
                return Err(HttpError::Protocol("conflicting Content-Length".into()));
            }
            length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value
                .rsplit(',')
                .next()
                .is_some_and(|last| last.trim().eq_ignore_ascii_case("chunked"));
        }
    }
    // Chunked wins over a length (RFC 9112 §6.3); 204 and 304 have no body.
    let framing = if status == 204 || status == 304 || (100..200).contains(&status) {
        Framing::Length(0)
    } else if chunked {
        Framing::Chunked
    } else if let Some(n) = length {
        Framing::Length(n)
    } else {
        Framing::UntilClose
    };
    Ok((status, framing))
}

/// Decodes a chunked body; `None` while it is incomplete.
fn dechunk(mut data: &[u8], max_body: usize) -> Result<Option<Vec<u8>>, HttpError> {
    let mut out = Vec::new();
    loop {
        let Some(line_end) = memchr::memmem::find(data, b"\r\n") else {
            return Ok(None);
        };
        let line = std::str::from_utf8(&data[..line_end])
            .map_err(|_| HttpError::Protocol("bad chunk size".into()))?;
        let size_text = line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| HttpError::Protocol(format!("bad chunk size {size_text:?}")))?;
        data = &data[line_end + 2..];
        if size == 0 {
            // Trailers, then an empty line.
            loop {
                let Some(end) = memchr::memmem::find(data, b"\r\n") else {
                    return Ok(None);
                };
                if end == 0 {
                    return Ok(Some(out));
                }
                data = &data[end + 2..];
            }
        }
        if out.len().saturating_add(size) > max_body {
            return Err(HttpError::TooLarge(max_body));
        }
        if data.len() < size + 2 {
            return Ok(None);
        }
        if &data[size..size + 2] != b"\r\n" {
            return Err(HttpError::Protocol(
                "a chunk is not followed by CRLF".into(),
            ));
        }
        out.extend_from_slice(&data[..size]);
        data = &data[size + 2..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls() {
        let u = BaseUrl::parse("http://127.0.0.1:8080/api/").unwrap();
        assert_eq!(u.authority(), "127.0.0.1:8080");
        assert_eq!(u.target("/tools"), "/api/tools");
        assert_eq!(u.to_string(), "http://127.0.0.1:8080/api");
        let u = BaseUrl::parse("http://catalog.internal").unwrap();
        assert_eq!(u.authority(), "catalog.internal:80");
        assert_eq!(u.target("/tools"), "/tools");
        let u = BaseUrl::parse("http://[::1]:9000").unwrap();
        assert_eq!(u.authority(), "[::1]:9000");
        assert!(BaseUrl::parse("https://x").unwrap_err().0.contains("TLS"));
        for bad in [
            "ftp://x",
            "http://",
            "http://u:p@x",
            "http://x:0",
            "http://x:99999",
            "http://x/a?b",
            "http://x/a b",
        ] {
            assert!(BaseUrl::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn heads_and_framing() {
        assert_eq!(
            parse_head("HTTP/1.1 200 OK\r\nContent-Length: 5").unwrap(),
            (200, Framing::Length(5))
        );
        assert_eq!(
            parse_head("HTTP/1.1 200 OK\r\ncontent-length: 5\r\nTransfer-Encoding: gzip, chunked")
                .unwrap(),
            (200, Framing::Chunked)
        );
        assert_eq!(
            parse_head("HTTP/1.0 500 Oops").unwrap(),
            (500, Framing::UntilClose)
        );
        assert_eq!(
            parse_head("HTTP/1.1 204 No Content").unwrap(),
            (204, Framing::Length(0))
        );
        assert!(parse_head("SSH-2.0-OpenSSH").is_err());
        assert!(parse_head("HTTP/1.1 abc").is_err());
        assert!(parse_head("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2").is_err());
    }

    #[test]
    fn chunked_bodies() {
        let body = b"4;ext=1\r\nWiki\r\n5\r\npedia\r\n0\r\nX-Trailer: 1\r\n\r\n";
        assert_eq!(dechunk(body, 100).unwrap(), Some(b"Wikipedia".to_vec()));
        assert_eq!(dechunk(&body[..10], 100).unwrap(), None);
        assert_eq!(dechunk(&body[..body.len() - 2], 100).unwrap(), None);
        assert!(dechunk(b"zz\r\n", 100).is_err());
        assert!(dechunk(b"4\r\nWikiXX", 100).is_err());
        assert_eq!(dechunk(body, 5), Err(HttpError::TooLarge(5)));
    }
}
