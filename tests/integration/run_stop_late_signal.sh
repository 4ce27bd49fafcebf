#!/usr/bin/env bash
# A stop request (SIGTERM) that reaches one rank just after a step's stop agreement, and the
# others not at all (the controller signals the ranks one by one; under load the gap is long):
# every rank still stops after the same step, the next one, with a checkpoint of it, and the job
# ends by itself with status 0. Before the fix that rank stopped alone and the others waited for
# it until a SIGKILL (issue 20). SAILOR_TEST_LATE_STOP=R:S (runner.c) sends the signal exactly then.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/lib/common.sh
use_mpi
launcher=""
at_exit '[ -n "$launcher" ] && kill -9 "$launcher" 2>/dev/null'
tokens "$work/tokens.bin"
for case in "03-pp2.json 1:5" "04-tp2.json 0:4"; do
  read -r plan hook <<<"$case"
  rm -rf "$work/ckpt"
  S=${hook#*:}
  SAILOR_TEST_LATE_STOP=$hook "$SAILOR" run --plan "tests/runtime/plans/$plan" --model gpt2-tiny \
    --data "$work/tokens.bin" --seq-len 32 --steps 100000 --ckpt-dir "$work/ckpt" --ckpt-every 100 \
    > "$work/out" 2> "$work/err" &
  launcher=$!
  timeout 60 tail --pid="$launcher" -f /dev/null || { echo "FAIL: $plan: the job did not stop within 60 s of the late SIGTERM (rank ${hook%%:*} after step $S)"; cat "$work/err"; exit 1; }
  status=0
  wait "$launcher" || status=$?
  launcher=""
  [ "$status" -eq 0 ] || { echo "FAIL: $plan: exit status $status after a stop"; cat "$work/err"; exit 1; }
  grep -q "stopped by signal 15 after step $((S + 1)) " "$work/err" || { echo "FAIL: $plan: not stopped after step $((S + 1))"; cat "$work/err"; exit 1; }
  [ -f "$work/ckpt/step-$(printf %08d $((S + 1))).ckpt" ] || { echo "FAIL: $plan: no checkpoint of step $((S + 1))"; ls "$work/ckpt"; exit 1; }
  echo "$plan: SIGTERM on rank ${hook%%:*} after step $S's agreement: every rank stopped after step $((S + 1)), checkpoint written"
done
