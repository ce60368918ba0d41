//! Test doubles for realtime work (feature `testing`): a scripted fake model server that speaks
//! websockets like the OpenAI Realtime or Gemini Live endpoint, and a small test browser.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use toolc_realtime::script;
//! use toolc_relay::testing::{FakeModel, Script};
//! let model = FakeModel::start(
//!     Script::new()
//!         .wait_for("session.update", 1)
//!         .send_all(script::response_with_calls("r1", &[("c1", "lookup", r#"{"q":"x"}"#)]))
//!         .wait_for("response.create", 1),
//! )
//! .await?;
//! let url = model.url(); // give this to the relay as its upstream
//! # Ok(()) }
//! ```

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// One step of a fake model's script, run for every connection.
#[derive(Clone, Debug)]
pub enum Step {
    /// Send a JSON event.
    Send(Value),
    /// Send any text frame (it need not be JSON).
    SendText(String),
    /// Send a binary frame.
    SendBinary(Vec<u8>),
    /// Wait until `count` events of this kind (an OpenAI `type`, or a Gemini Live message's one
    /// member, e.g. `toolResponse`) have arrived on this connection in total.
    WaitFor {
        /// The event kind to count.
        kind: String,
        /// How many of them must have arrived, counted from the connection's start.
        count: usize,
    },
    /// Pause for this long.
    Sleep(Duration),
    /// Close the connection.
    Close,
    /// Close the connection with this close code and reason (as OpenAI does on a policy error).
    CloseWith(u16, String),
    /// Drop the connection without a close frame, as a network failure does.
    Abort,
}

/// The websocket frame type a fake model sends its JSON events in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Frames {
    /// Text frames, as OpenAI's Realtime servers send them.
    #[default]
    Text,
    /// Binary frames of UTF-8 JSON, as Google's Live servers send every message.
    Binary,
}

/// A fake model's script.
#[derive(Clone, Debug, Default)]
pub struct Script {
    /// The steps, run in order on every connection.
    pub steps: Vec<Step>,
    /// How long one [`Step::WaitFor`] may wait before the script gives up.
    pub wait_limit: Duration,
    /// The frame type of [`Step::Send`] events.
    pub frames: Frames,
}

impl Script {
    /// An empty script whose waits give up after 20 s. (`Script::default()` has a zero wait
    /// limit: a wait not met already gives up at once.)
    pub fn new() -> Script {
        Script {
            steps: Vec::new(),
            wait_limit: Duration::from_secs(20),
            frames: Frames::Text,
        }
    }

    /// An empty script for a fake Gemini Live model: its events go in binary frames, as
    /// Google's servers send them.
    pub fn live() -> Script {
        Script {
            frames: Frames::Binary,
            ..Script::new()
        }
    }

    /// Adds a step that sends `event`.
    pub fn send(mut self, event: Value) -> Script {
        self.steps.push(Step::Send(event));
        self
    }

    /// Adds a step per event, sending them in order.
    pub fn send_all(mut self, events: impl IntoIterator<Item = Value>) -> Script {
        self.steps.extend(events.into_iter().map(Step::Send));
        self
    }

    /// Adds a step that sends `text` as a text frame, JSON or not.
    pub fn send_text(mut self, text: impl Into<String>) -> Script {
        self.steps.push(Step::SendText(text.into()));
        self
    }

    /// Adds a step that sends a binary frame.
    pub fn send_binary(mut self, bytes: Vec<u8>) -> Script {
        self.steps.push(Step::SendBinary(bytes));
        self
    }

    /// Adds a step that waits until `count` events of `kind` have arrived in total; the script
    /// stops there if they do not come within [`Script::wait_limit`].
    pub fn wait_for(mut self, kind: impl Into<String>, count: usize) -> Script {
        self.steps.push(Step::WaitFor {
            kind: kind.into(),
            count,
        });
        self
    }

    /// Adds a pause of `d`.
    pub fn sleep(mut self, d: Duration) -> Script {
        self.steps.push(Step::Sleep(d));
        self
    }

    /// Adds a step that closes the connection; later steps do not run.
    pub fn close(mut self) -> Script {
        self.steps.push(Step::Close);
        self
    }

    /// Adds a step that drops the connection without a close frame; later steps do not run.
    pub fn abort(mut self) -> Script {
        self.steps.push(Step::Abort);
        self
    }

