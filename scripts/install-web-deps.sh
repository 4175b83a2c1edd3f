#!/usr/bin/env bash
# Installs what the web page needs beyond scripts/install-deps.sh: its Debian packages (install-deps.sh --web) and
# the npm packages pinned in web/package-lock.json (esbuild, puppeteer-core). Does nothing when they are present.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --web

# npm ci only when the lockfile changed since the last install (its checksum is kept beside the packages).
lock_sum=$(sha256sum web/package-lock.json | cut -d' ' -f1)
if [ "$(cat web/node_modules/.installed-lock-sha256 2>/dev/null)" != "$lock_sum" ]; then
  (cd web && npm ci --no-audit --no-fund --ignore-scripts)
  echo "$lock_sum" > web/node_modules/.installed-lock-sha256
fi
