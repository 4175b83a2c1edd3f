#!/usr/bin/env bash
# Configures the sanitized build (default build-fuzz): clang, the whole library instrumented for coverage
# (fuzzer-no-link) and with the sanitizers SANITIZERS (default address,undefined). The same objects serve the
# sanitized tests (`make asan-test`) and the libFuzzer targets (scripts/fuzz-smoke.sh), so CI compiles the library
# once for both. Optimised (-O2 with debug information): the tests run several times faster than at -O0.
#   scripts/configure-sanitized.sh [BUILD_DIR]    (FUZZ_SANITIZERS, CLANGXX as for fuzz-smoke.sh)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:-${FUZZ_BUILD:-$ROOT/build-fuzz}}"
CLANG="${CLANGXX:-clang++}"
SANITIZERS="${FUZZ_SANITIZERS:-address,undefined}"
command -v "$CLANG" >/dev/null || { echo "configure-sanitized: $CLANG not found (libFuzzer needs clang)" >&2; exit 2; }
CXX="$CLANG" cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DGPUPLAN_FUZZ=ON -DGPUPLAN_FUZZ_SANITIZERS="$SANITIZERS" -DGPUPLAN_BENCH=OFF -DGPUPLAN_PYTHON=OFF -DGPUPLAN_BUILD_TESTS=ON \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,$SANITIZERS -fno-sanitize-recover=all -fno-omit-frame-pointer" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=$SANITIZERS" >/dev/null
