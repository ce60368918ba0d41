//! Load: concurrent realtime sessions through one relay process, audio at real rates and
//! periodic tool calls, with rate limits counted in memory or in Redis (issue 47).
//!
//! The relay runs in a child process (this binary again, `--serve-relay`) on a Tokio runtime of
//! ONE worker thread: one core's worth. This process is the load: a fake OpenAI Realtime model
//! server and N browsers, on a runtime of its own. Each session, each way, sends a 20 ms frame
//! of 24 kHz pcm16 audio (960 bytes, 1,280 base64 characters) every 20 ms (50 frames/s):
//! `input_audio_buffer.append` up, `response.output_audio.delta` down; every 2 s the model calls
//! a server tool with a `rate_limit` (`10000/min per principal`, one principal per session),
//! which the relay checks (in memory, or in a redis-server this bench starts), runs and answers
//! (`conversation.item.create` + `response.create`).
//!
//! Every frame carries its send time; the receiver records the one-way latency. "Added p99" is
//! the p99 one-way latency through the relay at N sessions minus the p99 through a bare
//! tokio-tungstenite forwarder (also one worker, also a child process) with one session: what
//! the relay and its load add over an idle hop. Memory per session: the relay process's RSS
//! with N sessions running minus its RSS before the first, over N.
//!
//! `cargo bench -p toolc-runtime --features testing,redis --bench relay_load -- --bench`
//! (`--sessions 50,100,200` to choose the steps; without `--bench`, a 2-second smoke run).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::Message;
use toolc_runtime::engine::RedisLimiter;
use toolc_runtime::realtime::script;
use toolc_runtime::relay::{Relay, RelayConfig, StaticTokens};
use toolc_runtime::{definitions_from_str, executor_fn, Registry};

const MANIFEST: &str = r#"
version: 1
tools:
  - name: lookup
    description: Look an order up.
    location: server
    annotations: { read_only: true }
    rate_limit: 10000/min per principal
    parameters:
      type: object
      properties: { order: { type: string } }
"#;

/// 20 ms of 24 kHz mono pcm16: 960 bytes, base64.
const FRAME_B64_LEN: usize = 1280;
const FRAME: Duration = Duration::from_millis(20);
const CALL_EVERY: u64 = 100; // frames: one tool call per 2 s per session

fn token(k: usize) -> String {
    format!("bench-token-{k:06}-0123456789")
}

/// The time every stamp counts from (this process's start).
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn stamp() -> u64 {
    epoch().elapsed().as_micros() as u64
}

/// The stamp in `"event_id":"t<micros>"` (or a call id `"c<micros>"`), without parsing the
/// whole event.
fn stamp_of(text: &str, marker: &str) -> Option<u64> {
    let at = text.find(marker)? + marker.len();
    let digits: &str = &text[at..];
    let end = digits.find(|c: char| !c.is_ascii_digit())?;
    digits[..end].parse().ok()
}

#[derive(Default)]
struct Latencies {
    down: Vec<u32>,
    up: Vec<u32>,
    calls: Vec<u32>,
}

type Shared = Arc<Mutex<Latencies>>;

fn record(into: &Shared, which: fn(&mut Latencies) -> &mut Vec<u32>, sent: u64, recording: bool) {
    if !recording {
        return;
    }
    let micros = stamp().saturating_sub(sent).min(u32::MAX as u64) as u32;
    which(&mut into.lock().unwrap()).push(micros);
}

