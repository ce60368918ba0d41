//! 200 authenticated browsers each send a 64 MiB `session.update` while a victim session makes
//! round trips through the same relay: the relay's peak memory, and the victim's round-trip
//! times, with and without the flood.
//!
//! Half of the attackers send one 64 MiB frame, half send it as 256 KiB fragments (which only
//! the message limit stops). The attack bytes are written from one shared buffer, so the
//! process's peak RSS (`VmHWM`) is the relay's plus a few MiB of test harness.
//! `cargo bench -p toolc-runtime --features relay --bench relay_flood`

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::Message;
use toolc_runtime::relay::{Relay, RelayConfig, StaticTokens};
use toolc_runtime::{definitions_from_str, executor_fn, Registry};

const MANIFEST: &str = r#"
version: 1
tools:
  - name: lookup
    description: A server tool (never called here).
    location: server
"#;

const MESSAGE: usize = 64 << 20;
const FRAGMENT: usize = 256 << 10;

fn token(i: usize) -> String {
    format!("flood-token-{i:08}-0123456789")
}

/// A model that answers each `victim.ping` with a `victim.pong` carrying the same `n`.
async fn model_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let _ = stream.set_nodelay(true);
                let Ok(ws) = tokio_tungstenite::accept_async(stream).await else {
                    return;
                };
                let (mut tx, mut rx) = ws.split();
                while let Some(Ok(msg)) = rx.next().await {
                    if let Message::Text(t) = msg {
                        if t.as_str().contains("victim.ping") {
                            let n: serde_json::Value = serde_json::from_str(t.as_str()).unwrap();
                            let pong = json!({"type": "victim.pong", "n": n["n"]});
                            if tx.send(Message::text(pong.to_string())).await.is_err() {
                                return;
                            }
                        }
                    }
                }
            });
        }
    });
    addr
}

async fn relay(upstream: String, users: usize) -> SocketAddr {
    let defs = definitions_from_str("bench.tools.yaml", MANIFEST).unwrap();
    let registry = Arc::new(
        Registry::builder()
            .definitions(defs)
            .executor("lookup", executor_fn(|_| async { Ok(json!({})) }))
            .build()
            .unwrap(),
    );
    let mut config = RelayConfig::new(&registry);
    config.upstream = upstream;
    let tokens: String = (0..=users)
        .map(|i| format!("{} user{i}\n", token(i)))
        .collect();
    config.authorizer = Some(Arc::new(StaticTokens::parse(&tokens).unwrap()));
    // Default limits: the point is what they do.
    let relay = Relay::bind("127.0.0.1:0", registry, config).await.unwrap();
    let addr = relay.local_addr().unwrap();
    tokio::spawn(relay.serve());
    addr
}

fn request(
    relay: SocketAddr,
    user: usize,
) -> tokio_tungstenite::tungstenite::handshake::client::Request {
    let mut request = format!("ws://{relay}/").into_client_request().unwrap();
    let bearer = format!("Bearer {}", token(user));
    request
        .headers_mut()
        .insert("authorization", HeaderValue::from_str(&bearer).unwrap());
    request
}

/// A masked client frame header (mask key 0, so the payload goes as it is).
fn header(opcode: u8, fin: bool, len: usize) -> Vec<u8> {
    let mut h = vec![if fin { 0x80 } else { 0 } | opcode, 0x80 | 127];
    h.extend_from_slice(&(len as u64).to_be_bytes());
    h.extend_from_slice(&[0, 0, 0, 0]);
    h
}

