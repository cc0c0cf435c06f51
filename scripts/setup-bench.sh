#!/usr/bin/env bash
# What `npm run bench` needs beyond scripts/setup.sh: Debian's hyperfine, which times whole processes (cold
# starts) as a user waits for them.
set -euo pipefail
if ! command -v hyperfine >/dev/null 2>&1; then
  echo "[setup-bench] installing Debian's hyperfine" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq hyperfine >&2
fi
