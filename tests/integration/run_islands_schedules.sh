#!/usr/bin/env bash
# Island schedules that once deadlocked or could (docs/design/islands.md#sync-points): unequal
# inner steps with more fragments than an island's H, overlap, partial last rounds and islands
# that make no inner step at some run steps (they wait at the round end for the others, having
# started the second phase of every exchange first). Each finishes within its timeout, makes its
# steps, and equals the same syncs made blocking
# (SAILOR_TEST_OUTER_BLOCKING=1) bit for bit. gpt2-tiny, two or three ranks, a few seconds each.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/lib/common.sh
use_mpi
tokens "$work/tokens.bin"
plan() { # name pipelines islands-json
  "$PY" - "$work/$1.json" "$2" "$3" <<'PY'
import json, sys
d = int(sys.argv[2])
p = {"schema": "sailor.plan/1", "model": "gpt2-tiny", "global_batch": 4 * d, "micro_batch": 2,
     "stages": [{"layers": [0, 5], "replicas": [{"gpu": "A100-40", "zone": "us-central1-a",
                                                "count": d}]}],
     "islands": json.loads(sys.argv[3])}
json.dump(p, open(sys.argv[1], "w"))
PY
}
steps() { grep '"event":"step"' "$1" | sed -E 's/.*("step":[0-9]+,"loss":[^,]+),.*/\1/'; }
check() { # name steps
  local name=$1 n=$2
  for mode in overlap blocking; do
    local env=()
    [ "$mode" = blocking ] && env=(SAILOR_TEST_OUTER_BLOCKING=1)
    if ! env "${env[@]}" timeout 60 "$SAILOR" run --plan "$work/$name.json" --data "$work/tokens.bin" \
        --seq-len 32 --steps "$n" --seed 5 --json > "$work/$name-$mode.jsonl" 2> "$work/$name-$mode.err"; then
      echo "FAIL $name ($mode, $n steps): did not finish"; cat "$work/$name-$mode.err"; exit 1
    fi
  done
  [ "$(steps "$work/$name-overlap.jsonl" | wc -l)" -eq "$n" ] || { echo "FAIL $name: step lines"; exit 1; }
  diff <(steps "$work/$name-overlap.jsonl") <(steps "$work/$name-blocking.jsonl") > /dev/null ||
    { echo "FAIL $name: overlapped and blocking differ"; exit 1; }
  echo "ok   $name, $n steps: $(grep -o '"outer_steps":[0-9]*' "$work/$name-overlap.jsonl")"
}
plan h42-f3 2 '{"pipelines":[[0],[1]],"inner_steps":[4,2],"fragments":3,"overlap_steps":1}'
for n in 5 8 13; do check h42-f3 "$n"; done
plan h53-f7 2 '{"pipelines":[[0],[1]],"inner_steps":[5,3],"fragments":7,"overlap_steps":2,"wire":"int8"}'
for n in 7 11; do check h53-f7 "$n"; done
plan h631 3 '{"pipelines":[[0],[1],[2]],"inner_steps":[6,3,1],"fragments":4,"overlap_steps":0,"wire":"bf16"}'
check h631 14
echo "island schedules finish and equal their blocking form"
