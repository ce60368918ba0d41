//! Every tool of `manifests/support.tools.yaml`: server tools with executors whose signatures
//! match the manifest, client tools as bodiless declarations, one registry bound to the file.
#![deny(warnings)]

use serde::Serialize;
use toolc_runtime::{tool, tools, ToolError};

#[derive(Debug, Serialize)]
pub struct Articles {
    pub articles: Vec<serde_json::Value>,
}

#[tool(manifest = "../manifests/support.tools.yaml")]
pub async fn search_help_articles(query: String, limit: u8) -> Result<Articles, ToolError> {
    let _ = (query, limit);
    Ok(Articles { articles: vec![] })
}

#[tool(manifest = "../manifests/support.tools.yaml")]
pub fn get_order_status(order_number: &str) -> Result<serde_json::Value, ToolError> {
    Ok(serde_json::json!({ "status": "placed", "eta": order_number }))
}

#[tool(client, manifest = "../manifests/support.tools.yaml")]
pub fn highlight_element(selector: String, color: Option<String>);

#[tool(client, manifest = "../manifests/support.tools.yaml")]
pub fn fill_form_field(field: String, value: String);

fn main() {
    let registry = tools!(manifest = "../manifests/support.tools.yaml";
        search_help_articles, get_order_status, highlight_element, fill_form_field)
    .build()
    .unwrap();
    // Client tools of the manifest are declared even when not written in Rust.
    assert_eq!(registry.len(), 6);
    assert!(registry.definition("show_toast").is_some());
}