    /// Adds a step that closes the connection with `code` and `reason`; later steps do not run.
    pub fn close_with(mut self, code: u16, reason: &str) -> Script {
        self.steps.push(Step::CloseWith(code, reason.to_owned()));
        self
    }
}

/// What one connection to the fake model saw.
#[derive(Debug, Default)]
pub struct Connection {
    received: Mutex<Vec<String>>,
    binary: Mutex<Vec<Vec<u8>>>,
    authorization: Mutex<Option<String>>,
    google_api_key: Mutex<Option<String>>,
    path: Mutex<String>,
    changed: Notify,
    closed: Mutex<bool>,
    script_finished: Mutex<bool>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What kind of message a text frame is: its `type` (OpenAI Realtime events), or, for a
/// message without one that has a single member, that member's name (Gemini Live messages are
/// `{"setup": ...}`, `{"toolResponse": ...}`, `{"clientContent": ...}`).
fn type_of(text: &str) -> Option<String> {
    kind_of(&serde_json::from_str::<Value>(text).ok()?).map(str::to_owned)
}

fn kind_of(event: &Value) -> Option<&str> {
    let members = event.as_object()?;
    match members.get("type") {
        Some(kind) => kind.as_str(),
        None if members.len() == 1 => members.keys().next().map(String::as_str),
        None => None,
    }
}

impl Connection {
    /// Every text frame received, in order.
    pub fn texts(&self) -> Vec<String> {
        lock(&self.received).clone()
    }

    /// Every text frame received that is JSON, parsed, in order.
    pub fn events(&self) -> Vec<Value> {
        lock(&self.received)
            .iter()
            .filter_map(|t| serde_json::from_str(t).ok())
            .collect()
    }

    /// Events of one kind (an OpenAI `type`, or a Gemini Live message's one member), in order.
    pub fn events_of(&self, kind: &str) -> Vec<Value> {
        self.events()
            .into_iter()
            .filter(|e| kind_of(e) == Some(kind))
            .collect()
    }

    /// How many text frames of `kind` have arrived (see [`Connection::events_of`]).
    pub fn count(&self, kind: &str) -> usize {
        lock(&self.received)
            .iter()
            .filter(|t| type_of(t).as_deref() == Some(kind))
            .count()
    }

    /// Every binary frame received, in order.
    pub fn binary(&self) -> Vec<Vec<u8>> {
        lock(&self.binary).clone()
    }

    /// The `Authorization` header of the handshake.
    pub fn authorization(&self) -> Option<String> {
        lock(&self.authorization).clone()
    }

    /// The `x-goog-api-key` header of the handshake (where Gemini Live takes its key).
    pub fn google_api_key(&self) -> Option<String> {
        lock(&self.google_api_key).clone()
    }

    /// The request path and query of the handshake.
    pub fn path(&self) -> String {
        lock(&self.path).clone()
    }

    /// Whether the connection has closed (or its handshake failed).
    pub fn is_closed(&self) -> bool {
        *lock(&self.closed)
    }

    /// Whether the script has run to its end, or stopped early (a wait ran out, a send failed).
    pub fn script_finished(&self) -> bool {
        *lock(&self.script_finished)
    }

    /// Waits until `done(texts)` holds, or `limit` passes; returns whether it held.
    pub async fn wait_until(&self, limit: Duration, done: impl Fn(&[String]) -> bool) -> bool {
        let until = tokio::time::Instant::now() + limit;
        loop {
            let notified = self.changed.notified();
            if done(&lock(&self.received)) {
                return true;
            }
            if tokio::time::timeout_at(until, notified).await.is_err() {
                return done(&lock(&self.received));
            }
        }
    }

    /// Waits until `count` events of `kind` arrived.
    pub async fn wait_for(&self, kind: &str, count: usize, limit: Duration) -> bool {
        self.wait_until(limit, |texts| {
            texts
                .iter()
                .filter(|t| type_of(t).as_deref() == Some(kind))
                .count()
                >= count
        })
        .await
    }

