#!/usr/bin/env bash
# The model of our runtime against the shipped runs of our runtime on the testbeds
# (data/validation/testbed-*: geo3 and its -memopts set, the quad4 and tri3 sets measured once
# on testbeds of other shapes, and pent5's, mix4's and span3's, each measured after the model's
# changes of its day and left out of them): every run is predicted (the runtime model, not
# DeepSpeed's), and the errors stay within a regression bound a little above today's figures
# (data/validation/README.md); they catch a model change that makes things worse. Not all of
# them meet the targets (time 4% mean, 10% max): memopts' p2 d2 ZeRO plan is 8% fast, tri3's
# one-host ZeRO and selective-recompute DP plans 11-13% fast, mix4's pipelines onto 1/7-core
# devices 12-20% slow, and most sets' means are 4-9% (README, what is still off). The message
# probe (2026-11-27) tightened geo3's and memopts' bounds and loosened quad4's and mix4's: the
# CPU it charges is what the runs spend (docs/design/runtime-model.md), but it moved plans the
# model already had slow further that way. Rings that load a link both ways at the rate of their
# whole call (fifth session) tightened geo3's and tri3's; the attention core's measured share of
# a block (sixth session: selective recomputation) memopts'; pent5's network file with the 60 KiB
# eager probe (seventh session: its 50 KiB activations pass its links whole) pent5's. span3's
# bounds are its figures as measured (5.3 / 16.3 % time, 2.3 / 7.0 % memory), a little above.
# Speed spells (thirteenth session: a sync waits for the slowest replica of a draw) loosened
# geo3's, memopts', quad4's and pent5's: over 46 bring-ups of the six testbeds (bench/RESULTS.md)
# the mean |error| of a bring-up fell on every testbed (5.76 -> 5.30 %), but these
# seven moved both ways (memopts' m02, four cpu-fast ranks with ZeRO-1, +5.4 -> +10.1 %).
# The island sets (testbed-isl3-gpt2tiny-islands, testbed-tri3-gpt2tiny-islands: synchronous and
# island plans over the same devices, one bring-up each, 2026-11-29) are bounded the same way and
# by kind: their island plans' time, a little above today's figures (isl3 8.7 % mean, within its
# synchronous plans' 14.0 %; tri3 18.1 %, against its synchronous plans' 4.6 %: the set's runs
# are of the runtime whose exchange gathered with MPI_Iallgatherv, which moved a pair's two
# directions one after the other, data/validation/README.md), and their memory, 2.2 and 3.1 %.
set -u
cd "$(dirname "$0")/../.."
source tests/lib/common.sh
need_tool jq
validate() { # set model runs time_mean time_max memory_mean memory_max
	local set=$1 model=$2
	shift
	"$SAILOR" validate --model "$model" "$set" --profiles "$set/env/profiles" --gpus "$set/env/gpus.json" \
		--network "$set/env/network.json" --cluster "$set/env/cluster.json" --json >"$out" || { failures=$((failures + 1)); return; }
	check "$set: $2 runs predicted" "jq -e '(.runs | length) == $2' \"\$out\" >/dev/null"
	check "$set: iteration time: mean |error| at most $3, none above $4" \
		"jq -e '.summary.time.mean_abs <= $3 and .summary.time.max_abs <= $4' \"\$out\" >/dev/null"
	check "$set: peak memory: mean |error| at most $5, none above $6" \
		"jq -e '.summary.memory.mean_abs <= $5 and .summary.memory.max_abs <= $6' \"\$out\" >/dev/null"
}
validate_kind() { # set kind time_mean time_max memory_mean: of the last validate's runs of one kind
	check "$1: $2 plans' iteration time: mean |error| at most $3, none above $4" \
		"jq -e '.summary.$2.time.mean_abs <= $3 and .summary.$2.time.max_abs <= $4' \"\$out\" >/dev/null"
	check "$1: $2 plans' peak memory: mean |error| at most $5" \
		"jq -e '.summary.$2.memory.mean_abs <= $5' \"\$out\" >/dev/null"
}
out=$work/validation.json
validate data/validation/testbed-geo3-gpt2tiny gpt2-tiny 14 0.035 0.095 0.025 0.04
validate data/validation/testbed-geo3-gpt2tiny-memopts gpt2-tiny 7 0.055 0.11 0.035 0.06
validate data/validation/testbed-quad4-gpt2tiny-wide gpt2-tiny-wide 13 0.05 0.13 0.02 0.05
validate data/validation/testbed-tri3-gpt2tiny-deep gpt2-tiny-deep 12 0.06 0.14 0.02 0.035
validate data/validation/testbed-pent5-gpt2tiny-mid gpt2-tiny-mid 12 0.055 0.23 0.02 0.035
validate data/validation/testbed-mix4-gpt2tiny-five gpt2-tiny-five 12 0.10 0.21 0.025 0.065
validate data/validation/testbed-span3-gpt2tiny-six gpt2-tiny-six 12 0.06 0.17 0.03 0.075
validate data/validation/testbed-isl3-gpt2tiny-islands gpt2-tiny 13 0.12 0.47 0.025 0.04
validate_kind data/validation/testbed-isl3-gpt2tiny-islands islands 0.10 0.19 0.025
validate_kind data/validation/testbed-isl3-gpt2tiny-islands synchronous 0.15 0.47 0.025
validate data/validation/testbed-tri3-gpt2tiny-islands gpt2-tiny 13 0.15 0.35 0.03 0.04
validate_kind data/validation/testbed-tri3-gpt2tiny-islands islands 0.20 0.35 0.035
validate_kind data/validation/testbed-tri3-gpt2tiny-islands synchronous 0.05 0.09 0.02
set=data/validation/testbed-geo3-gpt2tiny
"$SAILOR" simulate --plan "$set/v05-p2-fast-slow-region.json" --profiles "$set/env/profiles" --gpus "$set/env/gpus.json" \
	--network "$set/env/network.json" --cluster "$set/env/cluster.json" --json >"$out" 2>&1
