#!/usr/bin/env bash
# Does load beside a device move its profile? Profiles one class's layers (TP 1, one micro-batch
# size) on a testbed host with nothing else running and with a process in a cgroup of its own
# limited to each of LOADS cores, PASSES times in turn, and prints each profile's block times and
# the machine's busy cores (bench/RESULTS.md, 2026-11-27 (2) and (5)). The load spins
# (LOAD_KIND=spin: the core, not the caches) or sets 8 MiB of memory over and over
# (LOAD_KIND=stream: the caches too, as other ranks' passes do).
#
# usage: bench/testbed/profile_under_load.sh HOST CLASS OUT_DIR   environment: DESC, GPUS,
#        MODEL (gpt2-tiny), MBS (2), LOADS ("0.15 0.5"), PASSES (2), LOAD_KIND (spin).
#        Needs root.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$here"
[ $# -eq 3 ] || { sed -n '2,11p' "$0" >&2; exit 2; }
host=$1 class=$2 out=$3
: "${DESC:?set DESC (a testbed description)}"
GPUS=${GPUS:-data/testbed/gpus-cpu.json} MODEL=${MODEL:-gpt2-tiny} MBS=${MBS:-2}
LOADS=${LOADS:-0.15 0.5} PASSES=${PASSES:-2} LOAD_KIND=${LOAD_KIND:-spin}
case $LOAD_KIND in spin | stream) ;; *) echo "profile_under_load: LOAD_KIND is spin or stream" >&2; exit 2 ;; esac
model_file=$MODEL; [ -f "$model_file" ] || model_file=data/models/$MODEL.json
SEQ=$(jq -r .seq_len "$model_file")
S="$here/build/sailor"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
[ "$(id -u)" -eq 0 ] || { echo "profile_under_load: needs root (the testbed)" >&2; exit 1; }
if [ -r /sys/fs/cgroup/cgroup.controllers ] && grep -qw cpu /sys/fs/cgroup/cgroup.controllers; then
	kind=v2 cg=/sys/fs/cgroup/sailor-load-$$
else
	kind=v1 cg=/sys/fs/cgroup/cpu/sailor-load-$$
fi
spinner=
stop_spinner() { if [ -n "$spinner" ]; then kill "$spinner" 2>/dev/null || true; wait "$spinner" 2>/dev/null || true; spinner=; fi; }
trap 'stop_spinner; rmdir "$cg" 2>/dev/null || true; scripts/testbed down "$DESC" >/dev/null 2>&1 || true' EXIT
mkdir -p "$out" "$cg"
[ "$kind" = v1 ] || echo "+cpu" >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
scripts/testbed up "$DESC" -o "$out/cluster.json" >&2
profile() { # name
	nice -n -5 timeout 300 "$S" profile --model "$MODEL" --gpu "$class" --gpus "$GPUS" --tp 1 \
		--mbs "$MBS" --seq-len "$SEQ" --cluster "$out/cluster.json" --host "$host" \
		--min-sample-ms 350 --repeats 7 -o "$out/$1" -q </dev/null
	jq -r --arg n "$1" --arg e "mbs $MBS tp 1" '.source.entries[$e] |
	  "\($n): forward_block \(.median_s.forward_block * 1e6 | round) us, backward_block \(.median_s.backward_block * 1e6 | round) us, machine busy \(.machine_busy_cores * 100 | round / 100) cores"' \
	  "$out/$1/$MODEL/$class.json"
}
for pass in $(seq 1 "$PASSES"); do
	profile "none.$pass"
	for load in $LOADS; do
		quota=$(awk -v c="$load" 'BEGIN { printf "%d", c * 10000 }')
		if [ "$kind" = v2 ]; then echo "$quota 10000" >"$cg/cpu.max"
		else echo 10000 >"$cg/cpu.cfs_period_us"; echo "$quota" >"$cg/cpu.cfs_quota_us"; fi
		if [ "$LOAD_KIND" = stream ]; then # memsets of 8 MiB: through the caches
			sh -c 'echo $$ >"$1/cgroup.procs" && exec dd if=/dev/zero of=/dev/null bs=8M 2>/dev/null' sh "$cg" & spinner=$!
		else
			sh -c 'echo $$ >"$1/cgroup.procs" && while :; do :; done' sh "$cg" & spinner=$!
		fi
		sleep 0.5
		profile "load$load.$pass"
		stop_spinner
	done
done
