#!/usr/bin/env bash
# `sailor simulate` and `sailor validate` from the command line: the README example, JSON output,
# and every bad input of the issue: exit 1 (2 for usage errors), one message on stderr naming the
# file and the field, nothing on stdout.
set -u
cd "$(dirname "$0")/../.."
source tests/lib/common.sh
tmp=$work

# run NAME EXPECTED_RC STDERR_PATTERN... -- ARGS
expect() {
  local name=$1 want=$2; shift 2
  local patterns=()
  while [ "$1" != "--" ]; do patterns+=("$1"); shift; done
  shift
  "$SAILOR" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ "$rc" -eq "$want" ] || fail "$name: exit $rc, expected $want ($(head -c 300 "$tmp/err"))"
  if [ "$want" -ne 0 ]; then
    [ ! -s "$tmp/out" ] || fail "$name: printed on stdout: $(head -c 200 "$tmp/out")"
    [ "$(wc -l <"$tmp/err")" -le 2 ] || fail "$name: more than one message: $(cat "$tmp/err")"
  fi
  for p in "${patterns[@]}"; do
    grep -qF -- "$p" "$tmp/err" "$tmp/out" || fail "$name: output lacks '$p': $(head -c 400 "$tmp/err")"
  done
}

plan=data/examples/plan-opt350-a100-v100.json
expect readme 0 "iteration time" "throughput" "peak memory" "cost per iteration" "egress" -- simulate --model OPT-350 --plan "$plan"
expect plan-names-model 0 "model OPT-350" -- simulate --plan "$plan"
expect json 0 '"schema": "sailor.simulation/1"' '"iteration_time_s"' '"throughput_it_s"' '"peak_memory_bytes"' '"fits_memory"' '"cost_usd_per_iter"' '"egress_cost_usd_per_iter"' '"stages"' -- simulate --model OPT-350 --plan "$plan" --json
expect sosp25 0 "cost model sosp25" -- simulate --model OPT-350 --plan "$plan" --cost-model sosp25
expect global-batch 0 "global batch 512" -- simulate --model OPT-350 --plan "$plan" --global-batch 512
expect sosp25-file 0 "4 stages x 4 pipelines" -- simulate --model OPT-350 --plan data/validation/clariden-gh200-opt350/plan_config_N16_D4.json
expect validate 0 "iteration time" "peak memory" "plan_config_N16_D4.json" -- validate --model OPT-350 data/validation/clariden-gh200-opt350
expect validate-json 0 '"schema": "sailor.validation/1"' '"mean_abs"' -- validate --model OPT-350 data/validation/clariden-gh200-opt350 --json --cost-model sosp25
# --profiles: the SOSP'25 simulator's own profile overlay reproduces the figures its README quotes
# for that simulator on these runs (8.9% time, 5.9% memory); the planner profile gives 16.0%
"$SAILOR" validate --model OPT-350 --cost-model sosp25 --profiles data/profiles-sosp25-simulator \
  data/validation/clariden-gh200-opt350 --json >"$tmp/v.json" || fail "validate --profiles: exit $?"
