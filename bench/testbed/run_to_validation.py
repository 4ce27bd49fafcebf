#!/usr/bin/env python3
"""Turns the `sailor run --json` outputs of one plan into a validation file for `sailor validate`:
the plan (sailor.plan/1) plus "measured" (the mean of the runs' median step times, the largest
peak resident memory of a rank in any run, the slowest stage's gradient sync) and where the runs
came from. Several outputs are rounds of the same plan (validation.sh's ROUNDS): each run's
median is kept in "rounds_iteration_s"; the stages are the first run's.

usage: run_to_validation.py PLAN.json RUN.out [RUN.out ...] COMMAND OUT.json"""
import json
import sys


def end_event(run_path):
    end = None
    for line in open(run_path):
        line = line.strip()
        if line.startswith("{"):
            event = json.loads(line)
            if event.get("event") == "end":
                end = event
    if end is None:
        sys.exit(f"{run_path}: no end event (did the run finish?)")
    return end


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    plan_path, run_paths, command, out_path = sys.argv[1], sys.argv[2:-2], sys.argv[-2], sys.argv[-1]
    plan = json.load(open(plan_path))
    ends = [end_event(p) for p in run_paths]
    medians = [e["median_step_time_s"] for e in ends]
    stages = ends[0]["stages"]
    plan["measured"] = {
        "iteration_s": sum(medians) / len(medians),
        "peak_memory_bytes": max(s["peak_rss_bytes"] for e in ends for s in e["stages"]),
        "dp_sync_s": max(s["dp_sync_s"] for s in stages),
        "steps": ends[0]["steps_run"],
        "statistic": "median step time over the run's steps (the mean of the rounds' medians "
                     "where the plan ran in several rounds); peak resident memory (VmHWM) of "
                     "the largest rank",
        "stages": stages,
        "command": command,
    }
    if len(ends) > 1:
        plan["measured"]["rounds_iteration_s"] = medians
    with open(out_path, "w") as f:
        json.dump(plan, f, indent=1)
        f.write("\n")


main()
