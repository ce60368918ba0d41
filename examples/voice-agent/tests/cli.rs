//! The binary: it prints its address first, and with an API key it serves the page for the real
//! model without ever printing the key.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_voice-agent");

#[test]
fn an_api_key_selects_the_real_model_and_is_never_printed() {
    // Built with the runtime's `tls` feature, the default `wss://` OpenAI upstream is accepted:
    // the server starts (the model is only dialled when a page connects).
    let mut child = Command::new(BIN)
        .args(["--listen", "127.0.0.1:0"])
        .env("OPENAI_API_KEY", "sk-test")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    let read = BufReader::new(child.stdout.take().unwrap()).read_line(&mut first);
    let _ = child.kill();
    let output = child.wait_with_output().unwrap();
    read.unwrap();
    assert!(
        first.starts_with("listening on http://127.0.0.1:"),
        "{first:?}"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !first.contains("sk-test") && !stderr.contains("sk-test"),
        "the key is never printed"
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
