#!/usr/bin/env python3
"""Turns the `sailor run --json` outputs of one plan into a validation file for `sailor validate`:
the plan (sailor.plan/1) plus "measured" (the step time below, the largest peak resident memory
of a rank in any run, the slowest stage's gradient sync) and where the runs came from. Several
outputs are rounds of the same plan (validation.sh's ROUNDS): each run's figure is kept in
"rounds_iteration_s" and the plan's is their mean; the stages are the first run's.

The step time, by kind of plan:
- synchronous (no "islands" section, or one island): the run's median step time (the end
  event's; a median, so the first step's warm-up does not count);
- islands: the mean step time over whole rounds (island 0's H steps; the run's step events,
  which need `--log-every 1`): the outer steps and the round end's stop agreement fall on a few
  steps of a round, and what `sailor simulate` predicts for an island plan is the round's time
  over H. The first round is left out (warm-up, as the median leaves out the first step), and so
  is a round the run ends with (no stop agreement after it, its fragments land after the loop)
  and a partial last round. At least one round must remain.

usage: run_to_validation.py PLAN.json RUN.out [RUN.out ...] COMMAND OUT.json"""
import json
import sys


def events(run_path):
    out = []
    for line in open(run_path):
        line = line.strip()
        if line.startswith("{"):
            out.append(json.loads(line))
    if not any(e.get("event") == "end" for e in out):
        sys.exit(f"{run_path}: no end event (did the run finish?)")
    return out


def island_rounds(plan):
    """H of island 0 when the plan has two islands or more, else None."""
    isl = plan.get("islands")
    if not isl or len(isl["pipelines"]) < 2:
        return None
    h = isl.get("inner_steps", 50)
    return h[0] if isinstance(h, list) else h


def round_mean_step_s(run_path, evs, h):
    """The mean step time over the run's measured whole rounds (docstring), and their count."""
    end = [e for e in evs if e.get("event") == "end"][-1]
    steps_run = end["steps_run"]
    step_s = {e["step"]: e["step_time_s"] for e in evs if e.get("event") == "step"}
    # rounds r = 1.. whose last step r*H+H is before the run's last step
    rounds = [r for r in range(1, steps_run // h) if (r + 1) * h < steps_run]
    if not rounds:
        sys.exit(f"{run_path}: {steps_run} steps leave no whole round of {h} steps after the "
                 "first and before the last (run more steps)")
    missing = [s for r in rounds for s in range(r * h + 1, r * h + h + 1) if s not in step_s]
    if missing:
        sys.exit(f"{run_path}: no step event for step {missing[0]} (run with --log-every 1)")
    times = [step_s[s] for r in rounds for s in range(r * h + 1, r * h + h + 1)]
    return sum(times) / len(times), len(rounds)


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    plan_path, run_paths, command, out_path = sys.argv[1], sys.argv[2:-2], sys.argv[-2], sys.argv[-1]
    plan = json.load(open(plan_path))
    plan.pop("measured", None)
    runs = [events(p) for p in run_paths]
    ends = [[e for e in evs if e.get("event") == "end"][-1] for evs in runs]
    h = island_rounds(plan)
    if h is None:
        figures = [e["median_step_time_s"] for e in ends]
        statistic = ("median step time over the run's steps (the mean of the rounds' medians "
                     "where the plan ran in several rounds); peak resident memory (VmHWM) of "
                     "the largest rank")
        whole_rounds = None
    else:
        per_run = [round_mean_step_s(p, evs, h) for p, evs in zip(run_paths, runs)]
        figures = [f for f, _ in per_run]
        whole_rounds = [n for _, n in per_run]
        statistic = (f"islands: mean step time over whole rounds of {h} steps (island 0's H), "
                     "the first round and a last one the run ends with left out (the mean of "
                     "the runs' figures where the plan ran in several rounds); peak resident "
                     "memory (VmHWM) of the largest rank")
    stages = ends[0]["stages"]
    plan["measured"] = {
        "iteration_s": sum(figures) / len(figures),
        "peak_memory_bytes": max(s["peak_rss_bytes"] for e in ends for s in e["stages"]),
        "dp_sync_s": max(s["dp_sync_s"] for s in stages),
        "steps": ends[0]["steps_run"],
        "statistic": statistic,
        "stages": stages,
        "command": command,
    }
    if whole_rounds is not None:
        plan["measured"]["median_step_s"] = [e["median_step_time_s"] for e in ends]
        plan["measured"]["whole_rounds"] = whole_rounds
        plan["measured"]["islands"] = ends[0].get("islands")
    if len(ends) > 1:
        plan["measured"]["rounds_iteration_s"] = figures
    with open(out_path, "w") as f:
        json.dump(plan, f, indent=1)
        f.write("\n")


main()
