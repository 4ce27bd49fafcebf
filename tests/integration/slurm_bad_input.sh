#!/usr/bin/env bash
# Bad input on the Slurm path: each case gets one message naming the cause and what to fix,
# exit 1, and nothing started or queued:
#   no reachable slurmctld; a partition that does not exist; a node without a GPU-type feature
#   (a type sailor does not know, then no type at all; for the controller, which leaves such a
#   node out, no node it can use); a feature naming an unknown zone; fewer
#   nodes than any plan needs (every node drained); no profile of the model on the nodes' types;
#   --partition without --slurm (usage, 2).
set -euo pipefail
cd "$(dirname "$0")/../.."
TB=slbad NET=93
source tests/lib/slurm_setup.sh
# expect NAME STATUS PATTERN COMMAND...: COMMAND exits STATUS and its stderr matches PATTERN
expect() {
	local name=$1 want=$2 pattern=$3 status=0
	shift 3
	"$@" >"$work/case.out" 2>"$work/case.err" || status=$?
	if [ "$status" -ne "$want" ]; then
		echo "FAIL $name: exit $status, expected $want"; sed 's/^/    /' "$work/case.err"; failures=$((failures + 1))
	elif ! grep -qE -- "$pattern" "$work/case.err"; then
		echo "FAIL $name: the message does not match '$pattern':"; sed 's/^/    /' "$work/case.err"; failures=$((failures + 1))
	elif [ -n "$(squeue -h -p $TB)" ]; then
		echo "FAIL $name: jobs left in squeue"; failures=$((failures + 1))
	else
		echo "ok   $name: $(grep -m 1 -E -- "$pattern" "$work/case.err" | cut -c 1-160)"
	fi
}
plan=("$SAILOR" plan --model gpt2-tiny --global-batch 8)
control=("$SAILOR" control --model gpt2-tiny --data "$work/tokens.bin" --seq-len 32 --steps 20
	 --global-batch 8 --ckpt-dir "$work/ckpt" --run-dir "$work/run")

# no slurmctld answers on this slurm.conf's port
sed 's/^SlurmctldPort=.*/SlurmctldPort=16999/' "$SLURM_CONF" >"$work/unreachable.conf"
expect "plan: no reachable slurmctld" 1 "cannot reach slurmctld .*Unable to contact slurm controller.*SLURM_CONF" \
	env SLURM_CONF="$work/unreachable.conf" timeout 60 "${plan[@]}" --slurm "${PLAN_ENV[@]}"
expect "plan: SLURM_CONF names no file" 1 "SLURM_CONF '$work/none.conf': No such file" \
	env SLURM_CONF="$work/none.conf" timeout 60 "${plan[@]}" --slurm "${PLAN_ENV[@]}"
expect "control: no reachable slurmctld" 1 "cannot reach slurmctld" \
	env SLURM_CONF="$work/unreachable.conf" timeout 60 "${control[@]}" --slurm "${PLAN_ENV[@]}"

expect "plan: unknown partition" 1 "no partition 'nope' \(partitions: $TB\); give one of them with --partition" \
	timeout 60 "${plan[@]}" --slurm --partition nope "${PLAN_ENV[@]}"
expect "control: unknown partition" 1 "no partition 'nope'" \
	timeout 60 "${control[@]}" --slurm --partition nope "${PLAN_ENV[@]}"

# the testbed's classes are not in the catalogue without --gpus
expect "plan: a node's type unknown to sailor" 1 "node 'fa0': no feature names a GPU type sailor knows \(features: 'cpu-fast,us-central1-a'.*--gpus" \
	timeout 60 "${plan[@]}" --slurm --partition $TB
# the controller leaves out a node it cannot use and goes on with the others
# (slurm_control_dynamic.sh); with none left it stops, each node's message said
expect "control: no node sailor can use" 1 "sailor can use none of the 3 nodes of slurm partition $TB \(each one's problem is above\)" \
	timeout 60 "${control[@]}" --slurm --partition $TB
