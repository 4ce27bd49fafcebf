#!/usr/bin/env bash
# Hostile input (issue 13): the faults a mutation fuzzer found in the landed code, each as it was
# reported. Every case must end quickly with one message naming the field or option, the value
# and the range (or the fix), exit 1 for a file and 2 for an option, and nothing on stdout.
# (The fuzz inputs themselves are replayed by fuzz_regression.sh.)
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/lib/common.sh
[ -x "$PY" ] || skip "python3 is needed to build the inputs"
py=$PY
plan=data/examples/plan-opt350-a100-v100.json
pool=data/examples/pool-a100-v100.json

# --- command-line numbers beyond their range: exit 2, the option, the value and the range ---
expect_error_re sim-gb-2^40 2 "--global-batch: 1099511627776 is out of range: give 1 to 65536" -- \
  "$SAILOR" simulate --model OPT-350 --plan $plan --global-batch 1099511627776
expect_error_re plan-gb-2^63 2 "--global-batch: 9223372036854775807 is out of range" -- \
  "$SAILOR" plan --model OPT-350 --pool $pool --global-batch 9223372036854775807
expect_error_re plan-gb-2^64 2 "--global-batch: 18446744073709551616 is out of range" -- \
  "$SAILOR" plan --model OPT-350 --pool $pool --global-batch 18446744073709551616
expect_error_re plan-gb-2^32 2 "--global-batch: 4294967296 is out of range" -- \
  "$SAILOR" plan --model OPT-350 --pool $pool --global-batch 4294967296
expect_error_re plan-max-stages 2 "--max-stages: 65 is out of range: give 1 to 64" -- \
  "$SAILOR" plan --model OPT-350 --pool $pool --max-stages 65
expect_error_re plan-max-cost-inf 2 "--max-cost: inf is out of range" -- \
  "$SAILOR" plan --model OPT-350 --pool $pool --max-cost inf
expect_error_re train-threads 2 "--threads: 1048577 is out of range: give 1 to 256" -- \
  "$SAILOR" train --model gpt2-tiny --data /nonexistent --threads 1048577
expect_error_re train-lr-nan 2 "--lr: 'nan' is not a number" -- \
  "$SAILOR" train --model gpt2-tiny --data /nonexistent --lr nan
expect_error_re train-eps-denormal 2 "--eps: 1e-320 is out of range" -- \
  "$SAILOR" train --model gpt2-tiny --data /nonexistent --eps 1e-320
expect_error_re train-steps 2 "--steps: 99999999999999 is out of range" -- \
  "$SAILOR" train --model gpt2-tiny --data /nonexistent --steps 99999999999999

# --- a plan file's numbers: the same ranges ---
"$py" - "$plan" "$work/gb.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1])); p["global_batch"] = 2**40
json.dump(p, open(sys.argv[2], "w"))
PY
expect_error_re plan-file-gb 1 "global_batch: must be a whole number from 1 to 65536, got 1099511627776" -- \
  "$SAILOR" simulate --model OPT-350 --plan "$work/gb.json"

# --- a profile with layer "05" beside "5" and no layer 7; one with a denormal time ---
mkdir -p "$work/p1/OPT-350" "$work/p2/OPT-350"
"$py" - data/profiles/OPT-350/A100-40.json "$work/p1/OPT-350/A100-40.json" "$work/p2/OPT-350/A100-40.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
q = json.load(open(sys.argv[1]))
for mbs, tps in p.items():
    if not isinstance(tps, dict): continue
    for tp, layers in tps.items():
        layers["05"] = layers["5"]; del layers["7"]
for mbs, tps in q.items():
    if not isinstance(tps, dict): continue
    for tp, layers in tps.items():
        layers["3"][0] = 5e-324
json.dump(p, open(sys.argv[2], "w")); json.dump(q, open(sys.argv[3], "w"))
PY
expect_error_re profile-05 1 "A100-40.json'.*05: layer numbers must be" -- \
  "$SAILOR" simulate --model OPT-350 --plan $plan --profiles "$work/p1"
expect_error_re profile-denormal 1 "A100-40.json'.*3\[0\]: expected seconds: 0 \(not measured\) or 1e-12 to 1e\+06" -- \
  "$SAILOR" simulate --model OPT-350 --plan $plan --profiles "$work/p2"

# --- traces: inf, nan, decreasing timestamps; counts that add up past the limit ---
for ts in inf nan -inf 1e999; do
  printf ',Timestamp,A100-40_us-central1-a\n0,1,32\n1,%s,64\n' "$ts" >"$work/t.csv"
  expect_error_re "trace-$ts" 1 "line 3: Timestamp '$ts' is out of range" -- \
    "$SAILOR" plan --model OPT-350 --trace "$work/t.csv" --json
done
printf ',Timestamp,A100-40_us-central1-a\n0,100,32\n1,50,64\n' >"$work/t.csv"
expect_error_re trace-decreasing 1 "line 3: Timestamp 50 does not follow the previous row's 100" -- \
  "$SAILOR" plan --model OPT-350 --trace "$work/t.csv" --json
