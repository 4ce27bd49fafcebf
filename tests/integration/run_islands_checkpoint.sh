#!/usr/bin/env bash
# Island runs' checkpoints (docs/design/islands.md#checkpoints, runtime/island_checkpoint.h) on
# gpt2-tiny, 12 steps:
#  1. exact resume: a run stopped by a signal (agreed at the next round end, which checkpoints)
#     and resumed gives the uninterrupted run's losses and final checkpoint bit for bit; with
#     overlapped fragments (exchanges in flight at the checkpoint: their averages are saved) and
#     with mixed TP, per-island H and the int8 wire;
#  2. evaluation changes nothing: --val-data/--eval-every leaves an island run's losses as they
#     were (it settles the exchanges in flight, which lands nothing early);
#  3. plans stay interchangeable: the island run's checkpoint resumes under the synchronous plan
#     (from its global weights) and under another island layout, and a synchronous checkpoint
#     resumes under an island plan; both of the latter say that a new round starts;
#  4. a damaged rank file falls back the same way, said once, and training goes on;
#  5. a checkpoint of another model is refused before any rank starts (exit 1, one message).
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/lib/common.sh
need_python numpy
use_mpi
tokens "$work/tokens.bin"
head -c 20000 data/text/fsf-licenses.txt > "$work/val.txt"
"$SAILOR" data "$work/val.txt" -o "$work/val.bin" >/dev/null
common=(--data "$work/tokens.bin" --seq-len 32 --steps 12 --seed 11 --lr 1e-3 --warmup-steps 2
        --json)
with_islands() { # plan-in plan-out islands-json
  "$PY" -c 'import json,sys; p=json.load(open(sys.argv[1])); p["islands"]=json.loads(sys.argv[3]); json.dump(p,open(sys.argv[2],"w"))' "$@"
}
with_islands tests/runtime/plans/12-pp2-dp2-uniform-tp2.json "$work/overlap.json" \
  '{"pipelines":[[0],[1]],"inner_steps":5,"fragments":4,"overlap_steps":3}'
with_islands tests/runtime/plans/10-dp4-tp-mix-uneven-mb.json "$work/mixed.json" \
  '{"pipelines":[[0,1],[2,3]],"inner_steps":[4,3],"wire":"int8","fragments":3,"overlap_steps":1}'
with_islands tests/runtime/plans/10-dp4-tp-mix-uneven-mb.json "$work/other.json" \
  '{"pipelines":[[0,2],[1],[3]],"inner_steps":2}'
steps() { grep '"event":"step"' "$@" | sed -E 's/.*("step":[0-9]+,"loss":[^,]+),.*/\1/'; }
run() { # name plan args...: sailor run, its stdout in $work/name.jsonl, stderr in name.err
  local name=$1 plan=$2
  shift 2
  timeout 300 "$SAILOR" run --plan "$plan" "${common[@]}" "$@" > "$work/$name.jsonl" \
    2> "$work/$name.err" || { echo "FAIL $name: sailor run failed"; cat "$work/$name.err"; exit 1; }
}
newest() { ls "$1"/step-*.ckpt | tail -1; }

for case in overlap mixed; do
  echo "== 1. exact resume ($case)"
  run "$case-full" "$work/$case.json" --ckpt-dir "$work/$case-full"
  # rank 0 asks to stop after step 3; the islands agree at the round end and checkpoint there
  SAILOR_TEST_LATE_STOP=0:3 run "$case-a" "$work/$case.json" --ckpt-dir "$work/$case-ckpt"
  grep -q "stopped by signal" "$work/$case-a.err" || { echo "FAIL: no stop"; exit 1; }
  ls "$work/$case-ckpt"/islands/step-*/rank-0.bin >/dev/null
  run "$case-b" "$work/$case.json" --ckpt-dir "$work/$case-ckpt" --resume
  if grep -q "not usable" "$work/$case-b.err"; then
    echo "FAIL: the resume did not use the island state"; cat "$work/$case-b.err"; exit 1
  fi
  cat "$work/$case-a.jsonl" "$work/$case-b.jsonl" | grep '"event":"step"' > "$work/$case-ab.jsonl"
  "$PY" tests/runtime/compare_runs.py "$work/$case-full.jsonl" "$work/$case-ab.jsonl" --rtol 0 \
    --ckpt "$(newest "$work/$case-full")" "$(newest "$work/$case-ckpt")"
