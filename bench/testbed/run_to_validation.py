#!/usr/bin/env python3
"""Turns a `sailor run --json` output into a validation file for `sailor validate`: the plan
(sailor.plan/1) plus "measured" (median step time, largest peak resident memory of a rank, the
slowest stage's gradient sync) and where the run came from.

usage: run_to_validation.py PLAN.json RUN.out COMMAND OUT.json"""
import json
import sys


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    plan_path, run_path, command, out_path = sys.argv[1:]
    plan = json.load(open(plan_path))
    end = None
    for line in open(run_path):
        line = line.strip()
        if line.startswith("{"):
            event = json.loads(line)
            if event.get("event") == "end":
                end = event
    if end is None:
        sys.exit(f"{run_path}: no end event (did the run finish?)")
    stages = end["stages"]
    plan["measured"] = {
        "iteration_s": end["median_step_time_s"],
        "peak_memory_bytes": max(s["peak_rss_bytes"] for s in stages),
        "dp_sync_s": max(s["dp_sync_s"] for s in stages),
        "steps": end["steps_run"],
        "statistic": "median step time over the run's steps; peak resident memory (VmHWM) "
                     "of the largest rank",
        "stages": stages,
        "command": command,
    }
    with open(out_path, "w") as f:
        json.dump(plan, f, indent=1)
        f.write("\n")


main()
