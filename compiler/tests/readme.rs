//! The README cannot drift from what runs: its quick start is what CI runs, and its "Use it in
//! your crate" section is the crate in `tests/external/` (dependency lines, `build.rs`,
//! `src/main.rs`) that `scripts/test` builds and runs with the commands the README shows; every
//! Rust block is a region of a file the tests compile, carrying the `use` lines of the toolc and
//! library names it uses, and every dependency line states a version or a path.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn read(path: &str) -> String {
    std::fs::read_to_string(repo().join(path)).unwrap()
}

/// The text of the `## title` section, up to the next `## `.
fn section<'a>(readme: &'a str, title: &str) -> &'a str {
    let start = readme
        .find(&format!("\n## {title}\n"))
        .unwrap_or_else(|| panic!("the README has no section `{title}`"));
    let rest = &readme[start + 1..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |e| e + 4);
    &rest[..end]
}

/// The fenced code blocks of `text` with their info string.
fn blocks(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some(info) = line.strip_prefix("```") {
            let mut body = String::new();
            for inner in lines.by_ref() {
                if inner.starts_with("```") {
                    break;
                }
                body.push_str(inner);
                body.push('\n');
            }
            out.push((info.trim().to_owned(), body));
        }
    }
    out
}

fn meaningful_lines(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

#[test]
fn use_it_in_your_crate_is_the_external_crate() {
    let readme = read("README.md");
    let text = section(&readme, "Use it in your crate");
    let blocks = blocks(text);

    // The dependency lines, with the README's `../toolc/` clone standing for the repository.
    let (_, toml) = blocks
        .iter()
        .find(|(info, _)| info == "toml")
        .expect("a toml block");
    let shown: Vec<String> = meaningful_lines(toml)
        .into_iter()
        .map(|l| l.replace("../toolc/", "../../"))
        .collect();
    // Its `[dependencies]` and `[build-dependencies]`: what a user's crate needs (its
    // `[dev-dependencies]` serve its tests of the README's other tasks).
    let cargo_toml = read("tests/external/Cargo.toml");
    let actual: Vec<String> = meaningful_lines(&cargo_toml)
        .into_iter()
        .skip_while(|l| l != "[dependencies]")
        .take_while(|l| !l.starts_with('[') || l == "[dependencies]" || l == "[build-dependencies]")
        .collect();
    assert_eq!(
        shown, actual,
        "README dependency lines vs tests/external/Cargo.toml"
    );

    // `build.rs` and `src/main.rs`, whole.
    for file in ["build.rs", "src/main.rs"] {
        let code = read(&format!("tests/external/{file}"));
        let shown = blocks
            .iter()
            .find(|(info, body)| info == "rust" && body.starts_with(&format!("// {file}")))
            .unwrap_or_else(|| panic!("no rust block starting with `// {file}`"));
        assert_eq!(shown.1, code, "README vs tests/external/{file}");
    }

    // The relay program for your own tools, whole.
    let relay = read("examples/realtime-relay/examples/own_tools.rs");
    assert!(
        blocks
            .iter()
            .any(|(info, body)| info == "rust" && *body == relay),
        "README vs examples/realtime-relay/examples/own_tools.rs"
    );

    // The command CI runs is the one shown.
    let (_, sh) = blocks
        .iter()
        .find(|(info, _)| info == "sh")
        .expect("a sh block");
    let script = read("scripts/test");
    for command in meaningful_lines(sh) {
        assert!(
            script.contains(&command),
            "scripts/test does not run `{command}`"
        );
    }
}

#[test]
fn the_quick_start_is_what_ci_runs() {
    let readme = read("README.md");
    let text = section(&readme, "Quick start");
    let (_, sh) = blocks(text)
        .into_iter()
        .find(|(info, _)| info == "sh")
        .expect("a sh block");
    let commands = meaningful_lines(&sh);
    assert_eq!(commands.len(), 2, "two set-up commands: {commands:?}");
    // The second runs every test, exactly as CI: `.ci/run` sets up and runs it.
    assert_eq!(commands[1], "scripts/test");
    let ci = read(".ci/run");
    assert!(ci.contains("scripts/test"), "{ci}");

    // The first builds the bundled manifests; run it (into a temporary folder).
    let words: Vec<&str> = commands[0].split_whitespace().collect();
    assert_eq!(
        &words[..4],
        ["cargo", "run", "-p", "toolc"],
        "{}",
        commands[0]
    );
    assert_eq!(&words[4..], ["--", "build", "manifests/", "--out", "out"]);
    let out = std::env::temp_dir().join(format!("toolc-readme-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let status = Command::new(env!("CARGO_BIN_EXE_toolc"))
        .args(["build", "manifests/", "--out"])
        .arg(&out)
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    for file in ["tools.rs", "tools.ts", "providers/openai-realtime.json"] {
        assert!(out.join(file).is_file(), "{file}");
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// Every dependency line of the README's `toml` blocks says what a user needs to copy (a
/// version or a path, never the workspace's), and outside "Use it in your crate" (which is
/// `tests/external`) each is a line of `tests/readme/Cargo.toml`, whose snippets it builds.
#[test]
fn every_dependency_line_of_the_readme_is_built_as_shown() {
    let readme = read("README.md");
    let own = section(&readme, "Use it in your crate");
    let snippets_toml = read("tests/readme/Cargo.toml");
    let built: Vec<String> = meaningful_lines(&snippets_toml);
    let mut checked = 0;
    for (info, body) in blocks(&readme) {
        if info != "toml" {
            continue;
        }
        let in_own_section = own.contains(&body);
        for line in meaningful_lines(&body) {
            if line.starts_with('[') {
                continue;
            }
            checked += 1;
            assert!(
                (line.contains("version = ") || line.contains("path = ") || line.contains("= \""))
                    && !line.contains("workspace"),
                "README dependency line without a version or path: {line}"
            );
            if !in_own_section {
                assert!(
                    built.contains(&line),
                    "README dependency line that tests/readme/Cargo.toml does not build: {line}"
                );
            }
        }
    }
    assert!(checked >= 10, "{checked} dependency lines");
}

/// Where the README's Rust may come from: files the tests compile and run.
const COMPILED_SOURCES: &[&str] = &[
    "tests/readme/build.rs",
    "tests/readme/src/builder.rs",
    "tests/readme/src/typed_registry.rs",
    "tests/readme/src/fn_tools.rs",
    "tests/readme/src/relay.rs",
    "tests/readme/src/telemetry.rs",
    "tests/readme/src/mcp.rs",
    "tests/readme/src/toolsets.rs",
    "tests/external/build.rs",
    "tests/external/src/main.rs",
    "tests/external/tests/readme_tasks.rs",
    "examples/realtime-relay/examples/own_tools.rs",
];

/// `lines` with the indentation they all share removed (blank lines ignored).
fn dedent(lines: &[&str]) -> Vec<String> {
    let indent = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    lines
        .iter()
        .map(|l| l.get(indent..).unwrap_or("").to_owned())
        .collect()
}

#[test]
fn every_rust_block_of_the_readme_is_compiled_code() {
    let readme = read("README.md");
    let sources: Vec<(&str, String)> = COMPILED_SOURCES.iter().map(|p| (*p, read(p))).collect();
    let mut unmatched = Vec::new();
    for (info, body) in blocks(&readme) {
        if info != "rust" {
            continue;
        }
        let shown: Vec<&str> = body.lines().collect();
        let found = sources.iter().any(|(_, code)| {
            let lines: Vec<&str> = code.lines().collect();
            lines
                .windows(shown.len())
                .any(|window| dedent(window) == shown)
        });
        if !found {
            unmatched.push(body);
        }
    }
    assert!(
        unmatched.is_empty(),
        "README rust blocks that are not a region of {COMPILED_SOURCES:?} (copy the code from \
         there, or add the snippet to tests/readme/):\n{}",
        unmatched.join("\n---\n")
    );
}

/// Names a snippet may use only with its `use` line: a reader copies the block, and a bare
/// `Provider` or `TurnRunner` does not say where it comes from.
const NEEDS_IMPORT: &[&str] = &[
    "Anthropic",
    "ApprovalGrant",
    "Arc",
    "CallContext",
    "ChatCompletions",
    "Codec",
    "Handshake",
    "McpServer",
    "McpTools",
    "Principal",
    "Provider",
    "Refusal",
    "Registry",
    "RegistryError",
    "RelayConfig",
    "RelayService",
    "Router",
    "Session",
    "SessionConfig",
    "ToolError",
    "TurnRunner",
    "Value",
    "client_fn",
    "executor_fn",
    "load_definitions",
    "tool",
    "tools",
];

/// The identifiers of `code` outside comments and string literals, each with whether a `::`
/// comes right before it (a path names its own origin).
fn identifiers(code: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    for line in code.lines() {
        let line = line.split("//").next().unwrap_or("");
        let mut in_string = false;
        let mut word = String::new();
        let mut before = String::new();
        for c in line.chars().chain(std::iter::once(' ')) {
            if c == '"' {
                in_string = !in_string;
            }
            if !in_string && (c.is_ascii_alphanumeric() || c == '_') {
                word.push(c);
                continue;
            }
            if !word.is_empty() {
                out.push((std::mem::take(&mut word), before.ends_with("::")));
            }
            before.push(c);
        }
    }
    out
}

#[test]
fn every_rust_block_imports_the_names_it_uses() {
    let readme = read("README.md");
    let mut missing = Vec::new();
    for (info, body) in blocks(&readme) {
        if info != "rust" {
            continue;
        }
        let imports: Vec<String> = body
            .lines()
            .filter(|l| l.trim_start().starts_with("use ") || l.trim_start().starts_with("mod "))
            .flat_map(|l| identifiers(l).into_iter().map(|(w, _)| w))
            .collect();
        // Items the block defines itself are not imported.
        let defined: Vec<String> = body
            .lines()
            .filter_map(|l| {
                let l = l.trim_start().trim_start_matches("pub ");
                [
                    "fn ",
                    "struct ",
                    "async fn ",
                    "type ",
                    "mod ",
                    "let mut ",
                    "let ",
                ]
                .iter()
                .find_map(|k| l.strip_prefix(k))
                .map(|rest| identifiers(rest).into_iter().next().map(|(w, _)| w))
            })
            .flatten()
            .collect();
        let body_lines: String = body
            .lines()
            .filter(|l| !l.trim_start().starts_with("use "))
            .collect::<Vec<_>>()
            .join("\n");
        for (word, qualified) in identifiers(&body_lines) {
            if qualified || !NEEDS_IMPORT.contains(&word.as_str()) {
                continue;
            }
            if !imports.contains(&word) && !defined.contains(&word) {
                missing.push(format!("`{word}` in:\n{body}"));
                break;
            }
        }
    }
    assert!(
        missing.is_empty(),
        "README rust blocks using names without their `use` lines:\n{}",
        missing.join("\n---\n")
    );
}
