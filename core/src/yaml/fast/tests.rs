//! The fast scanner against `saphyr-parser`: wherever the fast scanner finishes, the tree and
//! the diagnostics must be exactly what the full parser gives, spans included.

use super::*;
use crate::diagnostic::Diagnostic;
use crate::source::FileId;
use crate::yaml::{parse_at, Builder, Limits, YamlParser};
use proptest::prelude::Rng as _;
use proptest::test_runner::{RngAlgorithm, TestRng};

/// Compares `rounds` documents made by `make`, and requires the fast scanner to have
/// finished more than one in `at_least_one_in` of them: if it gave up on all, the comparison
/// would prove nothing.
fn compare_many(
    rng: &mut Rng,
    rounds: usize,
    at_least_one_in: usize,
    mut make: impl FnMut(&mut Rng, usize) -> String,
) {
    let fast = (0..rounds)
        .filter(|&round| compare(&make(rng, round)))
        .count();
    assert!(
        fast > rounds / at_least_one_in,
        "the fast scanner finished only {fast} of {rounds}"
    );
}

/// Whether the fast scanner finished `text`, after checking that its result is the full
/// parser's wherever it did.
fn compare(text: &str) -> bool {
    let file = FileId(0);
    let limits = Limits::default();
    let mut full_errors = Vec::new();
    let full = parse_at(file, text, 7, limits, &mut full_errors, YamlParser::Full);
    let mut errors = Vec::new();
    let result = parse_at(file, text, 7, limits, &mut errors, YamlParser::Fast);
    assert_eq!(result, full, "the trees differ for {text:?}");
    assert_eq!(errors, full_errors, "the diagnostics differ for {text:?}");
    // Whether the fast scanner is what finished it.
    let mut scratch: Vec<Diagnostic> = Vec::new();
    crate::yaml::report_unprintable(file, text, 7, &mut scratch);
    scratch.is_empty() && scan(text, &mut Builder::new(file, 7, limits, &mut scratch)).is_ok()
}

fn repository_manifests() -> Vec<(std::path::PathBuf, String)> {
    fn walk(dir: &std::path::Path, found: &mut Vec<std::path::PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if path.is_dir() {
                if !matches!(name.as_ref(), "target" | "node_modules" | ".git") {
                    walk(&path, found);
                }
            } else if name.ends_with(".yaml") || name.ends_with(".yml") {
                found.push(path);
            }
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    walk(&root, &mut found);
    found.sort();
    found
        .into_iter()
        .filter_map(|path| Some((path.clone(), std::fs::read_to_string(path).ok()?)))
        .collect()
}

#[test]
fn the_usual_manifest_is_scanned_fast_and_as_saphyr_scans_it() {
    for tools in [1, 7, 200] {
        let text = crate::synthetic::manifest(tools);
        assert!(
            compare(&text),
            "the fast scanner gave up on {tools} synthetic tools"
        );
    }
    let written = "\
# A manifest as people write it.
version: 1
tools:
  - name: search   # trailing comment
description: Search the help centre, then return the best matches [by score].
location: server
parameters:
  type: object
  properties:
    query: { type: string, description: 'It''s free text', minLength: 1 }
    kinds: [ \"a\\\"b\", 'c' , d ]   # kinds
    url:
      default: https://example.com/a:b#top
  required:
  - query
  -
  - ünïcödé
empty: {}
none:
summary: A plain scalar that a YAML writer folded
  over three lines,

  with an empty line between.
notes:
  - an item that goes on
    over two lines

  - name: open_page
location: client
tags: []
";
    assert!(
        compare(written),
        "the fast scanner gave up on a hand-written manifest"
    );
}

#[test]
fn every_bundled_yaml_file_scans_as_saphyr_scans_it() {
    let files = repository_manifests();
    assert!(files.len() > 50, "found only {} YAML files", files.len());
    let fast = files.iter().filter(|(_, text)| compare(text)).count();
    // Most bundled files are in the subset (147 of 153 when this was written); the rest
    // are fixtures of errors and of what it leaves out.
    assert!(
        fast * 5 > files.len() * 4,
        "fast on only {fast} of {} files",
        files.len()
    );
}

/// proptest's seeded generator, so that every run sees the same documents.
struct Rng(TestRng);

impl Rng {
    fn seeded(seed: u64) -> Rng {
        Rng(TestRng::from_seed(
            RngAlgorithm::ChaCha,
            &[seed.to_le_bytes(), seed.to_be_bytes(), [7; 8], [11; 8]].concat(),
        ))
    }

    fn below(&mut self, n: usize) -> usize {
        (self.0.next_u64() % n as u64) as usize
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len())]
    }
}

