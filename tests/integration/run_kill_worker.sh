#!/usr/bin/env bash
# A rank of `sailor run` killed with SIGKILL at a random step: the whole job stops within seconds,
# the launcher names the rank, its role and the step; no process of the job is left; the newest
# checkpoint is valid (`sailor train --resume` continues from it).
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/lib/common.sh
use_mpi
launcher=""
at_exit '[ -n "$launcher" ] && kill -9 "$launcher" 2>/dev/null'
tokens "$work/tokens.bin"
plan=tests/runtime/plans/06-pp2-dp2-mixed-tp-two-zones.json   # 5 ranks
"$SAILOR" run --plan "$plan" --model gpt2-tiny --data "$work/tokens.bin" --seq-len 32 \
  --steps 100000 --ckpt-dir "$work/ckpt" --ckpt-every 3 > "$work/out" 2> "$work/err" &
launcher=$!
target_step=$(( 4 + RANDOM % 6 ))
for _ in $(seq 600); do   # at most 60 s
  last=$(grep -o '^step *[0-9]*' "$work/out" | tail -n 1 | grep -o '[0-9]*$' || true)
  [ -n "$last" ] && [ "$last" -ge "$target_step" ] && break
  sleep 0.1
done
[ -n "${last:-}" ] && [ "$last" -ge "$target_step" ] || { echo "FAIL: the run did not reach step $target_step"; cat "$work/err"; exit 1; }
mpirun_pid=$(pgrep -P "$launcher" | sed -n 1p)
mapfile -t workers < <(pgrep -P "$mpirun_pid")
[ "${#workers[@]}" -eq 5 ] || { echo "FAIL: expected 5 ranks under mpirun, found ${#workers[@]}"; exit 1; }
victim=${workers[$(( RANDOM % 5 ))]}
victim_rank=$(tr '\0' '\n' < "/proc/$victim/environ" | sed -n 's/^OMPI_COMM_WORLD_RANK=//p')
echo "killing rank $victim_rank (pid $victim) after step $last"
t0=$(date +%s.%N)
kill -9 "$victim"
status=0
timeout 30 tail --pid="$launcher" -f /dev/null || { echo "FAIL: the launcher did not stop within 30 s"; exit 1; }
wait "$launcher" || status=$?
launcher=""
t1=$(date +%s.%N)
echo "job stopped $(echo "$t1 - $t0" | bc) s after the kill, exit status $status"
[ "$status" -ne 0 ] || { echo "FAIL: exit status 0 after a dead rank"; exit 1; }
cat "$work/err"
grep -q "rank $victim_rank (stage [0-9], pipeline [0-9], tp rank" "$work/err" || { echo "FAIL: the message does not name rank $victim_rank and its role"; exit 1; }
grep -q "during step [0-9]" "$work/err" || { echo "FAIL: the message does not name the step"; exit 1; }
sleep 0.5
left=$(pgrep -f "$work/tokens.bin" || true)
[ -z "$left" ] || { echo "FAIL: processes left behind: $left"; ps -fp $left; exit 1; }
# the newest checkpoint is complete and resumes
newest=$(ls "$work/ckpt"/step-*.ckpt | sort | tail -n 1)
step=$(basename "$newest" .ckpt | sed 's/step-0*//')
"$SAILOR" train --model gpt2-tiny --data "$work/tokens.bin" --seq-len 32 --micro-batch 2 \
  --global-batch 8 --threads 1 --steps $(( step + 1 )) --resume --ckpt-dir "$work/ckpt" > "$work/resume"
grep -q "resumed from '$newest' after step $step" "$work/resume" || { echo "FAIL: did not resume from $newest"; cat "$work/resume"; exit 1; }
echo "resumed from $newest"
