//! Starting the example binary in a test: its first line says where it listens.
#![allow(dead_code)]

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// How long the binary may take to say where it listens.
const STARTUP: Duration = Duration::from_secs(20);

/// Starts the example with `args`; returns the child (killed when dropped) and the `ws://` URL
/// it printed.
pub async fn start_relay(args: &[&str]) -> (Child, String) {
    start_relay_with_env(args, &[]).await
}

/// [`start_relay`] with these environment variables set.
pub async fn start_relay_with_env(args: &[&str], env: &[(&str, &str)]) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_realtime-relay"))
        .args(args)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the example binary starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(STARTUP, lines.next_line())
        .await
        .expect("the binary says where it listens in time")
        .unwrap()
        .expect("a first line");
    let url = first
        .strip_prefix("listening on ")
        .expect(&first)
        .to_owned();
    // Keep reading what it prints, as a terminal would: a full pipe would block it.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, url)
}