/// Pieces that YAML gives meaning to, and some that it does not.
const PIECES: &[&str] = &[
    " ", "  ", "\n", "\n  ", "\n    ", "- ", "-", ": ", ":", "#", " # c", ",", ", ", "[", "]", "{",
    "}", "\"", "'", "''", "\\", "\\\"", "\\u00e9", "\\x", "a", "key", "b c", "1", "-2", "0.5",
    "true", "null", "~", "?", "&a", "*a", "!t", "|", ">", "%", "@", "`", "---", "...", "é", "\t",
    "\r", "x:y", "\u{feff}", "\u{85}",
];

fn generated(rng: &mut Rng) -> String {
    let mut text = String::new();
    for _ in 0..rng.below(40) {
        text.push_str(rng.pick(PIECES));
    }
    text
}

fn mutated(rng: &mut Rng, base: &str) -> String {
    let mut text = base.to_owned();
    for _ in 0..1 + rng.below(3) {
        let mut at = rng.below(text.len() + 1);
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        match rng.below(4) {
            0 => text.insert_str(at, rng.pick(PIECES)),
            1 => {
                let mut end = (at + 1 + rng.below(4)).min(text.len());
                while !text.is_char_boundary(end) {
                    end += 1;
                }
                text.replace_range(at..end, "");
            }
            2 => {
                let mut end = (at + 1 + rng.below(4)).min(text.len());
                while !text.is_char_boundary(end) {
                    end += 1;
                }
                text.replace_range(at..end, rng.pick(PIECES));
            }
            _ => {
                // A line's indentation changed.
                let line = text[..at].rfind('\n').map_or(0, |n| n + 1);
                if rng.below(2) == 0 {
                    text.insert(line, ' ');
                } else if text[line..].starts_with(' ') {
                    text.remove(line);
                }
            }
        }
    }
    text
}

#[test]
fn generated_and_mutated_documents_scan_as_saphyr_scans_them() {
    let mut rng = Rng::seeded(0x9e37_79b9_7f4a_7c15);
    let mut bases: Vec<String> = repository_manifests()
        .into_iter()
        .map(|(_, text)| text)
        .filter(|text| text.len() < 2500)
        .collect();
    bases.push(crate::synthetic::manifest(3));
    // Most mutations stay within the subset.
    compare_many(&mut rng, 4_000, 10, |rng, round| {
        if round % 4 == 0 {
            generated(rng)
        } else {
            let base = &bases[rng.below(bases.len())];
            mutated(rng, base)
        }
    });
}

#[test]
fn folded_lines_scan_as_saphyr_scans_them() {
    // Spaces of a manifest turned into line breaks, some with an empty line after, each
    // followed by a random indentation: plain scalars folded over lines, and the errors and
    // other meanings that a line break in the wrong place gives.
    let mut rng = Rng::seeded(0x5851_f42d_4c95_7f2d);
    let base = crate::synthetic::manifest(3);
    compare_many(&mut rng, 1500, 5, |rng, _| {
        let mut text = String::with_capacity(base.len() + 64);
        for line in base.split_inclusive('\n') {
            // The tools' descriptions, after their key.
            let block = line.trim_start().starts_with("description: ");
            let Some(value) = line
                .find("description: ")
                .filter(|_| block)
                .map(|at| at + 13)
            else {
                text.push_str(line);
                continue;
            };
            text.push_str(&line[..value]);
            for ch in line[value..].chars() {
                if ch == ' ' && rng.below(5) == 0 {
                    text.push('\n');
                    if rng.below(4) == 0 {
                        text.push('\n');
                    }
                    // Mostly deeper than the key (a continuation), now and then not.
                    let indent = if rng.below(8) == 0 {
                        rng.below(6)
                    } else {
                        5 + rng.below(8)
                    };
                    (0..indent).for_each(|_| text.push(' '));
                } else {
                    text.push(ch);
                }
            }
        }
        text
    });
}

