#!/usr/bin/env bash
# Installs what kiln needs, idempotently, on a fresh Debian machine: Debian's clang, lld, wasi-libc,
# the wasm32 compiler runtime, chromium, haproxy, nginx and redis-server (the scale-out tests'); the npm packages (npm ci); the compiled host; the process reaper; the engine build;
# the wasmtime addon and the engine precompiled for it; the Python environment build/py (scripts/setup-python.sh). `npm test`, `npm run demo` and `npm run bench` run it first.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v clang >/dev/null 2>&1 || need+=(clang)
command -v wasm-ld >/dev/null 2>&1 || need+=(lld)
[ -f /usr/include/wasm32-wasi/stdlib.h ] || need+=(wasi-libc)
compgen -G '/usr/lib/llvm-*/lib/clang/*/lib/wasi/libclang_rt.builtins-wasm32.a' >/dev/null || need+=(libclang-rt-14-dev-wasm32)
# The browser extensions drive (allow.browser), through playwright-core: Debian's, never Playwright's download.
command -v chromium >/dev/null 2>&1 || need+=(chromium)
# Two load balancers and a shared session store for the scale-out tests (test/scale-out.test.mjs starts and
# stops its own; nothing runs as a service).
command -v haproxy >/dev/null 2>&1 || need+=(haproxy)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
if [ ${#need[@]} -gt 0 ]; then
  echo "[setup] installing Debian packages: ${need[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >&2
fi

# npm ci when node_modules was installed from another package-lock.json (its sha256 is kept beside it: a
# timestamp would miss a lock that changed under an older install).
lock=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ ! -f node_modules/.package-lock.json ] || [ "$(cat node_modules/.kiln-lock.sha256 2>/dev/null)" != "$lock" ]; then
  echo "[setup] npm ci" >&2
  npm ci --no-audit --no-fund >&2
  echo "$lock" > node_modules/.kiln-lock.sha256
fi
npx --no-install tsc -p tsconfig.json >&2
node scripts/bundle-cli.mjs >&2 # the command line as a few chunks (bin/kiln.js prefers them when fresh)
bash scripts/build-reaper.sh # the process reaper every command runs under (host/capabilities/commands/reaper.c)
node scripts/build-engine.mjs >&2
# The wasmtime backend: kiln's addon (host/engine/wasmtime/, from crates.io through Cargo.lock), and the engine
# precompiled for this machine beside it, so no test or command pays the compile.
bash scripts/build-wasmtime.sh
node --input-type=module -e "const { Engine } = await import('./dist/host/engine/engine.js'); const e = await Engine.load(); console.error('[setup] guests run on ' + e.backend + (e.choice.fallback ? ' (' + e.choice.fallback + ')' : ''))"
# Python with wasmtime and wasm-tools, for the portability test (test/wasmtime.test.mjs).
bash scripts/setup-python.sh
