//! What resuming costs (issue 44): memory per session held while its page is away, the time from
//! a page's reconnect to its first re-delivered event, and the memory of a session whose page
//! stops reading while the model sends 64 MiB of audio. The relay, the fake model and the pages
//! are in this one process, on loopback; memory is the process's RSS from `/proc/self/status`.
//!
//! `cargo bench -p toolc-runtime --features relay,testing --bench relay_resume`
//! (or `cargo test --release ...` / a debug `cargo test --bench relay_resume` for a rough run).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use toolc_runtime::realtime::script;
use toolc_runtime::relay::testing::{FakeModel, Script, TestBrowser};
use toolc_runtime::relay::{Relay, RelayConfig};
use toolc_runtime::{definitions_from_str, Registry};

const SESSIONS: usize = 200;
const RESUMES: usize = 50;
const LIMIT: Duration = Duration::from_secs(30);

fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap_or(0)
}

fn registry() -> Arc<Registry> {
    let defs = definitions_from_str(
        "bench.tools.yaml",
        "version: 1\ntools:\n  - name: highlight\n    description: Highlight.\n    location: client\n    timeout: 10m\n",
    )
    .unwrap();
    Arc::new(Registry::builder().definitions(defs).build().unwrap())
}

async fn relay(upstream: String, edit: impl FnOnce(&mut RelayConfig)) -> (String, Relay) {
    let registry = registry();
    let mut config = RelayConfig::new(&registry).upstream(upstream);
    let mut session = (*config.session).clone();
    session.filler_delay = None;
    config.session = Arc::new(session);
    config.limits.max_sessions = 10_000;
    config.limits.max_held_sessions = 10_000;
    edit(&mut config);
    let relay = Relay::bind("127.0.0.1:0", registry, config).await.unwrap();
    (format!("ws://{}/", relay.local_addr().unwrap()), relay)
}

async fn token_and_call(page: &mut TestBrowser) -> String {
    let first = page.next_event(LIMIT).await.unwrap();
    let token = first["resume_token"].as_str().unwrap().to_owned();
    let (call, _) = page
        .next_matching(LIMIT, |e| e["type"] == "function_call")
        .await;
    call.expect("the call");
    token
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let model = FakeModel::start(
        Script::new()
            .wait_for("session.update", 1)
            .send_all(script::response_with_calls(
                "r1",
                &[("c1", "highlight", r#"{}"#)],
            ))
            .wait_for("never", 1),
    )
    .await
    .unwrap();
    let (url, bound) = relay(model.url(), |_| {}).await;
    let service = bound.service().clone();
    let stats = bound.stats();
    tokio::spawn(bound.serve());
    // Warm up: one session, dropped and ended.
    {
        let mut page = TestBrowser::connect(&url).await.unwrap();
        token_and_call(&mut page).await;
        page.close().await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = status_kib("VmRSS:");
    let mut pages = Vec::new();
    let mut tokens = Vec::new();
    for _ in 0..SESSIONS {
        let mut page = TestBrowser::connect(&url).await.unwrap();
        tokens.push(token_and_call(&mut page).await);
        pages.push(page);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let connected = status_kib("VmRSS:");
    for page in pages.drain(..) {
        page.abort();
    }
    while service.pages_away() < SESSIONS {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let held = status_kib("VmRSS:");
    let per = |after: u64| (after.saturating_sub(before)) as f64 / SESSIONS as f64;
    println!(
        "{SESSIONS} sessions with a waiting client call (relay + fake model + pages in one process):"
    );
    println!(
        "  connected: {:.1} KiB per session; held, pages away: {:.1} KiB per session (RSS {before} -> {connected} -> {held} KiB)",
        per(connected),
        per(held)
    );

    // Reconnect to the first re-delivered event.
    let mut times = Vec::new();
    for token in tokens.iter().take(RESUMES) {
        let started = Instant::now();
        let mut page = TestBrowser::connect(&format!("{url}?resume={token}"))
            .await
            .unwrap();
        let (call, _) = page
            .next_matching(LIMIT, |e| e["type"] == "function_call")
            .await;
        times.push(started.elapsed());
        assert_eq!(call.unwrap()["call_id"], "c1");
        pages.push(page);
    }
    times.sort();
    println!(
        "reconnect (websocket handshake included) to the first re-delivered call, {RESUMES} resumes: p50 {:?}, p90 {:?}, max {:?}",
        percentile(&times, 0.5),
        percentile(&times, 0.9),
        times[times.len() - 1]
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        stats.pages_resumed.load(Ordering::Relaxed) as usize,
        RESUMES
    );
    drop(pages);

    // A page that stops reading while the model sends 64 MiB of audio.
    let audio = "A".repeat(64 * 1024);
    let loud = FakeModel::start(
        Script::new()
            .wait_for("session.update", 1)
            .send_all((0..1024).map(|i| {
                json!({"type": "response.output_audio.delta", "response_id": "r0", "item_id": "i0",
                       "output_index": 0, "content_index": 0, "delta": audio, "event_id": format!("e{i}")})
            }))
            .wait_for("never", 1),
    )
    .await
    .unwrap();
    let (url, bound) = relay(loud.url(), |c| {
        c.limits.write_timeout = Duration::from_secs(60);
    })
    .await;
    let stats = bound.stats();
    tokio::spawn(bound.serve());
    let hwm_before = status_kib("VmHWM:");
    let rss_before = status_kib("VmRSS:");
    let started = Instant::now();
    let stalled = TestBrowser::connect(&url).await.unwrap();
    let conn = loud.connection(0, LIMIT).await.unwrap();
    while !conn.script_finished() || stats.page_audio_dropped.load(Ordering::Relaxed) < 900 {
        assert!(started.elapsed() < Duration::from_secs(120));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    println!(
        "a page that stops reading, 64 MiB of audio sent: {} audio frames dropped, RSS {} -> {} KiB, peak {} -> {} KiB ({:?})",
        stats.page_audio_dropped.load(Ordering::Relaxed),
        rss_before,
        status_kib("VmRSS:"),
        hwm_before,
        status_kib("VmHWM:"),
        started.elapsed()
    );
    drop(stalled);
}
