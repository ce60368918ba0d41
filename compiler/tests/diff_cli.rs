//! `toolc diff` end to end: exit statuses, `--only`, JSON, folders, and a real git repository
//! made in the test (`--against-git`, and the build.rs `Builder`'s baseline).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn cases() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/diff")
}

fn toolc_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolc"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

fn toolc(args: &[&str]) -> Output {
    toolc_in(&cases(), args)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("toolc-diff-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn exit_status_says_whether_anything_breaks() {
    let breaking = toolc(&[
        "diff",
        "enum-value-removed/old.tools.yaml",
        "--against",
        "enum-value-removed/new.tools.yaml",
    ]);
    assert_eq!(breaking.status.code(), Some(1), "{}", stderr(&breaking));
    assert!(stdout(&breaking).contains("breaking[toolc::diff::enum-value-removed]"));

    let compatible = toolc(&[
        "diff",
        "enum-value-added/old.tools.yaml",
        "--against",
        "enum-value-added/new.tools.yaml",
    ]);
    assert_eq!(compatible.status.code(), Some(0), "{}", stdout(&compatible));
    assert!(stdout(&compatible).contains("1 compatible change"));

    let same = toolc(&[
        "diff",
        "reordered/old.tools.yaml",
        "--against",
        "reordered/new.tools.yaml",
    ]);
    assert_eq!(same.status.code(), Some(0));
    assert_eq!(stdout(&same), "no changes\n");
}

#[test]
fn only_judges_one_audience() {
    let args = |only: &str| {
        toolc(&[
            "diff",
            "bound-tightened/old.tools.yaml",
            "--against",
            "bound-tightened/new.tools.yaml",
            "--only",
            only,
        ])
    };
    assert_eq!(args("model").status.code(), Some(1));
    // A tighter bound is the model's problem: executors get a subset of what they got before.
    let code = args("code");
    assert_eq!(code.status.code(), Some(0), "{}", stdout(&code));
    assert!(
        stdout(&code).ends_with("2 compatible changes\n"),
        "{}",
        stdout(&code)
    );

    let names = toolc(&[
        "diff",
        "rust-names-changed/old.tools.yaml",
        "--against",
        "rust-names-changed/new.tools.yaml",
        "--only",
        "model",
    ]);
    assert_eq!(names.status.code(), Some(0), "{}", stdout(&names));
}

#[test]
fn usage_and_invalid_versions_exit_2() {
    let missing = toolc(&["diff", "tool-added/old.tools.yaml"]);
    assert_eq!(missing.status.code(), Some(2));
    let both = toolc(&[
        "diff",
        "tool-added/old.tools.yaml",
        "--against",
        "tool-added/new.tools.yaml",
        "--against-git",
        "HEAD",
    ]);
    assert_eq!(both.status.code(), Some(2));
    let absent = toolc(&[
        "diff",
        "nope.tools.yaml",
        "--against",
        "tool-added/new.tools.yaml",
    ]);
    assert_eq!(absent.status.code(), Some(2));
    assert!(
        stderr(&absent).contains("nope.tools.yaml"),
        "{}",
        stderr(&absent)
    );

    let dir = temp_dir("invalid");
    std::fs::write(
        dir.join("bad.tools.yaml"),
        "version: 1\ntools:\n  - name: 7\n",
    )
    .unwrap();
    let bad = toolc_in(
        &dir,
        &[
            "diff",
            "bad.tools.yaml",
            "--against",
            &cases()
                .join("tool-added/new.tools.yaml")
                .display()
                .to_string(),
        ],
    );
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad).contains("bad.tools.yaml:3"),
        "{}",
        stderr(&bad)
    );
    assert!(stderr(&bad).contains("cannot compare"), "{}", stderr(&bad));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn json_has_one_object_per_change_with_both_places() {
    let out = toolc(&[
        "--message-format",
        "json",
        "diff",
        "bound-tightened/old.tools.yaml",
        "--against",
        "bound-tightened/new.tools.yaml",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let changes: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(changes.len(), 2, "{}", stdout(&out));
    let first = &changes[0];
    assert_eq!(first["code"], "toolc::diff::bound-tightened");
    assert_eq!(first["severity"], "breaking");
    assert_eq!(first["model"], "breaking");
    assert_eq!(first["code_impact"], "compatible");
    assert_eq!(first["tool"], "find_order");
    assert_eq!(first["old"]["file"], "bound-tightened/old.tools.yaml");
    assert_eq!(first["new"]["file"], "bound-tightened/new.tools.yaml");
    assert_eq!(first["new"]["line"], 10);
    assert!(first["help"].is_string());
}

#[test]
fn folders_compare_all_their_manifests_together() {
    let dir = temp_dir("folders");
    let (old, new) = (dir.join("old"), dir.join("new"));
    std::fs::create_dir_all(&old).unwrap();
    std::fs::create_dir_all(&new).unwrap();
    let tool_removed = cases().join("tool-removed");
    std::fs::copy(
        tool_removed.join("old.tools.yaml"),
        old.join("a.tools.yaml"),
    )
    .unwrap();
    // The tool that left `a` lives in `b` now: moving a tool between files is no change.
    let text = std::fs::read_to_string(tool_removed.join("old.tools.yaml")).unwrap();
    let (first, second) = text.split_at(text.find("  - name: cancel_order").unwrap());
    std::fs::write(new.join("a.tools.yaml"), first).unwrap();
    std::fs::write(
        new.join("b.tools.yaml"),
        format!("version: 1\ntools:\n{second}"),
    )
    .unwrap();
    let out = toolc_in(&dir, &["diff", "old", "--against", "new"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    assert_eq!(stdout(&out), "no changes\n");
    let _ = std::fs::remove_dir_all(&dir);
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=toolc",
            "-c",
            "user.email=toolc@example.invalid",
        ])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
}

/// A repository with `manifests/orders.tools.yaml` committed as the old version and changed in
/// the working tree, plus a manifest that is new since the commit.
fn repository(name: &str) -> PathBuf {
    let dir = temp_dir(name);
    git(&dir, &["init", "-q"]);
    let manifests = dir.join("manifests");
    std::fs::create_dir_all(&manifests).unwrap();
    let case = cases().join("enum-value-removed");
    std::fs::copy(
        case.join("old.tools.yaml"),
        manifests.join("orders.tools.yaml"),
    )
    .unwrap();
    git(&dir, &["add", "."]);
    git(&dir, &["commit", "-q", "-m", "old tools"]);
    std::fs::copy(
        case.join("new.tools.yaml"),
        manifests.join("orders.tools.yaml"),
    )
    .unwrap();
    let added = cases().join("tool-added/new.tools.yaml");
    let text = std::fs::read_to_string(added)
        .unwrap()
        .replace("find_order", "track_parcel");
    std::fs::write(manifests.join("parcels.tools.yaml"), text).unwrap();
    dir
}

#[test]
fn against_git_reads_the_old_version_from_a_revision_without_a_checkout() {
    let dir = repository("git");
    let out = toolc_in(&dir, &["diff", "manifests", "--against-git", "HEAD"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    assert!(text.contains("enum-value-removed"), "{text}");
    assert!(
        text.contains("--> HEAD:manifests/orders.tools.yaml:10"),
        "{text}"
    );
    assert!(
        text.contains("--> manifests/orders.tools.yaml:10"),
        "{text}"
    );
    // The manifest that did not exist at HEAD is all new.
    assert!(text.contains("server tool `track_parcel` added"), "{text}");
    // The working tree is untouched: the new version is still there.
    let now = std::fs::read_to_string(dir.join("manifests/orders.tools.yaml")).unwrap();
    assert!(!now.contains("shipped"));

    // From a subfolder, with a file path.
    let sub = toolc_in(
        &dir.join("manifests"),
        &["diff", "orders.tools.yaml", "--against-git", "HEAD"],
    );
    assert_eq!(sub.status.code(), Some(1), "{}", stderr(&sub));
    assert!(
        stdout(&sub).contains("HEAD:orders.tools.yaml"),
        "{}",
        stdout(&sub)
    );

    let unknown = toolc_in(
        &dir,
        &["diff", "manifests", "--against-git", "no-such-branch"],
    );
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        stderr(&unknown).contains("no-such-branch"),
        "{}",
        stderr(&unknown)
    );
    let option = toolc_in(&dir, &["diff", "manifests", "--against-git=--output=x"]);
    assert_eq!(option.status.code(), Some(2));
    assert!(!dir.join("x").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_builder_with_a_git_baseline_fails_on_a_breaking_change_when_told_to() {
    let dir = repository("builder");
    let manifest = dir.join("manifests/orders.tools.yaml");
    let out = dir.join("out");
    let warned = toolc::Builder::new()
        .manifest(&manifest)
        .out_dir(&out)
        .cargo_directives(false)
        .baseline_git("HEAD")
        .compile();
    assert!(warned.is_ok(), "{warned:?}");
    let denied = toolc::Builder::new()
        .manifest(&manifest)
        .out_dir(&out)
        .cargo_directives(false)
        .baseline_git("HEAD")
        .deny_breaking_changes(true)
        .compile()
        .unwrap_err();
    assert!(
        denied
            .rendered
            .contains("breaking[toolc::diff::enum-value-removed]"),
        "{denied}"
    );
    // A manifest that is new since the baseline breaks nothing.
    let new_manifest = dir.join("manifests/parcels.tools.yaml");
    toolc::Builder::new()
        .manifest(&new_manifest)
        .out_dir(&out)
        .cargo_directives(false)
        .baseline_git("HEAD")
        .deny_breaking_changes(true)
        .compile()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
