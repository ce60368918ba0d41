//! Golden tests of diagnostics: one manifest (or one folder of manifests compiled together) per
//! error kind in `tests/diagnostics/`, each beside the exact text toolc must print for it.
//! `TOOLC_BLESS=1 cargo test -p toolc --test diagnostics` rewrites the expected files; review the
//! diff like code.

use std::path::{Path, PathBuf};

use toolc::Session;

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/diagnostics");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() || p.to_string_lossy().ends_with(".tools.yaml"))
        .collect();
    found.sort();
    found
}

fn compile(fixture: &Path) -> Session {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut files = if fixture.is_dir() {
        std::fs::read_dir(fixture)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect()
    } else {
        vec![fixture.to_path_buf()]
    };
    files.sort();
    let mut session = Session::new();
    for file in files {
        let name = file.strip_prefix(&base).unwrap().display().to_string();
        session.add_manifest(&name, &std::fs::read(&file).unwrap());
    }
    // What `toolc check` reports: warnings of the outputs too, when the manifest has no errors.
    if let Some(ir) = session.check() {
        toolc::emit::output_warnings(&ir, &mut session.diagnostics);
    }
    session
}

fn expected_path(fixture: &Path) -> PathBuf {
    let name = fixture.file_name().unwrap().to_string_lossy();
    let stem = name.trim_end_matches(".tools.yaml");
    fixture.with_file_name(format!("{stem}.stderr"))
}

#[test]
fn every_error_kind_has_its_golden_diagnostic() {
    let bless = std::env::var_os("TOOLC_BLESS").is_some();
    let mut failures = Vec::new();
    for fixture in fixtures() {
        let session = compile(&fixture);
        let rendered = session.render(false);
        let expected_file = expected_path(&fixture);
        // The fixture is named after the code it demonstrates (except the "many" fixture).
        let name = expected_file
            .file_stem()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        // `missing-field.empty` is a second fixture of `toolc::missing-field`.
        let code_name = name.split('.').next().unwrap_or(&name);
        if name != "many-errors" {
            let code = format!("toolc::{code_name}");
            assert!(
                session.diagnostics.iter().any(|d| d.code == code),
                "{} does not produce {code}:\n{rendered}",
                fixture.display()
            );
        }
        assert!(
            session.diagnostics.has_errors()
                || matches!(
                    code_name,
                    "unknown-keyword"
                        | "invalid-default"
                        | "untyped-rust"
                        | "duplicate-window-unused"
                        | "ambiguous-recursion"
                ),
            "{name} must fail"
        );
        if bless {
            std::fs::write(&expected_file, &rendered).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&expected_file).unwrap_or_default();
        if expected != rendered {
            failures.push(format!(
                "--- {} (expected)\n{expected}\n+++ actual\n{rendered}",
                expected_file.display()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "diagnostics changed (TOOLC_BLESS=1 to accept):\n{}",
        failures.join("\n")
    );
}

#[test]
fn all_problems_of_a_manifest_are_reported_at_once() {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/diagnostics/many-errors.tools.yaml");
    let session = compile(&fixture);
    let mut codes: Vec<&str> = session.diagnostics.iter().map(|d| d.code).collect();
    codes.sort();
    assert_eq!(
        codes,
        [
            "toolc::duplicate-name",
            "toolc::empty-description",
            "toolc::invalid-timeout",
            "toolc::undeclared-required",
            "toolc::unknown-field",
            "toolc::unknown-location",
            "toolc::unknown-type",
        ]
    );
}

#[test]
fn every_diagnostic_points_at_a_line_and_column() {
    for fixture in fixtures() {
        let session = compile(&fixture);
        for d in session.diagnostics.iter() {
            let label = d
                .primary
                .as_ref()
                .unwrap_or_else(|| panic!("{} has no position", d.code));
            let file = session.sources.get(label.span.file);
            let (line, col) = file.line_col(label.span.start);
            assert!(line >= 1 && col >= 1);
            assert!(d.help.is_some(), "{} has no help", d.code);
        }
    }
}
