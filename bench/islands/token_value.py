#!/usr/bin/env python3
"""What a token of an island run is worth against a synchronous token, from run.sh's curves.

For every island curve of CURVES_DIR (one fragment, no overlap: the planner's table has no
fragment dimension) it takes the final validation loss L after T tokens, finds by linear
interpolation the tokens T_sync at which the synchronous curve (sync.dat) reaches L, and writes
the ratio T_sync / T as the token value (capped at 1: an island token is taken to be worth at
most a synchronous one; the measured ratio is kept beside it). A final loss below the
synchronous curve's last point reaches it beyond the measured tokens: the ratio is then at
least T_sync_last / T and the value 1. Output: sailor.token_value/1 JSON on stdout
(docs/formats.md#token-values), the file the planner ships as data/islands/token_value.json.

usage: bench/islands/token_value.py CURVES_DIR [--source TEXT]
"""
import argparse
import json
import os
import sys


def read_curve(path):
    points = []
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            tokens_m, loss = line.split()[:2]
            points.append((float(tokens_m), float(loss)))
    return points


def tokens_to_reach(curve, loss):
    """Tokens (M) at which a curve first reaches loss; None when it never does."""
    for (t0, l0), (t1, l1) in zip(curve, curve[1:]):
        if l1 <= loss <= l0 and l0 != l1:
            return t0 + (l0 - loss) / (l0 - l1) * (t1 - t0)
    if curve and curve[0][1] <= loss:
        return curve[0][0]
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("curves_dir")
    ap.add_argument("--source", default="")
    args = ap.parse_args()
    sync = read_curve(os.path.join(args.curves_dir, "sync.dat"))
    if len(sync) < 2:
        sys.exit(f"token_value.py: {args.curves_dir}/sync.dat: fewer than 2 points")
    out = []
    for name in sorted(os.listdir(args.curves_dir)):
        if not name.endswith(".plan.json"):
            continue
        stem = name[: -len(".plan.json")]
        with open(os.path.join(args.curves_dir, name)) as f:
            isl = json.load(f).get("islands")
        if not isl or isl.get("fragments", 1) != 1 or isl.get("overlap_steps", 0) != 0:
            continue
        curve = read_curve(os.path.join(args.curves_dir, stem + ".dat"))
        tokens, loss = curve[-1]
        reach = tokens_to_reach(sync, loss)
        ratio = (reach if reach is not None else sync[-1][0]) / tokens
        h = isl["inner_steps"]
        out.append({
            "islands": len(isl["pipelines"]),
            "inner_steps": h if isinstance(h, int) else max(h),
            "wire": isl.get("wire", "fp32"),
            "value": round(min(1.0, ratio), 4),
            "measured_ratio": round(ratio, 4),
            "ratio_is_lower_bound": reach is None,
            "final_loss": loss, "tokens_M": tokens, "curve": stem,
        })
    json.dump({"schema": "sailor.token_value/1", "source": args.source or
               f"bench/islands/token_value.py {args.curves_dir}", "measurements": out},
              sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
