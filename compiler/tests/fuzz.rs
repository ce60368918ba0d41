//! Property tests: arbitrary bytes and mutated manifests never panic, and every diagnostic they
//! produce points inside the file it names.

use proptest::prelude::*;
use toolc::Session;

const SEED: &str = include_str!("../../manifests/commerce.tools.yaml");

fn check_bytes(bytes: &[u8]) {
    let mut session = Session::new();
    session.add_manifest("fuzz.tools.yaml", bytes);
    let ir = session.check();
    assert_eq!(ir.is_some(), !session.diagnostics.has_errors());
    for d in session.diagnostics.iter() {
        if let Some(label) = &d.primary {
            let file = session.sources.get(label.span.file);
            assert!(
                label.span.end <= file.text.len(),
                "{} points past the end",
                d.code
            );
            assert!(
                file.text.is_char_boundary(label.span.start),
                "{} splits a character",
                d.code
            );
        }
    }
    // Rendering must not panic either.
    let _ = session.render(false);
    let _ = session.render_json();
}

fn mutate(seed: &str, ops: &[(usize, u8, u8)]) -> Vec<u8> {
    let mut bytes = seed.as_bytes().to_vec();
    for &(pos, op, byte) in ops {
        if bytes.is_empty() {
            break;
        }
        let pos = pos % bytes.len();
        match op % 4 {
            0 => {
                bytes.remove(pos);
            }
            1 => bytes.insert(pos, byte),
            2 => bytes[pos] = byte,
            _ => {
                // Duplicate a slice: creates duplicate keys, deeper nesting and odd indentation.
                let end = (pos + byte as usize).min(bytes.len());
                let chunk = bytes[pos..end].to_vec();
                bytes.splice(pos..pos, chunk);
            }
        }
    }
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        check_bytes(&bytes);
    }

    #[test]
    fn yaml_shaped_noise_never_panics(text in "[ \\-:\\[\\]{}&*!|>'\"#,a-z0-9\\n]{0,300}") {
        check_bytes(text.as_bytes());
    }

    #[test]
    fn mutated_manifests_never_panic(ops in proptest::collection::vec((any::<usize>(), any::<u8>(), any::<u8>()), 1..8)) {
        check_bytes(&mutate(SEED, &ops));
    }
}

/// A manifest whose definitions form one long chain, each referring to the next directly or
/// through a property, as long as a manifest allows. Every step that follows references
/// (cycle check, Gemini's inlining, the Rust emitter's recursion analysis) must finish without
/// recursing once per link, which would exhaust a thread's stack.
#[test]
fn long_chains_of_definitions_build() {
    for through_property in [false, true] {
        let links = 5_000;
        let mut text = String::from(
            "version: 1\ntools:\n  - name: chain\n    description: A long chain of definitions.\n    location: server\n    parameters:\n      type: object\n      properties:\n        a: { $ref: \"#/$defs/D0\" }\n      $defs:\n",
        );
        for i in 0..links - 1 {
            let next = format!("$ref: \"#/$defs/D{}\"", i + 1);
            if through_property {
                text.push_str(&format!(
                    "        D{i}: {{ type: object, properties: {{ next: {{ {next} }} }} }}\n"
                ));
            } else {
                text.push_str(&format!("        D{i}: {{ {next} }}\n"));
            }
        }
        text.push_str(&format!("        D{}: {{ type: string }}\n", links - 1));
        let mut session = Session::new();
        session.add_manifest("chain.tools.yaml", text.as_bytes());
        let ir = session.check().expect("a chain is valid");
        let outputs = toolc::emit::emit(
            &ir,
            &toolc::emit::Kind::ALL,
            &toolc::emit::Config::default(),
            &mut session.diagnostics,
        );
        assert!(outputs["tools.rs"].contains("pub struct ChainArgs"));
        assert!(outputs["providers/gemini.json"].contains("\"chain\""));
    }
}

/// One object with thousands of properties (half of them required) and a string `enum` of
/// thousands of values: every step that looks names up (`required` against `properties`,
/// duplicate keys, union members) must do so without comparing every pair.
#[test]
fn wide_objects_and_long_enums_build() {
    let width = 10_000;
    let mut text = String::from(
        "version: 1\ntools:\n  - name: wide\n    description: Many properties.\n    location: server\n    parameters:\n      type: object\n      properties:\n",
    );
    for i in 0..width {
        text.push_str(&format!("        p{i}: {{ type: string }}\n"));
    }
    let values: Vec<String> = (0..width).map(|i| format!("value-{i}")).collect();
    text.push_str(&format!(
        "        choice: {{ type: string, enum: [{}] }}\n",
        values.join(", ")
    ));
    let required: Vec<String> = (0..width).step_by(2).map(|i| format!("p{i}")).collect();
    text.push_str(&format!("      required: [{}]\n", required.join(", ")));
    let mut session = Session::new();
    session.add_manifest("wide.tools.yaml", text.as_bytes());
    let ir = session.check().expect("a wide schema is valid");
    let outputs = toolc::emit::emit(
        &ir,
        &toolc::emit::Kind::ALL,
        &toolc::emit::Config::default(),
        &mut session.diagnostics,
    );
    let ts = &outputs["tools.ts"];
    assert!(ts.contains("p0: string;") && ts.contains("p1?: string;"));
    assert!(ts.contains("\"value-9999\""));
}
