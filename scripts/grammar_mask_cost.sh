#!/usr/bin/env bash
# What structured output costs per decode step: starts sandwichd on a dummy-weight model with the
# real Llama-3 tokenizer (128k vocabulary; default: llama3-8b's shapes, --load-format dummy), then
# at batch 1 and batch 16 runs the same decode-bound chat requests unconstrained, under a JSON
# Schema grammar with a cold automaton, and again warm, and reads /metrics around each phase.
# Prints per phase: decode steps, forward time per step, grammar time per step (masks + checks,
# sandwich:grammar_seconds_total) and its share of the step. Slow: not in the tests.
# Usage: scripts/grammar_mask_cost.sh [--model PRESET_OR_PATH] [--tokens N] [--sandwichd BIN]
#          [-- extra sandwichd flags...]
# Env: SANDWICH_SHARED (reference data, default ../shared).
set -euo pipefail
cd "$(dirname "$0")/.."
shared=${SANDWICH_SHARED:-../shared}
model=llama3-8b
tokens=48
sandwichd=build/bin/sandwichd
while [ $# -gt 0 ]; do
  case "$1" in
    --model) model=$2; shift 2 ;;
    --tokens) tokens=$2; shift 2 ;;
    --sandwichd) sandwichd=$2; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "grammar_mask_cost: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
command -v python3 >/dev/null || { echo "grammar_mask_cost: python3 is needed" >&2; exit 1; }
[ -x "$sandwichd" ] || { echo "grammar_mask_cost: $sandwichd missing; build it first" >&2; exit 1; }
tok="$shared/data/tokenizers/llama3/tokenizer.model"
[ -f "$tok" ] || { echo "grammar_mask_cost: $tok missing (set SANDWICH_SHARED)" >&2; exit 1; }

out=$(mktemp -d)
log="$out/sandwichd.log"
args=(--model "$model" --tokenizer "$tok" --served-model-name bench --host 127.0.0.1 --port 0
      --max-num-seqs 16)
[ -f "$model" ] || args+=(--load-format dummy)
"$sandwichd" "${args[@]}" "$@" >"$log" 2>&1 &
pid=$!
trap 'kill -9 $pid 2>/dev/null || true; rm -rf "$out"' EXIT
port=""
for _ in $(seq 3000); do
  grep -q "sandwichd: ready" "$log" && port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$log" | head -1)
  [ -n "$port" ] && break
  kill -0 $pid 2>/dev/null || { echo "grammar_mask_cost: sandwichd exited at start:" >&2; cat "$log" >&2; exit 1; }
  sleep 0.2
done
[ -n "$port" ] || { echo "grammar_mask_cost: sandwichd did not start; log:" >&2; cat "$log" >&2; exit 1; }
echo "grammar_mask_cost: $model on port $port, $tokens tokens a request"

python3 - "$port" "$tokens" <<'PY'
import http.client, json, sys, threading

port, tokens = int(sys.argv[1]), int(sys.argv[2])
# A schema of the kind APIs ask for: strings, numbers, an enum, an array of objects. Bounded so
# that the random model's output stays inside it for the whole run.
schema = {"type": "object", "properties": {
    "name": {"type": "string"}, "age": {"type": "integer"},
    "role": {"enum": ["admin", "user", "guest"]},
    "items": {"type": "array", "items": {"type": "object", "properties": {
        "id": {"type": "integer"}, "label": {"type": "string"}}, "required": ["id", "label"]}}},
    "required": ["name", "age", "role", "items"]}

def metrics():
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    c.request("GET", "/metrics")
    m = {}
    for line in c.getresponse().read().decode().splitlines():
        if line.startswith("sandwich:") and " " in line:
            k, v = line.rsplit(" ", 1)
            m[k.split("{")[0]] = float(v)
    return m

def one(constrained, seed):
    body = {"messages": [{"role": "user", "content": "Describe a user as JSON."}],
            "max_tokens": tokens, "min_tokens": tokens, "temperature": 1.0, "seed": seed,
            "ignore_eos": True}
    if constrained:
        body["response_format"] = {"type": "json_schema",
                                   "json_schema": {"name": "user", "schema": schema}}
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=3600)
    c.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    if r.status != 200:
        failures.append(f"{r.status}: {data[:300]}")

failures = []

def phase(name, batch, constrained, seed):
    before = metrics()
    ts = [threading.Thread(target=one, args=(constrained, seed + i)) for i in range(batch)]
    for t in ts: t.start()
    for t in ts: t.join()
    if failures:
        sys.exit(f"grammar_mask_cost: a request failed: {failures[0]}")
    after = metrics()
    d = lambda k: after.get(k, 0) - before.get(k, 0)
    steps = d("sandwich:decode_steps_total")
    fwd = d("sandwich:decode_step_seconds_total") / max(steps, 1)
    gram = d("sandwich:grammar_seconds_total") / max(steps, 1)
    gtok = d("sandwich:grammar_tokens_total")
    print(f"{name:28s} {batch:5d} {int(steps):6d} {fwd*1e3:12.2f} {gram*1e3:12.3f} "
          f"{100*gram/max(fwd,1e-12):8.2f}% {int(gtok):7d}")

print(f"{'phase':28s} {'batch':>5s} {'steps':>6s} {'fwd ms/step':>12s} {'mask ms/step':>12s} "
      f"{'share':>9s} {'g.tokens':>7s}")
phase("warm-up (unconstrained)", 1, False, 1)
for batch in (1, 16):
    phase("unconstrained", batch, False, 100)
    phase("json schema, cold" if batch == 1 else "json schema (cache of b=1)", batch, True, 200)
    phase("json schema, warm", batch, True, 300)
PY