#[test]
fn block_scalars_scan_as_saphyr_scans_them() {
    // A block scalar in a mapping or a list, with every header, lines indented at random
    // (mostly at the content's indentation), empty lines with and without spaces, comments,
    // and whatever follows it.
    let mut rng = Rng::seeded(0x1405_7b7e_f767_814f);
    compare_many(&mut rng, 3000, 5, |rng, _| {
        let mut text = String::from("version: 1\ntools:\n");
        let in_list = rng.below(2) == 0;
        text.push_str(if in_list {
            "  - description: "
        } else {
            "  description: "
        });
        text.push_str(rng.pick(&["|", ">", "|-", ">-", "|+", ">+", "|2", "| # c", ">  "]));
        text.push('\n');
        let indent = if in_list { 6 } else { 4 };
        for _ in 0..1 + rng.below(6) {
            match rng.below(10) {
                0 => text.push_str(&" ".repeat(rng.below(8))),
                1 => text.push_str(&format!("{}more", " ".repeat(indent + 1 + rng.below(3)))),
                2 => text.push_str(&format!("{}# not a comment", " ".repeat(indent))),
                3 if rng.below(3) == 0 => {
                    text.push_str(&format!("{}less", " ".repeat(rng.below(indent))))
                }
                _ => text.push_str(&format!("{}line {} ", " ".repeat(indent), rng.below(100))),
            }
            text.push('\n');
        }
        text.push_str(rng.pick(&[
            "",
            "    location: server\n",
            "  - name: next\n",
            "# a comment\n",
            "      # deeper comment\n",
            "x: 1\n",
            "\n\n",
            "  -",
        ]));
        text
    });
}

#[test]
fn json_written_as_flow_scans_as_saphyr_scans_it() {
    // Schemas pasted as JSON: on one line, or pretty-printed over lines indented at random
    // (now and then not enough), with comments after some of the lines.
    let mut rng = Rng::seeded(0x94d0_49bb_1331_11eb);
    let base = crate::synthetic::manifest(4);
    let root = crate::yaml::parse(FileId(0), &base, Limits::default(), &mut Vec::new())
        .expect("the synthetic manifest parses");
    let tools = root
        .get("tools")
        .and_then(|(_, t)| t.as_seq())
        .unwrap_or_default();
    assert_eq!(tools.len(), 4);
    compare_many(&mut rng, 600, 3, |rng, _| {
        let mut text = String::from("version: 1\ntools:\n");
        for tool in tools {
            let name = tool
                .get("name")
                .and_then(|(_, n)| n.as_str())
                .unwrap_or("x");
            text.push_str(&format!(
                "  - name: {name}\n    location: server\n    parameters: "
            ));
            let json = tool
                .get("parameters")
                .map(|(_, p)| p.to_json())
                .unwrap_or_default();
            if rng.below(3) == 0 {
                text.push_str(&json.to_string());
            } else {
                let shift = if rng.below(6) == 0 {
                    rng.below(5)
                } else {
                    5 + rng.below(4)
                };
                let pretty = serde_json::to_string_pretty(&json).unwrap_or_default();
                for (i, line) in pretty.lines().enumerate() {
                    if i > 0 {
                        text.push('\n');
                        text.push_str(&" ".repeat(shift));
                    }
                    text.push_str(line);
                    if rng.below(15) == 0 {
                        text.push_str(" # a note");
                    }
                }
            }
            text.push('\n');
        }
        text
    });
}

#[test]
fn a_mutated_catalog_of_a_thousand_tools_scans_as_saphyr_scans_it() {
    let mut rng = Rng::seeded(0x2545_f491_4f6c_dd1d);
    let base = crate::synthetic::manifest(1000);
    for _ in 0..6 {
        compare(&mutated(&mut rng, &base));
    }
}

#[test]
fn what_the_subset_leaves_out_goes_to_the_full_parser() {
    for text in [
        "a: |2\n  block\n",
        "a: |\n\n  after an empty line\n",
        "a: &x 1\nb: *x\n",
        "a: !!str 1\n",
        "a: multi\n  line: no\n",
        "a: multi\n  # comment\n  line\n",
        "a: \"two\n  lines\"\n",
        "a: [1,\n2]\n",
        "a: [b\n  c]\n",
        "a: {b:\n  c}\n",
        "--- \na: 1\n",
        "a: 1\n---\nb: 2\n",
        "? a\n: b\n",
        "a:\tb\n",
        "a: b\r\n",
        "- - a\n",
        "[a, b]\n",
        "just a scalar\n",
        "",
        "# only a comment\n",
        "a: b: c\n",
        "a:\n  b\n",
    ] {
        assert!(!compare(text), "the fast scanner took {text:?}");
    }
}
