#!/usr/bin/env python3
"""Lays a run's timeline beside the model's: where does the prediction of a plan lose its time?

usage: timeline_compare.py RUN.json SIM.json [--steps FIRST:LAST] [--json]

RUN.json comes from `sailor run --timeline`, SIM.json from `sailor simulate --timeline` for the
same plan (schema sailor.timeline/1, docs/formats.md). A run's step is aligned as the model's is:
it starts when the previous step's norm all-reduce ended on its first rank, so the model's step
(one step, its times from that moment) and each run step compare span by span. Every figure of
the run is the median over its steps FIRST..LAST (default: the second to the last; the first
step warms caches and is left out).

Prints, per rank: for each kind of span (forward, backward, recv-activation, ..., grad-sync,
loss-and-norm, update) its count and summed wall and CPU milliseconds in the run and the model;
then when each rank's pipeline, gradient sync and norm ended. With --json the same as one object.
"""
import json
import os
import statistics
import sys

PHASES = ("grad-sync", "loss-and-norm", "update")


def fail(message):
    # named after the script that runs, so that a script that imports load() says so
    sys.exit(os.path.basename(sys.argv[0]) + ": " + message)


def load(path, source):
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as e:
        fail("cannot read '%s': %s" % (path, e.strerror))
    except ValueError as e:
        fail("'%s' is not JSON: %s" % (path, e))
    if not isinstance(doc, dict) or doc.get("schema") != "sailor.timeline/1":
        fail("'%s' is not a timeline (schema sailor.timeline/1): write one with "
             "`sailor %s --timeline FILE`" % (path, source))
    if doc.get("source") != source:
        fail("'%s' is a timeline of `sailor %s`, expected one of `sailor %s`"
             % (path, doc.get("source"), source))
    names, spans = {}, []
    for e in doc.get("traceEvents", []):
        if e.get("ph") == "M" and e.get("name") == "process_name":
            names[e["pid"]] = e["args"]["name"]
        elif e.get("ph") == "X":
            a = e.get("args", {})
            spans.append({"rank": e["pid"], "kind": e["name"], "step": a.get("step"),
                          "mb": a.get("microbatch"), "start": e["ts"] / 1e3,
                          "end": (e["ts"] + e["dur"]) / 1e3, "cpu": a.get("cpu_us", 0) / 1e3})
    if not spans:
        fail("'%s' holds no spans" % path)
    return doc, names, spans


def step_figures(spans, origin):
    """Per rank: {kind: [count, wall ms, cpu ms]} and the phase ends, times from origin."""
    ranks = {}
    for s in spans:
        r = ranks.setdefault(s["rank"], {"kinds": {}, "ends": {}})
        k = r["kinds"].setdefault(s["kind"], [0, 0.0, 0.0])
        k[0] += 1
        k[1] += s["end"] - s["start"]
        k[2] += s["cpu"]
        if s["kind"] in ("forward", "backward"):
            r["ends"]["pipeline"] = max(r["ends"].get("pipeline", 0), s["end"] - origin)
        if s["kind"] in PHASES:
            r["ends"][s["kind"]] = s["end"] - origin
    return ranks


def median_figures(per_step):
    """The median of each figure over the steps' figures."""
    out = {}
    for r in per_step[0]:
        kinds = set().union(*(f[r]["kinds"] for f in per_step if r in f))
        ends = set().union(*(f[r]["ends"] for f in per_step if r in f))
        out[r] = {"kinds": {k: [statistics.median(f[r]["kinds"].get(k, [0, 0, 0])[i]
                                                  for f in per_step if r in f)
                                for i in range(3)] for k in kinds},
                  "ends": {e: statistics.median(f[r]["ends"][e] for f in per_step
                                                if r in f and e in f[r]["ends"])
                           for e in ends}}
    return out


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    as_json = "--json" in argv
    first = last = None
    for i, a in enumerate(argv):
        if a == "--steps":
            try:
                first, last = (int(x) for x in argv[i + 1].split(":"))
            except (IndexError, ValueError):
                fail("--steps takes FIRST:LAST, e.g. --steps 3:10")
            args.remove(argv[i + 1])
    if len(args) != 2:
        fail("usage: timeline_compare.py RUN.json SIM.json [--steps FIRST:LAST] [--json]")
    run_doc, names, run_spans = load(args[0], "run")
    sim_doc, _, sim_spans = load(args[1], "simulate")
    if run_doc.get("world_size") != sim_doc.get("world_size"):
        fail("the run has %s ranks and the model %s: not timelines of one plan"
             % (run_doc.get("world_size"), sim_doc.get("world_size")))
    steps = sorted({s["step"] for s in run_spans})
    first = first if first is not None else (steps[1] if len(steps) > 1 else steps[0])
    last = last if last is not None else steps[-1]
    chosen = [n for n in steps if first <= n <= last and n - 1 in steps]
    if not chosen:
        fail("no run step in %d:%d with a step before it (the run has steps %d-%d)"
             % (first, last, steps[0], steps[-1]))
    per_step, times = [], []
    for n in chosen:
        before = [s["end"] for s in run_spans if s["step"] == n - 1 and s["kind"] == "loss-and-norm"]
        this = [s for s in run_spans if s["step"] == n]
        if not before:
            fail("run step %d has no loss-and-norm span to start step %d from" % (n - 1, n))
        origin = min(before)
        per_step.append(step_figures(this, origin))
        times.append(min(s["end"] for s in this if s["kind"] == "loss-and-norm") - origin)
    run = median_figures(per_step)
    model = step_figures(sim_spans, 0.0)
    model_time = min(s["end"] for s in sim_spans if s["kind"] == "loss-and-norm")
    run_time = statistics.median(times)
    if as_json:
        print(json.dumps({"steps": chosen, "step_ms": {"run": run_time, "model": model_time},
                          "ranks": {str(r): {"name": names.get(r, ""), "run": run[r],
                                             "model": model.get(r)} for r in sorted(run)}},
                         sort_keys=True))
        return
    print("plan %s: step %.2f ms run (median of steps %d-%d), %.2f ms model, %+.1f %%"
          % (run_doc.get("plan"), run_time, chosen[0], chosen[-1], model_time,
             100 * (model_time - run_time) / run_time))
    for r in sorted(run):
        print("\n%s" % names.get(r, "rank %d" % r))
        print("  %-16s %5s %10s %10s %10s %10s" % ("span", "count", "run ms", "model ms",
                                                  "run cpu", "model cpu"))
        kinds = sorted(set(run[r]["kinds"]) | set(model.get(r, {}).get("kinds", {})))
        for k in kinds:
            a = run[r]["kinds"].get(k, [0, 0, 0])
            b = model.get(r, {}).get("kinds", {}).get(k, [0, 0, 0])
            print("  %-16s %5d %10.2f %10.2f %10.2f %10.2f" % (k, a[0], a[1], b[1], a[2], b[2]))
        ends = run[r]["ends"]
        mends = model.get(r, {}).get("ends", {})
        print("  ends (ms from the step's start), run / model: " +
              ", ".join("%s %.2f / %.2f" % (e, ends[e], mends.get(e, float("nan")))
                        for e in ("pipeline",) + PHASES if e in ends))


if __name__ == "__main__":
    main(sys.argv[1:])