/// One attacker: the upgrade through tungstenite, then the 64 MiB message as raw frames from
/// the shared `payload`, until the relay closes the connection. Returns the bytes written.
async fn attack(relay: SocketAddr, user: usize, fragmented: bool, payload: Arc<Vec<u8>>) -> usize {
    let stream = TcpStream::connect(relay).await.unwrap();
    let Ok((mut ws, _)) = tokio_tungstenite::client_async(request(relay, user), stream).await
    else {
        return 0;
    };
    let tcp = ws.get_mut();
    let mut sent = 0;
    let head = br#"{"type":"session.update","session":{"instructions":""#;
    let frames = if fragmented { MESSAGE / FRAGMENT } else { 1 };
    let frame_len = MESSAGE / frames;
    for f in 0..frames {
        let opcode = if f == 0 { 0x1 } else { 0x0 };
        if tcp
            .write_all(&header(opcode, f + 1 == frames, frame_len))
            .await
            .is_err()
        {
            return sent;
        }
        let mut left = frame_len;
        if f == 0 {
            if tcp.write_all(head).await.is_err() {
                return sent;
            }
            left -= head.len();
        }
        while left > 0 {
            let n = left.min(payload.len());
            if tcp.write_all(&payload[..n]).await.is_err() {
                return sent;
            }
            sent += n;
            left -= n;
        }
    }
    sent
}

/// The victim's round trips (browser → relay → model → relay → browser), one every 5 ms.
async fn victim(relay: SocketAddr, user: usize, rounds: usize) -> Vec<Duration> {
    let (ws, _) = tokio_tungstenite::connect_async(request(relay, user))
        .await
        .unwrap();
    let (mut tx, mut rx) = ws.split();
    let mut times = Vec::with_capacity(rounds);
    for n in 0..rounds {
        let start = Instant::now();
        let ping = json!({"type": "victim.ping", "n": n}).to_string();
        tx.send(Message::text(ping)).await.unwrap();
        loop {
            match rx.next().await {
                Some(Ok(Message::Text(t))) if t.as_str().contains("victim.pong") => break,
                Some(Ok(_)) => {}
                other => panic!("the victim's session ended: {other:?}"),
            }
        }
        times.push(start.elapsed());
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    times
}

fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)]
}

fn main() {
    let smoke = !std::env::args().any(|a| a == "--bench");
    let (attackers, rounds) = if smoke { (4, 20) } else { (200, 400) };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // The attackers run on threads of their own, so that their tasks do not queue in front of
    // the relay's and the victim's (the cores are still shared).
    let attackers_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let attackers_handle = attackers_rt.handle().clone();
    rt.block_on(async move {
        let model = model_server().await;
        let relay = relay(format!("ws://{model}/v1/realtime"), attackers).await;
        let quiet = {
            let mut t = victim(relay, attackers, rounds).await;
            t.sort();
            t
        };
        let rss_before = peak_rss_mib();
        let payload = Arc::new(vec![b'x'; 1 << 20]);
        let started = Instant::now();
        let flood: Vec<_> = (0..attackers)
            .map(|i| attackers_handle.spawn(attack(relay, i, i % 2 == 1, payload.clone())))
            .collect();
        let flood_done = tokio::spawn(async move {
            let mut written = 0;
            for a in flood {
                written += a.await.unwrap();
            }
            (written, started.elapsed())
        });
        let mut loud = victim(relay, attackers, rounds).await;
        let victim_time = started.elapsed();
        let (written, flood_time) = flood_done.await.unwrap();
        loud.sort();
        println!(
            "relay_flood: {attackers} sessions at once, each sending a 64 MiB session.update (half as one frame, half as 256 KiB fragments)"
        );
        println!(
            "  every attacker refused within {:.0} ms; {:.2} MiB written per attacker before the relay closed it",
            flood_time.as_secs_f64() * 1e3,
            written as f64 / 1048576.0 / attackers as f64,
        );
        println!(
            "  peak RSS: {rss_before:.0} MiB before the flood, {:.0} MiB after (target < 300 MB)",
            peak_rss_mib()
        );
        println!(
            "  victim: {rounds} round trips over {:.0} ms from the flood's start",
            victim_time.as_secs_f64() * 1e3
        );
        for (label, t) in [("quiet", &quiet), ("during the flood", &loud)] {
            println!(
                "  victim round trip, {label}: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms (target p99 < 20 ms)",
                percentile(t, 0.5).as_secs_f64() * 1e3,
                percentile(t, 0.99).as_secs_f64() * 1e3,
                t[t.len() - 1].as_secs_f64() * 1e3,
            );
        }
    });
}
