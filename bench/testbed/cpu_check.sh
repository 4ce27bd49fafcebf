#!/usr/bin/env bash
# The runtime model's CPU against the runs' (one bring-up): brings the testbed up, profiles its
# classes' layers (profile_testbed.sh), runs every plan of PLANS_DIR ROUNDS times with `sailor
# run --json` (whose stages report cpu_s, wait_cpu_s and wait_tests per step), and prints per
# plan the measured and predicted step and, per stage, the CPU per step and the sleeping waits'
# tests of the runs against the model's (cpu_compare.py). The links are not profiled again:
# NETWORK names the network profile to predict with.
#
# usage: bench/testbed/cpu_check.sh PLANS_DIR OUT_DIR   environment: DESC, MODEL, GPUS,
#        NETWORK (a network.json of this testbed), STEPS (20), ROUNDS (1). Needs root.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$here"
[ $# -eq 2 ] || { sed -n '2,11p' "$0" >&2; exit 2; }
plans=$1 out=$2
: "${DESC:?set DESC (a testbed description)}" "${MODEL:?set MODEL}" "${NETWORK:?set NETWORK (network.json)}"
GPUS=${GPUS:-data/testbed/gpus-cpu.json} STEPS=${STEPS:-20} ROUNDS=${ROUNDS:-1}
model_file=$MODEL; [ -f "$model_file" ] || model_file=data/models/$MODEL.json
SEQ=$(jq -r .seq_len "$model_file")
S="$here/build/sailor"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
[ "$(id -u)" -eq 0 ] || { echo "cpu_check: needs root (the testbed)" >&2; exit 1; }
[ -x "$S" ] || make -s -j2
mkdir -p "$out/runs"
trap 'scripts/testbed down "$DESC" >/dev/null 2>&1 || true; rm -f "$out/tokens.bin"' EXIT
scripts/testbed up "$DESC" -o "$out/cluster.json" >&2
MODEL="$MODEL" NETWORK=0 bench/testbed/profile_testbed.sh "$out/cluster.json" "$GPUS" "$out"
"$S" data data/text/fsf-licenses.txt -o "$out/tokens.bin" >/dev/null
for round in $(seq 1 "$ROUNDS"); do
	for p in "$plans"/*.json; do
		n=$(basename "$p" .json)
		echo "cpu_check: $n (round $round of $ROUNDS)" >&2
		nice -n -5 timeout 600 "$S" run --model "$MODEL" --data "$out/tokens.bin" --plan "$p" \
			--cluster "$out/cluster.json" --gpus "$GPUS" --seq-len "$SEQ" --steps "$STEPS" \
			--lr 1e-3 --json >"$out/runs/${n%%-*}.r$round.out" 2>"$out/runs/${n%%-*}.r$round.err" </dev/null || true
	done
done
echo "| plan | measured s (runs) | predicted s | error | per stage: CPU s per step, run vs model; sleeping waits' tests per step, run vs model (the run's CPU per test) |"
echo "|---|---|---|---|---|"
for p in "$plans"/*.json; do
	n=$(basename "$p" .json)
	"$S" simulate --model "$MODEL" --plan "$p" --profiles "$out/profiles" --gpus "$GPUS" \
		--network "$NETWORK" --cluster "$out/cluster.json" --json >"$out/sim-${n%%-*}.json"
	python3 bench/testbed/cpu_compare.py "$p" "$out/sim-${n%%-*}.json" "$out"/runs/"${n%%-*}".r*.out ||
		echo "| ${n%%-*} | did not finish (see $out/runs) | | | |"
done
