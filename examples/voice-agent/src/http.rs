//! Just enough HTTP/1.1 for the demo: one request per connection, `GET` only, the head read with
//! a size and time limit. A request with `Upgrade: websocket` is handed back to the caller with
//! the bytes read past the head, so the websocket can start on the same connection.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Longer heads are refused: no browser sends one this big to this server.
pub const MAX_HEAD: usize = 16 * 1024;
/// How long a client may take to send its request head.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// A parsed request head.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    /// Names in lower case, in the order received.
    pub headers: Vec<(String, String)>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether a comma-separated header contains `token` (case-insensitive), as `Connection:
    /// keep-alive, Upgrade` does.
    pub fn header_has_token(&self, name: &str, token: &str) -> bool {
        self.headers
            .iter()
            .filter(|(n, _)| n == name)
            .flat_map(|(_, v)| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    }

    pub fn is_websocket_upgrade(&self) -> bool {
        self.header_has_token("upgrade", "websocket")
    }

    /// The value of `key` in the query string (no percent-decoding: the demo's keys and values
    /// are plain words).
    pub fn query_value(&self, key: &str) -> Option<&str> {
        self.query
            .as_deref()?
            .split('&')
            .find_map(|pair| pair.strip_prefix(key)?.strip_prefix('='))
    }
}

/// Why a head could not be read.
#[derive(Debug, PartialEq, Eq)]
pub enum HeadError {
    /// The connection closed or failed before a complete head.
    Closed,
    TooLarge,
    TimedOut,
    Malformed,
}

/// Reads one request head. Returns it with whatever bytes arrived after it.
pub async fn read_head(stream: &mut TcpStream) -> Result<(Request, Vec<u8>), HeadError> {
    let read = async {
        let mut buf = Vec::with_capacity(1024);
        let mut chunk = [0u8; 2048];
        loop {
            let n = stream
                .read(&mut chunk)
                .await
                .map_err(|_| HeadError::Closed)?;
            if n == 0 {
                return Err(HeadError::Closed);
            }
            // Only the new bytes (and three before them) can complete the terminator.
            let from = buf.len().saturating_sub(3);
            buf.extend_from_slice(&chunk[..n]);
            if let Some(end) = find_terminator(&buf[from..]) {
                let end = from + end;
                let rest = buf.split_off(end + 4);
                buf.truncate(end);
                let request = parse_head(&buf).ok_or(HeadError::Malformed)?;
                return Ok((request, rest));
            }
            if buf.len() > MAX_HEAD {
                return Err(HeadError::TooLarge);
            }
        }
    };
    tokio::time::timeout(HEAD_TIMEOUT, read)
        .await
        .unwrap_or(Err(HeadError::TimedOut))
}

fn find_terminator(bytes: &[u8]) -> Option<usize> {
    bytes.windows(4).position(|w| w == b"\r\n\r\n")
}

/// Parses `METHOD TARGET HTTP/1.x` and the header lines (without the blank line).
pub fn parse_head(head: &[u8]) -> Option<Request> {
    let text = std::str::from_utf8(head).ok()?;
    let mut lines = text.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_owned();
    let target = first.next()?;
    let version = first.next()?;
    if first.next().is_some() || !version.starts_with("HTTP/1.") || !target.starts_with('/') {
        return None;
    }
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) {
        return None;
    }
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p.to_owned(), Some(q.to_owned())),
        None => (target.to_owned(), None),
    };
    let mut headers = Vec::new();
    for line in lines {
        let (name, value) = line.split_once(':')?;
        if name.is_empty() || name.contains(' ') {
            return None;
        }
        headers.push((name.to_ascii_lowercase(), value.trim().to_owned()));
    }
    Some(Request {
        method,
        path,
        query,
        headers,
    })
}

/// A complete response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

impl Response {
    pub fn new(status: u16, content_type: &'static str, body: impl Into<Vec<u8>>) -> Response {
        Response {
            status,
            content_type,
            body: body.into(),
        }
    }

    pub fn text(status: u16, body: impl Into<String>) -> Response {
        Response::new(status, "text/plain; charset=utf-8", body.into())
    }

    pub fn json(value: &serde_json::Value) -> Response {
        Response::new(200, "application/json", value.to_string())
    }
}

pub fn reason(status: u16) -> &'static str {
    match status {
        101 => "Switching Protocols",
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        426 => "Upgrade Required",
        431 => "Request Header Fields Too Large",
        _ => "Error",
    }
}

/// Writes the response and closes the connection.
pub async fn send(stream: &mut TcpStream, response: &Response) {
    let head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-store\r\n\
         X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n",
        response.status,
        reason(response.status),
        response.content_type,
        response.body.len()
    );
    if stream.write_all(head.as_bytes()).await.is_ok()
        && stream.write_all(&response.body).await.is_ok()
    {
        let _ = stream.shutdown().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_parse_with_query_and_headers() {
        let r = parse_head(
            b"GET /?naming=tool HTTP/1.1\r\nHost: a:1\r\nConnection: keep-alive, Upgrade\r\nUpgrade: WebSocket",
        )
        .unwrap();
        assert_eq!(r.method, "GET");
        assert_eq!(r.path, "/");
        assert_eq!(r.query_value("naming"), Some("tool"));
        assert_eq!(r.query_value("nam"), None);
        assert_eq!(r.header("host"), Some("a:1"));
        assert!(r.header_has_token("connection", "upgrade"));
        assert!(r.is_websocket_upgrade());
    }

    #[test]
    fn malformed_heads_are_refused() {
        for head in [
            &b"GET / HTTP/2"[..],
            b"GET index.html HTTP/1.1",
            b"get / HTTP/1.1",
            b"GET / HTTP/1.1 extra",
            b"GET / HTTP/1.1\r\nno colon here",
            b"GET / HTTP/1.1\r\nbad name: x",
            b"\xff\xfe",
            b"",
        ] {
            assert_eq!(
                parse_head(head),
                None,
                "{:?}",
                String::from_utf8_lossy(head)
            );
        }
    }

    #[test]
    fn the_terminator_is_found_across_reads() {
        assert_eq!(find_terminator(b"GET / HTTP/1.1\r\n\r\nrest"), Some(14));
        assert_eq!(find_terminator(b"\r\n\r"), None);
    }
}
