#!/usr/bin/env bash
# Builds the fuzz targets (tests/fuzz/) as libFuzzer binaries with clang, ASan and UBSan into
# build-fuzz/, then runs each for SECONDS (default 60) starting from its seed corpus. Inputs the
# fuzzer finds go to build-fuzz/corpus/<target>/ (not into the repository); a crash, sanitizer
# report, hang or over-large allocation fails the run, naming the target and the input file.
# Usage: scripts/fuzz.sh [seconds] [target...]   (targets: the tests/fuzz/*_fuzz.cpp stems)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
[ $# -gt 0 ] && shift
case "$seconds" in '' | *[!0-9]*) echo "fuzz: seconds must be a whole number, got '$seconds'" >&2; exit 2 ;; esac

if ! command -v clang++ >/dev/null ||
  ! echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' |
    clang++ -x c++ -fsanitize=fuzzer,address,undefined - -o /dev/null 2>/dev/null; then
  echo "fuzz: needs clang with libFuzzer; install it with: sudo apt-get install clang libclang-rt-14-dev" >&2
  exit 1
fi

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in tests/fuzz/*_fuzz.cpp; do
    f=${f##*/}
    targets+=("${f%_fuzz.cpp}")
  done
fi

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang \
  -DCMAKE_CXX_COMPILER=clang++ -DSANDWICH_FUZZ=ON "${launcher[@]}" >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target fuzz_seeds "${targets[@]/#/fuzz_}"
# Model and tokenizer seeds come from the reference data, not from the repository.
build-fuzz/fuzz/fuzz_seeds "${SANDWICH_SHARED:-../shared}/data" build-fuzz/seeds "${targets[@]}"

export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
failed=()
summary=()
for t in "${targets[@]}"; do
  corpus=build-fuzz/corpus/$t artifacts=build-fuzz/crashes/$t
  mkdir -p "$corpus" "$artifacts"
  log=build-fuzz/fuzz-$t.log
  echo "fuzz: $t for ${seconds}s"
  # -timeout: one input running this long is a hang; -rss_limit_mb/-malloc_limit_mb: a file
  # that makes a loader allocate gigabytes is a bug too.
  if build-fuzz/fuzz/fuzz_"$t" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 \
    -malloc_limit_mb=1024 -print_final_stats=1 -artifact_prefix="$artifacts/" \
    "$corpus" build-fuzz/seeds/"$t" $([ -d "tests/fuzz/corpus/$t" ] && echo "tests/fuzz/corpus/$t") \
    >"$log" 2>&1; then
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    units=$(find "$corpus" -type f | wc -l)
    summary+=("$(printf '%-20s %10s execs  %5s inputs found' "$t" "${execs:-?}" "$units")")
  else
    crash=$(ls -t "$artifacts" 2>/dev/null | head -1)
    echo "fuzz: $t FAILED: ${crash:+$artifacts/$crash }(log: $log)" >&2
    grep -E "ERROR: |runtime error:|SUMMARY:" "$log" | head -5 >&2 || true
    failed+=("$t")
    summary+=("$(printf '%-20s FAILED %s' "$t" "${crash:+$artifacts/$crash}")")
  fi
done
printf '%s\n' "fuzz: ${seconds}s per target" "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: ${#failed[@]} target(s) found problems: ${failed[*]}" >&2
  exit 1
fi
