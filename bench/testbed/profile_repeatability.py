#!/usr/bin/env python3
"""How far two profiles of the same device class, measured in separate bring-ups of a testbed,
are apart: for every (micro-batch, TP) entry and phase the relative difference of the medians,
and per entry the difference of one iteration's compute of a block (forward + backward + update),
which is what a plan's prediction mostly moves with.

usage: bench/testbed/profile_repeatability.py A.json B.json [A2.json B2.json ...]
       (pairs of profile files, sailor.profile/1 as `sailor profile` writes them)
Prints one line per entry and a summary: median and max of |B/A - 1| over phases that take
at least 1% of the entry's block iteration, and over block iterations."""
import json
import statistics
import sys

PHASES = ["forward_embedding", "forward_block", "forward_head", "backward_head", "backward_block",
          "backward_embedding", "update_embedding", "update_block", "update_head"]


def entries(path):
    doc = json.load(open(path))
    return {k: v["median_s"] for k, v in doc["source"]["entries"].items()}, doc["source"]


def compare(a_path, b_path):
    a, a_src = entries(a_path)
    b, b_src = entries(b_path)
    phase_diffs, block_diffs = [], []
    print(f"{a_src['device_type']}: {a_path} ({a_src.get('date', '?')}) vs {b_path} ({b_src.get('date', '?')})")
    for key in sorted(set(a) & set(b)):
        block_a = sum(a[key][p] for p in ("forward_block", "backward_block", "update_block"))
        block_b = sum(b[key][p] for p in ("forward_block", "backward_block", "update_block"))
        worst = ("", 0.0)
        for p in PHASES:
            if a[key][p] < 0.01 * block_a:
                continue  # a phase too short to matter to any prediction
            d = b[key][p] / a[key][p] - 1
            phase_diffs.append(abs(d))
            if abs(d) > abs(worst[1]):
                worst = (p, d)
        block_diffs.append(abs(block_b / block_a - 1))
        print(f"  {key:12s} block iteration {1e3 * block_a:8.3f} -> {1e3 * block_b:8.3f} ms "
              f"({100 * (block_b / block_a - 1):+5.1f}%); largest phase change {worst[0]} {100 * worst[1]:+5.1f}%")
    return phase_diffs, block_diffs


def main(argv):
    if len(argv) < 2 or len(argv) % 2:
        print(__doc__, file=sys.stderr)
        return 2
    phases, blocks = [], []
    for i in range(0, len(argv), 2):
        p, b = compare(argv[i], argv[i + 1])
        phases += p
        blocks += b
    print(f"|relative difference|  phases: median {100 * statistics.median(phases):.1f}% max {100 * max(phases):.1f}% "
          f"({len(phases)}); block iterations: median {100 * statistics.median(blocks):.1f}% max {100 * max(blocks):.1f}% ({len(blocks)})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