    /// Waits until the connection closed.
    pub async fn wait_closed(&self, limit: Duration) -> bool {
        let until = tokio::time::Instant::now() + limit;
        loop {
            let notified = self.changed.notified();
            if self.is_closed() {
                return true;
            }
            if tokio::time::timeout_at(until, notified).await.is_err() {
                return self.is_closed();
            }
        }
    }
}

/// A scripted fake realtime model on loopback.
pub struct FakeModel {
    addr: SocketAddr,
    connections: Arc<Mutex<Vec<Arc<Connection>>>>,
    accepted: Arc<Notify>,
    task: tokio::task::JoinHandle<()>,
}

impl fmt::Debug for FakeModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FakeModel")
            .field("addr", &self.addr)
            .finish()
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeModel {
    /// Starts the server on `127.0.0.1` with a free port; every connection runs `script`.
    pub async fn start(script: Script) -> io::Result<FakeModel> {
        FakeModel::start_each(vec![script]).await
    }

    /// Starts the server with one script per connection: the first connection runs the first
    /// script, and so on; connections past the last run the last one.
    pub async fn start_each(scripts: Vec<Script>) -> io::Result<FakeModel> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let connections: Arc<Mutex<Vec<Arc<Connection>>>> = Arc::default();
        let accepted = Arc::new(Notify::new());
        let scripts: Vec<Arc<Script>> = scripts.into_iter().map(Arc::new).collect();
        let task = {
            let connections = connections.clone();
            let accepted = accepted.clone();
            tokio::spawn(async move {
                while let Ok((stream, _)) = listener.accept().await {
                    let conn = Arc::new(Connection::default());
                    let index = {
                        let mut all = lock(&connections);
                        all.push(conn.clone());
                        all.len() - 1
                    };
                    accepted.notify_waiters();
                    let script = scripts
                        .get(index)
                        .or(scripts.last())
                        .cloned()
                        .unwrap_or_default();
                    tokio::spawn(serve(stream, conn, script));
                }
            })
        };
        Ok(FakeModel {
            addr,
            connections,
            accepted,
            task,
        })
    }

    /// The server's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL to give a relay as its upstream.
    pub fn url(&self) -> String {
        format!("ws://{}/v1/realtime?model=fake", self.addr)
    }

    /// How many connections the server has accepted so far.
    pub fn connection_count(&self) -> usize {
        lock(&self.connections).len()
    }

    /// The `index`-th connection (0-based), once it has arrived.
    pub async fn connection(&self, index: usize, limit: Duration) -> Option<Arc<Connection>> {
        let until = tokio::time::Instant::now() + limit;
        loop {
            let notified = self.accepted.notified();
            if let Some(c) = lock(&self.connections).get(index) {
                return Some(c.clone());
            }
            if tokio::time::timeout_at(until, notified).await.is_err() {
                return lock(&self.connections).get(index).cloned();
            }
        }
    }
}

