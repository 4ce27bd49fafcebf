#!/usr/bin/env bash
# Every plan sailor emits runs as emitted (issue 23): for every shipped model on every shipped
# example pool, and for every step of every SOSP'25 scenario trace, under both cost models, the
# plan `sailor plan` writes is taken by `sailor simulate --plan P` and by
# `sailor run --plan P --data T --dry-run` with no flag added (the plan names its model and, where
# its pipelines do not divide the micro-batches, how they are shared), the simulated samples per
# iteration equal the global batch, and the iteration time `simulate` reports equals the one
# `plan` reported (the round trip).
# Scenarios come from ../shared/reference/sosp25/scenarios.json (and its traces/) where that
# folder is beside the checkout, else from the copies in data/.
set -u
source tests/lib/common.sh
need_python
tokens "$work/tokens.bin"

scenarios=data/sosp25/scenarios.json traces=data/traces
if [ -f ../shared/reference/sosp25/scenarios.json ]; then
	scenarios=../shared/reference/sosp25/scenarios.json
	traces=../shared/reference/sosp25/traces
fi

# cases: one line per `sailor plan` run: "label<TAB>args..."
"$PY" - "$scenarios" "$traces" >"$work/cases" <<'PY' || exit 1
import glob, json, os, sys
scenarios, traces = sys.argv[1], sys.argv[2]
models = sorted(os.path.basename(p)[:-5] for p in glob.glob("data/models/*.json")
                if not os.path.basename(p).startswith("layer_sizes"))
pools = sorted(glob.glob("data/examples/pool-*.json"))
for cm in ("sailor", "sosp25"):
    for m in models:
        for pool in pools:
            print(f"{m} on {os.path.basename(pool)} ({cm})\t--model {m} --pool {pool} --cost-model {cm}")
    for name, s in sorted(json.load(open(scenarios))["scenarios"].items()):
        trace = os.path.join(traces, s["trace"])
        if not os.path.exists(trace):
            trace = os.path.join("data", "traces", s["trace"])
        args = ["--model", s["model"], "--trace", trace, "--cost-model", cm]
        if s["objective"] == "iteration_cost":
            args += ["--objective", "cost"]
        c = s.get("constraint") or {}
        if "min_throughput_it_s" in c:
            args += ["--min-throughput", str(c["min_throughput_it_s"])]
        if "max_cost_usd_per_iter" in c:
            args += ["--max-cost", str(c["max_cost_usd_per_iter"])]
        print(f"{name} ({cm})\t" + " ".join(args))
PY

checked=0 uneven=0 skipped=0
while IFS=$'\t' read -r label args; do
	cm=${args##*--cost-model }
	cm=${cm%% *}
	# shellcheck disable=SC2086  # args is a list of words made above
	if ! "$SAILOR" plan $args --json >"$work/planned.json" 2>"$work/plan.err"; then
		# a pool on which no plan fits is not this test's subject; a plan that exists is
		if grep -q "fits on none\|no plan" "$work/plan.err"; then
			skipped=$((skipped + 1))
			continue
		fi
		fail "$label: sailor plan failed: $(head -c 400 "$work/plan.err")"
		continue
	fi
	"$PY" - "$work/planned.json" "$work" <<'PY' >"$work/steps" || { fail "$label: cannot split the steps"; continue; }
import json, sys
doc = json.load(open(sys.argv[1]))
for s in doc["steps"]:
    if s.get("plan") is None:
        continue
    path = f"{sys.argv[2]}/step-{s['step']}.json"
    json.dump(s["plan"], open(path, "w"))
    json.dump(s["estimate"], open(path + ".estimate", "w"))
    print(path)
PY
	while read -r plan; do
		checked=$((checked + 1))
		grep -q '"microbatches_per_pipeline"' "$plan" && uneven=$((uneven + 1))
		if ! "$SAILOR" simulate --plan "$plan" --cost-model "$cm" --json >"$work/sim.json" 2>"$work/sim.err"; then
			fail "$label $(basename "$plan"): simulate refused the emitted plan: $(cat "$work/sim.err")"
			continue
		fi
		if ! "$SAILOR" run --plan "$plan" --data "$work/tokens.bin" --dry-run >/dev/null 2>"$work/run.err"; then
			fail "$label $(basename "$plan"): run --dry-run refused the emitted plan: $(cat "$work/run.err")"
			continue
		fi
		"$PY" - "$plan" "$work/sim.json" "$plan.estimate" <<'PY' || fail "$label $(basename "$plan"): $(cat "$work/check.err")"
import json, sys
plan, sim, est = (json.load(open(p)) for p in sys.argv[1:4])
err = open(sys.argv[2].rsplit("/", 1)[0] + "/check.err", "w")
def bad(msg):
    err.write(msg)
    sys.exit(1)
if "model" not in plan:
    bad("the plan names no model")
if sim["samples_per_iteration"] != sim["global_batch"]:
    bad(f"simulated {sim['samples_per_iteration']} samples per iteration, global batch {sim['global_batch']}")
counts = plan.get("microbatches_per_pipeline")
if counts is not None and sum(counts) * plan["micro_batch"] != sim["global_batch"]:
    bad(f"microbatches_per_pipeline {counts} do not make the global batch")
if sim["iteration_time_s"] != est["iteration_time_s"]:
    bad(f"simulate says {sim['iteration_time_s']} s per iteration, plan said {est['iteration_time_s']}")
PY
	done <"$work/steps"
	rm -f "$work"/step-*.json*
done <"$work/cases"

# A hand-written plan whose micro-batches its pipelines cannot share evenly (and that gives no
# "microbatches_per_pipeline") is refused by simulate and run alike, with the same message.
"$PY" - "$work/hand.json" <<'PY' || exit 1
import json, sys
plan = json.load(open("data/examples/plan-opt350-a100-v100.json"))
plan["model"] = "OPT-350"
plan["global_batch"] = 1000  # 500 micro-batches of 2 over 8 pipelines
plan.pop("microbatches_per_pipeline", None)
json.dump(plan, open(sys.argv[1], "w"))
PY
want="cannot share evenly: give \"microbatches_per_pipeline\""
"$SAILOR" simulate --plan "$work/hand.json" >/dev/null 2>"$work/hand-sim.err" &&
	fail "simulate accepted a plan whose pipelines cannot share the batch"
"$SAILOR" run --plan "$work/hand.json" --data "$work/tokens.bin" --dry-run >/dev/null 2>"$work/hand-run.err" &&
	fail "run accepted a plan whose pipelines cannot share the batch"
grep -qF "$want" "$work/hand-sim.err" || fail "simulate's refusal: $(cat "$work/hand-sim.err")"
grep -qF "$want" "$work/hand-run.err" || fail "run's refusal: $(cat "$work/hand-run.err")"

echo "$checked emitted plans checked ($uneven share micro-batches unevenly; $skipped plan runs found no plan), $failures failures"
[ "$checked" -gt 0 ] || { echo "FAIL: no plan was checked"; exit 1; }
finish
