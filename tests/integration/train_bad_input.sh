#!/usr/bin/env bash
# Bad input to `sailor train` and `sailor data` gets a clear error (naming the file or option and
# what to fix), the right exit status (1 failure, 2 usage), and loses nothing already saved.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/lib/common.sh
"$SAILOR" data data/text/fsf-licenses.txt -o "$work/tokens.bin" >/dev/null
head -c 100 data/text/fsf-licenses.txt > "$work/short.txt"
"$SAILOR" data "$work/short.txt" -o "$work/short.bin" >/dev/null
printf '{"layers": 2, "hidden": 30, "heads": 4, "seq_len": 16, "vocab": 256}' > "$work/bad_heads.json"
printf '{"layers": 2, "hidden": 32, "heads": 4, "seq_len": 16, "vocab": 100}' > "$work/small_vocab.json"
printf '{"layers": 2, "hidden": 32, "heads": 4, "seq_len": 16, "vocab": 256}' > "$work/other.json"
t=(train --model gpt2-tiny --steps 1 --threads 2)

expect_error_re "bad input" 1 "too short: 100 tokens make 3 windows of 32\+1 tokens, fewer than one micro-batch of 4" -- \
  "$SAILOR" "${t[@]}" --data "$work/short.bin" --micro-batch 4 --seq-len 32
expect_error_re "bad input" 1 "longer than model 'gpt2-tiny' allows \(seq_len 128\)" -- \
  "$SAILOR" "${t[@]}" --data "$work/tokens.bin" --seq-len 256
expect_error_re "bad input" 1 "hidden 30 is not divisible by heads 4" -- \
  "$SAILOR" train --model "$work/bad_heads.json" --data "$work/tokens.bin" --steps 1
expect_error_re "bad input" 2 "global batch 10 is not a multiple of micro-batch 4" -- \
  "$SAILOR" "${t[@]}" --data "$work/tokens.bin" --micro-batch 4 --global-batch 10
expect_error_re "bad input" 1 "has token [0-9]+ but the model's vocabulary is 100" -- \
  "$SAILOR" train --model "$work/small_vocab.json" --data "$work/tokens.bin" --steps 1
expect_error_re "bad input" 1 "data file '.*/missing.bin': cannot open" -- \
  "$SAILOR" "${t[@]}" --data "$work/missing.bin"
expect_error_re "bad input" 1 "bad magic: not a sailor token file" -- \
  "$SAILOR" "${t[@]}" --data data/text/fsf-licenses.txt
expect_error_re "bad input" 1 "no checkpoint in '.*/empty' to resume from" -- \
  "$SAILOR" "${t[@]}" --data "$work/tokens.bin" --ckpt-dir "$work/empty" --resume
expect_error_re "bad input" 2 "--resume needs --ckpt-dir" -- "$SAILOR" "${t[@]}" --data "$work/tokens.bin" --resume
expect_error_re "bad input" 2 "--model is required" -- "$SAILOR" train --data "$work/tokens.bin"
expect_error_re "bad input" 2 "--micro-batch: 0 is out of range: give 1 to 65536" -- "$SAILOR" "${t[@]}" --data "$work/tokens.bin" --micro-batch 0
expect_error_re "bad input" 1 "unknown model 'gpt9'" -- "$SAILOR" train --model gpt9 --data "$work/tokens.bin"

# A damaged only checkpoint: clear error, exit 1, and the file is kept (set aside), not lost.
"$SAILOR" "${t[@]}" --data "$work/tokens.bin" --micro-batch 2 --seq-len 16 --steps 2 \
  --ckpt-dir "$work/ckpt" --json > /dev/null || { echo "FAIL: could not train" >&2; exit 1; }
truncate -s 5000 "$work/ckpt/step-00000002.ckpt"
expect_error_re "bad input" 1 "step-00000002.ckpt': truncated" -- \
  "$SAILOR" "${t[@]}" --data "$work/tokens.bin" --micro-batch 2 --seq-len 16 --steps 3 \
  --ckpt-dir "$work/ckpt" --resume
[ -f "$work/ckpt/step-00000002.ckpt.damaged" ] || { echo "FAIL: damaged file lost" >&2; failures=$((failures + 1)); }
# A checkpoint of another model is refused and left in place.
"$SAILOR" "${t[@]}" --data "$work/tokens.bin" --micro-batch 2 --seq-len 16 --steps 1 \
  --ckpt-dir "$work/ckpt2" --json > /dev/null
expect_error_re "bad input" 1 "model layers is 4 there but 2 in model" -- \
  "$SAILOR" train --model "$work/other.json" --data "$work/short.bin" --micro-batch 1 \
  --seq-len 16 --steps 2 --ckpt-dir "$work/ckpt2" --resume
[ -f "$work/ckpt2/step-00000001.ckpt" ] || { echo "FAIL: other model's checkpoint lost" >&2; failures=$((failures + 1)); }

# sailor data
expect_error_re "bad input" 2 "no input file given" -- "$SAILOR" data -o "$work/x.bin"
expect_error_re "bad input" 2 "-o/--output is required" -- "$SAILOR" data data/text/README.md
expect_error_re "bad input" 2 "needs --encoder encoder.json and --merges vocab.bpe" -- \
  "$SAILOR" data data/text/README.md -o "$work/x.bin" --tokenizer gpt2
expect_error_re "bad input" 2 "--tokenizer: 'words' is not byte or gpt2" -- \
  "$SAILOR" data data/text/README.md -o "$work/x.bin" --tokenizer words
expect_error_re "bad input" 1 "input '.*/nope.txt': cannot read" -- "$SAILOR" data "$work/nope.txt" -o "$work/x.bin"
[ ! -e "$work/x.bin" ] || { echo "FAIL: a failed 'sailor data' left an output file" >&2; failures=$((failures + 1)); }
head -c 1000 "$work/tokens.bin" > "$work/tokens_cut.bin"
expect_error_re "bad input" 1 "truncated: the header promises 168831 tokens" -- "$SAILOR" data --info "$work/tokens_cut.bin"

finish
