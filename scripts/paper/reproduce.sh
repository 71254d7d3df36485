#!/usr/bin/env bash
# Runs the methodology of every figure and table of the Sandwich paper (arXiv 2507.18454) that
# this machine can run, scaled to it, and writes one report (report.md + PNGs) that sets each
# result beside what the paper publishes and says what differs.
#
# Usage: scripts/paper/reproduce.sh [--quick] [options]
#   --quick              smaller models, fewer requests and repetitions: about 15 minutes on
#                        2 cores (the full run takes a few hours)
#   -o, --out DIR        where everything goes (default out/paper-<date>, git-ignored)
#   --bin DIR            the built programs (default build/bin)
#   --llama-server PATH  llama.cpp's llama-server, the serving baseline (default $LLAMA_SERVER);
#                        without it the serving figures show Sandwich alone and say so
#   --reference T        the machine the paper's SLO values are scaled from (a shipped topology
#                        with published figures; default xeon-platinum-8272cl-2s)
#   --only LIST          run only these steps, comma-separated (names below), then the report
#   --port P             first of the two ports the servers use (default 8100)
# Steps: machine fig1 fig2 fig3b fig7 fig8 kernels serve-single serve-batched table1 table2
#        table3 table4 kunpeng
# A step that fails is reported as failed (with its log) and the others still run; the exit
# status is 1 when any step failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)

die() { echo "reproduce: $*" >&2; exit 2; }

quick=0 out="" bin="build/bin" llama_server="${LLAMA_SERVER:-}" reference="xeon-platinum-8272cl-2s"
only="" port=8100
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1; shift ;;
    -o|--out) out="${2:?$1 needs a value}"; shift 2 ;;
    --bin) bin="${2:?--bin needs a value}"; shift 2 ;;
    --llama-server) llama_server="${2:?--llama-server needs a value}"; shift 2 ;;
    --reference) reference="${2:?--reference needs a value}"; shift 2 ;;
    --only) only="${2:?--only needs a value}"; shift 2 ;;
    --port) port="${2:?--port needs a value}"; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
for b in sandwichd sandwich-bench sandwich-tune sandwich-model; do
  [ -x "$bin/$b" ] || die "no $bin/$b; build first (scripts/setup.sh) or pass --bin"
done
[ -z "$llama_server" ] || [ -x "$llama_server" ] || die "--llama-server $llama_server is not an executable"
[[ "$port" =~ ^[0-9]+$ ]] || die "--port needs a number"
ref_file="configs/topologies/$reference.json"
[ -f "$ref_file" ] || die "no shipped topology '$reference' (see configs/topologies/)"
command -v python3 >/dev/null || die "python3 is needed for the report"
bin=$(cd "$bin" && pwd)
shared="${SANDWICH_SHARED:-$root/../shared}"
tokenizer="$shared/data/tokenizers/llama2/tokenizer.model"
[ -f "$tokenizer" ] || die "no $tokenizer (set SANDWICH_SHARED to the shared data folder)"

out="${out:-out/paper-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$out"
out=$(cd "$out" && pwd)
steps_file="$out/steps.tsv"
[ -n "$only" ] && [ -f "$steps_file" ] || printf 'step\tstatus\tseconds\tcommand\n' >"$steps_file"
cores=$(nproc)

# The sizes of a run: --quick keeps the whole run to about 15 minutes on 2 cores.
if [ $quick -eq 1 ]; then
  small=llama-160m big=llama-160m reps=1 single_prompts=10 batched_prompts=16 rate_mults="1,3,9,27"
  max_len=256 sweep=(--sweep-quick) table_args=(--quick) kernels_max_m=4
else
  small=llama-160m big=llama-1.3b reps=3 single_prompts=90 batched_prompts=200
  rate_mults="0.5,1,2,4,8,16" max_len=2048 sweep=() table_args=() kernels_max_m=256
fi

# What the step functions (run by timeout in a child bash) need.
export bin out cores reference ref_file small big reps kernels_max_m quick tokenizer port \
  llama_server single_prompts batched_prompts rate_mults max_len

want() { [ -z "$only" ] || [[ ",$only," == *",$1,"* ]]; }
skip() {  # skip NAME WHY: a step this build cannot run, recorded for the report
  want "$1" || return 0
  echo "reproduce: [$1] skipped: $2" >&2
  printf '%s\tskipped: %s\t0\t-\n' "$1" "$2" >>"$steps_file"
}

