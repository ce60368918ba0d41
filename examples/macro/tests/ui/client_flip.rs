// The example's support tools, unchanged, built against the flipped manifest.
#[path = "../../src/support.rs"]
mod support;

fn main() {}
