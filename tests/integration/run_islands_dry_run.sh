#!/usr/bin/env bash
# `sailor run --dry-run` on island plans (docs/run.md#dry-run): it prints the islands, their
# inner steps, the outer optimizer, the wire, the fragments and the overlap, and the bytes one
# round's outer exchange sends between islands by link class; and that count is exact: a run of
# the plan reports "bytes_between_islands" (every rank's bytes sent over the outer groups) equal to
# (rounds of outer exchange it made, the final flush counted) x the dry run's total per round.
#
# The runtime syncs fragment f in round k only for complete rounds (k x H0 <= --steps), then
# flushes every fragment once more at the end, skipping a fragment no island trained since its
# last sync (docs/design/islands.md, "The end"). So:
#   --steps R x H0 + p, 0 < p < H0: R rounds, and the flush sends every fragment (every island
#       trained in the p steps after round R): R + 1 exchanges of every fragment;
#   --steps R x H0 with one fragment: the flush finds nothing trained since round R and sends
#       nothing: R exchanges.
# The end event's "outer_steps" (rank 0's fragment syncs applied) is checked too, so that a
# miscount cannot hide behind a coincidence of bytes.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/lib/common.sh
use_mpi
tokens "$work/tokens.bin"
run=("$SAILOR" run --data "$work/tokens.bin" --seq-len 32 --threads-per-rank 1)
# A: 1 stage, 2 islands of 2 pipelines (two pieces per lane) on two continents, int8, 2 fragments
cat > "$work/A.json" <<'JSON'
{"schema":"sailor.plan/1","model":"gpt2-tiny","global_batch":8,"micro_batch":2,"stages":[
 {"layers":[0,5],"replicas":[{"gpu":"A100-40","zone":"us-central1-a","count":2},
                             {"gpu":"A100-40","zone":"europe-west4-a","count":2}]}],
 "islands":{"pipelines":[[0,1],[2,3]],"inner_steps":4,"wire":"int8","fragments":2}}
JSON
# B: 2 stages; stage 0 TP 2 everywhere (a lane per TP rank), stage 1 TP 2 and 1 (mixed: whole
# tensors from TP rank 0); islands of 2 and 1 pipelines with H 4 and 2; bf16, 2 fragments,
# overlap 1
cat > "$work/B.json" <<'JSON'
{"schema":"sailor.plan/1","model":"gpt2-tiny","global_batch":8,"micro_batch":2,"stages":[
 {"layers":[0,2],"replicas":[{"gpu":"A100-40","zone":"us-central1-a","tp":2,"count":2},
                             {"gpu":"V100-16","zone":"us-central1-b","tp":2}]},
 {"layers":[3,5],"replicas":[{"gpu":"A100-40","zone":"us-central1-a","tp":2},
                             {"gpu":"A100-40","zone":"us-central1-a"},
                             {"gpu":"V100-16","zone":"us-central1-b"}]}],
 "microbatches_per_pipeline":[1,2,1],
 "islands":{"pipelines":[[0,1],[2]],"inner_steps":[4,2],"wire":"bf16","fragments":2,
            "overlap_steps":1}}
JSON
# C: 2 islands of one pipeline in one zone, fp32, one fragment
cat > "$work/C.json" <<'JSON'
{"schema":"sailor.plan/1","model":"gpt2-tiny","global_batch":4,"micro_batch":2,"stages":[
 {"layers":[0,5],"replicas":[{"gpu":"A100-40","zone":"us-central1-a","count":2}]}],
 "islands":{"pipelines":[[0],[1]],"inner_steps":3}}
JSON

"${run[@]}" --plan "$work/A.json" --steps 6 --dry-run >"$work/A.dry" 2>"$work/A.dry.err" ||
  { cat "$work/A.dry.err"; die "sailor run --dry-run failed on plan A"; }
check "dry run names the islands" \
  "grep -q '^islands: 2 ' '$work/A.dry' &&
   grep -q '^  island 0: pipelines 0 1 in us-central1-a; 4 inner steps a round' '$work/A.dry' &&
   grep -q '^  island 1: pipelines 2 3 in europe-west4-a; 4 inner steps a round' '$work/A.dry'"
check "dry run names lr, momentum, wire, fragments, overlap" \
  "grep -q 'outer SGD lr 0.7, Nesterov momentum 0.9; wire int8; 2 fragments; overlap 0 steps' '$work/A.dry'"
check "dry run classes the link between the islands" \
  "grep -Eq '^    across-continents +[0-9]+ ' '$work/A.dry' && grep -q 'per 1,000 tokens' '$work/A.dry'"
check "dry run starts nothing" "! grep -q '\"event\"' '$work/A.dry'"

# the shipped example (docs/run.md#islands): three islands, two of them in one region
"${run[@]}" --plan data/examples/plan-gpt2-tiny-islands.json --steps 20 --dry-run \
  >"$work/example.dry" 2>/dev/null || die "sailor run --dry-run failed on the shipped example"
check "the example's links: same-region and across-continents, adding up to the total" \
  "awk '\$1 == \"same-region\" || \$1 == \"across-continents\" { s += \$2; n++ }
       \$1 == \"total\" { t = \$2 } END { exit !(n == 2 && s == t && t > 0) }' '$work/example.dry'"

# exact NAME STEPS ROUNDS FRAGMENTS: the run's bytes are ROUNDS x the dry run's total per round
exact() {
  local name=$1 steps=$2 rounds=$3 fragments=$4
  "${run[@]}" --plan "$work/$name.json" --steps "$steps" --dry-run >"$work/$name.dry" 2>/dev/null ||
    die "sailor run --dry-run failed on plan $name"
  local per_round
  per_round=$(awk '$1 == "total" { print $2 }' "$work/$name.dry")
  [ -n "$per_round" ] || die "plan $name: the dry run prints no total"
  timeout 120 "${run[@]}" --plan "$work/$name.json" --steps "$steps" --json \
    >"$work/$name.jsonl" 2>"$work/$name.err" ||
    { tail -n 20 "$work/$name.err"; die "sailor run failed on plan $name"; }
  local got
  got=$(sed -n 's/.*"outer_steps":\([0-9]*\),"bytes_between_islands":\([0-9]*\).*/\1 \2/p' \
    "$work/$name.jsonl")
  local want="$((rounds * fragments)) $((rounds * per_round))"
  check "plan $name, $steps steps: outer steps and bytes between islands $got = $rounds x $per_round ($want)" \
    "[ '$got' = '$want' ]"
}
exact A 6 2 2   # 1 round of 4 steps + 2 steps: round 1, then the flush of both fragments
exact B 9 3 2   # 2 rounds of 4 + 1 step: rounds 1 and 2, then the flush of both fragments
exact C 6 2 1   # 2 rounds of 3, one fragment: the flush has nothing to send
finish
