#!/usr/bin/env bash
# Quality of quantized weights against llama.cpp, on the same files and the same text: for each
# type, the mean KL divergence of the next-token distribution from the F32 model's (and the
# share of positions whose top token is the F32 model's), computed by sandwich-perplexity and by
# llama.cpp's llama-perplexity --kl-divergence; then greedy ids of sandwich-generate against
# llama-server's on the quantized stories260K files, with the top-2 margins where they part.
# Every file is written by our own tools (sandwich-model quantize / make), so both sides read
# the same bytes: stories260K (llama2.c) as F32, Q8_0 and Q4_0 GGUF, and the llama-160m preset's
# dummy weights (f32, with the Llama-2 vocabulary) as q4_k, q5_k, q6_k and q4_k_m.
#
# Usage: scripts/compare_quality.sh [options]
#   --llama-perplexity PATH  llama.cpp's llama-perplexity (without it: our figures only)
#   --llama-server PATH      llama.cpp's llama-server, for the greedy ids (without it: skipped)
#   --threads N              threads of every run (default 2)
#   --kv-cache-dtype D       our KV cache (default f32: at least as precise as llama.cpp's F16,
#                            so the figures compare the weights; bf16 is the engine's default)
#   --ctx N                  chunk size on stories260K (default 64: its text is 200 tokens)
#   --text FILE              stories260K's text (default: its reference greedy output)
#   --dummy-ctx N --dummy-chunks N   on llama-160m (default 128 and 8)
#   --dummy-text FILE        its text (default: the Llama 3 licence in the shared data)
#   --no-dummy               stories260K only
#   --greedy-n N             greedy tokens (default 200)
#   --out DIR                where files and logs go (default out/quality-<date>, git-ignored)
#   --bin DIR                where our tools are (default build/bin)
#   --tables-only            print the tables of an earlier run's --out DIR, running nothing
# Needs python3 (the tables and llama-server's JSON).
set -euo pipefail
cd "$(dirname "$0")/.."
die() { echo "compare_quality: $*" >&2; exit 1; }
log() { echo "compare_quality: $*" >&2; }

shared="${SANDWICH_SHARED:-../shared}/data"
llama_ppl="" llama_server="" threads=2 kv=f32 ctx=64 text="" dummy_ctx=128 dummy_chunks=8
dummy_text="" dummy=1 greedy_n=200 out="" bin="build/bin" tables_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --llama-perplexity) llama_ppl="${2:?--llama-perplexity needs a value}"; shift 2 ;;
    --llama-server) llama_server="${2:?--llama-server needs a value}"; shift 2 ;;
    --threads) threads="${2:?--threads needs a value}"; shift 2 ;;
    --kv-cache-dtype) kv="${2:?--kv-cache-dtype needs a value}"; shift 2 ;;
    --ctx) ctx="${2:?--ctx needs a value}"; shift 2 ;;
    --text) text="${2:?--text needs a value}"; shift 2 ;;
    --dummy-ctx) dummy_ctx="${2:?--dummy-ctx needs a value}"; shift 2 ;;
    --dummy-chunks) dummy_chunks="${2:?--dummy-chunks needs a value}"; shift 2 ;;
    --dummy-text) dummy_text="${2:?--dummy-text needs a value}"; shift 2 ;;
    --no-dummy) dummy=0; shift ;;
    --tables-only) tables_only=1; shift ;;
    --greedy-n) greedy_n="${2:?--greedy-n needs a value}"; shift 2 ;;
    --out) out="${2:?--out needs a value}"; shift 2 ;;
    --bin) bin="${2:?--bin needs a value}"; shift 2 ;;
    -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
stories_types="q8_0 q4_0"
dummy_types="q4_k q5_k q6_k q4_k_m"
greedy_types="f32 $stories_types"
if [ "$tables_only" = 1 ]; then
  [ -n "$out" ] && [ -d "$out" ] || die "--tables-only needs --out DIR of an earlier run"
  [ -f "$out/llama-160m.ours.f32.txt" ] || dummy=0
