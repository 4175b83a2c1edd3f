#!/usr/bin/env bash
# Installs what gpuplan needs (Debian 12, as root), builds it, and runs it on a built-in example.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
make demo
