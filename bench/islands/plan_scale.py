#!/usr/bin/env python3
"""What island plans make possible at real scale: for each model and geo pool, the best
synchronous plan (`sailor plan`, --sync every-step) against the best island plan (--sync
islands) and what auto chooses, under the sailor cost model with the shipped network fits,
egress prices and token values. Prints a markdown table (bench/RESULTS.md, "Island plans at
real scale"). Figures are the planner's predictions, not measurements.

usage: bench/islands/plan_scale.py [--sailor ./sailor]
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
POOLS = [
    ("SOSP'25 Fig. 10, 5 zones x 80 A100 (its trace's largest step)", None),
    ("32 A100-80 + 32 V100 over 3 regions", "bench/plan_pools/a100-80-v100-3regions-64.json"),
    ("32 A100 + 32 V100 over 3 regions", "data/examples/pool-geo-3-regions.json"),
    ("384 GPUs of 3 types, 4 zones on 2 continents", "bench/plan_pools/3types-4zones-2continents-384.json"),
    ("768 GPUs of 3 types, 5 zones in 3 regions", "bench/plan_pools/3types-5zones-3regions-768.json"),
    ("H100 Frankfurt, A100 Iowa and Tokyo (3 continents)", "data/examples/pool-three-continents.json"),
]
MODELS = ["OPT-350", "GPT-Neo-2.7", "LLAMA-3-8"]


def fig10_pool(path):
    """The largest step of the Fig. 10 trace as a pool file."""
    import csv
    rows = list(csv.reader(open(os.path.join(ROOT, "data/traces/gpu_trace_multizone.csv"))))
    head, best = rows[0], max(rows[1:], key=lambda r: sum(int(x) for x in r[2:]))
    gpus = []
    for col, n in zip(head[2:], best[2:]):
        gpu, zone = col.split("_", 1)
        gpus.append({"gpu": gpu, "zone": zone, "count": int(n)})
    json.dump({"schema": "sailor.pool/1", "gpus": gpus}, open(path, "w"))


def plan(sailor, model, pool, sync):
    p = subprocess.run([sailor, "plan", "--model", model, "--pool", pool, "--sync", sync, "--json"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return None, p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "failed"
    return json.loads(p.stdout)["steps"][0], None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sailor", default=os.environ.get("SAILOR", os.path.join(ROOT, "sailor")))
    args = ap.parse_args()
    fig10 = "/tmp/sailor-plan-scale-fig10.json"
    fig10_pool(fig10)
    print("| pool | model | best synchronous plan: GPUs, it/s, $/iter | best island plan: GPUs, "
          "islands, H, wire, it/s trained, token value, it/s effective, $/iter effective, outer "
          "bytes per 1k tokens | auto chooses |")
    print("|---|---|---|---|---|")
    for name, pool in POOLS:
        path = os.path.join(ROOT, pool) if pool else fig10
        for model in MODELS:
            sync, serr = plan(args.sailor, model, path, "every-step")
            isl, ierr = plan(args.sailor, model, path, "islands")
            auto, _ = plan(args.sailor, model, path, "auto")
            if sync:
                e = sync["estimate"]
                sc = f"{e['num_gpus']}, {e['throughput_it_s']:.4f}, {e['cost_usd_per_iter']:.3f}"
            else:
                sc = "none: " + serr
            if isl:
                s, e, pl = isl["sync"], isl["estimate"], isl["plan"]["islands"]
                h = pl["inner_steps"] if isinstance(pl["inner_steps"], list) else [pl["inner_steps"]]
                ic = (f"{e['num_gpus']}, {s['islands']}, {max(h)}, {pl['wire']}, "
                      f"{s['trained_tokens_per_s'] / s['effective_tokens_per_s'] * s['effective_it_per_s']:.4f}, "
                      f"{s['token_value']:.2f}, {s['effective_it_per_s']:.4f}, "
                      f"{s['effective_cost_usd_per_iter']:.3f}, {s['outer_bytes_per_1k_tokens']:.0f}")
            else:
                ic = "none: " + ierr
            choice = auto["sync"]["mode"] if auto else "-"
            print(f"| {name} | {model} | {sc} | {ic} | {choice} |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