printf ',Timestamp,A100-40_us-central1-a,A100-40_us-central1-a\n0,1,600000,600000\n' >"$work/t.csv"
expect_error_re trace-sum 1 "column 4: count '600000' is not a whole number from 0 to 1000000" -- \
  "$SAILOR" plan --model OPT-350 --trace "$work/t.csv"
"$py" - "$work/pool.json" <<'PY'
import json, sys
e = {"gpu": "A100-40", "zone": "us-central1-a", "count": 1000000}
json.dump({"schema": "sailor.pool/1", "gpus": [e] * 3000}, open(sys.argv[1], "w"))
PY
expect_error_re pool-sum 1 "gpus\[1\].count: A100-40 in us-central1-a adds up to 2000000 GPUs" -- \
  "$SAILOR" plan --model OPT-350 --pool "$work/pool.json"

# --- a model of 24,000 layers (took 81 s and 19 GB before it was rejected) ---
printf '{"layers": 24000, "hidden": 1024, "heads": 16, "seq_len": 2048, "vocab": 50272}' >"$work/deep.json"
expect_error_re model-deep 1 "layers: must be a whole number from 1 to 1024, got 24000" -- \
  "$SAILOR" simulate --model "$work/deep.json" --plan $plan

# --- a token file with a token beyond its own vocabulary ---
"$SAILOR" data data/text/README.md -o "$work/tok.bin" >/dev/null
cp "$work/tok.bin" "$work/ok.bin"
"$py" - "$work/tok.bin" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
b[32 + 2 * 40] = 0x2c; b[32 + 2 * 40 + 1] = 0x01   # token 300 in a vocabulary of 256
open(sys.argv[1], "wb").write(b)
PY
expect_error_re tokens-vocab 1 "token 300 is not below the vocabulary size 256 its header declares" -- \
  "$SAILOR" train --model gpt2-tiny --data "$work/tok.bin" --steps 1 --threads 1

# --- a micro-batch of more tokens than the kernels count in an int ---
printf '{"layers": 1, "hidden": 8, "heads": 2, "seq_len": 1048576, "vocab": 256}' >"$work/long.json"
expect_error_re train-tokens 2 "micro-batch 65536 x sequence 1048576 = 68719476736 tokens, more than 16777216" -- \
  "$SAILOR" train --model "$work/long.json" --data "$work/ok.bin" --micro-batch 65536 --steps 1

# --- a checkpoint under a non-canonical name ("step-2.ckpt" would be step 2 a second time) ---
"$SAILOR" train --model gpt2-tiny --data "$work/ok.bin" --micro-batch 2 --seq-len 16 --steps 2 \
  --threads 1 --ckpt-dir "$work/ck" >/dev/null 2>&1 || failures=$((failures + 1))
mv "$work/ck/step-00000002.ckpt" "$work/ck/step-2.ckpt"
expect_error_re ckpt-name 1 "no checkpoint in '.*/ck' to resume from" -- \
  "$SAILOR" train --model gpt2-tiny --data "$work/ok.bin" --micro-batch 2 --seq-len 16 --steps 3 \
  --threads 1 --ckpt-dir "$work/ck" --resume

# --- a measured run with a denormal time ---
mkdir -p "$work/runs"
"$py" - data/validation/mit-rtx-opt350/plan_config_N2_D1.json "$work/runs/run.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1])); p["real"] = 5e-324
json.dump(p, open(sys.argv[2], "w"))
PY
expect_error_re validate-denormal 1 "real: 4.94066e-324 is out of range: give 0 \(not measured\) or 1e-12 to 1e\+06" -- \
  "$SAILOR" validate --model OPT-350 "$work/runs"

# --- a BPE vocabulary with an id of 2^31-1 (allocated 16 GiB for its decoder table) ---
printf '{"a": 2147483647}' >"$work/encoder.json"
printf '#version: 0.2\n' >"$work/vocab.bpe"
printf 'aaa' >"$work/a.txt"
expect_error_re bpe-id 1 "id 2147483647 for 1 tokens: ids must be 0 to 0" -- \
  "$SAILOR" data "$work/a.txt" -o "$work/a.bin" --tokenizer gpt2 --encoder "$work/encoder.json" \
  --merges "$work/vocab.bpe"
[ ! -e "$work/a.bin" ] || { echo "FAIL: bpe-id left a token file" >&2; failures=$((failures + 1)); }

# --- output after an error: -o into a missing folder prints nothing and leaves nothing ---
expect_error_re plan-o-missing 1 "cannot write plan '$work/none/x.json'" -- \
  "$SAILOR" plan --model OPT-350 --pool $pool -o "$work/none/x.json"
mkdir -p "$work/out-dir"
"$SAILOR" plan --model OPT-350 --pool $pool -o "$work/out-dir/x.json" >/dev/null || failures=$((failures + 1))
left=$(ls -A "$work/out-dir")
[ "$left" = "x.json" ] || { echo "FAIL: plan -o left '$left'" >&2; failures=$((failures + 1)); }

finish