failed=0
# step NAME TIMEOUT_S CMD...: runs CMD with its output in $out/NAME/log.txt, timed.
step() {
  local name=$1 limit=$2; shift 2
  want "$name" || return 0
  mkdir -p "$out/$name"
  echo "reproduce: [$name] $*" >&2
  local t0 rc
  t0=$(date +%s.%N)
  # timeout signals its whole process group, so servers a step started go with it; it runs in
  # a group of its own, so Ctrl-C reaches it through the trap.
  local cmd=("$@")
  if [ "$(type -t "$1")" = function ]; then
    export -f "$1"
    cmd=(bash -c '"$@"' "$name" "$@")
  fi
  timeout --kill-after=10 "$limit" "${cmd[@]}" >"$out/$name/log.txt" 2>&1 &
  local tpid=$!
  trap 'kill -TERM "$tpid" 2>/dev/null; wait "$tpid"; echo "reproduce: interrupted" >&2; exit 130' INT TERM
  wait "$tpid"
  rc=$?
  trap - INT TERM
  local secs
  secs=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$t0" "$(date +%s.%N)")
  local status=ok
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then status="timed out after ${limit}s"; failed=1
  elif [ $rc -ne 0 ]; then status="failed (exit $rc)"; failed=1; fi
  echo "reproduce: [$name] $status in ${secs}s" >&2
  [ "$status" = ok ] || tail -5 "$out/$name/log.txt" >&2
  printf '%s\t%s\t%s\t%s\n' "$name" "$status" "$secs" "$*" >>"$steps_file"
}

# --- the machine's own limits, which every figure is set against ---------------------------
machine() {
  "$bin/sandwich-tune" calibrate --recalibrate --json >"$out/machine/calibration.json" &&
    "$bin/sandwich-tune" topology --topology "$reference" >"$out/machine/reference.txt" &&
    { name=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
      echo "${name:-$(uname -m)}"; nproc
      flags=$(grep -m1 -E '^(flags|Features)' /proc/cpuinfo | cut -d: -f2- | tr ' ' '\n' |
        grep -E '^(avx2|avx512f|avx512_bf16|amx_bf16|amx_tile|asimd|asimddp|bf16|i8mm|sve)$' |
        tr '\n' ' ')
      echo "${flags:-unknown}"; } >"$out/machine/cpu.txt"
}
step machine 300 machine

# --- Figure 1: hardware counters of prefill and decode -------------------------------------
# Prefill, then decode at batch 1, 4 and 16 (--counters' default batches).
step fig1 600 "$bin/sandwich-bench" engine --model "$small" --load-format dummy --counters \
  -p "$([ $quick -eq 1 ] && echo 128 || echo 512)" -n "$([ $quick -eq 1 ] && echo 8 || echo 32)" \
  -r "$([ $quick -eq 1 ] && echo 2 || echo 3)" --json "$out/fig1/engine.json"

# --- Figure 2: GFLOPS of every block x thread scheme of the paper's two GEMM shapes ---------
if [ ! -x "$bin/bench_kernels" ]; then
  skip fig2 "no bench_kernels (built only where Google Benchmark is found)"
else
  step fig2 900 "$bin/bench_kernels" --sweep "${sweep[@]}" --sweep-out "$out/fig2"
fi

# --- Figure 3b: partial core allocation: prefill and decode on 1 core and on all cores -------
step fig3b 900 "$bin/sandwich-bench" engine --model "$small" --load-format dummy \
  --configs "1x1,1x$cores" -p 256 -n 32 -r "$reps" --stream --json "$out/fig3b/engine.json"

# --- Figure 7: the simulator's ranking of configurations against measured engine steps ------
fig7() {
  for phase in prefill decode; do
    "$bin/sandwich-tune" compare --model "$small" --phase "$phase" --json \
      >"$out/fig7/compare-$phase.json" || return 1
  done
}
step fig7 600 fig7

# --- Figure 8: kernel tuning time, and what tuning buys over the cost model ------------------
fig8() {
  local t0 t1
  t0=$(date +%s.%N)
  "$bin/sandwich-tune" kernels --model "$small" --load-format dummy --max-m "$kernels_max_m" \
    --no-attention -o "$out/fig8/table.json" || return 1
  t1=$(date +%s.%N)
  python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$t0" "$t1" \
    >"$out/fig8/tuning_seconds.txt"
  [ -x "$bin/bench_kernels" ] || return 0
  "$bin/bench_kernels" --schedules="$out/fig8/table.json" --benchmark_min_time=0.05 \
    --benchmark_filter="/M:($(seq -s '|' 1 "$kernels_max_m"))/" \
    --benchmark_format=json --benchmark_out="$out/fig8/tuned_vs_cost_model.json" \
    >"$out/fig8/tuned_vs_cost_model.txt"
}
step fig8 1200 fig8

