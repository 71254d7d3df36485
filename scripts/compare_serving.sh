#!/usr/bin/env bash
# Runs a whole serving comparison with one command: starts sandwichd (dummy weights unless
# --real-weights), waits for /health, runs `sandwich-bench serve` against it and against every
# extra --endpoint (e.g. a llama-server you started), and writes JSON, report.md and plots.
#
# Usage: scripts/compare_serving.sh --model M [options] [-- sandwich-bench serve options]
#   --model M            model for sandwichd (path or preset: llama-160m, llama-1.3b, llama3-8b)
#   --tokenizer T        tokenizer for sandwichd
#   --plan P             plan file for sandwichd
#   --threads N          compute threads of sandwichd (default: all cores)
#   --max-num-seqs S     sandwichd's batch limit
#   --max-model-len L    sandwichd's context limit (the dataset is filtered to it too)
#   --port P             sandwichd's port (default 8000)
#   --sandwichd-arg A    any other sandwichd argument (repeatable)
#   --real-weights       load the model's weights instead of --load-format dummy (the default
#                        for a preset name; a model file or folder is always loaded as it is)
#   --no-sandwichd       only benchmark the --endpoint servers
#   --endpoint L=URL     another server to compare (repeatable), e.g. llama.cpp=http://127.0.0.1:8080
#   --out DIR            where results go (default out/serve-<model>-<date>, git-ignored)
#   --bin DIR            where sandwichd and sandwich-bench are (default build/bin)
# Everything after -- goes to sandwich-bench serve. Without SLO options there, a preset is
# picked by model name (batched-160m, batched-1.3b, single-8b); without a rate option, the
# sweep is --request-rates 0.25,0.5,1,2,4.
#
# Example (llama-server started separately with the same GGUF, see bench/BENCH.md):
#   scripts/compare_serving.sh --model llama-160m --threads 2 \
#       --endpoint llama.cpp=http://127.0.0.1:8080 -- --num-prompts 200 --slo-scale 4
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "compare_serving: $*" >&2; exit 1; }

model="" port=8000 out="" bin="build/bin" dummy=1 run_sandwichd=1
sandwichd_args=() endpoints=() bench_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --model) model="${2:?--model needs a value}"; shift 2 ;;
    --tokenizer|--plan|--threads|--max-num-seqs|--max-model-len)
      sandwichd_args+=("$1" "${2:?$1 needs a value}"); shift 2 ;;
    --port) port="${2:?--port needs a value}"; shift 2 ;;
    --sandwichd-arg) sandwichd_args+=("${2:?--sandwichd-arg needs a value}"); shift 2 ;;
    --real-weights) dummy=0; shift ;;
    --no-sandwichd) run_sandwichd=0; shift ;;
    --endpoint) endpoints+=(--endpoint "${2:?--endpoint needs a value}"); shift 2 ;;
    --out) out="${2:?--out needs a value}"; shift 2 ;;
    --bin) bin="${2:?--bin needs a value}"; shift 2 ;;
    --) shift; bench_args=("$@"); break ;;
    -h|--help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
[ $run_sandwichd -eq 0 ] || [ -n "$model" ] || die "--model is required (or --no-sandwichd with --endpoint)"
[ $run_sandwichd -eq 1 ] || [ ${#endpoints[@]} -gt 0 ] || die "--no-sandwichd needs at least one --endpoint"
[ -x "$bin/sandwich-bench" ] || die "no $bin/sandwich-bench; build first (scripts/setup.sh) or pass --bin"

has_arg() {  # has_arg PATTERN: whether a bench argument matches
  local a
  for a in "${bench_args[@]+"${bench_args[@]}"}"; do [[ "$a" == $1 ]] && return 0; done
  return 1
}
# --slo-scale alone keeps the preset: only an SLO given another way replaces it.
if ! has_arg "--slo" && ! has_arg "--slo=*" && ! has_arg "--slo-t*-ms*"; then
  case "$model" in
    *160m*) bench_args+=(--slo batched-160m) ;;
    *1.3b*|*1_3b*) bench_args+=(--slo batched-1.3b) ;;
    *8b*) bench_args+=(--slo single-8b) ;;
    *) die "no SLO preset for model '$model': pass -- --slo NAME or --slo-ttft-ms T --slo-tpot-ms P" ;;
  esac
fi
has_arg "--request-rate*" || has_arg "--single-sequence" || has_arg "--goodput-search" ||
  bench_args+=(--request-rates 0.25,0.5,1,2,4)

name="${model:-endpoints}"
name="${name##*/}"
out="${out:-out/serve-${name%.*}-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$out"

pid=""
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
}
trap cleanup EXIT INT TERM

health() {  # health PORT: prints the HTTP status of GET /health
  if command -v curl >/dev/null; then
    curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$1/health" 2>/dev/null || true
  else
    { exec 3<>"/dev/tcp/127.0.0.1/$1" && printf 'GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' >&3 &&
      head -1 <&3 | cut -d' ' -f2; } 2>/dev/null || true
  fi
}

if [ $run_sandwichd -eq 1 ]; then
  [ -x "$bin/sandwichd" ] || die "no $bin/sandwichd; build first (scripts/setup.sh) or pass --bin"
  [ "$(health "$port")" = "" ] || [ "$(health "$port")" = "000" ] || die "something already answers on port $port (use --port)"
  args=(--model "$model" --host 127.0.0.1 --port "$port")
  # A file or folder is what a peer loads too (the same GGUF): serve exactly that.
  [ $dummy -eq 1 ] && [ ! -e "$model" ] && args+=(--load-format dummy)
  args+=("${sandwichd_args[@]+"${sandwichd_args[@]}"}")
  echo "compare_serving: starting $bin/sandwichd ${args[*]} (log: $out/sandwichd.log)"
  "$bin/sandwichd" "${args[@]}" >"$out/sandwichd.log" 2>&1 &
  pid=$!
  for i in $(seq 1 1200); do  # loading a large dummy model takes a while
    [ "$(health "$port")" = "200" ] && break
    kill -0 "$pid" 2>/dev/null || { tail -5 "$out/sandwichd.log" >&2; die "sandwichd exited during start-up"; }
    [ "$i" -eq 1200 ] && die "sandwichd not healthy after 600 s (see $out/sandwichd.log)"
    sleep 0.5
  done
  endpoints=(--endpoint "sandwich=http://127.0.0.1:$port" "${endpoints[@]+"${endpoints[@]}"}")
fi

echo "compare_serving: $bin/sandwich-bench serve ${endpoints[*]} --output-dir $out ${bench_args[*]}"
"$bin/sandwich-bench" serve "${endpoints[@]}" --output-dir "$out" "${bench_args[@]}" | tee "$out/console.txt"
echo "compare_serving: report in $out/report.md"
