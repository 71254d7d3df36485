#!/usr/bin/env bash
# Prefill and decode tokens/s of one model file in one sitting: the engine under the cost
# model's schedules, the engine under a tuned table (sandwich-tune kernels), and llama.cpp's
# llama-bench on the same GGUF when its path is given (built outside this repository). With
# --rounds N the two engine runs alternate N times (cost model, tuned, cost model, ...), so that
# drift on a shared machine hits both alike; the ratio is the median of the rounds' ratios.
#
# Usage: scripts/compare_engine.sh --model FILE.gguf --schedules TABLE.json [options]
#   --llama-bench PATH   llama.cpp's llama-bench (run with -mmp 0: weights read into memory)
#   --config RxT         service configuration of both phases (default 1x<threads>)
#   --threads N          threads (default 2)
#   --pp N --tg N        prompt and generated tokens (default 512 and 128)
#   --reps N             measured repetitions of each (default 3)
#   --rounds N           interleaved rounds of the two engine runs (default 1)
#   --out DIR            where the JSON goes (default out/engine-<date>, git-ignored)
#   --bin DIR            where sandwich-bench is (default build/bin)
# Needs python3 to read the JSON.
set -euo pipefail
cd "$(dirname "$0")/.."
die() { echo "compare_engine: $*" >&2; exit 1; }

model="" table="" llama="" config="" threads=2 pp=512 tg=128 reps=3 rounds=1 out="" bin="build/bin"
while [ $# -gt 0 ]; do
  case "$1" in
    --model) model="${2:?--model needs a value}"; shift 2 ;;
    --schedules) table="${2:?--schedules needs a value}"; shift 2 ;;
    --llama-bench) llama="${2:?--llama-bench needs a value}"; shift 2 ;;
    --config) config="${2:?--config needs a value}"; shift 2 ;;
    --threads) threads="${2:?--threads needs a value}"; shift 2 ;;
    --pp) pp="${2:?--pp needs a value}"; shift 2 ;;
    --tg) tg="${2:?--tg needs a value}"; shift 2 ;;
    --reps) reps="${2:?--reps needs a value}"; shift 2 ;;
    --rounds) rounds="${2:?--rounds needs a value}"; shift 2 ;;
    --out) out="${2:?--out needs a value}"; shift 2 ;;
    --bin) bin="${2:?--bin needs a value}"; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
[ -n "$model" ] || die "--model is required"
[ -f "$model" ] || die "no model file $model"
[ -n "$table" ] || die "--schedules is required"
[ -f "$table" ] || die "no schedule table $table"
[ -z "$llama" ] || [ -x "$llama" ] || die "llama-bench not found at $llama"
[ "$rounds" -ge 1 ] 2>/dev/null || die "--rounds must be a positive integer"
command -v python3 >/dev/null || die "python3 is needed to read the results"
[ -n "$config" ] || config="1x$threads"
[ -n "$out" ] || out="out/engine-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"

run_engine() {  # name, extra args
  local name=$1; shift
  echo "compare_engine: sandwich ($name)" >&2
  "$bin/sandwich-bench" engine -m "$model" --prefill-config "$config" --decode-config "$config" \
    --prompt-tokens "$pp" --gen-tokens "$tg" -r "$reps" --json "$out/$name.json" "$@" >&2
}
for round in $(seq 1 "$rounds"); do
  suffix=""
  [ "$rounds" -eq 1 ] || suffix="-$round"
  run_engine "cost_model$suffix"
  run_engine "tuned$suffix" --schedules "$table"
done
if [ -n "$llama" ]; then
  echo "compare_engine: llama.cpp" >&2
  "$llama" -m "$model" -p "$pp" -n "$tg" -t "$threads" -r "$reps" -mmp 0 -o json >"$out/llama.json"
fi

python3 - "$out" "$pp" "$tg" "$rounds" <<'PY'
import json, os, statistics, sys
out, pp, tg, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
def ours(name):
    r = json.load(open(os.path.join(out, name + ".json")))
    return {x["test"]: x["tokens_per_second"]["median"] for x in r["results"]}
names = [""] if rounds == 1 else ["-%d" % i for i in range(1, rounds + 1)]
cost_runs = [ours("cost_model" + n) for n in names]
tuned_runs = [ours("tuned" + n) for n in names]
def median_of(runs):
    return {t: statistics.median(r[t] for r in runs) for t in runs[0]}
cost, tuned = median_of(cost_runs), median_of(tuned_runs)
if rounds > 1:
    # Each round's tuned / cost model ratio: neighbours in time share the machine's state.
    print("rounds: %d interleaved (cost model, tuned); per-round tuned / cost model ratios:" % rounds)
    for test in ("pp%d" % pp, "tg%d" % tg):
        if test not in cost:
            continue
        ratios = [t[test] / c[test] for c, t in zip(cost_runs, tuned_runs) if c.get(test)]
        print("  %s: median %.3fx, min %.3fx, max %.3fx (%s)" % (
            test, statistics.median(ratios), min(ratios), max(ratios),
            " ".join("%.3f" % x for x in ratios)))
    print()
llama = {}
path = os.path.join(out, "llama.json")
if os.path.exists(path):
    for x in json.load(open(path)):
        test = "pp%d" % x["n_prompt"] if x["n_gen"] == 0 else "tg%d" % x["n_gen"]
        llama[test] = x["avg_ts"]
print("| test | cost model t/s | tuned t/s | llama.cpp t/s | tuned / cost model | tuned / llama.cpp |")
print("| --- | --- | --- | --- | --- | --- |")
for test in ("pp%d" % pp, "tg%d" % tg):
    if test not in cost:
        continue
    c, t, l = cost[test], tuned.get(test, 0), llama.get(test, 0)
    print("| %s | %.2f | %.2f | %s | %.3fx | %s |" % (
        test, c, t, "%.2f" % l if l else "-", t / c if c else 0,
        "%.2fx" % (t / l) if l else "-"))
PY
echo "compare_engine: results in $out" >&2
