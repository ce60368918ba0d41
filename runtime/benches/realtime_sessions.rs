//! 1,000 concurrent realtime sessions, each with one open client call that the browser never
//! answers: memory per session (resident set growth) and how late the deadlines fire.
//!
//! A bench binary rather than criterion: it measures one large configuration, not a hot loop.
//! `cargo bench -p toolc-runtime --bench realtime_sessions`

use std::sync::Arc;
use std::time::{Duration, Instant};

use toolc_runtime::realtime::{script, Output, RealtimeSession, SessionConfig};
use toolc_runtime::{definitions_from_str, Registry};

const SESSIONS: usize = 1_000;
const DEADLINE: Duration = Duration::from_millis(800);

const MANIFEST: &str = r#"
version: 1
tools:
  - name: wait_for_user
    description: A client tool the browser never answers.
    location: client
    timeout: 800ms
    parameters:
      type: object
      properties: { q: { type: string } }
"#;

/// Resident set size in bytes, from /proc (Linux).
fn rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this as a smoke test.
    let smoke = !std::env::args().any(|a| a == "--bench");
    let sessions = if smoke { 20 } else { SESSIONS };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let defs = definitions_from_str("bench.tools.yaml", MANIFEST).unwrap();
    let registry = Arc::new(Registry::builder().definitions(defs).build().unwrap());
    let mut config = SessionConfig::new(&registry);
    config.filler_delay = None;
    let config = Arc::new(config);
    let events: Vec<String> =
        script::response_with_calls("r1", &[("c1", "wait_for_user", r#"{"q":"x"}"#)])
            .iter()
            .map(|e| e.to_string())
            .collect();

    rt.block_on(async move {
        // Warm the allocator and runtime so the first sessions do not pay for them.
        let before = rss().unwrap_or(0);
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Duration>();
        let (opened_tx, mut opened_rx) = tokio::sync::mpsc::unbounded_channel::<()>();
        for _ in 0..sessions {
            let (mut session, mut session_events) = RealtimeSession::new(registry.clone(), config.clone());
            let events = events.clone();
            let tx = tx.clone();
            let opened = opened_tx.clone();
            tokio::spawn(async move {
                let started = Instant::now();
                for e in &events {
                    session.on_model_event(e);
                }
                let _ = opened.send(());
                while let Some(ev) = session_events.recv().await {
                    session.on_event(ev);
                    let timed_out = session.drain_outputs().any(|o| {
                        matches!(&o, Output::ToModel(t) if t.contains("function_call_output") && t.contains("timeout"))
                    });
                    if timed_out {
                        let late = started.elapsed().saturating_sub(DEADLINE);
                        let _ = tx.send(late);
                        // Keep the session alive until every deadline fired, as a server would.
                        tokio::time::sleep(Duration::from_millis(400)).await;
                        break;
                    }
                }
            });
        }
        for _ in 0..sessions {
            opened_rx.recv().await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        let during = rss().unwrap_or(0);
        let mut late = Vec::with_capacity(sessions);
        for _ in 0..sessions {
            late.push(rx.recv().await.unwrap());
        }
        late.sort();
        let per_session = during.saturating_sub(before) as f64 / sessions as f64;
        println!("realtime_sessions: {sessions} sessions, one open client call each, deadline {DEADLINE:?}");
        println!("  memory per session (RSS growth / sessions): {:.1} KiB", per_session / 1024.0);
        println!(
            "  deadline lateness: p50 {:?}, p99 {:?}, max {:?}",
            percentile(&late, 0.50),
            percentile(&late, 0.99),
            late.last().unwrap()
        );
        let met = percentile(&late, 0.99) < Duration::from_millis(5);
        println!("  target p99 < 5 ms: {}", if met { "met" } else { "MISSED" });
    });
}
