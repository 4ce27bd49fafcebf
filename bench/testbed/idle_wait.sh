#!/usr/bin/env bash
# How a rank waits in MPI, measured on the emulated cluster: every plan of PLANS runs with
# `sailor run` once with ranks that poll (MPI's blocking calls, SAILOR_MPI_WAIT=poll) and once
# with ranks that sleep between tests (SAILOR_MPI_WAIT=sleep, what ranks on the testbed's
# CPU-quota devices do by default), ROUNDS times, the two interleaved; prints per plan the median
# step time of each and their ratio. Needs root (the testbed), mpirun, jq, python3.
#
# usage: bench/testbed/idle_wait.sh PLANS_DIR [OUT_DIR]   environment: DESC
#        (data/testbed/geo3.json), ROUNDS (3), STEPS (10), SEQ (128)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$here"
[ $# -ge 1 ] || { sed -n '2,9p' "$0" >&2; exit 2; }
plans=$1
out=${2:-$(mktemp -d)}
DESC=${DESC:-data/testbed/geo3.json}
ROUNDS=${ROUNDS:-3} STEPS=${STEPS:-10} SEQ=${SEQ:-128}
S="$here/build/sailor"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
[ "$(id -u)" -eq 0 ] || { echo "idle_wait: needs root (the testbed)" >&2; exit 1; }
[ -x "$S" ] || make -s -j2
mkdir -p "$out"
trap '[ "${KEEP_TESTBED:-0}" = 1 ] || scripts/testbed down "$DESC" >/dev/null 2>&1 || true' EXIT
scripts/testbed up "$DESC" -o "$out/cluster.json" >&2
# the ranks of a testbed host are started by its agent, not by this shell: mpirun must forward
# the variable
for mode in poll sleep; do
	jq --arg m "SAILOR_MPI_WAIT=$mode" '.launch.mpirun_args += ["-x", $m]' "$out/cluster.json" \
		>"$out/cluster-$mode.json"
done
"$S" data data/text/fsf-licenses.txt -o "$out/tokens.bin" >/dev/null
for round in $(seq "$ROUNDS"); do
	for p in "$plans"/*.json; do
		n=$(basename "$p" .json)
		for mode in poll sleep; do
			nice -n -5 timeout 600 "$S" run --model gpt2-tiny --data "$out/tokens.bin" --plan "$p" \
				--cluster "$out/cluster-$mode.json" --gpus data/testbed/gpus-cpu.json \
				--seq-len "$SEQ" --steps "$STEPS" --lr 1e-3 --json \
				>"$out/$n-$mode-$round.out" 2>"$out/$n-$mode-$round.err" </dev/null ||
				echo "idle_wait: $n ($mode, round $round) failed: $out/$n-$mode-$round.err" >&2
		done
	done
done
python3 - "$out" "$plans" <<'PY'
import glob, json, os, statistics, sys
out, plans = sys.argv[1:]
def step_s(path):
    for line in open(path):
        if line.startswith("{"):
            e = json.loads(line)
            if e.get("event") == "end":
                return e["median_step_time_s"]
    return None
print(f"{'plan':34} {'poll s':>8} {'sleep s':>8} {'poll/sleep':>10}  (median over rounds of each run's median step)")
ratios = []
for p in sorted(glob.glob(os.path.join(plans, "*.json"))):
    n = os.path.basename(p)[:-5]
    med = {}
    for mode in ("poll", "sleep"):
        xs = [x for x in (step_s(f) for f in glob.glob(f"{out}/{n}-{mode}-*.out")) if x]
        med[mode] = statistics.median(xs) if xs else None
    if med["poll"] and med["sleep"]:
        ratios.append(med["poll"] / med["sleep"])
        print(f"{n:34} {med['poll']:8.3f} {med['sleep']:8.3f} {med['poll'] / med['sleep']:10.2f}")
    else:
        print(f"{n:34} (a run failed)")
if ratios:
    print(f"poll/sleep: median {statistics.median(ratios):.2f}, min {min(ratios):.2f}, max {max(ratios):.2f}")
PY
