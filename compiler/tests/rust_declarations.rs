//! The generated module's `declarations(provider)` is the provider files of `toolc build`, byte
//! for byte: for the bundled manifests (each alone and all together), with either Gemini schema
//! form, from the CLI (`--emit` all, or `rust` alone) and from the build.rs `Builder`. The
//! strings are read back out of the generated Rust with `syn`, as rustc would see them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use toolc::emit::providers::{GeminiSchema, Provider};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn toolc(args: &[&str]) -> Output {
    let o = Command::new(env!("CARGO_BIN_EXE_toolc"))
        .args(args)
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    o
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("toolc-decl-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn bundled_manifests() -> Vec<String> {
    let mut found: Vec<String> = std::fs::read_dir(repo().join("manifests"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".tools.yaml"))
        .map(|name| format!("manifests/{name}"))
        .collect();
    found.sort();
    assert!(found.len() >= 2, "{found:?}");
    found
}

/// What `declarations(provider)` returns in the generated file `code`, per provider name: the
/// `match` arms of `declarations` followed to the consts they name.
fn declarations_in(code: &str) -> BTreeMap<String, String> {
    let file = syn::parse_file(code).expect("the generated module parses");
    let mut consts = BTreeMap::new();
    let mut arms = Vec::new();
    for item in &file.items {
        match item {
            syn::Item::Const(c) => {
                if let syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) = &*c.expr
                {
                    consts.insert(c.ident.to_string(), s.value());
                }
            }
            syn::Item::Fn(f) if f.sig.ident == "declarations" => {
                let Some(syn::Stmt::Expr(syn::Expr::Match(m), None)) = f.block.stmts.last() else {
                    panic!("`declarations` ends with its match");
                };
                for arm in &m.arms {
                    let syn::Pat::Path(variant) = &arm.pat else {
                        panic!("an arm per provider")
                    };
                    let syn::Expr::Path(constant) = &*arm.body else {
                        panic!("each arm names a const")
                    };
                    let variant = variant.path.segments.last().unwrap().ident.to_string();
                    let constant = constant.path.get_ident().unwrap().to_string();
                    arms.push((variant, constant));
                }
            }
            _ => {}
        }
    }
    let by_variant: BTreeMap<String, Provider> = Provider::ALL
        .into_iter()
        .map(|p| (format!("{p:?}"), p))
        .collect();
    arms.into_iter()
        .map(|(variant, constant)| {
            let provider = by_variant[&variant];
            (provider.name().to_owned(), consts[&constant].clone())
        })
        .collect()
}

/// The files `toolc build` wrote under `out/providers/`, by provider name.
fn provider_files(out: &Path) -> BTreeMap<String, String> {
    std::fs::read_dir(out.join("providers"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|path| {
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&path).unwrap())
        })
        .collect()
}

#[test]
fn tools_rs_declarations_are_the_provider_files() {
    let mut inputs: Vec<Vec<String>> = bundled_manifests().into_iter().map(|m| vec![m]).collect();
    inputs.push(vec!["manifests/".into()]);
    for input in &inputs {
        for gemini in GeminiSchema::NAMES {
            let out = temp_dir("all");
            let out_text = out.to_str().unwrap();
            let mut args = vec!["build"];
            args.extend(input.iter().map(String::as_str));
            args.extend(["--out", out_text, "--gemini-schema", gemini]);
            toolc(&args);
            let files = provider_files(&out);
            // Every provider file the CLI writes, and no other.
            let names: Vec<&str> = Provider::ALL.iter().map(|p| p.name()).collect();
            assert_eq!(files.keys().map(String::as_str).collect::<Vec<_>>(), {
                let mut sorted = names.clone();
                sorted.sort();
                sorted
            });
            let tools_rs = std::fs::read_to_string(out.join("tools.rs")).unwrap();
            let embedded = declarations_in(&tools_rs);
            for (name, text) in &files {
                assert!(
                    embedded.get(name) == Some(text),
                    "{input:?} --gemini-schema {gemini}: declarations for {name} differ from providers/{name}.json"
                );
            }
            assert_eq!(embedded.len(), files.len());

            // `--emit rust` alone lowers the providers itself: the same module.
            let rust_only = temp_dir("rust-only");
            let mut args = vec!["build"];
            args.extend(input.iter().map(String::as_str));
            args.extend(["--out", rust_only.to_str().unwrap()]);
            args.extend(["--gemini-schema", gemini, "--emit", "rust"]);
            toolc(&args);
            assert!(!rust_only.join("providers").exists());
            assert!(
                std::fs::read_to_string(rust_only.join("tools.rs")).unwrap() == tools_rs,
                "{input:?}: tools.rs of --emit rust differs"
            );
            let _ = std::fs::remove_dir_all(&out);
            let _ = std::fs::remove_dir_all(&rust_only);
        }
    }
}

#[test]
fn the_builders_module_declares_what_the_cli_writes() {
    for manifest in bundled_manifests() {
        for (form, name) in [
            (GeminiSchema::Subset, "subset"),
            (GeminiSchema::JsonSchema, "json-schema"),
        ] {
            let cli = temp_dir("cli");
            toolc(&[
                "build",
                &manifest,
                "--out",
                cli.to_str().unwrap(),
                "--emit",
                "providers",
                "--gemini-schema",
                name,
            ]);
            let built = temp_dir("builder");
            let report = toolc::Builder::new()
                .manifest(repo().join(&manifest))
                .gemini_schema(form)
                .out_dir(&built)
                .cargo_directives(false)
                .compile_report()
                .unwrap();
            let module = std::fs::read_to_string(&report[0].path).unwrap();
            assert!(
                declarations_in(&module) == provider_files(&cli),
                "{manifest} ({name}): the Builder's declarations differ from the CLI's files"
            );
            let _ = std::fs::remove_dir_all(&cli);
            let _ = std::fs::remove_dir_all(&built);
        }
    }
}

/// `tools.rs` holds the lowered declarations, so `--emit rust` alone reports what lowering them
/// dropped, once; with the provider files too, still once.
#[test]
fn emit_rust_reports_the_declarations_warnings_once() {
    let dir = temp_dir("warn");
    std::fs::create_dir_all(&dir).unwrap();
    let manifest = dir.join("levels.tools.yaml");
    std::fs::write(
        &manifest,
        "version: 1\ntools:\n  - name: set_level\n    description: Set the level.\n    location: server\n    parameters:\n      type: object\n      properties:\n        level: { type: integer, enum: [1, 2, 3] }\n      required: [level]\n",
    )
    .unwrap();
    for emit in ["rust", "rust,providers", "providers,rust"] {
        let out = dir.join(format!("out-{}", emit.replace(',', "-")));
        let o = toolc(&[
            "build",
            manifest.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--emit",
            emit,
        ]);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(
            stderr.matches("toolc::gemini-non-string-enum").count(),
            1,
            "--emit {emit}: {stderr}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