fi
stories="$shared/models/stories260K"
[ -n "$text" ] || text="$stories/expected_greedy_200.txt"
[ -n "$dummy_text" ] || dummy_text="$shared/tokenizers/llama3/LICENSE_Meta_Llama_3_Community.txt"
if [ "$tables_only" = 0 ]; then
[ -f "$stories/stories260K.bin" ] || die "no stories260K in $stories (set SANDWICH_SHARED)"
[ -f "$text" ] || die "no text file $text"
[ "$dummy" = 0 ] || [ -f "$dummy_text" ] || die "no text file $dummy_text"
[ -z "$llama_ppl" ] || [ -x "$llama_ppl" ] || die "llama-perplexity not found at $llama_ppl"
[ -z "$llama_server" ] || [ -x "$llama_server" ] || die "llama-server not found at $llama_server"
for tool in sandwich-model sandwich-perplexity sandwich-generate; do
  [ -x "$bin/$tool" ] || die "no $bin/$tool (build first, or pass --bin)"
done
command -v python3 >/dev/null || die "python3 is needed for the tables"
[ -n "$out" ] || out="out/quality-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"

# base_runs NAME MODEL CTX CHUNKS TEXT: the F32 model's PPL, its log-probabilities saved (each
# side in its own format) for the comparisons; CHUNKS empty: all the text holds. Each run's
# stdout is kept as NAME.<side>.<type>.txt (the tables read them), its stderr as .log.
base_runs() {
  local name=$1 model=$2 c=$3 txt=$5 chunks=()
  [ -z "$4" ] || chunks=(--chunks "$4")
  log "$name: F32 base (ours)"
  "$bin/sandwich-perplexity" -m "$model" -f "$txt" -c "$c" "${chunks[@]}" -t "$threads" \
    --kv-cache-dtype "$kv" --kl-divergence-base "$out/$name.ours.kld" \
    >"$out/$name.ours.f32.txt" 2>"$out/$name.ours.f32.log" ||
    die "sandwich-perplexity failed: $(tail -1 "$out/$name.ours.f32.log")"
  if [ -n "$llama_ppl" ]; then
    log "$name: F32 base (llama.cpp)"
    "$llama_ppl" -m "$model" -f "$txt" -c "$c" -b "$c" "${chunks[@]}" -t "$threads" \
      --kl-divergence-base "$out/$name.llama.kld" \
      >"$out/$name.llama.f32.txt" 2>"$out/$name.llama.f32.log" ||
      die "llama-perplexity failed (see $out/$name.llama.f32.log)"
  fi
}
kld_runs() {  # name, type, model
  local name=$1 type=$2 model=$3
  log "$name: $type (ours)"
  "$bin/sandwich-perplexity" -m "$model" -t "$threads" --kv-cache-dtype "$kv" \
    --kl-divergence --kl-divergence-base "$out/$name.ours.kld" \
    >"$out/$name.ours.$type.txt" 2>"$out/$name.ours.$type.log" ||
    die "sandwich-perplexity failed: $(tail -1 "$out/$name.ours.$type.log")"
  if [ -n "$llama_ppl" ]; then
    log "$name: $type (llama.cpp)"
    "$llama_ppl" -m "$model" -t "$threads" --kl-divergence \
      --kl-divergence-base "$out/$name.llama.kld" \
      >"$out/$name.llama.$type.txt" 2>"$out/$name.llama.$type.log" ||
      die "llama-perplexity failed (see $out/$name.llama.$type.log)"
  fi
}
quantize() {  # in, out, type
  "$bin/sandwich-model" quantize -q "$1" "$2" "$3" >/dev/null 2>"$2.log" ||
    die "quantize $3 failed: $(tail -1 "$2.log")"
}

# stories260K: the llama2.c files written as GGUF by our quantizer.
s_f32="$out/stories260K-f32.gguf"
"$bin/sandwich-model" quantize -q "$stories/stories260K.bin" "$s_f32" f32 \
  --tokenizer "$stories/tok512.bin" 2>"$out/quantize.log" || die "$(tail -1 "$out/quantize.log")"
for t in $stories_types; do quantize "$s_f32" "$out/stories260K-$t.gguf" "$t"; done
base_runs stories260K "$s_f32" "$ctx" "" "$text"  # every chunk the text holds
for t in $stories_types; do kld_runs stories260K "$t" "$out/stories260K-$t.gguf"; done

