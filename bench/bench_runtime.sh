#!/usr/bin/env bash
# Distributed runtime against single-process training, in one run on this machine: GPT-2-small
# shape at sequence 128, micro-batch 2, global batch 32 (16 micro-batches, 4096 tokens per step),
#   train  `sailor train` at 2 threads (the peer),
#   dp2    2-way data parallel, 2 ranks x 1 thread (8 micro-batches each),
#   pp2    2-stage pipeline (layers 0-9 | 10-13), 16 micro-batches, 1F1B, 2 ranks x 1 thread,
#   tp2    tensor parallel 2, 2 ranks x 1 thread.
# Reports median tokens/s over the timed steps (after BENCH_DIST_WARMUP warm-up steps), the ratio
# against train, the per-stage time breakdown the ranks measured (compute, waiting for p2p,
# data-parallel sync, optimizer), and for pp2 the measured bubble against 1F1B's (P-1)/(n+P-1).
# Never fails on speed; fails only if a run breaks. BENCH_DIST_STEPS (default 3) timed steps.
set -euo pipefail
cd "$(dirname "$0")/.."
SAILOR=${SAILOR:-./sailor}
PY=/usr/bin/python3
steps=${BENCH_DIST_STEPS:-3}
warmup=${BENCH_DIST_WARMUP:-1}
total=$((steps + warmup))
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$SAILOR" data data/text/fsf-licenses.txt -o "$work/tokens.bin" > /dev/null
common=(--model gpt2-small --seq-len 128 --data "$work/tokens.bin" --steps "$total" --json)
echo "GPT-2-small shape, seq 128, micro-batch 2, global batch 32 (16 micro-batches); $(nproc) cores;"
echo "median of $steps steps after $warmup warm-up step(s)"
"$SAILOR" train "${common[@]}" --micro-batch 2 --global-batch 32 --threads 2 > "$work/train.jsonl"
for plan in dp2 pp2 tp2; do
  "$SAILOR" run "${common[@]}" --plan "bench/runtime/$plan.json" --threads-per-rank 1 \
    > "$work/$plan.jsonl" 2> "$work/$plan.err" || { cat "$work/$plan.err"; exit 1; }
done
"$PY" - "$work" "$warmup" <<'PY'
import json, statistics, sys
work, warmup = sys.argv[1], int(sys.argv[2])
def load(name):
    steps, end = [], None
    for line in open(f"{work}/{name}.jsonl"):
        e = json.loads(line)
        if e.get("event") == "step": steps.append(e)
        if e.get("event") == "end": end = e
    timed = [s["step_time_s"] for s in steps[warmup:]] or [s["step_time_s"] for s in steps]
    return statistics.median(timed), steps, end
t_ref, ref_steps, _ = load("train")
tokens = 32 * 128
print(f"{'run':<28} {'ms/step':>9} {'tokens/s':>9} {'vs train':>9}  final loss")
print(f"{'train, 1 process x 2 thr':<28} {1e3*t_ref:9.1f} {tokens/t_ref:9.0f} {'100.0%':>9}  {ref_steps[-1]['loss']:.6f}")
labels = {"dp2": "dp2, 2 ranks x 1 thr", "pp2": "pp2, 2 ranks x 1 thr, 16 mb", "tp2": "tp2, 2 ranks x 1 thr"}
ends = {}
for name in ("dp2", "pp2", "tp2"):
    t, s, end = load(name)
    ends[name] = end
    print(f"{labels[name]:<28} {1e3*t:9.1f} {tokens/t:9.0f} {100*t_ref/t:8.1f}%  {s[-1]['loss']:.6f}")
print()
print("per-stage time per step, mean over the stage's ranks and all steps (ms)")
print(f"{'run':<5} {'stage':>5} {'compute':>9} {'p2p-wait':>9} {'dp-sync':>9} {'optimizer':>9} {'step':>9}")
for name, end in ends.items():
    for st in end["stages"]:
        print(f"{name:<5} {st['stage']:>5} {1e3*st['compute_s']:9.1f} {1e3*st['p2p_wait_s']:9.1f} "
              f"{1e3*st['dp_sync_s']:9.1f} {1e3*st['optimizer_s']:9.1f} {1e3*st['step_s']:9.1f}")
P, n = 2, 16
formula = (P - 1) / (n + P - 1)
print()
print(f"pp2 bubble: 1F1B formula (P-1)/(n+P-1) = {100*formula:.1f}% of the step;")
for st in ends["pp2"]["stages"]:
    print(f"  stage {st['stage']}: waiting for p2p {100*st['p2p_wait_s']/st['step_s']:.1f}% of its step "
          f"(compute {100*st['compute_s']/st['step_s']:.1f}%, optimizer {100*st['optimizer_s']/st['step_s']:.1f}%)")
PY
