#!/usr/bin/env bash
# The paper's Table 2 on this machine: `sandwich-tune plan` with --top-k 1, 2 and 4 on a dummy-weight
# model (default llama-1.3b), each tuning the kernels of every measured candidate before it chooses.
# For each top-k: the candidates measured and tuned, the kernels stage's seconds and the whole
# run's, the pair the cost model's schedules chose and the pair chosen with the tuned kernels (and
# whether they differ), and the chosen plan's prefill and decode tokens/s (`sandwich-bench engine
# --plan`), as ratios to the engine without a plan (one rank of every core, the cost model's
# schedules) measured before and after them. Writes DIR/table2.md (also printed) and, per top-k,
# DIR/topk-K.json (the plan; its "details" hold every figure), topk-K.schedules.json, topk-K.txt
# (the plan's summary and progress) and bench-K.json (bench-none.json, bench-none2.json: no plan).
# --quick: two requests of a short trace (20-48-token prompts), decode batch 2, kernels tuned for
# M <= 2, budgets 40/60/80 s; about 3 minutes on an idle 2-core machine. The full run: the
# ShareGPT trace, decode batch 16, budgets 4/6/10 minutes; about 25 minutes. A loaded machine
# makes the budgets cut more (each plan's "budget cut:" lines say what), and its figures noise.
# --table-only writes the table again from an earlier run's DIR.
# Usage: scripts/paper/table2_topk.sh [--quick] [-o DIR] [--model M] [--bin DIR] [--table-only]
# Env: SANDWICH_SHARED (the ShareGPT trace, default ../shared).
set -euo pipefail
cd "$(dirname "$0")/../.."
quick=0
table_only=0
out=build/paper/table2
model=llama-1.3b
bin=build/bin
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1; shift ;;
    -o) out=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --table-only) table_only=1; shift ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "table2_topk: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
command -v python3 >/dev/null || { echo "table2_topk: python3 is needed" >&2; exit 1; }
for t in sandwich-tune sandwich-bench; do
  [ -x "$bin/$t" ] || { echo "table2_topk: $bin/$t missing; build it first" >&2; exit 1; }
done
mkdir -p "$out"
start=$(date +%s)

if [ "$quick" = 1 ]; then
  # Short prompts keep each engine step of a 1.3B model near a second on 2 cores; two of them
  # measured per prefill candidate, decode at batch 2, kernels tuned for M <= 2.
  trace="$out/quick_trace.csv"
  printf 'input_tokens,output_tokens\n24,32\n32,48\n40,40\n48,56\n28,64\n36,32\n44,48\n20,40\n' \
    >"$trace"
  plan_args=(--trace "$trace" --trace-samples 2 --decode-batch 2 --max-num-seqs 4
             --prefill-chunk 64 --max-m 2)
  budgets=(40s 60s 80s)
  bench_args=(-p 32 -n 8 -r 2)
else
  plan_args=()
  budgets=(4m 6m 10m)
  bench_args=(-p 256 -n 32 -r 2)
fi
ks=(1 2 4)

for i in 0 1 2; do
  [ "$table_only" = 1 ] && break
  k=${ks[$i]}
  echo "table2_topk: plan --top-k $k --budget ${budgets[$i]}" >&2
  "$bin/sandwich-tune" plan --model "$model" --load-format dummy --top-k "$k" \
    --budget "${budgets[$i]}" "${plan_args[@]}" -o "$out/topk-$k.json" >"$out/topk-$k.txt" 2>&1 ||
    { echo "table2_topk: plan --top-k $k failed:" >&2; tail -5 "$out/topk-$k.txt" >&2; exit 1; }