python3 - "$tmp/v.json" <<'PY' || fail "validate --profiles: not the SOSP'25 simulator's figures"
import json, sys
v = json.load(open(sys.argv[1]))
t, m = v["summary"]["time"]["mean_abs"], v["summary"]["memory"]["mean_abs"]
assert v["profiles_overlay"] == "data/profiles-sosp25-simulator", v["profiles_overlay"]
assert abs(t - 0.089) < 0.0005 and abs(m - 0.059) < 0.0005, (t, m)
PY
expect validate-gptneo 0 "11 measured runs" -- validate --model GPT-Neo-2.7 data/validation/clariden-gh200-gptneo27
expect validate-rtx 0 "10 measured runs" "1 plan files without a measured real and max_mem" -- validate --model OPT-350 data/validation/mit-rtx-opt350
expect validate-rtx-tp8 0 "3 measured runs" -- validate --model OPT-350 --cost-model sosp25 data/validation/mit-rtx-opt350-tp8
expect profiles-sim 0 "profiles data/profiles-sosp25-simulator" -- simulate --model OPT-350 --plan data/validation/clariden-gh200-opt350/plan_config_N2_D2.json --profiles data/profiles-sosp25-simulator
mkdir -p "$tmp/ov/OPT-350" "$tmp/ov-typo/OPT-350" "$tmp/ov-bad/OPT-350" "$tmp/ov-empty/OPT-350" "$tmp/ov-other"
cp data/profiles-sosp25-simulator/OPT-350/GH-96.json "$tmp/ov-typo/OPT-350/GH96.json"
printf '{"1": {' >"$tmp/ov-bad/OPT-350/GH-96.json"
expect profiles-missing 1 "$tmp/ov-none" "not a folder" -- validate --model OPT-350 --profiles "$tmp/ov-none" data/validation/clariden-gh200-opt350
expect profiles-no-model 1 "no profile of OPT-350" -- simulate --model OPT-350 --plan "$plan" --profiles "$tmp/ov-other"
expect profiles-typo 1 "GH96.json" "not named after a GPU type" -- simulate --model OPT-350 --plan "$plan" --profiles "$tmp/ov-typo"
expect profiles-malformed 1 "$tmp/ov-bad/OPT-350/GH-96.json" -- simulate --model OPT-350 --plan "$plan" --profiles "$tmp/ov-bad"
expect profiles-empty 1 "is empty" -- plan --model OPT-350 --pool data/examples/pool-a100-v100.json --profiles "$tmp/ov-empty"
expect network-not-a-network-file 1 "--network 'data/gpus.json': schema: expected \"sailor.network/1\"" -- simulate --plan "$plan" --network data/gpus.json
expect cluster-not-a-cluster-file 1 "cluster file 'data/gpus.json': schema" -- simulate --plan "$plan" --cluster data/gpus.json
expect profiles-file-model 1 "has no profile of gpt2-tiny" -- simulate --model data/models/gpt2-tiny.json --plan "$plan" --profiles data/profiles-sosp25-simulator
expect help 0 "--cost-model" -- simulate --help

# usage errors: exit 2
expect no-plan 2 "--plan FILE is required" -- simulate --model OPT-350
expect zero-batch-option 2 "--global-batch" -- simulate --model OPT-350 --plan "$plan" --global-batch 0
expect negative-batch-option 2 "--global-batch" -- simulate --model OPT-350 --plan "$plan" --global-batch -8
expect bad-cost-model 2 "unknown cost model 'fast'" -- simulate --model OPT-350 --plan "$plan" --cost-model fast
expect unknown-option 2 "unknown option" -- simulate --model OPT-350 --plan "$plan" --frobnicate
expect no-model 2 "--model is required" -- simulate --plan data/validation/clariden-gh200-opt350/plan_config_N16_D4.json
expect validate-no-dir 2 "folder" -- validate --model OPT-350

