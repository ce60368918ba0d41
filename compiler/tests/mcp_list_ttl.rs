//! The manifest's `mcp.list_ttl`: how long an MCP host may keep `tools/list`. The shortest of the
//! manifests compiled together is what `mcp.json` says and what the generated `registry()` hands
//! to `McpServer`; without one, `mcp.json` says 0 and the registry leaves the server's default.

use serde_json::Value;
use toolc::emit::providers::{self, Provider};
use toolc::emit::rust::{generate, RustOptions};
use toolc::Session;

fn manifest(ttl: Option<&str>, tool: &str) -> String {
    let mcp = ttl.map_or(String::new(), |t| format!("mcp: {{ list_ttl: {t} }}\n"));
    format!("version: 1\n{mcp}tools:\n  - name: {tool}\n    description: A tool.\n    location: server\n")
}

fn compile(files: &[(&str, String)]) -> (Session, toolc::Ir) {
    let mut session = Session::new();
    for (name, text) in files {
        session.add_manifest(name, text.as_bytes());
    }
    let ir = session
        .check()
        .unwrap_or_else(|| panic!("{}", session.render(false)));
    (session, ir)
}

fn mcp_file(session: &mut Session, ir: &toolc::Ir) -> Value {
    let text = providers::file_text(ir, Provider::Mcp, &mut session.diagnostics);
    serde_json::from_str(&text).unwrap()
}

#[test]
fn the_shortest_list_ttl_is_what_mcp_json_and_the_registry_say() {
    let (mut session, ir) = compile(&[
        ("a.tools.yaml", manifest(Some("10m"), "a")),
        ("b.tools.yaml", manifest(Some("1.5m"), "b")),
        ("c.tools.yaml", manifest(None, "c")),
    ]);
    assert_eq!(mcp_file(&mut session, &ir)["ttlMs"], 90_000);
    let rust = generate(&ir, &RustOptions::default());
    assert!(
        rust.contains(".mcp_list_ttl(::std::time::Duration::from_millis(90000u64))"),
        "{rust}"
    );
}

#[test]
fn without_a_list_ttl_the_file_says_zero_and_the_registry_nothing() {
    let (mut session, ir) = compile(&[("a.tools.yaml", manifest(None, "a"))]);
    let file = mcp_file(&mut session, &ir);
    assert_eq!(file["ttlMs"], 0);
    assert_eq!(file["cacheScope"], "public");
    assert!(!generate(&ir, &RustOptions::default()).contains("mcp_list_ttl"));
}

#[test]
fn zero_is_a_list_ttl_and_more_than_a_day_is_not() {
    let (mut session, ir) = compile(&[("a.tools.yaml", manifest(Some("0s"), "a"))]);
    assert_eq!(mcp_file(&mut session, &ir)["ttlMs"], 0);
    assert!(generate(&ir, &RustOptions::default())
        .contains(".mcp_list_ttl(::std::time::Duration::from_millis(0u64))"));

    let mut session = Session::new();
    session.add_manifest("a.tools.yaml", manifest(Some("25h"), "a").as_bytes());
    assert!(session.check().is_none());
    let rendered = session.render(false);
    assert!(rendered.contains("toolc::invalid-timeout"), "{rendered}");
    assert!(rendered.contains("more than 24h"), "{rendered}");
}
