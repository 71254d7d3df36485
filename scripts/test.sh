#!/usr/bin/env bash
# Runs the whole test suite. Reference data comes from $SANDWICH_SHARED (default ../shared).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d build ] || { echo "test: no build/ folder; run scripts/setup.sh first" >&2; exit 1; }
cmake --build build -j "$(nproc)"
ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 900 "$@"
