#!/usr/bin/env bash
# `sailor control` killed with SIGKILL, then the same command again (issue 20, points 2 and 3):
# - while the first controller runs, a second one on the same run directory is refused, naming
#   the first's pid, and changes nothing;
# - the first is killed with SIGKILL; its generation stops by itself (with a checkpoint: its
#   launcher must outlive the pipe to the dead controller); the dead controller's lock does not
#   block the second, which waits for that generation's end (waited_for_pid);
# - the second reconciles the run directory (src/ctl/restart.h): a controller_restart event names
#   the newest checkpoint, the generations found and the steps recovered from their own files
#   (SAILOR_TEST_DROP_STEP_LINE makes the first controller miss steps 5 to 7, as a crash loses
#   the lines not yet received); generations are numbered on, the earlier ones' logs kept;
# - steps.jsonl holds every step 1..N exactly once, and the losses and final checkpoint equal an
#   uninterrupted `sailor train` within 1e-5; no process is left.
set -euo pipefail
cd "$(dirname "$0")/../.."
NEED_NUMPY=1 source tests/lib/control_setup.sh
localhost_cluster a100-0:A100-40:us-central1-a
echo '{"schema": "sailor.pool/1", "gpus": [{"gpu": "A100-40", "zone": "us-central1-a", "count": 1}]}' > "$work/pool.json"
N=120
common=(--model gpt2-tiny --data "$work/tokens.bin" --seq-len 32 --steps $N)
"$SAILOR" train "${common[@]}" --micro-batch 8 --global-batch 8 --threads 1 --json \
  --ckpt-dir "$work/ref" > "$work/ref.jsonl"
control=("$SAILOR" control "${common[@]}" --global-batch 8 --cluster "$work/cluster.json"
         --pool "$work/pool.json" --ckpt-dir "$work/ckpt" --run-dir "$work/run" --ckpt-every 10)
SAILOR_TEST_DROP_STEP_LINE=5,6,7 "${control[@]}" > "$work/out" 2> "$work/err" &
ctl=$!
step_at_least() { local s; s=$(tail -n 1 "$work/run/steps.jsonl" 2>/dev/null | grep -o '"step":[0-9]*' | grep -o '[0-9]*$'); [ -n "$s" ] && [ "$s" -ge "$1" ]; }
for _ in $(seq 600); do step_at_least 25 && break; kill -0 "$ctl" 2>/dev/null || break; sleep 0.1; done
step_at_least 25 || { echo "FAIL: no step 25 within 60 s"; cat "$work/err"; exit 1; }

# a second controller on the same directories: refused at once, naming the first
cp "$work/run/steps.jsonl" "$work/steps.before"
status=0
timeout 20 "${control[@]}" > "$work/out2" 2> "$work/err2" || status=$?
cat "$work/err2"
[ "$status" -ne 0 ] && [ "$status" -ne 124 ] || { echo "FAIL: a second controller on the run directory was not refused (status $status)"; exit 1; }
grep -q "in use by sailor control (pid $ctl)" "$work/err2" || { echo "FAIL: the refusal does not name the running controller's pid $ctl"; exit 1; }
[ ! -e "$work/run/gen-2" ] || { echo "FAIL: the refused controller started a generation"; exit 1; }

kill -9 "$ctl"
wait "$ctl" 2>/dev/null || true
first=$ctl
ctl=""
echo "killed the controller (SIGKILL) after step $(tail -n 1 "$work/run/steps.jsonl" | grep -o '"step":[0-9]*')"
# the same command again, at once: its generation may still be checkpointing
timeout 120 "${control[@]}" > "$work/out3" 2> "$work/err3" &
ctl=$!
wait_control 0
grep -v '"checkpoint"' "$work/run/events.jsonl" | cut -c 1-260
expect_no_process_left
"$PY" - "$work/run" "$N" "$first" <<'PY'
import json, os, sys
run, n, first = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
events = [json.loads(l) for l in open(f"{run}/events.jsonl")]
steps = [json.loads(l) for l in open(f"{run}/steps.jsonl")]
def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)
numbers = sorted(s["step"] for s in steps)
if numbers != list(range(1, n + 1)):
    missing = sorted(set(range(1, n + 1)) - set(numbers))
    twice = sorted({x for x in numbers if numbers.count(x) > 1})
    fail(f"steps.jsonl does not hold 1..{n} once each: missing {missing}, twice {twice}")
restarts = [e for e in events if e["event"] == "controller_restart"]
if len(restarts) != 1:
    fail(f"expected one controller_restart event, found {len(restarts)}")
r = restarts[0]
print("controller_restart:", {k: r[k] for k in r if k not in ("schema", "time")})
if r["generations"] < 1 or r["newest_checkpoint"] < 20:
    fail("controller_restart does not name the generation and checkpoint it found")
# the dead controller's generation was still stopping (launcher alive, lock held): waited for
if r.get("waited_for_pid") != first:
    fail(f"the second controller did not wait for the first's generation (waited_for_pid {r.get('waited_for_pid')}, first {first})")
recovered = sorted(s["step"] for s in steps if s.get("recovered_by") == "controller_restart")
if r["steps_recovered"] != len(recovered) or not {5, 6, 7} <= set(recovered):
    fail(f"steps recovered {recovered}, event says {r['steps_recovered']}; 5..7 expected among them")
starts = [e["generation"] for e in events if e["event"] == "generation_start"]
if starts[0] != 1 or starts[-1] <= r["generations"]:
    fail(f"generations started {starts}: the second controller must number on after {r['generations']}")
for g in range(1, r["generations"] + 1):
    if not os.path.getsize(f"{run}/gen-{g}/stdout.jsonl"):
        fail(f"gen-{g}'s log of the first controller is gone")
print(f"steps 1..{n} once each; {len(recovered)} recovered on restart ({recovered[:8]}...)")
PY
"$PY" tests/runtime/compare_runs.py "$work/ref.jsonl" "$work/run/steps.jsonl" \
  --ckpt "$work/ref/step-$(printf %08d $N).ckpt" "$work/ckpt/step-$(printf %08d $N).ckpt"
