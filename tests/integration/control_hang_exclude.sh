#!/usr/bin/env bash
# `sailor control` when a host stops answering: a rank is frozen with SIGSTOP (its process exists
# but does nothing, as on a host that hangs). Within --hang-timeout plus the probe's second the
# controller notices the silence, asks every rank to answer (SIGUSR1), names the host whose rank
# did not, kills the generation and starts the next one from the newest checkpoint. The same host
# hanging a second time (--exclude-after 2) is left out: the next generation's cluster file lacks
# it and training goes on on the other host. A pool that offers more GPUs of its kind readmits it.
# SIGTERM then ends the run; no process is left. Loopback only; bounded by `timeout`.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/lib/control_setup.sh
cleanup() {
  [ -n "$ctl" ] && kill -9 "$ctl" 2>/dev/null
  for p in $(pgrep -f "$work" || true); do kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done
  rm -rf "$work"
}
localhost_cluster a100-0:A100-40:us-central1-a a100-1:A100-40:us-central1-a
pool() { echo "{\"schema\": \"sailor.pool/1\", \"gpus\": [{\"gpu\": \"A100-40\", \"zone\": \"us-central1-a\", \"count\": $1}]}" > "$work/pool.tmp"; mv "$work/pool.tmp" "$work/pool.json"; }
pool 2
HANG=2
timeout 150 "$SAILOR" control --model gpt2-tiny --data "$work/tokens.bin" --seq-len 32 --steps 100000 \
  --global-batch 8 --cluster "$work/cluster.json" --pool "$work/pool.json" --ckpt-dir "$work/ckpt" \
  --run-dir "$work/run" --ckpt-every 10 --hang-timeout $HANG --stop-timeout 5 --exclude-after 2 \
  > "$work/out" 2> "$work/err" &
ctl=$!
fail() { echo "FAIL: $*"; grep -v '"event":"checkpoint"' "$work/run/events.jsonl" 2>/dev/null | cut -c 1-260; tail -n 20 "$work/err"; exit 1; }
wait_for() {  # wait_for SECONDS COMMAND...
  local t=$1; shift
  for _ in $(seq $((t * 10))); do "$@" && return 0; sleep 0.1; done
  return 1
}
ev_count() { local n; n=$(grep -c "\"event\":\"$1\"" "$work/run/events.jsonl" 2>/dev/null); echo "${n:-0}"; }
at_least() { [ "$(ev_count "$1")" -ge "$2" ]; }
gen_step_at_least() {  # gen_step_at_least GEN STEPS: generation GEN has run STEPS steps
  local n; n=$(grep -c "\"generation\":$1[,}]" "$work/run/steps.jsonl" 2>/dev/null)
  [ "${n:-0}" -ge "$2" ]
}
rank_pid() {  # the pid of world rank $1 of the running generation
  for p in $(pgrep -f -- "--data $work/tokens.bin"); do
    grep -qxz "OMPI_COMM_WORLD_RANK=$1" "/proc/$p/environ" 2>/dev/null && { echo "$p"; return; }
  done
}
freeze_rank1() {  # freeze_rank1 GEN: SIGSTOP rank 1 of generation GEN once it has trained 15 steps
  wait_for 40 gen_step_at_least "$1" 15 || fail "generation $1 did not train 15 steps"
  local victim; victim=$(rank_pid 1)
  [ -n "$victim" ] || fail "no rank 1 in generation $1"
  kill -STOP "$victim"
  frozen_at=$(date +%s.%N)
  echo "generation $1: rank 1 (pid $victim) frozen with SIGSTOP"
}

# 1. a frozen rank: noticed, its host named, the generation killed, the next resumes
freeze_rank1 1
wait_for 20 at_least failure 1 || fail "no failure within 20 s of freezing a rank"
noticed=$(python3 -c "import time; print(f'{time.time() - $frozen_at:.1f}')")
f1=$(grep -m 1 '"event":"failure"' "$work/run/events.jsonl")
echo "$f1" | cut -c 1-300
grep -q '"reason":"no output (hang)"' <<<"$f1" || fail "the failure is not a hang"
host=$(echo "$f1" | grep -o '"host":"[^"]*"' | cut -d'"' -f4)
[ -n "$host" ] || fail "the hang names no host"
grep -q '"rank":1,' <<<"$f1" || fail "the hang does not name rank 1"
python3 -c "import sys; sys.exit(0 if $noticed <= $HANG + 6 else 1)" || fail "noticed after $noticed s (hang timeout $HANG s)"
echo "noticed and stopped $noticed s after the freeze (hang timeout $HANG s)"
resume=$(echo "$f1" | grep -o '"resume_step":[0-9]*' | cut -d: -f2)
wait_for 20 at_least generation_start 2 || fail "no second generation"
grep -q "\"resume_step\":$resume," <<<"$(grep '"event":"generation_start"' "$work/run/events.jsonl" | sed -n 2p)" \
  || fail "generation 2 does not resume from the newest checkpoint (step $resume)"
# and it loaded that very checkpoint: its ready line says the step it starts after (the file
# itself may be gone by now: generation 2 trains on and keeps only the newest --ckpt-keep 2)
wait_for 20 grep -qs "\"event\":\"ready\",\"step\":$resume," "$work/run/gen-2/stdout.jsonl" \
  || fail "generation 2 did not load the checkpoint of step $resume"

# 2. the same host hangs again: it is left out, and training goes on without it
freeze_rank1 2
wait_for 20 at_least host_excluded 1 || fail "host '$host' was not left out after its second hang"
grep '"event":"host_excluded"' "$work/run/events.jsonl" | grep "\"host\":\"$host\"" >/dev/null || fail "the host left out is not '$host'"
wait_for 20 at_least generation_start 3 || fail "no third generation"
grep -q "\"$host\"" "$work/run/gen-3/cluster.json" && fail "generation 3's cluster file still has '$host'"
grep -q '"name"' "$work/run/gen-3/cluster.json" || fail "generation 3's cluster file has no host"
wait_for 40 gen_step_at_least 3 5 || fail "generation 3 trains no step without '$host'"
echo "host '$host' left out; generation 3 trains on $(grep -o '"name": "[^"]*"' "$work/run/gen-3/cluster.json" | cut -d'"' -f4 | tr '\n' ' ')"

# 3. the pool offers more A100s than before: the host is back
pool 4
wait_for 20 at_least host_readmitted 1 || fail "no host_readmitted after the pool grew"
grep '"event":"host_readmitted"' "$work/run/events.jsonl" | grep "\"host\":\"$host\"" >/dev/null || fail "the host readmitted is not '$host'"

# 4. SIGTERM: the controller stops, nothing is left
kill -TERM "$ctl"
wait_control 1
expect_no_process_left
[ "$(ev_count failure)" -eq 2 ] || fail "expected 2 failures, found $(ev_count failure)"
echo "OK: 2 hangs noticed, '$host' left out and readmitted, no process left"
