//! Compile-pass and compile-fail suites for `#[tool]` and `tools!`. Each fail case is one kind of
//! error, with its expected stderr beside it; `TRYBUILD=overwrite` rewrites them and `git diff`
//! is the review.

#[test]
fn ui() {
    // trybuild builds the cases as a package of its own (`toolc-macros-tests`) under
    // `target/`, so manifest paths are resolved against this crate's directory explicitly.
    std::env::set_var(
        "TOOLC_MANIFEST_DIR",
        format!("toolc-macros-tests={}", env!("CARGO_MANIFEST_DIR")),
    );
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
