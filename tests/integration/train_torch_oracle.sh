#!/usr/bin/env bash
# PyTorch oracle: sailor's GPT training against torch 1.13 on a small configuration (2 blocks,
# hidden 64, 4 heads, vocab 128, sequence 16, micro-batch 2, global batch 4 so that gradient
# accumulation runs). Same initial weights (exported by sailor as safetensors), same tokens.
# Checks, within 1e-4 relative: the first micro-batch's logits, step 1's loss and every
# parameter gradient, and the losses of 10 AdamW steps with warm-up + cosine learning rate,
# weight decay and gradient clipping (tests/torch/gpt_oracle.py). Installs python3-torch through
# scripts/install-deps.sh when /usr/bin/python3 cannot import it. Exit 0 pass, 1 mismatch.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/lib/common.sh
if ! "$PY" -c 'import torch, numpy' 2>/dev/null; then
  echo "python3-torch is missing: installing it with scripts/install-deps.sh --with-torch" >&2
  scripts/install-deps.sh --with-torch
  "$PY" -c 'import torch, numpy' || { echo "FAIL: torch still cannot be imported" >&2; exit 1; }
fi
cat > "$work/model.json" <<'JSON'
{"schema": "sailor.model/1", "name": "oracle-tiny", "layers": 2, "hidden": 64, "heads": 4,
 "ffn_hidden": 256, "seq_len": 32, "vocab": 128}
JSON
tokens "$work/tokens.bin"
hp=(--micro-batch 2 --global-batch 4 --seq-len 16 --lr 1e-3 --min-lr 1e-4 --warmup-steps 3
    --lr-decay-steps 10 --weight-decay 0.1 --beta1 0.9 --beta2 0.95 --eps 1e-8 --grad-clip 1.0)
common=(--model "$work/model.json" --data "$work/tokens.bin" --seed 7 --threads 2 "${hp[@]}")
"$SAILOR" train "${common[@]}" --steps 0 --save-safetensors "$work/init.safetensors" --json >/dev/null
"$SAILOR" train "${common[@]}" --steps 10 --dump-first-step "$work/step1.safetensors" --json \
  > "$work/losses.jsonl"
"$PY" tests/torch/gpt_oracle.py --model "$work/model.json" --tokens "$work/tokens.bin" \
  --init "$work/init.safetensors" --dump "$work/step1.safetensors" --losses "$work/losses.jsonl" \
  --steps 10 "${hp[@]}"
