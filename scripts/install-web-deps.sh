#!/usr/bin/env bash
# Installs what the web page needs beyond scripts/install-deps.sh: Debian's emscripten (the core as WebAssembly)
# and chromium (the browser tests), and the npm packages pinned in web/package-lock.json (esbuild, puppeteer-core).
# Does nothing when they are present. Run as root on Debian 12.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(emscripten chromium nodejs npm)
missing=()
for p in "${packages[@]}"; do
  # nodejs and npm may come from elsewhere than Debian: a working command is enough.
  case "$p" in nodejs) command -v node >/dev/null && continue ;; npm) command -v npm >/dev/null && continue ;; esac
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-web-deps: installing ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-web-deps: missing packages and not root; run as root: apt-get install ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# npm ci only when the lockfile changed since the last install (its checksum is kept beside the packages).
lock_sum=$(sha256sum web/package-lock.json | cut -d' ' -f1)
if [ "$(cat web/node_modules/.installed-lock-sha256 2>/dev/null)" != "$lock_sum" ]; then
  (cd web && npm ci --no-audit --no-fund --ignore-scripts)
  echo "$lock_sum" > web/node_modules/.installed-lock-sha256
fi