done
# The plans' throughput, and the engine's without a plan before and after them (their mean is
# the baseline, so that a machine's drift over the sitting shows and mostly cancels).
for k in none "${ks[@]}" none2; do
  [ "$table_only" = 1 ] && break
  echo "table2_topk: sandwich-bench engine (${k/none*/no plan})" >&2
  plan=()
  [ "${k#none}" = "$k" ] && plan=(--plan "$out/topk-$k.json")
  "$bin/sandwich-bench" engine --model "$model" --load-format dummy "${plan[@]}" \
    "${bench_args[@]}" --json "$out/bench-$k.json" >"$out/bench-$k.txt" 2>&1 ||
    { echo "table2_topk: sandwich-bench engine failed:" >&2; tail -5 "$out/bench-$k.txt" >&2; exit 1; }
done

wall=$(( $(date +%s) - start ))
[ "$table_only" = 1 ] && wall=-1
python3 - "$out" "$model" "$quick" "$wall" <<'EOF' | tee "$out/table2.md"
import json, sys
out, model, quick, wall = sys.argv[1], sys.argv[2], sys.argv[3] == "1", int(sys.argv[4])

def rates(name):
    with open(f"{out}/bench-{name}.json") as f:
        results = json.load(f)["results"]
    pick = lambda kind: next(r["tokens_per_second"]["median"] for r in results
                             if r["test"].startswith(kind))
    return pick("pp"), pick("tg")

def pair(d, choice):
    c = d["candidates"]
    return f'{c["prefill"][choice["prefill"]]["short"]} / {c["decode"][choice["decode"]]["short"]}'

import os
bases = [rates(n) for n in ("none", "none2") if os.path.exists(f"{out}/bench-{n}.json")]
missing = [f for f in ["bench-none.json"] + [f"topk-{k}.json" for k in (1, 2, 4)]
           + [f"bench-{k}.json" for k in (1, 2, 4)] if not os.path.exists(f"{out}/{f}")]
if missing:
    sys.exit(f"table2_topk: {out} lacks {', '.join(missing)} (run the script without --table-only)")
base_pp = sum(b[0] for b in bases) / len(bases)
base_tg = sum(b[1] for b in bases) / len(bases)
rows, changed = [], 0
for k in (1, 2, 4):
    with open(f"{out}/topk-{k}.json") as f:
        d = json.load(f)["details"]
    cands = d["candidates"]["prefill"] + d["candidates"]["decode"]
    measured = sum(1 for c in cands if "measured_ms" in c)
    tuned = sum(1 for c in cands if c.get("kernels") == "tuned")
    partly = sum(1 for c in cands if c.get("kernels") == "partly tuned")
    secs = d["stage_seconds"]
    pp, tg = rates(str(k))
    changed += 1 if d["choice_changed"] else 0
    rows.append(f'| {k} | {len(d["candidates"]["prefill"])} + {len(d["candidates"]["decode"])} '
                f'| {measured} | {tuned} + {partly} partly | {secs.get("kernels", 0):.0f} | {sum(secs.values()):.0f} '
                f'of {d["budget_s"]:.0f} | {pair(d, d["cost_model_choice"])} '
                f'| {pair(d, d["choice"])} | {"yes" if d["choice_changed"] else "no"} '
                f'| {pp / base_pp:.2f}x | {tg / base_tg:.2f}x |')
print(f"## Table 2: kernels tuned for the top-k before the choice ({model}, dummy weights"
      f"{', --quick' if quick else ''})\n")
print("| top-k | candidates (prefill + decode) | measured | tuned | kernels s | total s of budget "
      "| chosen with cost-model schedules (prefill / decode) | chosen with tuned kernels "
      "| changed | prefill t/s vs no plan | decode t/s vs no plan |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
print("\n".join(rows))
runs = " and ".join(f"{pp:.1f}/{tg:.2f}" for pp, tg in bases)
print(f"\nThe choice changed in {changed} of 3 runs. Throughput: `sandwich-bench engine --plan` "
      f"(pp and tg medians) over the engine without a plan (one rank of every core, the cost "
      f"model's schedules), run before and after the plans (prompt/generated tokens/s: {runs}; "
      f"their mean is the baseline). Budget cuts: each plan's topk-K.txt."
      + (f" Script wall time {wall} s." if wall >= 0 else ""))
EOF
