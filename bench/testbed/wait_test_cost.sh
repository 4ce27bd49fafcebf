#!/usr/bin/env bash
# What one test of a sleeping wait (a rank on a CPU-quota device, src/runtime/comm_mpi.c) costs
# in CPU, against what else the machine runs: 1, 2, 4 and 6 ranks waiting at once, and one rank
# waiting beside 1 and 2 busy loops. The profile's idle-wait probe (source.idle_wait) measures
# the first case only; the runs' own figure (wait_cpu_s / wait_tests) is what the machine's
# other ranks make of it (bench/RESULTS.md, 2026-11-27 (5)). Prints, per case, the median and
# range of the per-test CPU (µs) over every rank's windows.
#
# usage: bench/testbed/wait_test_cost.sh [OUT_FILE]   environment: SLEEP_US (320, the longest
#        sleep, comm.h), WINDOW_S (0.4), REPEATS (5). Needs mpicc, mpirun and python3; no root.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
[ $# -le 1 ] || { sed -n '2,10p' "$0" >&2; exit 2; }
out=${1:-/dev/stdout}
SLEEP_US=${SLEEP_US:-320} WINDOW_S=${WINDOW_S:-0.4} REPEATS=${REPEATS:-5}
command -v mpicc >/dev/null || { echo "wait_test_cost: needs mpicc (Debian: libopenmpi-dev)" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
source "$here/bench/testbed/spinners.sh"
trap 'stop_spinners; rm -rf "$work"' EXIT
mpicc -O2 -o "$work/wait_test_cost" "$here/bench/testbed/wait_test_cost.c"
limit=$(awk -v w="$WINDOW_S" -v r="$REPEATS" 'BEGIN { printf "%d", 60 + 2 * w * r }')
one_case() { # name ranks busy_loops
	local name=$1 ranks=$2 busy=$3 i
	for ((i = 0; i < busy; i++)); do start_spinner "$limit"; done
	timeout "$limit" mpirun --oversubscribe -np "$ranks" "$work/wait_test_cost" "$SLEEP_US" \
		"$WINDOW_S" "$REPEATS" >"$work/$name.txt"
	stop_spinners
	python3 - "$name" "$work/$name.txt" <<'PY'
import statistics, sys
name, path = sys.argv[1], sys.argv[2]
v = [float(x) for line in open(path) for x in line.split()[5:]]
print(f"{name:<28} us per test: median {statistics.median(v):6.2f}  range {min(v):6.2f} - {max(v):6.2f}  ({len(v)} windows)")
PY
}
{
	echo "# wait_test_cost $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, sleep $SLEEP_US us, windows of $WINDOW_S s x $REPEATS"
	one_case "1 rank waiting" 1 0
	one_case "2 ranks waiting" 2 0
	one_case "4 ranks waiting" 4 0
	one_case "6 ranks waiting" 6 0
	one_case "1 rank, 1 busy loop beside" 1 1
	one_case "1 rank, 2 busy loops beside" 1 2
} >"$out"
