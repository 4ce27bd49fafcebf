#!/usr/bin/env bash
# The testbed as a Slurm cluster (scripts/testbed up --slurm) and `sailor plan --slurm` /
# `sailor run --slurm` on it:
#   - status shows every node idle with Features=<class>,<zone> and Gres=gpu:2;
#   - a job step on a host runs as that host: its name, its namespace's address, the cgroup of
#     its slot (the device quota);
#   - plan --slurm takes the pool from Slurm and leaves a drained node out;
#   - run --slurm trains under srun --mpi=pmix (ranks placed on nodes of their replica's type
#     and zone) with the losses and final weights of `sailor train`;
#   - a step whose ranks sit on the wrong nodes stops before its first step, naming the rank and
#     the node, exit 1;
#   - nothing is left in squeue; `down` removes the daemons, the state and the namespaces.
set -euo pipefail
cd "$(dirname "$0")/../.."
TB=slrun NET=92
source tests/lib/slurm_setup.sh

scripts/testbed status "$desc" >"$work/status" || { cat "$work/status"; echo "FAIL: status"; exit 1; }
check "status: three idle nodes" '[ "$(grep -c "slurm node .*: idle  features cpu-.*,us-central1-.  gres gpu:2" "$work/status")" -eq 3 ]'
check "status: sb0 is cpu-slow in us-central1-b" 'grep -q "slurm node sb0: idle  features cpu-slow,us-central1-b" "$work/status"'

# a step on sb0 runs there: host name, address, its slot's cgroup
timeout 30 srun -p $TB -w sb0 -n 2 sh -c 'echo "$(hostname) $(ip -4 -o addr show dev eth0 | awk "{print \$4}") $SLURM_LOCALID $(grep -m 1 -E ":cpu(,cpuacct)?:|^0::" /proc/self/cgroup)"' >"$work/where" 2>&1
check "step on sb0: its name and address" '[ "$(grep -c "^sb0 10.92.2.2/16 " "$work/where")" -eq 2 ]'
check "step on sb0: each task in its slot's cgroup" 'grep -q " 0 .*sailor-testbed/slrun/sb0/slot0$" "$work/where" && grep -q " 1 .*sailor-testbed/slrun/sb0/slot1$" "$work/where"'

# plan --slurm: the pool is Slurm's
"$SAILOR" plan --model gpt2-tiny --slurm --partition $TB "${PLAN_ENV[@]}" --global-batch 8 --json >"$work/plan.json" 2>"$work/plan.err"
check "plan --slurm: 4 cpu-fast + 2 cpu-slow in the pool" 'jq -e "[.steps[0].pool.gpus[] | \"\(.gpu)/\(.zone)=\(.count)\"] | sort == [\"cpu-fast/us-central1-a=4\", \"cpu-slow/us-central1-b=2\"]" "$work/plan.json" >/dev/null'
scontrol update nodename=fa1 state=drain reason=sailor-test
"$SAILOR" plan --model gpt2-tiny --slurm --partition $TB "${PLAN_ENV[@]}" --global-batch 8 --json >"$work/plan2.json" 2>"$work/plan2.err"
check "plan --slurm: a drained node is not in the pool" 'jq -e "[.steps[0].pool.gpus[] | select(.gpu == \"cpu-fast\") | .count] == [2]" "$work/plan2.json" >/dev/null && grep -q "left out: fa1 IDLE+DRAIN" "$work/plan2.err"'
scontrol update nodename=fa1 state=resume

# run --slurm: two stages, cpu-fast then cpu-slow, two pipelines (4 ranks on fa0 and sb0)
cat >"$work/pp2.json" <<'JSON'
{"schema":"sailor.plan/1","model":"gpt2-tiny","global_batch":8,"micro_batch":2,"stages":[
 {"layers":[0,2],"replicas":[{"gpu":"cpu-fast","zone":"us-central1-a","count":2}]},
 {"layers":[3,5],"replicas":[{"gpu":"cpu-slow","zone":"us-central1-b","count":2}]}]}
JSON
N=20
"$SAILOR" train --model gpt2-tiny --data "$work/tokens.bin" --seq-len 32 --steps $N --seed 7 \
  --micro-batch 8 --global-batch 8 --threads 1 --json --ckpt-dir "$work/ref" >"$work/ref.jsonl"
timeout 120 "$SAILOR" run --slurm --partition $TB --gpus "$ENV/gpus.json" --plan "$work/pp2.json" \
  --data "$work/tokens.bin" --seq-len 32 --steps $N --seed 7 --json --ckpt-dir "$work/ckpt" \
  --ckpt-every $N >"$work/run.jsonl" 2>"$work/run.err" || { cat "$work/run.err"; echo "FAIL: run --slurm"; exit 1; }
check "run --slurm: losses and weights equal sailor train" '"$PY" tests/runtime/compare_runs.py "$work/ref.jsonl" "$work/run.jsonl" --ckpt "$work/ref/step-$(printf %08d $N).ckpt" "$work/ckpt/step-$(printf %08d $N).ckpt" >"$work/cmp" 2>&1 || { cat "$work/cmp"; false; }'
check "run --slurm: the job is gone from squeue" '[ -z "$(squeue -h -p $TB)" ]'

# the placement check: ranks of the cpu-fast stage on sb0 (cpu-slow), started by hand
printf 'sb0\nsb0\nfa0\nfa0\n' >"$work/wrong-hosts"
set +e
SLURM_HOSTFILE="$work/wrong-hosts" timeout 60 srun -p $TB --mpi=pmix -n 4 --distribution=arbitrary \
  "$SAILOR" run --slurm --partition $TB --gpus "$ENV/gpus.json" --plan "$work/pp2.json" \
  --data "$work/tokens.bin" --seq-len 32 --steps 3 >"$work/wrong.out" 2>"$work/wrong.err"
status=$?
set -e
check "placement check: exit 1" '[ $status -ne 0 ]'
check "placement check: names rank 0 and node sb0" 'grep -q "placement: rank 0 (stage 0, pipeline 0, tp rank 0 of 1: cpu-fast in us-central1-a) runs on node .sb0., which is cpu-slow in us-central1-b" "$work/wrong.err"'
check "placement check: said once (by rank 0)" '[ "$(grep -c "placement:" "$work/wrong.err")" -eq 1 ]'
check "placement check: no step trained" '! grep -q "\"event\":\"step\"" "$work/wrong.out"'
check "nothing left in squeue" '[ -z "$(squeue -h -p $TB)" ]'

# down removes everything, and again is harmless
pids=$(cat "$work/state/$TB/slurm/run/slurmctld.pid" "$work/state/$TB/slurm/munge/munged.pid")
timeout 60 scripts/testbed down "$desc" >/dev/null
check "down: slurmctld and munged gone" 'for p in $pids; do ! kill -0 $p 2>/dev/null || exit 1; done'
check "down: no namespace left" '! grep -q "^sailor-$TB-" <<<"$(ip netns list)"'
check "down: state removed" '[ ! -e "$work/state/$TB" ]'
check "down again is harmless" 'timeout 30 scripts/testbed down "$desc" >/dev/null'
[ "$failures" -eq 0 ] && echo "all checks passed"
finish
