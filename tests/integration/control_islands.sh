#!/usr/bin/env bash
# `sailor control --islands FILE` runs island plans with the controller's guarantees: on two
# regions (hosts on localhost; the testbed's gpt2-tiny profiles of cpu-fast; a network overlay
# that makes the regions' link fast enough for the synchronous planner to put pipelines in both
# regions, which the template then groups by region), the generation's plan has islands and its
# "outer" events reach events.jsonl, /status and /metrics; a killed rank is resumed from the
# newest checkpoint (the same plan: its island state, exactly); a smaller pool re-plans to
# another island layout, which resumes from the global weights (a note says so); the run reaches
# its steps, `sailor report` names the outer steps, and no process is left.
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v curl >/dev/null || { echo "curl is missing"; exit 77; }
source tests/lib/control_setup.sh
env_dir=data/validation/testbed-geo3-gpt2tiny/env
cat > "$work/cluster.json" <<'JSON'
{"schema": "sailor.cluster/1", "hosts": [
 {"name": "a0", "address": "localhost", "gpu": "cpu-fast", "zone": "us-central1-a", "slots": 2},
 {"name": "w0", "address": "localhost", "gpu": "cpu-fast", "zone": "us-west1-b", "slots": 2}],
 "launch": {"mpirun_args": ["--mca", "mpi_yield_when_idle", "1"]}}
JSON
"$PY" - "$work/net.json" <<'PY'
import json, sys
# the testbed's measured same-zone fit of cpu-fast, for both regions and the link between them
fit = [[0.0004261129177236544, 0.00044056868857439126, 0.09391611542081879], 107784513.22103661]
zones = ["us-central1-a", "us-west1-b"]
net = {"schema": "sailor.network/1"}
for a in zones:
    net[a] = {"cpu-fast": {"1": {b: {"cpu-fast": {"1": fit}} for b in zones}}}
json.dump(net, open(sys.argv[1], "w"))
PY
pool() { # central west
  printf '{"schema": "sailor.pool/1", "gpus": [{"gpu": "cpu-fast", "zone": "us-central1-a", "count": %d}, {"gpu": "cpu-fast", "zone": "us-west1-b", "count": %d}]}\n' "$1" "$2" > "$work/pool.tmp"
  mv "$work/pool.tmp" "$work/pool.json"
}
echo '{"by": "region", "inner_steps": 4, "wire": "int8", "fragments": 2, "overlap_steps": 1}' > "$work/islands.json"
pool 2 1
"$SAILOR" control --model gpt2-tiny --data "$work/tokens.bin" --seq-len 32 --steps 60 \
  --global-batch 32 --cluster "$work/cluster.json" --pool "$work/pool.json" \
  --gpus "$env_dir/gpus.json" --profiles "$env_dir/profiles" --network "$work/net.json" \
  --islands "$work/islands.json" --ckpt-dir "$work/ckpt" --run-dir "$work/run" --ckpt-every 4 \
  --http 127.0.0.1:0 > "$work/out" 2> "$work/err" &
ctl=$!
wait_for() {  # wait_for SECONDS COMMAND...
  local t=$1; shift
  for _ in $(seq $((t * 10))); do "$@" && return 0; sleep 0.1; done
  return 1
}
step_in_gen2() { grep -q '"step"' "$work/run/gen-2/stdout.jsonl" 2>/dev/null; }
step_at_least() { local s; s=$(tail -n 1 "$work/run/steps.jsonl" 2>/dev/null | grep -o '"step":[0-9]*' | grep -o '[0-9]*$'); [ -n "$s" ] && [ "$s" -ge "$1" ]; }
wait_for 60 step_at_least 9 || { echo "FAIL: no step 9 within 60 s"; cat "$work/err"; exit 1; }
grep -q '"islands"' "$work/run/gen-1/plan.json" || { echo "FAIL: generation 1 runs no islands"; cat "$work/run/gen-1/plan.json"; exit 1; }
wait_for 20 grep -q '"event":"outer"' "$work/run/events.jsonl" || { echo "FAIL: no outer event"; exit 1; }
port=$(grep -o '"event":"http".*"port":[0-9]*' "$work/run/events.jsonl" | grep -o '[0-9]*$')
# /status and /metrics are republished every 0.25 s by the controller's loop
metrics_outer() { grep -qE '^sailor_outer_bytes_total\{link="same-continent"\} [0-9.e+]+' <<<"$(curl -sf "http://127.0.0.1:$port/metrics")"; }
status_outer() { grep -q '"outer_steps"' <<<"$(curl -sf "http://127.0.0.1:$port/status")"; }
wait_for 5 metrics_outer || { echo "FAIL: /metrics lacks the outer steps"; exit 1; }
wait_for 5 status_outer || { echo "FAIL: /status lacks the outer steps"; exit 1; }

echo "== a killed rank: the same plan resumes from the newest checkpoint"
# the generation's launcher (sailor run), its mpirun, and mpirun's children: the ranks
launcher=$(pgrep -P "$ctl" -f "sailor run" | sed -n 1p)
mpirun_pid=$(pgrep -P "$launcher" | sed -n 1p)
victim=$(pgrep -P "$mpirun_pid" | tail -1)
[ -n "$victim" ] || { echo "FAIL: no rank to kill"; exit 1; }
kill -9 "$victim"
wait_for 60 grep -q '"event":"failure"' "$work/run/events.jsonl" || { echo "FAIL: no failure event"; cat "$work/err"; exit 1; }
wait_for 60 test -f "$work/run/gen-2/plan.json" || { echo "FAIL: no second generation"; cat "$work/err"; exit 1; }
# the same plan again: the island state of the checkpoint is used (no new round)
wait_for 60 step_in_gen2 || { echo "FAIL: generation 2 made no step"; cat "$work/err"; exit 1; }
if grep -q "start a new round" "$work/run/gen-2/stderr.log"; then
  echo "FAIL: generation 2 (the same plan) did not resume the islands' own state"; exit 1
fi

echo "== a smaller pool: another island layout, from the global weights"
pool 1 1
wait_for 90 grep -q '"event":"reconfigured"' "$work/run/events.jsonl" || { echo "FAIL: no reconfiguration"; cat "$work/err"; exit 1; }
timeout 180 tail --pid="$ctl" -f /dev/null || { echo "FAIL: the controller did not finish"; exit 1; }
wait_control 0
last=$(tail -n 1 "$work/run/steps.jsonl" | grep -o '"step":[0-9]*' | grep -o '[0-9]*$')
[ "$last" -eq 60 ] || { echo "FAIL: the run ended at step $last, not 60"; exit 1; }
g=$(ls -d "$work"/run/gen-* | tail -1)
grep -q '"pipelines": \[\s*\[\s*0\s*\],\s*\[\s*1\s*\]\s*\]' <(tr -d '\n' < "$g/plan.json") ||
  { echo "FAIL: the last generation's islands are not [[0], [1]]"; cat "$g/plan.json"; exit 1; }
grep -q "start a new round" "$g/stderr.log" ||
  { echo "FAIL: the new layout's resume did not say it starts a new round"; cat "$g/stderr.log"; exit 1; }
expect_no_process_left
if command -v gnuplot >/dev/null; then
  "$SAILOR" report "$work/run" > "$work/report.txt"
  grep -q "islands: .* outer steps" "$work/report.txt" || { echo "FAIL: report names no outer steps"; cat "$work/report.txt"; exit 1; }
fi
echo "control runs island plans: outer steps reported, a killed rank resumed, re-planned to another layout"
