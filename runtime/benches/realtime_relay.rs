//! Relay pass-through of events that are not about tools, against a bare tokio-tungstenite
//! forwarding loop, in the same run over the same loopback sockets and the same model server.
//!
//! Each measurement: a browser connects, the model server sends N events of ~300 bytes to the
//! browser while the browser sends N events to the model; the time until both sides have all of
//! them. Runs alternate between the two proxies; the median of several runs is reported. The
//! relay runs as deployed: bearer-token authentication and an Origin allow-list at the
//! handshake, every browser event read strictly before it is forwarded.
//! `cargo bench -p toolc-runtime --features relay --bench realtime_relay` (OpenAI Realtime
//! events), `... --bench realtime_relay -- --bench --provider gemini-live` (Gemini Live messages:
//! model audio in `serverContent`, browser audio in `realtimeInput`), `--provider gpt-live`
//! (GPT-Live: `session.output_audio.delta` and `session.input_audio.append`).

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::Message;
use toolc_runtime::realtime::RealtimeProvider;
use toolc_runtime::relay::{Relay, RelayConfig, StaticTokens};
use toolc_runtime::{definitions_from_str, executor_fn, Registry};

const MANIFEST: &str = r#"
version: 1
tools:
  - name: lookup
    description: A server tool (never called here).
    location: server
  - name: highlight
    description: A client tool (never called here).
    location: client
"#;

const TOKEN: &str = "bench-token-0123456789";
const ORIGIN: &str = "https://app.example";

/// The provider whose wire the run speaks (`--provider`).
static PROVIDER: OnceLock<RealtimeProvider> = OnceLock::new();

fn provider() -> RealtimeProvider {
    *PROVIDER.get().unwrap_or(&RealtimeProvider::OpenAi)
}

/// The model's audio, ~300 bytes.
fn model_event(i: usize) -> String {
    match provider() {
        RealtimeProvider::OpenAi => json!({"type": "response.output_audio.delta", "event_id": format!("ev_{i}"), "response_id": "r1", "item_id": "i1", "output_index": 0, "content_index": 0, "delta": "QUJD".repeat(60)}).to_string(),
        RealtimeProvider::GeminiLive | RealtimeProvider::VertexLive => json!({"serverContent": {"modelTurn": {"parts": [{"inlineData": {"mimeType": "audio/pcm;rate=24000", "data": "QUJD".repeat(62)}}]}}}).to_string(),
        // The first event starts the session: the relay holds the page's input until then.
        RealtimeProvider::GptLive if i == 0 => json!({"type": "session.started", "event_id": "ev_started", "session": {"id": "bench", "expires_at": 0, "model": "gpt-live-1", "status": "active"}}).to_string(),
        RealtimeProvider::GptLive => json!({"type": "session.output_audio.delta", "delta": "QUJD".repeat(72)}).to_string(),
    }
}

/// The browser's audio, ~300 bytes.
fn browser_event(i: usize) -> String {
    match provider() {
        RealtimeProvider::OpenAi => json!({"type": "input_audio_buffer.append", "event_id": format!("ev_{i}"), "response_id": "r1", "item_id": "i1", "output_index": 0, "content_index": 0, "delta": "QUJD".repeat(60)}).to_string(),
        RealtimeProvider::GeminiLive | RealtimeProvider::VertexLive => json!({"realtimeInput": {"audio": {"mimeType": "audio/pcm;rate=16000", "data": "QUJD".repeat(64)}}}).to_string(),
        RealtimeProvider::GptLive => json!({"type": "session.input_audio.append", "event_id": format!("ev_{i}"), "audio": "QUJD".repeat(70)}).to_string(),
    }
}

/// A model server: on each connection, skips the relay's `session.update` if there is one, sends
/// `n` events and counts `n` events back, then reports.
async fn model_server(n: usize) -> (SocketAddr, mpsc::UnboundedReceiver<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (done_tx, done_rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let _ = stream.set_nodelay(true);
            let done = done_tx.clone();
            tokio::spawn(async move {
                let ws = tokio_tungstenite::accept_async(stream).await.unwrap();
                let (mut tx, mut rx) = ws.split();
                let sender = tokio::spawn(async move {
                    for i in 0..n {
                        tx.feed(Message::text(model_event(i))).await.unwrap();
                    }
                    tx.flush().await.unwrap();
                    tx
                });
                let mut got = 0;
                while got < n {
                    match rx.next().await {
                        Some(Ok(Message::Text(t))) => {
                            // The relay's own first message: `session.update` or `setup`.
                            let own = t.as_str().contains("session.update")
                                || t.as_str().starts_with(r#"{"session""#)
                                || t.as_str().contains(r#""type":"session.start""#)
                                || t.as_str().starts_with(r#"{"setup""#);
                            if !own {
                                got += 1;
                            }
                        }
                        Some(Ok(_)) => {}
                        _ => return,
                    }
                }
                let _tx = sender.await.unwrap();
                let _ = done.send(());
                // Hold the connection until the browser leaves.
                while let Some(Ok(_)) = rx.next().await {}
            });
        }
    });
    (addr, done_rx)
}

/// The baseline: accept a browser, open the model connection, forward both ways with
/// `StreamExt::forward` (which batches flushes while frames are ready), nothing else.
async fn bare_proxy(upstream: String) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let upstream = upstream.clone();
            tokio::spawn(async move {
                let _ = stream.set_nodelay(true);
                let browser = tokio_tungstenite::accept_async(stream).await.unwrap();
                let (model, _) = tokio_tungstenite::connect_async(upstream).await.unwrap();
                let (b_tx, b_rx) = browser.split();
                let (m_tx, m_rx) = model.split();
                let up = b_rx.forward(m_tx);
                let down = m_rx.forward(b_tx);
                let _ = tokio::join!(up, down);
            });
        }
    });
    addr
}

