#!/usr/bin/env python3
"""The planner's own choices on a geo testbed, measured (bench/islands/loop.sh calls it; issue:
the planner chooses islands, item 5).

    planner_loop.py --work W --cluster C --env E --desc D [--quick] [--sailor BIN]

The testbed is up (cluster file C) and profiled (E/profiles, E/network.json:
bench/testbed/profile_testbed.sh). Three plans of `sailor plan` on its pool, the same global batch:

  auto         the first plan of `--sync auto` (islands where the planner predicts they pay);
  sync         the first plan of the default `--sync every-step`;
  sync-region  the best synchronous plan within one region: `sailor plan` on each region's GPUs
               alone, the one predicted fastest (the same run as `sync` where the two are one plan).

Each is run with `sailor run` on the real text of W/corpus with a held-out loss every few steps.
The synchronous plans train the same samples step for step (same global batch, seed and data:
docs/run.md), so `sync`'s final validation loss after N steps is the target; an island plan
trains other tokens, so it runs up to 1.5 N steps and the target is looked for on its curve.
Measured: the training wall time (evaluations left out) and tokens to the target, and the bytes
sent between regions (tc's counters). Predicted: each plan's effective tokens per second (an
island plan's trained tokens per second times its token value), so that the planner's
predicted time to the target is the synchronous run's tokens to it over that figure. Written:
W/loop/index.json and W/loop/results.md (the table and whether the targets were met: auto at
least 2x sooner than the best synchronous plan, and the planner's ranking of the three the
measured one).
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from islands_bench import (MODEL, ROOT, SEED, SEQ, TESTBED_GPUS, CONFIG, crossing, curve_of,  # noqa: E402
                           log, run_sailor, tc_region_bytes, testbed_layout, write_json)


def pool_of(cluster, zones=None):
    """The cluster's devices as a sailor.pool/1 (only those in zones, when given)."""
    counts = {}
    for h in cluster["hosts"]:
        if zones is None or h["zone"] in zones:
            counts[(h["gpu"], h["zone"])] = counts.get((h["gpu"], h["zone"]), 0) + h["slots"]
    return {"schema": "sailor.pool/1",
            "gpus": [{"gpu": g, "zone": z, "count": n} for (g, z), n in sorted(counts.items())]}


def plan(a, out_dir, name, pool, global_batch, extra):
    """`sailor plan` on pool: (the plan, the step's JSON), or None when nothing fits."""
    pool_path = os.path.join(out_dir, name + ".pool.json")
    write_json(pool_path, pool)
    plan_path = os.path.join(out_dir, name + ".plan.json")
    cmd = ["timeout", "300", a.sailor, "plan", "--model", MODEL, "--pool", pool_path,
           "--global-batch", str(global_batch), "--gpus", TESTBED_GPUS,
           "--profiles", os.path.join(a.env, "profiles"),
           "--network", os.path.join(a.env, "network.json"), "--cluster", a.cluster,
           "--json", "-o", plan_path] + extra
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    with open(os.path.join(out_dir, name + ".plan.cmd"), "w") as f:
        f.write(" ".join(cmd) + "\n")
    if proc.returncode == 1 and "no plan" in proc.stderr:
        log(f"loop {name}: {proc.stderr.strip()}")
        return None
    if proc.returncode:
        raise SystemExit(f"planner_loop: `sailor plan` for {name} failed (exit "
                         f"{proc.returncode}): {proc.stderr.strip()}")
    with open(plan_path) as f:
        return json.load(f), json.loads(proc.stdout)["steps"][0]


def effective_tokens_per_s(step):
    sync = step.get("sync") or {}
    if sync.get("mode") == "islands":
        return sync["effective_tokens_per_s"]
    return step["estimate"]["tokens_per_s"]


def candidates(a, out_dir, cluster, global_batch, cfg):
    """{name: (plan, step)} of auto, sync and sync-region, and which runs stand for which."""
    pool = pool_of(cluster)
    found = {"auto": plan(a, out_dir, "auto", pool, global_batch,
                          ["--sync", "auto", "--max-inner-steps", str(cfg["tb_h"])]),
             "sync": plan(a, out_dir, "sync", pool, global_batch, [])}
    regions = {}
    for h in cluster["hosts"]:
        regions.setdefault(h["zone"].rsplit("-", 1)[0], set()).add(h["zone"])
    best = None
    for region, zones in sorted(regions.items()):
        got = plan(a, out_dir, "region-" + region, pool_of(cluster, zones), global_batch, [])
        if got and (best is None or effective_tokens_per_s(got[1]) >
                    effective_tokens_per_s(best[1])):
            best = got
    found["sync-region"] = best
    for name, got in found.items():
        if got is None:
            raise SystemExit(f"planner_loop: no {name} plan on this testbed")
    same = {"sync-region": "sync"} if found["sync-region"][0] == found["sync"][0] else {}
    return found, same


