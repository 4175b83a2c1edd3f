#!/usr/bin/env bash
# Checks that every function of the library (src/), the program (apps/) and the Python binding (python/) has at
# most 80 lines, with clang-tidy's readability-function-size on the build's compile_commands.json.
#   scripts/check-function-size.sh [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
[ -f "$build/compile_commands.json" ] || { echo "check-function-size: no $build/compile_commands.json" >&2; exit 2; }
files=$(cd "$root" && ls src/*/*.cpp apps/*/*.cpp python/*.cpp)
config='{Checks: "-*,readability-function-size", CheckOptions: [{key: readability-function-size.LineThreshold, value: 80}]}'
report=$(cd "$root" && echo "$files" | xargs -P "$(nproc)" -n 4 clang-tidy -p "$build" --quiet --config="$config" 2>/dev/null |
         grep -E "warning: function .* exceeds" || true)
if [ -n "$report" ]; then
  echo "functions over 80 lines:" >&2
  echo "$report" >&2
  exit 1
fi
echo "function size: every function in $(echo "$files" | wc -l) files has at most 80 lines"
