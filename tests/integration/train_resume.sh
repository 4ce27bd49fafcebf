#!/usr/bin/env bash
# Resume is bit-identical: 6 steps in one run versus 3 steps, then --resume to step 6, with
# gradient accumulation (2 micro-batches) and the per-epoch shuffle on, compare the per-step
# losses and gradient norms of the --json output exactly. Then the newest checkpoint is
# corrupted: --resume warns, sets it aside, continues from the previous one, and again matches.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/lib/common.sh
tokens "$work/tokens.bin"
common=(--model gpt2-tiny --data "$work/tokens.bin" --micro-batch 4 --global-batch 8
        --seq-len 32 --lr 2e-3 --warmup-steps 2 --shuffle --seed 11 --threads 2 --json)
pick() { grep '"event":"step"' | sed -E 's/.*("step":[0-9]+,"loss":[^,]+,"lr":[^,]+,"grad_norm":[^,]+).*/\1/'; }

"$SAILOR" train "${common[@]}" --steps 6 | pick > "$work/straight.txt"
"$SAILOR" train "${common[@]}" --steps 3 --lr-decay-steps 6 --ckpt-dir "$work/ckpt" | pick > "$work/resumed.txt"
[ -f "$work/ckpt/step-00000003.ckpt" ] || { echo "FAIL: no checkpoint after step 3" >&2; exit 1; }
"$SAILOR" train "${common[@]}" --steps 6 --ckpt-dir "$work/ckpt" --resume | pick >> "$work/resumed.txt"
if ! diff "$work/straight.txt" "$work/resumed.txt"; then
  echo "FAIL: losses of the resumed run differ from the uninterrupted run" >&2; exit 1
fi
[ "$(wc -l < "$work/straight.txt")" -eq 6 ] || { echo "FAIL: expected 6 step lines" >&2; exit 1; }

# Corrupt the newest checkpoint (step 6): resume falls back to step 3 and still matches.
size=$(stat -c %s "$work/ckpt/step-00000006.ckpt")
printf '\x55' | dd of="$work/ckpt/step-00000006.ckpt" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
"$SAILOR" train "${common[@]}" --steps 6 --ckpt-dir "$work/ckpt" --resume 2> "$work/err.txt" | pick > "$work/again.txt"
grep -q "checksum mismatch" "$work/err.txt" || { echo "FAIL: no checksum warning" >&2; cat "$work/err.txt" >&2; exit 1; }
[ -f "$work/ckpt/step-00000006.ckpt.damaged" ] || { echo "FAIL: damaged checkpoint not set aside" >&2; exit 1; }
if ! diff <(tail -n 3 "$work/straight.txt") "$work/again.txt"; then
  echo "FAIL: continuing from the previous checkpoint differs" >&2; exit 1
fi
echo "resume is bit-identical; a corrupt checkpoint falls back to the previous one"
