#!/usr/bin/env bash
# What pipeline parallelism costs on one machine, every hop over TCP (mpirun --mca btl tcp,self),
# at the same total cores: sandwichd with one node of all cores against P nodes of one core each
# (mpirun binds each node to its core), on a dummy-weight model. Measures, in one run:
#   - the link: MPI ping-pong latency and bandwidth between two bound processes
#     (sandwich-tune link-probe);
#   - prefill tokens/s (server-side step time of --prompt-token prompts, one at a time);
#   - the decode step at batch 1 against one node of ONE core, which runs the same layers on the
#     same cores as the pipeline does, one after another: the difference over the P hops
#     (head -> node 1 -> ... -> head) is the cost of a hop, set beside the ping-pong latency;
#     on the model, and on stories260K (../shared), whose steps are short enough to show it;
#   - decode at batch 16, with the pipeline's utilization (its nodes' busy time over P x the
#     step's wall time), with the automatic micro-batches and with --micro-batches 1.
# Slow (minutes): not in the tests. Numbers from a loaded machine are noise: run it alone.
# Usage: scripts/pipeline_cost.sh [--model PRESET_OR_PATH] [--nodes P] [--prompt-tokens N]
#          [--tokens N] [--sandwichd BIN] [-- extra sandwichd flags...]
# Env: SANDWICH_SHARED (reference data, default ../shared).
set -euo pipefail
cd "$(dirname "$0")/.."
shared=${SANDWICH_SHARED:-../shared}
model=llama-160m
nodes=2
prompt_tokens=512
tokens=32
sandwichd=build/bin/sandwichd
tune=build/bin/sandwich-tune
while [ $# -gt 0 ]; do
  case "$1" in
    --model) model=$2; shift 2 ;;
    --nodes) nodes=$2; shift 2 ;;
    --prompt-tokens) prompt_tokens=$2; shift 2 ;;
    --tokens) tokens=$2; shift 2 ;;
    --sandwichd) sandwichd=$2; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "pipeline_cost: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
command -v python3 >/dev/null || { echo "pipeline_cost: python3 is needed" >&2; exit 1; }
command -v mpirun >/dev/null || { echo "pipeline_cost: mpirun is needed (openmpi-bin)" >&2; exit 1; }
[ -x "$sandwichd" ] || { echo "pipeline_cost: $sandwichd missing; build it first" >&2; exit 1; }
cpus=$(nproc)
[ "$nodes" -le "$cpus" ] || { echo "pipeline_cost: $nodes nodes need $nodes CPUs; this machine has $cpus" >&2; exit 1; }
tok="$shared/data/tokenizers/llama2/tokenizer.model"
[ -f "$tok" ] || { echo "pipeline_cost: $tok missing (set SANDWICH_SHARED)" >&2; exit 1; }
mpi=(mpirun --bind-to core --map-by core --mca btl tcp,self)
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)
extra=("$@")

out=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$out"; }
trap cleanup EXIT

echo "pipeline_cost: $model, $nodes nodes of one core against one node of $nodes cores, over TCP"
echo "== link: MPI ping-pong between two bound processes"
if [ -x "$tune" ] && "${mpi[@]}" -np 2 "$tune" link-probe >"$out/link.txt" 2>&1; then
  cat "$out/link.txt"
else
  echo "(sandwich-tune link-probe not available: $(tail -1 "$out/link.txt" 2>/dev/null))"
fi

# Starts sandwichd (setup name, then the launcher and its flags), waits until it serves, runs the
# client phase ($phase), stops it with SIGTERM (the head prints the pipeline's figures) and keeps
# its log.
run() {
  local name=$1 phase=$2
  shift 2
  local log="$out/$name.$phase.log"
  "$@" --model "$model" --load-format dummy --tokenizer "$tok" --host 127.0.0.1 --port 0 \
    --max-num-seqs 16 --no-prefix-caching "${extra[@]}" >"$log" 2>&1 &
  local pid=$!
  pids+=("$pid")
  local port=""
  for _ in $(seq 3000); do
    grep -q "sandwichd: ready" "$log" &&
      port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$log" | head -1)
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || { echo "pipeline_cost: $name exited at start:" >&2; cat "$log" >&2; exit 1; }
    sleep 0.2
  done
  [ -n "$port" ] || { echo "pipeline_cost: $name did not start" >&2; cat "$log" >&2; exit 1; }
  python3 - "$port" "$phase" "$prompt_tokens" "$tokens" "$name" <<'PY'
import http.client, json, re, sys, threading
port, phase, prompt_tokens, tokens, name = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]

def post(body):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    c.request("POST", "/v1/completions", json.dumps(body), {"content-type": "application/json"})
    r = c.getresponse()
    d = json.loads(r.read())
    if r.status != 200:
        raise SystemExit(f"pipeline_cost: HTTP {r.status}: {d}")
    return d

def metrics():
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request("GET", "/metrics")
    text = c.getresponse().read().decode()
    m = {}
    for line in text.splitlines():
        g = re.match(r"^(sandwich:[a-z_]+)(\{[^}]*\})? ([0-9.eE+-]+)$", line)
        if g:
            m[g.group(1)] = m.get(g.group(1), 0) + float(g.group(3))
    return m

# Token ids of the prompt: distinct per request (the prefix cache is off anyway).
def prompt(i, n):
    return [1] + [1000 + (i * 7919 + j * 31) % 28000 for j in range(n - 1)]

def delta(a, b, key):
    return b.get(key, 0) - a.get(key, 0)

