#!/usr/bin/env python3
"""Compares two sailor training runs: their per-step losses (JSON lines of `sailor train --json` /
`sailor run --json`) and the tensors of their final checkpoints (values and AdamW moments).

Usage: compare_runs.py LOSSES_A LOSSES_B [--ckpt CKPT_A CKPT_B] [--rtol 1e-5]
Exit 0 when every loss agrees within rtol relative and, for values and each AdamW moment, the
norm of the difference over the whole model is within rtol of the model's norm; 1 otherwise, naming the first step or tensor that differs."""
import argparse
import json
import struct
import sys

import numpy as np


def losses(path):
    out = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                event = json.loads(line)
                if event.get("event") == "step":
                    out[event["step"]] = event["loss"]
    return out


def read_checkpoint(path):
    """Whole tensors of a sailor checkpoint (format: src/train/checkpoint.h)."""
    with open(path, "rb") as f:
        blob = f.read()
    if blob[:8] != b"SLCKPT\0\0" or blob[-8:] != b"SLCKEND\0":
        raise ValueError(f"{path}: not a complete sailor checkpoint")
    (meta_len,) = struct.unpack_from("<Q", blob, 16)
    meta = json.loads(blob[24:24 + meta_len].decode())
    start = 24 + meta_len
    tensors = {}
    for name, t in meta["tensors"].items():
        n = int(np.prod(t["shape"]))
        base = start + t["offset"]
        arrays = np.frombuffer(blob, dtype="<f4", count=3 * n, offset=base).reshape(3, n)
        tensors[name] = arrays
    return meta, tensors


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--ckpt", nargs=2)
    ap.add_argument("--rtol", type=float, default=1e-5)
    args = ap.parse_args()
    la, lb = losses(args.a), losses(args.b)
    if not la or sorted(la) != sorted(lb):
        print(f"FAIL: steps differ: {sorted(la)} vs {sorted(lb)}")
        return 1
    worst = 0.0
    for step in sorted(la):
        rel = abs(la[step] - lb[step]) / max(abs(la[step]), 1e-30)
        worst = max(worst, rel)
        if rel > args.rtol:
            print(f"FAIL: step {step}: loss {la[step]!r} vs {lb[step]!r} (relative {rel:.3g})")
            return 1
    print(f"losses: {len(la)} steps agree, worst relative difference {worst:.3g}")
    if args.ckpt:
        ma, ta = read_checkpoint(args.ckpt[0])
        mb, tb = read_checkpoint(args.ckpt[1])
        if ma["step"] != mb["step"] or ma["data"]["next_window"] != mb["data"]["next_window"] \
                or ma["data"]["epoch"] != mb["data"]["epoch"]:
            print(f"FAIL: checkpoints at step/data {ma['step']}/{ma['data']} vs "
                  f"{mb['step']}/{mb['data']}")
            return 1
        if sorted(ta) != sorted(tb):
            print(f"FAIL: tensor names differ: {sorted(set(ta) ^ set(tb))}")
            return 1
        # Relative norm over the whole model, per array kind. Per tensor it would not be a
        # fair test: the key part of attn.qkv.bias has a gradient that is zero in exact
        # arithmetic (softmax ignores a shift shared by all keys), so it is rounding noise, and
        # AdamW turns any noise into steps of size lr; another summation order (data-parallel
        # sums) changes that noise. Its magnitude is tiny next to the model's norm.
        worst_name, worst = "", 0.0
        for k, what in enumerate(("value", "exp_avg", "exp_avg_sq")):
            diff = norm = 0.0
            for name in sorted(ta):
                x = ta[name][k].astype(np.float64)
                y = tb[name][k].astype(np.float64)
                d = float(np.sum((x - y) ** 2))
                diff += d
                norm += float(np.sum(x ** 2))
                rel_t = np.sqrt(d) / max(np.linalg.norm(x), 1e-30)
                if rel_t > worst:
                    worst_name, worst = f"{name} {what}", rel_t
            rel = np.sqrt(diff) / max(np.sqrt(norm), 1e-30)
            if rel > args.rtol:
                print(f"FAIL: {what} of the whole model: relative difference norm {rel:.3g}")
                return 1
            print(f"{what}: {len(ta)} tensors, relative difference norm {rel:.3g}")
        print(f"largest per-tensor relative difference: {worst_name} {worst:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