/// The fake model: per connection, a delta every 20 ms, a tool call every 2 s; records the
/// latency of the browser's frames and of the tool results.
async fn model_server(lat: Shared, recording: Arc<std::sync::atomic::AtomicBool>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let audio = "A".repeat(FRAME_B64_LEN);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let _ = stream.set_nodelay(true);
            let (lat, recording, audio) = (lat.clone(), recording.clone(), audio.clone());
            tokio::spawn(async move {
                let Ok(ws) = tokio_tungstenite::accept_async(stream).await else {
                    return;
                };
                let (mut tx, mut rx) = ws.split();
                let lat_in = lat.clone();
                let rec_in = recording.clone();
                let reader = tokio::spawn(async move {
                    while let Some(Ok(message)) = rx.next().await {
                        let Message::Text(text) = message else {
                            continue;
                        };
                        let on = rec_in.load(std::sync::atomic::Ordering::Relaxed);
                        if text.contains("input_audio_buffer.append") {
                            if let Some(sent) = stamp_of(&text, "\"event_id\":\"t") {
                                record(&lat_in, |l| &mut l.up, sent, on);
                            }
                        } else if text.contains("function_call_output") {
                            if let Some(sent) = stamp_of(&text, "\"call_id\":\"c") {
                                record(&lat_in, |l| &mut l.calls, sent, on);
                            }
                        }
                    }
                });
                let mut tick = tokio::time::interval(FRAME);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
                let mut n: u64 = 0;
                loop {
                    tick.tick().await;
                    n += 1;
                    let now = stamp();
                    let sent = if n % CALL_EVERY == 0 {
                        let (call, response) = (format!("c{now}"), format!("r{n}"));
                        let events = script::response_with_calls(
                            &response,
                            &[(&call, "lookup", r#"{"order":"AB-1"}"#)],
                        );
                        let mut ok = true;
                        for event in events {
                            ok &= tx.feed(Message::text(event.to_string())).await.is_ok();
                        }
                        ok && tx.flush().await.is_ok()
                    } else {
                        let delta = format!(
                            r#"{{"type":"response.output_audio.delta","event_id":"t{now}","response_id":"r0","item_id":"i0","output_index":0,"content_index":0,"delta":"{audio}"}}"#
                        );
                        tx.send(Message::text(delta)).await.is_ok()
                    };
                    if !sent || reader.is_finished() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// One browser: an append every 20 ms; records the latency of the model's deltas. Ends when
/// `stop` fires.
async fn browser(
    url: String,
    k: usize,
    lat: Shared,
    recording: Arc<std::sync::atomic::AtomicBool>,
    stop: Arc<tokio::sync::Notify>,
) {
    let mut request = url.as_str().into_client_request().unwrap();
    let bearer = format!("Bearer {}", token(k));
    request
        .headers_mut()
        .insert("authorization", HeaderValue::from_str(&bearer).unwrap());
    let (ws, _) = tokio_tungstenite::connect_async(request)
        .await
        .expect("the relay accepts the session");
    let (mut tx, mut rx) = ws.split();
    let reader = tokio::spawn(async move {
        while let Some(Ok(message)) = rx.next().await {
            let Message::Text(text) = message else {
                continue;
            };
            if text.contains("response.output_audio.delta") {
                if let Some(sent) = stamp_of(&text, "\"event_id\":\"t") {
                    let on = recording.load(std::sync::atomic::Ordering::Relaxed);
                    record(&lat, |l| &mut l.down, sent, on);
                }
            }
        }
    });
    let audio = "A".repeat(FRAME_B64_LEN);
    let mut tick = tokio::time::interval(FRAME);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let stopped = stop.notified();
    tokio::pin!(stopped);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = &mut stopped => break,
        }
        let append = format!(
            r#"{{"type":"input_audio_buffer.append","event_id":"t{}","audio":"{audio}"}}"#,
            stamp()
        );
        if tx.send(Message::text(append)).await.is_err() {
            break;
        }
    }
    let _ = tx.close().await;
    reader.abort();
}

fn percentile(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i] as f64 / 1000.0
}

/// The relay process's resident memory, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Starts this binary as the relay (`mode`: `memory`, `redis URL`, `bare`), for `upstream`;
/// returns it and its `ws://` URL.
fn spawn_relay(mode: &[&str], upstream: &str) -> (Child, String) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .arg("--serve-relay")
        .arg(upstream)
        .args(mode)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    (child, line.trim().to_owned())
}

/// The child: a relay (or a bare forwarder) on one worker thread, until its stdin closes.
fn serve_relay(args: &[String]) {
    let upstream = args[0].clone();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let addr = match args[1].as_str() {
            "bare" => bare_proxy(upstream).await,
            mode => {
                let defs = definitions_from_str("bench.tools.yaml", MANIFEST).unwrap();
                let registry = Arc::new(
                    Registry::builder()
                        .definitions(defs)
                        .executor(
                            "lookup",
                            executor_fn(|_| async { Ok(json!({"status": "shipped"})) }),
                        )
                        .build()
                        .unwrap(),
                );
                let mut config = RelayConfig::new(&registry);
                config.upstream = upstream;
                let tokens: String = (0..4096)
                    .map(|k| format!("{} user{k}\n", token(k)))
                    .collect();
                config.authorizer = Some(Arc::new(StaticTokens::parse(&tokens).unwrap()));
                let mut session = (*config.session).clone();
                session.filler_delay = None;
                if mode == "redis" {
                    let limiter = RedisLimiter::open(&args[2]).unwrap();
                    session.limiter = Some(Arc::new(limiter));
                }
                config.session = Arc::new(session);
                let relay = Relay::bind("127.0.0.1:0", registry, config).await.unwrap();
                let addr = relay.local_addr().unwrap();
                tokio::spawn(relay.serve());
                addr
            }
        };
        println!("ws://{addr}/");
        std::io::stdout().flush().unwrap();
        // Until the parent closes stdin.
        tokio::task::spawn_blocking(|| {
            let mut sink = String::new();
            let _ = std::io::stdin().read_line(&mut sink);
        })
        .await
        .unwrap();
    });
}

