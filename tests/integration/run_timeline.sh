#!/usr/bin/env bash
# Timelines (docs/formats.md#timeline): `sailor run --timeline` records every rank's instructions
# and phases, `sailor simulate --timeline` writes the runtime model's step in the same format,
# and bench/testbed/timeline_compare.py sets the two side by side. Checked: the file is the
# format (schema, one named process per rank); each rank has exactly the spans of its schedule
# (a forward and a backward per micro-batch of its pipeline per step, a receive per message, the
# step's four phases) in time order without overlap, with CPU that is no more than its wall time
# (one thread); the model's file has the same spans for its one step; bad input (a folder that
# does not exist, a plan the runtime model does not time, a file that is not a timeline) gets one
# clear error and starts nothing.
set -u
cd "$(dirname "$0")/../.."
source tests/lib/common.sh
use_mpi
tokens "$work/tokens.bin"

# 2 stages x 2 pipelines of uneven micro-batch counts (3 and 1) on the testbed's CPU classes: the
# run needs no testbed (every rank on this host), the model uses geo3's profiles
plan=$work/plan.json
cat >"$plan" <<'JSON'
{"schema": "sailor.plan/1", "model": "gpt2-tiny", "global_batch": 8, "micro_batch": 2,
 "microbatches_per_pipeline": [3, 1],
 "stages": [
  {"layers": [0, 2], "replicas": [{"gpu": "cpu-fast", "zone": "us-central1-a", "tp": 1, "count": 1},
                                  {"gpu": "cpu-fast", "zone": "us-central1-a", "tp": 1, "count": 1}]},
  {"layers": [3, 5], "replicas": [{"gpu": "cpu-slow", "zone": "us-central1-b", "tp": 1, "count": 1},
                                  {"gpu": "cpu-slow", "zone": "us-central1-b", "tp": 1, "count": 1}]}]}
JSON
set_dir=data/validation/testbed-geo3-gpt2tiny
steps=3
timeout 120 "$SAILOR" run --plan "$plan" --data "$work/tokens.bin" --gpus data/testbed/gpus-cpu.json \
  --seq-len 32 --steps $steps --json --timeline "$work/run.json" >"$work/run.out" 2>"$work/run.err" \
  || die "sailor run --timeline failed: $(tail -n 5 "$work/run.err")"
"$SAILOR" simulate --plan "$plan" --profiles "$set_dir/env/profiles" --gpus "$set_dir/env/gpus.json" \
  --network "$set_dir/env/network.json" --timeline "$work/sim.json" >"$work/sim.out" 2>"$work/sim.err" \
  || die "sailor simulate --timeline failed: $(cat "$work/sim.err")"

# the spans each rank must have: ranks 0, 1 are stage 0 of pipelines 0, 1; ranks 2, 3 stage 1
if "$PY" - "$work/run.json" "$work/sim.json" $steps <<'PY'
import json, sys
from collections import Counter
micro = {0: 3, 1: 1, 2: 3, 3: 1}
def spans(path, source, steps):
    doc = json.load(open(path))
    bad = []
    if doc.get("schema") != "sailor.timeline/1" or doc.get("source") != source:
        bad.append("%s: schema %r source %r" % (path, doc.get("schema"), doc.get("source")))
    if doc.get("world_size") != 4 or doc.get("spans_dropped") != 0:
        bad.append("%s: world_size %r spans_dropped %r" % (path, doc.get("world_size"), doc.get("spans_dropped")))
    names = {e["pid"]: e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M"}
    if sorted(names) != [0, 1, 2, 3] or not names[2].startswith("rank 2: stage 1 pipeline 0 tp 0/1, cpu-slow"):
        bad.append("%s: process names %r" % (path, names))
    for r in range(4):
        mine = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["pid"] == r]
        n, first = micro[r], r < 2
        for step in steps:
            got = Counter(e["name"] for e in mine if e["args"]["step"] == step)
            want = {"forward": n, "backward": n, "grad-sync": 1, "loss-and-norm": 1, "update": 1,
                    ("send-activation" if first else "recv-activation"): n,
                    ("recv-gradient" if first else "send-gradient"): n}
            for k, v in want.items():
                if got[k] != v:
                    bad.append("%s rank %d step %d: %d %s spans, want %d" % (path, r, step, got[k], k, v))
            extra = set(got) - set(want) - {"wait-sends"}
            if extra:
                bad.append("%s rank %d step %d: unexpected spans %s" % (path, r, step, extra))
        # in time order, none inside another; CPU, over all the rank's spans, within their wall
        # time (one training thread; MPI's own threads may run a little beside a short span)
        end = -1.0
        for e in mine:
            if e["ts"] < end - 0.01 or e["dur"] < 0 or e["args"].get("cpu_us", 0) < 0:
                bad.append("%s rank %d: %s at %.3f us (%.3f us, CPU %r) starts before the span before it ended (%.3f)" % (path, r, e["name"], e["ts"], e["dur"], e["args"].get("cpu_us"), end))
                break
            end = e["ts"] + e["dur"]
        cpu, wall = (sum(e["args"].get("cpu_us", 0) for e in mine), sum(e["dur"] for e in mine))
        if not 0 < cpu <= wall * 1.05 + 1000:
            bad.append("%s rank %d: %.1f us CPU in spans of %.1f us" % (path, r, cpu, wall))
        mbs = sorted(e["args"]["microbatch"] for e in mine if e["name"] == "backward" and e["args"]["step"] == steps[0])
        if mbs != list(range(n)):
            bad.append("%s rank %d: backward micro-batches %r" % (path, r, mbs))
    return bad
steps = int(sys.argv[3])
bad = spans(sys.argv[1], "run", range(1, steps + 1)) + spans(sys.argv[2], "simulate", [1])
for b in bad[:10]:
    print("   ", b)
sys.exit(1 if bad else 0)
PY
then
  echo "ok   timeline spans: every rank's schedule, in order, in the run ($steps steps) and the model"
else
  fail "timeline spans"
fi

# the comparison: one line per kind of span and rank; refuses files that are not timelines
"$PY" bench/testbed/timeline_compare.py "$work/run.json" "$work/sim.json" >"$work/cmp.out" 2>&1 \
  || fail "timeline_compare.py: $(cat "$work/cmp.out")"
check "compare names the step and every rank" \
  "grep -q '^plan .*: step .* ms run (median of steps 2-3)' '$work/cmp.out' && [ \$(grep -c '^rank [0-3]: stage' '$work/cmp.out') -eq 4 ] && grep -q '^  backward ' '$work/cmp.out'"
expect_error "compare: a simulation output is not a timeline" 1 "is not a timeline (schema sailor.timeline/1)" \
  -- "$PY" bench/testbed/timeline_compare.py "$work/run.json" "$set_dir/env/gpus.json"
expect_error "compare: run and model swapped" 1 "expected one of \`sailor run\`" \
  -- "$PY" bench/testbed/timeline_compare.py "$work/sim.json" "$work/run.json"

# bad input: nothing runs, nothing is written
expect_error "run: timeline into a missing folder" 1 "cannot write timeline '$work/no/such/t.json'" \
  -- "$SAILOR" run --plan "$plan" --data "$work/tokens.bin" --gpus data/testbed/gpus-cpu.json \
     --seq-len 32 --steps 1 --timeline "$work/no/such/t.json"
expect_error "simulate: a plan the runtime model does not time" 1 "is not modelled as our runtime" \
  -- "$SAILOR" simulate --plan data/examples/plan-opt350-a100-v100.json --timeline "$work/x.json"
check "simulate wrote nothing for it" "[ ! -e '$work/x.json' ]"
finish
