//! An MCP client of the runtime's `McpServer` written as raw JSON-RPC over a byte pipe with
//! stdio's framing (one message per line), so a test sees and sends exactly the protocol's
//! messages.
#![allow(dead_code)]

use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{
    AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf,
};
use toolc_runtime::mcp::McpServer;

const LIMIT: Duration = Duration::from_secs(10);

pub struct Pipe {
    write: WriteHalf<DuplexStream>,
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    /// Messages read while waiting for another (notifications, other answers), in order.
    pub others: Vec<Value>,
}

impl Pipe {
    /// Serves `server` on a new pipe and completes the handshake (`initialize` with protocol
    /// 2025-11-25 and these client capabilities, then `notifications/initialized`); returns
    /// the pipe and the `initialize` answer.
    pub async fn open(server: McpServer, capabilities: Value) -> (Pipe, Value) {
        let (client, end) = tokio::io::duplex(64 * 1024);
        tokio::spawn(server.serve_io(tokio::io::split(end)));
        let (read, write) = tokio::io::split(client);
        let mut pipe = Pipe {
            write,
            lines: BufReader::new(read).lines(),
            others: Vec::new(),
        };
        let init = pipe
            .ask(
                json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": capabilities,
                "clientInfo": {"name": "t", "version": "1"}}}),
            )
            .await;
        pipe.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        (pipe, init)
    }

    /// Sends one message.
    pub async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.write.write_all(line.as_bytes()).await.unwrap();
    }

    /// Sends one line as it is (which need not be JSON).
    pub async fn send_raw(&mut self, line: &str) {
        self.write.write_all(line.as_bytes()).await.unwrap();
        self.write.write_all(b"\n").await.unwrap();
    }

    /// The next message the server sends.
    pub async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(LIMIT, self.lines.next_line())
            .await
            .expect("the server answers in time")
            .unwrap()
            .expect("the server keeps the pipe open");
        serde_json::from_str(&line).unwrap()
    }

    /// Sends a request and waits for the answer with its id (what comes before it is kept in
    /// `others`).
    pub async fn ask(&mut self, request: Value) -> Value {
        let id = request["id"].clone();
        self.send(request).await;
        loop {
            let message = self.next().await;
            if message["id"] == id && message.get("method").is_none() {
                return message;
            }
            self.others.push(message);
        }
    }

    /// `tools/call` of `name` with `arguments`, as request `id`; the answer's `result`.
    pub async fn call(&mut self, id: u64, name: &str, arguments: Value) -> Value {
        let answer = self
            .ask(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                         "params": {"name": name, "arguments": arguments}}))
            .await;
        answer["result"].clone()
    }
}
