#!/usr/bin/env bash
# `sailor control` on device types with no profile of the model (issue 46, item 6): the
# controller's "no_plan" event and its warning say the cause and what to run (`sailor profile`,
# --profiles DIR), not that nothing fits in memory; no generation starts; SIGTERM ends it with
# exit 1 and leaves no process. (With --slurm the same cause ends the controller at once:
# tests/integration/slurm_bad_input.sh.)
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/lib/control_setup.sh
localhost_cluster fa0:cpu-fast:us-central1-a fa1:cpu-fast:us-central1-a
echo '{"schema": "sailor.pool/1", "gpus": [{"gpu": "cpu-fast", "zone": "us-central1-a", "count": 4}]}' >"$work/pool.json"
"$SAILOR" control --model gpt2-tiny --data "$work/tokens.bin" --seq-len 32 --steps 4 \
  --global-batch 8 --cluster "$work/cluster.json" --pool "$work/pool.json" \
  --gpus data/testbed/gpus-cpu.json --ckpt-dir "$work/ckpt" --run-dir "$work/run" \
  >"$work/out" 2>"$work/err" &
ctl=$!
no_plan() { grep -q '"event":"no_plan"' "$work/run/events.jsonl" 2>/dev/null; }
for _ in $(seq 300); do no_plan && break; sleep 0.1; done
no_plan || die "no \"no_plan\" event within 30 s: $(cat "$work/err")"
reason=$(grep '"event":"no_plan"' "$work/run/events.jsonl")
want="cpu-fast has no profile of model 'gpt2-tiny'.*sailor profile --model gpt2-tiny --gpu TYPE -o DIR.*--profiles DIR"
grep -q -- "$want" <<<"$reason" || fail "the no_plan event lacks the cause: $reason"
grep -q -- "no plan possible: $want" "$work/err" || fail "the warning lacks the cause: $(cat "$work/err")"
grep -q "fits in memory" <<<"$reason" && fail "a missing profile is blamed on memory: $reason"
[ ! -e "$work/run/gen-1" ] || fail "a generation was started"
kill -TERM "$ctl"
wait_control 1
expect_no_process_left
finish