if [ "$dummy" = 1 ]; then
  d_f32="$out/llama-160m-f32.gguf"
  log "llama-160m: dummy weights, f32, Llama-2 vocabulary"
  "$bin/sandwich-model" make --preset llama-160m --dtype f32 \
    --vocab "$shared/tokenizers/llama2/tokenizer.model" -o "$d_f32" 2>"$out/make.log" ||
    die "$(tail -1 "$out/make.log")"
  for t in $dummy_types; do quantize "$d_f32" "$out/llama-160m-$t.gguf" "$t"; done
  base_runs llama-160m "$d_f32" "$dummy_ctx" "$dummy_chunks" "$dummy_text"
  for t in $dummy_types; do kld_runs llama-160m "$t" "$out/llama-160m-$t.gguf"; done
fi

# Greedy ids: ours (with each token's top-2 log-probabilities) and llama-server's.
for t in $greedy_types; do
  model="$out/stories260K-$t.gguf"
  log "greedy: stories260K $t (ours)"
  "$bin/sandwich-generate" -m "$model" -n "$greedy_n" --temp 0 --ignore-eos --output-ids \
    --logprobs 2 -q -t "$threads" --kv-cache-dtype "$kv" \
    >"$out/greedy.ours.$t.txt" 2>"$out/greedy.ours.$t.logprobs"
done
if [ -n "$llama_server" ]; then
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  for t in $greedy_types; do
    log "greedy: stories260K $t (llama.cpp)"
    "$llama_server" -m "$out/stories260K-$t.gguf" --host 127.0.0.1 --port "$port" \
      -t "$threads" -c 512 -np 1 >"$out/greedy.llama.$t.log" 2>&1 &
    pid=$!
    python3 - "$port" "$greedy_n" "$out/greedy.llama.$t.json" <<'PY' || { kill "$pid"; die "llama-server did not answer (see $out/greedy.llama.$t.log)"; }
import json, sys, time, urllib.request
port, n, dst = sys.argv[1], int(sys.argv[2]), sys.argv[3]
base = "http://127.0.0.1:%s" % port
for _ in range(600):
    try:
        if urllib.request.urlopen(base + "/health", timeout=1).status == 200:
            break
    except Exception:
        time.sleep(0.1)
body = {"prompt": [1], "n_predict": n, "temperature": 0, "top_k": 1, "n_probs": 2,
        "ignore_eos": True, "return_tokens": True, "cache_prompt": False}
req = urllib.request.Request(base + "/completion", json.dumps(body).encode(),
                             {"Content-Type": "application/json"})
json.dump(json.load(urllib.request.urlopen(req, timeout=300)), open(dst, "w"))
PY
    kill "$pid"
    wait "$pid" 2>/dev/null || true
  done
fi
fi  # tables_only

python3 - "$out" "$stories_types" "$([ "$dummy" = 1 ] && echo "$dummy_types")" \
  "$greedy_types" <<'PY'
import json, math, os, re, sys
out, stories_types, dummy_types, greedy_types = sys.argv[1], sys.argv[2].split(), \
    sys.argv[3].split(), sys.argv[4].split()

def read(path):
    return open(path, encoding="utf-8", errors="replace").read() if os.path.exists(path) else None

def last_chunk_row(text):
    # Both tools print a row per chunk (figures so far): PPL, ln ratio, KLD, RMS dp, same top.
    rows = [l.split() for l in (text or "").splitlines()
            if re.match(r"^\s*\d+\s+[-0-9.naninf]+ ±", l)]
    if not rows:
        return None
    r = rows[-1]
    return {"ppl": float(r[1]), "kld": float(r[7]), "kld_err": float(r[9]),
            "rms_dp": float(r[10]), "same_top": float(r[14])}

def final_ppl(name, side):
    # llama-perplexity prints its final estimate on stderr, we on stdout.
    text = "".join(read(os.path.join(out, "%s.%s.f32.%s" % (name, side, ext))) or ""
                   for ext in ("txt", "log"))
    m = re.search(r"Final estimate: PPL = ([0-9.]+) \+/- ([0-9.]+)", text)
    return (float(m.group(1)), float(m.group(2))) if m else None

def figure(text, label):
    m = re.search(re.escape(label) + r"\s*:\s+([-0-9.]+)(?: ± +([0-9.]+))?", text or "")
    return (float(m.group(1)), float(m.group(2) or 0)) if m else None

