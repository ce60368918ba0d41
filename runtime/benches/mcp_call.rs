//! One tool call through MCP against the same call through the registry in process. The MCP
//! path is toolc's client (`McpTools`, on rmcp) talking to toolc's server (`McpServer`) over a
//! byte pipe with stdio's framing (newline-delimited JSON-RPC), both in this process, so the
//! figure is the protocol's cost (encoding, the two rmcp services, validation on both sides),
//! not a process's start-up.
//!
//! cargo bench -p toolc-runtime --features mcp --bench mcp_call

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::{json, Value};
use toolc_runtime::mcp::{McpServer, McpTools};
use toolc_runtime::{definitions_from_str, executor_fn, Registry, ToolError};

const MANIFEST: &str = r#"version: 1
tools:
  - name: lookup_order
    description: Look up an order.
    location: server
    parameters:
      type: object
      properties:
        order_number: { type: string, pattern: "^[A-Z]{2}-[0-9]{6}$" }
        include_items: { type: boolean }
      required: [order_number]
      additionalProperties: false
    returns:
      type: object
      properties:
        status: { type: string }
        items: { type: integer }
      required: [status]
      additionalProperties: false
"#;

fn registry() -> Registry {
    Registry::builder()
        .definitions(definitions_from_str("bench.tools.yaml", MANIFEST).unwrap())
        .executor(
            "lookup_order",
            executor_fn(|_args: Value| async move {
                Ok::<_, ToolError>(json!({ "status": "shipped", "items": 2 }))
            }),
        )
        .build()
        .unwrap()
}

fn mcp_call(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let local = registry();
    let arguments = json!({ "order_number": "AB-123456", "include_items": true });
    let through_mcp = rt.block_on(async {
        let (client_side, server_side) = tokio::io::duplex(64 * 1024);
        let server = McpServer::new(Arc::new(registry()));
        let (read, write) = tokio::io::split(server_side);
        tokio::spawn(server.serve_io((read, write)));
        let tools = McpTools::connect(tokio::io::split(client_side))
            .await
            .unwrap();
        tools
            .merge_into(Registry::builder(), &[])
            .unwrap()
            .build()
            .unwrap()
    });
    let expected = json!({ "status": "shipped", "items": 2 });
    assert_eq!(
        rt.block_on(through_mcp.call_value("lookup_order", arguments.clone()))
            .unwrap(),
        expected
    );

    let mut group = c.benchmark_group("mcp_call");
    group.bench_function("registry in process", |b| {
        b.iter(|| rt.block_on(local.call_value("lookup_order", arguments.clone())))
    });
    group.bench_function("through MCP (client, pipe, server)", |b| {
        b.iter(|| rt.block_on(through_mcp.call_value("lookup_order", arguments.clone())))
    });
    group.finish();
}

criterion_group!(benches, mcp_call);
criterion_main!(benches);
