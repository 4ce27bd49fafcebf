#!/usr/bin/env bash
# `sailor control --slurm` when Slurm's node set changes under it (Slurm dynamic nodes,
# `slurmd -Z`; issue 48): the job starts while only fa0 is up (fa1 and sb0 down), on fa0's two
# devices.
#   - three dynamic nodes sailor cannot use register: dx1 without a GPU-type feature, dx2 in a
#     zone sailor does not know, dx3 with more GPUs in its Gres than CPUs: one message each,
#     naming the node and what to fix, logged once however many polls see it; the generation
#     runs on;
#   - dynamic node dy0 (cpu-fast, us-central1-a, two GPUs), unknown when the controller started,
#     registers: it joins at the next poll, and the next generation runs on it;
#   - dy0 is drained, its slurmd stopped and the node deleted (scontrol delete): the generation
#     checkpoints and stops, the next one runs without it, and its leaving is a pool event.
# The run reaches N steps with the losses and final weights of `sailor train` (1e-5); nothing is
# left in squeue.
set -euo pipefail
cd "$(dirname "$0")/../.."
TB=sldyn NET=91
dyn() { echo ", {\"name\": \"$1\", \"class\": \"cpu-fast\", \"slots\": 2, \"slurm\": \"dynamic\"}"; }
TB_DYNAMIC_HOSTS="$(dyn dy0)$(dyn dx1)$(dyn dx2)$(dyn dx3)"
source tests/lib/slurm_setup.sh
N=700
K=10
slurm_reference $N
for n in fa1 sb0; do scontrol update nodename=$n state=down reason=sailor-test; done

slurm_control_start 420 20
wait_for 60 test -s "$work/run/gen-1/stdout.jsonl"
wait_for 60 eval '[ "$(last_step)" -ge 20 ]'
gpus1=$(jq -r 'select(.event == "generation_start") | .plan.gpus' "$work/run/events.jsonl")
[ "$gpus1" -le 2 ] || { echo "FAIL: generation 1 has $gpus1 GPUs with only fa0 up"; exit 1; }

# nodes sailor cannot use: a message each, once; the generation runs on
testbed_slurmd() { scripts/testbed slurmd "$desc" "$@" >>"$work/up.log" 2>&1; }
testbed_slurmd dx1 --conf "CPUs=2 RealMemory=1000 Gres=gpu:2 Features=us-central1-a"
testbed_slurmd dx2 --conf "CPUs=2 RealMemory=1000 Gres=gpu:2 Features=cpu-fast,mars-north1-a"
testbed_slurmd dx3 --conf "CPUs=1 RealMemory=1000 Gres=gpu:2 Features=cpu-fast,us-central1-a"
wait_for 60 eval '[ "$(ev node_rejected)" -ge 3 ]'
step=$(last_step)
wait_for 60 eval '[ "$(last_step)" -ge $((step + 20)) ]'  # polls enough to repeat a message
[ "$(ev generation_start)" -eq 1 ] || { echo "FAIL: nodes sailor cannot use started a generation"; exit 1; }
check_once() { # NODE PATTERN: one warning naming NODE that matches PATTERN, one event
	local lines
	lines=$(grep -c "node '$1': $2" "$work/err" || true)
	[ "$lines" -eq 1 ] || { echo "FAIL: $lines warnings for $1 matching '$2' (want 1)"; grep "node '$1'" "$work/err"; exit 1; }
	[ "$(jq -r "select(.event == \"node_rejected\" and .node == \"$1\") | .node" "$work/run/events.jsonl" | wc -l)" -eq 1 ] ||
		{ echo "FAIL: not one node_rejected event for $1"; exit 1; }
	grep "node '$1'" "$work/err"
}
check_once dx1 "no feature names a GPU type sailor knows (features: 'us-central1-a'.*add the node's type to its Features"
check_once dx2 "no feature names a zone sailor knows (features: 'cpu-fast,mars-north1-a'.*add the node's zone"
check_once dx3 "2 GPUs in its Gres but 1 CPUs; each GPU takes a task of one CPU: give it Gres=gpu:1, or at least CPUs=2"

# a dynamic node sailor can use joins, and the next generation runs on it
testbed_slurmd dy0
wait_for 60 eval '[ "$(ev generation_start)" -ge 2 ]'
gen_dy=$(ev generation_start)
wait_for 60 test -s "$work/run/gen-$gen_dy/stdout.jsonl"
grep -q '"name": "dy0"' "$work/run/gen-$gen_dy/cluster.json" || { echo "FAIL: dy0 is not in generation $gen_dy's hosts"; exit 1; }
grep -q '"event":"pool_change".*changed: dy0 (new) -> IDLE' "$work/run/events.jsonl" ||
	{ echo "FAIL: dy0's joining is not in the event log"; exit 1; }
wait_for 60 eval '[ -n "$(squeue -h -p $TB -w dy0 -o %i)" ]'
step=$(last_step)
wait_for 60 eval '[ "$(last_step)" -ge $((step + 10)) ]'

# it leaves: drained (the generation checkpoints and stops), then deleted
scontrol update nodename=dy0 state=drain reason=sailor-test
wait_for 60 eval '[ "$(ev generation_start)" -gt "$gen_dy" ]'
gen_after=$(ev generation_start)
wait_for 60 eval '[ -z "$(squeue -h -p $TB -w dy0 -o %i)" ]'
kill "$(cat "$work/state/$TB/slurm/run/slurmd-dy0.pid")"
changes=$(ev pool_change)
scontrol delete nodename=dy0
wait_for 60 eval '[ "$(ev pool_change)" -gt "$changes" ]'
grep -q '"event":"pool_change".*changed: dy0 [A-Z+_]*DRAIN[A-Z+_]* -> (gone)' "$work/run/events.jsonl" ||
	{ echo "FAIL: dy0's leaving is not in the event log"; exit 1; }
if grep -q '"name": "dy0"' "$work/run/gen-$gen_after/cluster.json"; then
	echo "FAIL: generation $gen_after still has dy0"; exit 1
fi

status=0
wait "$ctl" || status=$?
ctl=""
[ "$status" -eq 0 ] || { echo "FAIL: sailor control exited $status"; tail -n 30 "$work/err"; exit 1; }
grep -v '"event":"checkpoint"' "$work/run/events.jsonl" | cut -c 1-300
expect_nothing_queued
[ "$(ev failure)" -eq 0 ] || { echo "FAIL: a node joining or leaving is not a failure"; exit 1; }
[ "$(ev done)" -eq 1 ] || { echo "FAIL: no done event"; exit 1; }
gpus_dy=$(jq -r "select(.event == \"generation_start\" and .generation == $gen_dy) | .plan.gpus" "$work/run/events.jsonl")
echo "GPUs: generation 1 $gpus1, generation $gen_dy (with dy0) $gpus_dy; generations: $(ev generation_start)"
[ "$gpus_dy" -gt "$gpus1" ] || { echo "FAIL: the generation with dy0 does not use more GPUs than the first"; exit 1; }
"$PY" tests/runtime/compare_runs.py "$work/ref.jsonl" "$work/run/steps.jsonl" \
	--ckpt "$work/ref/step-$(printf %08d $N).ckpt" "$work/ckpt/step-$(printf %08d $N).ckpt"
