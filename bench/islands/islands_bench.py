#!/usr/bin/env python3
"""The islands benchmark's driver (bench/islands/run.sh calls it; its --help says what is measured).

    islands_bench.py curves  --work W [--quick]     loss curves on this machine, no testbed
    islands_bench.py seeds   --work W [--quick] [--seeds N]
                                                    the loss target's two curves from N - 1 more
                                                    seeds (N in all with the curves' seed)
    islands_bench.py testbed --work W [--quick]     the testbed comparison (testbed already up:
                                                    run.sh brings it up and takes it down)
    islands_bench.py report  --work W               the tables (W/results.md) and the plot (W/islands.png)

Every `sailor run` is bounded (timeout) and writes W/<phase>/<name>.{plan.json,cmd,jsonl,stderr}:
the .jsonl holds the run's JSON events, each with "_t", the seconds since the run started at which
its line reached this process. Wall time of training is measured from the run's "ready" event,
less the evaluations (each eval event's eval_s, which includes settling the islands' exchanges in
flight): evaluation is the benchmark's, not the training's.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = "gpt2-tiny"
SEQ = 128
LAST_LAYER = 5          # gpt2-tiny: embedding 0, blocks 1-4, head 5
SEED = 1337
TESTBED_DESC = os.path.join(ROOT, "bench", "islands", "testbed.json")
TESTBED_GPUS = os.path.join(ROOT, "data", "testbed", "gpus-cpu.json")

# Full run and --quick (which checks the tool end to end; its figures mean nothing).
CONFIG = {
    "full": {"steps": 800, "pipelines": 4, "micro_batch": 4, "global_batch": 16,
             "eval_every": 100, "val_windows": 512,
             "tb_steps": 400, "tb_eval_every": 50, "tb_isl_eval_every": 25, "tb_val_windows": 256,
             "tb_micro_batch": 2, "tb_microbatches": 6, "tb_h": 50, "tb_isl_steps_factor": 1.5,
             "tb_probe_steps": 20, "tb_probe_all_steps": 5, "tb_calib_steps": 30},
    "quick": {"steps": 100, "pipelines": 4, "micro_batch": 4, "global_batch": 16,
              "eval_every": 25, "val_windows": 64,
              "tb_steps": 60, "tb_eval_every": 20, "tb_isl_eval_every": 10, "tb_val_windows": 64,
              "tb_micro_batch": 2, "tb_microbatches": 6, "tb_h": 50, "tb_isl_steps_factor": 1.5,
              "tb_probe_steps": 8, "tb_probe_all_steps": 3, "tb_calib_steps": 20},
}


def islands(groups, h, wire, fragments=1, overlap=0):
    sec = {"pipelines": groups, "inner_steps": h, "wire": wire, "fragments": fragments,
           "overlap_steps": overlap}
    return sec


def one_machine_curves(cfg):
    """(name, islands section or None): synchronous, 2 and 4 islands at H 10/50/200 (fp32), the
    int8 wire at H 50, and 4 islands at H 50, int8, 4 fragments without and with overlap."""
    P = cfg["pipelines"]
    two = [list(range(0, P // 2)), list(range(P // 2, P))]
    four = [[j] for j in range(P)]
    out = [("sync", None), ("i4-h50-int8", islands(four, 50, "int8"))]
    for n, groups in ((2, two), (4, four)):
        for h in (10, 50, 200):
            out.append((f"i{n}-h{h}-fp32", islands(groups, h, "fp32")))
    out.append(("i2-h50-int8", islands(two, 50, "int8")))
    out.append(("i4-h50-int8-f4", islands(four, 50, "int8", fragments=4, overlap=0)))
    out.append(("i4-h50-int8-f4-ov2", islands(four, 50, "int8", fragments=4, overlap=2)))
    return out


def log(msg):
    print(f"islands-bench {time.strftime('%H:%M:%S')}: {msg}", file=sys.stderr, flush=True)


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=1)
        f.write("\n")


def run_sailor(sailor, args, out_dir, name, limit_s):
    """sailor run ARGS --json, bounded by limit_s; its events with arrival times in NAME.jsonl."""
    cmd = ["timeout", "--kill-after=15", str(int(limit_s)), sailor, "run"] + args + ["--json"]
    with open(os.path.join(out_dir, name + ".cmd"), "w") as f:
        f.write(" ".join(cmd) + "\n")
    err_path = os.path.join(out_dir, name + ".stderr")
    events = []
    t0 = time.monotonic()
    with open(err_path, "w") as err, open(os.path.join(out_dir, name + ".jsonl"), "w") as out:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, cwd=ROOT)
        for line in proc.stdout:
            t = time.monotonic() - t0
            try:
                ev = json.loads(line)
            except ValueError:
                ev = {"event": "text", "text": line.rstrip("\n")}
            if not isinstance(ev, dict):
                ev = {"event": "text", "text": line.rstrip("\n")}
            ev["_t"] = round(t, 4)
            events.append(ev)
            out.write(json.dumps(ev) + "\n")
            out.flush()
        rc = proc.wait()
    if rc != 0:
        tail = open(err_path).read().strip().splitlines()[-8:]
        what = "ran past its limit of %d s" % limit_s if rc in (124, 137) else "failed (exit %d)" % rc
        raise SystemExit(f"islands-bench: run '{name}' {what}; its command is in "
                         f"{out_dir}/{name}.cmd, stderr:\n  " + "\n  ".join(tail))
    return events


def load_events(out_dir, name):
    with open(os.path.join(out_dir, name + ".jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


def curve_of(events):
    """Eval points of a run: step, tokens, val loss and training wall time (s, evals excluded)."""
    ready = next(e["_t"] for e in events if e.get("event") == "ready")
    end = next(e for e in events if e.get("event") == "end")
    tps = end["tokens_per_step"]
    evals_s = 0.0
    points = []
    last_step_wall = None
    for e in events:
        if e.get("event") == "eval":
            evals_s += e["eval_s"]
            points.append({"step": e["step"], "tokens": e["step"] * tps, "val": e["val_loss"],
                           "wall": e["_t"] - ready - evals_s, "eval_s": e["eval_s"]})
        elif e.get("event") == "step":
            last_step_wall = e["_t"] - ready - evals_s
    return {"points": points, "end": end, "tokens_per_step": tps,
            "train_wall": last_step_wall, "evals_s": evals_s}


# --- curves on this machine ----------------------------------------------------------------------

def run_curve(a, cfg, out_dir, name, sec, seed):
    """One curve on this machine: the plan (4 pipelines of one stage, islands section sec or none)
    trained cfg's steps from seed (the weights and the data order) with evaluations."""
    corpus = os.path.join(a.work, "corpus")
    common = ["--data", f"{corpus}/train.bin", "--val-data", f"{corpus}/val.bin",
              "--eval-every", str(cfg["eval_every"]), "--val-windows", str(cfg["val_windows"]),
              "--seq-len", str(SEQ), "--steps", str(cfg["steps"]), "--shuffle",
              "--seed", str(seed), "--log-every", "10"]
    plan = {"schema": "sailor.plan/1", "model": MODEL, "global_batch": cfg["global_batch"],
            "micro_batch": cfg["micro_batch"],
            "stages": [{"layers": [0, LAST_LAYER], "replicas": [
                {"gpu": "A100-40", "zone": "us-central1-a", "count": cfg["pipelines"]}]}]}
    if sec:
        plan["islands"] = sec
    plan_path = os.path.join(out_dir, name + ".plan.json")
    write_json(plan_path, plan)
    log(f"curve {name}: {cfg['steps']} steps, seed {seed}")
    t = time.monotonic()
    run_sailor(a.sailor, ["--plan", plan_path] + common, out_dir, name, 120 + 0.8 * cfg["steps"])
    log(f"curve {name}: done in {time.monotonic() - t:.0f} s")


