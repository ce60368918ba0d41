// The official MCP TypeScript SDK (@modelcontextprotocol/sdk) as a client of toolc's MCP server
// (examples/mcp-server, built by `cargo build --bins` before the npm tests run), over stdio and
// over streamable HTTP. It speaks protocol 2025-11-25; the Python SDK's test speaks 2026-07-28.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import Ajv from "ajv";

const here = path.dirname(fileURLToPath(import.meta.url));
const target = process.env.CARGO_TARGET_DIR ?? path.join(here, "..", "..", "..", "target");
const server = path.join(target, "debug", "mcp-server");

async function exercise(client) {
  const { tools } = await client.listTools();
  // Server tools only: the manifest's client tools run in a browser, not in an MCP host.
  assert.deepEqual(tools.map((t) => t.name).sort(), ["get_order_status", "search_help_articles"]);
  const search = tools.find((t) => t.name === "search_help_articles");
  assert.equal(search.inputSchema.type, "object");
  assert.ok(search.outputSchema, "an object `returns` is an outputSchema");
  // The manifest's `title` and `annotations` reach the host.
  assert.equal(search.title, "Search help articles");
  assert.equal(search.annotations.readOnlyHint, true);
  assert.equal(search.annotations.openWorldHint, false);

  const found = await client.callTool({ name: "search_help_articles", arguments: { query: "password" } });
  assert.equal(found.isError ?? false, false);
  const validate = new Ajv({ strict: false }).compile(search.outputSchema);
  assert.ok(validate(found.structuredContent), JSON.stringify(validate.errors));
  assert.deepEqual(JSON.parse(found.content[0].text), found.structuredContent);

  const bad = await client.callTool({ name: "search_help_articles", arguments: { query: 5 } });
  assert.equal(bad.isError, true);
  assert.equal(JSON.parse(bad.content[0].text).error.kind, "invalid_arguments");

  for (const name of ["highlight_element", "no_such_tool"]) {
    await assert.rejects(client.callTool({ name, arguments: {} }), (e) => e.code === -32602);
  }
}

test("the TypeScript SDK over stdio", async () => {
  const client = new Client({ name: "toolc-ts-test", version: "1.0.0" });
  await client.connect(new StdioClientTransport({ command: server, args: [] }));
  try {
    assert.equal(client.getServerVersion().name, "support-desk");
    await exercise(client);
  } finally {
    await client.close();
  }
});

test("the TypeScript SDK over streamable HTTP", async () => {
  const child = spawn(server, ["--http", "127.0.0.1:0"], { stdio: ["ignore", "pipe", "inherit"] });
  try {
    const lines = createInterface({ input: child.stdout });
    const [first] = await once(lines, "line");
    const url = first.replace("listening on ", "");
    const client = new Client({ name: "toolc-ts-test", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    try {
      await exercise(client);
    } finally {
      await client.close();
    }
  } finally {
    child.kill();
  }
});
