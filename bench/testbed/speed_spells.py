#!/usr/bin/env python3
"""The speed spells of a machine's CPUs, from machine_speed.c's samples: for what share of the
time fixed work runs slower than usual, and how much slower. What a device type's
`speed_spells` in a sailor.gpus/1 file says (docs/formats.md; the simulator's runtime model puts
each replica of a sync in or out of a spell, sim/time_runtime.c).

usage: speed_spells.py [--bucket-s S] [--over PCT] [--json] SAMPLES.txt [SAMPLES.txt ...]

SAMPLES.txt: the samples of bench/testbed/machine_speed.sh (seconds, cpu, block us per pass,
alu us[, copy]); sample each CPU (taskset) for ten minutes or more, one file per CPU or one file
for all. Per file and CPU the block's samples go in buckets of S seconds (10) and each bucket's
median is the work's speed then; a bucket more than PCT % (8) slower than that CPU's lower
quartile of buckets is in a spell. Pooled over every file and CPU:
  fraction  the share of buckets in a spell;
  slowdown  the median over the spell buckets of how much slower each is than the median of its
            own CPU's buckets outside spells.
The rule is fixed before the data (the eleventh session's "8 % over the lower quartile",
bench/testbed/machine-speed-2026-11-28/README.md), not fitted to any prediction.
"""
import argparse
import json
import statistics
import sys


def fail(message):
    sys.exit("speed_spells.py: " + message)


def load(path, bucket_s):
    """{cpu: [bucket medians in time order]} of one samples file."""
    per_cpu = {}
    try:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                if line.startswith("#") or not line.strip():
                    continue
                fields = line.split()
                try:
                    t, cpu, block = float(fields[0]), int(fields[1]), float(fields[2])
                except (ValueError, IndexError):
                    fail("%s:%d: expected 'seconds cpu block_us alu_us [copy]', got '%s'"
                         % (path, n, line.strip()))
                per_cpu.setdefault(cpu, {}).setdefault(int(t // bucket_s), []).append(block)
    except OSError as e:
        fail("cannot read '%s': %s" % (path, e.strerror))
    out = {}
    for cpu, buckets in per_cpu.items():
        medians = [statistics.median(v) for _, v in sorted(buckets.items()) if len(v) >= 3]
        if len(medians) >= 4:
            out[cpu] = medians
    if not out:
        fail("'%s' has no CPU with 4 buckets of %g s of at least 3 samples: sample for longer"
             % (path, bucket_s))
    return out


def positive(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("takes a number, not '%s'" % text)
    if not value > 0:
        raise argparse.ArgumentTypeError("must be positive, not %s" % text)
    return value


def main(argv):
    parser = argparse.ArgumentParser(
        prog="speed_spells.py", description=__doc__.strip().splitlines()[0],
        epilog="See the top of bench/testbed/speed_spells.py for the rule.")
    parser.add_argument("paths", nargs="+", metavar="SAMPLES.txt",
                        help="samples of bench/testbed/machine_speed.sh")
    parser.add_argument("--bucket-s", type=positive, default=10.0, metavar="S",
                        help="seconds in a bucket (10)")
    parser.add_argument("--over", type=positive, default=8.0, metavar="PCT",
                        help="%% over the CPU's lower quartile that makes a spell (8)")
    parser.add_argument("--json", action="store_true", help="one JSON object")
    args = parser.parse_args(argv)
    bucket_s, over_pct, as_json, paths = args.bucket_s, args.over, args.json, args.paths
    rows, total, slow = [], 0, []
    for path in paths:
        for cpu, medians in sorted(load(path, bucket_s).items()):
            q1 = statistics.quantiles(medians, n=4)[0]
            spell = [m for m in medians if m > q1 * (1 + over_pct / 100)]
            calm = [m for m in medians if m <= q1 * (1 + over_pct / 100)]
            usual = statistics.median(calm)
            slow += [m / usual - 1 for m in spell]
            total += len(medians)
            rows.append({"file": path, "cpu": cpu, "buckets": len(medians),
                         "in_spell": len(spell), "usual_us": usual,
                         "slowdown": statistics.median(m / usual - 1 for m in spell) if spell else 0})
    result = {"bucket_s": bucket_s, "over_pct": over_pct, "per_cpu": rows,
              "fraction": len(slow) / total, "slowdown": statistics.median(slow) if slow else 0}
    if as_json:
        json.dump(result, sys.stdout, indent=1)
        print()
        return 0
    for r in rows:
        print("%s cpu %d: %d buckets of %g s, %d in a spell (usual %.1f us, spells %.1f %% slower)"
              % (r["file"], r["cpu"], r["buckets"], bucket_s, r["in_spell"], r["usual_us"],
                 100 * r["slowdown"]))
    print("pooled: fraction %.3f, slowdown %.3f  (\"speed_spells\": {\"fraction\": %.2f, "
          "\"slowdown\": %.2f})" % (result["fraction"], result["slowdown"], result["fraction"],
                                     result["slowdown"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
