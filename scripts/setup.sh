#!/usr/bin/env bash
# Installs Sandwich's Debian dependencies and builds it (Release) into build/.
# Usage: scripts/setup.sh [--no-deps] [extra cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake pkg-config git
  libhwloc-dev hwloc libsentencepiece-dev libpcre2-dev
  libboost-dev libboost-system-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  # benchmark-only peers and plotting
  libdnnl-dev libopenblas-dev libopenmpi-dev openmpi-bin gnuplot-nox
)

install_deps() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
    sudo="sudo"
  fi
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

if [ "${1:-}" = "--no-deps" ]; then shift; else install_deps; fi

jobs=$(nproc)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build build -j "$jobs"
echo "setup: built into build/bin"