def phase_curves(a, cfg):
    out_dir = os.path.join(a.work, "curves")
    os.makedirs(out_dir, exist_ok=True)
    names = []
    for name, sec in one_machine_curves(cfg):
        run_curve(a, cfg, out_dir, name, sec, SEED)
        names.append(name)
    write_json(os.path.join(out_dir, "index.json"), {"config": cfg, "curves": names})


def target_curves(cfg):
    """The loss target's two curves: synchronous, and 4 islands at H = 50 with the int8 wire."""
    return [(n, sec) for n, sec in one_machine_curves(cfg) if n in ("sync", "i4-h50-int8")]


def phase_seeds(a, cfg):
    """The loss target's two curves again from seeds SEED + 1 .. SEED + a.seeds - 1: another
    initialisation and data order each, the rest as the curves phase."""
    out_dir = os.path.join(a.work, "seeds")
    os.makedirs(out_dir, exist_ok=True)
    seeds = [SEED + k for k in range(1, a.seeds)]
    for seed in seeds:
        for name, sec in target_curves(cfg):
            run_curve(a, cfg, out_dir, f"{name}-seed{seed}", sec, seed)
    write_json(os.path.join(out_dir, "index.json"), {"config": cfg, "seeds": seeds})


# --- the testbed ---------------------------------------------------------------------------------

def testbed_layout(desc):
    """[(zone, region, [(host, class, cores), ...one per slot])] in file order."""
    classes = {k: v["cpu_cores"] for k, v in desc["classes"].items()}
    regions = []
    for z in desc["zones"]:
        devs = []
        for h in z["hosts"]:
            devs += [(h["name"], h["class"], classes[h["class"]])] * h["slots"]
        regions.append((z["name"], z["name"].rsplit("-", 1)[0], devs))
    return regions


def share(total, weights):
    """total split in proportion to weights (largest remainder, ties to the first)."""
    raw = [total * w / sum(weights) for w in weights]
    out = [int(math.floor(x)) for x in raw]
    for i in sorted(range(len(raw)), key=lambda i: (-(raw[i] - out[i]), i))[:total - sum(out)]:
        out[i] += 1
    return out


def testbed_plan(layout, region_ids, cfg, islands_h=None):
    """A one-stage plan over the devices of the regions given (in that order), the global batch
    (tb_microbatches micro-batches) shared in proportion to the devices' cores; with islands_h,
    one island per region with those inner steps, int8, 4 fragments, overlap 2."""
    replicas, cores, island_of = [], [], []
    for i, r in enumerate(region_ids):
        zone, _, devs = layout[r]
        for _, cls, c in devs:
            replicas.append({"gpu": cls, "zone": zone})
            cores.append(c)
            island_of.append(i)
    mb = share(cfg["tb_microbatches"], cores)
    plan = {"schema": "sailor.plan/1", "model": MODEL,
            "global_batch": cfg["tb_micro_batch"] * cfg["tb_microbatches"],
            "micro_batch": cfg["tb_micro_batch"],
            "stages": [{"layers": [0, LAST_LAYER], "replicas": replicas}],
            "microbatches_per_pipeline": mb}
    if islands_h:
        groups = [[j for j, i in enumerate(island_of) if i == k] for k in range(len(region_ids))]
        plan["islands"] = islands(groups, islands_h, "int8", fragments=4, overlap=2)
    return plan


