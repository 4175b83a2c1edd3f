#!/usr/bin/env bash
# Proves that gpuplan_core is pure: none of its object files calls anything that reads or writes files, starts
# threads, loads libraries or reads the environment. Those belong to gpuplan_host (src/host/); the core must build
# as it is for WebAssembly.
#   scripts/check-core-purity.sh path/to/libgpuplan_core.a
set -euo pipefail
archive="${1:?usage: check-core-purity.sh libgpuplan_core.a}"
# Undefined symbols the core's objects need from elsewhere, demangled.
needed=$(nm -C --undefined-only "$archive" | awk 'NF >= 2 {sub(/^ *U /, ""); print}' | sort -u)
forbidden='^(open|open64|openat|fopen|fopen64|freopen|read|write|fread|fwrite|stat|stat64|opendir|readdir|getenv|secure_getenv|dlopen|dlsym|dlclose|pthread_create|pthread_join|thrd_create|system|popen|fork|execv|execvp)(@.*)?$|std::thread|std::filesystem|std::basic_ifstream|std::basic_ofstream|std::basic_fstream|std::basic_filebuf|std::cin\b|std::cout\b|std::cerr\b'
found=$(grep -E "$forbidden" <<<"$needed" || true)
if [ -n "$found" ]; then
  echo "gpuplan_core is not pure: it uses" >&2
  echo "$found" >&2
  exit 1
fi
echo "gpuplan_core: no file I/O, threads, dlopen or environment among $(wc -l <<<"$needed") external symbols"