# bad input: exit 1, the file and the field named
good_stage1='{"layers": [13, 25], "replicas": [{"gpu": "A100-40", "zone": "us-central1-a", "tp": 2, "count": 2}]}'
mk() { printf '%s\n' "$2" >"$tmp/$1.json"; echo "$tmp/$1.json"; }
f=$(mk malformed '{"schema": "sailor.plan/1", "micro_batch": 2, "stages": [')
expect malformed 1 "$f" "line" -- simulate --model OPT-350 --plan "$f"
expect missing-file 1 "$tmp/nope.json" "cannot read" -- simulate --model OPT-350 --plan "$tmp/nope.json"
expect unknown-model 1 "unknown model 'GPT-17'" -- simulate --model GPT-17 --plan "$plan"
f=$(mk gpu '{"schema": "sailor.plan/1", "micro_batch": 2, "stages": [{"layers": [0, 12], "replicas": [{"gpu": "B200", "zone": "us-central1-a", "tp": 2, "count": 2}]}, '"$good_stage1"']}')
expect unknown-gpu 1 "$f" "stages[0].replicas[0].gpu: unknown GPU type 'B200'" -- simulate --model OPT-350 --plan "$f"
# a zone of no cloud's list: the message names the nearest (europe-west4-a is one of GCP's)
f=$(mk zone '{"schema": "sailor.plan/1", "micro_batch": 2, "stages": [{"layers": [0, 12], "replicas": [{"gpu": "A100-40", "zone": "europe-west4-z", "tp": 2, "count": 2}]}, '"$good_stage1"']}')
expect unknown-zone 1 "$f" "stages[0].replicas[0].zone: unknown zone 'europe-west4-z' (nearest: europe-west4-a, europe-west4-b, europe-west4-c" -- simulate --model OPT-350 --plan "$f"
f=$(mk profile '{"schema": "sailor.plan/1", "micro_batch": 32, "stages": [{"layers": [0, 12], "replicas": [{"gpu": "A100-40", "zone": "us-central1-a", "tp": 2, "count": 2}]}, '"$good_stage1"']}')
expect missing-profile-entry 1 "profiles/OPT-350/A100-40.json" "no entry for mbs 32 tp 2" "$f" -- simulate --model OPT-350 --plan "$f"
# a device type with no profile and no shipped times, at a size the tables could hold: the
# profile is what is missing, and the message says how to make one
f=$(mk unprofiled '{"schema": "sailor.plan/1", "micro_batch": 2, "stages": [{"layers": [0, 5], "replicas": [{"gpu": "cpu-fast", "zone": "us-central1-a"}]}]}')
expect unprofiled-type 1 "$f" "no layer times for cpu-fast at mbs 2 tp 1: no profile of it for model 'gpt2-tiny'" "sailor profile --model gpt2-tiny --gpu cpu-fast --mbs 2 --tp 1" -- simulate --model gpt2-tiny --plan "$f" --gpus data/testbed/gpus-cpu.json
f=$(mk cover '{"schema": "sailor.plan/1", "micro_batch": 2, "stages": [{"layers": [0, 11], "replicas": [{"gpu": "A100-40", "zone": "us-central1-a", "tp": 2, "count": 2}]}, '"$good_stage1"']}')
expect bad-coverage 1 "$f" "stages[1].layers: starts at layer 13 but layer 12 is in no stage" -- simulate --model OPT-350 --plan "$f"
f=$(mk overlap '{"schema": "sailor.plan/1", "micro_batch": 2, "stages": [{"layers": [0, 14], "replicas": [{"gpu": "A100-40", "zone": "us-central1-a", "tp": 2, "count": 2}]}, '"$good_stage1"']}')
expect overlap 1 "$f" "stages[1].layers: starts at layer 13, already in the previous stage" -- simulate --model OPT-350 --plan "$f"
f=$(mk empty '{"schema": "sailor.plan/1", "micro_batch": 2, "stages": [{"layers": [0, 12], "replicas": []}, '"$good_stage1"']}')
expect empty-stage 1 "$f" "stages[0].replicas: the stage has no replicas" -- simulate --model OPT-350 --plan "$f"
f=$(mk tp '{"schema": "sailor.plan/1", "micro_batch": 2, "stages": [{"layers": [0, 12], "replicas": [{"gpu": "A100-40", "zone": "us-central1-a", "tp": 8, "count": 2}]}, '"$good_stage1"']}')
expect tp-too-large 1 "$f" "replicas[0].tp: TP degree 8 is larger than a A100-40 node (4 GPUs)" -- simulate --model OPT-350 --plan "$f"
f=$(mk zero-mbs '{"schema": "sailor.plan/1", "micro_batch": 0, "stages": [{"layers": [0, 12], "replicas": [{"gpu": "A100-40", "zone": "us-central1-a", "tp": 2, "count": 2}]}, '"$good_stage1"']}')
expect zero-micro-batch 1 "$f" "micro_batch: must be a whole number from 1" -- simulate --model OPT-350 --plan "$f"
f=$(mk neg-gb '{"schema": "sailor.plan/1", "global_batch": -1024, "micro_batch": 2, "stages": [{"layers": [0, 12], "replicas": [{"gpu": "A100-40", "zone": "us-central1-a", "tp": 2, "count": 2}]}, '"$good_stage1"']}')
expect negative-global-batch 1 "$f" "global_batch: must be a whole number from 1 to 65536, got -1024" -- simulate --model OPT-350 --plan "$f"
f=$(mk wrong-model '{"schema": "sailor.plan/1", "model": "GPT-Neo-2.7", "micro_batch": 2, "stages": [{"layers": [0, 25], "replicas": [{"gpu": "A100-40", "zone": "us-central1-a", "tp": 2}]}]}')
expect model-mismatch 1 "$f" "the plan is for 'GPT-Neo-2.7' but --model is 'OPT-350'" -- simulate --model OPT-350 --plan "$f"
f=$(mk bad-model '{"layers": 2, "hidden": 10, "heads": 3, "seq_len": 8, "vocab": 16}')
expect bad-model-file 1 "$f" "not divisible by heads" -- simulate --model "$f" --plan "$plan"
expect validate-missing 1 "$tmp/none" "cannot read" -- validate --model OPT-350 "$tmp/none"
mkdir -p "$tmp/runs" && cp "$plan" "$tmp/runs/"
expect validate-no-runs 1 "no measured runs" -- validate --model OPT-350 "$tmp/runs"

