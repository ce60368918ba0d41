//! Keeps `tests/generated/*.rs` (compiled by `tests/generated.rs`) equal to what the emitter
//! produces for every manifest in `manifests/` and for `tests/fixtures/edge.tools.yaml`, through
//! the same `toolc::Builder` a build script uses. A difference fails the test and rewrites the
//! file, so `git diff` shows the change and the next run passes. It lives apart from the
//! compile-pass test so that it still runs when the checked-in code no longer compiles.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

fn inputs() -> Vec<PathBuf> {
    let mut manifests: Vec<PathBuf> = std::fs::read_dir(root().join("../manifests"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".tools.yaml"))
        .collect();
    manifests.sort();
    manifests.push(root().join("tests/fixtures/edge.tools.yaml"));
    manifests
}

#[test]
fn generated_code_is_up_to_date() {
    let out = std::env::temp_dir().join(format!("toolc-generated-{}", std::process::id()));
    let mut stale = Vec::new();
    for manifest in inputs() {
        let report = toolc::Builder::new()
            .manifest(&manifest)
            .out_dir(&out)
            .cargo_directives(false)
            .compile_report()
            .unwrap();
        let fresh = std::fs::read_to_string(&report[0].path).unwrap();
        // The header names the manifest as given; make it stable across checkouts.
        let fresh = fresh.replace(&manifest.display().to_string(), &relative(&manifest));
        let golden = root()
            .join("tests/generated")
            .join(format!("{}.rs", report[0].module));
        if std::fs::read_to_string(&golden).ok().as_deref() != Some(fresh.as_str()) {
            std::fs::write(&golden, &fresh).unwrap();
            stale.push(golden);
        }
    }
    let _ = std::fs::remove_dir_all(&out);
    assert!(
        stale.is_empty(),
        "regenerated (review with git diff and rerun): {stale:?}"
    );
}

fn relative(manifest: &Path) -> String {
    let text = manifest.display().to_string();
    match text.find("/manifests/") {
        Some(i) => text[i + 1..].to_owned(),
        None => match text.find("/tests/fixtures/") {
            Some(i) => format!("runtime{}", &text[i..]),
            None => text,
        },
    }
}
