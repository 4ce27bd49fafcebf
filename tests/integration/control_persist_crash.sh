#!/usr/bin/env bash
# A crash in the middle of an asynchronous checkpoint persist: rank 0 is killed (SIGKILL, from the
# test hook of src/train/checkpoint.c) halfway through writing step 20's checkpoint while training
# goes on. The newest complete checkpoint (step 10) is intact and used: `sailor control` resumes
# from it, loses at most one checkpoint interval, steps.jsonl holds 1..N once (the steps after 10
# ran twice), and the run equals an uninterrupted `sailor train` within 1e-5 (losses, final
# parameters and moments). Also covers --pool (a pool file).
set -euo pipefail
cd "$(dirname "$0")/../.."
NEED_NUMPY=1 source tests/lib/control_setup.sh
localhost_cluster a100-0:A100-40:us-central1-a
echo '{"schema": "sailor.pool/1", "gpus": [{"gpu": "A100-40", "zone": "us-central1-a", "count": 1}]}' > "$work/pool.json"
N=40
common=(--model gpt2-tiny --data "$work/tokens.bin" --seq-len 32 --steps $N)
"$SAILOR" train "${common[@]}" --micro-batch 8 --global-batch 8 --threads 1 --json \
  --ckpt-dir "$work/ref" > "$work/ref.jsonl"
status=0
SAILOR_TEST_PERSIST_CRASH_STEP=20 SAILOR_TEST_PERSIST_CRASH_MARK="$work/crashed" \
  timeout 100 "$SAILOR" control "${common[@]}" --global-batch 8 --cluster "$work/cluster.json" \
  --pool "$work/pool.json" --ckpt-dir "$work/ckpt" --run-dir "$work/run" --ckpt-every 10 \
  > "$work/out" 2> "$work/err" || status=$?
grep -v '"checkpoint"' "$work/run/events.jsonl" | cut -c 1-200
[ "$status" -eq 0 ] || { echo "FAIL: sailor control exited $status"; cat "$work/err"; exit 1; }
[ -e "$work/crashed" ] || { echo "FAIL: the crash hook did not fire"; exit 1; }
grep -q '"event":"failure".*"resume_step":10' "$work/run/events.jsonl" || { echo "FAIL: the failure did not resume from step 10"; exit 1; }
grep -q '"event":"generation_start".*"generation":2,"resume_step":10' "$work/run/events.jsonl" || { echo "FAIL: generation 2 did not start from the step-10 checkpoint"; exit 1; }
grep -q "resumed from '$work/ckpt/step-00000010.ckpt'" "$work/run/gen-2/stderr.log" "$work/run/gen-2/stdout.jsonl" 2>/dev/null || true
! ls "$work/ckpt"/*.damaged 2>/dev/null || { echo "FAIL: a checkpoint was damaged"; exit 1; }
sleep 0.2
left=$(pgrep -f "$work" || true)
[ -z "$left" ] || { echo "FAIL: processes left behind: $left"; exit 1; }
# the steps after step 10 ran twice (the crashed generation's, then again): recorded once
"$PY" -c 'import json, sys; s = sorted(json.loads(l)["step"] for l in open(sys.argv[1])); n = int(sys.argv[2])
sys.exit(0 if s == list(range(1, n + 1)) else print("FAIL: steps.jsonl does not hold 1..%d once each: %d lines, repeated %s" % (n, len(s), sorted({x for x in s if s.count(x) > 1}))) or 1)' "$work/run/steps.jsonl" $N
"$PY" tests/runtime/compare_runs.py "$work/ref.jsonl" "$work/run/steps.jsonl" \
  --ckpt "$work/ref/step-$(printf %08d $N).ckpt" "$work/ckpt/step-$(printf %08d $N).ckpt"
