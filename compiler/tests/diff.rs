//! Golden tests of `toolc diff`: one folder per change kind in `tests/diff/`, each holding an
//! `old.tools.yaml`, a `new.tools.yaml` and the exact report toolc must print for them
//! (`changes.txt`). A folder is named after the change code it demonstrates, optionally with a
//! `.suffix` for a second case of the same code; `reordered`, `unused-def` and `inline-to-ref`
//! are versions that differ in text only and must report no change to the model.
//! `TOOLC_BLESS=1 cargo test -p toolc --test diff` rewrites the expected files; review the diff
//! like code.

use std::path::{Path, PathBuf};

use toolc::diff::{self, Audience, Impact};

fn cases() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/diff");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    found.sort();
    found
}

fn side(case: &Path, file: &str) -> Vec<(String, Vec<u8>)> {
    let name = format!("{}/{file}", case.file_name().unwrap().to_string_lossy());
    vec![(name, std::fs::read(case.join(file)).unwrap())]
}

fn compare(case: &Path) -> diff::Comparison {
    diff::compare_sources(side(case, "old.tools.yaml"), side(case, "new.tools.yaml"))
}

#[test]
fn every_change_kind_has_its_golden_report() {
    let bless = std::env::var_os("TOOLC_BLESS").is_some();
    let mut failures = Vec::new();
    let mut seen_codes = std::collections::BTreeSet::new();
    for case in cases() {
        let comparison = compare(&case);
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let changes = comparison.changes.unwrap_or_else(|| {
            panic!(
                "{name} does not load:\n{}",
                comparison.session.render(false)
            )
        });
        let rendered = diff::render_human(&comparison.session.sources, &changes, None, false);
        let kind = name.split('.').next().unwrap_or(&name);
        match kind {
            "reordered" | "unused-def" => assert!(
                changes.is_empty(),
                "{name} must report no change:\n{rendered}"
            ),
            "inline-to-ref" => assert!(
                changes.iter().all(|c| c.for_model == Impact::Unaffected),
                "{name} changes nothing for the model:\n{rendered}"
            ),
            _ => {
                let code = format!("toolc::diff::{kind}");
                assert!(
                    changes.iter().any(|c| c.code == code),
                    "{name} does not report {code}:\n{rendered}"
                );
                seen_codes.insert(code);
            }
        }
        let expected_file = case.join("changes.txt");
        if bless {
            std::fs::write(&expected_file, &rendered).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&expected_file).unwrap_or_default();
        if expected != rendered {
            failures.push(format!(
                "--- {} (expected)\n{expected}\n+++ (actual)\n{rendered}",
                expected_file.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Every code the README (or a page of `docs/`) lists has a golden case.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    if let Ok(pages) = std::fs::read_dir(root.join("docs")) {
        for page in pages {
            let page = page.unwrap().path();
            if page.extension().is_some_and(|e| e == "md") {
                readme.push_str(&std::fs::read_to_string(page).unwrap());
            }
        }
    }
    for code in &seen_codes {
        let short = code.trim_start_matches("toolc::diff::");
        assert!(
            readme.contains(&format!("`{short}`")),
            "neither the README's table of changes nor docs/ lists `{short}`"
        );
    }
}

/// Whom each kind breaks is the contract CI relies on: spelled out here, not only in goldens.
#[test]
fn breaking_changes_break_the_audience_they_name() {
    let expect = |case: &str, code: &str, model: Impact, code_impact: Impact| {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/diff")
            .join(case);
        let changes = compare(&dir).changes.unwrap();
        let change = changes
            .iter()
            .find(|c| c.code == format!("toolc::diff::{code}"))
            .unwrap_or_else(|| panic!("{case}: no {code} in {changes:#?}"));
        assert_eq!(
            (change.for_model, change.for_code),
            (model, code_impact),
            "{case}: {code}"
        );
    };
    use Impact::*;
    expect("tool-removed", "tool-removed", Breaking, Breaking);
    expect("tool-renamed", "tool-renamed", Breaking, Breaking);
    expect("tool-added", "tool-added", Compatible, Compatible);
    expect("location-changed", "location-changed", Breaking, Breaking);
    expect(
        "wait-for-response-changed",
        "wait-for-response-changed",
        Breaking,
        Breaking,
    );
    expect(
        "required-property-added",
        "required-property-added",
        Breaking,
        Compatible,
    );
    expect(
        "required-property-added.returns",
        "required-property-added",
        Compatible,
        Breaking,
    );
    expect("approval-changed", "approval-changed", Info, Breaking);
    expect("mode-changed", "mode-changed", Breaking, Unaffected);
    expect("property-added", "property-added", Compatible, Compatible);
    expect("property-removed", "property-removed", Breaking, Breaking);
    expect(
        "property-removed.open",
        "property-removed",
        Compatible,
        Breaking,
    );
    expect(
        "property-now-optional.returns",
        "property-now-optional",
        Compatible,
        Breaking,
    );
    expect("type-narrowed", "type-narrowed", Breaking, Compatible);
    expect("type-widened.returns", "type-widened", Compatible, Breaking);
    expect(
        "enum-value-removed",
        "enum-value-removed",
        Breaking,
        Breaking,
    );
    expect(
        "enum-value-added",
        "enum-value-added",
        Compatible,
        Compatible,
    );
    expect("bound-tightened", "bound-tightened", Breaking, Compatible);
    expect(
        "bound-tightened.through-ref",
        "bound-tightened",
        Breaking,
        Compatible,
    );
    expect("bound-loosened", "bound-loosened", Compatible, Compatible);
    expect("pattern-added", "pattern-added", Breaking, Compatible);
    expect(
        "description-changed",
        "description-changed",
        Info,
        Unaffected,
    );
    expect(
        "rust-names-changed",
        "rust-names-changed",
        Unaffected,
        Breaking,
    );
    expect(
        "rust-names-changed",
        "typescript-names-changed",
        Unaffected,
        Breaking,
    );
}

#[test]
fn only_model_or_only_code_judges_one_audience() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/diff/rust-names-changed");
    let changes = compare(&dir).changes.unwrap();
    assert_eq!(
        diff::Summary::of(&changes, Some(Audience::Model)).breaking,
        0
    );
    assert!(diff::Summary::of(&changes, Some(Audience::Code)).breaking >= 2);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/diff/bound-tightened");
    let changes = compare(&dir).changes.unwrap();
    assert_eq!(
        diff::Summary::of(&changes, Some(Audience::Model)).breaking,
        2
    );
    assert_eq!(
        diff::Summary::of(&changes, Some(Audience::Code)).breaking,
        0
    );
}

/// A change reported through a `$ref` names the reference, and one def used by two properties
/// is reported once.
#[test]
fn a_change_inside_defs_is_reported_where_it_is_used() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/diff/bound-tightened.through-ref");
    let changes = compare(&dir).changes.unwrap();
    let tightened: Vec<_> = changes
        .iter()
        .filter(|c| c.code == "toolc::diff::bound-tightened")
        .collect();
    assert_eq!(tightened.len(), 1, "{changes:#?}");
    assert!(
        tightened[0].message.contains("#/$defs/Address"),
        "{}",
        tightened[0].message
    );
    assert!(
        tightened[0].message.contains("ship_to.street"),
        "{}",
        tightened[0].message
    );
}

#[test]
fn a_version_with_errors_is_not_compared() {
    let old = vec![(
        "old.tools.yaml".to_owned(),
        b"version: 1\ntools: []\n".to_vec(),
    )];
    let new = vec![(
        "new.tools.yaml".to_owned(),
        b"version: 1\ntools: [{name: 1}]\n".to_vec(),
    )];
    let comparison = diff::compare_sources(old, new);
    assert!(comparison.changes.is_none());
    assert!(comparison.session.diagnostics.has_errors());
    assert!(comparison.session.render(false).contains("new.tools.yaml"));
}

fn manifest(name: &str) -> (String, Vec<u8>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../manifests")
        .join(name);
    (name.to_owned(), std::fs::read(path).unwrap())
}

#[test]
fn a_version_compared_with_itself_has_no_changes() {
    for name in ["support.tools.yaml", "commerce.tools.yaml"] {
        let comparison = diff::compare_sources(vec![manifest(name)], vec![manifest(name)]);
        assert_eq!(comparison.changes, Some(Vec::new()), "{name}");
    }
    let synthetic = toolc::synthetic::manifest(500).into_bytes();
    let comparison = diff::compare_sources(
        vec![("old".to_owned(), synthetic.clone())],
        vec![("new".to_owned(), synthetic)],
    );
    assert_eq!(comparison.changes, Some(Vec::new()));
}

/// Every tool removed and every tool added: the two directions mirror each other.
#[test]
fn an_empty_side_is_every_tool_added_or_removed() {
    let all_added = diff::compare_sources(Vec::new(), vec![manifest("support.tools.yaml")]);
    let added = all_added.changes.unwrap();
    assert!(!added.is_empty());
    assert!(added.iter().all(|c| c.code == "toolc::diff::tool-added"));
    let all_removed = diff::compare_sources(vec![manifest("support.tools.yaml")], Vec::new());
    let removed = all_removed.changes.unwrap();
    assert_eq!(removed.len(), added.len());
    assert!(removed.iter().all(|c| c.is_breaking(Some(Audience::Model))));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 300, ..Default::default() })]

    /// Whatever a mutation does to the new version, comparing and rendering never panic, and
    /// every label points inside the file it names.
    #[test]
    fn a_mutated_new_version_never_panics(
        ops in proptest::collection::vec(
            (proptest::prelude::any::<usize>(), proptest::prelude::any::<u8>(), proptest::prelude::any::<u8>()),
            1..6,
        )
    ) {
        let seed = manifest("commerce.tools.yaml");
        let mut bytes = seed.1.clone();
        for (pos, op, byte) in ops {
            if bytes.is_empty() {
                break;
            }
            let pos = pos % bytes.len();
            match op % 3 {
                0 => { bytes.remove(pos); }
                1 => bytes.insert(pos, byte),
                _ => bytes[pos] = byte,
            }
        }
        let comparison = diff::compare_sources(vec![seed], vec![("new.tools.yaml".to_owned(), bytes)]);
        if let Some(changes) = &comparison.changes {
            let sources = &comparison.session.sources;
            for c in changes {
                for l in c.old.iter().chain(&c.new) {
                    let file = sources.get(l.span.file);
                    proptest::prop_assert!(l.span.end <= file.text.len());
                    proptest::prop_assert!(file.text.is_char_boundary(l.span.start));
                }
            }
            let _ = diff::render_human(sources, changes, None, false);
            let _ = diff::render_json(sources, changes, None);
        }
    }
}