grep -q "node 'sb0': no feature names a GPU type sailor knows" "$work/case.err" ||
	{ echo "FAIL control: sb0's own message is not said"; failures=$((failures + 1)); }
scontrol update nodename=sb0 AvailableFeatures=us-central1-b ActiveFeatures=us-central1-b
expect "plan: a node without a GPU-type feature" 1 "node 'sb0': no feature names a GPU type sailor knows \(features: 'us-central1-b'" \
	timeout 60 "${plan[@]}" --slurm --partition $TB "${PLAN_ENV[@]}"
scontrol update nodename=sb0 AvailableFeatures=cpu-slow,mars-north1-a ActiveFeatures=cpu-slow,mars-north1-a
expect "plan: a feature naming an unknown zone" 1 "node 'sb0': no feature names a zone sailor knows \(features: 'cpu-slow,mars-north1-a'" \
	timeout 60 "${plan[@]}" --slurm --partition $TB "${PLAN_ENV[@]}"
scontrol update nodename=sb0 AvailableFeatures=cpu-slow,us-central1-b ActiveFeatures=cpu-slow,us-central1-b

# no profile of the model on the nodes' types (the catalogue knows them, --profiles not given):
# the cause and what to run, not memory nor more nodes (issue 46, item 6)
expect "plan: no profile of the model" 1 "cpu-fast, cpu-slow have no profile of model 'gpt2-tiny'.*sailor profile --model gpt2-tiny --gpu TYPE.*--profiles DIR" \
	timeout 60 "${plan[@]}" --slurm --partition $TB --gpus "$ENV/gpus.json"
expect "control: no profile of the model" 1 "slurm: no plan is possible on the nodes Slurm offers now \(6 GPUs\): cpu-fast, cpu-slow have no profile of model 'gpt2-tiny'.*--profiles DIR\$" \
	timeout 60 "${control[@]}" --slurm --partition $TB --gpus "$ENV/gpus.json"
grep -qE "fits in memory|add or resume nodes" "$work/case.err" &&
	{ echo "FAIL control: a missing profile is blamed on memory or nodes"; failures=$((failures + 1)); }

# fewer nodes than any plan needs: every node drained
for n in fa0 fa1 sb0; do scontrol update nodename=$n state=drain reason=sailor-test; done
expect "plan: every node drained" 1 "no usable node: partition '$TB': 3 nodes, 0 usable \(left out: fa0 IDLE\+DRAIN" \
	timeout 60 "${plan[@]}" --slurm --partition $TB "${PLAN_ENV[@]}"
expect "control: every node drained" 1 "no plan is possible on the nodes Slurm offers now \(0 GPUs" \
	timeout 60 "${control[@]}" --slurm --partition $TB "${PLAN_ENV[@]}"
for n in fa0 fa1 sb0; do scontrol update nodename=$n state=resume; done
# a resumed node is NOT_RESPONDING until slurmctld's next ping (a few seconds): not usable yet
idle() { [ "$(sinfo -h -N -p $TB -t idle -o '%N' | sort -u | wc -l)" -eq 3 ] && ! grep -q '\*' <<<"$(sinfo -h -N -p $TB -o '%T')"; }
wait_for 60 idle
# a plan beyond what the nodes can do
expect "plan: no plan reaches the throughput asked" 1 "no plan reaches 1e\+06 it/s" \
	timeout 60 "${plan[@]}" --slurm --partition $TB "${PLAN_ENV[@]}" --min-throughput 1e6

expect "plan: --partition without --slurm" 2 "--partition applies to --slurm only" \
	"${plan[@]}" --pool data/examples/pool-a100-v100.json --partition $TB
expect "control: --slurm with --cluster" 2 "give no --cluster, --pool or --trace with it" \
	"${control[@]}" --slurm --cluster "$work/x.json"
[ ! -e "$work/run/gen-1" ] || { echo "FAIL: a generation was started"; failures=$((failures + 1)); }
[ "$failures" -eq 0 ] && echo "all cases passed"
finish
