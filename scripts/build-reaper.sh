#!/usr/bin/env bash
# Builds build/kiln-reaper (host/capabilities/commands/reaper.c), the process reaper every command runs under, for the
# machine's platform: a static binary (no shared library to match on the user's machine) built reproducibly
# (no build id, no source path), so the same source gives the same bytes. `npm pack` ships it for linux-x64;
# elsewhere kiln runs commands without it and says so at start (docs/security.md). Skipped while up to date.
set -euo pipefail
cd "$(dirname "$0")/.."
src=host/capabilities/commands/reaper.c
out=build/kiln-reaper
if [ -x "$out" ] && [ "$out" -nt "$src" ] && [ "$out" -nt "$0" ]; then exit 0; fi
mkdir -p build
cc=cc
command -v cc >/dev/null 2>&1 || cc=clang # clang (scripts/setup.sh installs it) builds native code too
"$cc" -O2 -Wall -static -ffile-prefix-map="$PWD"=. -Wl,--build-id=none -o "$out.tmp" "$src"
strip --strip-all "$out.tmp" 2>/dev/null || true
mv "$out.tmp" "$out"
echo "[reaper] $out $(sha256sum "$out" | cut -c1-16)" >&2
