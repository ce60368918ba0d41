//! `crate = ...` moves every path the generated code uses.
#![deny(warnings)]

extern crate toolc_runtime as renamed;

/// Add two numbers.
#[renamed::tool(crate = ::renamed)]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

#[renamed::tool(crate = "::renamed", manifest = "../manifests/support.tools.yaml")]
fn get_order_status(order_number: String) -> Result<String, renamed::ToolError> {
    Ok(order_number)
}

fn main() {
    let registry = renamed::tools!(crate = ::renamed; add, get_order_status)
        .build()
        .unwrap();
    assert_eq!(registry.names().collect::<Vec<_>>(), ["add", "get_order_status"]);
}
