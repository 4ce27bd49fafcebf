#!/usr/bin/env bash
# A rank that still trains on the checkpoint directory when a controller starts (what a dead
# controller's generation leaves when its launcher and mpirun are gone; here a `sailor run` of
# 80 steps started by hand): the controller waits until it has ended (rank 0 holds
# <ckpt-dir>/training.lock, src/ctl/run_lock.h) instead of training beside it, says so in its
# controller_restart event, and resumes from that run's last checkpoint (step 80).
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/lib/control_setup.sh
localhost_cluster a100-0:A100-40:us-central1-a
echo '{"schema": "sailor.pool/1", "gpus": [{"gpu": "A100-40", "zone": "us-central1-a", "count": 1}]}' > "$work/pool.json"
common=(--model gpt2-tiny --data "$work/tokens.bin" --seq-len 32)
"$SAILOR" run --plan tests/runtime/plans/01-single.json "${common[@]}" --steps 80 --ckpt-dir "$work/ckpt" \
  --ckpt-every 10 --global-batch 8 > "$work/run-out" 2> "$work/run-err" &
run=$!
for _ in $(seq 300); do [ -e "$work/ckpt/step-00000010.ckpt" ] && break; sleep 0.1; done
[ -e "$work/ckpt/step-00000010.ckpt" ] || { echo "FAIL: sailor run wrote no checkpoint of step 10 in 30 s"; cat "$work/run-err"; exit 1; }
kill -0 "$run" 2>/dev/null || { echo "FAIL: sailor run ended before the controller started (too fast to test)"; exit 1; }
timeout 120 "$SAILOR" control "${common[@]}" --steps 100 --global-batch 8 --cluster "$work/cluster.json" \
  --pool "$work/pool.json" --ckpt-dir "$work/ckpt" --run-dir "$work/run" --ckpt-every 10 > "$work/out" 2> "$work/err" &
ctl=$!
wait_control 0
wait "$run" || { echo "FAIL: the hand-started sailor run failed"; cat "$work/run-err"; exit 1; }
grep -o '"event":"controller_restart".*' "$work/run/events.jsonl" | cut -c 1-300 || true
grep -q '"event":"controller_restart".*"waited_for_training_s"' "$work/run/events.jsonl" || { echo "FAIL: the controller did not wait for the rank that trained"; exit 1; }
grep -q '"event":"generation_start".*"resume_step":80,' "$work/run/events.jsonl" || { echo "FAIL: the generation did not resume from step 80"; grep generation_start "$work/run/events.jsonl" | cut -c 1-200; exit 1; }
expect_no_process_left
echo "the controller waited for the run and resumed from its step-80 checkpoint"