check "a plan of profiled devices is modelled as sailor run" 'jq -e ".runtime == \"sailor run\"" "$out" >/dev/null'
# a profile whose idle-wait probe is not a pair of small non-negative seconds is refused, by name
bad=$work/bad
mkdir -p "$bad"
cp -r "$set/env/profiles/." "$bad/"
jq '.source.idle_wait.cpu_per_test_s = -1' "$set/env/profiles/gpt2-tiny/cpu-fast.json" >"$bad/gpt2-tiny/cpu-fast.json"
"$SAILOR" simulate --plan "$set/v01-p1-d1-fast.json" --profiles "$bad" --gpus "$set/env/gpus.json" \
	--network "$set/env/network.json" --cluster "$set/env/cluster.json" >"$out" 2>&1
rc=$?
check "a bad source.idle_wait is refused with its name" '[ "$rc" -ne 0 ] && grep -q "source.idle_wait: expected" "$out"'
# a network file whose burst probe is not a number of bytes is refused, by name
jq '.source.pairs[0].burst_bytes = "lots"' "$set/env/network.json" >"$work/net.json"
"$SAILOR" simulate --plan "$set/v01-p1-d1-fast.json" --profiles "$set/env/profiles" --gpus "$set/env/gpus.json" \
	--network "$work/net.json" --cluster "$set/env/cluster.json" >"$out" 2>&1
rc=$?
check "a bad source.pairs[].burst_bytes is refused with its name" '[ "$rc" -ne 0 ] && grep -q "source.pairs\[0\].burst_bytes: expected" "$out"'
# and one whose eager probe is negative
jq '.source.pairs[0].whole_message_bytes = -5' "$set/env/network.json" >"$work/net.json"
"$SAILOR" simulate --plan "$set/v01-p1-d1-fast.json" --profiles "$set/env/profiles" --gpus "$set/env/gpus.json" \
	--network "$work/net.json" --cluster "$set/env/cluster.json" >"$out" 2>&1
rc=$?
check "a bad source.pairs[].whole_message_bytes is refused with its name" '[ "$rc" -ne 0 ] && grep -q "source.pairs\[0\].whole_message_bytes: expected" "$out"'
# and one whose measured sizes are not sizes (they bound where the all-reduce fit is read)
jq '.source.pairs[0].bytes = [16384, "big"]' "$set/env/network.json" >"$work/net.json"
"$SAILOR" simulate --plan "$set/v01-p1-d1-fast.json" --profiles "$set/env/profiles" --gpus "$set/env/gpus.json" \
	--network "$work/net.json" --cluster "$set/env/cluster.json" >"$out" 2>&1
rc=$?
check "bad source.pairs[].bytes are refused with their name" '[ "$rc" -ne 0 ] && grep -q "source.pairs\[0\].bytes: expected" "$out"'
finish
