#!/usr/bin/env bash
# error_split.py over every testbed whose plans were measured in more than one bring-up in this
# repository: the shipped sets (data/validation/testbed-*) with the later bring-ups of the same
# testbed (bench/testbed/timeline-*, speed-*, fresh-*, loop-*/run*). For each testbed OUT_DIR/<testbed>.md
# takes only bring-ups whose files have every probe the model reads now; <testbed>-with-gaps.md
# takes them all (error_split.py warns of each gap: those bring-ups differ by it, not by noise
# alone). Reads files only; a minute or so.
#
# usage: bench/testbed/error_split_all.sh OUT_DIR
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$here"
[ $# -eq 1 ] || { sed -n '2,9p' "$0" >&2; exit 2; }
out=$1
mkdir -p "$out"
T=bench/testbed V=data/validation
split() { python3 bench/testbed/error_split.py "$@"; }
runs() { ls -d "$T/loop-$1"/run* | sort -V; }
split --gpus data/testbed/gpus-cpu-span3.json $V/testbed-span3-gpt2tiny-six $(runs span3) >"$out/span3.md"
split --gpus data/testbed/gpus-cpu.json $V/testbed-pent5-gpt2tiny-mid $T/timeline-pent5-2026-11-27 \
	$(runs pent5) >"$out/pent5.md"
split --gpus data/testbed/gpus-cpu-mix4.json $V/testbed-mix4-gpt2tiny-five $T/timeline-mix4-2026-11-27 \
	$T/loop-mix4/run3 >"$out/mix4.md"
split --gpus data/testbed/gpus-cpu-mix4.json $V/testbed-mix4-gpt2tiny-five $T/timeline-mix4-2026-11-27 \
	$T/speed-mix4-2026-11-27 $(runs mix4) >"$out/mix4-with-gaps.md"
split --gpus data/testbed/gpus-cpu.json $V/testbed-quad4-gpt2tiny-wide $T/timeline-quad4-2026-11-27 $T/fresh-quad4-2026-11-28 \
	>"$out/quad4.md"
split --gpus data/testbed/gpus-cpu.json $V/testbed-quad4-gpt2tiny-wide $T/timeline-quad4-2026-11-27 $T/fresh-quad4-2026-11-28 \
	$(runs quad4) >"$out/quad4-with-gaps.md"
split --gpus data/testbed/gpus-cpu.json $V/testbed-tri3-gpt2tiny-deep $T/speed-tri3-2026-11-27 \
	$(runs tri3) >"$out/tri3-with-gaps.md"
split $V/testbed-geo3-gpt2tiny $T/speed-geo3-2026-11-27 $T/timeline-geo3-2026-11-27 >"$out/geo3-with-gaps.md"
for f in "$out"/*.md; do
	[ "$(basename "$f")" = README.md ] && continue
	echo "== $(basename "$f" .md)"
	sed -n '/^bring-ups:/,$p' "$f" | grep -v '^warning'
done
