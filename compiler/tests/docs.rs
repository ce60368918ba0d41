//! The documentation cannot drift from what runs. It is the README (the front door) and the book
//! in `docs/`. The README's quick start is what CI runs; the book's "Use it in your crate" page
//! (`docs/install.md`) is the crate in `tests/external/` (dependency lines, `build.rs`,
//! `src/main.rs`) that `scripts/test` builds and runs with the commands the page shows, and the
//! README's example of it is that crate's text too; every Rust block of every page is a region of a
//! file the tests compile, carrying the `use` lines of the toolc and library names it uses; every
//! dependency line states a version or a path; every relative link reaches a file (and a heading)
//! that exists.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn read(path: &str) -> String {
    std::fs::read_to_string(repo().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The book's "Use it in your crate" page: the crate in `tests/external/`.
const INSTALL_PAGE: &str = "docs/install.md";

/// The pages: the README and every `docs/*.md`, as (repository path, text).
fn pages() -> Vec<(String, String)> {
    let mut book: Vec<String> = std::fs::read_dir(repo().join("docs"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/{name}"))
        .collect();
    book.sort();
    assert!(
        book.len() >= 10 && book.contains(&"docs/README.md".to_owned()),
        "{book:?}"
    );
    std::iter::once("README.md".to_owned())
        .chain(book)
        .map(|path| {
            let text = read(&path);
            (path, text)
        })
        .collect()
}

/// The text of the `## title` section, up to the next `## `.
fn section<'a>(readme: &'a str, title: &str) -> &'a str {
    let start = readme
        .find(&format!("\n## {title}\n"))
        .unwrap_or_else(|| panic!("no section `{title}`"));
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

/// The fenced code blocks of every page, as (page, info string, body).
fn every_block() -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for (page, text) in pages() {
        for (info, body) in blocks(&text) {
            out.push((page.clone(), info, body));
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
    let text = read(INSTALL_PAGE);
    assert!(
        text.starts_with("# Use it in your crate\n"),
        "{INSTALL_PAGE}"
    );
    let blocks = blocks(&text);

    // The dependency lines, with the page's `../toolc/` clone standing for the repository.
    let (_, toml) = blocks
        .iter()
        .find(|(info, _)| info == "toml")
        .expect("a toml block");
    let shown: Vec<String> = meaningful_lines(toml)
        .into_iter()
        .map(|l| l.replace("../toolc/", "../../"))
        .collect();
    // Its `[dependencies]` and `[build-dependencies]`: what a user's crate needs (its
    // `[dev-dependencies]` serve its tests of the book's other tasks).
    let cargo_toml = read("tests/external/Cargo.toml");
    let actual: Vec<String> = meaningful_lines(&cargo_toml)
        .into_iter()
        .skip_while(|l| l != "[dependencies]")
        .take_while(|l| !l.starts_with('[') || l == "[dependencies]" || l == "[build-dependencies]")
        .collect();
    assert_eq!(
        shown, actual,
        "{INSTALL_PAGE} dependency lines vs tests/external/Cargo.toml"
    );

    // `build.rs` and `src/main.rs`, whole.
    for file in ["build.rs", "src/main.rs"] {
        let code = read(&format!("tests/external/{file}"));
        let shown = blocks
            .iter()
            .find(|(info, body)| info == "rust" && body.starts_with(&format!("// {file}")))
            .unwrap_or_else(|| panic!("no rust block starting with `// {file}`"));
        assert_eq!(shown.1, code, "{INSTALL_PAGE} vs tests/external/{file}");
    }

    // The relay program for your own tools, whole.
    let relay = read("examples/realtime-relay/examples/own_tools.rs");
    assert!(
        blocks
            .iter()
            .any(|(info, body)| info == "rust" && *body == relay),
        "{INSTALL_PAGE} vs examples/realtime-relay/examples/own_tools.rs"
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

/// Every dependency line of the pages' `toml` blocks says what a user needs to copy (a version
/// or a path, never the workspace's), and outside the blocks of "Use it in your crate" (which
/// is `tests/external`) each is a line of `tests/readme/Cargo.toml`, whose snippets it builds.
#[test]
fn every_dependency_line_of_the_docs_is_built_as_shown() {
    let own = read(INSTALL_PAGE);
    let snippets_toml = read("tests/readme/Cargo.toml");
    let built: Vec<String> = meaningful_lines(&snippets_toml);
    let mut checked = 0;
    for (page, text) in pages() {
        for (info, body) in blocks(&text) {
            if info != "toml" {
                continue;
            }
            let in_own_section = blocks(&own).contains(&(info, body.clone()));
            for line in meaningful_lines(&body) {
                if line.starts_with('[') {
                    continue;
                }
                checked += 1;
                assert!(
                    (line.contains("version = ")
                        || line.contains("path = ")
                        || line.contains("= \""))
                        && !line.contains("workspace"),
                    "{page}: dependency line without a version or path: {line}"
                );
                if !in_own_section {
                    assert!(
                        built.contains(&line),
                        "{page}: dependency line that tests/readme/Cargo.toml does not build: \
                         {line}"
                    );
                }
            }
        }
    }
    assert!(checked >= 16, "{checked} dependency lines");
}

/// Where the pages' Rust may come from: files the tests compile and run.
const COMPILED_SOURCES: &[&str] = &[
    "tests/readme/build.rs",
    "tests/readme/src/builder.rs",
    "tests/readme/src/typed_registry.rs",
    "tests/readme/src/fn_tools.rs",
    "tests/readme/src/relay.rs",
    "tests/readme/src/telemetry.rs",
    "tests/readme/src/mcp.rs",
    "tests/readme/src/mcp_oauth.rs",
    "tests/readme/src/mcp_oauth_server.rs",
    "tests/readme/src/toolsets.rs",
    "tests/readme/src/gpt_live.rs",
    "tests/readme/src/gpt_live_chat.rs",
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
fn every_rust_block_of_the_docs_is_compiled_code() {
    let sources: Vec<(&str, String)> = COMPILED_SOURCES.iter().map(|p| (*p, read(p))).collect();
    let mut unmatched = Vec::new();
    let mut checked = 0;
    for (page, info, body) in every_block() {
        if info != "rust" {
            continue;
        }
        checked += 1;
        let shown: Vec<&str> = body.lines().collect();
        let found = sources.iter().any(|(_, code)| {
            let lines: Vec<&str> = code.lines().collect();
            lines
                .windows(shown.len())
                .any(|window| dedent(window) == shown)
        });
        if !found {
            unmatched.push(format!("{page}:\n{body}"));
        }
    }
    assert!(checked >= 18, "{checked} rust blocks");
    assert!(
        unmatched.is_empty(),
        "rust blocks that are not a region of {COMPILED_SOURCES:?} (copy the code from \
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
    let mut missing = Vec::new();
    for (page, info, body) in every_block() {
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
                missing.push(format!("`{word}` in {page}:\n{body}"));
                break;
            }
        }
    }
    assert!(
        missing.is_empty(),
        "rust blocks using names without their `use` lines:\n{}",
        missing.join("\n---\n")
    );
}

/// The README's first example is the crate of "Use it in your crate": its manifest is a region
/// of `tests/external/orders.tools.yaml` and its dependency lines are that page's (its Rust is
/// checked with every other block's, above).
#[test]
fn the_front_door_example_is_the_external_crate() {
    let readme = read("README.md");
    let text = section(&readme, "One example per entry point");
    let blocks = blocks(text);
    let manifest = read("tests/external/orders.tools.yaml");
    let (_, yaml) = blocks
        .iter()
        .find(|(info, _)| info == "yaml")
        .expect("a yaml block");
    assert!(
        manifest.contains(yaml.as_str()),
        "the README's manifest is not a region of tests/external/orders.tools.yaml:\n{yaml}"
    );
    let (_, toml) = blocks
        .iter()
        .find(|(info, _)| info == "toml")
        .expect("a toml block");
    let install = read(INSTALL_PAGE);
    assert!(
        install.contains(&format!("```toml\n{toml}```\n")),
        "the README's dependency lines are not those of {INSTALL_PAGE}:\n{toml}"
    );
}

/// Pages linked before they exist (none now).
const PENDING_PAGES: &[&str] = &[];

/// `text` without its fenced code blocks and inline code spans, where `[..](..)` is no link.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push_str(line);
            out.push('\n');
        }
    }
    // Inline code spans may run over a line break.
    let mut plain = String::new();
    for (i, part) in out.split('`').enumerate() {
        if i % 2 == 0 {
            plain.push_str(part);
        }
    }
    plain
}

/// The anchors GitHub gives the headings of `text`: lower case, punctuation dropped, spaces as
/// `-`, a repeated one with `-1`, `-2`, ...
fn anchors(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let title = line.trim_start_matches('#');
        if fenced || title.len() == line.len() || !title.starts_with(' ') {
            continue;
        }
        let slug: String = title
            .trim()
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut unique = slug.clone();
        let mut n = 0;
        while out.contains(&unique) {
            n += 1;
            unique = format!("{slug}-{n}");
        }
        out.push(unique);
    }
    out
}

/// The targets of the inline links `[text](target)` of `text`, outside code.
fn link_targets(text: &str) -> Vec<String> {
    let prose = prose(text);
    prose
        .match_indices("](")
        .filter_map(|(at, _)| {
            let rest = &prose[at + 2..];
            rest.find(')').map(|end| rest[..end].trim().to_owned())
        })
        .collect()
}

/// Every relative link of the README and the book reaches a file or folder of the repository,
/// and where it names a heading (`page.md#heading`, `#heading`), that heading.
#[test]
fn every_relative_link_of_the_docs_resolves() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for (page, text) in pages() {
        let dir = Path::new(&page).parent().unwrap().to_path_buf();
        for target in link_targets(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (path, anchor) = match target.split_once('#') {
                Some((path, anchor)) => (path, Some(anchor)),
                None => (target.as_str(), None),
            };
            // The linked file, as a path from the repository's root (`..` resolved).
            let mut file = if path.is_empty() {
                PathBuf::from(&page)
            } else {
                dir.clone()
            };
            let mut escapes = false;
            for part in Path::new(path).components() {
                match part {
                    std::path::Component::ParentDir => escapes |= !file.pop(),
                    std::path::Component::Normal(name) => file.push(name),
                    _ => {}
                }
            }
            if escapes {
                broken.push(format!("{page}: `{target}` leaves the repository"));
                continue;
            }
            let shown = file.to_string_lossy().replace('\\', "/");
            if PENDING_PAGES.contains(&shown.as_str()) {
                continue;
            }
            if !repo().join(&file).exists() {
                broken.push(format!("{page}: `{target}`: no {shown}"));
                continue;
            }
            if let Some(anchor) = anchor {
                let headings = anchors(&read(&shown));
                if !headings.iter().any(|h| h == anchor) {
                    broken.push(format!(
                        "{page}: `{target}`: {shown} has no heading `#{anchor}` ({headings:?})"
                    ));
                }
            }
        }
    }
    assert!(checked >= 40, "{checked} links");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}
