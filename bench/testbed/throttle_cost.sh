#!/usr/bin/env bash
# Does a pass cost more CPU on a device whose CPU quota stops it more often? The profiler times a
# CPU-quota device's layers back to back inside its cgroup, so a pass of c seconds of CPU is
# stopped about c / (cores x period) times for the rest of a period, and resumes off a core it
# left for milliseconds. Runs pass_cold_cost.c (a stage built as the runtime builds it, warm
# between passes) inside a cgroup of its own at each quota of QUOTAS (1: none) with the
# testbed's 10 ms period, the quotas alternating, REPEATS times, on one core; and with each
# sleep of SLEEPS_US before every pass (as a pipeline stage's rank waits for its message: a sleep
# of a period or more starts each pass with a fresh budget, so a pass that fits it is never
# stopped). Prints per stage, quota and sleep the medians (µs of thread CPU per pass), their
# ratio to no quota and no sleep, and, without sleeps, what each stop costs if the extra CPU is
# paid per stop (extra / stops per pass).
#
# usage: bench/testbed/throttle_cost.sh [OUT_FILE]   environment: CASES (MODEL:FIRST:LAST:MBS ...),
#        QUOTAS (1 0.4 0.1667 0.1), SLEEPS_US (0), PERIOD_US (10000), ROUNDS (120), REPEATS (3),
#        CORE (0).
#        Needs root (a cgroup, v1 cpu or v2), a C compiler, the project's build and python3.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$here"
[ $# -le 1 ] || { sed -n '2,14p' "$0" >&2; exit 2; }
out=${1:-/dev/stdout}
CASES=${CASES:-gpt2-tiny-mid:1:1:1 gpt2-tiny-five:2:3:1 gpt2-tiny:2:2:2}
QUOTAS=${QUOTAS:-1 0.4 0.1667 0.1}
SLEEPS_US=${SLEEPS_US:-0}
PERIOD_US=${PERIOD_US:-10000} ROUNDS=${ROUNDS:-120} REPEATS=${REPEATS:-3} CORE=${CORE:-0}
[ "$(id -u)" -eq 0 ] || { echo "throttle_cost: needs root (a cgroup of its own)" >&2; exit 1; }
if [ -r /sys/fs/cgroup/cgroup.controllers ] && grep -qw cpu /sys/fs/cgroup/cgroup.controllers; then
	kind=v2 group=/sys/fs/cgroup/sailor-throttle-cost-$$
elif [ -d /sys/fs/cgroup/cpu ]; then
	kind=v1 group=/sys/fs/cgroup/cpu/sailor-throttle-cost-$$
else
	echo "throttle_cost: no cgroup cpu controller (v1 or v2)" >&2
	exit 1
fi
work=$(mktemp -d)
trap 'rmdir "$group" 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir "$group"
set_quota() { # cores (1: none)
	local us
	us=$(awk -v c="$1" -v p="$PERIOD_US" 'BEGIN { if (c >= 1) print -1; else printf "%d", c * p }')
	if [ $kind = v2 ]; then
		[ "$us" = -1 ] && us=max
		echo "$us $PERIOD_US" >"$group/cpu.max"
	else
		echo "$PERIOD_US" >"$group/cpu.cfs_period_us"
		echo "$us" >"$group/cpu.cfs_quota_us"
	fi
}
bench/testbed/pass_cold_cost_build.sh "$work/pass_cold_cost"
export SAILOR_DATA="$here/data"
for rep in $(seq 1 "$REPEATS"); do
	for c in $CASES; do
		IFS=: read -r model first last mbs <<<"$c"
		for q in $QUOTAS; do
			set_quota "$q"
			for nap in $SLEEPS_US; do
				# the child joins the cgroup, then becomes the measurement (bounded in time)
				line=$(timeout 600 sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' \
					sh "$group" taskset -c "$CORE" "$work/pass_cold_cost" "$model" \
					"$first" "$last" "$mbs" 0 "$ROUNDS" "$nap")
				echo "$q $nap $line" >>"$work/all.txt"
			done
		done
	done
done
python3 - "$work/all.txt" "$PERIOD_US" >"$out" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    q, nap, model, first, last, mbs, _mib, fwd, bwd = line.split()
    rows.setdefault((model, first, last, mbs), {}).setdefault((float(q), float(nap)), []).append(
        (float(fwd), float(bwd)))
period_us = float(sys.argv[2])
print(f"# throttle_cost: thread CPU per pass (µs, medians over repeats of each run's median), "
      f"period {period_us / 1000:g} ms; stops per pass = CPU / (cores x period)")
print("| stage (model, layers, mbs) | cores | sleep µs | forward µs | x no quota | per stop | backward µs | x no quota | per stop |")
print("|---|---|---|---|---|---|---|---|---|")
for (model, first, last, mbs), by_case in rows.items():
    base = by_case.get((1.0, 0.0))
    bf = statistics.median(x[0] for x in base) if base else None
    bb = statistics.median(x[1] for x in base) if base else None
    for q, nap in sorted(by_case, key=lambda k: (-k[0], k[1])):
        f = statistics.median(x[0] for x in by_case[(q, nap)])
        b = statistics.median(x[1] for x in by_case[(q, nap)])
        cells = []
        for v, v0 in ((f, bf), (b, bb)):
            ratio = f"{v / v0:.2f}" if v0 else ""
            per_stop = f"{(v - v0) / (v / (q * period_us)):.0f}" if v0 and q < 1 and nap == 0 else ""
            cells += [f"{v:.0f}", ratio, per_stop]
        print(f"| {model} [{first}, {last}] mbs {mbs} | {q:g} | {nap:g} | " + " | ".join(cells) + " |")
PY
