#!/usr/bin/env bash
# Installs Sandwich's Debian dependencies and builds it (Release) into build/, and the tests
# again with AddressSanitizer + UndefinedBehaviorSanitizer into build-asan/ (no benchmarks).
# Usage: scripts/setup.sh [--no-deps] [--quick] [extra cmake args...]
#   --quick (or SANDWICH_QUICK=1): skip the sanitizer build (scripts/test.sh --quick skips its suite)
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git clang-format
  libhwloc-dev hwloc libsentencepiece-dev libpcre2-dev
  libboost-dev libboost-system-dev nlohmann-json3-dev
  libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev
  # tests only: validating structured output against its JSON Schema, and the official
  # JSON-Schema-Test-Suite's schemas and instances
  libvalijson-dev json-schema-test-suite
  # benchmark-only peers and plotting
  libdnnl-dev libopenblas-dev libopenmpi-dev openmpi-bin gnuplot-nox
  # the paper reproduction's report (scripts/paper/write_report.py)
  python3
  # a real client in the server tests
  curl
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

# Node.js runs the official OpenAI SDK in one server test. Many machines already carry a Node.js
# that is not Debian's (NodeSource's, say); asking apt for Debian's npm beside it breaks, so npm
# comes from apt only where there is none, and a failure only skips that test.
install_node() {
  command -v npm >/dev/null && return 0
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "setup: installing nodejs npm"
  $sudo apt-get update -qq || true
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends nodejs npm ||
    echo "setup: could not install nodejs/npm; the OpenAI SDK test will be skipped" >&2
}

deps=1 quick=${SANDWICH_QUICK:-0}
while [ $# -gt 0 ]; do
  case "$1" in
    --no-deps) deps=0 ;;
    --quick) quick=1 ;;
    *) break ;;
  esac
  shift
done

# The OpenAI SDK the server tests drive sandwichd with, pinned by its package-lock.json. A
# machine without the npm registry still builds; that one test then says how to get it.
install_openai_client() {
  local dir=tests/server/openai_client
  [ -d "$dir/node_modules/openai" ] && return 0
  command -v npm >/dev/null || { echo "setup: npm not found; the OpenAI SDK test will be skipped" >&2; return 0; }
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) ||
    echo "setup: npm ci failed in $dir; the OpenAI SDK test will be skipped" >&2
}

source scripts/phase_times.sh
phase_start
if [ "$deps" = 1 ]; then install_deps; install_node; fi
if [ "${SANDWICH_SKIP_NPM:-0}" != 1 ]; then install_openai_client; fi
phase_end "setup: packages and npm"

jobs=$(nproc)
phase_start
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release $(cmake_generator build) "$@" >/dev/null
phase_end "setup: configure (Release)"
phase_start
cmake --build build -j "$jobs"
phase_end "setup: build (Release)"
echo "setup: built into build/bin"
if [ "$quick" != 1 ]; then
  phase_start
  scripts/asan_build.sh "$@"
  phase_end "setup: build (ASan/UBSan)"
  echo "setup: built the ASan/UBSan tests into build-asan/"
fi
