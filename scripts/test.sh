#!/usr/bin/env bash
# Installs what gpuplan needs (Debian 12, as root), builds it, and runs every test: unit and command-line tests,
# the same under AddressSanitizer + UndefinedBehaviorSanitizer, the PyTorch validation suite, and a fuzz smoke run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
make test
