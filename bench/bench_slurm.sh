#!/usr/bin/env bash
# Figures of `sailor control` on the Slurm testbed (scripts/testbed up --slurm; gpt2-tiny, seq 32,
# global batch 8; hosts fa0, fa1 cpu-fast in us-central1-a, sb0 cpu-slow in us-central1-b):
#   1. reconfiguration time by part (plan, checkpoint, stop, start, load, first step), for
#      generations launched as Slurm jobs (control --slurm: srun --mpi=pmix) against generations
#      launched by mpirun through the testbed's agent (control --cluster --pool) on the same
#      hosts, for the same change: two cpu-fast devices leave (Slurm: fa0 drained; mpirun: the
#      pool file drops them) and come back (resume; the pool file again);
#   2. seconds from the command (`scontrol update ... state=drain|resume`, or the pool file's
#      rename) to the controller seeing the change, and to the new generation's first step.
# BENCH_CYCLES (default 3) leave-and-return cycles per launcher; BENCH_KEEP=DIR keeps the runs'
# event logs there. Needs root (prints that and
# exits 0 otherwise). Prints figures; never fails on speed.
# Usage: SAILOR=build/sailor bench/bench_slurm.sh
set -euo pipefail
cd "$(dirname "$0")/.."
SAILOR=${SAILOR:-$PWD/sailor}
[ "$(id -u)" -eq 0 ] || { echo "bench_slurm: skipped (needs root: network namespaces, slurmd)"; exit 0; }
PY=/usr/bin/python3
cycles=${BENCH_CYCLES:-3}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
export SAILOR_TESTBED_STATE=$work/state
TB=slbench
desc=$work/testbed.json
ctl=""
cleanup() {
	set +e  # every step runs, whatever the one before it returned
	if [ -n "$ctl" ]; then kill -9 "$ctl" 2>/dev/null; wait "$ctl" 2>/dev/null; fi
	[ -f "${SLURM_CONF:-}" ] && timeout 20 scancel -p $TB 2>/dev/null
	timeout 60 scripts/testbed down "$desc" >/dev/null 2>&1
	mountpoint -q "$work/state/$TB/cgroup" || mountpoint -q "$work/state/$TB/slurm/sys-cgroup" ||
		rm -rf --one-file-system "$work"
}
trap cleanup EXIT
cat >"$desc" <<'JSON'
{"schema": "sailor.testbed/1", "name": "slbench", "subnet": "10.96.0.0/16",
 "classes": {"cpu-fast": {"cpu_cores": 0.25}, "cpu-slow": {"cpu_cores": 0.125}},
 "links": {"zone": {"bandwidth_mbit": 800, "latency_ms": 0.1}, "region": {"bandwidth_mbit": 200, "latency_ms": 2},
           "world": {"bandwidth_mbit": 50, "latency_ms": 10}},
 "zones": [{"name": "us-central1-a", "hosts": [{"name": "fa0", "class": "cpu-fast", "slots": 2},
                                               {"name": "fa1", "class": "cpu-fast", "slots": 2}]},
           {"name": "us-central1-b", "hosts": [{"name": "sb0", "class": "cpu-slow", "slots": 2}]}]}
JSON
export SLURM_CONF=$work/state/$TB/slurm/slurm.conf
timeout 120 scripts/testbed up "$desc" --slurm -o "$work/cluster.json" >/dev/null
"$SAILOR" data data/text/fsf-licenses.txt -o "$work/tokens.bin" >/dev/null
ENV=data/validation/testbed-geo3-gpt2tiny/env
common=(--model gpt2-tiny --data "$work/tokens.bin" --seq-len 32 --steps 100000 --global-batch 8
	--gpus "$ENV/gpus.json" --profiles "$ENV/profiles" --network "$ENV/network.json"
	--ckpt-every 10 --stop-timeout 30)

pool() { # fast-count: the pool file, replaced atomically
	printf '{"schema": "sailor.pool/1", "gpus": [{"gpu": "cpu-fast", "zone": "us-central1-a", "count": %d}, {"gpu": "cpu-slow", "zone": "us-central1-b", "count": 2}]}\n' "$1" >"$work/pool.tmp"
	mv "$work/pool.tmp" "$work/pool.json"
}
gens() { local n; n=$(grep -c '"event":"generation_start"' "$1/events.jsonl" 2>/dev/null); echo "${n:-0}"; }
steps_of() { local n; n=$(grep -c "\"generation\":$2," "$1/steps.jsonl" 2>/dev/null); echo "${n:-0}"; }
wait_until() { # seconds command...
	local limit=$1 i; shift
	for ((i = 0; i < limit * 20; i++)); do "$@" && return 0; sleep 0.05; done
	echo "bench_slurm: gave up waiting ${limit} s for: $*" >&2; return 1
}

