use toolc_runtime::tool;

/// Generic.
#[tool]
fn generic<T: ToString>(value: T) -> String {
    value.to_string()
}

/// Pattern and impl Trait parameters.
#[tool]
fn shapes((a, b): (i32, i32), it: impl Iterator<Item = u8>) -> i32 {
    let _ = it;
    a + b
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Args {
    text: String,
}

/// `#[args]` must be alone.
#[tool]
fn two(#[args] args: Args, extra: bool) -> String {
    let _ = extra;
    args.text
}

fn main() {}
