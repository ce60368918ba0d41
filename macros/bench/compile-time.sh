#!/usr/bin/env bash
# Compile-time cost of #[tool]: `cargo check` of a generated crate with 100 tool fns, three ways:
#   plain     the 100 fns without any attribute (the baseline)
#   rust      #[tool] on each fn (schemas from the signatures) + one tools![...] of all 100
#   manifest  #[tool(manifest = ...)] on each fn, checked against a 100-tool manifest, + a bound tools!
# Each crate depends on toolc-runtime in all three cases, so only the crate itself is rebuilt.
# Usage: macros/bench/compile-time.sh [runs]   (default 5; prints the median of each)
set -euo pipefail

RUNS=${1:-5}
N=100
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK="$ROOT/target/macro-compile-bench"
mkdir -p "$WORK"
# The three generated crates share one target directory of their own (not the workspace's), so
# their dependencies are built once.
export CARGO_TARGET_DIR="$WORK/target"

gen_manifest() {
  {
    echo "version: 1"
    echo "tools:"
    for i in $(seq 1 $N); do
      cat <<YAML
  - name: tool_$i
    description: Tool number $i of the compile-time benchmark.
    location: server
    parameters:
      type: object
      properties:
        query: { type: string }
        limit: { type: integer, minimum: 0, maximum: 100 }
        tags: { type: array, items: { type: string } }
      required: [query, tags]
      additionalProperties: false
YAML
    done
  } > "$1"
}

gen_crate() { # $1 = variant
  local dir="$WORK/$1"
  mkdir -p "$dir/src"
  cat > "$dir/Cargo.toml" <<TOML
[package]
name = "bench-$1"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
toolc-runtime = { path = "$ROOT/runtime" }

# Not part of the toolc workspace.
[workspace]
TOML
  cp "$ROOT/Cargo.lock" "$dir/Cargo.lock"
  local attr="" list=""
  case "$1" in
    rust) attr="#[tool]" ;;
    manifest) attr="#[tool(manifest = \"tools.yaml\")]"; gen_manifest "$dir/tools.yaml" ;;
  esac
  {
    echo "#![allow(dead_code)]"
    echo "use toolc_runtime::{tool, tools, ToolError};"
    for i in $(seq 1 $N); do
      cat <<RS
/// Tool number $i of the compile-time benchmark.
$attr
pub async fn tool_$i(query: String, limit: Option<u8>, tags: Vec<String>) -> Result<String, ToolError> {
    Ok(format!("{query}{}{}", limit.unwrap_or($i % 100), tags.len()))
}
RS
      list+="tool_$i, "
    done
    case "$1" in
      rust) echo "pub fn registry() -> toolc_runtime::RegistryBuilder { tools![$list] }" ;;
      manifest) echo "pub fn registry() -> toolc_runtime::RegistryBuilder { tools!(manifest = \"tools.yaml\"; $list) }" ;;
    esac
  } > "$dir/src/lib.rs"
}

now() { date +%s.%N; }

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

for v in plain rust manifest; do
  gen_crate "$v"
  # Warm-up: builds the dependencies once (slow the first time) and the crate.
  (cd "$WORK/$v" && cargo check --offline -q)
done

# Runs are interleaved (plain, rust, manifest, plain, ...) so that load from anything else on the
# machine falls on the three variants alike.
declare -A times
for r in $(seq 1 "$RUNS"); do
  for v in plain rust manifest; do
    # A changed comment makes cargo re-check the crate (and re-expand every macro in it).
    echo "// run $r $(now)" >> "$WORK/$v/src/lib.rs"
    start=$(now)
    (cd "$WORK/$v" && cargo check --offline -q)
    end=$(now)
    times[$v]+="$(echo "$end - $start" | bc -l) "
  done
done
for v in plain rust manifest; do
  # shellcheck disable=SC2086
  printf '%-9s median %.3f s   runs: %s\n' "$v" "$(printf '%s\n' ${times[$v]} | median)" "$(printf '%.2f ' ${times[$v]})"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
