use toolc_runtime::tool;

/// Look something up.
#[tool]
fn lookup(key: String) -> String;

fn main() {}
