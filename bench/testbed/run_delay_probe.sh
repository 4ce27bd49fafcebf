#!/usr/bin/env bash
# How long a run's ranks stand runnable without a core (bench/RESULTS.md, 2026-11-27 (3)): brings
# the testbed up, runs each plan, and over a window of its steady state reads each rank's
# run-queue delay (/proc/PID/schedstat) and its slot's throttled time (the cgroup's cpu.stat).
# The kernel counts a throttled task's time as run-queue delay, so delay minus throttled time is
# what the rank waited for a core while it had budget; a device alone on the machine waits
# almost none. The runtime model gives every rank a core of its own.
#
# usage: bench/testbed/run_delay_probe.sh PLAN.json...   environment: DESC
#        (data/testbed/geo3.json), MODEL (gpt2-tiny), GPUS (data/testbed/gpus-cpu.json), STEPS
#        (150: the run must outlast WARM_S + WINDOW_S), WARM_S (5), WINDOW_S (6). Needs root.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$here"
[ $# -ge 1 ] || { sed -n '2,11p' "$0" >&2; exit 2; }
DESC=${DESC:-data/testbed/geo3.json} MODEL=${MODEL:-gpt2-tiny} GPUS=${GPUS:-data/testbed/gpus-cpu.json}
STEPS=${STEPS:-150} WARM_S=${WARM_S:-5} WINDOW_S=${WINDOW_S:-6}
model_file=$MODEL; [ -f "$model_file" ] || model_file=data/models/$MODEL.json
SEQ=$(jq -r .seq_len "$model_file")
S="$here/build/sailor"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
[ "$(id -u)" -eq 0 ] || { echo "run_delay_probe: needs root (the testbed)" >&2; exit 1; }
[ -x "$S" ] || make -s -j2
if [ -r /sys/fs/cgroup/cgroup.controllers ] && grep -qw cpu /sys/fs/cgroup/cgroup.controllers; then
	root=/sys/fs/cgroup/sailor-testbed/$(jq -r .name "$DESC")
else
	root=/sys/fs/cgroup/cpu/sailor-testbed/$(jq -r .name "$DESC")
fi
work=$(mktemp -d /tmp/sailor-run-delay-XXXXXX)
run=
trap '[ -z "$run" ] || kill "$run" 2>/dev/null || true; scripts/testbed down "$DESC" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
scripts/testbed up "$DESC" -o "$work/cluster.json" >/dev/null
"$S" data data/text/fsf-licenses.txt -o "$work/tokens.bin" >/dev/null
# one line per rank: slot, pid, CPU ns, run-queue delay ns, the slot's throttled ns
snapshot() {
	local slot pid cpu delay throttled
	for slot in $(find "$root" -mindepth 2 -maxdepth 2 -name 'slot*' -type d | sort); do
		throttled=$(awk '$1 == "throttled_time" { print $2 } $1 == "throttled_usec" { print $2 * 1000 }' "$slot/cpu.stat")
		while read -r pid; do
			[ -r "/proc/$pid/schedstat" ] || continue
			read -r cpu delay _ <"/proc/$pid/schedstat"
			echo "${slot#"$root"/} $pid $cpu $delay $throttled"
		done <"$slot/cgroup.procs"
	done
}
for plan in "$@"; do
	"$S" run --model "$MODEL" --data "$work/tokens.bin" --plan "$plan" --cluster "$work/cluster.json" \
		--gpus "$GPUS" --seq-len "$SEQ" --steps "$STEPS" --lr 1e-3 --json >"$work/run.out" 2>"$work/run.err" </dev/null &
	run=$!
	sleep "$WARM_S"
	snapshot >"$work/a"
	sleep "$WINDOW_S"
	snapshot >"$work/b"
	wait "$run" || { echo "run_delay_probe: $plan failed: $(tail -1 "$work/run.err")" >&2; run=; continue; }
	run=
	echo "$(basename "$plan" .json): median step $(jq -r 'select(.event == "end") | .median_step_time_s' "$work/run.out") s; over ${WINDOW_S} s of its steps, per rank:"
	join -j 2 <(sort -k2,2 "$work/a") <(sort -k2,2 "$work/b") | awk -v w="$WINDOW_S" '{
		cpu = ($7 - $3) / 1e9; delay = ($8 - $4) / 1e9; thr = ($9 - $5) / 1e9
		printf "  %-16s CPU %.3f s, run-queue delay %.3f s, throttled %.3f s, waited for a core %.3f s (%.1f %%)\n",
		       $2, cpu, delay, thr, delay - thr, 100 * (delay - thr) / w }'
done