/// A forwarder with nothing else: the hop every relay pays.
async fn bare_proxy(upstream: String) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let upstream = upstream.clone();
            tokio::spawn(async move {
                let _ = stream.set_nodelay(true);
                let Ok(browser) = tokio_tungstenite::accept_async(stream).await else {
                    return;
                };
                let Ok((model, _)) = tokio_tungstenite::connect_async(upstream).await else {
                    return;
                };
                let (b_tx, b_rx) = browser.split();
                let (m_tx, m_rx) = model.split();
                let _ = tokio::join!(b_rx.forward(m_tx), m_rx.forward(b_tx));
            });
        }
    });
    addr
}

struct Run {
    down_p50: f64,
    down_p99: f64,
    up_p99: f64,
    call_p99: f64,
    frames: usize,
    calls: usize,
    kib_per_session: f64,
    relay_cpu: f64,
}

/// N sessions through a fresh relay child of `mode` for `measure`, after `warm` of warm-up.
async fn run(mode: &[&str], n: usize, warm: Duration, measure: Duration) -> Run {
    let lat: Shared = Arc::default();
    let recording = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let model = model_server(lat.clone(), recording.clone()).await;
    let upstream = format!("ws://{model}/v1/realtime");
    let (mut child, url) = spawn_relay(mode, &upstream);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = rss_kib(child.id());
    let stop = Arc::new(tokio::sync::Notify::new());
    let mut browsers = Vec::new();
    for k in 0..n {
        browsers.push(tokio::spawn(browser(
            url.clone(),
            k,
            lat.clone(),
            recording.clone(),
            stop.clone(),
        )));
        // Spread the sessions' frames over the 20 ms period, and their connections over time.
        tokio::time::sleep(Duration::from_micros(20_000 / n.max(1) as u64 + 500)).await;
    }
    tokio::time::sleep(warm).await;
    let cpu_before = cpu_ticks(child.id());
    recording.store(true, std::sync::atomic::Ordering::Relaxed);
    tokio::time::sleep(measure).await;
    recording.store(false, std::sync::atomic::Ordering::Relaxed);
    let cpu = (cpu_ticks(child.id()) - cpu_before) as f64 / 100.0 / measure.as_secs_f64();
    let after = rss_kib(child.id());
    stop.notify_waiters();
    for b in browsers {
        let _ = b.await;
    }
    drop(child.stdin.take());
    let _ = child.kill();
    let _ = child.wait();
    let mut l = std::mem::take(&mut *lat.lock().unwrap());
    l.down.sort_unstable();
    l.up.sort_unstable();
    l.calls.sort_unstable();
    Run {
        down_p50: percentile(&l.down, 0.5),
        down_p99: percentile(&l.down, 0.99),
        up_p99: percentile(&l.up, 0.99),
        call_p99: percentile(&l.calls, 0.99),
        frames: l.down.len() + l.up.len(),
        calls: l.calls.len(),
        kib_per_session: after.saturating_sub(before) as f64 / n.max(1) as f64,
        relay_cpu: cpu,
    }
}

