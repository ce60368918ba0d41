// json-schema-to-typescript on the same 1,000 parameter schemas that toolc's TypeScript bench
// generates from (written by `cargo bench -p toolc --bench typescript` to
// target/toolc-ts-bench/parameters.json). Prints the median of 3 timed passes over all schemas,
// with the package's defaults (Prettier formatting) and with `format: false`.
//
// Run: node tests/ts/bench/jstt.mjs   (after the cargo bench)

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { compile } from "json-schema-to-typescript";

import { repo } from "../prepare.mjs";

const file = join(repo, "target", "toolc-ts-bench", "parameters.json");
const schemas = JSON.parse(readFileSync(file, "utf8"));

async function pass(options) {
  let bytes = 0;
  const start = performance.now();
  for (const { name, schema } of schemas) {
    // compile() may annotate the schema it is given; each run gets its own copy.
    bytes += (await compile(structuredClone(schema), name, { bannerComment: "", ...options })).length;
  }
  return { ms: performance.now() - start, bytes };
}

for (const [label, options] of [
  ["defaults (format: true)", {}],
  ["format: false", { format: false }],
]) {
  await pass(options); // warm-up: JIT, Prettier's lazy loading
  const runs = [];
  for (let i = 0; i < 3; i++) runs.push(await pass(options));
  runs.sort((a, b) => a.ms - b.ms);
  const median = runs[1];
  console.log(
    `json-schema-to-typescript, ${label}: ${schemas.length} schemas in ${median.ms.toFixed(1)} ms ` +
      `(median of 3; ${(median.ms / schemas.length).toFixed(3)} ms per schema, ${median.bytes} bytes of output)`,
  );
}
