#!/usr/bin/env bash
# `sailor control --slurm` on the Slurm testbed: hosts and pool from Slurm, each generation a
# Slurm job. A node the running plan uses is drained (scontrol update ... state=drain): the
# generation checkpoints and stops, the next one runs on a plan without it; the node is
# resumed: a re-plan with it. The run reaches N steps with the losses and final weights of an
# uninterrupted `sailor train` (1e-5), nothing is left in squeue and no process of the run
# remains. Prints the seconds from the drain command to the new generation's first step.
set -euo pipefail
cd "$(dirname "$0")/../.."
TB=sldrain NET=94
source tests/lib/slurm_setup.sh
N=500
K=10
slurm_reference $N
slurm_control_start 240 20
# the node to drain: one the first generation runs on
wait_for 60 test -s "$work/run/gen-1/stdout.jsonl"
wait_for 60 eval '[ "$(last_step)" -ge 40 ]'
used=$(squeue -h -p $TB -o '%N')
node=$(scontrol show hostnames "$used" | sed -n 1p)
[ -n "$node" ] || { echo "FAIL: no job of generation 1 in squeue"; exit 1; }
echo "generation 1 runs on $used; draining $node"
gens_before=$(ev generation_start)
t_drain=$(date +%s.%N)
scontrol update nodename="$node" state=drain reason=sailor-test
wait_for 60 eval '[ "$(ev generation_start)" -gt "$gens_before" ]'
gen_after_drain=$(ev generation_start)
wait_for 60 test -s "$work/run/gen-$gen_after_drain/stdout.jsonl"
# the new generation does not run on the drained node
if grep -q "\"name\": \"$node\"" "$work/run/gen-$gen_after_drain/cluster.json"; then
  echo "FAIL: generation $gen_after_drain's cluster file still has drained node $node"; exit 1
fi
wait_for 60 grep -q '"event":"step"' "$work/run/gen-$gen_after_drain/stdout.jsonl"
# first step of that generation as the controller recorded it (t_s is since its start)
start_t=$(jq -r 'select(.event == "start") | .time' "$work/run/events.jsonl")
first_t=$(grep -m 1 "\"generation\":$gen_after_drain," "$work/run/steps.jsonl" | jq -r '.t_s')
echo "seconds from 'scontrol update nodename=$node state=drain' to the first step of generation $gen_after_drain: $(awk -v a="$t_drain" -v s="$start_t" -v f="$first_t" 'BEGIN { printf "%.2f", s + f - a }')"

# resume it: a re-plan with it
step_at_resume=$(last_step)
gens_before=$(ev pool_change)
scontrol update nodename="$node" state=resume
wait_for 60 eval '[ "$(ev pool_change)" -gt "$gens_before" ]'
wait_control() {
  local status=0
  wait "$ctl" || status=$?
  ctl=""
  [ "$status" -eq 0 ] || { echo "FAIL: sailor control exited $status"; tail -n 30 "$work/err"; exit 1; }
}
wait_control
grep -v '"event":"checkpoint"' "$work/run/events.jsonl" | cut -c 1-200
expect_nothing_queued
left=$(for p in $(pgrep -f -- "--data $work/tokens.bin" || true); do echo "$p"; done)
[ -z "$left" ] || { echo "FAIL: processes left: $left"; exit 1; }
grep -q "\"event\":\"pool_change\".*changed: $node [A-Z+]* -> [A-Z]*+DRAIN" "$work/run/events.jsonl" ||
  { echo "FAIL: the drain of $node is not in the event log"; exit 1; }
[ "$(ev failure)" -eq 0 ] || { echo "FAIL: a drain is not a failure"; exit 1; }
[ "$(ev done)" -eq 1 ] || { echo "FAIL: no done event"; exit 1; }
resumed_plan=$(grep '"event":"pool_change"' "$work/run/events.jsonl" | tail -n 1 | grep -c "\"gpus\":6" || true)
[ "$resumed_plan" -eq 1 ] || { echo "FAIL: after the resume the pool is not back to 6 GPUs"; exit 1; }
grep -q '"event":"plan"' <<<"$(grep -A1 '"event":"pool_change"' "$work/run/events.jsonl" | tail -n 1)" ||
  { echo "FAIL: no re-plan after the resume"; exit 1; }
stops=$(grep '"event":"generation_end"' "$work/run/events.jsonl" | grep -c '"outcome":"stopped"' || true)
[ "$stops" -ge 1 ] || { echo "FAIL: the drain did not checkpoint-and-stop a generation"; exit 1; }
echo "step at the resume: $step_at_resume; generations: $(ev generation_start)"
"$PY" tests/runtime/compare_runs.py "$work/ref.jsonl" "$work/run/steps.jsonl" \
  --ckpt "$work/ref/step-$(printf %08d $N).ckpt" "$work/ckpt/step-$(printf %08d $N).ckpt"
