# The set-up the `sailor control` tests (tests/integration/control_*.sh) share; source it from
# the repository root. It checks what they need (SAILOR, mpirun, and python3-numpy when
# NEED_NUMPY=1; a missing tool skips the test with exit 77), lets OpenMPI run as root with more
# ranks than cores, makes $work with tokens.bin in it, and at exit kills the controller ($ctl)
# and every process of the run and removes $work (a test may define its own cleanup after).
source tests/lib/common.sh
if [ "${NEED_NUMPY:-0}" = 1 ]; then need_python numpy; fi
use_mpi
ctl=""
at_exit '[ -n "$ctl" ] && kill -9 "$ctl" 2>/dev/null; kill_work_processes'
tokens "$work/tokens.bin"

# localhost_cluster NAME:GPU:ZONE...: $work/cluster.json with those hosts, all on localhost with
# two slots each (ranks that wait yield the CPU: they are oversubscribed)
localhost_cluster() {
	local sep="" host name gpu zone
	{
		echo '{"schema": "sailor.cluster/1", "hosts": ['
		for host in "$@"; do
			IFS=: read -r name gpu zone <<<"$host"
			printf '%s  {"name": "%s", "address": "localhost", "gpu": "%s", "zone": "%s", "slots": 2}' \
				"$sep" "$name" "$gpu" "$zone"
			sep=$',\n'
		done
		printf '],\n "launch": {"mpirun_args": ["--mca", "mpi_yield_when_idle", "1"]}}\n'
	} >"$work/cluster.json"
}

# wait_control STATUS: waits for the controller ($ctl) and fails unless it exited with STATUS
wait_control() {
	local status=0
	wait "$ctl" || status=$?
	ctl=""
	[ "$status" -eq "$1" ] || { echo "FAIL: sailor control exited $status, expected $1"; cat "$work/err"; exit 1; }
	expect_no_plan_skipped_for_shape
}

# expect_no_plan_skipped_for_shape: the planner's plans run as emitted (issue 23), so the
# controller never passes over one for its batch split or its layers; a skip for the hosts (a
# replica's type or zone has no free host) is the only kind left
expect_no_plan_skipped_for_shape() {
	local bad
	bad=$(grep '"event":"plan_skipped"' "$work/run/events.jsonl" 2>/dev/null |
		grep -E 'micro-batch|microbatches_per_pipeline|global batch|layer' || true)
	[ -z "$bad" ] || { echo "FAIL: the controller skipped a planned plan for its shape: $bad"; exit 1; }
}

# expect_no_process_left: fails if a process of the run ($work in its command line) is still there
expect_no_process_left() {
	sleep 0.3
	local left
	left=$(pgrep -f "$work" || true)
	[ -z "$left" ] || { echo "FAIL: processes left behind: $left"; ps -fp $left; exit 1; }
}
