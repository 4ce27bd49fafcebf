#!/usr/bin/env bash
# What a device that is a CPU quota runs after it slept: the kernel (a task in a cgroup with the
# testbed's 10 ms period, quota_wake_kernel.c) against the simulator's model of it
# (src/sim/runtime_cpu_quota.c, replayed by quota_wake_model.c). For each quota and sleep it
# prints the CPU (ms) each had run 0, 5, ..., 60 ms after the wake and the largest difference.
# After a sleep a rank has its period's budget and what Linux kept of the last one; whether the
# model carries the right amount shows here (bench/RESULTS.md, 2026-11-27 (2)).
#
# usage: bench/testbed/quota_wake_probe.sh [OUT_FILE]   environment: CORES ("0.1429 0.3"),
#        SLEEPS ("0.003 0.025 0.1"), REPEATS (60). Needs root (a cgroup of its own, removed at
#        the end), gcc and build/libsailor.a (make).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$here"
[ $# -le 1 ] || { sed -n '2,12p' "$0" >&2; exit 2; }
out=${1:-/dev/stdout}
CORES=${CORES:-0.1429 0.3} SLEEPS=${SLEEPS:-0.003 0.025 0.1} REPEATS=${REPEATS:-60}
[ "$(id -u)" -eq 0 ] || { echo "quota_wake_probe: needs root (a cgroup)" >&2; exit 1; }
[ -f build/libsailor.a ] || make -s -j2
work=$(mktemp -d)
if [ -r /sys/fs/cgroup/cgroup.controllers ] && grep -qw cpu /sys/fs/cgroup/cgroup.controllers; then
	kind=v2 cg=/sys/fs/cgroup/sailor-quota-probe-$$
elif [ -d /sys/fs/cgroup/cpu ] && [ -w /sys/fs/cgroup/cpu ]; then
	kind=v1 cg=/sys/fs/cgroup/cpu/sailor-quota-probe-$$
else
	echo "quota_wake_probe: no usable cgroup cpu controller (v2 with 'cpu', or v1 /sys/fs/cgroup/cpu)" >&2
	exit 1
fi
# the cgroup goes once its task has exited (rmdir of the one folder this script made)
trap 'rmdir "$cg" 2>/dev/null || true; rm -rf "$work"' EXIT
gcc -O2 -Wall -o "$work/kernel" bench/testbed/quota_wake_kernel.c
gcc -O2 -Wall -Isrc -o "$work/model" bench/testbed/quota_wake_model.c build/libsailor.a -lm
mkdir "$cg"
[ "$kind" = v1 ] || echo "+cpu" >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
{
	echo "# quota_wake_probe $(date -u +%Y-%m-%dT%H:%MZ), $(uname -r), cgroup $kind, period 10 ms, $REPEATS repeats"
	echo "# CPU (ms) run 0, 5, ..., 60 ms after waking from a sleep; kernel (measured) and model"
	for cores in $CORES; do
		quota=$(awk -v c="$cores" 'BEGIN { printf "%d", c * 10000 }')
		if [ "$kind" = v2 ]; then echo "$quota 10000" >"$cg/cpu.max"
		else echo 10000 >"$cg/cpu.cfs_period_us"; echo "$quota" >"$cg/cpu.cfs_quota_us"; fi
		for sleep_s in $SLEEPS; do
			kernel=$(timeout 120 sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" "$3" "$4"' \
				sh "$cg" "$work/kernel" "$sleep_s" "$REPEATS")
			model=$("$work/model" "$cores" "$sleep_s")
			printf "cores %s sleep %5.3f s\n  kernel %s\n  model  %s\n" "$cores" "$sleep_s" "$kernel" "$model"
			paste <(tr ' ' '\n' <<<"$kernel") <(tr ' ' '\n' <<<"$model") |
				awk '{ d = $2 - $1; if (d < 0) d = -d; if (d > m) m = d } END { printf "  largest difference %.2f ms\n", m }'
		done
	done
} >"$out"
