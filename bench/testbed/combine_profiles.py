#!/usr/bin/env python3
"""Combines profiles of one device class that `sailor profile --repeats 1` took in turns with the
other classes of a testbed (profile_testbed.sh, ACROSS_CLASSES=1) into one profile, as one run of
`sailor profile --repeats R` would have written it: per (mbs, tp) entry, every layer time of the
table and every phase's median (median_s, median_wall_s) is the median over the rounds, and its
spread (max - min) / median; the entry's wall time is the rounds' sum, how busy the machine was
their mean, memory and calls per sample those of the first round; source.repeats is the number of
rounds and source.rounds lists when each ran. Only entries every round has are kept.

Why: a class profiled in one stretch of a minute or two takes all its samples from that stretch,
and a slow spell of the machine then moves the whole class (7 % of profiles more than 10 % off
their class's median; docs/design/testbed.md, what was found); taken in turns, the spell falls
on a few of each class's samples, which the median drops.

usage: bench/testbed/combine_profiles.py OUT.json ROUND1.json ROUND2.json ...  (at least 3)"""
import json
import statistics
import sys


def median_of(values):
    return statistics.median(values)


def spread_of(values):
    m = statistics.median(values)
    return (max(values) - min(values)) / m if m > 0 else 0.0


def combine_table(rounds, keys):
    """The {mbs: {tp: {layer: [f, b, u]}}} table: element by element, the median over rounds."""
    out = {}
    for mk, tk in keys:
        layers = rounds[0][mk][tk]
        out.setdefault(mk, {})[tk] = {
            lk: [median_of([r[mk][tk][lk][i] for r in rounds]) for i in range(len(layers[lk]))]
            for lk in layers}
    return out


def combine_phases(entries, field):
    phases = entries[0][field]
    return ({p: median_of([e[field][p] for e in entries]) for p in phases},
            {p: spread_of([e[field][p] for e in entries]) for p in phases})


def main(argv):
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    out_path, paths = argv[0], argv[1:]
    try:
        rounds = [json.load(open(p)) for p in paths]
    except (OSError, ValueError) as e:
        print(f"combine_profiles: {e}", file=sys.stderr)
        return 1
    first = rounds[0]["source"]
    for p, r in zip(paths, rounds):
        s = r.get("source", {})
        for k in ("model", "device_type", "seq_len", "host"):
            if s.get(k) != first.get(k):
                print(f"combine_profiles: {p}: {k} {s.get(k)!r}, not {first.get(k)!r} as in "
                      f"{paths[0]}: not rounds of one class's profile", file=sys.stderr)
                return 1
    common = set(first["entries"])
    for r in rounds[1:]:
        common &= set(r["source"]["entries"])
    if not common:
        print("combine_profiles: no (mbs, tp) entry is in every round", file=sys.stderr)
        return 1
    keys = []
    for e in sorted(common):
        _, mbs, _, tp = e.split()
        keys.append((mbs, tp))
    out = {"schema": rounds[0]["schema"]}
    out.update(combine_table(rounds, keys))
    src = dict(first)
    src["repeats"] = len(rounds)
    src["rounds"] = [r["source"].get("date", "") for r in rounds]
    src["command"] = ("bench/testbed/combine_profiles.py over " + str(len(rounds)) +
                      " rounds of: " + first.get("command", ""))
    waits = [r["source"]["idle_wait"] for r in rounds if "idle_wait" in r["source"]]
    if waits:
        src["idle_wait"] = dict(waits[0])
        for k in ("cpu_per_test_s", "late_per_test_s"):
            src["idle_wait"][k] = median_of([w[k] for w in waits])
        src["idle_wait"]["tests"] = sum(w["tests"] for w in waits)
    src["entries"] = {}
    for key in sorted(common):
        per_round = [r["source"]["entries"][key] for r in rounds]
        e = dict(per_round[0])
        e["median_s"], e["spread"] = combine_phases(per_round, "median_s")
        if "median_wall_s" in e:
            e["median_wall_s"], e["spread_wall"] = combine_phases(per_round, "median_wall_s")
        for k in ("update_s_per_param", "cpu_per_wall"):
            if k in e:
                e[k] = median_of([x[k] for x in per_round])
        e["wall_s"] = sum(x["wall_s"] for x in per_round)
        e["machine_busy_cores"] = statistics.mean(x["machine_busy_cores"] for x in per_round)
        src["entries"][key] = e
    out["source"] = src
    with open(out_path, "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
