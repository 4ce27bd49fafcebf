#!/usr/bin/env bash
# Step lines lost on the way from rank 0 to the controller are recovered from the generation's
# own file (`sailor run --events-file`, src/ctl/steps_file.h). The controller's test hook
# SAILOR_TEST_DROP_STEP_LINE makes it ignore the pipe's line of step 3, of every step that
# arrives after it asked a generation to stop for re-planning (the lines the real fault lost),
# and of the last step N (which decides whether the job is complete). A pool change (1 -> 2
# GPUs) re-plans once. Then: steps.jsonl holds every step 1..N exactly once, each with the loss
# rank 0 printed, and the losses and final weights equal an uninterrupted `sailor train` within
# 1e-5 (tests/runtime/compare_runs.py); the event log has a steps_recovered event for both
# generations (the first one's includes the step it stopped and checkpointed at) and ends with
# "done"; no process of the run is left.
set -euo pipefail
cd "$(dirname "$0")/../.."
NEED_NUMPY=1 source tests/lib/control_setup.sh
localhost_cluster a100-0:A100-40:us-central1-a
pool() { echo "{\"schema\": \"sailor.pool/1\", \"gpus\": [{\"gpu\": \"A100-40\", \"zone\": \"us-central1-a\", \"count\": $1}]}" > "$work/pool.tmp"; mv "$work/pool.tmp" "$work/pool.json"; }
pool 1
N=100
common=(--model gpt2-tiny --data "$work/tokens.bin" --seq-len 32 --steps $N)
"$SAILOR" train "${common[@]}" --micro-batch 8 --global-batch 8 --threads 1 --json \
  --ckpt-dir "$work/ref" > "$work/ref.jsonl"

SAILOR_TEST_DROP_STEP_LINE=3,stop,$N timeout 100 "$SAILOR" control "${common[@]}" \
  --global-batch 8 --cluster "$work/cluster.json" --pool "$work/pool.json" \
  --ckpt-dir "$work/ckpt" --run-dir "$work/run" --ckpt-every 10 > "$work/out" 2> "$work/err" &
ctl=$!
# the pool grows once generation 1 has passed step 3 (and long before it can finish)
step_at_least() { local s; s=$(tail -n 1 "$work/run/steps.jsonl" 2>/dev/null | grep -o '"step":[0-9]*' | grep -o '[0-9]*$'); [ -n "$s" ] && [ "$s" -ge "$1" ]; }
for _ in $(seq 600); do step_at_least 4 && break; kill -0 "$ctl" 2>/dev/null || break; sleep 0.1; done
step_at_least 4 || { echo "FAIL: no step 4 within 60 s"; cat "$work/err"; exit 1; }
pool 2
wait_control 0
grep -v '"checkpoint"' "$work/run/events.jsonl" | cut -c 1-220
expect_no_process_left
grep -q 'SAILOR_TEST_DROP_STEP_LINE: ignoring the line of step 3 ' "$work/err" || { echo "FAIL: the hook did not drop step 3's line"; cat "$work/err"; exit 1; }
"$PY" - "$work/run" "$N" <<'PY'
import json, sys
run, n = sys.argv[1], int(sys.argv[2])
events = [json.loads(l) for l in open(f"{run}/events.jsonl")]
steps = [json.loads(l) for l in open(f"{run}/steps.jsonl")]
def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)
# every step exactly once, as in a run without lost lines (no step is repeated: the only stop is
# for re-planning, and the next generation resumes at the step it checkpointed)
numbers = sorted(s["step"] for s in steps)
if numbers != list(range(1, n + 1)):
    fail(f"steps.jsonl has steps {numbers}, not 1..{n} once each")
# each with the loss rank 0 printed (its generation's stdout, which the hook does not touch)
for s in steps:
    printed = [json.loads(l) for l in open(f"{run}/gen-{s['generation']}/stdout.jsonl")
               if l.startswith('{"event":"step"')]
    loss = {p["step"]: p["loss"] for p in printed}
    if loss.get(s["step"]) != s["loss"]:
        fail(f"step {s['step']}: loss {s['loss']!r}, rank 0 printed {loss.get(s['step'])!r}")
starts = {e["generation"]: e for e in events if e["event"] == "generation_start"}
if sorted(starts) != [1, 2]:
    fail(f"expected generations 1 and 2, got {sorted(starts)}")
stopped_at = starts[2]["resume_step"]
recovered = {e["generation"]: e["steps"] for e in events if e["event"] == "steps_recovered"}
print(f"recovered: {recovered}; generation 1 stopped at step {stopped_at}")
if 3 not in recovered.get(1, []) or stopped_at not in recovered.get(1, []):
    fail(f"generation 1 should recover steps 3 and {stopped_at}, recovered {recovered.get(1)}")
if recovered.get(2, [])[-1:] != [n]:
    fail(f"generation 2 should recover step {n}, recovered {recovered.get(2)}")
for g, nums in recovered.items():
    flagged = sorted(s["step"] for s in steps if s["generation"] == g and s.get("recovered"))
    if flagged != sorted(nums):
        fail(f"generation {g}: lines marked recovered {flagged}, event says {nums}")
ends = [e for e in events if e["event"] == "generation_end"]
if [e["outcome"] for e in ends] != ["stopped", "complete"] or ends[-1]["step"] != n:
    fail(f"generation ends: {[(e['outcome'], e['step']) for e in ends]}")
if events[-1]["event"] != "done" or events[-1]["step"] != n:
    fail(f"the log does not end with done at step {n}: {events[-1]}")
print(f"steps.jsonl: steps 1..{n} once each, losses as printed")
PY
"$PY" tests/runtime/compare_runs.py "$work/ref.jsonl" "$work/run/steps.jsonl" \
  --ckpt "$work/ref/step-$(printf %08d $N).ckpt" "$work/ckpt/step-$(printf %08d $N).ckpt"
