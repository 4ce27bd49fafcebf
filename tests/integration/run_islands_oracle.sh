#!/usr/bin/env bash
# `sailor run` with islands (docs/design/islands.md) against the PyTorch reference
# tests/torch/islands_oracle.py, on a 2-block model (hidden 64, vocab 128, sequence 32) with the
# same initial weights (exported by `sailor train --steps 0 --save-safetensors`, same seed), data
# and hyper-parameters (warm-up + cosine lr, AdamW, weight decay, clipping):
#   0. the reference checks itself (--self-test: DiLoCo with eta 1, mu 0, H 1 is the
#      token-weighted average of the islands' weights after every step; a lock-step DiLoCo agrees
#      with the general one; wire rounding), on islands of uneven and of equal size;
#   1. the reference with one island equals `sailor train` (losses, final weights within 1e-5),
#      and the synchronous `sailor run` of plan A;
#   e. one island: plan A with an islands section of one island runs the synchronous plan A bit
#      for bit (the same loss strings, identical checkpoint tensors: compare_runs.py --rtol 0);
#   a. plan A (2 stages, 3 pipelines, TP 1 and 2, micro-batches 1/2/1) as 2 islands {0,1}, {2}
#      (3 and 1 micro-batches a step), H 5, fp32 wire, 30 steps: losses, learning rate, gradient
#      norm and final weights within 1e-5 of the reference;
#   b. plan B (1 stage, 4 pipelines, TP 2 and 1, micro-batches 3/2/2/1) as 3 islands {0,1}, {2},
#      {3}, H 5: the same;
#   c. plan A with one H per island, [5, 3]: the same;
#   d. plan B with 3 fragments and overlap 2 (merge 0.5): the same; and with
#      SAILOR_TEST_OUTER_BLOCKING=1 (the same syncs made blocking at step s+tau) the same loss strings
#      and checkpoint tensors as the overlapped run.
# An islands run whose losses equal the synchronous run's fails: sailor run ignored the section.
# Exit 0 pass, 1 mismatch (or `sailor run` refused an islands plan), 77 skip (no torch or mpirun).
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/lib/common.sh
need_python torch numpy
use_mpi
tokens "$work/tokens.bin"
cat > "$work/model.json" <<'JSON'
{"schema": "sailor.model/1", "name": "oracle-tiny", "layers": 2, "hidden": 64, "heads": 4,
 "ffn_hidden": 256, "seq_len": 32, "vocab": 128}
JSON
# Plan A: 2 stages, 3 pipelines (micro-batches 1, 2, 1), pipeline 0 at TP 2 in stage 1.
cat > "$work/A.json" <<'JSON'
{"schema": "sailor.plan/1", "global_batch": 8, "micro_batch": 2, "stages": [
 {"layers": [0, 1], "replicas": [{"gpu": "A100-40", "zone": "us-central1-a", "count": 2},
                                 {"gpu": "V100-16", "zone": "us-central1-b"}]},
 {"layers": [2, 3], "replicas": [{"gpu": "A100-40", "zone": "us-central1-a", "tp": 2},
                                 {"gpu": "A100-40", "zone": "us-central1-a"},
                                 {"gpu": "V100-16", "zone": "us-central1-b"}]}],
 "microbatches_per_pipeline": [1, 2, 1]}
JSON
# Plan B: 1 stage, 4 pipelines (micro-batches 3, 2, 2, 1), pipeline 0 at TP 2.
cat > "$work/B.json" <<'JSON'
{"schema": "sailor.plan/1", "global_batch": 16, "micro_batch": 2, "stages": [
 {"layers": [0, 3], "replicas": [{"gpu": "A100-40", "zone": "us-central1-a", "tp": 2},
                                 {"gpu": "A100-40", "zone": "us-central1-a"},
                                 {"gpu": "V100-16", "zone": "us-central1-b"},
                                 {"gpu": "V100-16", "zone": "us-central1-c"}]}],
 "microbatches_per_pipeline": [3, 2, 2, 1]}
JSON
steps=30
hp=(--seq-len 32 --lr 1e-3 --min-lr 1e-4 --warmup-steps 3 --lr-decay-steps "$steps"
    --weight-decay 0.1 --beta1 0.9 --beta2 0.95 --eps 1e-8 --grad-clip 1.0)
common=(--model "$work/model.json" --data "$work/tokens.bin" --seed 7 "${hp[@]}")
"$SAILOR" train "${common[@]}" --micro-batch 2 --global-batch 8 --steps 0 \
  --save-safetensors "$work/init.safetensors" --json >/dev/null ||
  die "sailor train --steps 0 failed"
