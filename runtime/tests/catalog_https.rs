//! An `https://` catalog: a test CA trusted through `SSL_CERT_FILE`, a TLS server that keeps
//! connections alive, and a server whose certificate no trusted CA signed. Its own test binary,
//! because `SSL_CERT_FILE` is the process's environment.
#![cfg(feature = "catalog")]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Once};

use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio_rustls::rustls;
use toolc_runtime::catalog::{CatalogClient, CatalogErrorKind};

struct Ca {
    pem: String,
    issuer: Issuer<'static, KeyPair>,
}

fn ca(name: &str) -> Ca {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    let key = KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    Ca {
        pem: cert.pem(),
        issuer: Issuer::new(params, key),
    }
}

/// Trusts `trusted` for the whole process, once (every test shares it).
fn trust(trusted: &Ca) {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let path = std::env::temp_dir().join(format!("toolc-test-ca-{}.pem", std::process::id()));
        std::fs::write(&path, &trusted.pem).unwrap();
        std::env::set_var("SSL_CERT_FILE", &path);
        std::env::remove_var("SSL_CERT_DIR");
    });
}

/// A TLS catalog on 127.0.0.1 with a `localhost` certificate signed by `ca`. Answers
/// `GET /tools` and `POST /execute` on kept-alive connections; counts the connections.
async fn server(ca: &Ca) -> (String, Arc<AtomicUsize>) {
    let params = CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &ca.issuer).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let connections = Arc::new(AtomicUsize::new(0));
    let counted = connections.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut stream = BufReader::new(tls);
                loop {
                    let mut head = Vec::new();
                    let mut length = 0;
                    loop {
                        let mut line = String::new();
                        if stream.read_line(&mut line).await.unwrap_or(0) == 0 {
                            return;
                        }
                        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                            length = v.trim().parse().unwrap_or(0);
                        }
                        if line == "\r\n" {
                            break;
                        }
                        head.push(line);
                    }
                    let mut body = vec![0; length];
                    if stream.read_exact(&mut body).await.is_err() {
                        return;
                    }
                    let answer = if head[0].starts_with("GET /tools ") {
                        json!({"success": true, "data": {"tools": [{
                            "name": "get_weather", "description": "The weather in a city.",
                            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
                            "requires_auth": false}], "count": 1, "include_unauthorized": true}})
                    } else {
                        let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                        json!({"success": true, "data": {"over": "tls", "city": request["arguments"]["city"]}})
                    };
                    let text = answer.to_string();
                    let out = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{text}",
                        text.len()
                    );
                    if stream.get_mut().write_all(out.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (format!("https://localhost:{port}"), connections)
}

fn trusted_ca() -> &'static Ca {
    static CA: std::sync::OnceLock<Ca> = std::sync::OnceLock::new();
    CA.get_or_init(|| ca("toolc test CA"))
}

#[tokio::test]
async fn an_https_catalog_signed_by_a_ca_in_ssl_cert_file_works_over_one_connection() {
    trust(trusted_ca());
    let (base, connections) = server(trusted_ca()).await;
    let client = CatalogClient::new(&base).unwrap();
    let catalog = client.catalog().await.unwrap();
    assert_eq!(catalog.tools()[0].name, "get_weather");
    for city in ["Oslo", "Lima"] {
        let out = client
            .execute("get_weather", &json!({"city": city}), None)
            .await
            .unwrap();
        assert_eq!(out, json!({"over": "tls", "city": city}));
    }
    assert_eq!(
        connections.load(Ordering::SeqCst),
        1,
        "discovery and both calls share one kept-alive connection"
    );
}

#[tokio::test]
async fn a_certificate_no_trusted_ca_signed_is_refused() {
    trust(trusted_ca());
    let stranger = ca("somebody else");
    let (base, _) = server(&stranger).await;
    let client = CatalogClient::new(&base).unwrap();
    let e = client.catalog().await.unwrap_err();
    assert_eq!(e.kind(), CatalogErrorKind::Unreachable, "{e}");
    let raw = e.raw().unwrap_or_default().to_lowercase();
    assert!(raw.contains("certificate"), "{raw}");
}
