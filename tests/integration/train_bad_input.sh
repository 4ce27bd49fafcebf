#!/usr/bin/env bash
# Bad input to `sailor train` and `sailor data` gets a clear error (naming the file or option and
# what to fix), the right exit status (1 failure, 2 usage), and loses nothing already saved;
# with the held-out options too (--val-data, --eval-every, --val-windows; --val-fraction,
# --val-out, --seq-len of `sailor data`).
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/lib/common.sh
"$SAILOR" data data/text/fsf-licenses.txt -o "$work/tokens.bin" >/dev/null
head -c 100 data/text/fsf-licenses.txt > "$work/short.txt"
printf 'abcdefgh' > "$work/eight.txt"
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

# --val-data, --eval-every, --val-windows (src/train/heldout.h): the options go together; the
# held-out file must share the training data's tokenizer and vocabulary, fit the model and hold a
# window. mktok FILE VOCAB TOKENIZER TOKEN...: a token file written by hand.
mktok() {
  "$PY" -c 'import struct, sys; a = [int(x) for x in sys.argv[2:]]; t = a[2:]
open(sys.argv[1], "wb").write(struct.pack("<8sIIIIQ", b"SLTOKENS", 1, 2, a[0], a[1], len(t)) + struct.pack("<%dH" % len(t), *t))' "$@"
}
mktok "$work/val-other.bin" 256 0 $(seq 65 100)
mktok "$work/val-short.bin" 256 1 $(seq 65 100)
mktok "$work/val-512.bin" 512 1 $(seq 65 100)
mktok "$work/train-512.bin" 512 0 $(seq 0 199) $(seq 0 199)
mktok "$work/val-512-300.bin" 512 0 $(seq 65 99) 300
v=("${t[@]}" --data "$work/tokens.bin" --seq-len 32 --micro-batch 2)
expect_error_re "bad input" 2 "--eval-every needs --val-data FILE" -- "$SAILOR" "${v[@]}" --eval-every 2
expect_error_re "bad input" 2 "--val-data needs --eval-every K" -- "$SAILOR" "${v[@]}" --val-data "$work/tokens.bin"
expect_error_re "bad input" 2 "--val-windows needs --val-data FILE" -- "$SAILOR" "${v[@]}" --val-windows 4
expect_error_re "bad input" 2 "--val-windows: 0 is out of range" -- \
  "$SAILOR" "${v[@]}" --val-data "$work/tokens.bin" --eval-every 1 --val-windows 0
expect_error_re "bad input" 2 "--eval-every: 0 is out of range" -- \
  "$SAILOR" "${v[@]}" --val-data "$work/tokens.bin" --eval-every 0
expect_error_re "bad input" 1 "validation file '.*/val-other.bin' was written with the other tokenizer, but the training data '.*/tokens.bin' with the byte tokenizer" -- \
  "$SAILOR" "${v[@]}" --val-data "$work/val-other.bin" --eval-every 1
expect_error_re "bad input" 1 "validation file '.*/val-512.bin' has vocabulary 512, but the training data '.*/tokens.bin' has 256" -- \
  "$SAILOR" "${v[@]}" --val-data "$work/val-512.bin" --eval-every 1
expect_error_re "bad input" 1 "validation file '.*/val-512-300.bin' has token 300 but the model's vocabulary is 256" -- \
  "$SAILOR" "${t[@]}" --data "$work/train-512.bin" --seq-len 16 --micro-batch 2 --val-data "$work/val-512-300.bin" --eval-every 1
expect_error_re "bad input" 1 "validation file '.*/val-short.bin' is too short: 36 tokens make no window of 64\+1 tokens" -- \
  "$SAILOR" "${t[@]}" --data "$work/tokens.bin" --seq-len 64 --micro-batch 2 --val-data "$work/val-short.bin" --eval-every 1
expect_error_re "bad input" 1 "--val-data: data file '.*/nope.bin': cannot open" -- \
  "$SAILOR" "${v[@]}" --val-data "$work/nope.bin" --eval-every 1

# sailor data
expect_error_re "bad input" 2 "no input file given" -- "$SAILOR" data -o "$work/x.bin"
expect_error_re "bad input" 2 "-o/--output is required" -- "$SAILOR" data data/text/README.md
expect_error_re "bad input" 2 "needs --encoder encoder.json and --merges vocab.bpe" -- \
  "$SAILOR" data data/text/README.md -o "$work/x.bin" --tokenizer gpt2
expect_error_re "bad input" 2 "--tokenizer: 'words' is not byte or gpt2" -- \
  "$SAILOR" data data/text/README.md -o "$work/x.bin" --tokenizer words
expect_error_re "bad input" 1 "input '.*/nope.txt': cannot read" -- "$SAILOR" data "$work/nope.txt" -o "$work/x.bin"
[ ! -e "$work/x.bin" ] || { echo "FAIL: a failed 'sailor data' left an output file" >&2; failures=$((failures + 1)); }
d=(data data/text/fsf-licenses.txt -o "$work/split.bin")
expect_error_re "bad input" 2 "--val-fraction 0: give a fraction strictly between 0 and 1" -- "$SAILOR" "${d[@]}" --val-fraction 0
expect_error_re "bad input" 2 "--val-fraction 1: give a fraction strictly between 0 and 1" -- "$SAILOR" "${d[@]}" --val-fraction 1
expect_error_re "bad input" 2 "--val-fraction: 1.5 is out of range" -- "$SAILOR" "${d[@]}" --val-fraction 1.5
expect_error_re "bad input" 1 "--val-fraction 0.0005 leaves 84 of the 168831 tokens for validation, fewer than one window of 128\+1 tokens" -- \
  "$SAILOR" "${d[@]}" --val-fraction 0.0005
expect_error_re "bad input" 1 "the text is too short to split: its 8 tokens make fewer than two windows of 16\+1 tokens" -- \
  "$SAILOR" data "$work/eight.txt" -o "$work/split.bin" --val-fraction 0.5 --seq-len 16
expect_error_re "bad input" 2 "--val-out applies with --val-fraction F only" -- "$SAILOR" "${d[@]}" --val-out "$work/v.bin"
expect_error_re "bad input" 2 "--seq-len applies with --val-fraction F only" -- "$SAILOR" "${d[@]}" --seq-len 16
expect_error_re "bad input" 2 "--val-out '.*/split.bin' is --output too" -- "$SAILOR" "${d[@]}" --val-fraction 0.1 --val-out "$work/split.bin"
expect_error_re "bad input" 2 "--info describes files" -- "$SAILOR" data --info "$work/tokens.bin" --val-fraction 0.1
expect_error_re "bad input" 1 "cannot write token file '.*/none/v.bin'" -- "$SAILOR" "${d[@]}" --val-fraction 0.1 --val-out "$work/none/v.bin"
[ ! -e "$work/split.bin" ] || { echo "FAIL: a failed split left a training file" >&2; failures=$((failures + 1)); }
head -c 1000 "$work/tokens.bin" > "$work/tokens_cut.bin"
expect_error_re "bad input" 1 "truncated: the header promises 168831 tokens" -- "$SAILOR" data --info "$work/tokens_cut.bin"

finish
