#!/usr/bin/env bash
# error_split.py over every testbed whose plans were measured in more than one bring-up: each
# shipped set (data/validation/testbed-*) with the later bring-ups of its plans shipped beside it
# (data/validation/testbed-*/bring-ups/*, README there), and, with LOOPS=DIR, the loop runs of
# each testbed under DIR/loop-<testbed>/run* (bench/testbed/loop.sh's OUT folders, one per
# run). For each testbed OUT_DIR/<testbed>.md takes only bring-ups whose files have every probe
# the model reads now; <testbed>-with-gaps.md takes them all (error_split.py warns of each gap:
# those bring-ups differ by it, not by noise alone). A testbed with a single bring-up (span3's
# set, without loop runs) is left out. Reads files only; a minute or so. What it found:
# docs/design/testbed.md; its figures: bench/RESULTS.md.
#
# usage: bench/testbed/error_split_all.sh OUT_DIR   environment: LOOPS (none)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$here"
[ $# -eq 1 ] || { sed -n '2,12p' "$0" >&2; exit 2; }
out=$1
mkdir -p "$out"
V=data/validation
split() { python3 bench/testbed/error_split.py "$@"; }
# runs TESTBED: the loop runs of TESTBED under LOOPS, in run order (none without LOOPS)
runs() {
	[ -n "${LOOPS:-}" ] || return 0
	ls -d "$LOOPS/loop-$1"/run* 2>/dev/null | sort -V || true
}
# each SET_DIR [NAME...]: the set and the bring-ups NAMEd, shipped beside it
each() {
	local set=$1 name
	shift
	echo "$set"
	for name in "$@"; do echo "$set/bring-ups/$name"; done
}
# testbed NAME OUT GPUS DIR...: error_split.py over DIR... when there are two bring-ups or more
testbed() {
	local name=$1 file=$2 gpus=$3
	shift 3
	[ $# -ge 2 ] || { echo "error_split_all: $name: one bring-up, nothing to split (LOOPS adds the loop runs)" >&2; return 0; }
	split --gpus "$gpus" "$@" >"$out/$file.md"
}
T=2026-11-27
mapfile -t span3 < <(each $V/testbed-span3-gpt2tiny-six; runs span3)
testbed span3 span3 data/testbed/gpus-cpu-span3.json "${span3[@]}"
mapfile -t pent5 < <(each $V/testbed-pent5-gpt2tiny-mid timeline-$T; runs pent5)
testbed pent5 pent5 data/testbed/gpus-cpu.json "${pent5[@]}"
mapfile -t mix4 < <(each $V/testbed-mix4-gpt2tiny-five timeline-$T; runs mix4 | grep '/run3$' || true)
testbed mix4 mix4 data/testbed/gpus-cpu-mix4.json "${mix4[@]}"
mapfile -t mix4 < <(each $V/testbed-mix4-gpt2tiny-five timeline-$T speed-$T; runs mix4)
testbed mix4 mix4-with-gaps data/testbed/gpus-cpu-mix4.json "${mix4[@]}"
mapfile -t quad4 < <(each $V/testbed-quad4-gpt2tiny-wide timeline-$T fresh-2026-11-28)
testbed quad4 quad4 data/testbed/gpus-cpu.json "${quad4[@]}"
mapfile -t quad4 < <(each $V/testbed-quad4-gpt2tiny-wide timeline-$T fresh-2026-11-28; runs quad4)
testbed quad4 quad4-with-gaps data/testbed/gpus-cpu.json "${quad4[@]}"
mapfile -t tri3 < <(each $V/testbed-tri3-gpt2tiny-deep speed-$T; runs tri3)
testbed tri3 tri3-with-gaps data/testbed/gpus-cpu.json "${tri3[@]}"
mapfile -t geo3 < <(each $V/testbed-geo3-gpt2tiny speed-$T timeline-$T)
testbed geo3 geo3-with-gaps data/testbed/gpus-cpu.json "${geo3[@]}"
for f in "$out"/*.md; do
	[ -e "$f" ] || continue
	[ "$(basename "$f")" = README.md ] && continue
	echo "== $(basename "$f" .md)"
	sed -n '/^bring-ups:/,$p' "$f" | grep -v '^warning'
done
