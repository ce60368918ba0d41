//! docs/runtime.md, "Deploying the relay": your sign-in, your axum app, the relay mounted in it.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use toolc_runtime::relay::axum::{self, Router};
use toolc_runtime::relay::{Handshake, Refusal, RelayConfig, RelayService};
use toolc_runtime::{Principal, Registry};

/// Your application's sign-in sessions: token → user id (a database, in a real app).
#[derive(Debug, Clone, Default)]
pub struct Sessions(pub Arc<HashMap<String, String>>);

impl Sessions {
    async fn lookup(&self, token: &str) -> Option<String> {
        self.0.get(token).cloned()
    }
}

pub fn voice_app(
    registry: Registry,
    sessions: Sessions,
    upstream: String,
) -> Result<Router, std::env::VarError> {
    let mut config = RelayConfig::new(&registry);
    config.upstream = upstream; // the model's websocket; OpenAI's GA endpoint if not set
    config.api_key = Some(std::env::var("OPENAI_API_KEY")?);
    // Any `Fn(Handshake) -> Future<Output = Result<Principal, Refusal>>`: headers, cookies,
    // query, subprotocols and the peer address are in `Handshake`. It runs once per browser,
    // so it clones what it needs into each future. `StaticTokens` reads `TOKEN USER_ID` lines.
    config.authorizer = Some(Arc::new(move |h: Handshake| {
        let sessions = sessions.clone();
        async move {
            let token = h
                .bearer_token()
                .ok_or(Refusal::unauthorized("sign in first"))?;
            let user = sessions.lookup(token).await;
            let user = user.ok_or(Refusal::unauthorized("expired"))?;
            Ok(Principal::new(user).with_credential(token))
        }
    }));
    config.allowed_origins = Some(vec!["https://shop.example".into()]);
    config.limits.max_sessions_per_principal = 4; // RelayLimits: all have safe defaults
    let relay = RelayService::new(Arc::new(registry), config);
    Ok(Router::new().nest_service("/voice", relay.router())) // or Relay::bind(...)
}

// Served with the peer address, or `Handshake::remote` is `None`.
pub async fn serve(listener: tokio::net::TcpListener, app: Router) -> std::io::Result<()> {
    let app = app.into_make_service_with_connect_info::<SocketAddr>();
    axum::serve(listener, app).await
}
