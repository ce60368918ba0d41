//! What rmcp leaves to the application at the edges of JSON-RPC 2.0: text that is not JSON is
//! a parse error (`-32700`, with a `null` id) on stdio and over HTTP (status 400), where rmcp
//! drops the line (stdio) or answers `415`; a message that is JSON but not a request,
//! notification or response is an invalid request (`-32600`). Everything else passes through
//! untouched, to rmcp.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full, Limited};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};

/// The largest request body accepted over HTTP (rmcp's own default).
pub const MAX_HTTP_BODY: usize = 4 * 1024 * 1024;

/// The longest line accepted on stdio: a longer one is answered as a parse error and skipped.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// Why a message cannot reach rmcp, as the JSON-RPC error that says so.
fn rejection(text: &[u8]) -> Option<Value> {
    let value: Value = match serde_json::from_slice(text) {
        Ok(value) => value,
        Err(e) => {
            return Some(error(
                -32700,
                &format!("Parse error: the message is not JSON ({e})"),
            ))
        }
    };
    let is_message = |v: &Value| {
        v.get("jsonrpc") == Some(&Value::String("2.0".into()))
            && (v.get("method").is_some_and(Value::is_string)
                || v.get("result").is_some()
                || v.get("error").is_some())
    };
    let valid = match &value {
        Value::Object(_) => is_message(&value),
        // A batch (2025-03-26): rmcp answers for what it takes; an empty one is invalid.
        Value::Array(items) => !items.is_empty() && items.iter().all(is_message),
        _ => false,
    };
    (!valid).then(|| {
        error(
            -32600,
            "Invalid Request: expected a JSON-RPC 2.0 request, notification or response",
        )
    })
}

fn error(code: i64, message: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": null, "error": { "code": code, "message": message } })
}

/// Serves rmcp over `reader`/`writer` with stdio's framing (one message per line) after
/// answering what is not JSON-RPC: `serve` gets a clean pipe, its output is copied out, and
/// the errors are written between its lines.
pub(super) async fn guard_lines<R, W, F, Fut>(reader: R, writer: W, serve: F) -> Fut::Output
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
    F: FnOnce(
        tokio::io::ReadHalf<tokio::io::DuplexStream>,
        tokio::io::WriteHalf<tokio::io::DuplexStream>,
    ) -> Fut,
    Fut: Future,
{
    let (ours, theirs) = tokio::io::duplex(256 * 1024);
    let (from_rmcp, mut to_rmcp) = tokio::io::split(ours);
    let (errors_tx, mut errors_rx) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
    // In: each line checked, good ones passed to rmcp, bad ones answered.
    let inbound = tokio::spawn(async move {
        let mut lines = BufReader::new(reader);
        let mut line = Vec::new();
        loop {
            line.clear();
            let read = (&mut lines)
                .take(MAX_LINE as u64 + 1)
                .read_until(b'\n', &mut line)
                .await;
            match read {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if line.len() > MAX_LINE && !line.ends_with(b"\n") {
                // Skip the rest of the over-long line.
                let mut rest = Vec::new();
                if lines.read_until(b'\n', &mut rest).await.is_err() {
                    break;
                }
                let _ = errors_tx.send(line_of(&error(
                    -32700,
                    "Parse error: the message is longer than 16 MiB",
                )));
                continue;
            }
            let text = line.trim_ascii();
            if text.is_empty() {
                continue;
            }
            match rejection(text) {
                Some(answer) => {
                    let _ = errors_tx.send(line_of(&answer));
                }
                None => {
                    if to_rmcp.write_all(text).await.is_err()
                        || to_rmcp.write_all(b"\n").await.is_err()
                    {
                        break;
                    }
                }
            }
        }
        let _ = to_rmcp.shutdown().await;
    });
    // Out: rmcp's lines and the errors, each whole.
    let outbound = tokio::spawn(async move {
        let mut writer = writer;
        let mut rmcp_lines = BufReader::new(from_rmcp);
        let mut line = Vec::new();
        loop {
            line.clear();
            tokio::select! {
                read = rmcp_lines.read_until(b'\n', &mut line) => {
                    match read {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {
                            if writer.write_all(&line).await.is_err() || writer.flush().await.is_err() {
                                break;
                            }
                        }
                    }
                }
                Some(answer) = errors_rx.recv() => {
                    if writer.write_all(&answer).await.is_err() || writer.flush().await.is_err() {
                        break;
                    }
                }
            }
        }
    });
    let (read, write) = tokio::io::split(theirs);
    let output = serve(read, write).await;
    inbound.abort();
    outbound.abort();
    output
}

fn line_of(value: &Value) -> Vec<u8> {
    let mut line = value.to_string().into_bytes();
    line.push(b'\n');
    line
}

/// The streamable HTTP service with JSON-RPC's answers for a body that is not JSON-RPC
/// (`400` with a `-32700` or `-32600` error) in place of rmcp's `415`. Mount it like rmcp's:
/// `Router::new().nest_service("/mcp", server.streamable_http())`.
#[derive(Clone)]
pub struct McpHttpService<S> {
    inner: S,
    /// With `oauth`: the resource server every request's token is checked by.
    #[cfg(feature = "oauth")]
    auth: Option<std::sync::Arc<crate::oauth::ResourceServer>>,
}

impl<S> McpHttpService<S> {
    pub(super) fn new(inner: S) -> McpHttpService<S> {
        McpHttpService {
            inner,
            #[cfg(feature = "oauth")]
            auth: None,
        }
    }

    /// Every request must carry a token `auth` accepts (see [`crate::oauth`]).
    #[cfg(feature = "oauth")]
    pub(super) fn with_auth(
        mut self,
        auth: Option<std::sync::Arc<crate::oauth::ResourceServer>>,
    ) -> McpHttpService<S> {
        self.auth = auth;
        self
    }
}

impl<S> std::fmt::Debug for McpHttpService<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("McpHttpService")
    }
}