// The handshake callback's error type is tungstenite's contract.
#[allow(clippy::result_large_err)]
async fn serve(stream: TcpStream, conn: Arc<Connection>, script: Arc<Script>) {
    let _ = stream.set_nodelay(true);
    let seen = conn.clone();
    let ws = tokio_tungstenite::accept_hdr_async(stream, move |req: &Request, resp: Response| {
        let header = |name: &str| {
            req.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        *lock(&seen.authorization) = header("authorization");
        *lock(&seen.google_api_key) = header("x-goog-api-key");
        *lock(&seen.path) = req
            .uri()
            .path_and_query()
            .map(|p| p.to_string())
            .unwrap_or_default();
        Ok(resp)
    })
    .await;
    let Ok(ws) = ws else {
        *lock(&conn.closed) = true;
        conn.changed.notify_waiters();
        return;
    };
    let (mut tx, mut rx) = ws.split();
    let reader = {
        let conn = conn.clone();
        tokio::spawn(async move {
            while let Some(Ok(msg)) = rx.next().await {
                match msg {
                    Message::Text(t) => lock(&conn.received).push(t.as_str().to_owned()),
                    Message::Binary(b) => lock(&conn.binary).push(b.to_vec()),
                    Message::Close(_) => break,
                    _ => continue,
                }
                conn.changed.notify_waiters();
            }
            *lock(&conn.closed) = true;
            conn.changed.notify_waiters();
        })
    };
    for step in &script.steps {
        let sent = match step {
            Step::Send(v) => match script.frames {
                Frames::Text => tx.feed(Message::text(v.to_string())).await,
                Frames::Binary => tx.feed(Message::binary(v.to_string().into_bytes())).await,
            },
            Step::SendText(t) => tx.feed(Message::text(t.clone())).await,
            Step::SendBinary(b) => tx.feed(Message::binary(b.clone())).await,
            Step::WaitFor { kind, count } => {
                if tx.flush().await.is_err() {
                    break;
                }
                if !conn.wait_for(kind, *count, script.wait_limit).await {
                    break;
                }
                Ok(())
            }
            Step::Sleep(d) => {
                if tx.flush().await.is_err() {
                    break;
                }
                tokio::time::sleep(*d).await;
                Ok(())
            }
            Step::Close => {
                let _ = tx.close().await;
                break;
            }
            Step::Abort => {
                reader.abort();
                let _ = reader.await;
                drop(tx);
                *lock(&conn.closed) = true;
                *lock(&conn.script_finished) = true;
                conn.changed.notify_waiters();
                return;
            }
            Step::CloseWith(code, reason) => {
                let frame = tokio_tungstenite::tungstenite::protocol::CloseFrame {
                    code: (*code).into(),
                    reason: reason.as_str().into(),
                };
                let _ = tx.send(Message::Close(Some(frame))).await;
                let _ = tx.close().await;
                break;
            }
        };
        if sent.is_err() {
            break;
        }
    }
    let _ = tx.flush().await;
    *lock(&conn.script_finished) = true;
    conn.changed.notify_waiters();
    // Keep the connection open (and recording) until the other side closes it.
    let _ = reader.await;
    drop(tx);
}

/// A test browser: a websocket client with JSON helpers.
#[derive(Debug)]
pub struct TestBrowser {
    ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
    binary_frames: usize,
}

impl TestBrowser {
    /// Connects to `ws://ADDR/` (plus `path_and_query`, e.g. `?naming=tool`).
    pub async fn connect(url: &str) -> Result<TestBrowser, tokio_tungstenite::tungstenite::Error> {
        let (ws, _) = tokio_tungstenite::connect_async(url).await?;
        Ok(TestBrowser {
            ws,
            binary_frames: 0,
        })
    }

    /// Connects to `url` with extra handshake headers (`Authorization`, `Origin`, ...).
    pub async fn connect_with(
        url: &str,
        headers: &[(&str, &str)],
    ) -> Result<TestBrowser, tokio_tungstenite::tungstenite::Error> {
        use tokio_tungstenite::tungstenite::client::IntoClientRequest;
        use tokio_tungstenite::tungstenite::http::{HeaderName, HeaderValue};
        let mut request = url.into_client_request()?;
        for (name, value) in headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|e| tokio_tungstenite::tungstenite::Error::HttpFormat(e.into()))?;
            let value = HeaderValue::from_str(value)
                .map_err(|e| tokio_tungstenite::tungstenite::Error::HttpFormat(e.into()))?;
            request.headers_mut().insert(name, value);
        }
        let (ws, _) = tokio_tungstenite::connect_async(request).await?;
        Ok(TestBrowser {
            ws,
            binary_frames: 0,
        })
    }

    /// Sends `event` as a text frame; false when the connection is gone.
    pub async fn send(&mut self, event: &Value) -> bool {
        self.ws.send(Message::text(event.to_string())).await.is_ok()
    }

    /// Sends `text` as a text frame, JSON or not; false when the connection is gone.
    pub async fn send_text(&mut self, text: &str) -> bool {
        self.ws.send(Message::text(text.to_owned())).await.is_ok()
    }

    /// Sends a binary frame; false when the connection is gone.
    pub async fn send_binary(&mut self, bytes: Vec<u8>) -> bool {
        self.ws.send(Message::binary(bytes)).await.is_ok()
    }

    /// Queues a frame without flushing (for sending many quickly); see [`TestBrowser::flush`].
    pub async fn feed_text(&mut self, text: String) -> bool {
        self.ws.feed(Message::text(text)).await.is_ok()
    }

    /// Sends the frames queued with [`TestBrowser::feed_text`]; false when the connection is gone.
    pub async fn flush(&mut self) -> bool {
        self.ws.flush().await.is_ok()
    }

    /// The next text frame, or `None` on close, error or after `limit`.
    pub async fn next_text(&mut self, limit: Duration) -> Option<String> {
        let until = tokio::time::Instant::now() + limit;
        loop {
            match tokio::time::timeout_at(until, self.ws.next()).await {
                Ok(Some(Ok(Message::Text(t)))) => return Some(t.as_str().to_owned()),
                Ok(Some(Ok(Message::Close(_)))) | Ok(Some(Err(_))) | Ok(None) | Err(_) => {
                    return None
                }
                Ok(Some(Ok(Message::Binary(_)))) => self.binary_frames += 1,
                Ok(Some(Ok(_))) => continue,
            }
        }
    }

    /// Reads until the relay closes the connection: the close frame's code and reason, or
    /// `None` when the connection ended without one (or not within `limit`).
    pub async fn next_close(&mut self, limit: Duration) -> Option<(u16, String)> {
        let until = tokio::time::Instant::now() + limit;
        loop {
            match tokio::time::timeout_at(until, self.ws.next()).await {
                Ok(Some(Ok(Message::Close(Some(frame))))) => {
                    return Some((frame.code.into(), frame.reason.as_str().to_owned()))
                }
                Ok(Some(Ok(Message::Close(None)))) | Ok(Some(Err(_))) | Ok(None) | Err(_) => {
                    return None
                }
                Ok(Some(Ok(_))) => continue,
            }
        }
    }

    /// Binary frames received (and skipped) so far: the relay sends the page text frames only.
    pub fn binary_frames(&self) -> usize {
        self.binary_frames
    }

    /// The next JSON event (frames that are not JSON become JSON strings).
    pub async fn next_event(&mut self, limit: Duration) -> Option<Value> {
        let text = self.next_text(limit).await?;
        Some(serde_json::from_str(&text).unwrap_or(Value::String(text)))
    }

    /// Reads events until one satisfies `pred`; returns it with everything read before it.
    pub async fn next_matching(
        &mut self,
        limit: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> (Option<Value>, Vec<Value>) {
        let until = tokio::time::Instant::now() + limit;
        let mut skipped = Vec::new();
        loop {
            let left = until.saturating_duration_since(tokio::time::Instant::now());
            match self.next_event(left).await {
                Some(e) if pred(&e) => return (Some(e), skipped),
                Some(e) => skipped.push(e),
                None => return (None, skipped),
            }
        }
    }

    /// Closes the connection with a close handshake, and waits (up to 5 s) for the relay's
    /// answer: a socket closed with unread data in it is reset, and a reset can discard the
    /// close frame before the relay reads it (then the page looks dropped, not gone).
    pub async fn close(mut self) {
        let _ = self.ws.close(None).await;
        let _ = tokio::time::timeout(Duration::from_secs(5), async {
            while let Some(Ok(_)) = self.ws.next().await {}
        })
        .await;
    }

    /// Drops the connection without a close handshake (a crashed tab).
    pub fn abort(self) {
        drop(self.ws);
    }
}

