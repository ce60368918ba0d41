//! The `toolc` binary end to end: exit statuses, output files, determinism, formats.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn toolc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolc"))
        .args(args)
        .current_dir(repo())
        .output()
        .unwrap()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("toolc-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn files_under(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap().display().to_string();
                out.push((rel, std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn check_accepts_the_reference_manifests() {
    let o = toolc(&["check", "manifests/"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("checked"), "{}", stderr(&o));
}

#[test]
fn build_writes_every_output_and_is_deterministic() {
    let out = temp_dir("build");
    let o = toolc(&["build", "manifests/", "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let first = files_under(&out);
    let names: Vec<&str> = first.iter().map(|(n, _)| n.as_str()).collect();
    for expected in [
        "tools.rs",
        "tools.ts",
        "schemas/search_help_articles.parameters.json",
        "schemas/search_help_articles.returns.json",
        "schemas/get_cart.parameters.json",
        "providers/openai-realtime.json",
        "providers/openai-chat.json",
        "providers/openai-responses.json",
        "providers/anthropic.json",
        "providers/gemini.json",
        "providers/mcp.json",
    ] {
        assert!(names.contains(&expected), "missing {expected} in {names:?}");
    }
    // A tool without `returns` gets no returns schema.
    assert!(!names.contains(&"schemas/show_toast.returns.json"));

    // Unchanged input: nothing is rewritten, and the bytes are identical.
    let o = toolc(&["build", "manifests/", "--out", out.to_str().unwrap()]);
    assert!(o.status.success());
    assert!(stderr(&o).contains(" 0 files written"), "{}", stderr(&o));
    assert_eq!(first, files_under(&out));

    // A fresh folder gets byte-identical files too.
    let again = temp_dir("build-again");
    assert!(
        toolc(&["build", "manifests/", "--out", again.to_str().unwrap()])
            .status
            .success()
    );
    assert_eq!(first, files_under(&again));
    let _ = std::fs::remove_dir_all(out);
    let _ = std::fs::remove_dir_all(again);
}

#[test]
fn emit_selects_outputs() {
    let out = temp_dir("emit");
    let o = toolc(&[
        "build",
        "manifests/support.tools.yaml",
        "--out",
        out.to_str().unwrap(),
        "--emit",
        "schemas",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let files = files_under(&out);
    assert!(
        files
            .iter()
            .all(|(n, _)| n.starts_with("schemas/") || n == ".toolc-outputs"),
        "{files:?}"
    );
    let _ = std::fs::remove_dir_all(out);
}

/// The CLI's `--runtime-path` is the Builder's `runtime_path`: generated code goes through it,
/// and a path that is not a Rust path is an error before anything is read or written.
#[test]
fn runtime_path_is_used_and_checked() {
    let out = temp_dir("runtime-path");
    let o = toolc(&[
        "build",
        "manifests/support.tools.yaml",
        "--out",
        out.to_str().unwrap(),
        "--emit",
        "rust",
        "--runtime-path",
        "crate::rt",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rust = std::fs::read_to_string(out.join("tools.rs")).unwrap();
    assert!(
        rust.contains("crate::rt::Tool for"),
        "the runtime path is used"
    );
    assert!(!rust.contains("::toolc_runtime"));
    let _ = std::fs::remove_dir_all(&out);

    for bad in ["not a path", "Vec<u8>", "", "::"] {
        let o = toolc(&[
            "build",
            "manifests/support.tools.yaml",
            "--out",
            out.to_str().unwrap(),
            "--runtime-path",
            bad,
        ]);
        assert_eq!(o.status.code(), Some(2), "{bad:?}");
        let text = stderr(&o);
        assert!(text.contains("toolc::invalid-config"), "{bad:?}: {text}");
        assert!(!out.exists(), "nothing written for {bad:?}");
    }
}

/// The Builder refuses an invalid runtime path the same way, naming the code.
#[test]
fn the_builder_checks_the_runtime_path() {
    let out = temp_dir("builder-runtime-path");
    std::fs::create_dir_all(&out).unwrap();
    let error = toolc::Builder::new()
        .manifest(repo().join("manifests/support.tools.yaml"))
        .out_dir(&out)
        .cargo_directives(false)
        .runtime_path("my crate::rt")
        .compile()
        .unwrap_err();
    assert!(error.rendered.contains("toolc::invalid-config"), "{error}");
    assert!(
        std::fs::read_dir(&out).unwrap().next().is_none(),
        "nothing written"
    );
    let _ = std::fs::remove_dir_all(out);
}

const ONE_TOOL: &str = "version: 1\ntools:\n  - name: NAME\n    description: d\n    location: server\n    parameters: { type: object, properties: { q: { type: string } } }\n    returns: { type: object }\n";

#[test]
fn build_removes_the_files_of_a_renamed_tool_and_nothing_else() {
    let dir = temp_dir("owned");
    std::fs::create_dir_all(&dir).unwrap();
    let manifest = dir.join("a.tools.yaml");
    let out = dir.join("out");
    let out_arg = out.to_str().unwrap();
    std::fs::write(&manifest, ONE_TOOL.replace("NAME", "old_name")).unwrap();
    assert!(
        toolc(&["build", manifest.to_str().unwrap(), "--out", out_arg])
            .status
            .success()
    );
    // The user's own file in the output folder, and one in a generated folder.
    std::fs::write(out.join("README.md"), "mine").unwrap();
    std::fs::write(out.join("schemas/notes.txt"), "mine too").unwrap();
    assert!(out.join("schemas/old_name.parameters.json").exists());

    std::fs::write(&manifest, ONE_TOOL.replace("NAME", "new_name")).unwrap();
    let o = toolc(&["build", manifest.to_str().unwrap(), "--out", out_arg]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("2 files of an earlier build removed"),
        "{}",
        stderr(&o)
    );
    assert!(!out.join("schemas/old_name.parameters.json").exists());
    assert!(!out.join("schemas/old_name.returns.json").exists());
    assert!(out.join("schemas/new_name.parameters.json").exists());
    assert_eq!(
        std::fs::read_to_string(out.join("README.md")).unwrap(),
        "mine"
    );
    assert!(out.join("schemas/notes.txt").exists());

    // Emitting only some kinds leaves the others' files alone.
    let o = toolc(&[
        "build",
        manifest.to_str().unwrap(),
        "--out",
        out_arg,
        "--emit",
        "rust",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(out.join("schemas/new_name.parameters.json").exists());
    assert!(out.join("tools.ts").exists());

    // A record that points outside the folder removes nothing there.
    std::fs::write(dir.join("victim.txt"), "keep").unwrap();
    std::fs::write(
        out.join(".toolc-outputs"),
        "../victim.txt\n/etc/passwd\nschemas/../../victim.txt\n",
    )
    .unwrap();
    assert!(
        toolc(&["build", manifest.to_str().unwrap(), "--out", out_arg])
            .status
            .success()
    );
    assert!(dir.join("victim.txt").exists());
    // Nor does one that reaches outside through a folder that is a link.
    let elsewhere = dir.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("keep.json"), "{}").unwrap();
    std::os::unix::fs::symlink(&elsewhere, out.join("providers/linked")).unwrap();
    std::fs::write(out.join(".toolc-outputs"), "providers/linked/keep.json\n").unwrap();
    assert!(
        toolc(&["build", manifest.to_str().unwrap(), "--out", out_arg])
            .status
            .success()
    );
    assert!(elsewhere.join("keep.json").exists());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn check_reports_what_build_warns_about_and_deny_warnings_fails_both() {
    let dir = temp_dir("warnings");
    std::fs::create_dir_all(&dir).unwrap();
    let manifest = dir.join("w.tools.yaml");
    // A default of the wrong type: a warning, not an error.
    std::fs::write(
        &manifest,
        "version: 1\ntools:\n  - name: t\n    description: d\n    location: server\n    parameters: { type: object, properties: { n: { type: integer, default: ten } } }\n",
    )
    .unwrap();
    let m = manifest.to_str().unwrap();
    let o = toolc(&["check", m]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("toolc::invalid-default"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("checked 1 tool: ok"), "{}", stderr(&o));
    let o = toolc(&["check", "--deny-warnings", m]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = dir.join("out");
    let o = toolc(&[
        "build",
        "--deny-warnings",
        m,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(!out.exists(), "nothing is written when warnings are denied");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_file_named_twice_is_read_once_and_an_empty_one_is_an_error() {
    let o = toolc(&[
        "check",
        "manifests/",
        "manifests/support.tools.yaml",
        "./manifests/support.tools.yaml",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let dir = temp_dir("empty");
    std::fs::create_dir_all(&dir).unwrap();
    let empty = dir.join("e.tools.yaml");
    std::fs::write(&empty, "# nothing yet\n").unwrap();
    let o = toolc(&["check", empty.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("toolc::missing-field"),
        "{}",
        stderr(&o)
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_manifest_with_errors_exits_1_and_writes_nothing() {
    let out = temp_dir("fail");
    let o = toolc(&[
        "build",
        "manifests/support.tools.yaml",
        "compiler/tests/diagnostics/many-errors.tools.yaml",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        !out.exists(),
        "a failed build must not create the output folder"
    );
    let text = stderr(&o);
    assert!(text.contains("error[toolc::unknown-type]"), "{text}");
    assert!(
        text.contains("compiler/tests/diagnostics/many-errors.tools.yaml:11:24"),
        "{text}"
    );
    assert!(text.contains("7 errors"), "{text}");
    assert!(
        !text.contains("\x1b["),
        "no colour when stderr is not a terminal"
    );
}

#[test]
fn json_message_format_gives_one_object_per_diagnostic() {
    let o = toolc(&[
        "check",
        "--message-format",
        "json",
        "compiler/tests/diagnostics/many-errors.tools.yaml",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let stdout = String::from_utf8(o.stdout).unwrap();
    let items: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(items.len(), 7);
    let unknown_type = items
        .iter()
        .find(|d| d["code"] == "toolc::unknown-type")
        .unwrap();
    assert_eq!(unknown_type["severity"], "error");
    assert_eq!(unknown_type["primary"]["line"], 11);
    assert_eq!(unknown_type["primary"]["column"], 24);
    assert!(unknown_type["help"].is_string());
}

#[test]
fn usage_and_io_errors_exit_2() {
    assert_eq!(
        toolc(&["check", "no/such/file.tools.yaml"]).status.code(),
        Some(2)
    );
    assert_eq!(
        toolc(&["build", "manifests/"]).status.code(),
        Some(2),
        "--out is required"
    );
    assert_eq!(toolc(&["frobnicate"]).status.code(), Some(2));
    let o = toolc(&["schema", "manifests/", "--provider", "openai-chatt"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("openai-chat"), "{}", stderr(&o));
    let o = toolc(&["build", "manifests/", "--out", "/tmp/x", "--emit", "pdf"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn schema_prints_one_provider_file() {
    let o = toolc(&[
        "schema",
        "manifests/support.tools.yaml",
        "--provider",
        "anthropic",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let value: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<&str> = value
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names[0], "search_help_articles");
    assert_eq!(names.len(), 6);
}

#[test]
fn help_lists_the_commands() {
    let o = toolc(&["--help"]);
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    for command in [
        "check",
        "build",
        "schema",
        "manifest-schema",
        "--message-format",
    ] {
        assert!(
            text.contains(command),
            "--help does not mention {command}:\n{text}"
        );
    }
}

#[test]
fn toolc_schema_json_is_up_to_date() {
    let o = toolc(&["manifest-schema"]);
    assert!(o.status.success());
    let checked_in = std::fs::read_to_string(repo().join("toolc.schema.json")).unwrap();
    assert_eq!(
        String::from_utf8(o.stdout).unwrap(),
        checked_in,
        "toolc.schema.json is stale: run `cargo run -p toolc -- manifest-schema > toolc.schema.json`"
    );
}

/// `--gemini-schema json-schema`: Gemini gets every schema as written in
/// `parametersJsonSchema` / `responseJsonSchema` (never beside `parameters`), and the subset's
/// lowering warnings are gone; the default stays the subset; an unknown form is a usage error.
#[test]
fn gemini_schema_json_schema_declares_the_schemas_as_written() {
    let commerce = "manifests/commerce.tools.yaml";
    let subset = toolc(&["schema", commerce, "--provider", "gemini"]);
    assert!(subset.status.success(), "{}", stderr(&subset));
    let subset: serde_json::Value = serde_json::from_slice(&subset.stdout).unwrap();
    assert!(subset["functionDeclarations"][0]
        .get("parameters")
        .is_some());

    let full = toolc(&[
        "schema",
        commerce,
        "--provider",
        "gemini",
        "--gemini-schema",
        "json-schema",
    ]);
    assert!(full.status.success(), "{}", stderr(&full));
    assert!(
        !stderr(&full).contains("gemini-"),
        "no lowering warnings: {}",
        stderr(&full)
    );
    let full: serde_json::Value = serde_json::from_slice(&full.stdout).unwrap();
    let session = {
        let mut s = toolc::Session::new();
        s.add_manifest(commerce, &std::fs::read(repo().join(commerce)).unwrap());
        s.check().unwrap()
    };
    let declared = full["functionDeclarations"].as_array().unwrap();
    assert_eq!(declared.len(), session.tools.len());
    for (tool, declaration) in session.tools.iter().zip(declared) {
        assert_eq!(declaration["name"], tool.def.name.as_str());
        assert!(declaration.get("parameters").is_none(), "{declaration}");
        assert!(declaration.get("response").is_none(), "{declaration}");
        let no_arguments = tool.def.parameters["properties"]
            .as_object()
            .is_none_or(|p| p.is_empty());
        if no_arguments {
            // As in the subset: a tool without arguments is declared without a schema.
            assert!(
                declaration.get("parametersJsonSchema").is_none(),
                "{declaration}"
            );
        } else {
            let schema = &declaration["parametersJsonSchema"];
            assert_eq!(schema, &tool.def.parameters, "as written");
            jsonschema::draft202012::new(schema).expect("a JSON Schema");
        }
        match &tool.def.returns {
            Some(returns) => assert_eq!(&declaration["responseJsonSchema"], returns),
            None => assert!(declaration.get("responseJsonSchema").is_none()),
        }
    }
    // `$ref`s stay, which the subset has to inline.
    assert!(full.to_string().contains("\"$ref\""));

    // `toolc check` and `build` take it too; `check` then has no Gemini warnings.
    let dir = temp_dir("gemini-warnings");
    std::fs::create_dir_all(&dir).unwrap();
    let lossy = dir.join("lossy.tools.yaml");
    std::fs::write(
        &lossy,
        "version: 1\ntools:\n  - name: pick\n    description: Pick a size.\n    location: server\n    parameters:\n      type: object\n      properties:\n        size: { type: integer, enum: [1, 2, 3] }\n        step: { type: number, multipleOf: 0.5 }\n",
    )
    .unwrap();
    let lossy = lossy.to_str().unwrap();
    let warned = toolc(&["check", lossy]);
    let quiet = toolc(&["check", lossy, "--gemini-schema", "json-schema"]);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(quiet.status.success());
    assert!(
        !stderr(&quiet).contains("toolc::gemini-"),
        "{}",
        stderr(&quiet)
    );
    assert!(
        stderr(&warned).contains("toolc::gemini-"),
        "{}",
        stderr(&warned)
    );
    let out = temp_dir("gemini-json-schema");
    let built = toolc(&[
        "build",
        commerce,
        "--out",
        out.to_str().unwrap(),
        "--emit",
        "providers",
        "--gemini-schema",
        "json-schema",
    ]);
    assert!(built.status.success(), "{}", stderr(&built));
    let written = std::fs::read_to_string(out.join("providers/gemini.json")).unwrap();
    assert!(written.contains("parametersJsonSchema"));
    let _ = std::fs::remove_dir_all(&out);

    let wrong = toolc(&["check", commerce, "--gemini-schema", "openapi"]);
    assert_eq!(wrong.status.code(), Some(2));
    assert!(
        stderr(&wrong).contains("subset or json-schema"),
        "{}",
        stderr(&wrong)
    );
}

/// `--schemas bundle` writes every schema into `schemas/tools.json`, each exactly the document
/// of its own file plus that file's `$id`; a validator given the bundle finds each schema by
/// its `$id`, with its `$defs` references resolved inside it. Switching back removes the bundle
/// and writes the files again.
#[test]
fn schemas_bundle_holds_every_schema_file() {
    let files = temp_dir("schemas-files");
    let bundle = temp_dir("schemas-bundle");
    let o = toolc(&["build", "manifests/", "--out", files.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = toolc(&[
        "build",
        "manifests/",
        "--schemas",
        "bundle",
        "--out",
        bundle.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));

    let written = files_under(&bundle);
    let schema_files: Vec<&String> = written
        .iter()
        .map(|(path, _)| path)
        .filter(|p| p.starts_with("schemas/"))
        .collect();
    assert_eq!(schema_files, ["schemas/tools.json"]);
    // Everything else is what the default layout writes.
    let others = |all: Vec<(String, Vec<u8>)>| -> Vec<(String, Vec<u8>)> {
        all.into_iter()
            .filter(|(p, _)| !p.starts_with("schemas/") && !p.starts_with(".toolc"))
            .collect()
    };
    assert!(others(files_under(&files)) == others(files_under(&bundle)));

    let text = std::fs::read_to_string(bundle.join("schemas/tools.json")).unwrap();
    let document: serde_json::Value = serde_json::from_str(&text).unwrap();
    let defs = document["$defs"].as_object().expect("$defs");
    let mut expected = 0;
    for (path, bytes) in files_under(&files.join("schemas")) {
        expected += 1;
        let name = path.trim_end_matches(".json");
        let mut embedded = defs
            .get(name)
            .unwrap_or_else(|| panic!("{name} in the bundle"))
            .clone();
        let own: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        if own.get("$id").is_none() {
            let id = embedded
                .as_object_mut()
                .unwrap()
                .shift_remove("$id")
                .expect("an $id");
            assert_eq!(id, serde_json::json!(path));
        }
        assert_eq!(embedded, own, "{name}");
    }
    assert_eq!(defs.len(), expected);
    assert!(expected > 10, "{expected} schema files");

    // Valid 2020-12, and each schema reachable by its file's `$id`.
    assert!(jsonschema::draft202012::meta::is_valid(&document));
    for (name, schema) in defs {
        // The bundle, entered through one schema's `$id`.
        let mut by_id = document.clone();
        by_id["$ref"] = schema["$id"].clone();
        let validator = jsonschema::draft202012::options()
            .with_base_uri("https://toolc.invalid/schemas/tools.json")
            .build(&by_id)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        if name.ends_with(".parameters") {
            // `{}` is valid only for tools without required arguments: the schema is applied.
            let required = schema
                .get("required")
                .and_then(serde_json::Value::as_array)
                .is_some_and(|r| !r.is_empty());
            assert_eq!(
                validator.is_valid(&serde_json::json!({})),
                !required,
                "{name}"
            );
            assert!(!validator.is_valid(&serde_json::json!(7)), "{name}");
        }
    }

    // Back to the default: the bundle goes, the files come back.
    let o = toolc(&["build", "manifests/", "--out", bundle.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!bundle.join("schemas/tools.json").exists());
    assert!(files_under(&files) == files_under(&bundle));
    let o = toolc(&["build", "manifests/", "--schemas", "zip", "--out", "x"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("use files or bundle"), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&files);
    let _ = std::fs::remove_dir_all(&bundle);
}
