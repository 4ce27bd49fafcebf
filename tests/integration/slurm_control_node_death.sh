#!/usr/bin/env bash
# `sailor control --slurm`: a node of the running generation dies (every process in its
# namespace killed: slurmd, slurmstepd, the ranks). The ranks left see their connections to it
# closed (OpenMPI's "peer process has unexpectedly disconnected"), the controller finds the
# node's slurmd gone, marks the node down in Slurm with a reason naming the failure, kills the
# generation without waiting for Slurm's SlurmdTimeout or for --stop-timeout (5 s here: the
# ranks left could never checkpoint), logs a node_death event and a failure "node death" naming
# the node, and the next generation resumes from the newest checkpoint on the nodes left: at
# most one checkpoint interval lost, step N reached with the losses and final weights of
# `sailor train` (1e-5), nothing left in squeue, no process of the run left. How fast is
# measured by bench/bench_slurm_node_death.sh, not here.
set -euo pipefail
cd "$(dirname "$0")/../.."
TB=sldeath NET=95
source tests/lib/slurm_setup.sh
N=500
K=10
slurm_reference $N
# a --stop-timeout far below Slurm's own wait for a lost node (SlurmdTimeout 10 s, then srun's
# ~20 s): the death must be found and recorded as such without either
slurm_control_start 300 5
wait_for 60 test -s "$work/run/gen-1/stdout.jsonl"
wait_for 60 eval '[ "$(last_step)" -ge 60 ]'
used=$(squeue -h -p $TB -o '%N')
node=$(scontrol show hostnames "$used" | tail -n 1)
[ -n "$node" ] || { echo "FAIL: no job of generation 1 in squeue"; exit 1; }
pids=$(ip netns pids "sailor-$TB-$node")
echo "generation 1 runs on $used; killing node $node (pids $(echo $pids)) after step $(last_step)"
t_kill=$(date +%s.%N)
for p in $pids; do kill -9 "$p" 2>/dev/null || true; done
status=0
wait "$ctl" || status=$?
ctl=""
[ "$status" -eq 0 ] || { echo "FAIL: sailor control exited $status"; tail -n 30 "$work/err"; exit 1; }
grep -v '"event":"checkpoint"' "$work/run/events.jsonl" | cut -c 1-220
expect_nothing_queued
left=$(pgrep -f -- "--data $work/tokens.bin" || true)
[ -z "$left" ] || { echo "FAIL: processes left: $left"; exit 1; }
death=$(grep -m 1 '"event":"node_death"' "$work/run/events.jsonl" || true)
[ -n "$death" ] || { echo "FAIL: no node_death event"; exit 1; }
grep -q "\"node\":\"$node\"" <<<"$death" || { echo "FAIL: the node_death event does not name node $node: $death"; exit 1; }
grep -q '"slurm":"marked down"' <<<"$death" || { echo "FAIL: node $node was not marked down: $death"; exit 1; }
failure=$(grep -m 1 '"event":"failure"' "$work/run/events.jsonl" || true)
[ -n "$failure" ] || { echo "FAIL: the node's death is not in the event log as a failure"; exit 1; }
grep -q "\"host\":\"$node\"" <<<"$failure" || { echo "FAIL: the failure does not name node $node: $failure"; exit 1; }
grep -q '"reason":"node death"' <<<"$failure" || { echo "FAIL: the failure is not a node death: $failure"; exit 1; }
# Slurm keeps the node out until someone resumes it: down, with sailor's reason
state=$(scontrol --oneliner show node "$node")
grep -q 'State=DOWN' <<<"$state" || { echo "FAIL: Slurm does not have node $node down: $state"; exit 1; }
grep -q 'Reason=sailor: node death' <<<"$state" || { echo "FAIL: node $node is down without sailor's reason: $state"; exit 1; }
lost=$(echo "$failure" | grep -o '"lost_steps":[0-9]*' | grep -o '[0-9]*$')
echo "work lost: $lost steps (checkpoint every $K)"
[ "$lost" -le "$K" ] || { echo "FAIL: lost $lost steps, more than one checkpoint interval"; exit 1; }
last_gen=$(ev generation_start)
if grep -q "\"name\": \"$node\"" "$work/run/gen-$last_gen/cluster.json"; then
  echo "FAIL: the last generation still lists dead node $node"; exit 1
fi
[ "$(ev done)" -eq 1 ] || { echo "FAIL: no done event"; exit 1; }
# for the reader only (the benchmark measures): seconds from the kill to the death found and to
# the next generation's first step
start_t=$(jq -r 'select(.event == "start") | .time' "$work/run/events.jsonl")
seen_t=$(jq -r 'select(.event == "node_death") | .t_s' <<<"$death")
gen2_t=$(grep -m 1 '"generation":2,' "$work/run/steps.jsonl" | jq -r '.t_s')
awk -v k="$t_kill" -v s="$start_t" -v a="$seen_t" -v b="$gen2_t" 'BEGIN {
  printf "seconds from the kill: %.1f until the node death was found, %.1f to the first step of generation 2\n", s + a - k, s + b - k }'
"$PY" tests/runtime/compare_runs.py "$work/ref.jsonl" "$work/run/steps.jsonl" \
  --ckpt "$work/ref/step-$(printf %08d $N).ckpt" "$work/ckpt/step-$(printf %08d $N).ckpt"
