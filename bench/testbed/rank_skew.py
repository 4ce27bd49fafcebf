#!/usr/bin/env python3
"""Which replica of a stage comes last to its gradient sync, by how much, and whether it stays last.

usage: rank_skew.py RUN.json [RUN.json ...] [--steps FIRST:LAST] [--json]

Each RUN.json is a timeline of `sailor run --timeline` (schema sailor.timeline/1). The replicas
of a stage do the same work, yet in a data-parallel run they reach the stage's gradient sync at
different times and the sync waits for the last. Noise that is new at every step (a sleep's
wake, a period's phase) makes a different replica last each step; something that stays with a
process for the whole run (the vCPU its scheduler keeps it on, and that vCPU's slow spells: see
bench/testbed/machine-speed-2026-11-28/) makes the same one last step after step, and another one
in the next run. This tells the two apart, for each stage of more than one replica:
- per rank: its compute CPU per pass (forward and backward, thread CPU, median over steps) against
  the median of its stage's ranks, and in how many steps it reached the sync last;
- per stage: the median over steps of the spread of arrivals (last less first, ms) and of the
  compute CPU (slowest rank's less fastest's, per pass, %).
Steps FIRST..LAST (default: the second to the last; the first warms caches). A TP group's ranks
count as one replica (its first TP rank stands for it).
"""
import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timeline_compare import fail, load  # noqa: E402  the timelines' reader, beside this script


def parse_steps(text, last_step):
    try:
        first, last = (int(x) for x in text.split(":"))
    except ValueError:
        fail("--steps takes FIRST:LAST (whole numbers), not '%s'" % text)
    if first < 1 or last < first:
        fail("--steps %s: FIRST must be at least 1 and LAST at least FIRST" % text)
    if first > last_step:
        fail("--steps %s: the run has steps 1 to %d" % (text, last_step))
    return first, min(last, last_step)


def analyse(path, steps_text):
    doc, _, spans = load(path, "run")
    roles = {e["pid"]: e.get("args", {}) for e in doc.get("traceEvents", [])
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    last_step = max(s["step"] for s in spans if s["step"] is not None)
    first, last = parse_steps(steps_text, last_step) if steps_text else (min(2, last_step), last_step)
    replicas = {}  # stage -> [rank, ...], one rank per replica
    for rank, role in sorted(roles.items()):
        if role.get("tp_rank", 0) == 0:
            replicas.setdefault(role.get("stage", 0), []).append(rank)
    arrive, cpu, passes = {}, {}, {}
    for span in spans:
        rank, kind, step, start, cpu_ms = (span["rank"], span["kind"], span["step"], span["start"],
                                           span["cpu"])
        if step is None or not first <= step <= last:
            continue
        if kind == "grad-sync":
            arrive[(rank, step)] = start
        elif kind in ("forward", "backward"):
            cpu[(rank, step)] = cpu.get((rank, step), 0) + cpu_ms
            passes[(rank, step)] = passes.get((rank, step), 0) + 1
    out = {"file": path, "steps": [first, last], "stages": []}
    for stage, ranks in sorted(replicas.items()):
        if len(ranks) < 2:
            continue
        steps = [s for s in range(first, last + 1)
                 if all((r, s) in arrive and (r, s) in passes for r in ranks)]
        if not steps:
            fail("'%s': stage %d's ranks have no step %d-%d with a grad-sync and passes on every "
                 "rank" % (path, stage, first, last))
        per_pass = {r: [cpu[(r, s)] / passes[(r, s)] for s in steps] for r in ranks}
        last_count = {r: 0 for r in ranks}
        spreads, cpu_spreads = [], []
        for i, s in enumerate(steps):
            times = {r: arrive[(r, s)] for r in ranks}
            last_count[max(times, key=times.get)] += 1
            spreads.append(max(times.values()) - min(times.values()))
            costs = [per_pass[r][i] for r in ranks]
            cpu_spreads.append(100 * (max(costs) / min(costs) - 1))
        stage_median = statistics.median(statistics.median(v) for v in per_pass.values())
        out["stages"].append({
            "stage": stage, "steps": len(steps),
            "arrival_spread_ms": statistics.median(spreads),
            "cpu_spread_pct": statistics.median(cpu_spreads),
            "ranks": [{"rank": r, "gpu": roles[r].get("gpu"),
                       "cpu_per_pass_ms": statistics.median(per_pass[r]),
                       "cpu_vs_stage_pct": 100 * (statistics.median(per_pass[r]) / stage_median - 1),
                       "last_in_steps": last_count[r]} for r in ranks]})
    return out


def main(argv):
    parser = argparse.ArgumentParser(
        prog="rank_skew.py", description=__doc__.strip().splitlines()[0],
        epilog="See the top of bench/testbed/rank_skew.py for what each figure is.")
    parser.add_argument("paths", nargs="+", metavar="RUN.json", help="a `sailor run --timeline` file")
    parser.add_argument("--steps", metavar="FIRST:LAST", help="the steps to read (default 2 to the last)")
    parser.add_argument("--json", action="store_true", help="one JSON array, an object per file")
    args = parser.parse_args(argv)
    paths, steps_text, as_json = args.paths, args.steps, args.json
    results = [analyse(p, steps_text) for p in paths]
    if as_json:
        json.dump(results, sys.stdout, indent=1)
        print()
        return 0
    for res in results:
        print("%s: steps %d-%d" % (res["file"], res["steps"][0], res["steps"][1]))
        if not res["stages"]:
            print("  no stage has more than one replica")
        for st in res["stages"]:
            print("  stage %d (%d steps): arrivals spread %.1f ms, compute CPU spread %.1f %% "
                  "(medians over steps)" % (st["stage"], st["steps"], st["arrival_spread_ms"],
                                            st["cpu_spread_pct"]))
            for r in st["ranks"]:
                print("    rank %-3d %-12s %7.3f ms CPU a pass (%+5.1f %% against the stage), "
                      "last in %d of %d steps" % (r["rank"], r["gpu"], r["cpu_per_pass_ms"],
                                                 r["cpu_vs_stage_pct"], r["last_in_steps"],
                                                 st["steps"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
