#!/usr/bin/env bash
# Regenerates validation/time_report.md: step-time predictions against measured and published step times.
#   validation/run_time_validation.sh [--fit] [BUILD_DIR]
# --fit refits validation/data/a100-megatron-calibration.json on the vTrain single-node A100 set first.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
fit=""
if [[ "${1:-}" == "--fit" ]]; then fit="--fit"; shift; fi
build="${1:-$repo/build-time-validation}"
if [[ ! -f "$build/libgpuplan_host.a" ]]; then
  cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGPUPLAN_BENCH=OFF >/dev/null
  cmake --build "$build" -j2 --target gpuplan_host
fi
g++ -std=c++20 -O2 -I"$repo/include" "$repo/validation/time_validate.cpp" "$repo/validation/time_sets.cpp" \
  "$repo/validation/time_set_fp8.cpp" "$repo/validation/time_set_torchtitan.cpp" \
  "$build/libgpuplan_host.a" \
  "$build/libgpuplan_core.a" ${GPUPLAN_EXTRA_LIBS:-} -lfmt -pthread -o "$build/time_validate"
if [[ -z "$fit" && ! -f "$repo/validation/data/a100-megatron-calibration.json" ]]; then fit="--fit"; fi
"$build/time_validate" "$repo" $fit
echo "wrote $repo/validation/time_report.md"
