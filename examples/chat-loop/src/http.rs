//! Just enough HTTP/1.1 for the example: one request per connection, `Content-Length` bodies,
//! `Connection: close` responses. Not a general HTTP implementation: the point of the example is
//! that toolc-runtime needs none, and that any client you already use will do.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Requests larger than this are refused (the fake provider is still a network service).
const MAX_BODY: usize = 8 << 20;

#[derive(Debug)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn find_header_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n")
}

/// The two first words of the start line (method and path, or version and status) and the headers.
type Head = (String, String, Vec<(String, String)>);

fn parse_head(head: &str) -> Result<Head, String> {
    let mut lines = head.split("\r\n");
    let start = lines.next().unwrap_or("");
    let mut parts = start.split(' ');
    let first = parts.next().unwrap_or("").to_owned();
    let second = parts.next().unwrap_or("").to_owned();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    if first.is_empty() || second.is_empty() {
        return Err(format!("bad start line `{start}`"));
    }
    Ok((first, second, headers))
}

/// Reads one request (head and `Content-Length` body).
pub async fn read_request(stream: &mut TcpStream) -> Result<Request, String> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(end) = find_header_end(&buf) {
            break end;
        }
        if buf.len() > 64 * 1024 {
            return Err("request head too large".into());
        }
        let n = stream.read(&mut chunk).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("connection closed before the request head ended".into());
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let (method, path, headers) = parse_head(&head)?;
    let mut request = Request {
        method,
        path,
        headers,
        body: buf[head_end + 4..].to_vec(),
    };
    let length: usize = request
        .header("content-length")
        .map(|v| v.parse().map_err(|_| format!("bad Content-Length `{v}`")))
        .transpose()?
        .unwrap_or(0);
    if length > MAX_BODY {
        return Err(format!("body of {length} bytes is too large"));
    }
    while request.body.len() < length {
        let n = stream.read(&mut chunk).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("connection closed inside the body".into());
        }
        request.body.extend_from_slice(&chunk[..n]);
    }
    request.body.truncate(length);
    Ok(request)
}

/// Writes a complete response and closes the connection.
pub async fn write_response(
    stream: &mut TcpStream,
    status: u16,
    content_type: &str,
    body: &[u8],
) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        _ => "Error",
    };
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body).await?;
    stream.shutdown().await
}

/// A response as the client sees it.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub content_type: String,
    pub body: String,
}

/// POSTs `body` to `http://{addr}{path}` and reads the whole response.
pub async fn post(
    addr: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Result<Response, String> {
    let mut stream = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect {addr}: {e}"))?;
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream
        .write_all(head.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    stream
        .write_all(body.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    stream
        .read_to_end(&mut raw)
        .await
        .map_err(|e| e.to_string())?;
    let end = find_header_end(&raw).ok_or("response without a complete head")?;
    let head = String::from_utf8_lossy(&raw[..end]).into_owned();
    let (_version, status, headers) = parse_head(&head)?;
    let status = status
        .parse()
        .map_err(|_| format!("bad status `{status}`"))?;
    let content_type = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-type"))
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    Ok(Response {
        status,
        content_type,
        body: String::from_utf8_lossy(&raw[end + 4..]).into_owned(),
    })
}

/// The `data:` payloads of a server-sent-events body, in order.
pub fn sse_data(body: &str) -> impl Iterator<Item = &str> {
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(str::trim)
}
