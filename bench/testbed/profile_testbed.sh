#!/usr/bin/env bash
# Profiles what the simulator needs to predict `sailor run` on an emulated cluster that is up:
# the layers of MODEL on one host of each device class (TP 1 and, where the host has two slots,
# TP 2, as MPI ranks placed as `sailor run` places them) and the links between the hosts.
# Used by loop.sh and validation.sh.
#
# usage: bench/testbed/profile_testbed.sh CLUSTER.json GPUS.json OUT_DIR
#        writes OUT_DIR/profiles/<MODEL>/<class>.json and OUT_DIR/network.json;
#        environment: MODEL (gpt2-tiny), SEQ (the model's seq_len), MBS (1,2,4), TPS ("1 2": the
#        TP degrees, each where the host has the slots), NETWORK (1; 0: the layers only, no
#        OUT_DIR/network.json)
set -euo pipefail
[ $# -eq 3 ] || { sed -n '2,11p' "$0" >&2; exit 2; }
cluster=$1 gpus=$2 out=$3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
S="$here/build/sailor"
MODEL=${MODEL:-gpt2-tiny} MBS=${MBS:-1,2,4} TPS=${TPS:-1 2}
model_file=$MODEL; [ -f "$model_file" ] || model_file=$here/data/models/$MODEL.json
SEQ=${SEQ:-$(jq -r .seq_len "$model_file")}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# the host of each class with the most slots, so that TP 2 is measured wherever a host can hold it
jq -r '.hosts | group_by(.gpu)[] | max_by(.slots) | "\(.name) \(.gpu) \(.slots)"' "$cluster" |
while read -r host gpu slots; do
	for tp in $TPS; do
		[ "$tp" -le "$slots" ] || continue
		# a sample of at least 50 ms of the device's CPU (its quota's bursts; 200 ms of wall
		# at the least) and 7 repeats: on a tenth of a core this narrowed how far two
		# bring-ups' profiles were apart (median 6.6 -> 4.6 %, max 26 -> 16 %; bench/RESULTS.md)
		cores=$(jq -r --arg g "$gpu" '[.gpus[] | select(.name == $g) | .cpu_quota.cores // 1][0] // 1' "$gpus")
		sample_ms=$(awk -v c="$cores" 'BEGIN { m = 50 / c; if (m < 200) m = 200; printf "%d", m }')
		echo "profile_testbed: $gpu (host $host) at TP $tp, samples of $sample_ms ms" >&2
		# stdin from /dev/null: mpirun would otherwise read the rest of this loop's input
		nice -n -5 "$S" profile --model "$MODEL" --gpu "$gpu" --gpus "$gpus" --tp "$tp" \
			--mbs "$MBS" --seq-len "$SEQ" --cluster "$cluster" --host "$host" \
			--min-sample-ms "$sample_ms" --repeats 7 \
			-o "$out/profiles" -q </dev/null
		# what ran beside the ranks moves their times (shared caches and cores): say so
		jq -r --argjson tp "$tp" --arg g "$gpu" --slurpfile cat "$gpus" '
		  ([$cat[0].gpus[] | select(.name == $g) | .cpu_quota.cores // 1][0] * $tp) as $own |
		  .source.entries | to_entries[] | select(.key | endswith("tp \($tp)")) |
		  select(.value.machine_busy_cores != null and .value.machine_busy_cores > $own + 0.25) |
		  "profile_testbed: warning: \($g) \(.key): the machine was busy on \(.value.machine_busy_cores * 100 | round / 100) cores against \($own) of the ranks: background load; these times may not repeat"' \
		  "$out/profiles/$MODEL/$gpu.json" >&2 || true
	done
done
[ "${NETWORK:-1}" = 0 ] && exit 0
echo "profile_testbed: the links" >&2
# every pair's sizes up to 4 MiB, over links as slow as 8 Mbit/s: a testbed of five zones
# needs more than the default 300 s
nice -n -5 "$S" profile --network --cluster "$cluster" --gpus "$gpus" \
	--sizes 16384,65536,262144,1048576,4194304 --timeout 1200 -o "$out/network.json" -q
