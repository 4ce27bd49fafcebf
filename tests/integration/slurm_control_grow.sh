#!/usr/bin/env bash
# `sailor control --slurm` when the cluster grows: the job starts while only fa0 is up (fa1 and
# sb0 are down in Slurm), on fa0's two devices; fa1 and sb0 come up (scontrol update ...
# state=resume): the pool grows, the controller re-plans, the generation checkpoints and stops,
# and the next one runs on more devices, including the new nodes. The run reaches N steps with
# the losses and final weights of `sailor train` (1e-5); nothing is left in squeue.
set -euo pipefail
cd "$(dirname "$0")/../.."
TB=slgrow NET=97
source tests/lib/slurm_setup.sh
N=400
K=10
slurm_reference $N
for n in fa1 sb0; do scontrol update nodename=$n state=down reason=sailor-test; done

slurm_control_start 240 20
wait_for 60 test -s "$work/run/gen-1/stdout.jsonl"
wait_for 60 eval '[ "$(last_step)" -ge 30 ]'
gpus1=$(jq -r 'select(.event == "generation_start") | .plan.gpus' "$work/run/events.jsonl")
[ "$gpus1" -le 2 ] || { echo "FAIL: generation 1 has $gpus1 GPUs with only fa0 up"; exit 1; }
for n in fa1 sb0; do scontrol update nodename=$n state=resume; done
wait_for 60 eval '[ "$(ev generation_start)" -ge 2 ]'
status=0
wait "$ctl" || status=$?
ctl=""
[ "$status" -eq 0 ] || { echo "FAIL: sailor control exited $status"; tail -n 30 "$work/err"; exit 1; }
grep -v '"event":"checkpoint"' "$work/run/events.jsonl" | cut -c 1-200
expect_nothing_queued
grep -q '"event":"pool_change".*"gpus":6' "$work/run/events.jsonl" ||
  { echo "FAIL: the pool never grew to 6 GPUs"; exit 1; }
last=$(ev generation_start)
gpus_last=$(jq -r "select(.event == \"generation_start\" and .generation == $last) | .plan.gpus" "$work/run/events.jsonl")
echo "GPUs: generation 1 $gpus1, generation $last $gpus_last"
[ "$gpus_last" -gt "$gpus1" ] || { echo "FAIL: the last generation does not use more GPUs than the first"; exit 1; }
grep -q '"name": "fa1"' "$work/run/gen-$last/cluster.json" || { echo "FAIL: fa1 is not in the last generation's hosts"; exit 1; }
[ "$(ev failure)" -eq 0 ] || { echo "FAIL: growing is not a failure"; exit 1; }
"$PY" tests/runtime/compare_runs.py "$work/ref.jsonl" "$work/run/steps.jsonl" \
  --ckpt "$work/ref/step-$(printf %08d $N).ckpt" "$work/ckpt/step-$(printf %08d $N).ckpt"
