#!/usr/bin/env bash
# The runtime's own gradient rings on a testbed: brings DESC up, runs every plan file of
# PLAN_DIR with `sailor run --timeline` in ROUNDS rounds (one plan after the other in each), and
# prints each plan's gradient sync per step from the last rank's arrival to the ring's end
# (steps 2 on; median over the rounds' steps). Made to compare rings whose slow hop meets traffic
# back to its sender's host with rings whose hop meets traffic to another host of its zone
# (bench/RESULTS.md, 2026-11-28 (12); runtime_collectives.c, ring_loads_reverse). Needs root
# (the testbed), jq, python3; writes PLAN_DIR/<plan>.r<k>.{out,err,timeline.json}.
#
# usage: bench/testbed/ring_sync_runs.sh PLAN_DIR   environment: DESC (data/testbed/span3.json),
#        MODEL (gpt2-tiny-six), GPUS (data/testbed/gpus-cpu-span3.json), SEQ (the model's
#        seq_len), STEPS (6), ROUNDS (3)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$here"
[ $# -eq 1 ] && [ -d "$1" ] || { sed -n '2,12p' "$0" >&2; exit 2; }
dir=$(cd "$1" && pwd)
DESC=${DESC:-data/testbed/span3.json} MODEL=${MODEL:-gpt2-tiny-six}
GPUS=${GPUS:-data/testbed/gpus-cpu-span3.json} STEPS=${STEPS:-6} ROUNDS=${ROUNDS:-3}
model_file=$MODEL; [ -f "$model_file" ] || model_file=data/models/$MODEL.json
SEQ=${SEQ:-$(jq -r .seq_len "$model_file")}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
[ "$(id -u)" -eq 0 ] || { echo "ring_sync_runs: needs root (the testbed)" >&2; exit 1; }
mapfile -t plans < <(find "$dir" -maxdepth 1 -name '*.json' ! -name 'cluster.json' ! -name '*.timeline.json' | sort)
[ ${#plans[@]} -gt 0 ] || { echo "ring_sync_runs: no plan files in $dir" >&2; exit 1; }
work=$(mktemp -d /tmp/sailor-ringsync-XXXXXX)
trap 'scripts/testbed down "$DESC" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
scripts/testbed up "$DESC" -o "$dir/cluster.json" >&2
build/sailor data data/text/fsf-licenses.txt -o "$work/tokens.bin" >/dev/null
for round in $(seq 1 "$ROUNDS"); do
	for p in "${plans[@]}"; do
		n=$(basename "$p" .json)
		echo "ring_sync_runs: $n, round $round of $ROUNDS ($(date -u +%T))" >&2
		nice -n -5 timeout 600 build/sailor run --model "$MODEL" --data "$work/tokens.bin" --plan "$p" \
			--cluster "$dir/cluster.json" --gpus "$GPUS" --seq-len "$SEQ" --steps "$STEPS" --json \
			--timeline "$dir/$n.r$round.timeline.json" >"$dir/$n.r$round.out" 2>"$dir/$n.r$round.err" ||
			echo "ring_sync_runs: $n round $round failed (see $dir/$n.r$round.err)" >&2
	done
done
python3 - "$dir" "$ROUNDS" "${plans[@]}" <<'PY'
import collections, json, os, statistics, sys
out_dir, rounds, plans = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
print("plan                      gradient sync after the last arrival, s (median; each step)")
for plan in plans:
    name = os.path.basename(plan)[:-len(".json")]
    syncs = []
    for r in range(1, rounds + 1):
        path = os.path.join(out_dir, f"{name}.r{r}.timeline.json")
        if not os.path.exists(path):
            continue
        by_step = collections.defaultdict(list)
        for e in json.load(open(path))["traceEvents"]:
            if e.get("name") == "grad-sync":
                by_step[e["args"]["step"]].append((e["ts"], e["ts"] + e["dur"]))
        for step, spans in sorted(by_step.items()):
            if step > 1:  # the first step warms up
                syncs.append((max(e for _, e in spans) - max(s for s, _ in spans)) / 1e6)
    if syncs:
        print(f"{name:25s} {statistics.median(syncs):.3f}; " + " ".join(f"{x:.2f}" for x in syncs))
    else:
        print(f"{name:25s} no timeline")
PY
