#!/usr/bin/env bash
# Does a pass cost more CPU when it starts with the caches holding other processes' data, as a
# pipeline stage's passes do after a wait on a machine its ranks share? Runs pass_cold_cost.c
# (the stage built as the runtime builds it) warm, as the profiler's back-to-back calls run,
# and cold, after writing 1.5 x the last-level cache before each pass; warm and cold alternate,
# REPEATS times, on one core. Prints per stage the medians (µs of thread CPU per pass) and the
# cold / warm ratios, to set against the run / model CPU ratios of the timelines
# (bench/testbed/timeline-*/env/timelines/*.compare.txt; bench/RESULTS.md, 2026-11-27 (6)).
#
# usage: bench/testbed/pass_cold_cost.sh [OUT_FILE]   environment: CASES (MODEL:FIRST:LAST:MBS
#        ..., the timelines' stages by default), ROUNDS (60), REPEATS (3), CORE (0).
#        Needs a C compiler, the project's build (make) and python3; no root.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$here"
[ $# -le 1 ] || { sed -n '2,12p' "$0" >&2; exit 2; }
out=${1:-/dev/stdout}
CASES=${CASES:-gpt2-tiny:2:2:2 gpt2-tiny-wide:0:1:1 gpt2-tiny-wide:2:3:1 gpt2-tiny-wide:4:4:1 gpt2-tiny-deep:1:3:1 gpt2-tiny-five:2:3:1}
ROUNDS=${ROUNDS:-60} REPEATS=${REPEATS:-3} CORE=${CORE:-0}
llc_kib=$(sed 's/K$//' /sys/devices/system/cpu/cpu0/cache/index3/size 2>/dev/null || echo 32768)
evict_mib=$(awk -v k="$llc_kib" 'BEGIN { printf "%.1f", 1.5 * k / 1024 }')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bench/testbed/pass_cold_cost_build.sh "$work/pass_cold_cost"
export SAILOR_DATA="$here/data"
for rep in $(seq 1 "$REPEATS"); do
	for c in $CASES; do
		IFS=: read -r model first last mbs <<<"$c"
		for mib in 0 "$evict_mib"; do
			taskset -c "$CORE" "$work/pass_cold_cost" "$model" "$first" "$last" "$mbs" "$mib" \
				"$ROUNDS" >>"$work/all.txt"
		done
	done
done
python3 - "$work/all.txt" "$llc_kib" "$evict_mib" >"$out" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    model, first, last, mbs, mib, fwd, bwd = line.split()
    cold = float(mib) > 0
    rows.setdefault((model, first, last, mbs), {False: [], True: []})[cold].append((float(fwd), float(bwd)))
print(f"last-level cache {sys.argv[2]} KiB; cold: {sys.argv[3]} MiB written before each pass")
print("| stage (model, layers, mbs) | forward warm / cold µs | ratio | backward warm / cold µs | ratio |")
print("|---|---|---|---|---|")
for (model, first, last, mbs), r in rows.items():
    wf = statistics.median(x[0] for x in r[False]); cf = statistics.median(x[0] for x in r[True])
    wb = statistics.median(x[1] for x in r[False]); cb = statistics.median(x[1] for x in r[True])
    print(f"| {model} [{first}, {last}] mbs {mbs} | {wf:.0f} / {cf:.0f} | {cf / wf:.2f} | {wb:.0f} / {cb:.0f} | {cb / wb:.2f} |")
PY
