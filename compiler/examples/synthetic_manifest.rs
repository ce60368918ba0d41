//! Prints a synthetic manifest of N realistic tools (default 1,000), for benchmarks:
//! `cargo run -p toolc --example synthetic_manifest -- 1000 > /tmp/bench.tools.yaml`

fn main() {
    let n = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000);
    print!("{}", toolc::synthetic::manifest(n));
}
