#!/usr/bin/env bash
# What the per-stage memory options (issue 12) save and cost, in one run on this machine: the
# same plan (2 stages x 2 pipelines, TP 1, 1F1B, so stage 0 holds 2 micro-batches in flight) on
# a wider GPT shape (BENCH_MEM_HIDDEN, default 512, 8 heads, 4 blocks, byte vocabulary) at
# sequence 256, run four ways:
#   none       every activation of every micro-batch in flight, whole AdamW moments per rank,
#   recompute  "recompute": "full" on both stages,
#   zero       "zero": 1 on both stages,
#   both       both options.
# Prints per stage the peak RSS of its ranks (the largest over the stage's ranks, as the runtime
# measures it: getrusage's ru_maxrss, src/train/progress.c) and the median step time after the
# warm-up, with ratios against `none`, which runs in the same command. Never fails on speed or
# memory; fails only if a run breaks. BENCH_MEM_STEPS (default 3) timed steps after
# BENCH_MEM_WARMUP (default 1); BENCH_MEM_MICRO (4) sequences per micro-batch, BENCH_MEM_NMB (4)
# micro-batches per pipeline.
set -euo pipefail
cd "$(dirname "$0")/.."
SAILOR=${SAILOR:-./sailor}
PY=/usr/bin/python3
steps=${BENCH_MEM_STEPS:-3}
warmup=${BENCH_MEM_WARMUP:-1}
hidden=${BENCH_MEM_HIDDEN:-512}
micro=${BENCH_MEM_MICRO:-4}
nmb=${BENCH_MEM_NMB:-4}
total=$((steps + warmup))
global=$((micro * nmb * 2))
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$SAILOR" data data/text/fsf-licenses.txt -o "$work/tokens.bin" > /dev/null
cat > "$work/model.json" <<JSON
{"schema": "sailor.model/1", "name": "wide-$hidden", "layers": 4, "hidden": $hidden, "heads": 8,
 "ffn_hidden": $((4 * hidden)), "seq_len": 256, "vocab": 256}
JSON
for variant in none recompute zero both; do
  case $variant in
    none) extra='' ;;
    recompute) extra=', "recompute": "full"' ;;
    zero) extra=', "zero": 1' ;;
    both) extra=', "recompute": "full", "zero": 1' ;;
  esac
  cat > "$work/$variant.json" <<JSON
{"schema": "sailor.plan/1", "global_batch": $global, "micro_batch": $micro, "stages": [
 {"layers": [0, 2], "replicas": [{"gpu": "A100-40", "zone": "us-central1-a", "count": 2}]$extra},
 {"layers": [3, 5], "replicas": [{"gpu": "A100-40", "zone": "us-central1-a", "count": 2}]$extra}]}
JSON
done
echo "model wide-$hidden: 4 blocks, hidden $hidden, 8 heads, seq 256; plan 2 stages x 2 pipelines,"
echo "micro-batch $micro, $nmb micro-batches per pipeline; $(nproc) cores; median of $steps steps after $warmup warm-up"
for variant in none recompute zero both; do
  "$SAILOR" run --model "$work/model.json" --data "$work/tokens.bin" --seq-len 256 \
    --steps "$total" --json --plan "$work/$variant.json" --threads-per-rank 1 \
    > "$work/$variant.jsonl" 2> "$work/$variant.err" || { cat "$work/$variant.err"; exit 1; }
done
"$PY" - "$work" "$warmup" <<'PY'
import json, statistics, sys
work, warmup = sys.argv[1], int(sys.argv[2])
rows = {}
for name in ["none", "recompute", "zero", "both"]:
    steps, end = [], None
    for line in open(f"{work}/{name}.jsonl"):
        e = json.loads(line)
        if e.get("event") == "step": steps.append(e["step_time_s"])
        if e.get("event") == "end": end = e
    timed = steps[warmup:] or steps
    rows[name] = (statistics.median(timed), [s["peak_rss_bytes"] / 2**20 for s in end["stages"]],
                  end["final_loss"])
base_t, base_rss, base_loss = rows["none"]
print(f"{'options':<10} {'stage 0 RSS MiB':>16} {'stage 1 RSS MiB':>16} {'step s':>8} {'step ratio':>11}  final loss")
for name, (t, rss, loss) in rows.items():
    cells = "".join(f"{r:>9.1f} ({r / b:4.2f})" for r, b in zip(rss, base_rss))
    print(f"{name:<10} {cells} {t:>8.2f} {t / base_t:>11.2f}  {loss:.6f}")
PY
