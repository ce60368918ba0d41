//! The compiler's provider files and the runtime's declarations have one definition of each
//! provider's shape: `toolc_core::declare`. The compiler's renderer builds no values (for speed),
//! so every entry it writes for the bundled manifests is checked here against the value `declare`
//! makes for the same definition.

use std::path::{Path, PathBuf};

use serde_json::Value;
use toolc::emit::providers::{self, Provider};
use toolc::Session;
use toolc_core::declare;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn compile(paths: &[PathBuf], extra: Option<&str>) -> (Session, toolc::Ir) {
    let mut session = Session::new();
    for path in paths {
        session.add_path(path).unwrap();
    }
    if let Some(text) = extra {
        session.add_manifest("extra.tools.yaml", text.as_bytes());
    }
    let ir = session
        .check()
        .unwrap_or_else(|| panic!("{}", session.render(false)));
    (session, ir)
}

/// The function entries of a provider file, with those inside Responses namespaces.
fn functions(file: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    for entry in file.as_array().expect("a provider file is a list") {
        match entry["type"].as_str() {
            Some("function") => out.push(entry.clone()),
            Some("namespace") => out.extend(functions(&entry["tools"])),
            _ => {}
        }
    }
    out
}

#[test]
fn every_compiled_declaration_is_the_shape_core_defines() {
    let mut manifests: Vec<PathBuf> = std::fs::read_dir(repo().join("manifests"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".tools.yaml"))
        .collect();
    manifests.sort();
    let (mut session, ir) = compile(&manifests, None);
    let definitions = ir.definitions();
    assert!(definitions.len() >= 10, "{}", definitions.len());
    let file = |session: &mut Session, provider| -> Value {
        serde_json::from_str(&providers::file_text(
            &ir,
            provider,
            &mut session.diagnostics,
        ))
        .unwrap()
    };

    let realtime = functions(&file(&mut session, Provider::OpenaiRealtime));
    assert_eq!(realtime.len(), definitions.len());
    for (written, def) in realtime.iter().zip(&definitions) {
        assert_eq!(written, &declare::openai_realtime(def), "{}", def.name);
    }

    // Responses adds `output_schema` and `defer_loading` to the function shape.
    let responses = functions(&file(&mut session, Provider::OpenaiResponses));
    let mut checked = 0;
    for def in &definitions {
        let Some(written) = responses.iter().find(|e| e["name"] == def.name.as_str()) else {
            continue;
        };
        let mut written = written.clone();
        let object = written.as_object_mut().unwrap();
        object.remove("output_schema");
        object.remove("defer_loading");
        assert_eq!(written, declare::openai_function(def), "{}", def.name);
        checked += 1;
    }
    assert_eq!(checked, definitions.len());

    // Chat nests the Responses fields (without `type`) in `function`.
    let chat = file(&mut session, Provider::OpenaiChat);
    let chat = chat.as_array().unwrap();
    assert_eq!(chat.len(), definitions.len());
    for (written, def) in chat.iter().zip(&definitions) {
        assert_eq!(written, &declare::openai_chat_function(def), "{}", def.name);
    }

    // Anthropic: the schema as written, except where the compiler lowers a composed root.
    let anthropic = file(&mut session, Provider::Anthropic);
    let anthropic = anthropic.as_array().unwrap();
    assert_eq!(anthropic.len(), definitions.len());
    let mut checked = 0;
    for (written, def) in anthropic.iter().zip(&definitions) {
        let root = &def.parameters;
        if ["anyOf", "oneOf", "allOf"]
            .iter()
            .any(|k| root.get(*k).is_some())
        {
            continue;
        }
        assert_eq!(written, &declare::anthropic(def), "{}", def.name);
        checked += 1;
    }
    assert!(checked > 0);
}
