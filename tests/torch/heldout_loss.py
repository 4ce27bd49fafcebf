"""PyTorch reference for sailor's held-out loss (run with /usr/bin/python3, torch 1.13).

Computes, with the torch GPT of gpt_oracle.py, the mean cross-entropy of the weights in a
safetensors file (`sailor train --save-safetensors`, whose metadata names the model) over the
first N windows of a token file, cut as sailor cuts them (window w = tokens[w*S : w*S+S+1],
src/train/heldout.h), and compares it with the val_loss of sailor's {"event":"eval"} line for
that step. Exits 1 when the relative difference exceeds --tol (1e-5).

Usage: heldout_loss.py --weights W.safetensors --tokens VAL.bin --seq-len S --windows N
                       --events RUN.jsonl --step K [--tol 1e-5]
"""
import argparse
import json
import sys

import numpy as np
import torch
import torch.nn.functional as F

from gpt_oracle import GPT
from sailor_io import read_safetensors, read_tokens


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weights", required=True)
    ap.add_argument("--tokens", required=True)
    ap.add_argument("--events", required=True)
    for name in ("seq-len", "windows", "step"):
        ap.add_argument("--" + name, type=int, required=True)
    ap.add_argument("--tol", type=float, default=1e-5)
    a = ap.parse_args()
    torch.set_num_threads(1)
    weights, meta = read_safetensors(a.weights)
    cfg = json.loads(meta["sailor.model"])
    tokens, _ = read_tokens(a.tokens)
    S = a.seq_len
    n = min(a.windows, (len(tokens) - 1) // S)
    x = np.stack([tokens[w * S:w * S + S] for w in range(n)])
    y = np.stack([tokens[w * S + 1:w * S + S + 1] for w in range(n)])
    model = GPT(cfg, weights)
    with torch.no_grad():
        logits = model(torch.from_numpy(x)).double()
        ref = F.cross_entropy(logits.view(-1, logits.size(-1)),
                              torch.from_numpy(y).view(-1)).item()
    ours = None
    with open(a.events) as f:
        for line in f:
            e = json.loads(line) if line.startswith("{") else {}
            if e.get("event") == "eval" and e.get("step") == a.step:
                ours = e
    if ours is None:
        print(f"FAIL: no eval event for step {a.step} in {a.events}")
        return 1
    if ours["val_tokens"] != n * S:
        print(f"FAIL: sailor evaluated {ours['val_tokens']} tokens, the reference {n * S}")
        return 1
    err = abs(ours["val_loss"] - ref) / abs(ref)
    print(f"held-out loss after step {a.step} over {n} windows of {S}+1 tokens: sailor "
          f"{ours['val_loss']:.9f}, torch {ref:.9f}, rel err {err:.3e} (tolerance {a.tol:g})")
    return 0 if err <= a.tol else 1


if __name__ == "__main__":
    sys.exit(main())
