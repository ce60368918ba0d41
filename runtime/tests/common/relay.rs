//! A relay on loopback for a test: the registry, the upstream (a `FakeModel`'s URL or a port
//! nobody listens on), and whatever the test changes in the config. Filler phrases are off
//! (tests that time a slow call turn them on in `edit`), so every event a browser gets is one
//! the test expects.
#![allow(dead_code)]

use std::sync::Arc;

use toolc_runtime::realtime::SessionConfig;
use toolc_runtime::relay::{Relay, RelayConfig, RelayService, RelayStats};
use toolc_runtime::Registry;

/// A started relay.
pub struct TestRelay {
    /// `ws://127.0.0.1:PORT/`.
    pub url: String,
    /// Its counters.
    pub stats: Arc<RelayStats>,
    /// The task that serves it; abort it to stop the relay.
    pub server: tokio::task::JoinHandle<()>,
    /// The service it serves, to drain it.
    pub service: RelayService,
}

/// Binds a relay for `registry` to a free loopback port and serves it on a task.
pub async fn start(
    registry: Arc<Registry>,
    upstream: String,
    edit: impl FnOnce(&mut RelayConfig),
) -> TestRelay {
    let mut config = RelayConfig::new(&registry);
    config.upstream = upstream;
    edit_session(&mut config, |session| session.filler_delay = None);
    edit(&mut config);
    let relay = Relay::bind("127.0.0.1:0", registry, config)
        .await
        .expect("a loopback port");
    let url = format!("ws://{}/", relay.local_addr().expect("a bound relay"));
    let stats = relay.stats();
    let service = relay.service().clone();
    let server = tokio::spawn(relay.serve());
    TestRelay {
        url,
        stats,
        server,
        service,
    }
}

/// Changes the session settings every connection gets (they are shared behind an `Arc`).
pub fn edit_session(config: &mut RelayConfig, edit: impl FnOnce(&mut SessionConfig)) {
    let mut session = (*config.session).clone();
    edit(&mut session);
    config.session = Arc::new(session);
}