def kld_figures(name, side, t):
    # The summary's figures (6 decimals) when there is one: llama-perplexity prints it from 100
    # scored tokens on; else the last chunk row's (5 decimals).
    text = read(os.path.join(out, "%s.%s.%s.txt" % (name, side, t)))
    row = last_chunk_row(text)
    if row is None:
        return None
    kld, top, ppl = figure(text, "Mean    KLD"), figure(text, "Same top p"), \
        figure(text, "Mean PPL(Q)")
    mx = figure(text, "Maximum KLD")
    if kld:
        row["kld"], row["kld_err"] = kld
    if top:
        row["same_top"] = top[0]
    if ppl:
        row["ppl"] = ppl[0]
    row["max"] = mx[0] if mx else None
    return row

def fmt(v, f="%.6f"):
    return f % v if v is not None else "-"

print("| model | type | our mean KLD | llama.cpp mean KLD | ours / llama.cpp | our same top % "
      "| llama.cpp same top % | our max KLD | llama.cpp max KLD | our PPL | llama.cpp PPL |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for name, types in (("stories260K", stories_types), ("llama-160m", dummy_types)):
    if not types:
        continue
    ob, lb = final_ppl(name, "ours"), final_ppl(name, "llama")
    print("| %s | f32 (base) | - | - | - | - | - | - | - | %s | %s |" % (
        name, "%.4f ± %.4f" % ob if ob else "-", "%.4f ± %.4f" % lb if lb else "-"))
    for t in types:
        o, l = kld_figures(name, "ours", t), kld_figures(name, "llama", t)
        ratio = "%.3f" % (o["kld"] / l["kld"]) if o and l and l["kld"] > 0 else "-"
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            name, t, fmt(o and o["kld"]) + (" ± " + fmt(o["kld_err"]) if o else ""),
            fmt(l and l["kld"]) + (" ± " + fmt(l["kld_err"]) if l else ""), ratio,
            fmt(o and o["same_top"], "%.3f"), fmt(l and l["same_top"], "%.3f"),
            fmt(o and o["max"]), fmt(l and l["max"]), fmt(o and o["ppl"], "%.4f"),
            fmt(l and l["ppl"], "%.4f")))

print()
print("| stories260K | greedy ids | agree | first divergence | our ids there | "
      "our top-2 margin (nats) | llama.cpp ids there | llama.cpp top-2 margin (nats) |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for t in greedy_types:
    ours = [int(x) for x in (read(os.path.join(out, "greedy.ours.%s.txt" % t)) or "").split()]
    margins = {}
    for line in (read(os.path.join(out, "greedy.ours.%s.logprobs" % t)) or "").splitlines():
        f = line.split()
        if len(f) >= 8 and f[0] == "logprob":
            i = int(f[1].rstrip(":"))
            margins[i] = ((int(f[5]), float(f[6])), (int(f[7]), float(f[8])))
    theirs, their_margins = None, {}
    path = os.path.join(out, "greedy.llama.%s.json" % t)
    if os.path.exists(path):
        j = json.load(open(path))
        theirs = j.get("tokens")
        for i, p in enumerate(j.get("completion_probabilities", [])):
            top = p.get("top_logprobs") or p.get("probs") or []
            if len(top) >= 2:
                lp = [(x["id"], x.get("logprob", math.log(max(x.get("prob", 1e-45), 1e-45))))
                      for x in top[:2]]
                their_margins[i] = tuple(lp)
        if theirs is None:
            theirs = [p["id"] for p in j.get("completion_probabilities", [])]
    if theirs is None:
        print("| %s | %d ids (ours) | - | - | - | - | - | - |" % (t, len(ours)))
        continue
    n = min(len(ours), len(theirs))
    k = next((i for i in range(n) if ours[i] != theirs[i]), None)
    if k is None:
        print("| %s | %d | all %d | none | - | - | - | - |" % (t, n, n))
        continue
    om, lm = margins.get(k), their_margins.get(k)
    print("| %s | %d | %d | token %d | %s | %s | %s | %s |" % (
        t, n, k, k, "%d vs %d" % (om[0][0], om[1][0]) if om else ours[k],
        "%.4f" % (om[0][1] - om[1][1]) if om else "-",
        "%d vs %d" % (lm[0][0], lm[1][0]) if lm else theirs[k],
        "%.4f" % (lm[0][1] - lm[1][1]) if lm else "-"))
PY
log "files and logs in $out"