def phase_loop(a, cfg):
    out_dir = os.path.join(a.work, "loop")
    os.makedirs(out_dir, exist_ok=True)
    with open(a.desc) as f:
        desc = json.load(f)
    with open(a.cluster) as f:
        cluster = json.load(f)
    layout = testbed_layout(desc)
    G = cfg["tb_micro_batch"] * cfg["tb_microbatches"]
    found, same = candidates(a, out_dir, cluster, G, cfg)
    corpus = os.path.join(a.work, "corpus")
    base = ["--cluster", a.cluster, "--gpus", TESTBED_GPUS, "--data", f"{corpus}/train.bin",
            "--seq-len", str(SEQ), "--shuffle", "--seed", str(SEED),
            "--val-data", f"{corpus}/val.bin", "--val-windows", str(cfg["tb_val_windows"]),
            "--log-every", "1"]
    N = cfg["tb_steps"]
    steps = {"sync": N, "sync-region": N, "auto": int(round(N * cfg["tb_isl_steps_factor"]))}
    every = {"sync": cfg["tb_eval_every"], "sync-region": cfg["tb_eval_every"],
             "auto": cfg["tb_isl_eval_every"]}
    record = {"config": cfg, "desc": desc, "global_batch": G, "runs": {}}
    curves = {}
    for name in ("sync", "sync-region", "auto"):
        if name in same:
            continue
        plan_path = os.path.join(out_dir, name + ".plan.json")
        before = tc_region_bytes(desc, layout)
        log(f"loop {name}: {steps[name]} steps")
        events = run_sailor(a.sailor, ["--plan", plan_path] + base +
                            ["--steps", str(steps[name]), "--eval-every", str(every[name])],
                            out_dir, name, 120 + 3.0 * steps[name])
        sent = tc_region_bytes(desc, layout) - before
        curves[name] = curve_of(events)
        record["runs"][name] = {"steps": steps[name], "region_bytes": sent}
    for name, other in same.items():
        curves[name] = curves[other]
        record["runs"][name] = dict(record["runs"][other], same_as=other)
    target = curves["sync"]["points"][-1]["val"]
    target_tokens = crossing(curves["sync"]["points"], target, "tokens")
    rows = []
    for name in ("auto", "sync", "sync-region"):
        step = found[name][1]
        c = curves[name]
        eff = effective_tokens_per_s(step)
        r = record["runs"][name]
        r.update({"predicted_effective_tokens_per_s": eff,
                  "predicted_wall_to_target_s": target_tokens / eff,
                  "sync": (step.get("sync") or {}).get("mode", "every-step"),
                  "wall_to_target_s": crossing(c["points"], target, "wall"),
                  "tokens_to_target": crossing(c["points"], target, "tokens"),
                  "final_val_loss": c["points"][-1]["val"],
                  "tokens_trained": c["end"]["tokens_per_step"] * r["steps"],
                  "region_bytes_per_token": r["region_bytes"] /
                  (c["end"]["tokens_per_step"] * r["steps"])})
        rows.append((name, r))
    record["target_val_loss"] = target
    write_json(os.path.join(out_dir, "index.json"), record)
    return report(a, record, rows, target)


def report(a, record, rows, target):
    runs = record["runs"]
    lines = ["| plan | sync | predicted effective tokens/s | predicted s to target | measured s to "
             "target | tokens to target | final val loss | bytes between regions / token |",
             "|---|---|---|---|---|---|---|---|"]
    for name, r in rows:
        wall = "never" if r["wall_to_target_s"] is None else f"{r['wall_to_target_s']:.1f}"
        tok = "never" if r["tokens_to_target"] is None else f"{r['tokens_to_target'] / 1e6:.3f} M"
        lines.append(f"| `{name}`{' (= ' + r['same_as'] + ')' if 'same_as' in r else ''} | "
                     f"{r['sync']} | {r['predicted_effective_tokens_per_s']:.0f} | "
                     f"{r['predicted_wall_to_target_s']:.1f} | {wall} | {tok} | "
                     f"{r['final_val_loss']:.4f} | {r['region_bytes_per_token']:.1f} |")
    best_sync = min((runs[n]["wall_to_target_s"] for n in ("sync", "sync-region")
                     if runs[n]["wall_to_target_s"] is not None), default=None)
    auto = runs["auto"]["wall_to_target_s"]
    lines.append("")
    lines.append(f"Target: the synchronous plan's final validation loss, {target:.4f}.")
    if auto is not None and best_sync:
        ratio = best_sync / auto
        lines.append(f"auto reaches it {ratio:.2f}x sooner than the best synchronous plan "
                     f"(target 2x: {'met' if ratio >= 2 else f'missed by {2 - ratio:.2f}x'}).")
    else:
        lines.append("auto never reached it within its steps: target missed.")
    measured = sorted((n for n, r in rows if r["wall_to_target_s"] is not None),
                      key=lambda n: runs[n]["wall_to_target_s"])
    predicted = sorted((n for n, _ in rows), key=lambda n: runs[n]["predicted_wall_to_target_s"])
    # a plan run once for two names ties with itself: the order between them is no verdict
    tied = {frozenset((n, r["same_as"])) for n, r in rows if "same_as" in r}
    right = len(measured) == len(predicted) and all(
        p == m or frozenset((p, m)) in tied for p, m in zip(predicted, measured))
    lines.append(f"Ranking, predicted: {', '.join(predicted)}; measured: {', '.join(measured)} "
                 f"({'right' if right else 'wrong'}).")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(a.work, "loop", "results.md"), "w") as f:
        f.write(text)
    print(text)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", required=True)
    ap.add_argument("--cluster", required=True, help="the testbed's cluster file")
    ap.add_argument("--env", required=True, help="profile_testbed.sh's output (profiles/, "
                                                 "network.json)")
    ap.add_argument("--desc", required=True, help="the testbed description")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sailor", default=os.path.join(ROOT, "sailor"))
    a = ap.parse_args()
    sys.exit(phase_loop(a, CONFIG["quick" if a.quick else "full"]))


if __name__ == "__main__":
    main()
