#!/usr/bin/env bash
# Soak test: N minutes (default 5) of mixed hostile load against a local sandwichd on loopback —
# streams, hung-up and never-read streams, malformed requests, a rank SIGKILL every
# $SOAK_KILL_EVERY seconds — then checks: no 5xx but the kills', RSS back within 10 %, KV empty,
# greedy answers equal to their solo runs (the server runs --batch-invariant). Not part of CI.
# Usage: scripts/soak.sh [minutes] [sandwich-bench soak options...]
# Env: SANDWICH_SHARED (reference data, default ../shared), SOAK_MODEL_ARGS, SOAK_PLAN_ARGS,
#      SOAK_KILL_EVERY (seconds, default 120; 0: none), SOAK_OUT (default build/soak).
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-5}
[ $# -gt 0 ] && shift
[[ "$minutes" =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "soak: minutes must be a number, got '$minutes'" >&2; exit 2; }
[ -x build/bin/sandwichd ] && [ -x build/bin/sandwich-bench ] ||
  { echo "soak: build/bin/sandwichd or sandwich-bench missing; run scripts/setup.sh first" >&2; exit 1; }

shared=${SANDWICH_SHARED:-../shared}
stories="$shared/data/models/stories260K"
model_args=${SOAK_MODEL_ARGS:-"--model $stories/stories260K.bin --tokenizer $stories/tok512.bin --served-model-name stories"}
if [ "$(nproc)" -ge 2 ]; then
  plan_args=${SOAK_PLAN_ARGS:-"--prefill-config 2x1 --decode-config 2x1"}
  kill_every=${SOAK_KILL_EVERY:-120}
else
  plan_args=${SOAK_PLAN_ARGS:-}
  kill_every=0
fi
out=${SOAK_OUT:-build/soak}
mkdir -p "$out"
log="$out/sandwichd.log"

# shellcheck disable=SC2086  # the *_ARGS variables are word lists
build/bin/sandwichd $model_args $plan_args --batch-invariant --host 127.0.0.1 --port 0 \
  --max-num-seqs 32 >"$log" 2>&1 &
pid=$!
trap 'kill -9 $pid 2>/dev/null || true' EXIT

port=""
for _ in $(seq 600); do
  port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$log" | head -1)
  [ -n "$port" ] && break
  kill -0 $pid 2>/dev/null || { echo "soak: sandwichd exited at start; see $log" >&2; cat "$log" >&2; exit 1; }
  sleep 0.2
done
[ -n "$port" ] || { echo "soak: sandwichd did not say where it listens; see $log" >&2; exit 1; }
echo "soak: sandwichd pid $pid on port $port, $minutes min, rank kill every ${kill_every}s; log $log"

rc=0
build/bin/sandwich-bench soak --url "http://127.0.0.1:$port" --server-pid $pid \
  --minutes "$minutes" --kill-rank-every "$kill_every" --json "$out/soak.json" "$@" || rc=$?

kill -TERM $pid
wait $pid || { echo "soak: sandwichd exited with $? after SIGTERM; see $log" >&2; rc=1; }
trap - EXIT
echo "soak: report in $out/soak.json"
exit $rc
