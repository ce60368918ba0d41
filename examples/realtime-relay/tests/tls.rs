//! With the runtime's `tls` feature (enabled by this example), a `wss://` upstream goes through
//! rustls: a peer that does not speak TLS gives a handshake error, never a panic for a missing
//! crypto provider.

use std::time::Duration;

#[tokio::test]
async fn a_wss_upstream_is_dialled_over_tls() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    // A peer that accepts the TCP connection and answers the TLS client hello with plain text.
    let peer = tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        let (mut socket, _) = listener.accept().await.unwrap();
        let _ = socket.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n").await;
    });
    let request = toolc_runtime::relay::upstream_request(
        &format!("wss://127.0.0.1:{port}/v1/realtime"),
        Some("sk-test"),
    )
    .unwrap();
    let result = tokio::time::timeout(
        Duration::from_secs(10),
        toolc_runtime::relay::connect_upstream(request),
    )
    .await
    .expect("the handshake ends");
    let error = result
        .expect_err("plain text is not a TLS server hello")
        .to_string();
    assert!(!error.contains("sk-test"), "{error}");
    assert!(
        error.to_lowercase().contains("tls")
            || error.to_lowercase().contains("io error")
            || error.contains("corrupt"),
        "a TLS-level failure: {error}"
    );
    peer.await.unwrap();
}