/// The child's user + system CPU time, in clock ticks (1/100 s).
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let field = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // utime and stime are fields 14 and 15 of /proc/PID/stat; 12 and 13 after the `)`.
    field(11) + field(12)
}

/// A redis-server of the bench's own, on a free loopback port, nothing saved.
fn start_redis() -> (Child, String, std::path::PathBuf) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = std::env::temp_dir().join(format!("toolc-bench-redis-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let child = Command::new("redis-server")
        .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
        .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
        .arg("--dir")
        .arg(&dir)
        .stdout(Stdio::null())
        .spawn()
        .expect("redis-server (Debian's package) runs");
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "redis-server did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    (child, format!("redis://127.0.0.1:{port}/"), dir)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--serve-relay") {
        return serve_relay(&args[at + 1..]);
    }
    let _ = epoch();
    let smoke = !args.iter().any(|a| a == "--bench");
    let steps: Vec<usize> = args
        .windows(2)
        .find(|w| w[0] == "--sessions")
        .map(|w| w[1].split(',').map(|s| s.parse().unwrap()).collect())
        .unwrap_or_else(|| {
            if smoke {
                vec![4]
            } else {
                vec![25, 50, 100, 150, 200, 300]
            }
        });
    let (warm, measure) = if smoke {
        (Duration::from_millis(500), Duration::from_secs(2))
    } else {
        (Duration::from_secs(3), Duration::from_secs(10))
    };
    let (mut redis, redis_url, redis_dir) = start_redis();
    // The load: one worker thread (the other core is the relay's).
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let idle = run(&["bare"], 1, warm, measure).await;
        println!(
            "relay_load: {} frames/s each way per session ({} B base64 audio), a tool call per {} s per session; relay: one worker thread in its own process",
            1000 / FRAME.as_millis(),
            FRAME_B64_LEN,
            CALL_EVERY * FRAME.as_millis() as u64 / 1000
        );
        println!(
            "  bare forwarder, 1 session: one-way p50 {:.2} ms, p99 {:.2} ms (the idle hop)",
            idle.down_p50, idle.down_p99
        );
        println!("  limits  sessions  down p50/p99 ms  up p99 ms  tool call p99 ms  added p99 ms  relay CPU  KiB/session  frames  calls");
        let mut best: HashMap<&str, usize> = HashMap::new();
        let mut over: HashMap<&str, bool> = HashMap::new();
        for &n in &steps {
            for (label, mode) in [("memory", vec!["memory"]), ("redis", vec!["redis", redis_url.as_str()])] {
                let r = run(&mode, n, warm, measure).await;
                let added = r.down_p99.max(r.up_p99) - idle.down_p99;
                println!(
                    "  {label:<7} {n:>8}  {:>6.2} / {:<6.2}  {:>9.2}  {:>16.2}  {:>12.2}  {:>8.0}%  {:>11.1}  {:>6}  {:>5}",
                    r.down_p50, r.down_p99, r.up_p99, r.call_p99, added, r.relay_cpu * 100.0,
                    r.kib_per_session, r.frames, r.calls
                );
                if added < 5.0 && !over.contains_key(label) {
                    best.insert(label, n);
                } else {
                    over.insert(label, true);
                }
            }
        }
        for label in ["memory", "redis"] {
            match best.get(label) {
                Some(n) => println!("  {label}: added p99 under 5 ms up to {n} sessions on one relay core"),
                None => println!("  {label}: added p99 over 5 ms at every step"),
            }
        }
    });
    let _ = redis.kill();
    let _ = redis.wait();
    let _ = std::fs::remove_dir_all(redis_dir);
}
