#!/usr/bin/env python3
"""Summarises machine_speed.c's samples (bench/testbed/machine_speed.sh): how far the same fixed
work moves within a minute and between minutes, for the block (the runtime's kernels) and the
register-only chain (the core's clock alone), and whether the two move together. Where the
probe timed several copies of the block in turn, each copy's median against the others': a
copy apart from the rest is apart for where its memory lies, not for when it ran.

usage: machine_speed_summary.py SAMPLES.txt [MINUTE_S]   (MINUTE_S: 60)"""
import statistics
import sys


def load(path):
    rows = []
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("#") or not line.strip():
                    continue
                f = line.split()
                copy = int(f[4]) if len(f) > 4 else 0
                rows.append((float(f[0]), int(f[1]), float(f[2]), float(f[3]), copy))
    except (OSError, ValueError) as e:
        sys.exit(f"machine_speed_summary: {path}: {e}")
    if len(rows) < 2:
        sys.exit(f"machine_speed_summary: {path}: fewer than 2 samples")
    return rows


def apart(values, lag):
    """|a/b - 1| over every pair of buckets lag apart: median and max, in %."""
    d = [abs(values[i + lag] / values[i] - 1) * 100 for i in range(len(values) - lag)]
    return (statistics.median(d), max(d)) if d else None


def pearson(x, y):
    if len(x) < 3:
        return float("nan")
    mx, my = statistics.fmean(x), statistics.fmean(y)
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    return sxy / (sxx * syy) ** 0.5 if sxx > 0 and syy > 0 else float("nan")


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    rows = load(sys.argv[1])
    minute = float(sys.argv[2]) if len(sys.argv) == 3 else 60.0
    buckets = {}
    for t, cpu, block, alu, _ in rows:
        buckets.setdefault(int(t // minute), []).append((block, alu))
    keys = sorted(k for k in buckets if len(buckets[k]) >= 5)
    if not keys:
        sys.exit(f"machine_speed_summary: {sys.argv[1]}: no bucket of {minute:g} s holds 5 "
                 f"samples: sample for longer, or give a longer MINUTE_S")
    block_m = [statistics.median(b for b, _ in buckets[k]) for k in keys]
    alu_m = [statistics.median(a for _, a in buckets[k]) for k in keys]
    print(f"{len(rows)} samples over {rows[-1][0]:.0f} s, {len(keys)} buckets of {minute:.0f} s")
    for name, col in (("block", 2), ("alu", 3)):
        v = sorted(r[col] for r in rows)
        q = lambda p: v[min(len(v) - 1, int(p * len(v)))]
        print(f"{name}: median {statistics.median(v):.1f} us, p5-p95 {q(0.05):.1f}-{q(0.95):.1f} "
              f"({(q(0.95) / q(0.05) - 1) * 100:.1f} %)")
    for cpu in sorted({r[1] for r in rows}):
        on = [r for r in rows if r[1] == cpu]
        print(f"on cpu {cpu}: {len(on)} samples, block {statistics.median(r[2] for r in on):.1f}, "
              f"alu {statistics.median(r[3] for r in on):.1f} us")
    for name, m in (("block", block_m), ("alu", alu_m)):
        print(f"{name} per bucket: {min(m):.1f}-{max(m):.1f} us "
              f"({(max(m) / min(m) - 1) * 100:.1f} % from slowest to fastest)")
        for lag in (1, 5, 10, 15):
            a = apart(m, lag)
            if a:
                print(f"  buckets {lag} apart: median {a[0]:.1f} %, max {a[1]:.1f} %")
    print(f"block and alu per bucket move together: r = {pearson(block_m, alu_m):.2f}")
    copies = sorted({r[4] for r in rows})
    if len(copies) > 1:
        # each copy against the median of all copies' samples taken in the same bucket, so
        # that a spell moves the reference with the copy
        rel = {c: [] for c in copies}
        for k in keys:
            here = [r for r in rows if int(r[0] // minute) == k]
            ref = statistics.median(r[2] for r in here)
            for c in copies:
                mine = [r[2] for r in here if r[4] == c]
                if mine:
                    rel[c].append(statistics.median(mine) / ref)
        med = {c: statistics.median(v) for c, v in rel.items() if v}
        print(f"{len(copies)} copies, each against all copies in the same bucket "
              f"(median over buckets): {min(med.values()):.3f}-{max(med.values()):.3f}")
        for c in copies:
            if rel[c]:
                print(f"  copy {c}: {med[c]:.3f} (buckets {min(rel[c]):.3f}-{max(rel[c]):.3f})")
    print("per bucket (s, block us, alu us):")
    for k, b, a in zip(keys, block_m, alu_m):
        print(f"  {k * minute:6.0f} {b:8.1f} {a:8.1f}")


if __name__ == "__main__":
    main()
