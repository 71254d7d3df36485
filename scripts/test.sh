#!/usr/bin/env bash
# Runs the whole test suite, then runs it again built with ASan + UBSan (build-asan/, leak
# detection on). Reference data comes from $SANDWICH_SHARED (default ../shared).
# Usage: scripts/test.sh [--quick] [ctest args...]
#   --quick (or SANDWICH_QUICK=1): only the Release suite, for a fast local run
#   SANDWICH_SLOW=1: also the tests labelled "slow" (a minute or more each, e.g. a dummy 1.3B model)
set -euo pipefail
cd "$(dirname "$0")/.."
quick=${SANDWICH_QUICK:-0}
if [ "${1:-}" = "--quick" ]; then quick=1; shift; fi
slow=(-LE slow)
[ "${SANDWICH_SLOW:-0}" = 1 ] && slow=()
[ -d build ] || { echo "test: no build/ folder; run scripts/setup.sh first" >&2; exit 1; }
source scripts/phase_times.sh
cmake --build build -j "$(nproc)"
phase_start
ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 900 "${slow[@]}" "$@"
phase_end "test: suite (Release)"
[ "$quick" = 1 ] && exit 0

echo "test: the suite again under ASan + UBSan (build-asan/; --quick skips this)"
scripts/asan_build.sh
# Leaks fail a test; UBSan reports are fatal (-fno-sanitize-recover) and print their stack.
phase_start
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$(nproc)" --timeout 1800 "${slow[@]}" "$@"
phase_end "test: suite (ASan/UBSan)"
