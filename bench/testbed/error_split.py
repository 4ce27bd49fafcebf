#!/usr/bin/env python3
"""Splits the simulator's error on plans measured in several bring-ups of a testbed into the
part that stays with a plan (the model's) and the part that moves between bring-ups (the
profiles' and the runs' draw on the machine of the day).

Each bring-up is predicted from its own profiles, network file and cluster, so a plan's error in
one bring-up is  e = bias(plan) + noise(bring-up, plan).  The model and the plan are the same in
every bring-up; what differs between a plan's errors is noise alone. With k errors of a plan,
their spread (sample variance, k - 1 degrees of freedom) estimates the noise variance, pooled
over every plan measured at least twice; their mean estimates the bias, less exactly by the
noise over k.

From the pooled noise sigma it prints the floor: what a model with no bias at all would show on
one bring-up of n plans, mean |error| = sigma * sqrt(2 / pi) and the expected largest |error|
of n (Monte Carlo, fixed seed), against the error the sets show.

A bring-up is one of
  - a validation directory: plan files with "measured" and env/{profiles,gpus.json,network.json,
    cluster.json} beside them (data/validation/testbed-* and their bring-ups/*);
  - a loop run directory (bench/testbed/loop.sh's OUT/runN, with its loop-result.json):
    plans/, runs/NAME.rK.out (NAME.out: a loop of one round), profiles/, network.json,
    cluster.json; its device types come from --gpus.
Plans are matched by what they are (stages, replicas, batch sizes, memory options, and the
islands section whole: islands, H, wire, fragments, overlap), not by file name: the loop names its
plans by rank, which differs between runs. Where the bring-ups hold plans of both kinds
(synchronous, and with islands: two islands or more) the split is also made for each kind on its
own (the model's bias on island plans against that on synchronous plans of the same bring-ups).

usage: error_split.py [--gpus FILE] [--sailor PATH] [--json] BRINGUP_DIR BRINGUP_DIR [...]
  --gpus FILE    the device types of loop runs (the loop's GPUS; validation directories have
                 their own env/gpus.json)
  --sailor PATH  the sailor binary (default: build/sailor of this checkout)
  --json         one JSON object instead of the Markdown table and summary
Prints a Markdown table of every plan (its errors in each bring-up where it was measured, their
mean and spread) and the summary."""
import glob
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
# Keys of a plan file that say where it came from or what it measured, not what it is.
NOT_THE_PLAN = {"measured", "note", "source", "predicted", "name", "command"}


def fail(message, status=1):
    print(f"error_split: {message}", file=sys.stderr)
    sys.exit(status)


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{path}: {e}")


def plan_key(plan):
    """What the plan is, as a string two equal plans share whatever their file names (every key
    but NOT_THE_PLAN's: an "islands" section is part of it, so the same pipelines synchronous
    and as islands, or with another H, wire or fragments, are different plans)."""
    return json.dumps({k: v for k, v in plan.items() if k not in NOT_THE_PLAN}, sort_keys=True)


def kind_of(plan):
    """"islands" for a plan of two islands or more, else "synchronous"."""
    islands = plan.get("islands") or {}
    return "islands" if len(islands.get("pipelines", [])) > 1 else "synchronous"


def describe_islands(plan):
    """The islands section in a few words ("" for a synchronous plan)."""
    if kind_of(plan) != "islands":
        return ""
    isl = plan["islands"]
    h = isl.get("inner_steps", 50)
    h = "/".join(map(str, h)) if isinstance(h, list) else str(h)
    return (f" | {len(isl['pipelines'])} islands H{h} {isl.get('wire', 'fp32')}"
            f" F{isl.get('fragments', 1)} overlap{isl.get('overlap_steps', 0)}")


def describe(plan):
    """The plan in one line: micro-batch, then each stage's layers, devices and options (stages
    apart by " ; ": the line goes into a Markdown table)."""
    stages = []
    for stage in plan.get("stages", []):
        first, last = stage.get("layers", [0, 0])
        devices = "+".join(f"{r.get('count', 1)}x{r.get('gpu', '?').removeprefix('cpu-')}"
                           + (f"/tp{r['tp']}" if r.get("tp", 1) != 1 else "")
                           for r in stage.get("replicas", []))
        options = "".join([f" {stage['recompute']}" if stage.get("recompute") else "",
                           " zero1" if stage.get("zero") else ""])
        stages.append(f"{first}-{last} {devices}{options}")
    return (f"mbs{plan.get('micro_batch')} gbs{plan.get('global_batch')}: " + " ; ".join(stages)
            + describe_islands(plan).replace("|", "/"))


