#!/usr/bin/env bash
# bench/testbed/machine_speed.sh, the probe of how far this machine's own speed moves (fixed work
# in thread CPU, no quota; bench/RESULTS.md, 2026-11-28 (11)): it builds against the library as
# it is, takes a sample per interval of every copy in turn, and its summary reads them back;
# bad arguments get their usage or a message that names them, and nothing is measured.
set -u
cd "$(dirname "$0")/../.."
source tests/lib/common.sh
[ -x "$PY" ] || skip "python3 is missing"
need_tool cc
INTERVAL_MS=100 COPIES=2 MINUTE_S=10 timeout 120 bash bench/testbed/machine_speed.sh 2 "$work/ms" \
	>"$work/out" 2>"$work/err" || { cat "$work/err"; die "machine_speed.sh failed"; }
samples=$(grep -vc '^#' "$work/ms/samples.txt")
# at most one sample per interval; fewer only where a sample's work outlasts its interval (a
# loaded machine), never fewer than the summary's 5 per bucket on anything that runs the suite
check "no more than one sample per interval (2 s at 100 ms: $samples)" '[ "$samples" -ge 5 ] && [ "$samples" -le 22 ]'
check "each sample: time, cpu, block us, alu us, copy" \
	'awk "!/^#/ && (NF != 5 || \$3 <= 0 || \$4 <= 0 || (\$5 != 0 && \$5 != 1)) { bad = 1 } END { exit bad }" "$work/ms/samples.txt"'
check "both copies timed" '[ "$(awk "!/^#/ { print \$5 }" "$work/ms/samples.txt" | sort -u | wc -l)" -eq 2 ]'
check "the summary compares the copies" 'grep -q "^2 copies, each against all copies in the same bucket" "$work/ms/summary.txt"'
check "the summary is what it printed" 'cmp -s "$work/out" "$work/ms/summary.txt"'
check "the probe's binary is not left behind" '[ ! -e "$work/ms/.machine_speed" ]'
expect_error "no arguments: the usage" 2 "usage: bench/testbed/machine_speed.sh DURATION_S OUT_DIR" \
	-- bash bench/testbed/machine_speed.sh
expect_error "a duration that is not a number" 2 "DURATION_S must be a whole number of seconds, not 'soon'" \
	-- bash bench/testbed/machine_speed.sh soon "$work/bad"
check "nothing measured for it" '[ ! -e "$work/bad" ]'
expect_error "a summary of no samples" 1 "fewer than 2 samples" \
	-- "$PY" bench/testbed/machine_speed_summary.py /dev/null
head -n 4 "$work/ms/samples.txt" >"$work/few.txt"
expect_error "a summary of too few samples for a bucket" 1 "no bucket of 60 s holds 5 samples" \
	-- "$PY" bench/testbed/machine_speed_summary.py "$work/few.txt"
finish
