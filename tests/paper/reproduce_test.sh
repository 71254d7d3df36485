#!/usr/bin/env bash
# reproduce_test.sh BIN_DIR: the paper's reproduction on the steps that take seconds (Figure 7,
# Table 4, Kunpeng), then the report's sections; bad options are one line and exit 2. Not the
# machine step: it measures the machine again and rewrites the calibration other tests read.
set -euo pipefail
bin=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
command -v python3 >/dev/null || { echo "reproduce test: no python3; skipped"; exit 77; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() {
  echo "reproduce test: $*" >&2
  exit 1
}

"$root/scripts/paper/reproduce.sh" --quick --bin "$bin" --only fig7,table4,kunpeng \
  -o "$out/run" >"$out/log" 2>&1 || { cat "$out/log" >&2; fail "the run failed"; }
report=$out/run/report.md
[ -s "$report" ] || fail "no report.md"
for want in "## The machine and its limits" "## Figure 7" "Kendall tau" \
  "## Table 4" "placement" "single-sequence SLO (decode at batch 1)**: by the simulator alone" \
  "decode 8x12 [0,2,4,6,8,10,12,14,16,18,20,22]" "## What could not be reproduced here"; do
  grep -qF -- "$want" "$report" || fail "the report lacks '$want'"
done
# A step that was not run says so, and the steps file has a row for each that was.
grep -qF "Not run in this invocation (Figure 1 (counters))" "$report" ||
  fail "the report does not say Figure 1 was not run"
[ "$(grep -c $'\tok\t' "$out/run/steps.tsv")" -eq 3 ] || fail "steps.tsv: $(cat "$out/run/steps.tsv")"

# Refusals: one line, exit 2, nothing run.
refused() {
  local rc=0
  "$root/scripts/paper/reproduce.sh" "$@" >"$out/err" 2>&1 || rc=$?
  [ "$rc" -eq 2 ] || fail "$* exited $rc"
  [ "$(wc -l <"$out/err")" -eq 1 ] || fail "$*: $(cat "$out/err")"
  grep -q "^reproduce: " "$out/err" || fail "$*: $(cat "$out/err")"
}
refused --no-such-option
refused --bin "$bin" --llama-server /nonexistent/llama-server -o "$out/x"
refused --bin "$bin" --reference no-such-machine -o "$out/x"
refused --bin /nonexistent -o "$out/x"
echo "reproduce test: ok"