/// A real `redis-server` for tests (Debian's package; `scripts/setup` installs it): on a free
/// loopback port, in a temporary folder, saving nothing, killed when dropped. Without the
/// program a test that starts one fails, saying what to install: tests of shared state must
/// not pass by skipping.
#[derive(Debug)]
pub struct RedisServer {
    child: Option<std::process::Child>,
    port: u16,
    dir: std::path::PathBuf,
}

impl RedisServer {
    /// Starts one; `name` tells the temporary folders of concurrent tests apart.
    pub fn start(name: &str) -> RedisServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = std::env::temp_dir().join(format!("toolc-{name}-{}", std::process::id()));
        let mut server = RedisServer {
            child: None,
            port,
            dir,
        };
        server.restart();
        server
    }

    /// Starts it (again, on the same port).
    pub fn restart(&mut self) {
        let ok = std::process::Command::new("redis-server")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            ok,
            "redis-server is not installed: these tests need a real Redis (Debian's package \
             `redis-server`; scripts/setup installs it, as root: apt-get install redis-server)"
        );
        let _ = std::fs::remove_dir_all(&self.dir);
        std::fs::create_dir_all(&self.dir).unwrap();
        let child = std::process::Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string()])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .arg("--dir")
            .arg(&self.dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("redis-server starts");
        self.child = Some(child);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !self.answers_ping() {
            assert!(
                std::time::Instant::now() < deadline,
                "redis-server did not answer PING"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn answers_ping(&self) -> bool {
        use std::io::{Read, Write};
        let Ok(mut socket) = std::net::TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = socket.set_read_timeout(Some(Duration::from_secs(1)));
        let mut answer = [0u8; 7];
        socket.write_all(b"PING\r\n").is_ok()
            && socket.read_exact(&mut answer).is_ok()
            && &answer == b"+PONG\r\n"
    }

    /// `redis://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Sends the process a signal (`STOP` pauses it: a hung Redis; `CONT` resumes it).
    pub fn signal(&self, signal: &str) {
        let pid = self.child.as_ref().unwrap().id().to_string();
        let sent = std::process::Command::new("kill")
            .args([&format!("-{signal}"), &pid])
            .status()
            .unwrap();
        assert!(sent.success());
    }

    /// Kills it (a Redis that went down); [`RedisServer::restart`] brings it back.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
