#!/usr/bin/env bash
# The paper's Table 1 (ablation) on this machine: prefill and decode tokens/s of
# `sandwich-bench engine` on a dummy-weight model with everything Sandwich adds, then with each
# part switched off (--allreduce naive, --no-split-k, --same-config) and all three at once, each
# as a ratio to the full run. The phases run the configuration pair --configs gives (prefill on
# one rank of all cores, decode on tensor-parallel ranks of one core by default), so that the
# decode all-reduce and the two plans are in play; the all-reduce is also compared with both
# phases on one-core ranks (RxT with T = 1), where prefill's all-reduces count too. The full
# run is repeated last, so that the table shows the machine's drift (the noise band).
#
# Usage: scripts/paper/table1_ablation.sh [--quick] [-o DIR] [options]
#   --quick          llama-160m, 128-token prompt, 32 decode steps, 2 repetitions (about
#                    2 minutes on 2 cores); default llama-1.3b, 512 and 64, 3 repetitions
#   -o, --out DIR    where the JSON of each run and table1.md go (default out/table1-<date>)
#   --model M        a preset (llama-160m, llama-1.3b, llama3-8b) or file; dummy weights
#   --configs P/D    the full run's prefill/decode pair (default 1x<cores>/<cores>x1)
#   --pp N --tg N    prompt tokens and decode steps; --reps N measured repetitions
#   --rounds N       run the variants N times in turn; each figure is the median of its rounds
#   --bin DIR        where sandwich-bench is (default build/bin)
# Prints the Markdown table (also DIR/table1.md); the runs' logs go to DIR/*.log.
set -euo pipefail
cd "$(dirname "$0")/../.."
die() { echo "table1_ablation: $*" >&2; exit 1; }

quick=0 out="" model="" configs="" pp="" tg="" reps="" rounds=1 bin="build/bin"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1; shift ;;
    -o|--out) out="${2:?$1 needs a value}"; shift 2 ;;
    --model) model="${2:?--model needs a value}"; shift 2 ;;
    --configs) configs="${2:?--configs needs a value}"; shift 2 ;;
    --pp) pp="${2:?--pp needs a value}"; shift 2 ;;
    --tg) tg="${2:?--tg needs a value}"; shift 2 ;;
    --reps) reps="${2:?--reps needs a value}"; shift 2 ;;
    --rounds) rounds="${2:?--rounds needs a value}"; shift 2 ;;
    --bin) bin="${2:?--bin needs a value}"; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
if [ "$quick" = 1 ]; then
  : "${model:=llama-160m}" "${pp:=128}" "${tg:=32}" "${reps:=2}"
else
  : "${model:=llama-1.3b}" "${pp:=512}" "${tg:=64}" "${reps:=3}"
fi
[ -x "$bin/sandwich-bench" ] || die "no $bin/sandwich-bench (build it: cmake --build build --target sandwich-bench)"
[ "$rounds" -ge 1 ] 2>/dev/null || die "--rounds must be a positive integer"
command -v python3 >/dev/null || die "python3 is needed to read the results"
cores=$(nproc)
[ "$cores" -ge 2 ] || die "tensor-parallel ranks need at least 2 cores, this machine has $cores"
[ -n "$configs" ] || configs="1x$cores/${cores}x1"
case "$configs" in */*) ;; *) die "--configs must be a PREFILL/DECODE pair, e.g. 1x2/2x1" ;; esac
tp="${cores}x1"
[ -n "$out" ] || out="out/table1-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"

# name | configuration(s) | switches
variants=(
  "full|$configs|"
  "naive_allreduce|$configs|--allreduce naive"
  "no_split_k|$configs|--no-split-k"
  "same_config|$configs|--same-config"
  "all_off|$configs|--allreduce naive --no-split-k --same-config"
  "full_tp|$tp|"
  "naive_allreduce_tp|$tp|--allreduce naive"
  "full_again|$configs|"
)
start=$(date +%s)
for round in $(seq 1 "$rounds"); do
  for v in "${variants[@]}"; do
    IFS='|' read -r name cfg switches <<<"$v"
    echo "table1_ablation: round $round/$rounds: $name (--configs $cfg $switches)" >&2
    # shellcheck disable=SC2086
    "$bin/sandwich-bench" engine --model "$model" --load-format dummy --dtype bfloat16 \
      --prompt-tokens "$pp" --gen-tokens "$tg" --reps "$reps" --warmup 1 --configs "$cfg" \
      $switches --json "$out/$name-$round.json" >"$out/$name-$round.log" 2>&1 ||
      { tail -5 "$out/$name-$round.log" >&2; die "the $name run failed (see $out/$name-$round.log)"; }
  done
done

python3 - "$out" "$rounds" "$model" "$configs" "$tp" "$pp" "$tg" "$reps" "$(( $(date +%s) - start ))" <<'PY' | tee "$out/table1.md"
import json, os, statistics, sys
out, rounds, model, configs, tp, pp, tg, reps, secs = sys.argv[1:]
rounds = int(rounds)

def figures(name):
    """Median over the rounds of each test's median tokens/s, and the switches the JSON records."""
    runs = [json.load(open(os.path.join(out, "%s-%d.json" % (name, r)))) for r in range(1, rounds + 1)]
    def med(prefix):
        return statistics.median(x["tokens_per_second"]["median"] for run in runs
                                 for x in run["results"] if x["test"].startswith(prefix))
    doc = runs[0]
    switches = []
    if doc["allreduce"] != "rank-shifted": switches.append("--allreduce " + doc["allreduce"])
    if doc["no_split_k"]: switches.append("--no-split-k")
    if doc["same_config"]: switches.append("--same-config")
    return med("pp"), med("tg"), " ".join(switches) or "(none)"

rows = [  # name, label, configs, reference
    ("full", "Sandwich (full)", configs, "full"),
    ("naive_allreduce", "w/o rank-shifted all-reduce", configs, "full"),
    ("no_split_k", "w/o split-k", configs, "full"),
    ("same_config", "w/o separate plans", configs, "full"),
    ("all_off", "w/o all three", configs, "full"),
    ("full_tp", "Sandwich, both phases " + tp, tp, "full_tp"),
    ("naive_allreduce_tp", "w/o rank-shifted all-reduce, both phases " + tp, tp, "full_tp"),
    ("full_again", "Sandwich (full) again, last: the noise band", configs, "full"),
]
fig = {name: figures(name) for name, *_ in rows}
print("Table 1 (ablation): %s (dummy BF16 weights) on %d cores, pp%s and tg%s, median of %s "
      "repetitions%s; %s s in all." % (model, os.cpu_count(), pp, tg, reps,
                                       "" if rounds == 1 else " and of %d rounds" % rounds, secs))
print()
print("| variant | switches | configs (prefill/decode) | prefill t/s | ratio | decode t/s | ratio |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for name, label, cfg, ref in rows:
    p, d, sw = fig[name]
    rp, rd, _ = fig[ref]
    shown = cfg.split("/")[0] + " (both)" if name in ("same_config", "all_off") else cfg
    print("| %s | %s | %s | %.2f | %.2f | %.2f | %.2f |" % (label, sw, shown, p, p / rp, d, d / rd))
print()
print("Ratios are to the first full run's tokens/s (the %s row's to the row above it); below 1 "
      "is what the part is worth. The full run repeated last shows the machine's drift between "
      "the first and the last run: a lower bound on the noise (--rounds N narrows it)."
      % ("w/o ... both phases " + tp))
PY
