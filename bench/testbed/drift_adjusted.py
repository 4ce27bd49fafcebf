#!/usr/bin/env python3
"""Separates this machine's drift from the model's error in a validation set measured with
SPEED_PROBE=1 (validation.sh): before and after each run, validation.sh profiled each device
class the plan uses for a few seconds (TP 1, the plan's micro-batch). A class's speed factor for
a run is the block's forward + backward time in those probes (their mean) over the same in the
set's profile. The plan is then predicted again from the set's profiles with each class's layer
times scaled by its factor, and both errors are printed: the set's error as `sailor validate`
sees it, and the error with the machine's speed of the run's minutes, which is what is left for
the model. Where a plan ran in several rounds, each round is predicted with its own probes and
compared with its own median step; the plan's errors are the rounds' means.

usage: drift_adjusted.py SET_DIR MODEL [SAILOR]   (SAILOR: build/sailor)
Prints a Markdown table and a summary line (mean / median / max of |error|, both ways)."""
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"drift_adjusted: {path}: {e}")


def block_s(profile, mbs):
    """The block's forward + backward seconds at (mbs, TP 1): layer 1 of the profile."""
    entry = profile.get(str(mbs), {}).get("1", {}).get("1")
    if not entry:
        return None
    return entry[0] + entry[1]


def end_event(path):
    end = None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                event = json.loads(line)
                if event.get("event") == "end":
                    end = event
    return end


def scaled_profiles(src_dir, dst_dir, factors):
    """Copies src_dir's profiles to dst_dir with each class's layer times times its factor."""
    for path in glob.glob(os.path.join(src_dir, "*.json")):
        name = os.path.basename(path)[:-5]
        profile = load_json(path)
        f = factors.get(name)
        if f is not None:
            for key, per_tp in profile.items():
                if not key.isdigit():
                    continue
                for per_layer in per_tp.values():
                    for layer, times in per_layer.items():
                        per_layer[layer] = [t * f for t in times]
        with open(os.path.join(dst_dir, name + ".json"), "w") as out:
            json.dump(profile, out)


def predict(sailor, model, plan_path, profiles_dir, env):
    out = subprocess.run(
        [sailor, "simulate", "--model", model, "--plan", plan_path, "--profiles", profiles_dir,
         "--gpus", os.path.join(env, "gpus.json"), "--network", os.path.join(env, "network.json"),
         "--cluster", os.path.join(env, "cluster.json"), "--json"],
        capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"drift_adjusted: sailor simulate failed on {plan_path}: {out.stderr.strip()}")
    return json.loads(out.stdout)["iteration_time_s"]


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    set_dir, model = sys.argv[1], sys.argv[2]
    sailor = sys.argv[3] if len(sys.argv) == 4 else "build/sailor"
    env = os.path.join(set_dir, "env")
    base_dir = os.path.join(env, "profiles", model)
    if not os.path.isdir(os.path.join(env, "speed")):
        sys.exit(f"drift_adjusted: {env}/speed is missing: measure the set with SPEED_PROBE=1 "
                 "(bench/testbed/validation.sh)")
    base = {os.path.basename(p)[:-5]: load_json(p)
            for p in glob.glob(os.path.join(base_dir, "*.json"))}
    if not base:
        sys.exit(f"drift_adjusted: no profiles in {base_dir}")
    rows, raw_errors, adjusted_errors = [], [], []
    work = tempfile.mkdtemp(prefix="sailor-drift-")
    try:
        for plan_path in sorted(glob.glob(os.path.join(set_dir, "*.json"))):
            plan = load_json(plan_path)
            name = os.path.basename(plan_path)[:-5]
            mbs = plan["micro_batch"]
            runs = sorted(glob.glob(os.path.join(env, "raw", name + ".out")) +
                          glob.glob(os.path.join(env, "raw", name + ".r*.out")))
            predicted_raw = predict(sailor, model, plan_path, os.path.join(env, "profiles"), env)
            errs_raw, errs_adj, notes = [], [], []
            for run in runs:
                r = os.path.basename(run)[:-4]
                end = end_event(run)
                if end is None:
                    continue
                measured = end["median_step_time_s"]
                factors = {}
                for cls in base:
                    probes = [os.path.join(env, "speed", f"{r}.{when}", model, cls + ".json")
                              for when in ("before", "after")]
                    times = [block_s(load_json(p), mbs) for p in probes if os.path.exists(p)]
                    times = [t for t in times if t]
                    ref = block_s(base[cls], mbs)
                    if times and ref:
                        factors[cls] = statistics.mean(times) / ref
                if not factors:
                    continue
                tmp = os.path.join(work, r)
                os.makedirs(os.path.join(tmp, model))
                scaled_profiles(base_dir, os.path.join(tmp, model), factors)
                predicted = predict(sailor, model, plan_path, tmp, env)
                errs_raw.append(predicted_raw / measured - 1)
                errs_adj.append(predicted / measured - 1)
                notes.append(" ".join(f"{c} {f:.3f}" for c, f in sorted(factors.items())))
            if not errs_adj:
                rows.append(f"| {name} | no speed probe or no finished run | | | |")
                continue
            raw, adj = statistics.mean(errs_raw), statistics.mean(errs_adj)
            raw_errors.append(abs(raw))
            adjusted_errors.append(abs(adj))
            rows.append(f"| {name} | {raw * 100:+.1f} % | {adj * 100:+.1f} % | "
                        f"{'; '.join(notes)} |")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("| plan | error, the set's profiles | error, profiles at the run's speed | "
          "speed factor per class (probe / profile; one per round) |")
    print("|---|---|---|---|")
    for row in rows:
        print(row)
    if raw_errors:
        def summary(e):
            return (f"{statistics.mean(e) * 100:.1f} / {statistics.median(e) * 100:.1f} / "
                    f"{max(e) * 100:.1f} %")
        print(f"\n{len(raw_errors)} plans, |error| mean / median / max: the set's profiles "
              f"{summary(raw_errors)}; at the run's speed {summary(adjusted_errors)}")


main()