def validation_layout(directory):
    """(plan files dir, env paths) of a directory laid out as a validation set."""
    env = os.path.join(directory, "env")
    paths = {"profiles": os.path.join(env, "profiles"), "gpus": os.path.join(env, "gpus.json"),
             "network": os.path.join(env, "network.json"),
             "cluster": os.path.join(env, "cluster.json")}
    for name, path in paths.items():
        if not os.path.exists(path):
            fail(f"{directory}: no {path} (a validation directory needs env/profiles, "
                 "env/gpus.json, env/network.json and env/cluster.json)")
    return directory, paths


def loop_layout(directory, gpus, scratch):
    """Turns a loop run's plans and run outputs into a validation directory under scratch."""
    if not gpus:
        fail(f"{directory} is a loop run: give its device types with --gpus "
             "(the GPUS the loop ran with)")
    out = os.path.join(scratch, f"loop{len(os.listdir(scratch))}")
    os.makedirs(out)
    plans = sorted(glob.glob(os.path.join(directory, "plans", "*.json")))
    if not plans:
        fail(f"{directory}: no plans/*.json")
    for plan_path in plans:
        name = os.path.basename(plan_path)[:-len(".json")]
        rounds = sorted(glob.glob(os.path.join(directory, "runs", f"{name}.r*.out")))
        if not rounds:  # a loop of one round names its run NAME.out
            rounds = glob.glob(os.path.join(directory, "runs", f"{name}.out"))
        if not rounds:
            continue  # planned, not run (the loop stopped early)
        done = subprocess.run([sys.executable, os.path.join(HERE, "run_to_validation.py"),
                               plan_path, *rounds, f"loop run {directory}",
                               os.path.join(out, name + ".json")], capture_output=True, text=True)
        if done.returncode != 0:
            fail(f"{directory}: {name}'s runs: {done.stderr.strip()}")
    paths = {"profiles": os.path.join(directory, "profiles"), "gpus": gpus,
             "network": os.path.join(directory, "network.json"),
             "cluster": os.path.join(directory, "cluster.json")}
    for name, path in paths.items():
        if not os.path.exists(path):
            fail(f"{directory}: no {path}")
    return out, paths


def probe_gaps(paths, plans):
    """What a bring-up's files lack of the probes the model now reads: a bring-up made before a
    probe existed differs from the others by that, not by noise alone."""
    gaps = []
    pairs = load_json(paths["network"]).get("source", {}).get("pairs", [])
    for probe in ("burst_bytes", "whole_message_bytes", "message_cpu"):
        if pairs and not any(probe in pair for pair in pairs):
            gaps.append(f"network {probe}")
    selective = any(stage.get("recompute") == "selective"
                    for plan in plans.values() for stage in plan.get("stages", []))
    for profile_path in glob.glob(os.path.join(paths["profiles"], "*", "*.json")):
        profile = load_json(profile_path)
        name = os.path.basename(profile_path)
        if "idle_wait" not in profile.get("source", {}):
            gaps.append(f"{name} idle_wait")
        if selective and "recompute_attention" not in json.dumps(profile):
            gaps.append(f"{name} recompute_attention (a plan recomputes selectively)")
    return gaps


def predict(sailor, plans_dir, paths):
    """({plan key: (file, time error, real s, simulated s, description, kind)}, the probes its
    files lack) of one bring-up, by `sailor validate`."""
    files = sorted(f for f in glob.glob(os.path.join(plans_dir, "*.json")))
    plans = {os.path.basename(f): load_json(f) for f in files}
    plans = {f: p for f, p in plans.items() if isinstance(p, dict) and "measured" in p}
    if not plans:
        fail(f"{plans_dir}: no plan file with \"measured\"")
    models = {p.get("model") for p in plans.values()}
    if len(models) != 1:
        fail(f"{plans_dir}: plans of several models {sorted(map(str, models))}")
    command = [sailor, "validate", "--model", models.pop(), plans_dir, "--json",
               "--profiles", paths["profiles"], "--gpus", paths["gpus"],
               "--network", paths["network"], "--cluster", paths["cluster"]]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        fail(f"{' '.join(command)} failed:\n{done.stderr.strip()}")
    gaps = probe_gaps(paths, plans)
    report = json.loads(done.stdout)
    errors = {}
    for run in report["runs"]:
        if run.get("time_error") is None:
            continue
        key = plan_key(plans[run["file"]])
        errors[key] = (run["file"], run["time_error"], run["real_s"], run["simulated_s"],
                       describe(plans[run["file"]]), kind_of(plans[run["file"]]))
    return errors, gaps


def expected_max_abs(sigma, n, draws=20000):
    """The expected largest |error| of n plans whose errors are N(0, sigma): Monte Carlo with a
    fixed seed, so the figure repeats."""
    if n <= 0 or sigma <= 0:
        return 0.0
    rng = random.Random(0)
    total = 0.0
    for _ in range(draws):
        total += max(abs(rng.gauss(0.0, sigma)) for _ in range(n))
    return total / draws