def tc_region_bytes(desc, layout):
    """Bytes every host has sent into the links to zones of other regions (tc's htb class per
    destination zone, scripts/testbed: class 1:(10+z)), summed over hosts."""
    zone_region = {i: reg for i, (_, reg, _) in enumerate(layout)}
    total = 0
    for zi, z in enumerate(desc["zones"]):
        for h in z["hosts"]:
            ns = f"sailor-{desc['name']}-{h['name']}"
            txt = subprocess.run(["timeout", "20", "ip", "netns", "exec", ns, "tc", "-s", "class",
                                  "show", "dev", "eth0"], capture_output=True, text=True,
                                 check=True).stdout
            cls = None
            for line in txt.splitlines():
                parts = line.split()
                if line.startswith("class htb"):
                    cls = parts[2].split(":")[1]
                elif parts[:1] == ["Sent"] and cls is not None and cls != "9":
                    dest = int(cls) - 10
                    if zone_region.get(dest) not in (None, zone_region[zi]):
                        total += int(parts[1])
                    cls = None
    return total


def timeline_busy(path, islands_of_pipeline, evals_inside_s):
    """Per island: the share of the training window its ranks spent in their step's spans (every
    instruction and phase of the island's own step: forward, backward, the island's gradient sync,
    loss-and-norm, update), and in forward + backward + update alone; the window runs from the
    first span of any rank to the last, less the evaluations inside it. What is outside the spans
    is the outer step (landing, waiting for the exchange) and the round ends' stop agreement."""
    with open(path) as f:
        tl = json.load(f)
    pipe = {}
    spans = {}
    for e in tl["traceEvents"]:
        if e.get("ph") == "M":
            pipe[e["pid"]] = e["args"]["pipeline"]
        elif e.get("ph") == "X":
            spans.setdefault(e["pid"], []).append(e)
    lo = min(s["ts"] for v in spans.values() for s in v)
    hi = max(s["ts"] + s["dur"] for v in spans.values() for s in v)
    window = (hi - lo) / 1e6 - evals_inside_s
    per_island = {}
    for pid, v in spans.items():
        busy = sum(s["dur"] for s in v) / 1e6
        comp = sum(s["dur"] for s in v if s["name"] in ("forward", "backward", "update")) / 1e6
        per_island.setdefault(islands_of_pipeline[pipe[pid]], []).append((busy, comp))
    out = {}
    for i, rows in sorted(per_island.items()):
        out[i] = {"busy": statistics.mean(b for b, _ in rows) / window,
                  "compute": statistics.mean(c for _, c in rows) / window}
    return {"window_s": window, "islands": out, "spans_dropped": tl.get("spans_dropped", 0)}


def island_periods(path, island_of_pipeline, skip=5):
    """Median seconds from one step's first span to the next step's, per island (its slowest
    rank): how fast each island steps on its own (no outer step yet)."""
    with open(path) as f:
        tl = json.load(f)
    pipe, start = {}, {}
    for e in tl["traceEvents"]:
        if e.get("ph") == "M":
            pipe[e["pid"]] = e["args"]["pipeline"]
        elif e.get("ph") == "X":
            s = start.setdefault(e["pid"], {})
            st = e["args"]["step"]
            s[st] = min(s.get(st, float("inf")), e["ts"])
    per = {}
    for pid, s in start.items():
        steps = sorted(k for k in s if k > skip)
        gaps = [(s[b] - s[a]) / 1e6 for a, b in zip(steps, steps[1:]) if b == a + 1]
        i = island_of_pipeline[pipe[pid]]
        per[i] = max(per.get(i, 0.0), statistics.median(gaps))
    return per


