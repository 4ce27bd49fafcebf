#!/usr/bin/env bash
# Whether a plan's peak resident memory repeats from run to run, and whether glibc's heap is what
# moves it (bench/RESULTS.md, 2026-11-27 (8)): brings the testbed up, runs the plan RUNS times as
# glibc comes (a dynamic mmap threshold) and RUNS times under each fixed MALLOC_MMAP_THRESHOLD_ of
# THRESHOLDS (passed to every rank with mpirun -x), and prints each run's per-stage peak (VmHWM of
# the stage's largest rank, `sailor run --json`) and median step time.
#
# Why: with the non-blocking collectives OpenMPI's libnbc mallocs a scratch at every call (two
# buffers the size of the call for ZeRO-1's reduce-scatter, one for the ring all-reduce) and
# frees it after. Above glibc's mmap threshold the first one is mapped; its free raises the
# threshold, so later ones come from the heap, where a small allocation may take the front of
# the freed block before the next call and the next scratch is placed above it: the pages
# touched of both stay resident. A threshold below the scratch (mapped and unmapped every call)
# or one fixed above it tells the two apart.
#
# usage: bench/testbed/memory_modes.sh PLAN.json   environment: DESC (data/testbed/span3.json),
#        MODEL (gpt2-tiny-six), GPUS (data/testbed/gpus-cpu-span3.json), RUNS (8), STEPS (20),
#        THRESHOLDS ("4194304 8388608": bytes). Needs root.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$here"
[ $# -eq 1 ] || { sed -n '2,18p' "$0" >&2; exit 2; }
[ -f "$1" ] || { echo "memory_modes: no plan file '$1' (a sailor.plan/1 JSON file)" >&2; exit 2; }
plan=$(realpath "$1")
DESC=${DESC:-data/testbed/span3.json} MODEL=${MODEL:-gpt2-tiny-six}
GPUS=${GPUS:-data/testbed/gpus-cpu-span3.json} RUNS=${RUNS:-8} STEPS=${STEPS:-20}
THRESHOLDS=${THRESHOLDS:-4194304 8388608}
model_file=$MODEL; [ -f "$model_file" ] || model_file=data/models/$MODEL.json
SEQ=$(jq -r .seq_len "$model_file")
S="$here/build/sailor"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
[ "$(id -u)" -eq 0 ] || { echo "memory_modes: needs root (the testbed)" >&2; exit 1; }
[ -x "$S" ] || make -s -j2
work=$(mktemp -d /tmp/sailor-memory-modes-XXXXXX)
trap 'scripts/testbed down "$DESC" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
scripts/testbed up "$DESC" -o "$work/cluster.json" >/dev/null
"$S" data data/text/fsf-licenses.txt -o "$work/tokens.bin" >/dev/null
for threshold in glibc $THRESHOLDS; do
	cluster=$work/cluster.json
	if [ "$threshold" != glibc ]; then
		cluster=$work/cluster-$threshold.json
		jq --arg t "MALLOC_MMAP_THRESHOLD_=$threshold" '.launch.mpirun_args += ["-x", $t]' \
			"$work/cluster.json" >"$cluster"
	fi
	for run in $(seq 1 "$RUNS"); do
		out=$work/$threshold.$run.out
		if ! nice -n -5 timeout 600 "$S" run --model "$MODEL" --data "$work/tokens.bin" \
			--plan "$plan" --cluster "$cluster" --gpus "$GPUS" --seq-len "$SEQ" \
			--steps "$STEPS" --lr 1e-3 --json >"$out" 2>"$work/err"; then
			echo "memory_modes: run $run ($threshold) failed:" >&2
			tail -5 "$work/err" >&2
			exit 1
		fi
		jq -r --arg t "$threshold" --arg r "$run" 'select(.event == "end") |
			"mmap_threshold \($t) run \($r) peak_rss_MB_by_stage \([.stages[].peak_rss_bytes / 1e6 | . * 100 | round / 100] | join(" ")) median_step_s \(.median_step_time_s)"' "$out"
	done
done
