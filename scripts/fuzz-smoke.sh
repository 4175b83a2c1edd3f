#!/usr/bin/env bash
# Fuzz smoke test: builds the libFuzzer targets (fuzz/*_fuzz.cpp) with clang into build-fuzz and runs each for
# FUZZ_SECONDS (default 20) over a seed corpus made from the test data. Exits non-zero if a target fails to build
# or any run finds a crash, a sanitizer report, a leak or a timeout. Artifacts land in build-fuzz/artifacts/.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${FUZZ_BUILD:-$ROOT/build-fuzz}"
SECONDS_PER_TARGET="${FUZZ_SECONDS:-20}"
JOBS="${JOBS:-2}"
CLANG="${CLANGXX:-clang++}"

command -v "$CLANG" >/dev/null || { echo "fuzz-smoke: $CLANG not found (libFuzzer needs clang)" >&2; exit 2; }

# The whole library is instrumented for coverage (fuzzer-no-link) and sanitizers, not only the target files.
CXX="$CLANG" cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DGPUPLAN_FUZZ=ON -DGPUPLAN_BENCH=OFF -DGPUPLAN_PYTHON=OFF -DGPUPLAN_BUILD_TESTS=OFF \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null

targets=()
for src in "$ROOT"/fuzz/*_fuzz.cpp; do targets+=("$(basename "$src" .cpp)"); done
cmake --build "$BUILD" -j "$JOBS" --target "${targets[@]}"

# Seeds: every test input a parser reads.
seed() {  # seed TARGET FILES...
  local dir="$BUILD/corpus/$1"; shift
  mkdir -p "$dir"
  for f in "$@"; do [ -f "$f" ] && cp "$f" "$dir/$(echo "$f" | sed 's|/|_|g')"; done
}
shopt -s nullglob
seed topo_fuzz "$ROOT"/tests/data/topo/*
seed nvlink_fuzz "$ROOT"/tests/data/nvlink/* "$ROOT"/tests/data/topo/0[1-2]*
seed rocm_fuzz "$ROOT"/tests/data/topo/2[01]*
seed hf_config_fuzz "$ROOT"/tests/data/hf-configs/*/config.json
seed request_fuzz "$ROOT"/fuzz/corpus/request_fuzz/*

mkdir -p "$BUILD/artifacts"
status=0
for t in "${targets[@]}"; do
  mkdir -p "$BUILD/corpus/$t"
  echo "== $t: ${SECONDS_PER_TARGET}s"
  start=$(date +%s)
  # A fixed seed makes the smoke run repeatable (CI must not turn red by chance); FUZZ_SEED=0 for a random one.
  if ! "$BUILD/$t" -seed="${FUZZ_SEED:-1}" -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 -max_len=16384 \
      -print_final_stats=1 -artifact_prefix="$BUILD/artifacts/$t-" "$BUILD/corpus/$t" >"$BUILD/$t.log" 2>&1; then
    echo "fuzz-smoke: $t FAILED after $(( $(date +%s) - start ))s; see $BUILD/$t.log and $BUILD/artifacts/" >&2
    grep -E 'ERROR|SUMMARY|runtime error|terminate|what\(\)' "$BUILD/$t.log" | head -20 >&2 || true
    status=1
  else
    grep -E 'stat::number_of_executed_units|cov:' "$BUILD/$t.log" | tail -2
  fi
done
exit $status
