#!/usr/bin/env bash
# Prefill and decode tokens/s of one GGUF file, the engine against llama.cpp's llama-bench (built
# outside this repository), in alternating rounds: on a machine whose DRAM bandwidth drifts
# (shared hosts), each round's ratio compares runs minutes apart, and each engine run measures
# the DRAM read stream between its repetitions (sandwich-bench engine --stream), so decode is
# also reported as a fraction of the stream of the same run. The summary says, per round and as
# medians, which of the two decode bounds a run meets: >= RATIO x llama.cpp, or >= FRACTION of
# the stream.
#
# Usage: scripts/engine_vs_llama_cpp.sh --model FILE.gguf --llama-bench PATH [options]
#   --threads N          threads of both (default 2; the engine runs 1xN in both phases)
#   --pp N --tg N        prompt and generated tokens (default 512 and 64; 0 skips one)
#   --reps N             repetitions per run (default 3)
#   --rounds N           alternating rounds (default 3)
#   --ratio X            decode bound against llama.cpp (default 1.3)
#   --fraction X         decode bound against the stream (default 0.9)
#   --out DIR            where the JSON goes (default out/vs-llama-<date>, git-ignored)
#   --bin DIR            where sandwich-bench is (default build/bin)
#   -- ARGS              passed to sandwich-bench engine (e.g. --schedules T.json)
# Needs python3 to read the JSON.
set -euo pipefail
cd "$(dirname "$0")/.."
die() { echo "engine_vs_llama_cpp: $*" >&2; exit 1; }

model="" llama="" threads=2 pp=512 tg=64 reps=3 rounds=3 ratio=1.3 fraction=0.9 out="" bin="build/bin"
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --model) model="${2:?--model needs a value}"; shift 2 ;;
    --llama-bench) llama="${2:?--llama-bench needs a value}"; shift 2 ;;
    --threads) threads="${2:?--threads needs a value}"; shift 2 ;;
    --pp) pp="${2:?--pp needs a value}"; shift 2 ;;
    --tg) tg="${2:?--tg needs a value}"; shift 2 ;;
    --reps) reps="${2:?--reps needs a value}"; shift 2 ;;
    --rounds) rounds="${2:?--rounds needs a value}"; shift 2 ;;
    --ratio) ratio="${2:?--ratio needs a value}"; shift 2 ;;
    --fraction) fraction="${2:?--fraction needs a value}"; shift 2 ;;
    --out) out="${2:?--out needs a value}"; shift 2 ;;
    --bin) bin="${2:?--bin needs a value}"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
[ -n "$model" ] || die "--model is required"
[ -f "$model" ] || die "no model file $model"
[ -n "$llama" ] || die "--llama-bench is required (llama.cpp's llama-bench, built outside this repository)"
[ -x "$llama" ] || die "llama-bench not found at $llama"
[ -x "$bin/sandwich-bench" ] || die "no $bin/sandwich-bench (run scripts/setup.sh)"
[ "$pp" -gt 0 ] || [ "$tg" -gt 0 ] || die "--pp and --tg are both 0: nothing to run"
for n in "$threads" "$reps" "$rounds"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || die "--threads, --reps and --rounds take positive integers, not '$n'"
done
command -v python3 >/dev/null || die "python3 is needed to read the results"
[ -n "$out" ] || out="out/vs-llama-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"

stream=()
[ "$tg" -gt 0 ] && stream=(--stream)
for ((r = 1; r <= rounds; ++r)); do
  echo "engine_vs_llama_cpp: round $r of $rounds: sandwich" >&2
  "$bin/sandwich-bench" engine -m "$model" --prefill-config "1x$threads" \
    --decode-config "1x$threads" --prompt-tokens "$pp" --gen-tokens "$tg" -r "$reps" \
    "${stream[@]}" --json "$out/sandwich-$r.json" "${extra[@]}" >&2
  echo "engine_vs_llama_cpp: round $r of $rounds: llama.cpp" >&2
  "$llama" -m "$model" -p "$pp" -n "$tg" -t "$threads" -r "$reps" -mmp 0 -o json \
    >"$out/llama-$r.json"
done

python3 - "$out" "$rounds" "$pp" "$tg" "$ratio" "$fraction" <<'PY'
import json, statistics, sys
out, rounds, pp, tg, ratio, fraction = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])

def ours(r, test):
    for x in json.load(open(f"{out}/sandwich-{r}.json"))["results"]:
        if x["test"] == test:
            return x
    return None

def theirs(r, n_prompt, n_gen):
    for x in json.load(open(f"{out}/llama-{r}.json")):
        if x["n_prompt"] == n_prompt and x["n_gen"] == n_gen:
            return statistics.median(x["samples_ts"])
    return None

print(f"| test | round | sandwich t/s | llama.cpp t/s | ratio | fraction of stream | stream GB/s | bound met |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
summary = {}
for test, n_prompt, n_gen in (("pp%d" % pp, pp, 0), ("tg%d" % tg, 0, tg)):
    if (n_prompt or n_gen) == 0:
        continue
    ratios, fractions = [], []
    for r in range(1, rounds + 1):
        o, t = ours(r, test), theirs(r, n_prompt, n_gen)
        if o is None or t is None:
            continue
        s = o["tokens_per_second"]["median"]
        q = s / t
        ratios.append(q)
        frac, sgb, met = "", "", ""
        if n_gen:
            reads = o.get("reads", {})
            f = reads.get("fraction_of_stream")
            if f is not None:
                fractions.append(f)
                frac, sgb = f"{f:.2f}", f"{reads['stream_gb_per_s']:.1f}"
            bounds = [f"{ratio}x llama.cpp" for _ in [0] if q >= ratio] + \
                     [f"{fraction} of stream" for _ in [0] if f is not None and f >= fraction]
            met = ", ".join(bounds) or "neither"
        print(f"| {test} | {r} | {s:.2f} | {t:.2f} | {q:.2f} | {frac} | {sgb} | {met} |")
    if ratios:
        summary[test] = (statistics.median(ratios), statistics.median(fractions) if fractions else None)
for test, (q, f) in summary.items():
    line = f"{test}: median ratio {q:.2f}x llama.cpp"
    if f is not None:
        line += f", median fraction of the stream {f:.2f}"
    print(line)
print(f"JSON in {out}/")
PY
