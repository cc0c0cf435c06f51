#!/usr/bin/env bash
# A Python virtual environment at build/py with the pinned, hash-checked packages of
# scripts/requirements-wasm.txt: wasmtime (test/wasmtime/host.py, a second host for kiln artifacts) and
# wasm-tools (validates every artifact the tests build); and of scripts/requirements-mcp.txt: the MCP Python SDK
# (test/clients/py/client.py, a real client of both protocol revisions). Idempotent: skipped while build/py was
# made from the same requirements files and its tools answer. The binaries come from the registry, never from git.
set -euo pipefail
cd "$(dirname "$0")/.."

reqs=(scripts/requirements-wasm.txt scripts/requirements-mcp.txt)
venv=build/py
stamp="$venv/requirements.installed"

healthy() {
  [ -x "$venv/bin/python" ] && [ -x "$venv/bin/wasm-tools" ] && [ -f "$stamp" ] && cat "${reqs[@]}" | cmp -s - "$stamp" &&
    "$venv/bin/python" -c 'import wasmtime.component, mcp.client' >/dev/null 2>&1 &&
    "$venv/bin/wasm-tools" --version >/dev/null 2>&1
}
if healthy; then exit 0; fi

python=${KILN_PYTHON:-python3}
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 9))' >/dev/null 2>&1; then
  echo "[setup-python] needs Python 3.9 or newer as $python (set KILN_PYTHON to another)" >&2
  exit 1
fi
if ! "$python" -c 'import venv, ensurepip' >/dev/null 2>&1; then
  echo "[setup-python] installing Debian's python3-venv" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-venv >&2
fi

echo "[setup-python] creating $venv from ${reqs[*]}" >&2
rm -rf "$venv"
"$python" -m venv "$venv"
for req in "${reqs[@]}"; do
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
    --require-hashes --no-deps --only-binary=:all: -r "$req" >&2
done
cat "${reqs[@]}" > "$stamp"
healthy || { echo "[setup-python] $venv was installed but its tools do not answer" >&2; exit 1; }
echo "[setup-python] $("$venv/bin/python" -c 'import importlib.metadata as m; print("wasmtime", m.version("wasmtime"), "mcp", m.version("mcp"))'), $("$venv/bin/wasm-tools" --version)" >&2
