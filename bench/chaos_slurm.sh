#!/usr/bin/env bash
# bench/chaos_slurm.sh EPISODES: `sailor control --slurm` on the Slurm testbed with random faults
# at random moments (issue 48), EPISODES episodes of one job of N steps (CHAOS_STEPS, default
# 120) at the default learning rate. Each episode: a fresh testbed (scripts/testbed up --slurm:
# fa0, fa1 cpu-fast in us-central1-a, sb0 cpu-slow in us-central1-b, two devices each, and dy0, a
# cpu-fast dynamic node not yet started), the controller started (checkpoint every 10 steps), then
# up to CHAOS_FAULTS faults (default 8), each at a random moment (half the time 0.3-3 s after the
# one before, half the time once the run has trained 2-20 more steps) and of a kind drawn at random:
#   node_kill        every process of a node's namespace (one of the running job's nodes when
#                    there is a job) killed with SIGKILL: its slurmd, slurmstepd, ranks
#                    (bench_slurm_node_death.sh's kill); it stays down until a resume picks it
#   drain            scontrol update nodename=X state=drain
#   resume           a drained or killed node back: a killed one's slurmd started again
#                    (scripts/testbed slurmd), then scontrol update nodename=X state=resume
#   join             dy0 registers as a dynamic node (scripts/testbed slurmd), once an episode
#   controller_kill  kill -9 of the controller, then the same command again
# A kill or drain always leaves at least one node up. The draws come from bash's RANDOM seeded
# with CHAOS_SEED (default: the time) + the episode's number - 1; each episode prints its seed,
# and `CHAOS_SEED=S bench/chaos_slurm.sh 1` replays its draws (the moments the faults land in the
# run are the machine's). After each episode it checks: the last controller exits 0; steps.jsonl
# holds 1..N once; the losses and final checkpoint equal `sailor train`'s within 1e-5
# (tests/runtime/compare_runs.py); every failure lost at most one checkpoint interval
# (lost_steps of the failure events, steps_to_rerun of the controller_restart events); nothing is
# left: no job in squeue, no process naming the episode's folder, and after `scripts/testbed
# down` no namespace, slurmctld, slurmd or munged of the testbed. It reports faults per kind,
# recoveries, steps lost per failure and the checks. Needs root (skips otherwise); run by
# `make bench` without EPISODES: skips. CHAOS_KEEP=DIR keeps each episode's run folder, stderr
# and fault list. Exit status: 0 when every check passed.
set -u
cd "$(dirname "$0")/.."
episodes=${1:-}
if [ -z "$episodes" ]; then echo "chaos_slurm.sh: give EPISODES, e.g. bench/chaos_slurm.sh 10; skipped"; exit 0; fi
[ "$(id -u)" -eq 0 ] || { echo "chaos_slurm.sh: skipped (needs root: network namespaces, slurmd)"; exit 0; }
: "${SAILOR:=$PWD/build/sailor}"
PY=/usr/bin/python3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
N=${CHAOS_STEPS:-120}  # chaos.sh's episodes: longer runs at the default lr drift past 1e-5 without any fault
K=10
max_faults=${CHAOS_FAULTS:-8}
seed0=${CHAOS_SEED:-$(date +%s)}
TB=slchaos
work=$(mktemp -d /tmp/sailor-chaos-slurm-XXXXXX)
case "$work" in /tmp/sailor-chaos-slurm-??????) ;; *) echo "chaos_slurm.sh: mktemp gave '$work'"; exit 1 ;; esac
desc=$work/testbed.json
export SAILOR_TESTBED_STATE=$work/state
export SLURM_CONF=$work/state/$TB/slurm/slurm.conf
ctl=""
tb_up=0
ep=$work/none
# the processes of this run: those whose command line names $work (a fixed, non-empty folder)
work_pids() { pgrep -f -- "$work/" || true; }
down() {
	[ -f "$SLURM_CONF" ] && timeout 20 scancel -p $TB 2>/dev/null
	timeout 60 scripts/testbed down "$desc" >>"$work/down.log" 2>&1
	tb_up=0
}
cleanup() {
	set +e
	if [ -n "$ctl" ]; then kill -9 "$ctl" 2>/dev/null; wait "$ctl" 2>/dev/null; fi
	[ "$tb_up" = 1 ] && down
	left=$(work_pids)
	[ -z "$left" ] || kill -9 $left 2>/dev/null
	true
}
trap cleanup EXIT
cat >"$desc" <<JSON
{"schema": "sailor.testbed/1", "name": "$TB", "subnet": "10.88.0.0/16",
 "classes": {"cpu-fast": {"cpu_cores": 0.25}, "cpu-slow": {"cpu_cores": 0.125}},
 "links": {"zone": {"bandwidth_mbit": 800, "latency_ms": 0.1}, "region": {"bandwidth_mbit": 200, "latency_ms": 2},
           "world": {"bandwidth_mbit": 50, "latency_ms": 10}},
 "zones": [{"name": "us-central1-a", "hosts": [{"name": "fa0", "class": "cpu-fast", "slots": 2},
                                               {"name": "fa1", "class": "cpu-fast", "slots": 2},
                                               {"name": "dy0", "class": "cpu-fast", "slots": 2, "slurm": "dynamic"}]},
           {"name": "us-central1-b", "hosts": [{"name": "sb0", "class": "cpu-slow", "slots": 2}]}]}
