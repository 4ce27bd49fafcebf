#!/usr/bin/env bash
# `sailor control --sync islands`: the controller's planner draws the islands itself (no
# --islands template). On two regions of localhost hosts (the testbed's gpt2-tiny profiles of
# cpu-fast, its measured link), the generation's plan has islands with the planner's H, wire and
# fragments, its "outer" events reach events.jsonl, the run reaches its steps, and nothing is
# left; --sync with --islands, and with the sosp25 cost model, are usage errors.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/lib/control_setup.sh
env_dir=data/validation/testbed-geo3-gpt2tiny/env
localhost_cluster a0:cpu-fast:us-central1-a w0:cpu-fast:us-west1-b
printf '{"schema": "sailor.pool/1", "gpus": [{"gpu": "cpu-fast", "zone": "us-central1-a", "count": 2}, {"gpu": "cpu-fast", "zone": "us-west1-b", "count": 2}]}\n' >"$work/pool.json"
common=(--model gpt2-tiny --data "$work/tokens.bin" --seq-len 32 --global-batch 16
  --cluster "$work/cluster.json" --pool "$work/pool.json" --gpus "$env_dir/gpus.json"
  --profiles "$env_dir/profiles" --ckpt-dir "$work/ckpt" --run-dir "$work/run")

rc=0
"$SAILOR" control "${common[@]}" --steps 4 --sync islands --islands /dev/null >"$work/out" 2>"$work/err" || rc=$?
[ "$rc" = 2 ] && grep -q "give one of them" "$work/err" || { echo "FAIL: --sync islands with --islands: exit $rc"; cat "$work/err"; exit 1; }
rc=0
"$SAILOR" control "${common[@]}" --steps 4 --sync auto --cost-model sosp25 >"$work/out" 2>"$work/err" || rc=$?
[ "$rc" = 2 ] && grep -q "sosp25 cost model has no islands" "$work/err" || { echo "FAIL: --sync auto under sosp25: exit $rc"; cat "$work/err"; exit 1; }

"$SAILOR" control "${common[@]}" --steps 24 --ckpt-every 8 --sync islands --max-inner-steps 4 \
  >"$work/out" 2>"$work/err" &
ctl=$!
timeout 240 tail --pid="$ctl" -f /dev/null || { echo "FAIL: the controller did not finish"; cat "$work/err"; exit 1; }
wait_control 0
"$PY" - "$work/run/gen-1/plan.json" <<'PY' || { echo "FAIL: generation 1's plan"; cat "$work/run/gen-1/plan.json"; exit 1; }
import json, sys
isl = json.load(open(sys.argv[1]))["islands"]
assert len(isl["pipelines"]) == 2, isl
h = isl["inner_steps"] if isinstance(isl["inner_steps"], list) else [isl["inner_steps"]]
assert max(h) <= 4, h
PY
grep -q '"event":"outer"' "$work/run/events.jsonl" || { echo "FAIL: no outer event"; exit 1; }
last=$(tail -n 1 "$work/run/steps.jsonl" | grep -o '"step":[0-9]*' | grep -o '[0-9]*$')
[ "$last" -eq 24 ] || { echo "FAIL: the run ended at step $last, not 24"; exit 1; }
expect_no_process_left
echo "control --sync islands: the planner's island plan ran to its steps"