# --- GEMM kernels against the vendor libraries (oneDNN, OpenBLAS) on the paper's shapes ------
if [ ! -x "$bin/bench_kernels" ]; then
  skip kernels "no bench_kernels (built only where Google Benchmark is found)"
else
  # bench_kernels registers 1 and 2 threads.
  filter='(gemm/.*/M:(128/N:1152/K:2304|512/N:768/K:1024|1/N:4096/K:4096|16/N:4096/K:4096)/threads:'"$((cores < 2 ? cores : 2))"'/)|peak|dram_read/before_N:4096_K:4096'
  step kernels 900 "$bin/bench_kernels" --benchmark_filter="$filter" --benchmark_min_time=0.1 \
    --benchmark_format=json --benchmark_out="$out/kernels/bench.json"
fi

# --- Figures 9-13: serving, Sandwich against llama.cpp's llama-server -----------------------
# Both servers load the same GGUF (random weights, the preset's real shapes).
model_file() {  # model_file PRESET: prints the GGUF path, writing it once
  local f="$out/models/$1.gguf"
  mkdir -p "$out/models"
  [ -f "$f" ] || "$bin/sandwich-model" make --preset "$1" --dtype bf16 --vocab "$tokenizer" \
    -o "$f" >&2 || return 1
  echo "$f"
}

llama_pid=""
stop_llama() {
  if [ -n "$llama_pid" ] && kill -0 "$llama_pid" 2>/dev/null; then
    kill -TERM "$llama_pid" 2>/dev/null
    wait "$llama_pid" 2>/dev/null
  fi
  llama_pid=""
}

start_llama() {  # start_llama GGUF LOG PARALLEL: llama-server on $port+1, waits for /health
  [ -n "$llama_server" ] || return 0
  "$llama_server" -m "$1" --host 127.0.0.1 --port $((port + 1)) -t "$cores" \
    -c $((max_len * $3)) \
    --parallel "$3" >"$2" 2>&1 &
  llama_pid=$!
  for _ in $(seq 1 600); do
    if curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$((port + 1))/health" 2>/dev/null |
      grep -q 200; then return 0; fi
    kill -0 "$llama_pid" 2>/dev/null || { echo "llama-server exited (see $2)"; llama_pid=""; return 1; }
    sleep 0.5
  done
  echo "llama-server not healthy after 300 s"; stop_llama; return 1
}

# The paper's SLO values were set for a larger machine: TTFT is scaled by the compute and TPOT
# by the memory bandwidth of the reference machine over this one's measured figures.
slo_targets() {  # slo_targets PRESET: prints "TTFT_MS TPOT_MS TTFT_SCALE TPOT_SCALE"
  python3 - "$out/machine/calibration.json" "$ref_file" "$out/machine/reference.txt" \
    "configs/slo/$1.json" "$cores" "$(ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null | wc -l)" <<'EOF'
import json, re, sys
cal = json.load(open(sys.argv[1]))["params"]
ref = json.load(open(sys.argv[2]))["params"]
text = open(sys.argv[3]).read()
slo = json.load(open(sys.argv[4]))
cores = int(sys.argv[5])
local_numa = max(1, int(sys.argv[6]))
numa = int(re.search(r"PUs\s+\d+ in (\d+) NUMA", text).group(1))
# The level table's row naming Core gives the machine's core count (its "nodes" column).
ref_cores = next(int(line.split()[-3]) for line in text.splitlines()
                 if re.match(r"\d+\s", line) and "Core" in line)
ttft_scale = ref_cores * ref["core_gflops"] / (cores * cal["core_gflops"])
tpot_scale = numa * ref["numa_bw_gbs"] / (local_numa * cal["numa_bw_gbs"])
print(f'{slo["ttft_ms"] * ttft_scale:.0f} {slo["tpot_ms"] * tpot_scale:.0f} '
      f'{ttft_scale:.2f} {tpot_scale:.2f}')
EOF
}

export -f model_file stop_llama start_llama slo_targets