/// The same relay mounted in an axum application (`axum::serve`, `nest_service("/voice")`,
/// next to a route of the application's own).
async fn axum_proxy(upstream: String) -> SocketAddr {
    let service = toolc_runtime::relay::RelayService::new(registry(), config(upstream));
    let app = axum::Router::new()
        .route("/health", axum::routing::get(|| async { "ok" }))
        .nest_service("/voice", service.router());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let app = app.into_make_service_with_connect_info::<SocketAddr>();
        use axum::serve::ListenerExt;
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(listener, app).await.unwrap();
    });
    addr
}

fn registry() -> Arc<Registry> {
    let defs = definitions_from_str("bench.tools.yaml", MANIFEST).unwrap();
    Arc::new(
        Registry::builder()
            .definitions(defs)
            .executor("lookup", executor_fn(|_| async { Ok(json!({})) }))
            .build()
            .unwrap(),
    )
}

fn config(upstream: String) -> RelayConfig {
    let registry = registry();
    let mut config = RelayConfig::for_provider(&registry, provider());
    config.upstream = upstream;
    config.authorizer = Some(Arc::new(
        StaticTokens::parse(&format!("{TOKEN} bench-user\n")).unwrap(),
    ));
    config.allowed_origins = Some(vec![ORIGIN.to_owned()]);
    config
}

async fn relay_proxy(upstream: String) -> SocketAddr {
    let relay = Relay::bind("127.0.0.1:0", registry(), config(upstream))
        .await
        .unwrap();
    let addr = relay.local_addr().unwrap();
    tokio::spawn(relay.serve());
    addr
}

/// One run: connect a browser through `proxy`, exchange `n` events each way, return the time.
async fn run(proxy: &str, n: usize, done: &mut mpsc::UnboundedReceiver<()>) -> Duration {
    let mut request = proxy.into_client_request().unwrap();
    let headers = request.headers_mut();
    let bearer = format!("Bearer {TOKEN}");
    headers.insert("authorization", HeaderValue::from_str(&bearer).unwrap());
    headers.insert("origin", HeaderValue::from_static(ORIGIN));
    let (ws, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    let (mut tx, mut rx) = ws.split();
    let start = Instant::now();
    let sender = tokio::spawn(async move {
        for i in 0..n {
            tx.feed(Message::text(browser_event(i))).await.unwrap();
        }
        tx.flush().await.unwrap();
        tx
    });
    let mut got = 0;
    while got < n {
        match rx.next().await {
            Some(Ok(Message::Text(_))) => got += 1,
            Some(Ok(_)) => {}
            other => panic!("browser connection ended early: {other:?}"),
        }
    }
    done.recv().await.unwrap();
    let elapsed = start.elapsed();
    let mut tx = sender.await.unwrap();
    let _ = tx.close().await;
    elapsed
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let smoke = !args.iter().any(|a| a == "--bench");
    let chosen =
        args.windows(2)
            .find(|w| w[0] == "--provider")
            .map_or(RealtimeProvider::OpenAi, |w| {
                w[1].parse()
                    .expect("--provider openai|gemini-live|vertex-live|gpt-live")
            });
    PROVIDER.set(chosen).unwrap();
    let (n, rounds) = if smoke { (200, 1) } else { (20_000, 7) };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let (model, mut done) = model_server(n).await;
        let upstream = format!("ws://{model}/v1/realtime");
        let bare = format!("ws://{}/", bare_proxy(upstream.clone()).await);
        let relay = format!("ws://{}/", relay_proxy(upstream.clone()).await);
        let mounted = format!("ws://{}/voice", axum_proxy(upstream).await);
        // Warm-up.
        for proxy in [&bare, &relay, &mounted] {
            run(proxy, n, &mut done).await;
        }
        let mut times: [Vec<Duration>; 3] = Default::default();
        for _ in 0..rounds {
            for (i, proxy) in [&bare, &relay, &mounted].into_iter().enumerate() {
                times[i].push(run(proxy, n, &mut done).await);
            }
        }
        for t in &mut times {
            t.sort();
        }
        let median = |v: &[Duration]| v[v.len() / 2];
        let rate = |d: Duration| (2 * n) as f64 / d.as_secs_f64();
        let (b, r, m) = (median(&times[0]), median(&times[1]), median(&times[2]));
        println!(
            "realtime_relay ({}): {n} events each way (~300 B), median of {rounds} runs",
            provider().as_str()
        );
        println!(
            "  bare tokio-tungstenite forward loop: {b:?} ({:.0} events/s)",
            rate(b)
        );
        println!(
            "  toolc relay (Relay::serve):         {r:?} ({:.0} events/s)",
            rate(r)
        );
        println!(
            "  relay mounted in an axum app:       {m:?} ({:.0} events/s)",
            rate(m)
        );
        println!(
            "  relay / bare throughput: {:.2}x, axum-mounted / bare: {:.2}x (target >= 0.80x)",
            rate(r) / rate(b),
            rate(m) / rate(b)
        );
    });
}
