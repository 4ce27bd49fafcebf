#!/usr/bin/env bash
# Checkpoints are plan-independent: 5 steps of `sailor run` under plan A (2 stages x 2 pipelines,
# mixed TP, two zones), then 5 more resumed under plan B (4-way TP with data parallelism of mixed
# degrees), equal 10 straight steps of `sailor train`; and the reverse mix: 3 steps of `sailor
# train`, 3 resumed under plan B, 4 resumed in `sailor train` again. Losses within 1e-5 relative,
# final parameters and moments within 1e-5 relative norm (tests/runtime/compare_runs.py).
# --lr-decay-steps is fixed so that the shorter first runs follow the same learning-rate curve.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/lib/common.sh
need_python numpy
use_mpi
tokens "$work/tokens.bin"
common=(--model gpt2-tiny --data "$work/tokens.bin" --seq-len 32 --steps 10 --seed 5 --lr 1e-3
        --warmup-steps 2 --lr-decay-steps 10 --json)
A=tests/runtime/plans/06-pp2-dp2-mixed-tp-two-zones.json
B=tests/runtime/plans/10-dp4-tp-mix-uneven-mb.json   # global batch 16
sed 's/"global_batch":16/"global_batch":8/; s/\[3,2,2,1\]/[1,1,1,1]/' "$B" > "$work/B.json"
B="$work/B.json"
"$SAILOR" train "${common[@]}" --micro-batch 2 --global-batch 8 --threads 1 \
  --ckpt-dir "$work/ref" > "$work/ref.jsonl"

# run under A to step 5, then under B to step 10
timeout 120 "$SAILOR" run --plan "$A" "${common[@]}" --steps 5 --ckpt-dir "$work/ab" > "$work/ab.jsonl"
timeout 120 "$SAILOR" run --plan "$B" "${common[@]}" --resume --ckpt-dir "$work/ab" >> "$work/ab.jsonl"
echo "== run plan A (5 steps) then plan B (5 steps) vs train (10 steps)"
"$PY" tests/runtime/compare_runs.py "$work/ref.jsonl" "$work/ab.jsonl" \
  --ckpt "$work/ref/step-00000010.ckpt" "$work/ab/step-00000010.ckpt"

# train to 3, run under B to 6, train to 10
hp=(--micro-batch 2 --global-batch 8 --threads 1)
"$SAILOR" train "${common[@]}" "${hp[@]}" --steps 3 --ckpt-dir "$work/mix" > "$work/mix.jsonl"
timeout 120 "$SAILOR" run --plan "$B" "${common[@]}" --steps 6 --resume --ckpt-dir "$work/mix" >> "$work/mix.jsonl"
"$SAILOR" train "${common[@]}" "${hp[@]}" --resume --ckpt-dir "$work/mix" >> "$work/mix.jsonl"
echo "== train (3) then run plan B (3) then train (4) vs train (10)"
"$PY" tests/runtime/compare_runs.py "$work/ref.jsonl" "$work/mix.jsonl" \
  --ckpt "$work/ref/step-00000010.ckpt" "$work/mix/step-00000010.ckpt"