JSON
"$SAILOR" data data/text/fsf-licenses.txt -o "$work/tokens.bin" >/dev/null || exit 1
common=(--model gpt2-tiny --data "$work/tokens.bin" --seq-len 32 --steps "$N" --seed 7)
"$SAILOR" train "${common[@]}" --micro-batch 8 --global-batch 8 --threads 1 --json \
	--ckpt-dir "$work/ref" >"$work/ref.jsonl" || { echo "chaos_slurm.sh: sailor train failed"; exit 1; }
ENV=data/validation/testbed-geo3-gpt2tiny/env
start_control() {
	"$SAILOR" control "${common[@]}" --global-batch 8 --slurm --partition $TB \
		--gpus "$ENV/gpus.json" --profiles "$ENV/profiles" --network "$ENV/network.json" \
		--ckpt-dir "$ep/ckpt" --run-dir "$ep/run" --ckpt-every $K --stop-timeout 20 \
		--exclude-after 1000 --max-failures 20 >>"$ep/out" 2>>"$ep/err" &
	ctl=$!
}
nodes=(fa0 fa1 sb0 dy0)
declare -A state  # per node: up, drained, killed, absent (dy0 before it joins)
up_nodes() { local n; for n in "${nodes[@]}"; do [ "${state[$n]}" = up ] && echo "$n"; done; }
back_nodes() { local n; for n in "${nodes[@]}"; do case ${state[$n]} in drained | killed) echo "$n" ;; esac; done; }
pick() { local a=("$@"); n=${a[RANDOM % $#]}; }  # n: one of its arguments, at random (no subshell: the draws stay the seed's)
log() { echo "$(date +%T) $*" >>"$ep/faults"; }
note() { echo "$(date +%T) $*" >>"$ep/notes"; }
# inject KIND: the fault, or status 1 when it does not apply now
inject() {
	local n pids
	case $1 in
	node_kill | drain)
		mapfile -t ups < <(up_nodes)
		[ "${#ups[@]}" -ge 2 ] || return 1
		# a node of the running job when there is one (its ranks die with it), else any
		mapfile -t busy < <(for j in $(timeout 10 scontrol show hostnames "$(timeout 10 squeue -h -p $TB -t R -o %N | tr '\n' ',')" 2>/dev/null); do
			[ "${state[$j]:-}" = up ] && echo "$j"; done)
		if [ "${#busy[@]}" -ge 1 ]; then pick "${busy[@]}"; else pick "${ups[@]}"; fi
		if [ "$1" = drain ]; then
			scontrol update nodename="$n" state=drain reason=sailor-chaos || return 1
			state[$n]=drained
		else
			pids=$(ip netns pids "sailor-$TB-$n")
			for p in $pids; do kill -9 "$p" 2>/dev/null; done
			state[$n]=killed
		fi ;;
	resume)
		mapfile -t backs < <(back_nodes)
		[ "${#backs[@]}" -ge 1 ] || return 1
		pick "${backs[@]}"
		if [ "${state[$n]}" = killed ]; then
			scripts/testbed slurmd "$desc" "$n" >>"$ep/testbed.log" 2>&1 || { note "slurmd of $n did not start"; return 1; }
			sleep 1  # its registration
		fi
		scontrol update nodename="$n" state=resume >>"$ep/testbed.log" 2>&1 ||
			note "scontrol resume $n: $(tail -n 1 "$ep/testbed.log") (Slurm had not marked it down yet)"
		state[$n]=up ;;
	join)
		[ "${state[dy0]}" = absent ] || return 1
		n=dy0
		scripts/testbed slurmd "$desc" dy0 >>"$ep/testbed.log" 2>&1 || { note "dy0 did not start"; return 1; }
		state[dy0]=up ;;
	controller_kill)
		n=controller
		kill -9 "$ctl" 2>/dev/null || return 1
		wait "$ctl" 2>/dev/null
		restarts=$((restarts + 1))
		start_control ;;
	esac
	log "$1 $n"
}
last_step() {
	local l
	l=$(tail -n 1 "$ep/run/steps.jsonl" 2>/dev/null | grep -o '"step":[0-9]*' | grep -o '[0-9]*$')
	echo "${l:-0}"
}
# the moment of the next fault: half the time 0.3-3 s from now, half the time once the run is
# 2-20 steps further than now (at most 15 s: a run that is not training then gets it anyway),
# so that faults land in training as well as in the starts and stops around it
wait_moment() {
	local r=$RANDOM target i
	if [ $((RANDOM % 2)) -eq 0 ]; then
		sleep "$(awk -v r=$r 'BEGIN { printf "%.2f", 0.3 + 2.7 * r / 32768 }')"
	else
		target=$(($(last_step) + 2 + r % 19))
		for ((i = 0; i < 150; i++)); do
			[ "$(last_step)" -lt "$target" ] && kill -0 "$ctl" 2>/dev/null || break
			sleep 0.1
		done
	fi
}
declare -A injected
kinds=(node_kill drain resume join controller_kill)
failed_checks=0 restarts=0
echo "chaos_slurm: $episodes episodes of $N steps, seed $seed0, work in $work"
for ((e = 1; e <= episodes; e++)); do
	ep=$work/ep$e
	mkdir -p "$ep"
	RANDOM=$((seed0 + e - 1))
	ep_start=$(date +%s)
	problems=()
	st=0
	timeout 120 scripts/testbed up "$desc" --slurm >"$ep/up.log" 2>&1 || st=$?
	case $st in 0 | 124 | 137) tb_up=1 ;; esac
	if [ "$st" -ne 0 ]; then
		echo "episode $e: testbed up failed ($st): $(tail -n 1 "$ep/up.log")"
		failed_checks=$((failed_checks + 1))
		down
		continue
	fi
	state=([fa0]=up [fa1]=up [sb0]=up [dy0]=absent)
	start_control
	faults=0
	while kill -0 "$ctl" 2>/dev/null && [ $faults -lt "$max_faults" ]; do
		wait_moment
		kill -0 "$ctl" 2>/dev/null || break
		for ((try = 0; try < 10; try++)); do
			kind=${kinds[$((RANDOM % ${#kinds[@]}))]}
			if inject "$kind"; then
				injected[$kind]=$((${injected[$kind]:-0} + 1))
				faults=$((faults + 1))
				break
			fi
		done
	done
	status=0
	for ((i = 0; i < 3000; i++)); do kill -0 "$ctl" 2>/dev/null || break; sleep 0.1; done  # at most 300 s more
	if kill -0 "$ctl" 2>/dev/null; then
		problems+=("the controller is not done 300 s after the last fault")
		kill -9 "$ctl" 2>/dev/null
	fi
	wait "$ctl" 2>/dev/null || status=$?
	ctl=""
	[ "$status" -eq 0 ] || problems+=("controller exited $status: $(tail -n 1 "$ep/err")")
	"$PY" -c 'import json, sys; s = sorted(json.loads(l)["step"] for l in open(sys.argv[1])); n = int(sys.argv[2])
sys.exit(0 if s == list(range(1, n + 1)) else print("steps.jsonl: %d lines, missing %s, repeated %s" % (len(s), sorted(set(range(1, n + 1)) - set(s))[:10], sorted({x for x in s if s.count(x) > 1})[:10])) or 1)' \
		"$ep/run/steps.jsonl" "$N" >"$ep/steps-check" 2>&1 || problems+=("$(tail -n 1 "$ep/steps-check")")
	"$PY" tests/runtime/compare_runs.py "$work/ref.jsonl" "$ep/run/steps.jsonl" \
		--ckpt "$work/ref/step-$(printf %08d "$N").ckpt" "$ep/ckpt/step-$(printf %08d "$N").ckpt" >"$ep/compare" 2>&1 ||
		problems+=("not equal to sailor train: $(grep -m1 FAIL "$ep/compare")")
	lost=$(grep -ho '"lost_steps":[0-9]*' "$ep/run/events.jsonl" 2>/dev/null | grep -o '[0-9]*$' | tr '\n' ' ')
	rer=$(grep -ho '"steps_to_rerun":[0-9]*' "$ep/run/events.jsonl" 2>/dev/null | grep -o '[0-9]*$' | tr '\n' ' ')
	for l in $lost $rer; do [ "$l" -le $K ] || problems+=("$l steps lost in one failure (checkpoint every $K)"); done
	q=$(timeout 20 squeue -h -p $TB -o '%i %j %T %N' 2>&1)
	[ -z "$q" ] || problems+=("left in squeue: $q")
	sleep 0.5
	left=$(pgrep -f -- "$ep/" | tr '\n' ' ')
	[ -z "$left" ] || problems+=("processes left: $left $(ps -o pid=,args= -p "${left// /,}" 2>/dev/null | cut -c 1-150 | tr '\n' ';')")
	daemons=$(cat "$work/state/$TB/slurm/run/"*.pid "$work/state/$TB/slurm/munge/munged.pid" 2>/dev/null | tr '\n' ' ')
	down
	for p in $daemons; do [ -d "/proc/$p" ] && problems+=("daemon $p ($(cat /proc/$p/comm 2>/dev/null)) left after testbed down"); done
	ns=$(ip netns list | grep -c "^sailor-$TB-")
	[ "$ns" -eq 0 ] || problems+=("$ns namespaces of $TB left after testbed down")
	left=$(work_pids | tr '\n' ' ')
	[ -z "$left" ] || { problems+=("processes left after testbed down: $left"); kill -9 $left 2>/dev/null; }
	fails=$(grep -c '"event":"failure"' "$ep/run/events.jsonl" 2>/dev/null)
	gens=$(grep -c '"event":"generation_start"' "$ep/run/events.jsonl" 2>/dev/null)
	worst=$(awk '/^losses:/ { l = $NF } /^value:/ { v = $NF } END { if (l != "") printf "; worst loss difference %s, weights %s", l, v }' "$ep/compare")
	echo "episode $e (seed $((seed0 + e - 1))): $(($(date +%s) - ep_start)) s; faults: $(cut -d' ' -f2- "$ep/faults" 2>/dev/null | tr '\n' ',' | sed 's/,$//; s/,/, /g'); $gens generations, $fails failures (steps lost: ${lost:-none}), restarts' steps to rerun: ${rer:-none}$worst; ${#problems[@]} failed checks"
	for p in "${problems[@]}"; do echo "  FAIL: $p"; done
	failed_checks=$((failed_checks + ${#problems[@]}))
	cat "$ep/run/events.jsonl" >>"$work/all-events.jsonl" 2>/dev/null
	if [ -n "${CHAOS_KEEP:-}" ]; then # the episode's logs, for a closer look
		mkdir -p "$CHAOS_KEEP/ep$e"
		cp -r "$ep/run" "$ep/err" "$ep/faults" "$ep/notes" "$ep/compare" "$CHAOS_KEEP/ep$e/" 2>/dev/null
	fi
done
echo "faults injected:"
for k in "${kinds[@]}"; do printf '  %-16s %d\n' "$k" "${injected[$k]:-0}"; done
ev() { grep -c "\"event\":\"$1\"" "$work/all-events.jsonl" 2>/dev/null; }
echo "recoveries: $(ev failure) failures detected ($(ev node_death) node deaths), $(ev controller_restart) controller restarts, $(ev generation_start) generations started, $(ev done) jobs done"
grep -ho '"lost_steps":[0-9]*\|"steps_to_rerun":[0-9]*' "$work/all-events.jsonl" 2>/dev/null | grep -o '[0-9]*$' |
	awk '{ s += $1; if ($1 > m) m = $1; n++ } END { if (n) printf "steps lost per failure or restart: %d of them, mean %.1f, max %d (checkpoint every 10)\n", n, s / n, m }'
echo "episodes: $episodes; failed checks: $failed_checks"
if [ "$failed_checks" -eq 0 ]; then rm -rf --one-file-system "$work"; else echo "kept: $work"; fi
[ "$failed_checks" -eq 0 ]
