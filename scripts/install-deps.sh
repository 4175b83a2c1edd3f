#!/usr/bin/env bash
# Installs the Debian packages gpuplan needs to build, test and validate (with --web, the web page's too).
# Does nothing when they are all present. Run as root on Debian 12.
set -euo pipefail

packages=(
  build-essential make cmake ninja-build pkg-config
  nlohmann-json3-dev libcli11-dev libfmt-dev libtomlplusplus-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  clang libclang-rt-14-dev clang-tidy
  python3 python3-dev python3-venv python3-torch python3-pytest python3-pybind11 pybind11-dev
)

# --web: what the web page needs too: emscripten (the core as WebAssembly), chromium (its browser tests), and npm
# unless the machine's Node.js brought its own.
if [ "${1:-}" = "--web" ]; then
  packages+=(emscripten chromium)
  command -v npm >/dev/null || packages+=(npm)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages and not root; run as root: apt-get install ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
