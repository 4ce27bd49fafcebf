#!/usr/bin/env python3
"""Time the SOSP'25 Sailor planner on the benchmark pool set, bench/plan_pools/cases.json.

The planner is run unchanged from its public artifact, the way its simulator driver
(sailor/Planner/simulations/simulator.py) runs it: its Python wrapper SailorPlanner is built
with the case's model profiles, training config, a quotas file and the objective, then one
`get_sorted_plans(cluster_config, training_config)` call is timed. Per case it reports:
  import_s      importing the wrapper module (it pulls in torch) and the compiled library;
  startup_s     constructing the planner: reading profiles, network fits, egress prices, and
                its table precomputation (build_structs, which it prints in ms; that figure is
                the `planner_startup_ms` of data/sosp25/scenarios.json);
  search_s      the get_sorted_plans call, timed as its driver times it (`search_time`).
sosp25_planner_s = startup_s + search_s (import left out, as in scenarios.json).

Getting the artifact (nothing of it belongs in this repository):
    git clone https://github.com/eth-easl/sailor /tmp/sosp25-sailor
    git -C /tmp/sosp25-sailor checkout cf2c8e3cc53ce178fe58a4003f46b4b6b848fc33   # the one timed
    apt-get install -y python3-numpy python3-torch python3-pybind11 libjsoncpp-dev
Its wrapper rebuilds the C++ library in its constructor with a Makefile fixed to Python 3.10;
this script builds the same sources once instead (`--build`, into --lib, with the running
Python's headers) and skips the wrapper's rebuild commands (rm/make/cp via os.system), so the
constructor's time is the planner's own start-up, not a compile.

Quotas (which GPU types and zones its planner knows, and the bound on data-parallel degree):
for each GPU type of the pool, the zones and values of the artifact's dummy_quotas_dict.json
(what its evaluation used), raised to the pool's count where the pool has more, plus any pool
zone it lacks. Budgets map as in its Fig. 11/12 runs: cluster_config["max_cost"] (throughput
objective), cluster_config["min_throughput"] (objective "iteration_cost").

A case is reported as not runnable, with the reason, when the artifact's data lacks one of its
zones (network fits multizone_bandwidths_het.json or egress prices communication_cost.json), its
model's profile for one of its GPU types, or the planner's memory table has no entry for a GPU
type (it then counts 0 bytes and can never place it).

    python3 bench/sosp25_planner_time.py --artifact /tmp/sosp25-sailor --build [--write]
        [--case NAME] [--timeout 600]
--write stores sosp25_planner_s in bench/plan_pools/cases.json (null where a case cannot run or
was stopped, with sosp25_planner_note saying why, and sosp25_planner_min_s = the timeout where it
was stopped); --from-json FILE stores an earlier run's --json results. One run per case.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = os.path.join(ROOT, "bench", "plan_pools", "cases.json")
MARK = "SOSP25_RESULT "
TRAIN_CONFIGS = {"OPT-350": "training_config_opt_350.json",
                 "GPT-Neo-2.7": "training_config_gpt_neo27.json"}


def art_path(art, *parts):
    return os.path.join(art, "sailor", *parts)


def build(art, lib):
    """Compile the planner's C++ sources (unchanged) into lib/, importable by this Python."""
    src = art_path(art, "Planner", "sailor_planner", "cpp_src")
    tmp = tempfile.mkdtemp(prefix="sosp25_build_")
    subprocess.run(["cp", "-r", src + "/.", tmp], check=True)
    inc = sysconfig.get_paths()["include"]
    subprocess.run(["make", "-C", tmp, "clean"], check=True, capture_output=True)
    subprocess.run(["make", "-C", tmp, "libplanner.so", "CFLAGS=-O3 -I" + inc], check=True)
    built = [f for f in os.listdir(tmp) if f.startswith("libplanner") and f.endswith(".so")]
    os.makedirs(lib, exist_ok=True)
    dest = os.path.join(lib, "libplanner" + sysconfig.get_config_var("EXT_SUFFIX"))
    subprocess.run(["cp", os.path.join(tmp, built[0]), dest], check=True)
    return dest


def cpp_table(path, name):
    """Keys of an `unordered_map<string, ...> NAME = {{"key", value}, ...}` in a C++ source."""
    text = open(path).read()
    m = re.search(name + r"\s*=\s*\{(.*?)\};", text, re.S)
    return set(re.findall(r'\{\s*"([^"]+)"\s*,', m.group(1))) if m else set()


def pool_of(case):
    with open(os.path.join(os.path.dirname(CASES), case["pool"])) as f:
        return json.load(f)["gpus"]


