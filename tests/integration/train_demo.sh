#!/usr/bin/env bash
# The README demo, shortened: build a token file from the shipped English text with the byte
# tokenizer, train gpt2-tiny for 40 steps, and check that the loss goes down by at least 1.5
# nats (from ln 256 = 5.55). Also checks the human progress lines, the JSON lines' fields, the
# options given after the input file, `sailor data --info`, and the safetensors export.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/lib/common.sh
"$SAILOR" data data/text/fsf-licenses.txt -o "$work/text.bin" > "$work/data.txt"
grep -q "168831 tokens" "$work/data.txt"
"$SAILOR" data --info "$work/text.bin" > "$work/info.txt"
grep -q "168831 tokens, 2 bytes each, vocabulary 256, tokenizer byte" "$work/info.txt"
"$SAILOR" train --model gpt2-tiny --data "$work/text.bin" --micro-batch 8 --global-batch 16 \
  --seq-len 64 --steps 40 --lr 2e-3 --warmup-steps 5 --threads 2 --json \
  --save-safetensors "$work/w.safetensors" > "$work/run.jsonl"
steps=$(grep -c '"event":"step"' "$work/run.jsonl")
complete=$(grep '"event":"step"' "$work/run.jsonl" | grep '"step":' | grep '"loss":' | grep '"lr":' |
  grep '"grad_norm":' | grep '"step_time_s":' | grep -c '"tokens_per_s":')
[ "$steps" -eq 40 ] && [ "$complete" -eq 40 ] || { echo "FAIL: step lines incomplete" >&2; exit 1; }
first=$(grep '"step":1,' "$work/run.jsonl" | sed -E 's/.*"loss":([0-9.]+).*/\1/')
last=$(grep '"step":40,' "$work/run.jsonl" | sed -E 's/.*"loss":([0-9.]+).*/\1/')
echo "loss $first -> $last"
awk -v a="$first" -v b="$last" 'BEGIN { exit !(a > 5.3 && b < a - 1.5) }' || {
  echo "FAIL: the loss did not go down enough" >&2; exit 1; }
grep -q '"event":"end"' "$work/run.jsonl"
[ -s "$work/w.safetensors" ]
"$SAILOR" train --model gpt2-tiny --data "$work/text.bin" --micro-batch 2 --seq-len 16 \
  --steps 2 --threads 1 > "$work/human.txt"
grep -qE '^step +2/2 \| loss [0-9.]+ \| lr [0-9.e+-]+ \| grad norm [0-9.]+ \| +[0-9.]+ ms/step \| +[0-9]+ tokens/s$' "$work/human.txt"
echo "demo: loss goes down"