# --- memory options (README "Plan format"): accepted where they change nothing, costing
# exactly the same; the sosp25 cost model refuses those that apply ---
noop_stages='[{"layers": [0, 0], "recompute": "full", "zero": 1, "replicas": [{"gpu": "A100-40", "zone": "us-central1-a", "tp": 2}]}, {"layers": [1, 25], "zero": 1, "replicas": [{"gpu": "A100-40", "zone": "us-central1-a", "tp": 4}]}]'
plain_stages='[{"layers": [0, 0], "replicas": [{"gpu": "A100-40", "zone": "us-central1-a", "tp": 2}]}, {"layers": [1, 25], "replicas": [{"gpu": "A100-40", "zone": "us-central1-a", "tp": 4}]}]'
f=$(mk noop '{"schema": "sailor.plan/1", "global_batch": 64, "micro_batch": 2, "stages": '"$noop_stages"'}')
g=$(mk plain '{"schema": "sailor.plan/1", "global_batch": 64, "micro_batch": 2, "stages": '"$plain_stages"'}')
expect noop-options 0 "[recompute full (no effect: no transformer block in the stage), ZeRO-1 (no effect: one replica)]" "[ZeRO-1 (no effect: one replica)]" -- simulate --model OPT-350 --plan "$f"
"$SAILOR" simulate --model OPT-350 --plan "$f" | sed -n '/^time per iteration/,$p' >"$tmp/noop.txt"
"$SAILOR" simulate --model OPT-350 --plan "$g" | sed -n '/^time per iteration/,$p' >"$tmp/plain.txt"
cmp -s "$tmp/noop.txt" "$tmp/plain.txt" || fail "noop-options: figures differ from the plan without options"
expect noop-options-sosp25 0 "cost model sosp25" -- simulate --model OPT-350 --plan "$f" --cost-model sosp25
expect noop-options-json 0 '"recompute": "full"' '"recompute_applies": false' '"zero_applies": false' -- simulate --model OPT-350 --plan "$f" --json
zero_stages='[{"layers": [0, 12], "replicas": [{"gpu": "A100-40", "zone": "us-central1-a", "tp": 2, "count": 2}]}, {"layers": [13, 25], "recompute": "selective", "zero": 1, "replicas": [{"gpu": "A100-40", "zone": "us-central1-a", "tp": 2, "count": 2}]}]'
f=$(mk options '{"schema": "sailor.plan/1", "micro_batch": 2, "stages": '"$zero_stages"'}')
expect options-sailor 0 "[recompute selective, ZeRO-1]" -- simulate --model OPT-350 --plan "$f"
expect options-sosp25 1 "$f" "stages[1].recompute selective: the sosp25 cost model has no activation recomputation or ZeRO-1" "--cost-model sailor" -- simulate --model OPT-350 --plan "$f" --cost-model sosp25
f=$(mk bad-recompute '{"schema": "sailor.plan/1", "micro_batch": 2, "stages": [{"layers": [0, 25], "recompute": "partial", "replicas": [{"gpu": "A100-40", "zone": "us-central1-a", "tp": 2}]}]}')
expect bad-recompute 1 "$f" "stages[0].recompute" -- simulate --model OPT-350 --plan "$f"
f=$(mk bad-zero '{"schema": "sailor.plan/1", "micro_batch": 2, "stages": [{"layers": [0, 25], "zero": 3, "replicas": [{"gpu": "A100-40", "zone": "us-central1-a", "tp": 2}]}]}')
expect bad-zero 1 "$f" "stages[0].zero" -- simulate --model OPT-350 --plan "$f"

finish
