#!/usr/bin/env python3
"""One plan's runs against its prediction, stage by stage, with the CPU each spent.

usage: bench/testbed/cpu_compare.py PLAN SIM.json RUN.out [RUN.out...]
  SIM.json: `sailor simulate --json` of PLAN; RUN.out: `sailor run --json` outputs of it.
Prints one Markdown row: the plan, the measured step (mean of the runs' medians, then each), the
predicted one and the error, then per stage "CPU per step, run vs model", the part of it in the
gradient sync, and "sleeping waits' tests per step, run vs model" (the model reports both for devices that are CPU quotas only,
else "-"), and, where the runs report it, the run's CPU per test inside those waits.
"""
import json
import os
import sys


def end_event(path):
    try:
        with open(path) as f:
            ends = [json.loads(line) for line in f if '"event":"end"' in line]
    except OSError as e:
        sys.exit("cpu_compare: cannot read the run output %s: %s" % (path, e.strerror))
    if not ends:
        sys.exit("cpu_compare: %s has no end event (did the run finish?)" % path)
    return ends[0]


def run_values(ends, k, key, fmt):
    values = [e["stages"][k].get(key) for e in ends]
    return "/".join(fmt % v if v is not None else "?" for v in values)


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__.strip())
    plan, sim_path, runs = sys.argv[1], sys.argv[2], sys.argv[3:]
    try:
        with open(sim_path) as f:
            sim = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit("cpu_compare: %s is not `sailor simulate --json` output: %s" % (sim_path, e))
    ends = [end_event(p) for p in runs]
    measured = sum(e["median_step_time_s"] for e in ends) / len(ends)
    predicted = sim["iteration_time_s"]
    stages = []
    for k, stage in enumerate(sim["stages"]):
        text = "cpu %s vs %s" % (run_values(ends, k, "cpu_s", "%.4f"),
                                 "%.4f" % stage["cpu_s"] if "cpu_s" in stage else "-")
        if any("dp_sync_cpu_s" in e["stages"][k] for e in ends):
            text += ", sync cpu %s vs %s" % (run_values(ends, k, "dp_sync_cpu_s", "%.4f"),
                                            "%.4f" % stage["dp_sync_cpu_s"]
                                            if "dp_sync_cpu_s" in stage else "-")
        if any("wait_tests" in e["stages"][k] for e in ends):
            text += ", tests %s vs %s" % (run_values(ends, k, "wait_tests", "%.0f"),
                                         "%.0f" % stage["wait_tests"] if "wait_tests" in stage
                                         else "-")
        per_test = [1e6 * e["stages"][k]["wait_cpu_s"] / e["stages"][k]["wait_tests"]
                    for e in ends if e["stages"][k].get("wait_tests") and
                    "wait_cpu_s" in e["stages"][k]]
        if per_test:
            text += " (%s us/test)" % "/".join("%.1f" % v for v in per_test)
        stages.append(text)
    print("| %s | %.4f (%s) | %.4f | %+.1f %% | %s |" % (
        os.path.basename(plan).split("-")[0], measured,
        ", ".join("%.4f" % e["median_step_time_s"] for e in ends), predicted,
        100 * (predicted / measured - 1), "; ".join(stages)))


if __name__ == "__main__":
    main()
