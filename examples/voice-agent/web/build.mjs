// The page's build: the real toolc CLI generates src/generated/tools.ts from the manifest, then
// the real TypeScript compiler checks and compiles src/ to dist/ (what the server serves).
//
// The CLI is `cargo run -q -p toolc --` from the repository root unless TOOLC names a built
// binary (CI builds the workspace first, so cargo only checks that it is fresh).

import { execFileSync } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const here = dirname(fileURLToPath(import.meta.url));
export const repo = resolve(here, "../../..");
/** The support manifest and the demo's own refunds manifest: one tools.ts for both. */
export const manifests = [join(repo, "manifests", "support.tools.yaml"), join(here, "..", "refunds.tools.yaml")];
const generated = join(here, "src", "generated");
const tsc = join(here, "node_modules", "typescript", "bin", "tsc");

function run(command, args, cwd) {
  try {
    execFileSync(command, args, { cwd, stdio: ["ignore", "inherit", "inherit"] });
  } catch {
    throw new Error(`build: \`${[command, ...args].join(" ")}\` failed`);
  }
}

function main() {
  if (!existsSync(tsc)) {
    throw new Error(`build: ${tsc} is missing; run \`npm ci\` in ${here}`);
  }
  const toolcArgs = ["build", ...manifests, "--out", generated, "--emit", "typescript"];
  if (process.env.TOOLC) {
    run(process.env.TOOLC, toolcArgs, repo);
  } else {
    run("cargo", ["run", "-q", "-p", "toolc", "--", ...toolcArgs], repo);
  }
  // Stale output of renamed sources must not be served.
  rmSync(join(here, "dist"), { recursive: true, force: true });
  run(process.execPath, [tsc, "-p", here], here);
  console.error("build: src/generated/tools.ts from the manifests, src/ compiled to dist/");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main();
}
