#!/usr/bin/env bash
# `pip install .` as a Python user runs it, without any package index (no network): into a fresh virtual
# environment of the given interpreter, then one question answered.
#   scripts/check-pip-install.sh [python3]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
python="${1:-python3}"
venv=$(mktemp -d /tmp/gpuplan-pip-XXXXXX)
trap 'rm -rf "$venv"' EXIT
"$python" -m venv "$venv"
"$venv/bin/pip" install --no-index --quiet "$root"
cd "$venv"
# 7e9 parameters in fp16: 2 bytes each of weights (hand derivation, docs/memory.md table 1).
"$venv/bin/python" -c "
import gpuplan
weights = gpuplan.memory(params=7e9, precision='fp16', optimizer='adam').per_gpu.weights
assert weights == 14_000_000_000, weights
print('pip install .: gpuplan', gpuplan.__version__, 'imports and answers')
"
# The command the package installs (pyproject.toml [project.scripts]): its help needs no PyTorch, and without
# PyTorch a measurement stops with one line saying so (exit status 2).
"$venv/bin/gpuplan-measure" --help | grep -q -- "--peak-tflops"
if ! "$venv/bin/python" -c "import torch" 2>/dev/null; then
  set +e
  message=$("$venv/bin/gpuplan-measure" --shapes 64,64,64 --peak-tflops 1 --out "$venv/perf.json" 2>&1)
  status=$?
  set -e
  if [ "$status" != 2 ] || ! grep -q "gpuplan-measure: error: PyTorch is needed" <<<"$message"; then
    echo "gpuplan-measure without PyTorch: exit $status, '$message'" >&2
    exit 1
  fi
fi
echo "pip install .: gpuplan-measure installed"
