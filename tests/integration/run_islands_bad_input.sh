#!/usr/bin/env bash
# A plan's "islands" section (docs/formats.md#islands) that cannot run is refused before anything
# starts: exit 1, one line on stderr naming the field and what to fix, nothing on stdout (every
# case runs with --dry-run, which would print the ranks had the plan been accepted, and never
# starts mpirun). The ranges are docs/limits.md's. Also: `sailor simulate --cost-model sosp25` refuses an island plan.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/lib/common.sh
tokens "$work/tokens.bin"
# 4 pipelines of gpt2-tiny (4 + 12 x 4 = 52 parameter tensors)
plan_with() { # FILE ISLANDS: the 4-pipeline plan with "islands": ISLANDS
  cat > "$1" <<JSON
{"schema":"sailor.plan/1","model":"gpt2-tiny","global_batch":8,"micro_batch":2,"stages":[
 {"layers":[0,5],"replicas":[{"gpu":"A100-40","zone":"us-central1-a","count":2},
                             {"gpu":"A100-40","zone":"us-central1-b","count":2}]}],
 "islands":$2}
JSON
}
n=0
refused() { # NAME TEXT ISLANDS: sailor run --dry-run refuses the section with TEXT, one line
  local name=$1 text=$2
  n=$((n + 1))
  plan_with "$work/bad-$n.json" "$3"
  expect_error "$name" 1 "islands$text" -- \
    "$SAILOR" run --plan "$work/bad-$n.json" --data "$work/tokens.bin" --steps 8 --dry-run
  check "$name: one line" "[ \"\$(wc -l < '$work/expect.err')\" -eq 1 ]"
}
refused "a pipeline in no island" ".pipelines: pipeline 3 is in no island: add it to one" \
  '{"pipelines": [[0, 1], [2]]}'
refused "a pipeline in two islands" \
  ".pipelines[1][0]: pipeline 1 is already in island 0: put each pipeline in one island" \
  '{"pipelines": [[0, 1], [1, 2, 3]]}'
refused "a pipeline that does not exist" \
  ".pipelines[1][2]: pipeline 7 does not exist: the plan has pipelines 0 to 3" \
  '{"pipelines": [[0, 1], [2, 3, 7]]}'
refused "an empty island" \
  ".pipelines[1]: island 1 is empty: give it at least one pipeline, or leave it out" \
  '{"pipelines": [[0, 1, 2, 3], []]}'
refused "an island that is not a list" \
  ".pipelines[1]: expected island 1 as an array of pipeline numbers, got a number" \
  '{"pipelines": [[0, 1, 2], 3]}'
refused "pipeline 0 not in the first island" \
  ".pipelines: pipeline 0 is in island 1: list its island first" \
  '{"pipelines": [[2, 3], [0, 1]]}'
refused "no pipelines" ".pipelines: expected an array of islands" '{"inner_steps": 4}'
refused "inner_steps 0" ".inner_steps: inner steps per round must be a whole number from 1 to 1000000, got 0" \
  '{"pipelines": [[0, 1], [2, 3]], "inner_steps": 0}'
refused "inner_steps -3" ".inner_steps: inner steps per round must be a whole number from 1 to 1000000, got -3" \
  '{"pipelines": [[0, 1], [2, 3]], "inner_steps": -3}'
refused "inner_steps 2.5" ".inner_steps: inner steps per round must be a whole number from 1 to 1000000, got 2.5" \
  '{"pipelines": [[0, 1], [2, 3]], "inner_steps": 2.5}'
refused "inner_steps of the wrong length" \
  ".inner_steps: 3 numbers for the 2 islands of islands.pipelines: give one per island" \
  '{"pipelines": [[0, 1], [2, 3]], "inner_steps": [4, 4, 4]}'
refused "inner_steps 0 in a list" ".inner_steps[1]: inner steps per round must be a whole number from 1 to 1000000, got 0" \
  '{"pipelines": [[0, 1], [2, 3]], "inner_steps": [4, 0]}'
