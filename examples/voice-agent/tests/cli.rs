//! The binary: it prints its address first, and refuses a TLS upstream it cannot reach rather
//! than starting a page that could never talk to the model.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_voice-agent");

#[test]
fn an_api_key_without_tls_is_refused_with_the_way_out() {
    let out = Command::new(BIN)
        .args(["--listen", "127.0.0.1:0"])
        .env("OPENAI_API_KEY", "sk-test")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("wss://api.openai.com"), "{stderr}");
    assert!(stderr.contains("needs TLS"), "{stderr}");
    assert!(stderr.contains("--scripted"), "{stderr}");
    assert!(
        !stderr.contains("sk-test"),
        "the key is never printed: {stderr}"
    );
}

#[test]
fn port_zero_prints_the_chosen_address_first() {
    let mut child = Command::new(BIN)
        .args(["--listen", "127.0.0.1:0", "--scripted"])
        .env("OPENAI_API_KEY", "sk-ignored-with-scripted")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    let read = BufReader::new(child.stdout.take().unwrap()).read_line(&mut first);
    let _ = child.kill();
    let _ = child.wait();
    read.unwrap();
    let url = first
        .trim_end()
        .strip_prefix("listening on http://127.0.0.1:")
        .unwrap_or_else(|| panic!("first line: {first:?}"));
    let port: u16 = url.trim_end_matches('/').parse().unwrap();
    assert_ne!(port, 0);
}
