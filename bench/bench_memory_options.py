#!/usr/bin/env python3
"""What activation recomputation and ZeRO-1 make plannable, and what they cost the search.

Prints figures; never fails on speed (only on a broken run). Run from the repository root:
    python3 bench/bench_memory_options.py [--sailor ./sailor] [--repeats 5] [--quick]

Figures:
  1. per model (OPT-350, GPT-Neo-2.7, LLAMA-3-8, OPT-30) and pool (every step of the SOSP'25
     traces, plus a few pools chosen here), the best plan for throughput found by
     `sailor plan --memory-options off` (the search as it was before the options: the same plans)
     and by the default search with them: throughput, $/iteration, and the options the plan uses;
  2. search speed on the SOSP'25 scenarios (their traces, objectives and constraints): the whole
     `sailor plan` process with and without options, interleaved, median of --repeats runs each,
     and the ratio of the medians. Both run on this machine in this command: the ratio is the
     figure, the absolute times depend on the machine's load. --baseline OLD_SAILOR also times
     an earlier build's search without options, interleaved with the others.
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
MODELS = ["OPT-350", "GPT-Neo-2.7", "LLAMA-3-8", "OPT-30"]
TRACES = ["gpu_trace_scaled.csv", "gpu_trace_heterogeneous_imbalanced.csv",
          "gpu_trace_2zones_2gpus.csv", "gpu_trace_multizone.csv"]
# pools chosen here: the two LLAMA-3-8 targets, a small V100 pool, and the README's
# two-zone example
CHOSEN = {
    "32 A100-80, 1 zone": [("A100-80", "us-central1-a", 32)],
    "64 A100-40, 2 zones": [("A100-40", "us-central1-a", 32), ("A100-40", "us-central1-b", 32)],
    "16 V100-16, 1 zone": [("V100-16", "us-central1-a", 16)],
    "examples/pool-a100-v100": "data/examples/pool-a100-v100.json",
}


def run(cmd):
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        sys.exit(f"bench_memory_options: {' '.join(cmd)} failed ({proc.returncode}): {proc.stderr}")
    return proc, elapsed


def pool_file(spec, folder):
    if isinstance(spec, str):
        return os.path.join(ROOT, spec)
    path = os.path.join(folder, f"pool-{abs(hash(str(spec)))}.json")
    with open(path, "w") as f:
        json.dump({"schema": "sailor.pool/1",
                   "gpus": [{"gpu": g, "zone": z, "count": n} for g, z, n in spec]}, f)
    return path


def plans(sailor, args, options):
    """Best plan per step: (throughput it/s, $/iter, options text) or None when nothing fits."""
    proc, _ = run([sailor, "plan", "--json", "--memory-options", options] + args)
    if proc.returncode:
        return [None]
    out = []
    for step in json.loads(proc.stdout)["steps"]:
        if not step.get("plan"):
            out.append(None)
            continue
        est = step["estimate"]
        used = []
        for s in step["plan"]["stages"]:
            if s.get("recompute"):
                used.append(s["recompute"])
        tags = []
        for kind in ("full", "selective"):
            if used.count(kind):
                tags.append(f"{kind} x{used.count(kind)}")
        if any(s.get("zero") for s in step["plan"]["stages"]):
            tags.append("ZeRO-1")
        gpus = est["num_gpus"]
        out.append((est["throughput_it_s"], est["cost_usd_per_iter"], ", ".join(tags) or "-", gpus))
    return out


def fmt(p):
    if p is None:
        return "no plan", "-"
    return f"{p[0]:.4f}", f"{p[1]:.3f}"


def table(sailor, quick):
    print("## 1. What becomes plannable (objective throughput, sailor cost model)")
    print("| model | pool | before: it/s | before: $/it | after: it/s | after: $/it | after: GPUs | options used |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        pools = []
        for trace in TRACES:
            pools.append((trace.replace("gpu_trace_", "").replace(".csv", ""),
                          ["--trace", os.path.join(ROOT, "data", "traces", trace)]))
        for name, spec in CHOSEN.items():
            pools.append((name, ["--pool", pool_file(spec, folder)]))
        for model in MODELS:
            for name, pargs in pools:
                if quick and pargs[0] == "--trace" and model in ("OPT-30", "LLAMA-3-8"):
                    continue
                args = ["--model", model] + pargs
                before = plans(sailor, args, "off")
                after = plans(sailor, args, "on")
                steps = max(len(before), len(after))
                for i in range(steps):
                    b = before[i] if i < len(before) else None
                    a = after[i] if i < len(after) else None
                    label = f"{name} step {i}" if pargs[0] == "--trace" else name
                    bt, bc = fmt(b)
                    at, ac = fmt(a)
                    print(f"| {model} | {label} | {bt} | {bc} | {at} | {ac} | "
                          f"{a[3] if a else '-'} | {a[2] if a else '-'} |", flush=True)
    print()


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


def speed(sailor, repeats, baseline=None):
    print(f"## 2. Search speed on the SOSP'25 scenarios (whole `sailor plan` process, median of "
          f"{repeats}, interleaved)")
    extra_head = " | earlier build, without (s) | ratio with/earlier" if baseline else ""
    print(f"| scenario | without options (s) | with options (s) | ratio with/without{extra_head} |")
    print("|---|---|---|---|" + ("---|---|" if baseline else ""))
    with open(SCENARIOS) as f:
        scenarios = json.load(f)["scenarios"]
    ratios, earlier_ratios = [], []
    for name, s in scenarios.items():
        args = scenario_args(s)
        off, on, earlier = [], [], []
        for _ in range(repeats):
            off.append(run([sailor, "plan", "--memory-options", "off"] + args)[1])
            on.append(run([sailor, "plan", "--memory-options", "on"] + args)[1])
            if baseline:
                earlier.append(run([baseline, "plan", "--memory-options", "off"] + args)[1])
        m_off, m_on = statistics.median(off), statistics.median(on)
        ratios.append(m_on / m_off)
        extra = ""
        if baseline:
            m_earlier = statistics.median(earlier)
            earlier_ratios.append(m_on / m_earlier)
            extra = f" | {m_earlier:.3f} | {m_on / m_earlier:.2f}"
        print(f"| {name} | {m_off:.3f} | {m_on:.3f} | {m_on / m_off:.2f}{extra} |", flush=True)
    print(f"\nratio of medians: worst {max(ratios):.2f}, median {statistics.median(ratios):.2f} "
          f"(target: at most 2)")
    if baseline:
        print(f"against the earlier build ({baseline}) without options: worst "
              f"{max(earlier_ratios):.2f}, median {statistics.median(earlier_ratios):.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sailor", default=os.environ.get("SAILOR", os.path.join(ROOT, "sailor")))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true",
                        help="skip the large models on the trace pools")
    parser.add_argument("--speed-only", action="store_true")
    parser.add_argument("--baseline", help="an earlier build of sailor whose search without "
                        "options is timed too (e.g. one built from the commit before a change)")
    a = parser.parse_args()
    if not a.speed_only:
        table(a.sailor, a.quick)
    speed(a.sailor, a.repeats, a.baseline)


if __name__ == "__main__":
    main()
