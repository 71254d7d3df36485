#!/usr/bin/env bash
# Two builds of the engine on one model in one sitting: `sandwich-bench engine` of build A, then
# of build B, alternating for --rounds rounds so that a shared machine's drift hits both; prints
# each round's prefill and decode tokens/s and the median of the rounds' B/A ratios. For a
# change that must not move speed (a refactor), the ratios should straddle 1 within the spread
# of the rounds.
#
# Usage: scripts/compare_builds.sh --a DIR --b DIR --model M [options] [-- ENGINE ARGS...]
#   --a DIR, --b DIR   the bin/ folders of the two builds (sandwich-bench there, or the older
#                      sandwich-bench-engine it used to run)
#   --model M          a model path or preset name (presets run with --load-format dummy)
#   --pp N --tg N      prompt and generated tokens (default 512 and 128)
#   --reps N           repetitions of each test per run (default 3)
#   --rounds N         alternating rounds (default 3)
#   --threads N        threads (default: all cores)
# Needs python3 to read the JSON.
set -euo pipefail
die() { echo "compare_builds: $*" >&2; exit 1; }

a="" b="" model="" pp=512 tg=128 reps=3 rounds=3 threads=""
while [ $# -gt 0 ]; do
  case "$1" in
    --a) a="${2:?--a needs a value}"; shift 2 ;;
    --b) b="${2:?--b needs a value}"; shift 2 ;;
    --model) model="${2:?--model needs a value}"; shift 2 ;;
    --pp) pp="${2:?--pp needs a value}"; shift 2 ;;
    --tg) tg="${2:?--tg needs a value}"; shift 2 ;;
    --reps) reps="${2:?--reps needs a value}"; shift 2 ;;
    --rounds) rounds="${2:?--rounds needs a value}"; shift 2 ;;
    --threads) threads="${2:?--threads needs a value}"; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
[ -n "$a" ] && [ -n "$b" ] || die "--a and --b are required"
[ -n "$model" ] || die "--model is required"
command -v python3 >/dev/null || die "python3 not found"

engine_of() {
  if [ -x "$1/sandwich-bench" ] && "$1/sandwich-bench" engine --help >/dev/null 2>&1; then
    echo "$1/sandwich-bench engine"
  elif [ -x "$1/sandwich-bench-engine" ]; then
    echo "$1/sandwich-bench-engine"
  else
    die "$1 has neither sandwich-bench nor sandwich-bench-engine"
  fi
}
engine_a=$(engine_of "$a")
engine_b=$(engine_of "$b")
args=(--model "$model" --prompt-tokens "$pp" --gen-tokens "$tg" --reps "$reps")
[ -e "$model" ] || args+=(--load-format dummy)
[ -n "$threads" ] && args+=(--threads "$threads")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

for r in $(seq 1 "$rounds"); do
  for side in a b; do
    engine=$engine_a
    [ "$side" = b ] && engine=$engine_b
    $engine "${args[@]}" --json "$out/$side$r.json" "$@" >/dev/null 2>"$out/$side$r.log" ||
      { cat "$out/$side$r.log" >&2; die "round $r, build $side failed"; }
  done
done

python3 - "$out" "$rounds" "$model" "$pp" "$tg" <<'PY'
import json, statistics, sys
out, rounds, model, pp, tg = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
def speeds(path):
    return {r["test"]: r["tokens_per_second"]["median"] for r in json.load(open(path))["results"]}
tests = [f"pp{pp}", f"tg{tg}"]
print(f"| {model} | round | " + " | ".join(f"{t} A | {t} B | B/A" for t in tests) + " |")
print("| --- | --- | " + " | ".join("--- | --- | ---" for _ in tests) + " |")
ratios = {t: [] for t in tests}
for r in range(1, rounds + 1):
    a, b = speeds(f"{out}/a{r}.json"), speeds(f"{out}/b{r}.json")
    cells = []
    for t in tests:
        ratios[t].append(b[t] / a[t])
        cells.append(f"{a[t]:.2f} | {b[t]:.2f} | {b[t] / a[t]:.3f}")
    print(f"| | {r} | " + " | ".join(cells) + " |")
for t in tests:
    x = ratios[t]
    print(f"{t}: B/A median {statistics.median(x):.3f} (rounds {min(x):.3f} to {max(x):.3f})")
PY