def why_not(art, case, gpus):
    """Reasons the artifact's planner cannot run this case as given, or []."""
    reasons = []
    with open(art_path(art, "providers", "multizone_bandwidths_het.json")) as f:
        net = json.load(f)
    with open(art_path(art, "providers", "gcp", "communication_cost.json")) as f:
        egress = json.load(f)
    zones = sorted({g["zone"] for g in gpus})
    types = sorted({g["gpu"] for g in gpus})
    miss = [z for z in zones if z not in net]
    if miss:
        reasons.append("zone(s) %s not in its network fits (multizone_bandwidths_het.json has %s)"
                       % (", ".join(miss), ", ".join(sorted(net))))
    miss = [z for z in zones if z not in egress]
    if miss:
        reasons.append("zone(s) %s not in its egress prices (communication_cost.json)"
                       % ", ".join(miss))
    for t in types:
        missing_net = [z for z in zones if z in net and t not in net[z]]
        if missing_net:
            reasons.append("no network fits for %s in %s" % (t, ", ".join(missing_net)))
    prof = art_path(art, "Planner", "sailor_planner", "profiles", case["model"])
    miss = [t for t in types if not os.path.exists(os.path.join(prof, t, "profile.json"))]
    if miss:
        reasons.append("no %s profile for %s" % (case["model"], ", ".join(miss)))
    mem = cpp_table(art_path(art, "Planner", "sailor_planner", "cpp_src", "planner_utils.cpp"),
                    "GPU_MEMORY")
    miss = [t for t in types if t not in mem]
    if miss:
        reasons.append("%s not in its planner's GPU_MEMORY table (planner_utils.cpp knows %s), so "
                       "it counts 0 bytes of memory and can never place it" %
                       (", ".join(miss), ", ".join(sorted(mem))))
    if case["model"] not in TRAIN_CONFIGS:
        reasons.append("no training config for %s" % case["model"])
    return reasons


def quotas_for(art, gpus):
    with open(art_path(art, "Planner", "sailor_planner", "dummy_quotas_dict.json")) as f:
        dummy = json.load(f)
    base = next(iter(dummy.values()))
    q = {}
    for g in gpus:
        zq = q.setdefault(g["gpu"], dict(dummy.get(g["gpu"], base)))
        zq[g["zone"]] = max(zq.get(g["zone"], 0), g["count"])
    return q


def child(args):
    """One case in this process: import, construct, search; print MARK + JSON."""
    spec = json.loads(args.child)
    art = spec["artifact"]
    home = tempfile.mkdtemp(prefix="sosp25_home_")
    os.symlink(os.path.abspath(art), os.path.join(home, "sailor"))  # it reads $SAILOR_PATH/sailor/...
    os.environ["SAILOR_PATH"] = home
    sys.path[:0] = [os.path.abspath(art), os.path.abspath(args.lib)]
    t0 = time.time()
    from sailor.Planner.sailor_planner.cpp_src import planner as wrapper  # noqa: E402
    import libplanner  # noqa: F401,E402
    t1 = time.time()
    skipped = []
    real_system = os.system
    os.system = lambda cmd: skipped.append(cmd) or 0  # its rebuild of the library: built once, by --build
    try:
        p = wrapper.SailorPlanner(spec["profiles"], spec["training_config"], spec["quotas"],
                                  spec["objective"], False)
    finally:
        os.system = real_system
    t2 = time.time()
    with open(spec["training_config"]) as f:
        training_config = json.load(f)
    start = time.time()
    plans = p.get_sorted_plans(cluster_config=dict(spec["cluster_config"]),
                               training_config=training_config)
    search = time.time() - start
    best = plans[0] if plans else None
    out = {"import_s": t1 - t0, "startup_s": t2 - t1, "search_s": search, "plans": len(plans),
           "skipped_os_system": skipped,
           "best": None if best is None else {
               "mbs": best["mbs"], "stages": best["pipeline_list"][0]["num_stages"],
               "used_gpus": best["used_gpus"], "estimated_throughput": best["estimated_throughput"],
               "estimated_cost": best["estimated_cost"]}}
    sys.stdout.flush()
    print(MARK + json.dumps(out), flush=True)


