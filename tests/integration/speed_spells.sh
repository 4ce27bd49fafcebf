#!/usr/bin/env bash
# bench/testbed/speed_spells.py, the share of the time a machine's CPUs spend in slow spells and
# how much slower they run then (what a device type's speed_spells says): on made samples of two
# CPUs with known spells it finds the known fraction and slowdown, per CPU and pooled, and names
# what is wrong with bad input.
set -u
cd "$(dirname "$0")/../.."
source tests/lib/common.sh
[ -x "$PY" ] || skip "python3 is missing"
need_tool jq
spells=("$PY" bench/testbed/speed_spells.py)

# 200 s at one sample a second on each CPU: cpu 0 at 1000 us but 1200 in four 10-second buckets,
# cpu 1 at 1000 but 1100 in two (and a sample of the other CPU's spell level in a calm bucket,
# which the bucket's median ignores)
awk 'BEGIN {
	print "# machine_speed gpt2-tiny-six mbs 1, 4 passes every 1000 ms for 200 s"
	for (t = 0; t < 200; t++) {
		b = int(t / 10)
		v0 = (b == 3 || b == 4 || b == 11 || b == 17) ? 1200 : 1000
		v1 = (b == 8 || b == 9) ? 1100 : 1000
		if (t % 10 == 5 && v0 == 1000) v0 = 1300
		printf "%.2f 0 %.1f 4600.0\n%.2f 1 %.1f 4650.0 0\n", t, v0, t + 0.5, v1
	}
}' >"$work/samples.txt"
"${spells[@]}" --json "$work/samples.txt" >"$work/out.json" || die "speed_spells.py failed on made samples"
check "pooled: 6 of 40 buckets in a spell, the median spell 20 % slower" \
	'jq -e "(.fraction - 0.15 | fabs) < 1e-9 and (.slowdown - 0.2 | fabs) < 1e-9" "$work/out.json" >/dev/null'
check "per CPU: 4 and 2 spells, 20 and 10 % slower than the usual 1000 us" \
	'jq -e ".per_cpu | length == 2 and .[0].in_spell == 4 and .[1].in_spell == 2 and (.[0].slowdown - 0.2 | fabs) < 1e-9 and (.[1].slowdown - 0.1 | fabs) < 1e-9 and .[0].usual_us == 1000" "$work/out.json" >/dev/null'
"${spells[@]}" --over 15 --json "$work/samples.txt" >"$work/over.json" || die "speed_spells.py --over 15 failed"
check "--over 15: cpu 1's 10 % buckets are no spell" \
	'jq -e ".per_cpu[1].in_spell == 0 and (.fraction - 0.1 | fabs) < 1e-9" "$work/over.json" >/dev/null'
"${spells[@]}" "$work/samples.txt" >"$work/text.txt" || die "speed_spells.py (text) failed"
check "text output ends with the gpus file's field" \
	'tail -n 1 "$work/text.txt" | grep -q "\"speed_spells\": {\"fraction\": 0.15, \"slowdown\": 0.20}"'

# bad input: one message naming what to fix, nothing on stdout; exit status 2 for the usage, 1
# for the data
printf '0.0 0 1000.0 4600.0\n1.0 zero 1000.0 4600.0\n' >"$work/bad-line.txt"
head -n 20 "$work/samples.txt" >"$work/short.txt"
expect_error "no samples file" 2 "the following arguments are required: SAMPLES.txt" -- "${spells[@]}"
expect_error "a missing file" 1 "cannot read" -- "${spells[@]}" "$work/none.txt"
expect_error "a line that is not a sample" 1 "bad-line.txt:2: expected 'seconds cpu block_us alu_us [copy]'" \
	-- "${spells[@]}" "$work/bad-line.txt"
expect_error "too few buckets" 1 "no CPU with 4 buckets of 10 s" -- "${spells[@]}" "$work/short.txt"
expect_error "--over not a number" 2 "--over: takes a number, not 'lots'" -- "${spells[@]}" --over lots "$work/samples.txt"
expect_error "--bucket-s zero" 2 "--bucket-s: must be positive, not 0" -- "${spells[@]}" --bucket-s 0 "$work/samples.txt"
expect_error "an unknown option" 2 "unrecognized arguments: --quick" -- "${spells[@]}" --quick "$work/samples.txt"
finish
