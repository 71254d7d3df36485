#!/usr/bin/env bash
# Configures and builds the test suite with AddressSanitizer + UndefinedBehaviorSanitizer into
# build-asan/ (-O1 -g1, any UBSan report is fatal; Google Benchmark binaries left out).
# Usage: scripts/asan_build.sh [extra cmake args...]   (setup.sh and test.sh call it)
set -euo pipefail
cd "$(dirname "$0")/.."
launcher=()
[ -n "${CMAKE_CXX_COMPILER_LAUNCHER:-}" ] && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER="$CMAKE_CXX_COMPILER_LAUNCHER")
source scripts/phase_times.sh
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Release -DSANDWICH_SANITIZE=ON \
  -DSANDWICH_BUILD_BENCHMARKS=OFF $(cmake_generator build-asan) "${launcher[@]}" "$@" >/dev/null
cmake --build build-asan -j "$(nproc)"
