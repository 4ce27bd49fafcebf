#!/usr/bin/env bash
# `sailor run` against single-process `sailor train`: for every plan in tests/runtime/plans/ (P 1-4,
# TP 1, 2 and 4 mixed within a stage, D up to 4, uneven layer ranges, uneven micro-batch counts,
# stages split across two zones), 10 steps on gpt2-tiny with the same seed, data and global batch
# give the same losses within 1e-5 relative, and the final checkpoints the same parameters and
# AdamW moments within 1e-5 relative norm (tests/runtime/compare_runs.py). One plan is also run with
# a vocabulary that 4 TP ranks cannot split evenly (257), two with ranks that wait asleep
# (CPU-quota devices) and one that mixes such ranks with ranks that poll. Ranks are
# oversubscribed on this machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/lib/common.sh
need_python numpy
use_mpi
tokens "$work/tokens.bin"
cat > "$work/tiny257.json" <<'JSON'
{"schema": "sailor.model/1", "name": "tiny257", "layers": 4, "hidden": 64, "heads": 4,
 "ffn_hidden": 256, "seq_len": 32, "vocab": 257}
JSON
common=(--data "$work/tokens.bin" --seq-len 32 --steps 10 --seed 11 --lr 1e-3 --warmup-steps 2
        --json)
run_extra=()  # options of `sailor run` only
reference() { # model global-batch -> losses and checkpoint of single-process training
  local dir="$work/ref-$1-$2"
  [ -d "$dir" ] && return 0
  mkdir -p "$dir"
  train_reference "$dir/losses.jsonl" --model "$1" "${common[@]}" --micro-batch 2 \
    --global-batch "$2" --ckpt-dir "$dir/ckpt"
}
check_plan() { # name model plan
  local name=$1 model=$2 plan=$3
  local G; G=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["global_batch"])' "$plan")
  reference "$model" "$G"
  local out="$work/run-$name"
  mkdir -p "$out"
  if ! timeout 120 "$SAILOR" run --plan "$plan" --model "$model" "${common[@]}" "${run_extra[@]}" \
       --ckpt-dir "$out/ckpt" > "$out/losses.jsonl" 2> "$out/stderr"; then
    echo "FAIL $name: sailor run failed"; cat "$out/stderr"; exit 1
  fi
  echo "== $name"
  "$PY" tests/runtime/compare_runs.py "$work/ref-$model-$G/losses.jsonl" "$out/losses.jsonl" \
    --ckpt "$work/ref-$model-$G/ckpt/step-00000010.ckpt" "$out/ckpt/step-00000010.ckpt" \
    || { echo "FAIL $name"; exit 1; }
}
for plan in tests/runtime/plans/*.json; do
  check_plan "$(basename "$plan" .json)" gpt2-tiny "$plan"
done
check_plan vocab257-tp4 "$work/tiny257.json" tests/runtime/plans/05-tp4.json
check_plan vocab257-pp2-dp3-tp124 "$work/tiny257.json" tests/runtime/plans/09-pp2-dp3-tp124-uneven-mb.json
# Ranks on a device type that is a CPU quota wait asleep between MPI tests (comm.h): the same
# losses, and the ranks say which wait they used. Plan 12 on the testbed's CPU classes, then plan
# 09 (TP 1, 2 and 4, uneven micro-batches) with the sleeping wait forced.
sed -e 's/"A100-40"/"cpu-fast"/; s/"V100-16"/"cpu-slow"/' tests/runtime/plans/12-pp2-dp2-uniform-tp2.json \
  > "$work/12-cpu-quota.json"
run_extra=(--gpus data/testbed/gpus-cpu.json)
check_plan cpu-quota-pp2-dp2-tp2 gpt2-tiny "$work/12-cpu-quota.json"
grep -q '"idle_wait":"sleep"' "$work/run-cpu-quota-pp2-dp2-tp2/losses.jsonl" \
  || { echo "FAIL: ranks on cpu-fast did not wait asleep"; exit 1; }
# every stage reports the CPU its ranks spent per step, what a quota device's budget pays: some,
# and (ranks that wait asleep, one thread each) no more than the step's time on a core
"$PY" - "$work/run-cpu-quota-pp2-dp2-tp2/losses.jsonl" <<'PY' || exit 1
import json, sys
end = [json.loads(l) for l in open(sys.argv[1]) if '"event":"end"' in l][0]
for s in end["stages"]:
    if not 0 < s["cpu_s"] <= 1.05 * s["step_s"]:
        sys.exit("FAIL: stage %d reports cpu_s %r for a step of %r s" % (s["stage"], s.get("cpu_s"), s["step_s"]))
    # the ranks wait asleep: they test, and what the waits spent is part of cpu_s
    if not (s["wait_tests"] > 0 and 0 <= s["wait_cpu_s"] <= s["cpu_s"] and
            0 <= s["dp_sync_cpu_s"] <= s["cpu_s"]):
        sys.exit("FAIL: stage %d reports wait_tests %r, wait_cpu_s %r, dp_sync_cpu_s %r (cpu_s %r)" % (s["stage"], s.get("wait_tests"), s.get("wait_cpu_s"), s.get("dp_sync_cpu_s"), s["cpu_s"]))
PY
run_extra=()
grep -q '"idle_wait":"poll"' "$work/run-01-single/losses.jsonl" \
  || { echo "FAIL: ranks on A100-40 did not poll"; exit 1; }
SAILOR_MPI_WAIT=sleep check_plan sleep-pp2-dp3-tp124 gpt2-tiny tests/runtime/plans/09-pp2-dp3-tp124-uneven-mb.json
grep -q '"idle_wait":"sleep"' "$work/run-sleep-pp2-dp3-tp124/losses.jsonl" \
  || { echo "FAIL: SAILOR_MPI_WAIT=sleep was not used"; exit 1; }
# A plan whose groups mix ranks that poll (A100-40) with ranks that wait asleep (cpu-slow), ZeRO-1
# on stage 0: a blocking and a non-blocking collective do not match, so the world agrees to run
# the non-blocking forms (comm.h, sl_comm_set_idle_wait); before that, this plan hung in its
# first collective.
cat > "$work/mixed-waits.json" <<'JSON'
{"schema": "sailor.plan/1", "global_batch": 8, "micro_batch": 2, "stages": [
 {"layers": [0, 3], "zero": 1, "replicas": [{"gpu": "A100-40", "zone": "us-central1-a"},
  {"gpu": "A100-40", "zone": "us-central1-a", "tp": 2}, {"gpu": "cpu-slow", "zone": "us-central1-b", "tp": 2}]},
 {"layers": [4, 5], "replicas": [{"gpu": "A100-40", "zone": "us-central1-a", "tp": 2},
  {"gpu": "A100-40", "zone": "us-central1-a"}, {"gpu": "cpu-slow", "zone": "us-central1-b"}]}],
 "microbatches_per_pipeline": [1, 2, 1]}
JSON
run_extra=(--gpus data/testbed/gpus-cpu.json)
check_plan mixed-waits-pp2-dp3-zero gpt2-tiny "$work/mixed-waits.json"
run_extra=()
echo "all plans equal single-process training"