def phase_testbed(a, cfg):
    out_dir = os.path.join(a.work, "testbed")
    os.makedirs(out_dir, exist_ok=True)
    with open(TESTBED_DESC) as f:
        desc = json.load(f)
    layout = testbed_layout(desc)
    corpus = os.path.join(a.work, "corpus")
    base = ["--cluster", a.cluster, "--gpus", TESTBED_GPUS, "--data", f"{corpus}/train.bin",
            "--seq-len", str(SEQ), "--shuffle", "--seed", str(SEED)]
    val = ["--val-data", f"{corpus}/val.bin", "--val-windows", str(cfg["tb_val_windows"])]
    record = {"config": cfg, "desc": desc, "probes": [], "runs": {}}

    def run(name, plan, args, limit_s):
        plan_path = os.path.join(out_dir, name + ".plan.json")
        write_json(plan_path, plan)
        before = tc_region_bytes(desc, layout)
        t = time.monotonic()
        events = run_sailor(a.sailor, ["--plan", plan_path] + base + args, out_dir, name, limit_s)
        sent = tc_region_bytes(desc, layout) - before
        log(f"testbed {name}: done in {time.monotonic() - t:.0f} s, {sent} bytes between regions")
        return events, sent

    # 1. the synchronous candidates: every device, and each shape of region alone (regions of the
    #    same devices train alike); every synchronous plan trains the same steps (same global batch,
    #    seed and data: docs/run.md), so the best is the fastest, which the probes find
    cands = [("sync-all", list(range(len(layout))), cfg["tb_probe_all_steps"])]
    seen = set()
    most = max(sum(c for _, _, c in devs) for _, _, devs in layout)
    for r, (zone, reg, devs) in enumerate(layout):
        shape = tuple(sorted(cls for _, cls, _ in devs))
        if shape in seen or sum(c for _, _, c in devs) < most - 1e-9:
            continue
        seen.add(shape)
        cands.append((f"sync-{reg}", [r], cfg["tb_probe_steps"]))
    for name, regs, steps in cands:
        plan = testbed_plan(layout, regs, cfg)
        log(f"testbed probe {name}: {steps} steps")
        events, sent = run("probe-" + name, plan, ["--steps", str(steps), "--log-every", "1"],
                           120 + 10 * steps)
        end = next(e for e in events if e.get("event") == "end")
        record["probes"].append({"name": name, "regions": [layout[r][1] for r in regs],
                                 "devices": len(plan["stages"][0]["replicas"]),
                                 "cores": sum(c for r in regs for _, _, c in layout[r][2]),
                                 "steps": steps, "median_step_s": end["median_step_time_s"],
                                 "tokens_per_step": end["tokens_per_step"],
                                 "region_bytes": sent,
                                 "region_bytes_per_token": sent / (steps * end["tokens_per_step"])})
    best = min(record["probes"], key=lambda p: p["median_step_s"])
    record["best_sync"] = best["name"]
    regs = next(r for n, r, _ in cands if n == best["name"])

    # 2. the best synchronous plan, the whole budget
    N = cfg["tb_steps"]
    log(f"testbed {best['name']} (the best synchronous plan): {N} steps")
    events, sent = run("sync", testbed_plan(layout, regs, cfg),
                       val + ["--steps", str(N), "--eval-every", str(cfg["tb_eval_every"]),
                              "--log-every", "1"], 120 + 3.0 * N)
    record["runs"]["sync"] = {"plan": best["name"], "region_bytes": sent, "steps": N}

    # 3. the island plan: one island per region; each island's inner steps per round from its own
    #    speed (docs/formats.md#islands: a faster island makes more steps; island 0's H is the
    #    largest), measured by a probe too short for any outer step
    H = cfg["tb_h"]
    order = list(range(len(layout)))
    calib = testbed_plan(layout, order, cfg, islands_h=H)
    isl_of = {}
    for i, g in enumerate(calib["islands"]["pipelines"]):
        for j in g:
            isl_of[j] = i
    tl = os.path.join(out_dir, "calibrate.timeline.json")
    log(f"testbed calibrate: {cfg['tb_calib_steps']} steps of the island plan, no outer step")
    run("calibrate", calib, ["--steps", str(cfg["tb_calib_steps"]), "--log-every", "10",
                             "--timeline", tl], 120 + 3.0 * cfg["tb_calib_steps"])
    per = island_periods(tl, isl_of)
    fastest = min(per, key=lambda i: (per[i], i))
    order = [fastest] + [i for i in order if i != fastest]
    hs = [max(1, min(H, round(H * per[fastest] / per[i]))) for i in order]
    record["calibration"] = {"periods_s": {layout[i][1]: per[i] for i in per},
                             "order": [layout[i][1] for i in order], "inner_steps": hs}
    plan = testbed_plan(layout, order, cfg, islands_h=hs)
    isl_of = {}
    for i, g in enumerate(plan["islands"]["pipelines"]):
        for j in g:
            isl_of[j] = i
    M = int(round(N * cfg["tb_isl_steps_factor"]))
    tl = os.path.join(out_dir, "islands.timeline.json")
    log(f"testbed islands: {M} steps, inner steps {hs} ({', '.join(layout[i][1] for i in order)})")
    events, sent = run("islands", plan, val + ["--steps", str(M), "--eval-every",
                                               str(cfg["tb_isl_eval_every"]), "--log-every", "1",
                                               "--timeline", tl], 120 + 2.0 * M)
    c = curve_of(events)
    inside = sum(p["eval_s"] for p in c["points"] if p["step"] < M)
    record["runs"]["islands"] = {"region_bytes": sent, "steps": M, "inner_steps": hs,
                                 "order": [layout[i][1] for i in order],
                                 "busy": timeline_busy(tl, isl_of, inside)}
    write_json(os.path.join(out_dir, "index.json"), record)


# --- report --------------------------------------------------------------------------------------

def crossing(points, target, key):
    """The first `key` (tokens or wall) at which the val loss reaches target, linearly
    interpolated between evaluations; None when it never does."""
    prev = None
    for p in points:
        if p["val"] <= target:
            if prev is None:
                return p[key]
            f = (prev["val"] - target) / (prev["val"] - p["val"])
            return prev[key] + f * (p[key] - prev[key])
        prev = p
    return None


def fmt_pct(x):
    return f"{100 * x:+.2f}%"


