#!/usr/bin/env python3
"""Planner benchmark: quality and speed against the SOSP'25 planner on its own scenarios, scale on
large pools, and how search time grows with pool size and number of GPU types.

Prints figures; never fails on speed (only on a broken run). Run from the repository root:
    python3 bench/bench_plan.py [--sailor ./sailor] [--repeats 3] [--baseline OLD_SAILOR]
                                [--speed-only] [--pools-only] [--sync-auto]
With --baseline, sections 3, 4 and 6 time that binary too ("before"), interleaved with --sailor
("after") in the same loop, so both see the same load on a shared machine: report their ratio,
not absolute times alone. Build a baseline from a commit without touching the work tree:
    mkdir /tmp/old && git archive COMMIT | tar -x -C /tmp/old && make -C /tmp/old

Figures:
  1. per scenario step, with --cost-model sosp25: our plan's throughput (or $/iter for the cost
     scenario) by that model against the SOSP'25 planner's recorded result;
  2. with the default (sailor) cost model: our plan against the SOSP'25 plan re-simulated by our
     model;
  3. per scenario and cost model (memory options on, the default): the whole `sailor plan`
     process over the scenario's trace (median of --repeats runs) against that planner's
     recorded start-up plus search time, the plans simulated, and the time by phase (start-up:
     the process less its searches; the searches' phases from `sailor plan --json`);
  4. the benchmark pool set, bench/plan_pools/cases.json (one step each: 2-3 GPU types over 1-5
     zones in 1-3 regions, 64 to 768 GPUs, throughput and cost objectives with and without a
     budget; among them the scale pools, 3 GPU types x 256 GPUs in one zone and over 5 zones in
     2 regions) under both cost models: the same figures, against the SOSP'25 planner's time
     where the set records one (sosp25_planner_s; "> N (stopped)" where it was stopped after
     sosp25_planner_min_s, "could not run" where sosp25_planner_note says why, "not yet
     measured" otherwise; bench/sosp25_planner_time.py measures it);
  5. search time versus pool size and number of GPU types;
  6. with --sync-auto: section 3 for the sailor model with `--sync auto` (island plans compete),
     beside the same process with the default `--sync every-step`.
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


PHASES = ("plain", "variants", "options", "refine", "uneven", "relaxed", "islands")


def plan_figures(binary, args):
    """One `sailor plan --json` run: wall seconds, plans simulated, and seconds by phase
    (start-up = wall less the searches, whose steps overlap where the binary reports searches_s;
    phases absent from older binaries are None; with overlapping steps the phases' sums can
    exceed the wall)."""
    doc, wall = plan_json(binary, args)
    steps = doc["steps"]
    search = doc.get("searches_s", sum(st.get("search_time_s", 0.0) for st in steps))
    phases = {"start-up": wall - search}
    for ph in PHASES:
        if all(ph in st.get("search_phases", {}) for st in steps):
            phases[ph] = sum(st["search_phases"][ph]["time_s"] for st in steps)
        else:
            phases[ph] = None
    return wall, sum(st.get("plans_simulated", 0) for st in steps), phases


def timed(binaries, args, repeats):
    """Interleaved runs of each binary: per binary the median wall time, the plans simulated
    (the last run's: with several threads the count varies a little from run to run) and the
    median seconds of each phase."""
    runs = {b: [] for b in binaries}
    for _ in range(repeats):
        for b in binaries:
            runs[b].append(plan_figures(b, args))
    out = {}
    for b, rs in runs.items():
        phases = {}
        for key in rs[0][2]:
            values = [r[2][key] for r in rs if r[2][key] is not None]
            phases[key] = statistics.median(values) if values else None
        out[b] = (statistics.median(r[0] for r in rs), rs[-1][1], phases)
    return out


def phase_text(phases):
    shown = [(k, v) for k, v in phases.items() if v is not None and (k == "start-up" or v >= 0.0005)]
    return ", ".join(f"{k} {v * 1000:.0f}" for k, v in shown) if shown else "-"


def speed_rows(label, args, repeats, sailor, baseline, theirs, with_theirs=None, theirs_none=None,
               theirs_floor=None):
    """One row; with_theirs (default: whether theirs is given) adds the SOSP'25 columns, which
    say theirs_none ("not yet measured" by default) where theirs is None, or "> theirs_floor"
    with a lower-bound ratio where that planner was stopped at theirs_floor seconds."""
    with_theirs = theirs is not None if with_theirs is None else with_theirs
    binaries = [baseline, sailor] if baseline else [sailor]
    got = timed(binaries, args, repeats)
    after = got[sailor]
    cells = [label]
    if theirs is not None:
        ratio = lambda ours: f"{theirs / ours:.0f}x"
    elif theirs_floor is not None:
        ratio = lambda ours: f"> {theirs_floor / ours:.0f}x"
    else:
        ratio = lambda ours: "-"
    if with_theirs:
        if theirs is not None:
            cells.append(f"{theirs:.2f}")
        elif theirs_floor is not None:
            cells.append(f"> {theirs_floor:.0f} (stopped)")
        else:
            cells.append(theirs_none or "not yet measured")
    if baseline:
        before = got[baseline]
        cells += [f"{before[0]:.3f}", f"{after[0]:.3f}", f"{after[0] / before[0]:.2f}"]
        if with_theirs:
            cells += [ratio(before[0]), ratio(after[0])]
        cells += [f"{before[1]}", f"{after[1]}"]
    else:
        cells.append(f"{after[0]:.3f}")
        if with_theirs:
            cells.append(ratio(after[0]))
        cells.append(f"{after[1]}")
    cells.append(phase_text(after[2]))
    print("| " + " | ".join(cells) + " |", flush=True)


def speed_header(baseline, with_theirs):
    cols = ["case"]
    if with_theirs:
        cols.append("SOSP'25 start-up + search (s)")
    if baseline:
        cols += ["before (s)", "after (s)", "after/before"]
        if with_theirs:
            cols += ["SOSP'25/before", "SOSP'25/after"]
        cols += ["plans simulated before", "after"]
    else:
        cols.append("whole process (s)")
        if with_theirs:
            cols.append("SOSP'25/ours")
        cols.append("plans simulated")
    cols.append("after: ms by phase")
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))


def speed(sailor, scenarios, repeats, baseline=None):
    print("## 3. Whole `sailor plan` process per scenario trace and cost model (median of %d runs%s)"
          % (repeats, ", interleaved with the baseline" if baseline else ""))
    speed_header(baseline, True)
    for name, s in scenarios.items():
        theirs = s["planner_startup_ms"][0] / 1000 + sum(st["search_time"] for st in s["steps"])
        for cm in ("sailor", "sosp25"):
            speed_rows(f"{name}, {cm}", scenario_args(s) + ["--cost-model", cm], repeats, sailor,
                       baseline, theirs)
    print()


def speed_sync_auto(sailor, scenarios, repeats, baseline=None):
    print("## 6. Whole `sailor plan` process per scenario trace with `--sync auto` (sailor model, "
          "median of %d runs; the every-step run of the same scenario timed in the same loop%s)"
          % (repeats, "; the baseline interleaved with it" if baseline else ""))
    if baseline:
        cols = ["scenario", "SOSP'25 start-up + search (s)", "every-step before (s)",
                "every-step after (s)", "auto before (s)", "auto after (s)", "auto after/before",
                "SOSP'25/every-step after", "SOSP'25/auto before", "SOSP'25/auto after",
                "plans simulated auto before", "after", "auto after: ms by phase"]
    else:
        cols = ["scenario", "SOSP'25 start-up + search (s)", "every-step (s)", "auto (s)",
                "auto/every-step", "SOSP'25/every-step", "SOSP'25/auto",
                "plans simulated every-step", "auto", "auto: ms by phase"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    binaries = [baseline, sailor] if baseline else [sailor]
    for name, s in scenarios.items():
        theirs = s["planner_startup_ms"][0] / 1000 + sum(st["search_time"] for st in s["steps"])
        args = scenario_args(s) + ["--cost-model", "sailor"]
        every = timed(binaries, args, repeats)
        auto = timed(binaries, args + ["--sync", "auto"], repeats)
        got, aut = every[sailor], auto[sailor]
        if baseline:
            was = auto[baseline]
            print(f"| {name} | {theirs:.2f} | {every[baseline][0]:.3f} | {got[0]:.3f} "
                  f"| {was[0]:.3f} | {aut[0]:.3f} | {aut[0] / was[0]:.2f} | {theirs / got[0]:.0f}x "
                  f"| {theirs / was[0]:.0f}x | {theirs / aut[0]:.0f}x | {was[1]} | {aut[1]} "
                  f"| {phase_text(aut[2])} |", flush=True)
        else:
            print(f"| {name} | {theirs:.2f} | {got[0]:.3f} | {aut[0]:.3f} | {aut[0] / got[0]:.2f} "
                  f"| {theirs / got[0]:.0f}x | {theirs / aut[0]:.0f}x | {got[1]} | {aut[1]} "
                  f"| {phase_text(aut[2])} |", flush=True)
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
POOL_SET = os.path.join(ROOT, "bench", "plan_pools", "cases.json")


def pool_case_args(case):
    """`sailor plan` arguments of a case of the benchmark pool set: a budget is --max-cost for
    the throughput objective and --min-throughput for the cost objective (0: none)."""
    args = ["--model", case["model"],
            "--pool", os.path.join(os.path.dirname(POOL_SET), case["pool"])]
    if case["objective"] == "cost":
        args += ["--objective", "cost"]
    if case.get("max_cost_usd_per_iter"):
        args += ["--max-cost", str(case["max_cost_usd_per_iter"])]
    if case.get("min_throughput_it_s"):
        args += ["--min-throughput", str(case["min_throughput_it_s"])]
    return args


def pool_set(sailor, repeats, baseline=None):
    print("## 4. The benchmark pool set (bench/plan_pools/cases.json, one step each; whole `sailor "
          "plan` process, median of %d runs%s; plans simulated: the last run's, on the default "
          "threads)" % (repeats, ", interleaved with the baseline" if baseline else ""))
    speed_header(baseline, True)
    for case in json.load(open(POOL_SET))["cases"]:
        theirs = case.get("sosp25_planner_s")
        floor = case.get("sosp25_planner_min_s")
        none = "could not run" if case.get("sosp25_planner_note") else None
        for cm in ("sailor", "sosp25"):
            speed_rows(f"{case['name']} ({case['model']}), {cm}",
                       pool_case_args(case) + ["--cost-model", cm], repeats, sailor, baseline,
                       theirs, with_theirs=True, theirs_none=none, theirs_floor=floor)
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
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--baseline", help="an older sailor binary to time beside --sailor")
    parser.add_argument("--speed-only", action="store_true",
                        help="the timings only (sections 3 to 5), not the plan quality")
    parser.add_argument("--sync-auto", action="store_true",
                        help="only section 6: the scenarios with --sync auto beside every-step")
    parser.add_argument("--pools-only", action="store_true",
                        help="section 4 only: the benchmark pool set")
    args = parser.parse_args()
    scenarios = json.load(open(SCENARIOS))["scenarios"]
    print(f"# bench_plan.py, {time.strftime('%Y-%m-%d %H:%M')}; {os.cpu_count()} cores, load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} at the start")
    print(f"# after: {args.sailor}" + (f"; before: {args.baseline}" if args.baseline else "") + "\n")
    if args.pools_only:
        pool_set(args.sailor, args.repeats, args.baseline)
        return
    if args.sync_auto:
        speed_sync_auto(args.sailor, scenarios, args.repeats, args.baseline)
        return
    if not args.speed_only:
        quality(args.sailor, scenarios)
    speed(args.sailor, scenarios, args.repeats, args.baseline)
    pool_set(args.sailor, args.repeats, args.baseline)
    growth(args.sailor, args.repeats)


if __name__ == "__main__":
    main()