if phase == "prefill-decode":
    post({"prompt": prompt(99, prompt_tokens), "max_tokens": 2, "temperature": 0})  # warm-up
    m0 = metrics()
    for i in range(3):
        post({"prompt": prompt(i, prompt_tokens), "max_tokens": 1, "temperature": 0})
    m1 = metrics()
    secs = delta(m0, m1, "sandwich:prefill_step_seconds_total")
    print(f"{name}: prefill {3 * prompt_tokens / secs:.1f} tokens/s ({prompt_tokens}-token prompts, "
          f"{delta(m0, m1, 'sandwich:prefill_steps_total'):.0f} steps)")
    post({"prompt": prompt(50, 8), "max_tokens": tokens, "temperature": 0, "ignore_eos": True})
    m2 = metrics()
    steps = delta(m1, m2, "sandwich:decode_steps_total")
    secs = delta(m1, m2, "sandwich:decode_step_seconds_total")
    print(f"{name}: decode batch 1: {secs / steps * 1e3:.3f} ms a step ({steps:.0f} steps)")
else:
    threads, errors = [], []
    def one(i):
        try:
            post({"prompt": prompt(200 + i, 8), "max_tokens": tokens, "temperature": 0, "ignore_eos": True})
        except BaseException as e:
            errors.append(e)
    post({"prompt": prompt(300, 8), "max_tokens": 2, "temperature": 0})
    m0 = metrics()
    for i in range(16):
        t = threading.Thread(target=one, args=(i,))
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    if errors:
        raise SystemExit(f"pipeline_cost: {errors[0]}")
    m1 = metrics()
    steps = delta(m0, m1, "sandwich:decode_steps_total")
    secs = delta(m0, m1, "sandwich:decode_step_seconds_total")
    gen = delta(m0, m1, "sandwich:generation_tokens_total")
    print(f"{name}: decode batch 16: {secs / steps * 1e3:.3f} ms a step, {gen / secs:.1f} tokens/s "
          f"in decode steps ({steps:.0f} steps)")
PY
  kill -TERM "$pid"
  wait "$pid" 2>/dev/null || true
  grep -h "pipeline \(prefill\|decode\):" "$log" | sed "s/^sandwichd: /$name: /" || true
}

all=$(seq -s, 0 $((nodes - 1)))
echo "== prefill and decode at batch 1"
run "1 node x $nodes cores" prefill-decode taskset -c "$all" "$sandwichd" --threads "$nodes"
run "1 node x 1 core" prefill-decode taskset -c 0 "$sandwichd" --threads 1
run "$nodes nodes x 1 core" prefill-decode "${mpi[@]}" -np "$nodes" "$sandwichd" -pp "$nodes"
stories="$shared/data/models/stories260K"
if [ -f "$stories/stories260K.bin" ]; then
  echo "== the hop, on stories260K (a decode step of ~0.1 ms)"
  hop() {
    local name=$1
    shift
    local log="$out/hop.$name.log"
    "$@" --model "$stories/stories260K.bin" --tokenizer "$stories/tok512.bin" --host 127.0.0.1 \
      --port 0 >"$log" 2>&1 &
    local pid=$!
    pids+=("$pid")
    local port=""
    for _ in $(seq 600); do
      port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$log" | head -1)
      [ -n "$port" ] && break
      sleep 0.1
    done
    python3 - "$port" "$name" <<'PY'
import http.client, json, re, sys
port, name = int(sys.argv[1]), sys.argv[2]
def metrics():
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request("GET", "/metrics")
    m = {}
    for line in c.getresponse().read().decode().splitlines():
        g = re.match(r"^(sandwich:[a-z_]+)(\{[^}]*\})? ([0-9.eE+-]+)$", line)
        if g:
            m[g.group(1)] = m.get(g.group(1), 0) + float(g.group(3))
    return m
def post(n):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    c.request("POST", "/v1/completions", json.dumps({"prompt": "Once upon a time", "max_tokens": n,
              "temperature": 0, "ignore_eos": True}), {"content-type": "application/json"})
    c.getresponse().read()
post(8)
m0 = metrics()
for _ in range(5):
    post(400)
m1 = metrics()
steps = m1["sandwich:decode_steps_total"] - m0["sandwich:decode_steps_total"]
secs = m1["sandwich:decode_step_seconds_total"] - m0["sandwich:decode_step_seconds_total"]
print(f"{name}: stories260K decode step {secs / steps * 1e6:.1f} us ({steps:.0f} steps)")
PY
    kill -TERM "$pid"
    wait "$pid" 2>/dev/null || true
  }
  hop "1 node x 1 core" taskset -c 0 "$sandwichd" --threads 1
  hop "$nodes nodes x 1 core" "${mpi[@]}" -np "$nodes" "$sandwichd" -pp "$nodes"
fi
echo "== decode at batch 16"
run "1 node x $nodes cores" batch16 taskset -c "$all" "$sandwichd" --threads "$nodes"
run "$nodes nodes x 1 core" batch16 "${mpi[@]}" -np "$nodes" "$sandwichd" -pp "$nodes"
run "$nodes nodes x 1 core, --micro-batches 1" batch16 "${mpi[@]}" -np "$nodes" "$sandwichd" \
  -pp "$nodes" --micro-batches 1
echo "Per hop: (decode step of $nodes nodes - that of 1 node x 1 core) / $nodes hops, beside the"
echo "ping-pong's one-way latency above. Prefill ratio: $nodes nodes over 1 node x $nodes cores."
