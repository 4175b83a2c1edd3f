#!/usr/bin/env bash
# Fuzzing: builds the libFuzzer targets (fuzz/*_fuzz.cpp) with clang into build-fuzz and runs each for
# FUZZ_SECONDS (default 20) from a seed corpus: the test data a parser reads plus fuzz/corpus/<target>. Exits
# non-zero if a target fails to build or any run finds a crash, a sanitizer report, a leak or a timeout. Artifacts
# land in build-fuzz/artifacts/. FUZZ_SEED (default 1) fixes the run; 0 picks a random one. FUZZ_MERGE=1 adds the
# inputs that reached new code to fuzz/corpus/<target> (libFuzzer's -merge=1 keeps the corpus minimal).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${FUZZ_BUILD:-$ROOT/build-fuzz}"
SECONDS_PER_TARGET="${FUZZ_SECONDS:-20}"
JOBS="${JOBS:-2}"
# FUZZ_SANITIZERS: the sanitizers every target runs under (scripts/configure-sanitized.sh). A long campaign may keep
# only undefined (about three times the executions per second of address,undefined); the smoke run in CI keeps both.

# The whole library is instrumented for coverage (fuzzer-no-link) and sanitizers, not only the target files; the
# build is the one `make asan-test` runs the tests in.
bash "$ROOT/scripts/configure-sanitized.sh" "$BUILD"

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
seed launch_config_fuzz "$ROOT"/tests/data/frameworks/*/*.{sh,json,toml,py}
seed launch_script_fuzz "$ROOT"/tests/data/frameworks/megatron/*.sh
seed measured_fuzz "$ROOT"/tests/data/nccl-tests/*/*.csv "$ROOT"/tests/data/nccl-tests/*.csv "$ROOT"/tests/data/runs/*
seed user_json_fuzz "$ROOT"/data/hardware/*.json "$ROOT"/data/perf.json "$ROOT"/data/comm.json "$ROOT"/validation/data/*calibration.json
for t in "${targets[@]}"; do seed "$t" "$ROOT"/fuzz/corpus/"$t"/*; done

mkdir -p "$BUILD/artifacts"
status=0
failures=""
summary="target executions coverage findings"
for t in "${targets[@]}"; do
  mkdir -p "$BUILD/corpus/$t"
  echo "== $t: ${SECONDS_PER_TARGET}s"
  start=$(date +%s)
  findings=0
  # A fixed seed makes the smoke run repeatable (CI must not turn red by chance); FUZZ_SEED=0 for a random one.
  if ! "$BUILD/$t" -seed="${FUZZ_SEED:-1}" -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 -max_len=16384 \
      -print_final_stats=1 -artifact_prefix="$BUILD/artifacts/$t-" "$BUILD/corpus/$t" >"$BUILD/$t.log" 2>&1; then
    echo "fuzz-smoke: $t FAILED after $(( $(date +%s) - start ))s; see $BUILD/$t.log and $BUILD/artifacts/" >&2
    grep -E 'ERROR|SUMMARY|runtime error|terminate|what\(\)' "$BUILD/$t.log" | head -20 >&2 || true
    failures+=" $t"
    status=1
    findings=1
  fi
  # A run that ends while reading its seeds prints no coverage line: no match is not an error here.
  executions=$( (grep -oE 'stat::number_of_executed_units: [0-9]+' "$BUILD/$t.log" || true) | awk '{print $2}' | tail -1)
  coverage=$( (grep -oE 'cov: [0-9]+' "$BUILD/$t.log" || true) | awk '{print $2}' | tail -1)
  echo "$t: ${executions:-?} executions, coverage ${coverage:-?} edges"
  summary+=$'\n'"$t ${executions:-?} ${coverage:-?} $findings"
  if [ "${FUZZ_MERGE:-0}" = 1 ]; then
    mkdir -p "$ROOT/fuzz/corpus/$t"
    "$BUILD/$t" -merge=1 -timeout=10 -rss_limit_mb=2048 -max_len=16384 "$ROOT/fuzz/corpus/$t" "$BUILD/corpus/$t" \
      >"$BUILD/$t.merge.log" 2>&1 || echo "fuzz: merging $t's corpus failed; see $BUILD/$t.merge.log" >&2
  fi
done
echo
column -t <<<"$summary"
# Last, so that a log cut to its tail still holds them: each finding's report and its input (base64, at most 4 KiB),
# enough to reproduce it on another machine with `base64 -d > input; build-fuzz/TARGET input`.
for t in $failures; do
  echo "== $t: finding"
  grep -E 'ERROR|SUMMARY|runtime error|terminate|what\(\)|^ *#[0-9]+ 0x' "$BUILD/$t.log" | head -30 || true
  for artifact in "$BUILD"/artifacts/"$t"-*; do
    echo "input $(basename "$artifact"), $(wc -c <"$artifact") bytes, base64:"
    head -c 4096 "$artifact" | base64 -w 0
    echo
  done
done
exit $status
