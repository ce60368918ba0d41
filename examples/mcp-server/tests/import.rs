//! `mcp-import` turns a running MCP server's tools into a manifest that toolc compiles: here the
//! support desk's own MCP server (over stdio), whose two server tools come back with their
//! schemas, titles and hints, and check clean.

use std::process::Command;

use serde_json::Value;

#[test]
fn an_mcp_servers_tools_become_a_manifest_toolc_compiles() {
    let output = Command::new(env!("CARGO_BIN_EXE_mcp-import"))
        .args(["--", env!("CARGO_BIN_EXE_mcp-server")])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let manifest: Value = serde_json::from_slice(&output.stdout).unwrap();
    let names: Vec<&str> = manifest["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["search_help_articles", "get_order_status"]);
    let search = &manifest["tools"][0];
    assert_eq!(search["location"], "server");
    assert_eq!(search["title"], "Search help articles");
    assert_eq!(search["annotations"]["read_only"], true);
    assert!(search["returns"].is_object());

    let mut session = toolc::Session::new();
    session.add_manifest("remote.tools.yaml", &output.stdout);
    let ir = session.check();
    assert!(ir.is_some(), "{}", session.render(false));
    assert_eq!(ir.unwrap().tools.len(), 2);
}

#[test]
fn without_a_server_it_says_how_to_name_one() {
    let output = Command::new(env!("CARGO_BIN_EXE_mcp-import"))
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("usage: mcp-import"), "{stderr}");
}