def report_curves(a, lines, plot):
    d = os.path.join(a.work, "curves")
    idx = json.load(open(os.path.join(d, "index.json")))
    cfg = idx["config"]
    curves = {n: curve_of(load_events(d, n)) for n in idx["curves"]}
    sync = curves["sync"]
    sync_at = {p["step"]: p["val"] for p in sync["points"]}
    tokens = cfg["steps"] * cfg["global_batch"] * SEQ
    info = subprocess.run([a.sailor, "data", "--info", os.path.join(a.work, "corpus", "train.bin")],
                          capture_output=True, text=True, check=True).stdout
    train_tokens = int(info.split(":", 1)[1].split()[0])
    lines.append("## Loss curves on one machine (no testbed)\n")
    lines.append(
        f"{MODEL} (4 blocks, width 128, 0.85 M parameters), byte tokens, sequence {SEQ}; "
        f"{cfg['pipelines']} pipelines of one stage (TP 1) on this host, micro-batch "
        f"{cfg['micro_batch']}, global batch {cfg['global_batch']} ({cfg['global_batch'] * SEQ} "
        f"tokens a step) for every curve; {cfg['steps']} steps = {tokens / 1e6:.2f} M tokens "
        f"(the corpus's training file holds {train_tokens / 1e6:.1f} M: "
        f"{100 * tokens / train_tokens:.1f}% of an epoch, windows in a seeded shuffled order, "
        f"seed {SEED}); AdamW lr 6e-4 cosine to 6e-5, no warm-up, clipping 1.0, the same stream "
        f"of global batches in every run (docs/design/islands.md); outer SGD lr 0.7, Nesterov "
        f"0.9. Validation loss every {cfg['eval_every']} steps on the first {cfg['val_windows']} "
        f"windows of val.bin ({cfg['val_windows'] * SEQ} tokens, the same windows every time), "
        f"of the global weights for islands. The seeds phase, when it ran, repeats the loss "
        f"target's two curves from other seeds (below).\n")
    steps_shown = [s for s in sorted(sync_at) if s in (cfg["steps"] // 4, cfg["steps"] // 2,
                                                        cfg["steps"])]
    head = ("| curve | islands | H | wire | fragments / overlap | rounds | "
            + " | ".join(f"val @ {s * cfg['global_batch'] * SEQ / 1e6:.2f} M tok" for s in steps_shown)
            + " | final vs sync | bytes between islands / token | wall s |")
    lines.append(head)
    lines.append("|" + "---|" * (head.count("|") - 1))
    for n in idx["curves"]:
        c = curves[n]
        plan = json.load(open(os.path.join(d, n + ".plan.json")))
        isl = plan.get("islands")
        at = {p["step"]: p["val"] for p in c["points"]}
        cells = [f"`{n}`"]
        if isl:
            h = isl["inner_steps"]
            cells += [str(len(isl["pipelines"])), str(h), isl["wire"],
                      f"{isl['fragments']} / {isl['overlap_steps']}",
                      str(cfg["steps"] // h) + ("" if cfg["steps"] // h else " (final sync only)")]
        else:
            cells += ["1 (synchronous)", "-", "-", "-", "-"]
        for s in steps_shown:
            v = at.get(s)
            cells.append("-" if v is None else (f"{v:.4f}" if n == "sync" else
                                                 f"{v:.4f} ({fmt_pct(v / sync_at[s] - 1)})"))
        final = c["points"][-1]["val"]
        cells.append("-" if n == "sync" else fmt_pct(final / sync["points"][-1]["val"] - 1))
        isl_end = c["end"].get("islands")
        cells.append(f"{isl_end['bytes_between_islands'] / (cfg['steps'] * c['tokens_per_step']):.1f}"
                     if isl_end else "-")
        cells.append(f"{c['train_wall']:.0f}")
        lines.append("| " + " | ".join(cells) + " |")
    t = curves.get("i4-h50-int8")
    if t:
        gap = t["points"][-1]["val"] / sync["points"][-1]["val"] - 1
        lines.append("")
        lines.append(f"**Loss target** (4 islands, H = 50, int8 wire, within 2% of the synchronous "
                     f"run's validation loss at equal tokens): {fmt_pct(gap)} at "
                     f"{tokens / 1e6:.2f} M tokens: "
                     + ("met." if gap <= 0.02 else f"missed by {100 * (gap - 0.02):.2f} points."))
        worst = max((curves[n]["points"][-1]["val"] / sync["points"][-1]["val"] - 1, n)
                    for n in idx["curves"] if n != "sync")
        lines.append(f"The widest final gap of any curve: {fmt_pct(worst[0])} (`{worst[1]}`).")
    lines.append("")
    for n in idx["curves"]:
        path = os.path.join(d, n + ".dat")
        with open(path, "w") as f:
            f.write("# tokens_M val_loss rel_to_sync_pct step wall_s\n")
            for p in curves[n]["points"]:
                rel = 100 * (p["val"] / sync_at[p["step"]] - 1) if p["step"] in sync_at else 0
                f.write(f"{p['tokens'] / 1e6:.6f} {p['val']:.6f} {rel:.4f} {p['step']} "
                        f"{p['wall']:.3f}\n")
        plot["curves"].append((n, path))
    # the first evaluations (initial weights of islands whose first round has not ended) would
    # squash the rest: the ranges cover the points from a quarter of the run on
    late = [(p["val"], 100 * (p["val"] / sync_at[p["step"]] - 1)) for n in idx["curves"]
            for p in curves[n]["points"] if p["step"] >= cfg["steps"] // 4 and p["step"] in sync_at]
    lo, hi = min(v for v, _ in late), max(v for v, _ in late)
    plot["yrange"] = (lo - 0.05, hi + 0.6 * (hi - lo) + 0.05)
    plot["rel_yrange"] = (min(-3, min(r for _, r in late) - 1), max(3, max(r for _, r in late) + 1))


def report_seeds(a, lines):
    """The loss target per seed (the curves phase's seed and the seeds phase's), its mean and
    spread: one seed's gap is one draw of the initialisation and the data order."""
    d = os.path.join(a.work, "seeds")
    idx = json.load(open(os.path.join(d, "index.json")))
    cfg = idx["config"]
    finals = []  # (seed, sync final, islands final)
    curves_idx = os.path.join(a.work, "curves", "index.json")
    if os.path.exists(curves_idx) and json.load(open(curves_idx))["config"] == cfg:
        c = os.path.join(a.work, "curves")
        finals.append((SEED, curve_of(load_events(c, "sync"))["points"][-1]["val"],
                       curve_of(load_events(c, "i4-h50-int8"))["points"][-1]["val"]))
    for seed in idx["seeds"]:
        finals.append((seed, curve_of(load_events(d, f"sync-seed{seed}"))["points"][-1]["val"],
                       curve_of(load_events(d, f"i4-h50-int8-seed{seed}"))["points"][-1]["val"]))
    tokens = cfg["steps"] * cfg["global_batch"] * SEQ
    lines.append("## The loss target over seeds\n")
    lines.append(f"The synchronous curve and `i4-h50-int8` (4 islands, H = 50, int8 wire) from "
                 f"{len(finals)} seeds (each its own initial weights and data order; everything "
                 f"else as above): final validation loss at {tokens / 1e6:.2f} M tokens.\n")
    lines.append("| seed | synchronous | 4 islands, H = 50, int8 | islands vs synchronous |")
    lines.append("|---|---|---|---|")
    gaps = []
    for seed, sync_v, isl_v in finals:
        gaps.append(isl_v / sync_v - 1)
        lines.append(f"| {seed} | {sync_v:.4f} | {isl_v:.4f} | {fmt_pct(gaps[-1])} |")
    mean = statistics.mean(gaps)
    spread = ""
    if len(finals) > 1:
        syncs = [v for _, v, _ in finals]
        spread = (f" The synchronous run's own final loss moves "
                  f"{100 * statistics.stdev(syncs) / statistics.mean(syncs):.2f}% between seeds "
                  f"(standard deviation over its mean).")
    lines.append("")
    lines.append(f"**Loss target over {len(finals)} seeds**: mean gap {fmt_pct(mean)} (from "
                 f"{fmt_pct(min(gaps))} to {fmt_pct(max(gaps))}): "
                 + ("met on the mean" if mean <= 0.02 else
                    f"missed on the mean by {100 * (mean - 0.02):.2f} points")
                 + f"; {sum(g <= 0.02 for g in gaps)} of {len(gaps)} seeds within 2%.{spread}\n")


def report_testbed(a, lines, plot):
    d = os.path.join(a.work, "testbed")
    rec = json.load(open(os.path.join(d, "index.json")))
    cfg, desc = rec["config"], rec["desc"]
    layout = testbed_layout(desc)
    sync = curve_of(load_events(d, "sync"))
    isl = curve_of(load_events(d, "islands"))
    L = sync["points"][-1]["val"]
    T_sync = sync["points"][-1]["wall"]
    runs = rec["runs"]
    links = desc["links"]
    lines.append("## The testbed: the island plan against the best synchronous plan\n")
    status = os.path.join(d, "status.txt")
    latency = "emulated (netem)"
    if not os.path.exists(status) or "NOT emulated" in open(status).read():
        latency = ("not emulated: this kernel has no sch_netem, `scripts/testbed status`"
                   if os.path.exists(status) else "unknown: no status.txt")
    regions = "; ".join(
        f"{reg} ({zone}): " + ", ".join(f"{cls} ({c:g} core)" for _, cls, c in devs)
        for zone, reg, devs in layout)
    total = sum(c for _, _, devs in layout for _, _, c in devs)
    most = max(sum(c for _, _, c in devs) for _, _, devs in layout)
    lines.append(
        f"`bench/islands/testbed.json`: {regions}; {total:g} cores in all, the largest region "
        f"{100 * most / total:.0f}% of them; links between regions {links['world']['bandwidth_mbit']} "
        f"Mbit/s (latency {links['world']['latency_ms']} ms: {latency}). Every plan: one stage, micro-batch "
        f"{cfg['tb_micro_batch']}, global batch {cfg['tb_micro_batch'] * cfg['tb_microbatches']} "
        f"({cfg['tb_micro_batch'] * cfg['tb_microbatches'] * SEQ} tokens a step), the micro-batches "
        f"shared in proportion to the devices' cores; validation on the first "
        f"{cfg['tb_val_windows']} windows ({cfg['tb_val_windows'] * SEQ} tokens). Bytes between "
        f"regions are tc's counters (every host's htb class towards each zone of another region, "
        f"read before and after each run: payload plus TCP/IP and MPI headers, and everything "
        f"else the run sent there).\n")
    lines.append("Synchronous candidates (every synchronous plan trains the same steps, so the "
                 "best is the fastest; short probes):\n")
    lines.append("| candidate | devices | steps | median s / step | tokens / s | bytes between regions / token |")
    lines.append("|---|---|---|---|---|---|")
    for p in rec["probes"]:
        lines.append(f"| `{p['name']}`{' (best)' if p['name'] == rec['best_sync'] else ''} | "
                     f"{p['devices']} | {p['steps']} | {p['median_step_s']:.3f} | "
                     f"{p['tokens_per_step'] / p['median_step_s']:.0f} | "
                     f"{p['region_bytes_per_token']:.0f} |")
    cal = rec["calibration"]
    lines.append("")
    lines.append(
        "Island plan: one island per region, int8 wire, 4 fragments, overlap 2 steps (merge 0.5), "
        f"outer SGD lr 0.7 Nesterov 0.9; inner steps per round {cal['inner_steps']} for "
        f"{', '.join(cal['order'])} (island 0 first: H = {cfg['tb_h']}; the others in proportion "
        "to their speed, measured by a "
        f"{cfg['tb_calib_steps']}-step probe: seconds per step "
        + ", ".join(f"{k} {v:.3f}" for k, v in cal["periods_s"].items())
        + f"); {runs['islands']['steps']} steps ({cfg['tb_isl_steps_factor']:g} x the synchronous "
        f"run's {runs['sync']['steps']}, its learning-rate schedule over its own steps), so that it "
        "can pass the synchronous run's final loss.\n")
    tps_sync = sync["tokens_per_step"]
    tps_isl = isl["tokens_per_step"]
    tok_sync = runs["sync"]["steps"] * tps_sync
    tok_isl = runs["islands"]["steps"] * tps_isl
    reach_t = crossing(isl["points"], L, "wall")
    reach_tok = crossing(isl["points"], L, "tokens")
    busy = runs["islands"]["busy"]["islands"]
    bpt_sync = runs["sync"]["region_bytes"] / tok_sync
    bpt_isl = runs["islands"]["region_bytes"] / tok_isl
    allp = next(p for p in rec["probes"] if p["name"] == "sync-all")
    rt_bytes = isl["end"]["islands"]["bytes_between_islands"] / tok_isl
    thr_sync = tok_sync / sync["train_wall"]
    thr_isl = tok_isl / isl["train_wall"]
    lines.append("| run | steps | tokens (M) | train wall s | tokens / s | final val loss | "
                 "reaches the sync plan's final val loss | bytes between regions / token |")
    lines.append("|---|---|---|---|---|---|---|---|")
    lines.append(f"| best synchronous (`{rec['best_sync']}`) | {runs['sync']['steps']} | "
                 f"{tok_sync / 1e6:.3f} | {sync['train_wall']:.1f} | {thr_sync:.0f} | {L:.4f} | "
                 f"at {T_sync:.1f} s | {bpt_sync:.1f} |")
    lines.append(f"| islands (3, H {runs['islands']['inner_steps']}, int8, F 4, overlap 2) | "
                 f"{runs['islands']['steps']} | {tok_isl / 1e6:.3f} | {isl['train_wall']:.1f} | "
                 f"{thr_isl:.0f} | {isl['points'][-1]['val']:.4f} | "
                 + (f"at {reach_t:.1f} s, {reach_tok / 1e6:.3f} M tokens" if reach_t is not None
                    else "never (the gap at the end: "
                    f"{fmt_pct(isl['points'][-1]['val'] / L - 1)})")
                 + f" | {bpt_isl:.1f} (runtime's count of the outer exchange: {rt_bytes:.1f}) |")
    lines.append("")
    speedup = T_sync / reach_t if reach_t else None
    lines.append("**Testbed targets:**\n")
    lines.append("- 2x sooner to the best synchronous plan's final validation loss: "
                 + (f"{speedup:.2f}x ({T_sync:.1f} s against {reach_t:.1f} s): "
                    + ("met." if speedup >= 2 else f"missed by {2 - speedup:.2f}x.")
                    if speedup else "missed: the island plan never reached it."))
    ratio_all = allp["region_bytes_per_token"] / bpt_isl if bpt_isl > 0 else float("inf")
    if bpt_sync > 0:
        r = bpt_sync / bpt_isl
        lines.append(f"- 100x fewer bytes between regions per token than the best synchronous "
                     f"plan: {r:.0f}x: " + ("met." if r >= 100 else "missed."))
    else:
        lines.append(f"- 100x fewer bytes between regions per token: the best synchronous plan "
                     f"(`{rec['best_sync']}`) sends none ({bpt_sync:.1f} bytes a token: it leaves "
                     f"the other regions idle), so against it the island plan sends more, "
                     f"{bpt_isl:.1f} a token. Against the synchronous plan over the same devices "
                     f"(`sync-all`, {allp['region_bytes_per_token']:.0f} bytes a token): "
                     f"{ratio_all:.0f}x fewer: " + ("met." if ratio_all >= 100 else "missed."))
    worst = min(busy.values(), key=lambda v: v["busy"])
    lines.append(
        "- islands at least 90% of their time computing (not waiting on the outer sync), overlap "
        "on: " + ", ".join(f"{runs['islands']['order'][int(i)]} {100 * v['busy']:.1f}%"
                           for i, v in sorted(busy.items()))
        + f" of the training window in their own step (forward, backward, their own gradient "
        f"sync, update; forward + backward + update alone: "
        + ", ".join(f"{100 * v['compute']:.1f}%" for _, v in sorted(busy.items()))
        + f"); the rest is the outer step and the round ends' stop agreement (runtime's "
        f"`outer_wait_s_max`: {isl['end']['islands']['outer_wait_s_max']:.2f} s of "
        f"{isl['train_wall']:.1f} s): " + ("met." if worst["busy"] >= 0.9 else "missed."))
    # what bounds the gain
    value = tok_sync / reach_tok if reach_tok else None
    lines.append("")
    lines.append(
        f"**What bounds the gain.** The best synchronous plan computes on "
        f"{next(p['cores'] for p in rec['probes'] if p['name'] == rec['best_sync']):g} "
        f"of the {total:g} cores and leaves the rest idle; the island plan uses all of them and "
        f"trains {thr_isl / thr_sync:.2f}x the synchronous plan's tokens per second (the cores' "
        f"ratio less what the islands' smaller batches and their own per-step costs take)."
        + (f" A token of the island plan is worth {value:.2f} of the synchronous plan's here "
           f"(the synchronous run reaches {L:.4f} with {tok_sync / 1e6:.3f} M tokens, the island "
           f"plan with {reach_tok / 1e6:.3f} M), so the gain is at most about "
           f"{thr_isl / thr_sync:.2f} x {value:.2f} = {thr_isl / thr_sync * value:.2f}x; measured "
           f"{speedup:.2f}x." if value else
           " The island plan did not reach the synchronous plan's final loss in its tokens."))
    lines.append("")
    for name, c in (("tb-sync", sync), ("tb-islands", isl)):
        path = os.path.join(d, name + ".dat")
        with open(path, "w") as f:
            f.write("# wall_s val_loss tokens_M step\n")
            for p in c["points"]:
                f.write(f"{p['wall']:.3f} {p['val']:.6f} {p['tokens'] / 1e6:.6f} {p['step']}\n")
        plot["testbed"].append((name, path))
    plot["target"] = L
    plot["best_sync"] = rec["best_sync"]


def curve_style(n):
    """gnuplot style of a curve: the synchronous one black and thick, 2 islands dashed with open
    points, 4 solid with filled ones, a colour per setting."""
    if n == "sync":
        return "lw 3 lc rgb 'black' pt 7 ps 0.6"
    colour = {"h10-fp32": "#1f77b4", "h50-fp32": "#2ca02c", "h200-fp32": "#d62728",
              "h50-int8": "#9467bd", "h50-int8-f4": "#ff7f0e", "h50-int8-f4-ov2": "#8c564b"}
    key = n.split("-", 1)[1]
    dash = "dt 2 pt 6" if n.startswith("i2-") else "dt 1 pt 7"
    return f"lw 1.5 lc rgb '{colour.get(key, '#7f7f7f')}' {dash} ps 0.6"


def write_plot(a, plot):
    if not plot["curves"] and not plot["testbed"]:
        return None
    out = os.path.join(a.work, "islands.png")
    gp = os.path.join(a.work, "islands.gp")
    panels = (2 if plot["curves"] else 0) + (2 if plot["testbed"] else 0)
    with open(gp, "w") as f:
        f.write("# gnuplot script written by bench/islands/islands_bench.py report\n")
        f.write("set terminal pngcairo size 1400,%d font 'sans,10'\n" % (500 * ((panels + 1) // 2)))
        f.write(f"set output '{out}'\n")
        f.write("set multiplot layout %d,2 title 'islands benchmark: %s (%s)'\n"
                % ((panels + 1) // 2, MODEL, time.strftime("%Y-%m-%d")))
        f.write("set grid\n")
        if plot["curves"]:
            f.write("set xlabel 'tokens (M)'\nset ylabel 'validation loss'\n"
                    "set title 'one machine: validation loss against tokens'\n")
            f.write("set key top right\nset xrange [0:*]\nset yrange [%g:%g]\n" % plot["yrange"])
            f.write("plot " + ", \\\n     ".join(
                f"'{p}' using 1:2 with linespoints {curve_style(n)} title '{n}'"
                for n, p in plot["curves"]) + "\n")
            f.write("set yrange [%g:%g]\n" % plot["rel_yrange"])
            f.write("set ylabel 'validation loss vs synchronous (%)'\nunset key\n"
                    "set label 1 '+2%: the loss target (4 islands, H 50, int8)' at graph 0.02, "
                    "first 2.4 tc rgb 'red'\n"
                    "set title 'one machine: relative to the synchronous run at equal tokens'\n")
            f.write("plot 2 with lines dt 3 lw 2 lc rgb 'red' title '+2% (loss target)', "
                    + ", \\\n     ".join(
                        f"'{p}' using 1:3 with linespoints {curve_style(n)} title '{n}'"
                        for n, p in plot["curves"]) + "\n")
            f.write("set autoscale\nunset label 1\n")
        if plot["testbed"]:
            L = plot["target"]
            f.write("set key top right\nset yrange [%g:%g]\n" % (L - 0.1, L + 0.6))
            f.write("set xlabel 'training wall time (s, evaluations excluded)'\n"
                    "set ylabel 'validation loss'\n"
                    "set title 'testbed: validation loss against wall time'\n")
            f.write(f"plot {L} with lines dt 2 lc rgb 'gray' title 'best synchronous final loss', "
                    + ", ".join(f"'{p}' using 1:2 with linespoints pt 7 ps 0.6 lw 2 lc rgb "
                                + ("'black'" if n == "tb-sync" else "'#1f77b4'") + " title '"
                                + (f"{plot['best_sync']} (best synchronous)" if n == "tb-sync"
                                   else "islands (one per region)") + "'"
                                for n, p in plot["testbed"]) + "\n")
            f.write("set xlabel 'tokens (M)'\nset title 'testbed: validation loss against tokens'\n")
            f.write(f"plot {L} with lines dt 2 lc rgb 'gray' title 'best synchronous final loss', "
                    + ", ".join(f"'{p}' using 3:2 with linespoints pt 7 ps 0.6 lw 2 lc rgb "
                                + ("'black'" if n == "tb-sync" else "'#1f77b4'") + " title '"
                                + (f"{plot['best_sync']} (best synchronous)" if n == "tb-sync"
                                   else "islands (one per region)") + "'"
                                for n, p in plot["testbed"]) + "\n")
        f.write("unset multiplot\n")
    subprocess.run(["timeout", "60", "gnuplot", gp], check=True)
    return out


def phase_report(a):
    lines = [f"# Islands benchmark ({time.strftime('%Y-%m-%d')})\n"]
    plot = {"curves": [], "testbed": []}
    if os.path.exists(os.path.join(a.work, "curves", "index.json")):
        report_curves(a, lines, plot)
    if os.path.exists(os.path.join(a.work, "seeds", "index.json")):
        report_seeds(a, lines)
    if os.path.exists(os.path.join(a.work, "testbed", "index.json")):
        report_testbed(a, lines, plot)
    png = write_plot(a, plot)
    if png:
        lines.append(f"Plot: `{png}` (gnuplot script beside it).")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(a.work, "results.md"), "w") as f:
        f.write(text)
    print(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("phase", choices=["curves", "seeds", "testbed", "report"])
    ap.add_argument("--work", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sailor", default=os.path.join(ROOT, "sailor"))
    ap.add_argument("--cluster", help="the testbed's cluster file (testbed phase)")
    ap.add_argument("--seeds", type=int, default=3,
                    help="seeds phase: the loss target's curves from this many seeds in all, "
                         f"{SEED} (the curves phase's) and the next ones (default 3)")
    a = ap.parse_args()
    cfg = CONFIG["quick" if a.quick else "full"]
    if a.phase == "curves":
        phase_curves(a, cfg)
    elif a.phase == "seeds":
        if a.seeds < 2:
            ap.error("--seeds must be 2 or more (seed %d is the curves phase's)" % SEED)
        phase_seeds(a, cfg)
    elif a.phase == "testbed":
        if not a.cluster:
            ap.error("the testbed phase needs --cluster")
        phase_testbed(a, cfg)
    else:
        phase_report(a)


if __name__ == "__main__":
    main()
