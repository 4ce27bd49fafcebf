#!/usr/bin/env bash
# How far this machine's own speed moves over minutes: machine_speed.c (fixed work, thread CPU,
# no quota, a few percent of one core) sampled every second, then summarised per minute.
# The floor under every repeatability figure of the testbed (bench/RESULTS.md, 2026-11-28 (11)).
#
# usage: bench/testbed/machine_speed.sh DURATION_S OUT_DIR
#        writes OUT_DIR/samples.txt and OUT_DIR/summary.txt; environment: MODEL (gpt2-tiny-six),
#        MBS (1), PASSES (4), INTERVAL_MS (1000), COPIES (1: more copies of the block, timed in
#        turn, say whether where a copy's memory lies makes it slower), MINUTE_S (60: the
#        summary's bucket). Needs nothing of the testbed: run it on a quiet machine for the
#        machine alone, or beside a profile to see whether the two move together.
set -euo pipefail
[ $# -eq 2 ] || { sed -n '2,11p' "$0" >&2; exit 2; }
case $1 in '' | *[!0-9]*) echo "machine_speed.sh: DURATION_S must be a whole number of seconds, not '$1'" >&2; exit 2 ;; esac
duration=$1 out=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
MODEL=${MODEL:-gpt2-tiny-six} MBS=${MBS:-1} PASSES=${PASSES:-4} INTERVAL_MS=${INTERVAL_MS:-1000}
COPIES=${COPIES:-1} MINUTE_S=${MINUTE_S:-60}
mkdir -p "$out"
bin="$out/.machine_speed"
make -s -C "$here" build/libsailor.a
cc -O2 -std=c11 -D_GNU_SOURCE -I"$here/src" $(pkg-config --cflags openblas 2>/dev/null) \
	-o "$bin" "$here/bench/testbed/machine_speed.c" "$here/build/libsailor.a" -ljansson \
	$(pkg-config --libs openblas 2>/dev/null || echo -lopenblas) -fopenmp -lpthread -lm
# bounded: the probe stops itself at DURATION_S; the timeout is the backstop
SAILOR_DATA="$here/data" timeout $((duration + 60)) "$bin" "$MODEL" "$MBS" "$PASSES" \
	"$INTERVAL_MS" "$duration" "$COPIES" >"$out/samples.txt"
rm -f "$bin"
python3 "$here/bench/testbed/machine_speed_summary.py" "$out/samples.txt" "$MINUTE_S" |
	tee "$out/summary.txt"
