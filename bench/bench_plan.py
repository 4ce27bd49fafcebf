#!/usr/bin/env python3
"""Planner benchmark: quality and speed against the SOSP'25 planner on its own scenarios, scale on
large pools, and how search time grows with pool size and number of GPU types.

Prints figures; never fails on speed (only on a broken run). Run from the repository root:
    python3 bench/bench_plan.py [--sailor ./sailor] [--repeats 5]

Figures:
  1. per scenario step, with --cost-model sosp25: our plan's throughput (or $/iter for the cost
     scenario) by that model against the SOSP'25 planner's recorded result;
  2. with the default (sailor) cost model: our plan against the SOSP'25 plan re-simulated by our
     model;
  3. the whole `sailor plan` process per scenario trace (median of --repeats runs) against that
     planner's recorded start-up plus search time;
  4. scale: 3 GPU types x 256 GPUs in one zone, and spread over 5 zones in 2 regions;
  5. search time versus pool size and number of GPU types.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCENARIOS = os.path.join(ROOT, "data", "sosp25", "scenarios.json")


def run(cmd):
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        sys.exit(f"bench_plan: {' '.join(cmd)} failed ({proc.returncode}): {proc.stderr}")
    return proc, elapsed


def plan_json(sailor, args):
    proc, elapsed = run([sailor, "plan", "--json"] + args)
    return json.loads(proc.stdout), elapsed


def scenario_args(s):
    args = ["--model", s["model"], "--trace", os.path.join(ROOT, "data", "traces", s["trace"])]
    if s["objective"] == "iteration_cost":
        args += ["--objective", "cost"]
    c = s.get("constraint") or {}
    if "min_throughput_it_s" in c:
        args += ["--min-throughput", str(c["min_throughput_it_s"])]
    if "max_cost_usd_per_iter" in c:
        args += ["--max-cost", str(c["max_cost_usd_per_iter"])]
    return args


def simulate(sailor, model, plan, cost_model):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(plan, f)
        path = f.name
    try:
        proc, _ = run([sailor, "simulate", "--model", model, "--plan", path,
                       "--cost-model", cost_model, "--json"])
        if proc.returncode:
            sys.exit(f"bench_plan: simulate failed: {proc.stderr}")
        return json.loads(proc.stdout)
    finally:
        os.unlink(path)


def quality(sailor, scenarios):
    print("## 1-2. Plan quality on the SOSP'25 scenarios")
    print("| scenario | step | GPUs | SOSP'25 it/s | ours it/s (sosp25 model) | ratio | SOSP'25 $/it | ours $/it |"
          " SOSP'25 plan, our model it/s | ours, our model it/s | ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    wins = total = 0
    for name, s in scenarios.items():
        ours_sosp, _ = plan_json(sailor, scenario_args(s) + ["--cost-model", "sosp25"])
        ours_sailor, _ = plan_json(sailor, scenario_args(s))
        for i, step in enumerate(s["steps"]):
            mine = ours_sosp["steps"][i]
            mine_s = ours_sailor["steps"][i]
            gpus = sum(step["num_gpus"].values())
            theirs_plan = {"mbs": step["plan"]["mbs"], "pipelines": step["plan"]["pipelines"]}
            theirs_ours = simulate(sailor, s["model"], theirs_plan, "sailor")
            e, es = mine["estimate"], mine_s["estimate"]
            thr = e["throughput_it_s"] if e else 0.0
            cost = e["cost_usd_per_iter"] if e else float("nan")
            thr_s = es["throughput_it_s"] if es else 0.0
            if s["objective"] == "iteration_cost":
                ok = e is not None and cost <= step["cost_per_iteration"] * (1 + 1e-9) and thr >= 0.2
            else:
                ok = thr >= step["throughput"] * (1 - 1e-9)
            ok_s = thr_s >= theirs_ours["throughput_it_s"] * (1 - 1e-9) if s["objective"] != "iteration_cost" \
                else (es is not None and es["cost_usd_per_iter"] <= theirs_ours["cost_usd_per_iter"] * (1 + 1e-9))
            wins += ok and ok_s
            total += 1
            print(f"| {name} | {i + 1} | {gpus} | {step['throughput']:.4f} | {thr:.4f} | "
                  f"{thr / step['throughput']:.3f} | {step['cost_per_iteration']:.4f} | {cost:.4f} | "
                  f"{theirs_ours['throughput_it_s']:.4f} | {thr_s:.4f} | "
                  f"{thr_s / theirs_ours['throughput_it_s']:.3f} |")
    print(f"\nsteps where ours is at least as good under both models: {wins} of {total}\n")


def speed(sailor, scenarios, repeats):
    print("## 3. Whole `sailor plan` process per scenario trace (median of %d runs)" % repeats)
    print("| scenario | steps | SOSP'25 start-up + search (s) | ours, whole process (s) | ratio |")
    print("|---|---|---|---|---|")
    for name, s in scenarios.items():
        theirs = s["planner_startup_ms"][0] / 1000 + sum(st["search_time"] for st in s["steps"])
        times = [plan_json(sailor, scenario_args(s) + ["--cost-model", "sosp25"])[1] for _ in range(repeats)]
        ours = statistics.median(times)
        print(f"| {name} | {len(s['steps'])} | {theirs:.2f} | {ours:.4f} | 1/{theirs / ours:.0f} |")
    print()


def pool_file(spec):
    f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    json.dump({"schema": "sailor.pool/1",
               "gpus": [{"gpu": g, "zone": z, "count": n} for (g, z, n) in spec]}, f)
    f.close()
    return f.name


def timed_plan(sailor, spec, repeats, model="OPT-350"):
    path = pool_file(spec)
    try:
        runs = [plan_json(sailor, ["--model", model, "--pool", path]) for _ in range(repeats)]
    finally:
        os.unlink(path)
    doc = runs[-1][0]
    step = doc["steps"][0]
    return (statistics.median(r[1] for r in runs), statistics.median(r[0]["steps"][0]["search_time_s"] for r in runs),
            step["estimate"]["throughput_it_s"] if step["estimate"] else 0.0, step["plans_simulated"])


TYPES = ["A100-40", "V100-16", "GH-96"]
ZONES = ["us-central1-a", "us-central1-b", "us-central1-c", "us-central1-f", "us-west1-b"]


def scale(sailor, repeats):
    print("## 4. Scale (OPT-350, sailor cost model, median of %d runs)" % repeats)
    print("| pool | GPUs | whole process (s) | search (s) | plans simulated | it/s |")
    print("|---|---|---|---|---|---|")
    one_zone = [(g, "us-central1-a", 256) for g in TYPES]
    spread = []
    for g in TYPES:
        base, extra = divmod(256, len(ZONES))
        for i, z in enumerate(ZONES):
            spread.append((g, z, base + (1 if i < extra else 0)))
    for label, spec in (("3 types x 256, one zone", one_zone),
                        ("3 types x 256, 5 zones in 2 regions", spread)):
        wall, search, thr, sims = timed_plan(sailor, spec, repeats)
        print(f"| {label} | {sum(n for _, _, n in spec)} | {wall:.3f} | {search:.3f} | {sims} | {thr:.3f} |")
    print()


def growth(sailor, repeats):
    print("## 5. Search time versus pool size and GPU types (one zone, median of %d runs)" % repeats)
    sizes = [16, 64, 256, 1024]
    print("| GPUs per type | " + " | ".join(f"{n} type{'s' if n > 1 else ''}" for n in (1, 2, 3)) + " |")
    print("|---|---|---|---|")
    for size in sizes:
        row = []
        for ntypes in (1, 2, 3):
            spec = [(g, "us-central1-a", size) for g in TYPES[:ntypes]]
            _, search, _, sims = timed_plan(sailor, spec, repeats)
            row.append(f"{search * 1000:.1f} ms ({sims} plans)")
        print(f"| {size} | " + " | ".join(row) + " |")
    print()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sailor", default=os.environ.get("SAILOR", os.path.join(ROOT, "sailor")))
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    scenarios = json.load(open(SCENARIOS))["scenarios"]
    quality(args.sailor, scenarios)
    speed(args.sailor, scenarios, args.repeats)
    scale(args.sailor, max(1, args.repeats // 2))
    growth(args.sailor, max(1, args.repeats // 2))


if __name__ == "__main__":
    main()
