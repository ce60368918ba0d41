use toolc_runtime::tool;

#[tool]
fn lookup(key: String) -> String {
    key
}

/// # Arguments
///
/// * `key` - The key.
/// * `fallback` - Not a parameter.
#[tool]
fn lookup_all(key: String) -> String {
    key
}

fn main() {}
