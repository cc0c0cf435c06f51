#!/usr/bin/env bash
# Builds kiln's wasmtime addon (host/engine/wasmtime/: Rust, napi-rs, the wasmtime crate pinned by its
# Cargo.lock, every crate checked against the lock's checksum) into build/engine/kiln-wasmtime.<platform>-<arch>.node.
# Skipped while the addon's inputs are unchanged (their sha256 is kept beside it). Without cargo, nothing is
# built: kiln then runs guests on V8 and says so at start. `npm pack` ships the linux-x64 addon.
set -euo pipefail
cd "$(dirname "$0")/.."
crate=host/engine/wasmtime
platform=$(node -p 'process.platform + "-" + process.arch')
out=build/engine/kiln-wasmtime.$platform.node
key=$(cat "$0" "$crate/Cargo.toml" "$crate/Cargo.lock" "$crate/build.rs" "$crate"/src/*.rs | sha256sum | cut -d' ' -f1)
if [ -f "$out" ] && [ "$(cat "$out.inputs" 2>/dev/null)" = "$key" ]; then exit 0; fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "[wasmtime] cargo is not installed: no wasmtime addon is built, and guests run on V8 (docs/architecture.md, \"Engine backends\")" >&2
  exit 0
fi
echo "[wasmtime] building the addon (the first build takes ~4-6 minutes on 2 cores)" >&2
start=$(date +%s)
# --locked: exactly the crates Cargo.lock names, each verified against its checksum; cargo prints each crate as it compiles.
CARGO_TARGET_DIR=build/wasmtime-addon/target cargo build --release --locked --manifest-path "$crate/Cargo.toml" >&2
mkdir -p build/engine
cp build/wasmtime-addon/target/release/libkiln_wasmtime.so "$out.tmp"
mv "$out.tmp" "$out"
echo "$key" > "$out.inputs"
echo "[wasmtime] $out $(sha256sum "$out" | cut -c1-16) in $(( $(date +%s) - start )) s" >&2
