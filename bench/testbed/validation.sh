#!/usr/bin/env bash
# Measures the validation set of our runtime on the emulated cluster: brings the testbed up,
# profiles its device classes (layers as MPI ranks on a host of each class, TP 1 and 2) and links,
# runs every plan of PLANS with `sailor run`, and writes OUT/: one validation file per plan (the
# plan plus "measured": median step time and the largest peak resident memory of a rank), and
# OUT/env/: profiles/, network.json, cluster.json and gpus.json, which is everything
#   sailor validate --model MODEL OUT --profiles OUT/env/profiles --gpus OUT/env/gpus.json \
#       --network OUT/env/network.json --cluster OUT/env/cluster.json
# needs to predict them. Raw run outputs go to OUT/env/raw/. Needs root (namespaces, tc, cgroups), mpirun, jq, python3.
#
# What is measured (run_to_validation.py): for a synchronous plan the median step time of the
# run (a median, so the first step's warm-up does not count); for a plan with islands the mean
# step time over whole rounds of island 0's H steps (the run's step events, `--log-every 1`),
# the first round left out as warm-up and the last left out when the run ends with it (it has no
# stop agreement and its fragments land after the loop): the outer steps fall on a few steps of
# a round, and the round's mean with its stalls is what `sailor simulate` predicts for islands.
#
# A description may name zones that sailor's zone list (data/network/egress_usd_per_gb.json)
# lacks (bench/islands/testbed.json's europe-west4-a): scripts/testbed is given a zone list made
# from the description itself (it reads only the names).
#
# Every plan runs ROUNDS times, one round of all plans after the other, so that a slow minute of
# the machine falls on one run of several plans rather than on every run of one; a plan's
# figure is the mean of its rounds' median step times (run_to_validation.py).
#
# SPEED_PROBE=1 also times, right before and right after each run, a short profile of each
# device class the plan uses (TP 1, the plan's micro-batch; OUT/env/speed/<run>.before and
# .after): how fast the machine was when the run ran, against when the profiles were taken.
# bench/testbed/drift_adjusted.py predicts each run again from profiles scaled to it, which
# separates the machine's drift from the model's error.
#
# TIMELINE=1 also records each run's timeline (`sailor run --timeline`, OUT/env/timelines/<run>.json)
# and, at the end, the model's for each plan (<plan>.model.json) and the two side by side
# (<plan>.compare.txt, bench/testbed/timeline_compare.py; the first round's run).
#
# usage: bench/testbed/validation.sh PLANS_DIR OUT   environment: DESC (data/testbed/geo3.json),
#        MODEL (gpt2-tiny), STEPS (10), ROUNDS (1), SEQ (the model's seq_len), MBS (1,2,4),
#        GPUS (data/testbed/gpus-cpu.json: the device classes of DESC), SPEED_PROBE (0),
#        TIMELINE (0), SAILOR (build/sailor: the binary, e.g. a copy that a rebuild leaves alone)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$here"
[ $# -eq 2 ] || { sed -n '2,40p' "$0" >&2; exit 2; }
plans=$1 out=$2
DESC=${DESC:-data/testbed/geo3.json}
STEPS=${STEPS:-10}
ROUNDS=${ROUNDS:-1}
GPUS=${GPUS:-data/testbed/gpus-cpu.json}
MODEL=${MODEL:-gpt2-tiny}
model_file=$MODEL; [ -f "$model_file" ] || model_file=data/models/$MODEL.json
SEQ=${SEQ:-$(jq -r .seq_len "$model_file")}
MBS=${MBS:-1,2,4}
S=${SAILOR:-$here/build/sailor}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
[ "$(id -u)" -eq 0 ] || { echo "validation: needs root (the testbed)" >&2; exit 1; }
[ -x "$S" ] || make -s -j2
mkdir -p "$out/env"
env=$out/env
zone_list=$(mktemp -d)
mkdir -p "$zone_list/network"
jq '[.zones[].name] | map({key: ., value: 0}) | from_entries as $z | $z | map_values($z)' "$DESC" \
	>"$zone_list/network/egress_usd_per_gb.json"
trap '[ "${KEEP_TESTBED:-0}" = 1 ] || scripts/testbed down "$DESC" --data "$zone_list" >/dev/null 2>&1 || true; rm -rf "$zone_list"' EXIT
scripts/testbed up "$DESC" -o "$env/cluster.json" --data "$zone_list" >&2
cp "$GPUS" "$env/gpus.json"
SAILOR="$S" MODEL="$MODEL" SEQ="$SEQ" MBS="$MBS" bench/testbed/profile_testbed.sh "$env/cluster.json" "$env/gpus.json" "$env"
"$S" data data/text/fsf-licenses.txt -o "$env/tokens.bin" >/dev/null
mkdir -p "$env/raw"
SPEED_PROBE=${SPEED_PROBE:-0}
TIMELINE=${TIMELINE:-0}
[ "$TIMELINE" != 1 ] || mkdir -p "$env/timelines"
speed_probe() { # plan dir: a short profile of each class the plan uses, on a host of the class
	local class host mbs
	mbs=$(jq -r .micro_batch "$1")
	for class in $(jq -r '[.stages[].replicas[].gpu] | unique | .[]' "$1"); do
		host=$(jq -r --arg c "$class" '[.hosts[] | select(.gpu == $c)][0].name' "$env/cluster.json")
		nice -n -5 timeout 300 "$S" profile --model "$MODEL" --gpu "$class" --gpus "$env/gpus.json" \
			--tp 1 --mbs "$mbs" --seq-len "$SEQ" --cluster "$env/cluster.json" --host "$host" \
			--min-sample-ms 200 --repeats 3 -o "$2" -q </dev/null ||
			echo "validation: the speed probe of $class before/after $(basename "$2") failed" >&2
	done
}
run_name() { # plan round: the raw output's name (one round: the plan's name alone, as before)
	if [ "$ROUNDS" -eq 1 ]; then echo "$1"; else echo "$1.r$2"; fi
}
for round in $(seq 1 "$ROUNDS"); do
	for p in "$plans"/*.json; do
		n=$(basename "$p" .json) r=$(run_name "$(basename "$p" .json)" "$round")
		echo "validation: running $n (round $round of $ROUNDS)" >&2
		cmd=("$S" run --model "$MODEL" --data "$env/tokens.bin" --plan "$p" --cluster "$env/cluster.json"
		     --gpus "$env/gpus.json" --seq-len "$SEQ" --steps "$STEPS" --lr 1e-3 --json --log-every 1)
		[ "$TIMELINE" != 1 ] || cmd+=(--timeline "$env/timelines/$r.json")
		[ "$SPEED_PROBE" != 1 ] || speed_probe "$p" "$env/speed/$r.before"
		# no retry here: `sailor run` itself retries an mpirun that failed to start, and logs it
		nice -n -5 timeout 600 "${cmd[@]}" >"$env/raw/$r.out" 2>"$env/raw/$r.err" || true
		[ "$SPEED_PROBE" != 1 ] || speed_probe "$p" "$env/speed/$r.after"
	done
done
for p in "$plans"/*.json; do
	n=$(basename "$p" .json)
	outs=()
	for round in $(seq 1 "$ROUNDS"); do outs+=("$env/raw/$(run_name "$n" "$round").out"); done
	python3 bench/testbed/run_to_validation.py "$p" "${outs[@]}" \
		"sailor run --plan $n.json --cluster cluster.json --gpus gpus.json --seq-len $SEQ --steps $STEPS --lr 1e-3 --json --log-every 1, $ROUNDS round(s) (testbed $(basename "$DESC"), $(date -u +%Y-%m-%d))" \
		"$out/$n.json" || echo "validation: $n did not finish (see $env/raw/$n*.err)" >&2
done
rm -f "$env/tokens.bin"
for p in "$plans"/*.json; do
	[ "$TIMELINE" = 1 ] || break
	n=$(basename "$p" .json) tl=$env/timelines
	[ -f "$tl/$(run_name "$n" 1).json" ] || continue
	"$S" simulate --model "$MODEL" --plan "$p" --profiles "$env/profiles" --gpus "$env/gpus.json" \
		--network "$env/network.json" --cluster "$env/cluster.json" --timeline "$tl/$n.model.json" \
		>/dev/null &&
	python3 bench/testbed/timeline_compare.py "$tl/$(run_name "$n" 1).json" "$tl/$n.model.json" \
		>"$tl/$n.compare.txt" || echo "validation: no timeline comparison for $n" >&2
done
"$S" validate --model "$MODEL" "$out" --profiles "$env/profiles" --gpus "$env/gpus.json" \
	--network "$env/network.json" --cluster "$env/cluster.json"
