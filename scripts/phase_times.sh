# Sourced by setup.sh, asan_build.sh and test.sh: times each phase and appends it to
# build-phase-times.txt (or $SANDWICH_PHASE_LOG), which .ci/run prints at the end.
SANDWICH_PHASE_LOG=${SANDWICH_PHASE_LOG:-$PWD/build-phase-times.txt}

phase_start() { _sandwich_phase_t0=$(date +%s); }

phase_end() {
  local took=$(($(date +%s) - _sandwich_phase_t0))
  printf '%-34s %5d s\n' "$1" "$took" | tee -a "$SANDWICH_PHASE_LOG" >&2
}

# "-G Ninja" for a new build folder where ninja is installed (its log keeps each file's
# compile time: .ninja_log); an existing folder keeps the generator it was made with.
cmake_generator() {
  [ -f "$1/CMakeCache.txt" ] && return 0
  command -v ninja >/dev/null && echo "-G Ninja"
  return 0
}