def run_case(args, case):
    gpus = pool_of(case)
    reasons = why_not(args.artifact, case, gpus)
    if reasons:
        return {"name": case["name"], "runnable": False, "reason": "; ".join(reasons)}
    cluster = {}
    for g in gpus:
        key = g["gpu"] + "_" + g["zone"]
        cluster[key] = cluster.get(key, 0) + g["count"]
    cluster["max_cost"] = float(case.get("max_cost_usd_per_iter") or 0.0)
    cluster["min_throughput"] = float(case.get("min_throughput_it_s") or 0.0)
    qf = tempfile.NamedTemporaryFile("w", suffix="_quotas.json", delete=False)
    json.dump(quotas_for(args.artifact, gpus), qf)
    qf.close()
    spec = {"artifact": args.artifact,
            "profiles": art_path(args.artifact, "Planner", "sailor_planner", "profiles",
                                 case["model"]) + "/",
            "training_config": art_path(args.artifact, "Planner", "simulations", "configs",
                                        TRAIN_CONFIGS[case["model"]]),
            "quotas": qf.name,
            "objective": "iteration_cost" if case["objective"] == "cost" else "throughput",
            "cluster_config": cluster}
    cmd = [sys.executable, os.path.abspath(__file__), "--artifact", args.artifact,
           "--lib", args.lib, "--child", json.dumps(spec)]
    t0 = time.time()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"name": case["name"], "runnable": True, "timed_out": True,
                "wall_s": time.time() - t0, "quotas": qf.name}
    res = {"name": case["name"], "runnable": True, "wall_s": time.time() - t0,
           "rc": proc.returncode, "quotas": qf.name}
    m = re.search(r"build_structs took (\d+) ms", proc.stdout)
    res["build_structs_ms"] = int(m.group(1)) if m else None
    for line in proc.stdout.splitlines():
        if line.startswith(MARK):
            res.update(json.loads(line[len(MARK):]))
    if "search_s" not in res:
        if proc.returncode < 0:
            sig = signal.Signals(-proc.returncode).name
            where = ("during get_sorted_plans, after start-up (build_structs %d ms)" %
                     res["build_structs_ms"] if res["build_structs_ms"] is not None
                     else "during start-up")
            res["error"] = "its planner crashed with %s %s" % (sig, where)
            multi = sorted({g["gpu"] for g in gpus
                            if len({h["zone"] for h in gpus if h["gpu"] == g["gpu"]}) > 1})
            if "GH-96" in multi:
                res["error"] += (" (GH-96 in more than one zone: the same happens for a pool of "
                                 "GH-96 alone in two zones, and not in one zone)")
        else:
            res["error"] = (proc.stderr or proc.stdout)[-2000:]
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--artifact", required=True, help="checkout of github.com/eth-easl/sailor")
    ap.add_argument("--lib", default="/tmp/sosp25_libplanner", help="where the built library is")
    ap.add_argument("--build", action="store_true", help="build its C++ planner into --lib first")
    ap.add_argument("--case", action="append", help="only these cases (by name)")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per case")
    ap.add_argument("--write", action="store_true", help="store the times in cases.json")
    ap.add_argument("--json", help="also write the full per-case results here")
    ap.add_argument("--from-json", help="store the results of an earlier --json run (no run)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)
    if args.from_json:
        with open(args.from_json) as f:
            return write(json.load(f), args.timeout)
    if args.build:
        print("built", build(args.artifact, args.lib), flush=True)
    with open(CASES) as f:
        cases = json.load(f)["cases"]
    if args.case:
        cases = [c for c in cases if c["name"] in args.case]
    try:
        load = open("/proc/loadavg").read().split()[:3]
    except OSError:
        load = ["?"]
    print("# SOSP'25 planner, one run per case, %d CPUs, load %s, %s UTC" %
          (os.cpu_count(), " ".join(load), time.strftime("%Y-%m-%d %H:%M", time.gmtime())))
    print("| case | objective | import s | start-up s | (build_structs s) | search s | "
          "start-up + search s | plans | note |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    results = []
    for case in cases:
        r = run_case(args, case)
        results.append(r)
        if not r["runnable"]:
            row = ["", "", "", "", "", "", "cannot run: " + r["reason"]]
        elif r.get("timed_out"):
            row = ["", "", "", "", "> %.0f" % args.timeout, "", "timed out"]
        elif "error" in r:
            row = ["", "", "", "", "", "", "failed: " + r["error"].strip().splitlines()[-1]]
        else:
            bs = r["build_structs_ms"]
            row = ["%.2f" % r["import_s"], "%.2f" % r["startup_s"],
                   "" if bs is None else "%.2f" % (bs / 1000), "%.2f" % r["search_s"],
                   "%.2f" % (r["startup_s"] + r["search_s"]), str(r["plans"]), ""]
        print("| %s | %s | %s |" % (case["name"], case["objective"], " | ".join(row)), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    if args.write:
        write(results, args.timeout)


def write(results, timeout):
    """Rewrite cases.json's per-case sosp25 fields, keeping its layout (one case per two lines):
    sosp25_planner_s (null unless measured), sosp25_planner_min_s (the limit a stopped run
    reached) and sosp25_planner_note (why there is no time)."""
    with open(CASES) as f:
        text = f.read()
    for r in results:
        floor = None
        if not r["runnable"]:
            val, note = "null", "cannot run: " + r["reason"]
        elif r.get("timed_out"):
            val, floor = "null", timeout
            note = ("stopped after %.0f s (one run): its start-up plus search takes longer"
                    % timeout)
        elif "error" in r:
            val, note = "null", r["error"].strip().splitlines()[-1]
        else:
            val, note = "%.2f" % (r["startup_s"] + r["search_s"]), None
        pat = re.compile(r'(\{"name": "%s",.*?"sosp25_planner_s": )([^,}]+)'
                         r'(, "sosp25_planner_min_s": [^,}]+)?'
                         r'(, "sosp25_planner_note": "(?:[^"\\]|\\.)*")?\}'
                         % re.escape(r["name"]), re.S)
        tail = ("" if floor is None else ', "sosp25_planner_min_s": %.0f' % floor) + \
               ("" if note is None else ', "sosp25_planner_note": ' + json.dumps(note))
        text, n = pat.subn(lambda m: m.group(1) + val + tail + "}", text, count=1)
        if n != 1:
            sys.exit("sosp25_planner_time: case %s not found in cases.json" % r["name"])
    json.loads(text)
    with open(CASES, "w") as f:
        f.write(text)


if __name__ == "__main__":
    sys.exit(main())
