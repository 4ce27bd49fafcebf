#!/usr/bin/env bash
# Profiles what the simulator needs to predict `sailor run` on an emulated cluster that is up:
# the layers of MODEL on one host of each device class (TP 1 and, where the host has two slots,
# TP 2, as MPI ranks placed as `sailor run` places them) and the links between the hosts.
# Used by loop.sh and validation.sh.
#
# usage: bench/testbed/profile_testbed.sh CLUSTER.json GPUS.json OUT_DIR
#        writes OUT_DIR/profiles/<MODEL>/<class>.json and OUT_DIR/network.json;
#        environment: MODEL (gpt2-tiny), SEQ (the model's seq_len), MBS (1,2,4), TPS ("1 2": the
#        TP degrees, each where the host has the slots), ACROSS_CLASSES (0; 1: the 7 repeats
#        taken in rounds over every class, then combined: combine_profiles.py), NETWORK (1; 0:
#        the layers only, no OUT_DIR/network.json), SAILOR (build/sailor), BUSY_CORES (0; 1: while the layers are
#        profiled, every core runs a SCHED_IDLE spin loop, which takes only time no one else
#        wants: a core whose device's quota stopped the ranks does not go idle, as in a run,
#        whose other ranks keep the cores busy; docs/design/testbed.md, what was found)
set -euo pipefail
[ $# -eq 3 ] || { sed -n '2,15p' "$0" >&2; exit 2; }
cluster=$1 gpus=$2 out=$3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
S=${SAILOR:-$here/build/sailor}
MODEL=${MODEL:-gpt2-tiny} MBS=${MBS:-1,2,4} TPS=${TPS:-1 2}
model_file=$MODEL; [ -f "$model_file" ] || model_file=$here/data/models/$MODEL.json
SEQ=${SEQ:-$(jq -r .seq_len "$model_file")}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
REPEATS=7
mkdir -p "$out"
# the host of each class with the most slots, so that TP 2 is measured wherever a host can hold it
jq -r '.hosts | group_by(.gpu)[] | max_by(.slots) | "\(.name) \(.gpu) \(.slots)"' "$cluster" \
	>"$out/.classes"
# profile_one HOST CLASS TP REPEATS DIR: the class's layers at one TP degree into DIR/<MODEL>/
profile_one() {
	local host=$1 gpu=$2 tp=$3 repeats=$4 dir=$5 cores sample_ms
	# a sample of at least 50 ms of the device's CPU (its quota's bursts; 200 ms of wall at
	# the least) and 7 repeats: on a tenth of a core this narrowed how far two bring-ups'
	# profiles were apart (median 6.6 -> 4.6 %, max 26 -> 16 %; docs/design/testbed.md)
	cores=$(jq -r --arg g "$gpu" '[.gpus[] | select(.name == $g) | .cpu_quota.cores // 1][0] // 1' "$gpus")
	sample_ms=$(awk -v c="$cores" 'BEGIN { m = 50 / c; if (m < 200) m = 200; printf "%d", m }')
	echo "profile_testbed: $gpu (host $host) at TP $tp, samples of $sample_ms ms, $repeats repeats" >&2
	# stdin from /dev/null: mpirun would otherwise read the rest of the caller's input
	nice -n -5 "$S" profile --model "$MODEL" --gpu "$gpu" --gpus "$gpus" --tp "$tp" \
		--mbs "$MBS" --seq-len "$SEQ" --cluster "$cluster" --host "$host" \
		--min-sample-ms "$sample_ms" --repeats "$repeats" -o "$dir" -q </dev/null
}
# warn_busy CLASS TP: what ran beside the ranks moves their times (shared caches and cores)
warn_busy() {
	jq -r --argjson tp "$2" --arg g "$1" --slurpfile cat "$gpus" '
	  ([$cat[0].gpus[] | select(.name == $g) | .cpu_quota.cores // 1][0] * $tp) as $own |
	  .source.entries | to_entries[] | select(.key | endswith("tp \($tp)")) |
	  select(.value.machine_busy_cores != null and .value.machine_busy_cores > $own + 0.25) |
	  "profile_testbed: warning: \($g) \(.key): the machine was busy on \(.value.machine_busy_cores * 100 | round / 100) cores against \($own) of the ranks: background load; these times may not repeat"' \
	  "$out/profiles/$MODEL/$1.json" >&2 || true
}
source "$here/bench/testbed/spinners.sh"
trap stop_spinners EXIT
if [ "${BUSY_CORES:-0}" = 1 ]; then
	command -v chrt >/dev/null || { echo "profile_testbed: BUSY_CORES needs chrt (util-linux)" >&2; exit 1; }
	# bounded: the layers of a testbed take minutes, never hours
	for ((c = 0; c < $(nproc); c++)); do start_spinner 7200 chrt --idle 0 taskset -c "$c"; done
fi
if [ "${ACROSS_CLASSES:-0}" = 1 ]; then
	# one repeat of every class and TP degree per round, REPEATS rounds, then each class's
	# rounds combined (their medians): a slow spell of the machine falls on a few samples of
	# every class instead of on all of the class profiled during it (combine_profiles.py)
	for round in $(seq 1 "$REPEATS"); do
		while read -r host gpu slots; do
			for tp in $TPS; do
				[ "$tp" -le "$slots" ] || continue
				profile_one "$host" "$gpu" "$tp" 1 "$out/rounds/$round"
			done
		done <"$out/.classes"
	done
	mkdir -p "$out/profiles/$MODEL"
	while read -r host gpu slots; do
		python3 "$here/bench/testbed/combine_profiles.py" "$out/profiles/$MODEL/$gpu.json" \
			"$out"/rounds/*/"$MODEL/$gpu.json"
		for tp in $TPS; do
			[ "$tp" -gt "$slots" ] || [ "${BUSY_CORES:-0}" = 1 ] || warn_busy "$gpu" "$tp"
		done
	done <"$out/.classes"
else
	while read -r host gpu slots; do
		for tp in $TPS; do
			[ "$tp" -le "$slots" ] || continue
			profile_one "$host" "$gpu" "$tp" "$REPEATS" "$out/profiles"
			[ "${BUSY_CORES:-0}" = 1 ] || warn_busy "$gpu" "$tp"
		done
	done <"$out/.classes"
fi
rm -f "$out/.classes"
stop_spinners
[ "${NETWORK:-1}" = 0 ] && exit 0
echo "profile_testbed: the links" >&2
# every pair's sizes up to 4 MiB, over links as slow as 8 Mbit/s: a testbed of five zones
# needs more than the default 300 s
nice -n -5 "$S" profile --network --cluster "$cluster" --gpus "$gpus" \
	--sizes 16384,65536,262144,1048576,4194304 --timeout 1200 -o "$out/network.json" -q