type HttpResponse = http::Response<BoxBody<Bytes, Infallible>>;

fn json_response(status: http::StatusCode, body: &Value) -> HttpResponse {
    http::Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body.to_string())).boxed())
        .expect("a valid response")
}

impl<S, B> tower_service::Service<http::Request<B>> for McpHttpService<S>
where
    S: tower_service::Service<
            http::Request<Full<Bytes>>,
            Response = HttpResponse,
            Error = Infallible,
        > + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = HttpResponse;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<HttpResponse, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        // The service that was polled ready takes the call; a fresh clone stays for the next.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        #[cfg(feature = "oauth")]
        let auth = self.auth.clone();
        Box::pin(async move {
            #[allow(unused_mut)]
            let (mut parts, body) = request.into_parts();
            // The token first: a request without one is refused before its body is read.
            #[cfg(feature = "oauth")]
            let token = match &auth {
                Some(auth) => match auth.authenticate(&parts).await {
                    Ok(token) => Some(token),
                    Err(refused) => return Ok(*refused),
                },
                None => None,
            };
            let bytes =
                match Limited::new(body, MAX_HTTP_BODY).collect().await {
                    Ok(collected) => collected.to_bytes(),
                    Err(_) => return Ok(json_response(
                        http::StatusCode::PAYLOAD_TOO_LARGE,
                        &error(
                            -32600,
                            "Invalid Request: the body is larger than 4 MiB or could not be read",
                        ),
                    )),
                };
            // Only POST bodies are messages; a GET or DELETE goes on as it came.
            if parts.method == http::Method::POST {
                if let Some(answer) = rejection(&bytes) {
                    return Ok(json_response(http::StatusCode::BAD_REQUEST, &answer));
                }
            }
            // The scopes of the tool a message calls; then who the caller is, for the calls.
            #[cfg(feature = "oauth")]
            if let (Some(auth), Some(token)) = (&auth, token) {
                if parts.method == http::Method::POST {
                    if let Err(refused) = auth.authorize_message(&token, &bytes) {
                        return Ok(*refused);
                    }
                }
                parts.extensions.insert(crate::oauth::principal(token));
            }
            inner
                .call(http::Request::from_parts(parts, Full::new(bytes)))
                .await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_not_json_rpc_is_answered_with_its_error() {
        let code = |text: &str| rejection(text.as_bytes()).map(|e| e["error"]["code"].clone());
        assert_eq!(code("{not json"), Some(json!(-32700)));
        assert_eq!(code(""), Some(json!(-32700)));
        assert_eq!(code("[]"), Some(json!(-32600)));
        assert_eq!(code("5"), Some(json!(-32600)));
        assert_eq!(
            code(r#"{"jsonrpc":"1.0","method":"ping","id":1}"#),
            Some(json!(-32600))
        );
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1}"#), Some(json!(-32600)));
        assert_eq!(code(r#"{"jsonrpc":"2.0","method":"ping","id":1}"#), None);
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            None
        );
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#), None);
        assert_eq!(code(r#"[{"jsonrpc":"2.0","method":"ping","id":1}]"#), None);
        let parse = rejection(b"{").unwrap();
        assert_eq!(parse["id"], Value::Null);
        assert_eq!(parse["jsonrpc"], "2.0");
    }
}
