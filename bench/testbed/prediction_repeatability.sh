#!/usr/bin/env bash
# How far the predictions of the same plans move between bring-ups of a testbed: predicts a
# validation set's plans with the profiles and network fits of each of several loop runs on
# that testbed (bench/testbed/loop-<testbed>/run*: each profiled in its own bring-up), and
# prints per plan the predictions and their spread ((max - min) / min), then the median and
# largest spread. No testbed is needed: it reads files only.
#
# usage: bench/testbed/prediction_repeatability.sh MODEL SET_DIR RUN_DIR...
#        environment: GPUS (data/testbed/gpus-cpu.json; the testbed's own file where it has one,
#        e.g. data/testbed/gpus-cpu-span3.json)
set -euo pipefail
[ $# -ge 3 ] || { sed -n '2,10p' "$0" >&2; exit 2; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
model=$1 set=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
i=0
for run in "$@"; do
	"$here/build/sailor" validate --model "$model" "$set" --profiles "$run/profiles" \
		--gpus "${GPUS:-$here/data/testbed/gpus-cpu.json}" --network "$run/network.json" \
		--cluster "$run/cluster.json" --json >"$tmp/$i.json"
	i=$((i + 1))
done
python3 - "$tmp" "$i" "$@" <<'PY'
import json, statistics, sys
tmp, n, runs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
docs = [json.load(open(f"{tmp}/{k}.json")) for k in range(n)]
print(f"{'plan':40s} " + " ".join(f"{r.rstrip('/').split('/')[-1]:>8s}" for r in runs) + "   spread")
spreads = []
for idx, run in enumerate(docs[0]["runs"]):
    sims = [d["runs"][idx]["simulated_s"] for d in docs]
    spread = (max(sims) - min(sims)) / min(sims)
    spreads.append(spread)
    print(f"{run['file'][:40]:40s} " + " ".join(f"{s:8.4f}" for s in sims) + f"   {100 * spread:5.1f}%")
print(f"spread of a plan's predictions: median {100 * statistics.median(spreads):.1f}%, "
      f"max {100 * max(spreads):.1f}% ({len(spreads)} plans, {n} bring-ups)")
PY
