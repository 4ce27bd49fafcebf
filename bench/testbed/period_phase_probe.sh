#!/usr/bin/env bash
# Where the CPU quota's periods of the testbed's slots start (bench/RESULTS.md, 2026-11-27 (3)).
# A cgroup's CFS period timer keeps the phase it got when its quota was written: first two
# cgroups of this script's own, written a fork or two apart and spun in one after the other
# later; then every slot of DESC, brought up BRINGUPS times. The runtime model draws the slots'
# phases at random (src/sim/time_runtime.c, PHASE_DRAWS); if `up` gave them one phase, ranks
# would meet at each period's start.
#
# usage: bench/testbed/period_phase_probe.sh [OUT_FILE]   environment: DESC
#        (data/testbed/geo3.json), BRINGUPS (2). Needs root (cgroup v1 or v2), gcc.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$here"
[ $# -le 1 ] || { sed -n '2,10p' "$0" >&2; exit 2; }
out=${1:-/dev/stdout}
DESC=${DESC:-data/testbed/geo3.json} BRINGUPS=${BRINGUPS:-2}
[ "$(id -u)" -eq 0 ] || { echo "period_phase_probe: needs root (cgroups, the testbed)" >&2; exit 1; }
if [ -r /sys/fs/cgroup/cgroup.controllers ] && grep -qw cpu /sys/fs/cgroup/cgroup.controllers; then
	kind=v2 base=/sys/fs/cgroup
elif [ -d /sys/fs/cgroup/cpu ] && [ -w /sys/fs/cgroup/cpu ]; then
	kind=v1 base=/sys/fs/cgroup/cpu
else
	echo "period_phase_probe: no usable cgroup cpu controller" >&2
	exit 1
fi
work=$(mktemp -d /tmp/sailor-phase-XXXXXX)
own="$base/sailor-phase-$$-a $base/sailor-phase-$$-b"
trap 'for c in $own; do rmdir "$c" 2>/dev/null || true; done; scripts/testbed down "$DESC" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
gcc -O2 -Wall -o "$work/spin" bench/testbed/period_phase_spin.c -lm
[ "$kind" = v1 ] || echo "+cpu" >"$base/cgroup.subtree_control" 2>/dev/null || true
set_quota() { # dir: a quarter of a core in 10 ms periods
	if [ "$kind" = v2 ]; then echo "2500 10000" >"$1/cpu.max"
	else echo 10000 >"$1/cpu.cfs_period_us"; echo 2500 >"$1/cpu.cfs_quota_us"; fi
}
spin_in() { # cgroup name
	sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" 0.3 0.01 "$3"' sh "$1" "$work/spin" "$2"
}
{
	echo "# period_phase_probe $(date -u +%Y-%m-%dT%H:%MZ), $(uname -r), cgroup $kind, period 10 ms, quota 0.25 core"
	for c in $own; do mkdir "$c"; done
	set -- $own
	ta=$(date +%s%N)
	set_quota "$1"
	tb=$(date +%s%N)
	set_quota "$2"
	echo "# two cgroups whose quotas were written $(awk -v a="$ta" -v b="$tb" 'BEGIN { printf "%.2f", (b - a) / 1e6 }') ms apart, spun in 0.5 s later:"
	sleep 0.5
	spin_in "$1" own-a
	spin_in "$2" own-b
	for b in $(seq 1 "$BRINGUPS"); do
		echo "# bring-up $b of $(basename "$DESC"): each slot's phase"
		scripts/testbed up "$DESC" -o "$work/cluster.json" >/dev/null 2>&1
		name=$(jq -r .name "$DESC")
		root="$base/sailor-testbed/$name"
		for slot in $(find "$root" -mindepth 2 -maxdepth 2 -name 'slot*' -type d | sort); do
			spin_in "$slot" "${slot#"$root"/}"
		done
		scripts/testbed down "$DESC" >/dev/null 2>&1
	done
} >"$out"
