use toolc_runtime::tool;

#[tool(manifest = "manifests/nowhere.tools.yaml")]
fn lookup(key: String) -> String {
    key
}

#[tool(manifest = "tests/manifests/broken.tools.yaml")]
fn broken(key: String) -> String {
    key
}

fn main() {}