serve() {  # serve NAME PRESET SLO_PRESET MODE
  local name=$1 preset=$2 slo=$3 mode=$4 gguf targets ttft tpot
  trap stop_llama EXIT  # this step's shell started it
  gguf=$(model_file "$preset") || return 1
  read -r ttft tpot ttft_scale tpot_scale < <(slo_targets "$slo") || return 1
  echo "$slo $ttft $tpot $ttft_scale $tpot_scale $reference" >"$out/$name/slo.txt"
  local extra=() endpoints=()
  if [ "$mode" = single ]; then
    # Scales down to 1/100: the scaled SLO is loose for a small model, and the paper's claim is
    # about how tight an SLO each server still meets.
    extra=(--single-sequence --num-prompts "$single_prompts"
      --slo-scales 0.01,0.02,0.05,0.1,0.2,0.35,0.5,0.75,1)
    start_llama "$gguf" "$out/$name/llama-server.log" 1 || return 1
  else
    # Rates as multiples of what one sequence at a time sustains (the single-sequence run's
    # request throughput), so the sweep spans light load to overload on any machine.
    local base
    base=$(python3 - "$out/serve-single/summary.json" <<'EOF'
import json, sys
try:
    s = json.load(open(sys.argv[1]))
    print(s["endpoints"][0]["runs"][0]["summary"]["request_throughput"])
except Exception:
    print(0.5)
EOF
)
    local rates
    rates=$(python3 -c "import sys; b=float(sys.argv[1]); print(','.join(f'{b*float(m):.3g}' for m in sys.argv[2].split(',')))" "$base" "$rate_mults")
    extra=(--request-rates "$rates" --num-prompts "$batched_prompts" --max-concurrency 64
      --slo-scales 0.01,0.02,0.05,0.1,0.2,0.35,0.5,0.75,1)
    start_llama "$gguf" "$out/$name/llama-server.log" 8 || return 1
  fi
  [ -n "$llama_server" ] && endpoints=(--endpoint "llama.cpp=http://127.0.0.1:$((port + 1))")
  scripts/compare_serving.sh --model "$gguf" --port "$port" --out "$out/$name" \
    --tokenizer "$tokenizer" --bin "$bin" "${endpoints[@]}" -- \
    --slo-ttft-ms "$ttft" --slo-tpot-ms "$tpot" --slo-definition percentile \
    --dataset sharegpt --max-model-len "$max_len" --seed 0 "${extra[@]}"
  local rc=$?
  stop_llama
  return $rc
}
# The batched rates are multiples of this run's throughput, so both serve the same model (a
# single-sequence run of llama-1.3b takes hours on 2 cores: the SLO is the 160M one, scaled).
step serve-single 3600 serve serve-single "$small" batched-160m single
step serve-batched 3600 serve serve-batched "$small" batched-160m batched

# --- Table 1: ablation; Table 2: kernels tuned for the top-k before the choice ---------------
step table1 1800 scripts/paper/table1_ablation.sh "${table_args[@]}" --bin "$bin" -o "$out/table1"
step table2 3600 scripts/paper/table2_topk.sh "${table_args[@]}" --bin "$bin" -o "$out/table2"

# --- Table 3: the settings of this run (models, SLOs, machine) are written by the report -----
# --- Table 4: TopoTree search statistics and times on the paper's machines -------------------
table4() {
  # Both dedup hashes (structure, placement), decode at batch 16 and at batch 1.
  "$bin/sandwich-tune" survey --model llama-1.3b --hash both --decode-batch 16 \
    >"$out/table4/survey.txt" &&
    "$bin/sandwich-tune" survey --model llama-1.3b --hash both --decode-batch 1 \
      >"$out/table4/survey-batch1.txt"
}
step table4 600 table4

# --- Kunpeng 920: the latent 4-core clusters, found without --placement-hash -----------------
# Single-sequence serving decodes at batch 1, where the step is memory-bound; at the batched
# preset's batch 16 Kunpeng's FP32-rate cores make decode compute-bound (all cores win).
kunpeng() {
  "$bin/sandwich-tune" plan --model llama-1.3b --load-format dummy --topology kunpeng920-4s \
    --dry-run --slo single-1.3b >"$out/kunpeng/single-sequence.txt" &&
    "$bin/sandwich-tune" plan --model llama-1.3b --load-format dummy --topology kunpeng920-4s \
      --dry-run --slo batched-1.3b >"$out/kunpeng/batched.txt"
}
step kunpeng 300 kunpeng

python3 scripts/paper/write_report.py "$out" --quick "$quick" --reference "$reference" ||
  die "the report could not be written"
echo "reproduce: report in $out/report.md" >&2
exit $failed
