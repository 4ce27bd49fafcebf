#!/usr/bin/env bash
# `sailor control` with a pool file: GET /status and /metrics answer while it trains; replacing
# the pool file with a larger pool re-plans and reconfigures (event "reconfigured", first step
# under the new plan); SIGTERM makes the generation checkpoint the step it stopped at, the
# controller exits 1 and leaves no process; `sailor report` draws the run (PNG and SVG).
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v curl >/dev/null || { echo "curl is missing"; exit 77; }
source tests/lib/control_setup.sh
localhost_cluster a100-0:A100-40:us-central1-a
pool() { echo "{\"schema\": \"sailor.pool/1\", \"gpus\": [{\"gpu\": \"A100-40\", \"zone\": \"us-central1-a\", \"count\": $1}]}" > "$work/pool.tmp"; mv "$work/pool.tmp" "$work/pool.json"; }
pool 1
"$SAILOR" control --model gpt2-tiny --data "$work/tokens.bin" --seq-len 32 --steps 100000 \
  --global-batch 8 --cluster "$work/cluster.json" --pool "$work/pool.json" --ckpt-dir "$work/ckpt" \
  --run-dir "$work/run" --ckpt-every 10 --http 127.0.0.1:0 > "$work/out" 2> "$work/err" &
ctl=$!
wait_for() {  # wait_for SECONDS COMMAND...
  local t=$1; shift
  for _ in $(seq $((t * 10))); do "$@" && return 0; sleep 0.1; done
  return 1
}
step_at_least() { local s; s=$(tail -n 1 "$work/run/steps.jsonl" 2>/dev/null | grep -o '"step":[0-9]*' | grep -o '[0-9]*$'); [ -n "$s" ] && [ "$s" -ge "$1" ]; }
wait_for 30 step_at_least 20 || { echo "FAIL: no step 20 within 30 s"; cat "$work/err"; exit 1; }
port=$(grep -o '"event":"http".*"port":[0-9]*' "$work/run/events.jsonl" | grep -o '[0-9]*$')
curl -sf "http://127.0.0.1:$port/status" > "$work/status.json"
sed -n 1,30p "$work/status.json"
grep -q '"schema": "sailor.control.status/1"' "$work/status.json" || { echo "FAIL: /status lacks its schema"; exit 1; }
grep -q '"generation": 1' "$work/status.json" || { echo "FAIL: /status does not say generation 1"; exit 1; }
grep -q '"measured_it_s"' "$work/status.json" && grep -q '"usd_spent"' "$work/status.json" || { echo "FAIL: /status lacks it/s or dollars"; exit 1; }
curl -sf "http://127.0.0.1:$port/metrics" > "$work/metrics.txt"
grep -E '^sailor_step [0-9]+' "$work/metrics.txt" && grep -q '^# TYPE sailor_spent_usd_total counter' "$work/metrics.txt" \
  && grep -q '^sailor_pool_gpus{gpu="A100-40",zone="us-central1-a"} 1' "$work/metrics.txt" || { echo "FAIL: /metrics"; cat "$work/metrics.txt"; exit 1; }
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/nope")
[ "$code" = 404 ] || { echo "FAIL: /nope answered $code, not 404"; exit 1; }
# a larger pool: the planner picks tp 2 on two GPUs
pool 2
wait_for 40 grep -q '"event":"reconfigured"' "$work/run/events.jsonl" || { echo "FAIL: no reconfiguration after the pool file changed"; cat "$work/err"; exit 1; }
grep '"event":"reconfigured"' "$work/run/events.jsonl"
# /status is republished every 0.25 s by the controller's loop, the event log written at once
status_gen2() { grep -q '"generation": 2' <<<"$(curl -sf "http://127.0.0.1:$port/status")"; }
wait_for 5 status_gen2 || { echo "FAIL: /status does not show generation 2"; exit 1; }
kill -TERM "$ctl"
timeout 40 tail --pid="$ctl" -f /dev/null || { echo "FAIL: the controller did not stop within 40 s of SIGTERM"; exit 1; }
wait_control 1
grep -q "stopped by signal 15" "$work/err" || { echo "FAIL: no 'stopped by signal' message"; cat "$work/err"; exit 1; }
last=$(tail -n 1 "$work/run/steps.jsonl" | grep -o '"step":[0-9]*' | grep -o '[0-9]*$')
[ -f "$work/ckpt/step-$(printf %08d "$last").ckpt" ] || { echo "FAIL: no checkpoint of the last step $last"; ls "$work/ckpt"; exit 1; }
expect_no_process_left
if command -v gnuplot >/dev/null; then
  "$SAILOR" report "$work/run"
  [ "$(head -c 4 "$work/run/report.png" | tail -c 3)" = PNG ] || { echo "FAIL: report.png is not a PNG"; exit 1; }
  "$SAILOR" report -o "$work/run/report.svg" "$work/run" >/dev/null
  grep -q '<svg' "$work/run/report.svg" || { echo "FAIL: report.svg is not SVG"; exit 1; }
else
  echo "gnuplot is missing: report not checked (scripts/install-deps.sh installs gnuplot-nox)"
fi