refused "inner_steps \"4\" in a list" ".inner_steps[0]: inner steps per round must be a whole number from 1 to 1000000, got a string" \
  '{"pipelines": [[0, 1], [2, 3]], "inner_steps": ["4", 4]}'
refused "island 0 with fewer inner steps" \
  ".inner_steps[1]: 4 inner steps, more than island 0's 2: island 0 (the one holding pipeline 0) counts the run's steps and must have the most" \
  '{"pipelines": [[0, 1], [2, 3]], "inner_steps": [2, 4]}'
refused "an unknown wire format" ".wire: unknown wire format 'fp8': choose fp32, bf16 or int8" \
  '{"pipelines": [[0, 1], [2, 3]], "wire": "fp8"}'
refused "fragments 0" ".fragments: must be a whole number from 1 to 4096, got 0" \
  '{"pipelines": [[0, 1], [2, 3]], "fragments": 0}'
refused "more fragments than tensors" \
  ".fragments: 53 fragments but model 'gpt2-tiny' has 52 parameter tensors: give at most 52" \
  '{"pipelines": [[0, 1], [2, 3]], "fragments": 53}'
refused "overlap_steps as large as the smallest H" \
  ".overlap_steps: 2 is out of range: a fragment must land before its next sync, so give 0 (no overlap) to 1" \
  '{"pipelines": [[0, 1], [2, 3]], "inner_steps": [4, 2], "overlap_steps": 2}'
refused "overlap_steps -1" ".overlap_steps: -1 is out of range" \
  '{"pipelines": [[0, 1], [2, 3]], "overlap_steps": -1}'
refused "outer_lr 0" ".outer_lr: 0 is out of range: give a number in (0, 4]" \
  '{"pipelines": [[0, 1], [2, 3]], "outer_lr": 0}'
refused "outer_lr 5" ".outer_lr: 5 is out of range: give a number in (0, 4]" \
  '{"pipelines": [[0, 1], [2, 3]], "outer_lr": 5}'
refused "outer_lr \"x\"" ".outer_lr: expected a number in (0, 4] (default 0.7), got a string" \
  '{"pipelines": [[0, 1], [2, 3]], "outer_lr": "x"}'
refused "outer_momentum 1" ".outer_momentum: 1 is out of range: give a number in [0, 1)" \
  '{"pipelines": [[0, 1], [2, 3]], "outer_momentum": 1}'
refused "outer_momentum -0.1" ".outer_momentum: -0.1 is out of range: give a number in [0, 1)" \
  '{"pipelines": [[0, 1], [2, 3]], "outer_momentum": -0.1}'
refused "merge 0" ".merge: 0 is out of range: give a number in (0, 1]" \
  '{"pipelines": [[0, 1], [2, 3]], "merge": 0}'
refused "merge 1.5" ".merge: 1.5 is out of range: give a number in (0, 1]" \
  '{"pipelines": [[0, 1], [2, 3]], "merge": 1.5}'
refused "an unknown field" ".inner_step: unknown field (allowed: pipelines, inner_steps" \
  '{"pipelines": [[0, 1], [2, 3]], "inner_step": 4}'
refused "islands not an object" \
  ': expected an object such as {"pipelines": [[0, 1], [2, 3]], "inner_steps": 50}, got an array' \
  '[[0, 1], [2, 3]]'
# the sosp25 cost model has no islands: it says so, and what to do instead
plan_with "$work/islands.json" '{"pipelines": [[0, 1], [2, 3]]}'
expect_error "simulate an island plan" 1 \
  "the sosp25 cost model has no islands (the SOSP'25 simulator models synchronous plans only): simulate it with --cost-model sailor, or remove \"islands\"" \
  -- "$SAILOR" simulate --plan "$work/islands.json" --cost-model sosp25
check "simulate an island plan under sosp25: one line" "[ \"\$(wc -l < '$work/expect.err')\" -eq 1 ]"
finish