oracle() { # PLAN ARGS...: the reference on PLAN
  local plan=$1
  shift
  "$PY" tests/torch/islands_oracle.py --plan "$plan" --model "$work/model.json" \
    --tokens "$work/tokens.bin" --init "$work/init.safetensors" --steps "$steps" "${hp[@]}" "$@"
}
with_islands() { # BASE OUT SECTION: plan BASE with the islands section SECTION (JSON) as OUT
  "$PY" - "$@" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
plan["islands"] = json.loads(sys.argv[3])
json.dump(plan, open(sys.argv[2], "w"), indent=1)
PY
}
run() { # NAME PLAN: sailor run -> $work/run-NAME/{losses.jsonl,ckpt/}
  local name=$1 plan=$2 out="$work/run-$1"
  mkdir -p "$out"
  if ! timeout 120 "$SAILOR" run --plan "$plan" "${common[@]}" --steps "$steps" --json \
       --ckpt-dir "$out/ckpt" > "$out/losses.jsonl" 2> "$out/stderr"; then
    echo "FAIL $name: sailor run failed on plan $(basename "$plan"):"
    sed 's/^/    /' "$out/stderr" | tail -n 20
    grep -q '"islands"' "$plan" &&
      echo "    (the plan has an islands section: docs/design/islands.md)"
    exit 1
  fi
}
ckpt() { printf '%s/run-%s/ckpt/step-%08d.ckpt' "$work" "$1" "$steps"; }
loss_strings() { grep -o '"step":[0-9]*,"loss":[^,]*' "$1"; }
against_oracle() { # NAME PLAN: run NAME's step lines and final weights against the reference
  echo "== $1: sailor run vs the islands reference"
  oracle "$2" --losses "$work/run-$1/losses.jsonl" --ckpt "$(ckpt "$1")" --quiet \
    || die "$1: sailor run differs from the islands reference (without --quiet: every figure)"
}
not_synchronous() { # NAME: an islands run must not train what the synchronous run trains
  if "$PY" tests/runtime/compare_runs.py "$work/run-sync-A/losses.jsonl" \
       "$work/run-$1/losses.jsonl" --rtol 1e-7 >/dev/null 2>&1 ||
     "$PY" tests/runtime/compare_runs.py "$work/run-sync-B/losses.jsonl" \
       "$work/run-$1/losses.jsonl" --rtol 1e-7 >/dev/null 2>&1; then
    die "$1: sailor run printed the synchronous run's losses: it ignored the plan's islands section"
  fi
}
same_bits() { # NAME-A NAME-B: identical loss strings and checkpoint tensors
  diff <(loss_strings "$work/run-$1/losses.jsonl") <(loss_strings "$work/run-$2/losses.jsonl") \
    >/dev/null || die "$1 and $2: the step lines' losses differ"
  "$PY" tests/runtime/compare_runs.py "$work/run-$1/losses.jsonl" "$work/run-$2/losses.jsonl" \
    --ckpt "$(ckpt "$1")" "$(ckpt "$2")" --rtol 0 || die "$1 and $2 differ"
}

# 0. the reference against itself
with_islands "$work/A.json" "$work/A-uneven.json" '{"pipelines": [[0, 1], [2]]}'
with_islands "$work/B.json" "$work/B-equal.json" '{"pipelines": [[0, 3], [1, 2]]}'
for plan in A-uneven B-equal; do
  echo "== reference self-test on $plan"
  oracle "$work/$plan.json" --self-test || die "the islands reference fails its self-test"
done

# 1. the reference with one island = sailor train, and = the synchronous sailor run
mkdir -p "$work/train"
train_reference "$work/train/losses.jsonl" "${common[@]}" --micro-batch 2 --global-batch 8 \
  --steps "$steps" --ckpt-dir "$work/train/ckpt"
echo "== the reference (one island) vs sailor train"
oracle "$work/A.json" --losses "$work/train/losses.jsonl" \
  --ckpt "$(printf '%s/train/ckpt/step-%08d.ckpt' "$work" "$steps")" --quiet \
  || die "the islands reference with one island differs from sailor train"
run sync-A "$work/A.json"
run sync-B "$work/B.json"
against_oracle sync-A "$work/A.json"

# e. one island = the plan without islands, bit for bit
with_islands "$work/A.json" "$work/A-one.json" \
  '{"pipelines": [[0, 1, 2]], "inner_steps": 5, "outer_lr": 0.7, "outer_momentum": 0.9}'
run one-A "$work/A-one.json"
echo "== e: one island vs no islands section (bit for bit)"
same_bits sync-A one-A

# a. 2 islands, H 5
with_islands "$work/A.json" "$work/A-2i.json" \
  '{"pipelines": [[0, 1], [2]], "inner_steps": 5, "outer_lr": 0.7, "outer_momentum": 0.9,
    "wire": "fp32", "fragments": 1, "overlap_steps": 0, "merge": 0.5}'
run a "$work/A-2i.json"
not_synchronous a
against_oracle a "$work/A-2i.json"

# b. 3 islands, H 5
with_islands "$work/B.json" "$work/B-3i.json" \
  '{"pipelines": [[0, 1], [2], [3]], "inner_steps": 5, "wire": "fp32"}'
run b "$work/B-3i.json"
not_synchronous b
against_oracle b "$work/B-3i.json"

# c. one H per island
with_islands "$work/A.json" "$work/A-h53.json" '{"pipelines": [[0, 1], [2]], "inner_steps": [5, 3]}'
run c "$work/A-h53.json"
not_synchronous c
against_oracle c "$work/A-h53.json"

# d. fragments and overlap; the same syncs blocking
with_islands "$work/B.json" "$work/B-f3o2.json" \
  '{"pipelines": [[0, 1], [2], [3]], "inner_steps": 5, "fragments": 3, "overlap_steps": 2,
    "merge": 0.5}'
run d "$work/B-f3o2.json"
not_synchronous d
against_oracle d "$work/B-f3o2.json"
SAILOR_TEST_OUTER_BLOCKING=1 run d-blocking "$work/B-f3o2.json"
echo "== d: overlapped vs SAILOR_TEST_OUTER_BLOCKING=1 (bit for bit)"
same_bits d d-blocking
echo "islands runs match the PyTorch reference"