done

echo "== 2. evaluation leaves the training as it was"
run eval "$work/overlap.json" --val-data "$work/val.bin" --eval-every 4 --val-windows 8
diff <(steps "$work/overlap-full.jsonl") <(steps "$work/eval.jsonl")
[ "$(grep -c '"event":"eval"' "$work/eval.jsonl")" -eq 3 ] || { echo "FAIL: 3 evaluations expected"; exit 1; }

echo "== 3. plans stay interchangeable"
cp -r "$work/mixed-ckpt" "$work/to-sync"
rm "$(newest "$work/to-sync")" # resume from the mid-run checkpoint (a signal's)
run to-sync tests/runtime/plans/10-dp4-tp-mix-uneven-mb.json --ckpt-dir "$work/to-sync" --resume
grep -q '"ready","step":4' "$work/to-sync.jsonl" || { echo "FAIL: sync resume"; cat "$work/to-sync.jsonl"; exit 1; }
cp -r "$work/mixed-ckpt" "$work/to-other"
rm "$(newest "$work/to-other")"
run to-other "$work/other.json" --ckpt-dir "$work/to-other" --resume
grep -q "start a new round" "$work/to-other.err" || { echo "FAIL: no note"; cat "$work/to-other.err"; exit 1; }
run sync tests/runtime/plans/10-dp4-tp-mix-uneven-mb.json --steps 6 --ckpt-dir "$work/from-sync"
run from-sync "$work/mixed.json" --ckpt-dir "$work/from-sync" --resume
grep -q "start a new round" "$work/from-sync.err" || { echo "FAIL: no note"; exit 1; }
[ "$(steps "$work/from-sync.jsonl" | wc -l)" -eq 6 ] || { echo "FAIL: 6 steps expected"; exit 1; }

echo "== 4. a damaged rank file"
cp -r "$work/overlap-ckpt" "$work/damaged"
rm "$(newest "$work/damaged")"
rank1=("$work"/damaged/islands/step-*/rank-1.bin)
f=${rank1[0]}
printf '\x55' | dd of="$f" bs=1 seek=100 conv=notrunc 2>/dev/null
run damaged "$work/overlap.json" --ckpt-dir "$work/damaged" --resume
grep -q "not usable (another rank's file)" "$work/damaged.err" || {
  echo "FAIL: the damage was not reported"; cat "$work/damaged.err"; exit 1; }
[ "$(steps "$work/damaged.jsonl" | wc -l)" -eq 7 ] || { echo "FAIL: 7 steps expected"; exit 1; }
echo "== 5. a checkpoint of another model: refused before any rank starts"
cat > "$work/wide.json" <<'JSON'
{"schema": "sailor.model/1", "name": "wide", "layers": 4, "hidden": 64, "heads": 4,
 "ffn_hidden": 256, "seq_len": 32, "vocab": 257}
JSON
status=0
timeout 60 "$SAILOR" run --plan "$work/overlap.json" --model "$work/wide.json" "${common[@]}" \
  --ckpt-dir "$work/overlap-ckpt" --resume > "$work/wide.out" 2> "$work/wide.err" || status=$?
[ "$status" -eq 1 ] || { echo "FAIL: exit $status, not 1"; cat "$work/wide.err"; exit 1; }
grep -q "model hidden is 128 there but 64 in model 'wide': resume with the model it was trained with" \
  "$work/wide.err" || { echo "FAIL: message"; cat "$work/wide.err"; exit 1; }
[ ! -s "$work/wide.out" ] && ! grep -q "MPI_ABORT" "$work/wide.err" || { echo "FAIL: ranks started"; exit 1; }
echo "island checkpoints: exact resume, evaluation neutral, plans interchangeable, another model refused"