def bringup_offsets(bringups, keys):
    """The part of the noise a bring-up shares across its plans: e = bias(plan) + offset(bring-up)
    + residual, fitted by least squares (alternating means; offsets centred on 0), over the plans
    measured at least twice. Returns (each bring-up's offset, None for one that shares no plan
    with the others; the residuals' sd), or ([], None) where there are too few errors to fit
    both. Bring-ups in groups that share no plan with each other are centred together, so their
    offsets are comparable only within a group."""
    cells = [(b, k, errors[k][1]) for b, errors in enumerate(bringups) for k in errors
             if sum(k in other for other in bringups) > 1]
    plans = sorted({k for _, k, _ in cells}, key=keys.index)
    used = sorted({b for b, _, _ in cells})
    dof = len(cells) - len(plans) - len(used) + 1
    if dof <= 0:
        return [], None
    bias = {k: 0.0 for k in plans}
    offset = {b: 0.0 for b in used}
    for _ in range(200):
        for k in plans:
            bias[k] = statistics.fmean(e - offset[b] for b, kk, e in cells if kk == k)
        for b in used:
            offset[b] = statistics.fmean(e - bias[k] for bb, k, e in cells if bb == b)
        centre = statistics.fmean(offset.values())
        offset = {b: o - centre for b, o in offset.items()}
    residual = sum((e - bias[k] - offset[b]) ** 2 for b, k, e in cells)
    return ([offset.get(b) for b in range(len(bringups))], math.sqrt(residual / dof))


def split(bringups):
    """The decomposition over bring-ups, each a {plan key: (file, error, real, sim, description)}."""
    keys = []
    for errors in bringups:
        keys.extend(k for k in errors if k not in keys)
    plans = []
    for key in keys:
        seen = [b[key] for b in bringups if key in b]
        errs = [s[1] for s in seen]
        logs_real = [math.log(s[2]) for s in seen]
        logs_sim = [math.log(s[3]) for s in seen]
        plans.append({
            "files": sorted({s[0] for s in seen}),
            "plan": seen[0][4],
            "bringups": len(seen),
            "errors": errs,
            "bias": statistics.fmean(errs),
            "noise_sd": statistics.stdev(errs) if len(errs) > 1 else None,
            "real_sd": statistics.stdev(logs_real) if len(seen) > 1 else None,
            "simulated_sd": statistics.stdev(logs_sim) if len(seen) > 1 else None,
        })
    repeated = [p for p in plans if p["bringups"] > 1]
    if not repeated:
        fail("no plan was measured in two bring-ups: nothing to split")
    dof = sum(p["bringups"] - 1 for p in repeated)

    def pooled(field):
        return math.sqrt(sum((p["bringups"] - 1) * p[field] ** 2 for p in repeated) / dof)

    sigma = pooled("noise_sd")
    offsets, residual_sd = bringup_offsets(bringups, keys)
    # The mean of k errors still carries noise of variance sigma^2 / k; what is left of the
    # plans' mean squared bias after that is the model's own, as a root mean square.
    bias_ms = statistics.fmean(p["bias"] ** 2 - sigma ** 2 / p["bringups"] for p in repeated)
    per_bringup = [len(b) for b in bringups]
    n = round(statistics.median(per_bringup))
    shown = [statistics.fmean(abs(e[1]) for e in b.values()) for b in bringups]
    return {
        "bringups": len(bringups),
        "plans": plans,
        "plans_repeated": len(repeated),
        "degrees_of_freedom": dof,
        "noise_sigma": sigma,
        "bringup_offsets": offsets,
        "residual_sigma": residual_sd,
        "real_sigma": pooled("real_sd"),
        "simulated_sigma": pooled("simulated_sd"),
        "bias_rms": math.sqrt(max(0.0, bias_ms)),
        "floor_mean_abs": sigma * math.sqrt(2 / math.pi),
        "floor_max_abs": expected_max_abs(sigma, n),
        "plans_per_bringup": n,
        "mean_abs_per_bringup": shown,
    }


def split_by_kind(bringups):
    """{kind: the split of that kind's plans alone} where the bring-ups hold both kinds and each
    has a plan measured twice; {} otherwise."""
    kinds = {}
    for kind in ("synchronous", "islands"):
        part = [{k: v for k, v in b.items() if v[5] == kind} for b in bringups]
        if sum(len(b) for b in part) == 0:
            return {}
        keys = {k for b in part for k in b}
        if any(sum(k in b for b in part) > 1 for k in keys):
            whole = split(part)
            kinds[kind] = {f: whole[f] for f in ("plans_repeated", "degrees_of_freedom",
                                                   "noise_sigma", "bias_rms",
                                                   "mean_abs_per_bringup")}
            kinds[kind]["mean_error"] = statistics.fmean(p["bias"] for p in whole["plans"])
    return kinds if len(kinds) == 2 else {}


