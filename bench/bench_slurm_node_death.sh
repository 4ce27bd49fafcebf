#!/usr/bin/env bash
# How fast `sailor control --slurm` resumes after a node dies: on the Slurm testbed
# (scripts/testbed up --slurm; gpt2-tiny, seq 32, global batch 8; hosts fa0, fa1 cpu-fast in
# us-central1-a, sb0 cpu-slow in us-central1-b), BENCH_KILLS times (default 5): a fresh testbed,
# the controller started, and once its first generation ran 30 steps every process of the last
# node of its job killed (slurmd, slurmstepd, the ranks: what a kernel does for a node whose
# processes die; a host that loses power is another case, docs/control.md). Prints, per kill and
# as medians, the seconds from the kill to the next generation's first step and its parts:
#   detect   kill -> the controller's node_death event
#   plan     the re-plan without the node
#   stop     the rest from the node_death event to the next generation's start: the job ended
#            on every node (scancel --signal=USR2, node marked down, scancel, srun gone, squeue
#            empty, launcher killed), the generation reaped
#   start    the next generation's srun, MPI start and set-up, less the load
#   load     its checkpoint load
#   step     its first step
# BENCH_STOP_TIMEOUT (default 30) is the controller's --stop-timeout (it plays no part: the
# generation is killed, not stopped). BENCH_KEEP=DIR keeps the runs' event logs. Needs root
# (prints that and exits 0 otherwise). Prints figures; never fails on speed.
# Usage: SAILOR=build/sailor bench/bench_slurm_node_death.sh
set -euo pipefail
cd "$(dirname "$0")/.."
SAILOR=${SAILOR:-$PWD/sailor}
[ "$(id -u)" -eq 0 ] || { echo "bench_slurm_node_death: skipped (needs root: network namespaces, slurmd)"; exit 0; }
PY=/usr/bin/python3
kills=${BENCH_KILLS:-5}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
export SAILOR_TESTBED_STATE=$work/state
TB=slndb
desc=$work/testbed.json
ctl=""
tb_up=0
cleanup() {
	set +e  # every step runs, whatever the one before it returned
	if [ -n "$ctl" ]; then kill -9 "$ctl" 2>/dev/null; wait "$ctl" 2>/dev/null; fi
	[ -f "${SLURM_CONF:-}" ] && timeout 20 scancel -p $TB 2>/dev/null
	[ "$tb_up" = 1 ] && timeout 60 scripts/testbed down "$desc" >/dev/null 2>&1
	mountpoint -q "$work/state/$TB/cgroup" || mountpoint -q "$work/state/$TB/slurm/sys-cgroup" ||
		rm -rf --one-file-system "$work"
}
trap cleanup EXIT
cat >"$desc" <<'JSON'
{"schema": "sailor.testbed/1", "name": "slndb", "subnet": "10.98.0.0/16",
 "classes": {"cpu-fast": {"cpu_cores": 0.25}, "cpu-slow": {"cpu_cores": 0.125}},
 "links": {"zone": {"bandwidth_mbit": 800, "latency_ms": 0.1}, "region": {"bandwidth_mbit": 200, "latency_ms": 2},
           "world": {"bandwidth_mbit": 50, "latency_ms": 10}},
 "zones": [{"name": "us-central1-a", "hosts": [{"name": "fa0", "class": "cpu-fast", "slots": 2},
                                               {"name": "fa1", "class": "cpu-fast", "slots": 2}]},
           {"name": "us-central1-b", "hosts": [{"name": "sb0", "class": "cpu-slow", "slots": 2}]}]}
JSON
export SLURM_CONF=$work/state/$TB/slurm/slurm.conf
"$SAILOR" data data/text/fsf-licenses.txt -o "$work/tokens.bin" >/dev/null
ENV=data/validation/testbed-geo3-gpt2tiny/env
common=(--model gpt2-tiny --data "$work/tokens.bin" --seq-len 32 --steps 100000 --global-batch 8
	--gpus "$ENV/gpus.json" --profiles "$ENV/profiles" --network "$ENV/network.json"
	--ckpt-every 10 --stop-timeout "${BENCH_STOP_TIMEOUT:-30}")
