#!/usr/bin/env bash
# Training step speed: sailor's runtime against PyTorch 1.13 on the same machine, same shapes,
# same thread count, in one run. GPT-2-small-shaped model (12 layers, hidden 768, 12 heads,
# vocabulary 50257, 1024 positions) trained at sequence 256, micro-batch 4 (1024 tokens per
# step), AdamW + clipping, at 1 and 2 threads. For each: median ms/step over the steps after a
# warm-up step, tokens/s, the ratio ours/PyTorch (speed-up), MFU against the sgemm peak measured
# here at that thread count (bench_train_sgemm), and peak RSS against the memory sailor
# accounts for (parameters, gradients, AdamW state, activations, workspace).
#
# Both sides use the same OpenBLAS with the same OPENBLAS_CORETYPE (whatever the environment
# says); PyTorch gets torch.set_num_threads(T) and OPENBLAS_NUM_THREADS=T. Set
# BENCH_TRAIN_ALL_CORES=1 to repeat the comparison with OpenBLAS's own CPU detection when the
# environment pins OPENBLAS_CORETYPE. BENCH_TRAIN_STEPS (default 3) timed steps per run.
# Never fails on speed; fails only if a run breaks.
set -euo pipefail
cd "$(dirname "$0")/.."
SAILOR=${SAILOR:-./sailor}
BUILD=${BUILD:-build}
PY=/usr/bin/python3
steps=${BENCH_TRAIN_STEPS:-3}
probe="$BUILD/bench/bench_train_sgemm"
[ -x "$probe" ] || make -s "$probe"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$SAILOR" data data/text/fsf-licenses.txt -o "$work/tokens.bin" > /dev/null
have_torch=0
"$PY" -c 'import torch' 2>/dev/null && have_torch=1

run_config() { # $1: label; environment already set by the caller
  local label=$1
  : > "$work/results.jsonl"
  for t in 1 2; do
    "$probe" --threads "$t" --json | sed "s/^/{\"kind\":\"peak\",\"t\":$t,\"r\":/; s/\$/}/" >> "$work/results.jsonl"
    "$SAILOR" train --model gpt2-small --seq-len 256 --micro-batch 4 --global-batch 4 \
      --steps $((steps + 1)) --threads "$t" --data "$work/tokens.bin" --json > "$work/ours.jsonl"
    sed "s/^/{\"kind\":\"ours\",\"t\":$t,\"r\":/; s/\$/}/" "$work/ours.jsonl" >> "$work/results.jsonl"
    if [ "$have_torch" = 1 ]; then
      OPENBLAS_NUM_THREADS=$t OMP_NUM_THREADS=$t "$PY" bench/bench_train_torch.py --threads "$t" \
        --steps "$steps" --warmup 1 --seq-len 256 --micro-batch 4 2> /dev/null |
        sed "s/^/{\"kind\":\"torch\",\"t\":$t,\"r\":/; s/\$/}/" >> "$work/results.jsonl"
    fi
  done
  "$PY" bench/bench_train_report.py "$label" "$work/results.jsonl"
}

echo "GPT-2-small shape: 12 layers, hidden 768, 12 heads, vocab 50257, seq 256, micro-batch 4;"
echo "median of $steps steps after 1 warm-up step; $(nproc) cores; OpenBLAS $(dpkg-query -W -f='${Version}' libopenblas0-pthread 2>/dev/null || echo '?')"
[ "$have_torch" = 1 ] || echo "(PyTorch not importable by $PY: sailor only; scripts/install-deps.sh --with-torch)"
run_config "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-<autodetect>}"
if [ "${BENCH_TRAIN_ALL_CORES:-0}" = 1 ] && [ -n "${OPENBLAS_CORETYPE:-}" ]; then
  (unset OPENBLAS_CORETYPE; run_config "OPENBLAS_CORETYPE unset (OpenBLAS detects the CPU)")
fi