run_one() { # launcher (slurm|mpirun)
	local launcher=$1 run=$work/run-$1 g
	: >"$work/commands-$launcher"
	if [ "$launcher" = slurm ]; then
		"$SAILOR" control "${common[@]}" --slurm --partition $TB --ckpt-dir "$work/ckpt-$launcher" \
			--run-dir "$run" >/dev/null 2>"$work/err-$launcher" &
	else
		pool 4
		"$SAILOR" control "${common[@]}" --cluster "$work/cluster.json" --pool "$work/pool.json" \
			--ckpt-dir "$work/ckpt-$launcher" --run-dir "$run" >/dev/null 2>"$work/err-$launcher" &
	fi
	ctl=$!
	wait_until 120 eval '[ "$(gens "$run")" -ge 1 ]'
	for ((c = 0; c < cycles; c++)); do
		for action in leave return; do
			g=$(gens "$run")
			wait_until 120 eval '[ "$(steps_of "$run" "$g")" -ge 40 ]'
			t=$(date +%s.%N)
			if [ "$launcher" = slurm ] && [ $action = leave ]; then
				scontrol update nodename=fa0 state=drain reason=bench
			elif [ "$launcher" = slurm ]; then
				scontrol update nodename=fa0 state=resume
			elif [ $action = leave ]; then pool 2
			else pool 4; fi
			echo "$action $t $((g + 1))" >>"$work/commands-$launcher"
			wait_until 120 eval '[ "$(gens "$run")" -gt "$g" ]'
			wait_until 120 eval '[ "$(steps_of "$run" "$((g + 1))")" -ge 1 ]'
		done
	done
	kill -TERM "$ctl"
	wait "$ctl" 2>/dev/null || true
	ctl=""
}
run_one slurm
run_one mpirun
if [ -n "${BENCH_KEEP:-}" ]; then # the runs' event logs, for a closer look
	mkdir -p "$BENCH_KEEP"
	cp -r "$work"/run-* "$work"/commands-* "$BENCH_KEEP"/
fi
"$PY" - "$work" <<'PY'
import json, statistics, sys
work = sys.argv[1]
parts = ["plan_s", "checkpoint_s", "stop_s", "between_s", "start_s", "load_s", "first_step_s", "total_s"]
def med(xs):
    return statistics.median(xs) if xs else float("nan")
print("reconfiguration by part, median of each launcher's reconfigurations (seconds;")
print("'total' runs from the controller seeing the change to the new generation's first step):")
print(f"  {'launcher':9} {'n':>2} " + " ".join(f"{p[:-2]:>10}" for p in parts))
rows = {}
for launcher in ("slurm", "mpirun"):
    run = f"{work}/run-{launcher}"
    events = [json.loads(l) for l in open(f"{run}/events.jsonl")]
    start = next(e["time"] for e in events if e["event"] == "start")
    rec = [e for e in events if e["event"] == "reconfigured"]
    print(f"  {launcher:9} {len(rec):>2} " + " ".join(f"{med([e[p] for e in rec]):10.3f}" for p in parts))
    first = {}
    for line in open(f"{run}/steps.jsonl"):
        s = json.loads(line)
        first.setdefault(s["generation"], start + s["t_s"])
    seen = [start + e["t_s"] for e in events if e["event"] == "pool_change"]
    cmds = [l.split() for l in open(f"{work}/commands-{launcher}")]
    for action in ("leave", "return"):
        detect, to_step = [], []
        for a, t, g in cmds:
            if a != action:
                continue
            t, g = float(t), int(g)
            later = [x for x in seen if x >= t]
            if later:
                detect.append(later[0] - t)
            if g in first:
                to_step.append(first[g] - t)
        rows[(launcher, action)] = (detect, to_step)
print("from the command to the change seen / to the new generation's first step (median, min-max; s):")
for (launcher, action), (detect, to_step) in rows.items():
    what = {("slurm", "leave"): "scontrol ... state=drain", ("slurm", "return"): "scontrol ... state=resume",
            ("mpirun", "leave"): "pool file -2 cpu-fast", ("mpirun", "return"): "pool file +2 cpu-fast"}[(launcher, action)]
    print(f"  {launcher:7} {what:26} seen {med(detect):6.2f} ({min(detect, default=0):.2f}-{max(detect, default=0):.2f})"
          f"   first step {med(to_step):6.2f} ({min(to_step, default=0):.2f}-{max(to_step, default=0):.2f})  n={len(to_step)}")
PY