steps_of() { local n; n=$(grep -c "\"generation\":$2," "$1/steps.jsonl" 2>/dev/null); echo "${n:-0}"; }
wait_until() { # seconds command...
	local limit=$1 i; shift
	for ((i = 0; i < limit * 20; i++)); do "$@" && return 0; sleep 0.05; done
	echo "bench_slurm_node_death: gave up waiting ${limit} s for: $*" >&2; return 1
}

for ((k = 1; k <= kills; k++)); do
	run=$work/run-$k
	timeout 120 scripts/testbed up "$desc" --slurm >"$work/up.log" 2>&1 || { cat "$work/up.log"; exit 1; }
	tb_up=1
	"$SAILOR" control "${common[@]}" --slurm --partition $TB --ckpt-dir "$work/ckpt-$k" \
		--run-dir "$run" -- --lr 2e-4 >/dev/null 2>"$work/err-$k" &
	ctl=$!
	wait_until 120 eval '[ "$(steps_of "$run" 1)" -ge 30 ]'
	node=$(scontrol show hostnames "$(squeue -h -p $TB -o '%N')" | tail -n 1)
	pids=$(ip netns pids "sailor-$TB-$node")
	t_kill=$(date +%s.%N)
	for p in $pids; do kill -9 "$p" 2>/dev/null || true; done
	echo "$t_kill $node" >"$run/kill"
	wait_until 120 eval '[ "$(steps_of "$run" 2)" -ge 1 ]'
	kill -TERM "$ctl"
	wait "$ctl" 2>/dev/null || true
	ctl=""
	timeout 20 scancel -p $TB 2>/dev/null || true
	timeout 60 scripts/testbed down "$desc" >/dev/null 2>&1
	tb_up=0
done
if [ -n "${BENCH_KEEP:-}" ]; then # the runs' event logs, for a closer look
	mkdir -p "$BENCH_KEEP"
	cp -r "$work"/run-* "$work"/err-* "$BENCH_KEEP"/
fi
"$PY" - "$work" "$kills" <<'PY'
import json, statistics, sys
work, kills = sys.argv[1], int(sys.argv[2])
cols = ["total", "detect", "plan", "stop", "start", "load", "step"]
rows = []
print("seconds from the kill of a node to the next generation's first step, by part:")
print(f"  {'kill':>4} {'node':>4} " + " ".join(f"{c:>7}" for c in cols) + "  detected by")
for k in range(1, kills + 1):
    run = f"{work}/run-{k}"
    t_kill, node = open(f"{run}/kill").read().split()
    t_kill = float(t_kill)
    events = [json.loads(l) for l in open(f"{run}/events.jsonl")]
    start = next(e["time"] for e in events if e["event"] == "start")
    death = next(e for e in events if e["event"] == "node_death")
    rec = next(e for e in events if e["event"] == "reconfigured")
    first = next(start + s["t_s"] for s in map(json.loads, open(f"{run}/steps.jsonl"))
                 if s["generation"] == 2)
    r = {"total": first - t_kill, "detect": death["time"] - t_kill, "plan": rec["plan_s"],
         "start": rec["start_s"], "load": rec["load_s"], "step": rec["first_step_s"]}
    r["stop"] = rec["total_s"] - r["plan"] - r["start"] - r["load"] - r["step"]
    rows.append(r)
    print(f"  {k:>4} {node:>4} " + " ".join(f"{r[c]:7.2f}" for c in cols) + f"  {death['detected_by']}")
print(f"  {'median':>9} " + " ".join(f"{statistics.median(r[c] for r in rows):7.2f}" for c in cols))
PY
