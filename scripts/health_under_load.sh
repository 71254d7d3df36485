#!/usr/bin/env bash
# /health under load: starts sandwichd with a worst-case chat template (by default on a tiny
# dummy-weight Llama with the real Llama-3 tokenizer and a 128k context, written by
# sandwich-model make into a temporary folder, so that scenario B's prompts are really tokenized
# rather than refused by the context pre-check),
# then for each scenario polls GET /health every 10 ms and keeps one streaming completion going
# while heavy requests run:
#   A: 16 concurrent chat requests whose template burns the interpreter's whole step limit
#      (guarded by messages|length > 1, so that the start-up check renders it quickly);
#   B: 8 concurrent completions with an ~8 MiB prompt of pseudo-random words (no word repeats
#      often enough for the tokenizer's caches to help).
# Prints one table (/health P50/P99/max, the stream's longest gap between chunks, the heavy
# requests' statuses) and exits 1 if any /health P99 is 100 ms or more. Slow: not in the tests.
# Usage: scripts/health_under_load.sh [--model PATH] [--tokenizer PATH] [--sandwichd BIN]
#          [--duration S] [-- extra sandwichd flags...]
# Env: SANDWICH_SHARED (reference data, default ../shared).
set -euo pipefail
cd "$(dirname "$0")/.."
shared=${SANDWICH_SHARED:-../shared}
model=""
tokenizer=""
sandwichd=build/bin/sandwichd
duration=5
while [ $# -gt 0 ]; do
  case "$1" in
    --model) model=$2; tokenizer=""; shift 2 ;;
    --tokenizer) tokenizer=$2; shift 2 ;;
    --sandwichd) sandwichd=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "health_under_load: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
command -v python3 >/dev/null || { echo "health_under_load: python3 is needed" >&2; exit 1; }
[ -x "$sandwichd" ] || { echo "health_under_load: $sandwichd missing; build it first" >&2; exit 1; }

out=$(mktemp -d)
log="$out/sandwichd.log"
if [ -z "$model" ]; then
  maker=$(dirname "$sandwichd")/sandwich-model
  [ -x "$maker" ] || { echo "health_under_load: $maker missing; build it or pass --model" >&2; exit 1; }
  cat >"$out/config.json" <<'JSON'
{"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 1, "num_attention_heads": 4,
 "num_key_value_heads": 4, "intermediate_size": 128, "vocab_size": 128256,
 "max_position_embeddings": 131072, "rope_theta": 500000.0}
JSON
  model="$out/tiny-llama3-vocab.gguf"
  "$maker" make --preset "$out/config.json" --dtype f32 -o "$model" \
    --vocab "$shared/data/tokenizers/llama3/tokenizer.model" >/dev/null
fi
# Two nested loops of 3000: 9M steps, over the interpreter's 5M step limit.
cat >"$out/worst.jinja" <<'JINJA'
{% if messages|length > 1 %}{% for i in range(3000) %}{% for j in range(3000) %}{% endfor %}{% endfor %}{% endif %}{% for m in messages %}<|{{ m.role }}|>{{ m.content }}
{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}
JINJA

args=(--model "$model" --served-model-name bench --host 127.0.0.1 --port 0
      --chat-template "$out/worst.jinja" --max-waiting 1000)
[ -n "$tokenizer" ] && args+=(--tokenizer "$tokenizer")
"$sandwichd" "${args[@]}" "$@" >"$log" 2>&1 &
pid=$!
trap 'kill -9 $pid 2>/dev/null || true; rm -rf "$out"' EXIT
port=""
for _ in $(seq 600); do
  port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$log" | head -1)
  [ -n "$port" ] && break
  kill -0 $pid 2>/dev/null || { echo "health_under_load: sandwichd exited at start:" >&2; cat "$log" >&2; exit 1; }
  sleep 0.2
done
[ -n "$port" ] || { echo "health_under_load: sandwichd did not start; log:" >&2; cat "$log" >&2; exit 1; }
echo "health_under_load: $sandwichd on port $port, ${duration}s per scenario"

rc=0
python3 - "$port" "$duration" <<'PY' || rc=$?
import http.client, json, random, sys, threading, time

port, duration = int(sys.argv[1]), float(sys.argv[2])

def conn():
    return http.client.HTTPConnection("127.0.0.1", port, timeout=120)

def post(c, path, body):
    c.request("POST", path, body, {"Content-Type": "application/json"})
    r = c.getresponse()
    r.read()
    return r.status

def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))] if xs else float("nan")

def run(name, path, body, workers):
    stop = threading.Event()
    health, gaps, statuses, lock = [], [], {}, threading.Lock()

    def poll():
        c = conn()
        while not stop.is_set():
            t = time.perf_counter()
            c.request("GET", "/health")
            c.getresponse().read()
            health.append(time.perf_counter() - t)
            time.sleep(max(0.0, 0.010 - (time.perf_counter() - t)))

    def stream():
        req = json.dumps({"model": "bench", "prompt": "Once upon a time", "max_tokens": 200,
                          "ignore_eos": True, "stream": True, "temperature": 0})
        while not stop.is_set():
            c = conn()
            c.request("POST", "/v1/completions", req, {"Content-Type": "application/json"})
            r = c.getresponse()
            last = None
            while True:
                line = r.readline()
                if not line:
                    break
                if line.startswith(b"data:"):
                    now = time.perf_counter()
                    if last is not None:
                        gaps.append(now - last)
                    last = now
            c.close()

    def heavy():
        c = conn()
        while not stop.is_set():
            try:
                s = post(c, path, body)
            except (ConnectionError, http.client.HTTPException):
                s = "conn"
                c = conn()
            with lock:
                statuses[s] = statuses.get(s, 0) + 1

    threads = [threading.Thread(target=poll), threading.Thread(target=stream)]
    threads += [threading.Thread(target=heavy) for _ in range(workers)]
    for t in threads:
        t.start()
    time.sleep(duration)
    stop.set()
    for t in threads:
        t.join()
    ms = lambda s: s * 1000
    return (name, ms(percentile(health, 50)), ms(percentile(health, 99)), ms(max(health)),
            len(health), ms(max(gaps)) if gaps else float("nan"),
            " ".join(f"{k}:{v}" for k, v in sorted(statuses.items(), key=str)))

chat = json.dumps({"model": "bench", "max_tokens": 4, "messages": [
    {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]})
rng = random.Random(1)
words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(1, 12)))
         for _ in range(200000)]
text = " ".join(rng.choice(words) for _ in range(1500000))
big = json.dumps({"model": "bench", "max_tokens": 4, "prompt": text[:(8 << 20) - 4096]})
rows = [run("idle (stream only)", "/health", None, 0),
        run("A: 16x step-limit template", "/v1/chat/completions", chat, 16),
        run("B: 8x 8 MiB prompt", "/v1/completions", big, 8)]
print(f"{'scenario':<28} {'health p50':>10} {'p99':>8} {'max':>8} {'polls':>6} "
      f"{'stream gap':>10}  heavy statuses")
for name, p50, p99, mx, n, gap, st in rows:
    print(f"{name:<28} {p50:>8.1f}ms {p99:>6.1f}ms {mx:>6.1f}ms {n:>6} {gap:>8.1f}ms  {st}")
bad = [r[0] for r in rows if not r[2] < 100]
if bad:
    print("health_under_load: /health P99 >= 100 ms in: " + ", ".join(bad))
    sys.exit(1)
PY
kill -TERM $pid
wait $pid || { echo "health_under_load: sandwichd exited with $? after SIGTERM; log $log" >&2; rc=1; }
exit $rc
