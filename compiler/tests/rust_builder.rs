//! `toolc::Builder`, the build.rs entry point: one file per manifest, rewritten only when it
//! changes, and every diagnostic of every manifest reported before failing.

use std::path::PathBuf;

use toolc::Builder;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("toolc-builder-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn manifest(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../manifests")
        .join(name)
}

#[test]
fn writes_one_module_per_manifest_and_only_when_changed() {
    let out = temp_dir("write");
    let build = || {
        Builder::new()
            .manifest(manifest("support.tools.yaml"))
            .manifest(manifest("commerce.tools.yaml"))
            .out_dir(&out)
            .cargo_directives(false)
            .compile_report()
            .unwrap()
    };
    let first = build();
    assert_eq!(
        first.iter().map(|g| g.module.as_str()).collect::<Vec<_>>(),
        ["support", "commerce"]
    );
    assert!(first.iter().all(|g| g.written));
    let support = std::fs::read_to_string(out.join("support.rs")).unwrap();
    assert!(support.contains("pub trait SupportServer"));
    assert!(std::fs::read_to_string(out.join("commerce.rs"))
        .unwrap()
        .contains("pub trait CommerceServer"));
    let modified = std::fs::metadata(out.join("support.rs"))
        .unwrap()
        .modified()
        .unwrap();
    let second = build();
    assert!(
        second.iter().all(|g| !g.written),
        "unchanged output is not rewritten"
    );
    assert_eq!(
        std::fs::metadata(out.join("support.rs"))
            .unwrap()
            .modified()
            .unwrap(),
        modified
    );
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn reports_every_problem_of_every_manifest() {
    let dir = temp_dir("errors");
    let bad = dir.join("bad.tools.yaml");
    std::fs::write(
        &bad,
        "version: 1\ntools:\n  - name: a\n    description: A.\n    location: servr\n",
    )
    .unwrap();
    let worse = dir.join("worse.tools.yaml");
    std::fs::write(
        &worse,
        "version: 1\ntools:\n  - name: b\n    location: client\n",
    )
    .unwrap();
    let err = Builder::new()
        .manifest(&bad)
        .manifest(&worse)
        .manifest(dir.join("missing.tools.yaml"))
        .out_dir(dir.join("out"))
        .cargo_directives(false)
        .compile()
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("unknown location `servr`"), "{text}");
    assert!(text.contains("bad.tools.yaml:5:"), "{text}");
    assert!(text.contains("worse.tools.yaml"), "{text}");
    assert!(text.contains("cannot read manifest"), "{text}");
    assert_eq!(
        format!("{err:?}"),
        text,
        "Debug shows the rendered text, for `main() -> Result`"
    );
    assert!(!dir.join("out/bad.rs").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn two_manifests_with_one_module_name_are_an_error() {
    let dir = temp_dir("clash");
    std::fs::create_dir_all(dir.join("a")).unwrap();
    std::fs::copy(
        manifest("support.tools.yaml"),
        dir.join("a/support.tools.yaml"),
    )
    .unwrap();
    let err = Builder::new()
        .manifest(manifest("support.tools.yaml"))
        .manifest(dir.join("a/support.tools.yaml"))
        .out_dir(dir.join("out"))
        .cargo_directives(false)
        .compile()
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("would both be written to `support.rs`"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn module_names_come_from_the_file_name() {
    use toolc::builder::module_name;
    assert_eq!(
        module_name("manifests/support.tools.yaml".as_ref()),
        "support"
    );
    assert_eq!(module_name("x/My-Tools.yml".as_ref()), "my_tools");
    assert_eq!(module_name("plain.yaml".as_ref()), "plain");
}
