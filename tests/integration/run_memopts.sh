#!/usr/bin/env bash
# The memory options of a plan stage (issue 12) change memory, never results: `sailor run` with
# "recompute" (full, selective) and "zero": 1 on plans with P 1-4, TP mixed within a stage,
# D up to 4 and uneven micro-batch counts gives the losses of single-process `sailor train`
# within 1e-5 relative over 10 steps, and final checkpoints (whole values and AdamW moments)
# within 1e-5 relative norm (tests/runtime/compare_runs.py). Checkpoints stay plan-independent: a
# sharded run's checkpoint resumed by an unsharded plan, and the reverse, equal 10 straight
# steps. Where an option changes nothing (ZeRO on a stage with one replica) the run says so once
# and trains as without it; `sailor train --recompute` gives bit-identical losses.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/lib/common.sh
need_python numpy
use_mpi
tokens "$work/tokens.bin"
common=(--model gpt2-tiny --data "$work/tokens.bin" --seq-len 32 --steps 10 --seed 11 --lr 1e-3
        --warmup-steps 2 --lr-decay-steps 10 --json)

with_options() { # plan recompute zero -> the plan with both fields on every stage
  "$PY" - "$@" <<'EOF'
import json, sys
plan = json.load(open(sys.argv[1]))
for stage in plan["stages"]:
    stage["recompute"] = sys.argv[2]
    stage["zero"] = int(sys.argv[3])
print(json.dumps(plan))
EOF
}
reference() { # global batch -> single-process losses and checkpoint
  local dir="$work/ref-$1"
  [ -d "$dir" ] && return 0
  mkdir -p "$dir"
  train_reference "$dir/losses.jsonl" "${common[@]}" --micro-batch 2 --global-batch "$1" \
    --ckpt-dir "$dir/ckpt"
}
run() { # name plan [extra options] -> $work/run-name/{losses.jsonl,stderr,ckpt}
  local name=$1 plan=$2
  shift 2
  local out="$work/run-$name"
  mkdir -p "$out"
  if ! timeout 120 "$SAILOR" run --plan "$plan" "${common[@]}" --ckpt-dir "$out/ckpt" "$@" \
       >> "$out/losses.jsonl" 2>> "$out/stderr"; then
    echo "FAIL $name: sailor run failed"; cat "$out/stderr"; exit 1
  fi
}
check_options() { # plan-file recompute zero
  local base; base=$(basename "$1" .json)
  local name="$base-$2-zero$3"
  with_options "$1" "$2" "$3" > "$work/$name.json"
  local G; G=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["global_batch"])' "$1")
  reference "$G"
  run "$name" "$work/$name.json"
  echo "== $name"
  "$PY" tests/runtime/compare_runs.py "$work/ref-$G/losses.jsonl" "$work/run-$name/losses.jsonl" \
    --ckpt "$work/ref-$G/ckpt/step-00000010.ckpt" "$work/run-$name/ckpt/step-00000010.ckpt" \
    || { echo "FAIL $name"; exit 1; }
}

P=tests/runtime/plans
check_options $P/02-dp2.json selective 1                   # P1 D2, ZeRO over the whole model
check_options $P/06-pp2-dp2-mixed-tp-two-zones.json full 1 # P2, TP 1+2 mixed: whole-tensor view
check_options $P/08-pp4-8mb.json full 0                    # P4, recompute with 4 micro-batches in flight
check_options $P/09-pp2-dp3-tp124-uneven-mb.json selective 1 # TP 1+2+4, D3, uneven micro-batches
check_options $P/10-dp4-tp-mix-uneven-mb.json none 1       # D4 mixed TP, tied table sharded (P1)
check_options $P/11-pp3-dp2-tp2-embedding.json full 1      # P3: uniform TP 2, TP 1, mixed TP 1+2
check_options $P/12-pp2-dp2-uniform-tp2.json none 1        # uniform TP 2: replicated tensors once

# no-ops: recompute on a stage without blocks, ZeRO with one replica: one note each, same run
with_options $P/01-single.json full 1 > "$work/noop.json"
"$SAILOR" run --plan "$work/noop.json" "${common[@]}" --dry-run > /dev/null 2> "$work/noop.err"
grep -q 'one replica: "zero": 1 changes nothing' "$work/noop.err" \
  || { echo "FAIL: no note for zero on one replica"; cat "$work/noop.err"; exit 1; }
"$PY" - "$P/07-pp3-uneven-layers.json" > "$work/emb.json" <<'EOF'
import json, sys
plan = json.load(open(sys.argv[1]))
plan["stages"][0]["recompute"] = "full"   # layers 0-0: the embedding only
plan["stages"][1]["recompute"] = "full"   # layers 1-4: blocks
print(json.dumps(plan))
EOF
"$SAILOR" run --plan "$work/emb.json" "${common[@]}" --dry-run > /dev/null 2> "$work/emb.err"
[ "$(grep -c 'holds no transformer block' "$work/emb.err")" = 1 ] \
  || { echo "FAIL: expected one note for recompute on the embedding stage"; cat "$work/emb.err"; exit 1; }
check_options $P/01-single.json full 1

# sailor train --recompute: bit-identical losses
for mode in full selective; do
  "$SAILOR" train "${common[@]}" --micro-batch 2 --global-batch 8 --threads 1 --steps 4 \
    --recompute "$mode" | grep -o '"loss":[^,]*' > "$work/train-$mode.txt"
done
"$SAILOR" train "${common[@]}" --micro-batch 2 --global-batch 8 --threads 1 --steps 4 \
  | grep -o '"loss":[^,]*' > "$work/train-none.txt"
cmp "$work/train-none.txt" "$work/train-full.txt" && cmp "$work/train-none.txt" "$work/train-selective.txt" \
  || { echo "FAIL: sailor train --recompute changed the losses"; exit 1; }
echo "== sailor train --recompute full/selective: losses bit-identical"

# checkpoints: sharded (mixed TP) to step 5, unsharded to 10, and the reverse
A=$P/06-pp2-dp2-mixed-tp-two-zones.json
sed 's/"global_batch":16/"global_batch":8/; s/\[3,2,2,1\]/[1,1,1,1]/' $P/10-dp4-tp-mix-uneven-mb.json > "$work/B.json"
with_options "$A" none 1 > "$work/A-zero.json"
with_options "$work/B.json" full 1 > "$work/B-zero.json"
reference 8
run zero-then-plain "$work/A-zero.json" --steps 5
run zero-then-plain "$work/B.json" --resume
echo "== ZeRO plan A (5 steps) then plain plan B (5 steps) vs train (10 steps)"
"$PY" tests/runtime/compare_runs.py "$work/ref-8/losses.jsonl" "$work/run-zero-then-plain/losses.jsonl" \
  --ckpt "$work/ref-8/ckpt/step-00000010.ckpt" "$work/run-zero-then-plain/ckpt/step-00000010.ckpt"
run plain-then-zero "$A" --steps 5
run plain-then-zero "$work/B-zero.json" --resume
echo "== plain plan A (5 steps) then ZeRO plan B (5 steps) vs train (10 steps)"
"$PY" tests/runtime/compare_runs.py "$work/ref-8/losses.jsonl" "$work/run-plain-then-zero/losses.jsonl" \
  --ckpt "$work/ref-8/ckpt/step-00000010.ckpt" "$work/run-plain-then-zero/ckpt/step-00000010.ckpt"
echo "memory options change nothing but memory"
