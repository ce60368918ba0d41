// Generates tools.ts (and the handler stubs) for every manifest with the real toolc CLI, then
// compiles each tools.ts to JavaScript for the runtime tests. Run by `npm test` before the tests.
//
// The CLI is `cargo run -q -p toolc --` from the repository root unless TOOLC names a built
// binary (CI runs `cargo build` first, so cargo only checks that it is fresh).

import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const here = dirname(fileURLToPath(import.meta.url));
export const repo = resolve(here, "../..");
export const generated = join(here, ".generated");
export const tsc = join(here, "node_modules", "typescript", "bin", "tsc");

/** Every manifest the TypeScript must compile for: the reference ones and our edge cases. */
export function manifests() {
  const list = [];
  for (const dir of [join(repo, "manifests"), join(here, "fixtures")]) {
    for (const file of readdirSync(dir).sort()) {
      if (file.endsWith(".tools.yaml")) {
        list.push({ name: file.slice(0, -".tools.yaml".length), path: join(dir, file) });
      }
    }
  }
  return list;
}

export function toolc(args) {
  if (process.env.TOOLC) {
    return execFileSync(process.env.TOOLC, args, { cwd: repo, stdio: ["ignore", "pipe", "pipe"] });
  }
  return execFileSync("cargo", ["run", "-q", "-p", "toolc", "--", ...args], {
    cwd: repo,
    stdio: ["ignore", "pipe", "pipe"],
  });
}

/** Flags every compile uses; the checks add the strict ones. */
export const baseFlags = ["--target", "es2022", "--module", "esnext", "--moduleResolution", "bundler", "--skipLibCheck"];

function main() {
  rmSync(generated, { recursive: true, force: true });
  for (const { name, path } of manifests()) {
    const out = join(generated, name);
    mkdirSync(out, { recursive: true });
    try {
      toolc(["build", path, "--out", out, "--emit", "typescript", "--ts-stubs", out]);
    } catch (error) {
      process.stderr.write(error.stderr ?? "");
      throw new Error(`toolc build failed for ${path}`);
    }
    if (!existsSync(join(out, "tools.ts"))) {
      throw new Error(`toolc build wrote no tools.ts for ${path}`);
    }
    execFileSync(process.execPath, [tsc, ...baseFlags, "--strict", "--outDir", join(out, "js"), join(out, "tools.ts")], {
      stdio: "inherit",
    });
  }
  console.error(`prepare: generated and compiled ${manifests().length} manifests into ${generated}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main();
}