def pct(x):
    return "" if x is None else f"{100 * x:+.1f}"


def print_markdown(result, names):
    print("| plan | files | bring-ups | errors (%) | mean (bias, %) | spread (sd, %) |")
    print("|---|---|---|---|---|---|")
    for p in sorted(result["plans"], key=lambda p: (-p["bringups"], p["files"])):
        sd = "" if p["noise_sd"] is None else f"{100 * p['noise_sd']:.1f}"
        print(f"| {p['plan']} | {', '.join(p['files'])} | {p['bringups']} | "
              f"{' '.join(pct(e) for e in p['errors'])} | {pct(p['bias'])} | {sd} |")
    r = result
    print()
    print(f"bring-ups: {r['bringups']} ({', '.join(names)}); plans in two or more: "
          f"{r['plans_repeated']} ({r['degrees_of_freedom']} degrees of freedom)")
    print(f"noise between bring-ups (pooled sd of a plan's errors): {100 * r['noise_sigma']:.1f} %"
          f"  (measured time {100 * r['real_sigma']:.1f} %, prediction "
          f"{100 * r['simulated_sigma']:.1f} %, as sd of their logs)")
    if r["residual_sigma"] is not None:
        shown = [(n, o) for n, o in zip(names, r["bringup_offsets"]) if o is not None]
        print("of it shared by a bring-up's plans (each bring-up's offset, %): "
              + ", ".join(f"{n} {100 * o:+.1f}" for n, o in shown)
              + f" (sd {100 * statistics.pstdev(o for _, o in shown):.1f} %); each plan's own: "
              f"sd {100 * r['residual_sigma']:.1f} %")
    print(f"the model's own error (rms of the plans' means less their noise): "
          f"{100 * r['bias_rms']:.1f} %")
    print(f"floor, a model with no bias on one bring-up of {r['plans_per_bringup']} plans: "
          f"mean |error| {100 * r['floor_mean_abs']:.1f} %, largest {100 * r['floor_max_abs']:.1f} %")
    print("mean |error| each bring-up shows: "
          + ", ".join(f"{100 * x:.1f}" for x in r["mean_abs_per_bringup"]) + " %")
    for kind, k in r.get("kinds", {}).items():
        label = "island" if kind == "islands" else kind
        print(f"{label} plans alone: the model's own error {100 * k['bias_rms']:.1f} % (mean "
              f"error {100 * k['mean_error']:+.1f} %), noise {100 * k['noise_sigma']:.1f} % "
              f"({k['plans_repeated']} plans in two or more), mean |error| each bring-up shows: "
              + ", ".join(f"{100 * x:.1f}" for x in k["mean_abs_per_bringup"]) + " %")
    for directory, missing in r["probe_gaps"].items():
        print(f"warning: {directory} lacks {', '.join(missing)}: its errors differ from the "
              "others' by that too, not by noise alone")


def main(argv):
    gpus = None
    sailor = os.path.join(HERE, "..", "..", "build", "sailor")
    as_json = False
    dirs = []
    args = list(argv)
    while args:
        a = args.pop(0)
        if a in ("-h", "--help"):
            print(__doc__)
            return
        if a in ("--gpus", "--sailor") and not args:
            fail(f"{a} needs a value (see --help)", 2)
        if a == "--gpus":
            gpus = args.pop(0)
        elif a == "--sailor":
            sailor = args.pop(0)
        elif a == "--json":
            as_json = True
        elif a.startswith("-"):
            fail(f"unknown option {a} (see --help)", 2)
        else:
            dirs.append(a)
    if len(dirs) < 2:
        fail("give two or more bring-up directories (see --help)", 2)
    if not os.access(sailor, os.X_OK):
        fail(f"{sailor}: not an executable (build with make, or give --sailor)")
    with tempfile.TemporaryDirectory(prefix="error_split.") as scratch:
        bringups = []
        gaps = {}
        for d in dirs:
            if not os.path.isdir(d):
                fail(f"{d}: not a directory")
            if os.path.exists(os.path.join(d, "loop-result.json")):
                plans_dir, paths = loop_layout(d, gpus, scratch)
            else:
                plans_dir, paths = validation_layout(d)
            errors, missing = predict(sailor, plans_dir, paths)
            bringups.append(errors)
            if missing:
                gaps[d] = missing
    result = split(bringups)
    result["probe_gaps"] = gaps
    result["kinds"] = split_by_kind(bringups)
    if as_json:
        result["directories"] = dirs
        json.dump(result, sys.stdout, indent=1)
        print()
    else:
        print_markdown(result, [os.path.basename(os.path.normpath(d)) for d in dirs])


if __name__ == "__main__":
    main(sys.argv[1:])
