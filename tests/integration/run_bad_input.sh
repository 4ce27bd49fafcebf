#!/usr/bin/env bash
# `sailor run` refuses what cannot run with one clear message, exit 1 (2 for usage), nothing on
# stdout and nothing started: more ranks than the cluster's slots, no host of a replica's GPU type
# and zone, a TP group larger than its host, layers that do not match the model, a global batch
# the pipelines cannot share, mpirun missing (naming the package), an events file that cannot be
# appended to, an MPI launch of the wrong size, per-stage memory options outside their sets
# ("zero": 2, "recompute": "partial", --recompute), --eval-every without --val-data, a validation
# file of another vocabulary or shorter than one window (also when mpirun starts the ranks).
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/lib/common.sh
use_mpi
tokens "$work/tokens.bin"
run=("$SAILOR" run --data "$work/tokens.bin" --seq-len 32 --steps 2)
cat > "$work/cluster-small.json" <<'JSON'
{"schema": "sailor.cluster/1",
 "hosts": [{"name": "a", "address": "localhost", "gpu": "A100-40", "zone": "us-central1-a", "slots": 2},
           {"name": "b", "address": "localhost", "gpu": "V100-16", "zone": "us-central1-b", "slots": 1}]}
JSON
cat > "$work/cluster-novoo.json" <<'JSON'
{"schema": "sailor.cluster/1",
 "hosts": [{"name": "a", "address": "localhost", "gpu": "A100-40", "zone": "us-central1-a", "slots": 4}]}
JSON
expect_error "more ranks than slots" 1 "the plan needs 4 ranks of A100-40 in zone us-central1-a" \
  "${run[@]}" --plan tests/runtime/plans/06-pp2-dp2-mixed-tp-two-zones.json --cluster "$work/cluster-small.json"
expect_error "no host of a replica's type and zone" 1 'no host has "gpu": "V100-16"' \
  "${run[@]}" --plan tests/runtime/plans/06-pp2-dp2-mixed-tp-two-zones.json --cluster "$work/cluster-novoo.json"
expect_error "TP group larger than its host" 1 "a TP group runs on one host" \
  "${run[@]}" --plan tests/runtime/plans/05-tp4.json --cluster "$work/cluster-small.json"
expect_error "layers that do not match the model" 1 "layers" \
  "${run[@]}" --plan tests/runtime/plans/03-pp2.json --model gpt2-small
sed 's/"global_batch":8/"global_batch":6/' tests/runtime/plans/02-dp2.json > "$work/odd.json"
expect_error "a global batch the pipelines cannot share" 1 "microbatches_per_pipeline" \
  "${run[@]}" --plan "$work/odd.json"
expect_error "a missing data file" 1 "missing.bin" \
  "$SAILOR" run --data "$work/missing.bin" --plan tests/runtime/plans/02-dp2.json
expect_error "a plan file that is not JSON" 1 "$work/tokens.bin" \
  "${run[@]}" --plan "$work/tokens.bin"
expect_error "no --plan" 2 "--plan is required" "${run[@]}"
expect_error "--micro-batch against the plan" 2 "differs from the plan's micro_batch" \
  "${run[@]}" --plan tests/runtime/plans/02-dp2.json --micro-batch 4
mkdir -p "$work/bin"
for tool in "$SAILOR"; do ln -sf "$tool" "$work/bin/"; done
expect_error "mpirun missing" 1 "openmpi-bin" \
  env PATH="$work/bin" "${run[@]}" --plan tests/runtime/plans/02-dp2.json
expect_error "an events file that cannot be appended to" 1 \
  "cannot append to events file '$work/none/steps.jsonl'" \
  "${run[@]}" --plan tests/runtime/plans/02-dp2.json --events-file "$work/none/steps.jsonl"
expect_error "an MPI launch of the wrong size" 2 "this MPI job has 3 ranks, but plan" \
  timeout 60 mpirun -np 3 --oversubscribe --bind-to none "${run[@]}" --plan tests/runtime/plans/02-dp2.json
# the per-stage memory options (plan.h): values outside their sets, named by JSON path
sed 's/"count":2}]}/"count":2}],"zero":2}/' tests/runtime/plans/02-dp2.json > "$work/zero2.json"
expect_error "zero 2 in a plan" 1 'stages[0].zero: expected 0 (replicated optimizer state) or 1' \
  "${run[@]}" --plan "$work/zero2.json"
sed 's/"count":2}]}/"count":2}],"recompute":"partial"}/' tests/runtime/plans/02-dp2.json > "$work/partial.json"
expect_error "recompute partial in a plan" 1 'stages[0].recompute: expected "none", "full" or "selective"' \
  "${run[@]}" --plan "$work/partial.json"
expect_error "--recompute partial" 2 "--recompute 'partial': choose none, full or selective" \
  "${run[@]}" --plan tests/runtime/plans/02-dp2.json --recompute partial
expect_error "sailor train --recompute partial" 2 "--recompute 'partial': choose none, full or selective" \
  "$SAILOR" train --model gpt2-tiny --data "$work/tokens.bin" --recompute partial
# the held-out options (runtime/runner_eval.c): checked by the launcher before anything starts
printf 'SLTOKENS\001\000\000\000\002\000\000\000\000\002\000\000\001\000\000\000\004\000\000\000\000\000\000\000\101\000\102\000\103\000\104\000' > "$work/val-512.bin"
head -c 50 data/text/fsf-licenses.txt > "$work/short.txt"
"$SAILOR" data "$work/short.txt" -o "$work/val-short.bin" >/dev/null
expect_error "--eval-every without --val-data" 2 "--eval-every needs --val-data FILE" \
  "${run[@]}" --plan tests/runtime/plans/03-pp2.json --eval-every 2
expect_error "--val-data of another vocabulary" 1 "has vocabulary 512, but the training data '$work/tokens.bin' has 256" \
  "${run[@]}" --plan tests/runtime/plans/03-pp2.json --val-data "$work/val-512.bin" --eval-every 2
expect_error "--val-data shorter than a window" 1 "val-short.bin' is too short: 50 tokens make no window of 64+1 tokens" \
  "${run[@]}" --plan tests/runtime/plans/04-tp2.json --seq-len 64 --val-data "$work/val-short.bin" --eval-every 2
expect_error "--val-data shorter than a window, under mpirun" 1 "val-short.bin' is too short" \
  timeout 60 mpirun -np 2 --oversubscribe --bind-to none "${run[@]}" --plan tests/runtime/plans/03-pp2.json \
  --seq-len 64 --val-data "$work/val-short.bin" --eval-every 2

finish
