#!/usr/bin/env bash
# bench/testbed/error_split.py, the split of the model's error over bring-ups into what stays
# with a plan (bias) and what moves between bring-ups (noise): on copies of the geo3 set whose
# measured times are changed by known factors, it finds the noise and bias those factors make,
# matches plans by what they are (not by file name; an islands section is part of it, and the
# split is made per kind), reads a loop run's layout, and names what
# is wrong with bad input.
set -u
cd "$(dirname "$0")/../.."
source tests/lib/common.sh
[ -x "$PY" ] || skip "python3 is missing"
need_tool jq
set=data/validation/testbed-geo3-gpt2tiny
split=("$PY" bench/testbed/error_split.py --sailor "$SAILOR")
split() { "${split[@]}" "$@"; }
# copy SRC DST FACTOR: a bring-up with every measured time divided by FACTOR, files renamed
copy() {
	mkdir -p "$2"
	cp -r "$1/env" "$2/env"
	local f
	for f in "$1"/v*.json; do
		jq --argjson k "$3" '.measured.iteration_s /= $k' "$f" >"$2/renamed-$(basename "$f")"
	done
}
copy "$set" "$work/a" 1
copy "$set" "$work/b" 1
copy "$set" "$work/c" 1.1
"$SAILOR" validate --model gpt2-tiny "$set" --profiles "$set/env/profiles" --gpus "$set/env/gpus.json" \
	--network "$set/env/network.json" --cluster "$set/env/cluster.json" --json >"$work/v.json" ||
	die "sailor validate failed"

split --json "$set" "$work/a" "$work/b" >"$work/same.json" || die "error_split.py failed on equal bring-ups"
check "equal bring-ups: every plan matched across renamed files" \
	'[ "$(jq .plans_repeated "$work/same.json")" -eq 14 ] && [ "$(jq .degrees_of_freedom "$work/same.json")" -eq 28 ]'
check "equal bring-ups: no noise, no floor" \
	'jq -e ".noise_sigma == 0 and .floor_mean_abs == 0 and .floor_max_abs == 0" "$work/same.json" >/dev/null'
# with no noise, the bias is the set's own errors: their root mean square
want=$(jq '[.runs[].time_error | . * .] | add / length | sqrt' "$work/v.json")
check "equal bring-ups: the bias is the errors' rms ($want)" \
	"jq -e '(.bias_rms - $want) | fabs < 1e-9' \"\$work/same.json\" >/dev/null"

# runs 10 % faster in one of two bring-ups: each plan's errors are e and 1.1 (1 + e) - 1, whose
# sample sd is 0.1 (1 + e) / sqrt(2)
split --json "$set" "$work/c" >"$work/moved.json" || die "error_split.py failed on moved bring-ups"
want=$(jq '[.runs[].time_error | (0.1 * (1 + .)) as $d | $d * $d / 2] | add / length | sqrt' "$work/v.json")
check "a bring-up 10 % faster: the pooled noise is what that makes ($want)" \
	"jq -e '(.noise_sigma - $want) | fabs < 1e-9' \"\$work/moved.json\" >/dev/null"
# that shift is the same bring-up's on every plan: the offsets are 10 % of (1 + e) on average
# apart, centred on 0; what is left to each plan is the shift's spread over the plans
want=$(jq '[.runs[].time_error | 0.1 * (1 + .)] | add / length' "$work/v.json")
check "a bring-up 10 % faster: its offset against the other's is that shift ($want)" \
	"jq -e '(.bringup_offsets[1] - .bringup_offsets[0] - $want | fabs) < 1e-6 and (.bringup_offsets | add | fabs) < 1e-9' \"\$work/moved.json\" >/dev/null"
check "equal bring-ups: no offsets, no residual" \
	'jq -e "(.bringup_offsets | map(fabs) | max) < 1e-12 and .residual_sigma < 1e-12" "$work/same.json" >/dev/null'
check "and the floor is that noise's mean |N(0, sigma)|" \
	'jq -e "(.floor_mean_abs - .noise_sigma * (2 / 3.141592653589793 | sqrt)) | fabs < 1e-12" "$work/moved.json" >/dev/null'
check "the largest of 14 draws lies above the mean and within 4 sigma" \
	'jq -e ".floor_max_abs > .floor_mean_abs and .floor_max_abs < 4 * .noise_sigma" "$work/moved.json" >/dev/null'
split "$set" "$work/c" >"$work/moved.md" || die "error_split.py failed (Markdown)"
check "the Markdown table has a row per plan and the summary" \
	'[ "$(grep -c "^| mbs" "$work/moved.md")" -eq 14 ] && grep -q "^noise between bring-ups" "$work/moved.md"'

# a loop run's layout: plans/, runs/NAME.rK.out, profiles/, network.json, cluster.json
loop=$work/loop/run1
mkdir -p "$loop/plans" "$loop/runs"
cp -r "$set/env/profiles" "$loop/profiles"
cp "$set/env/network.json" "$set/env/cluster.json" "$loop/"
echo '{}' >"$loop/loop-result.json"
for name in v01-p1-d1-fast v05-p2-fast-slow-region; do
	jq 'del(.measured)' "$set/$name.json" >"$loop/plans/rank-$name.json"
	for round in 1 2; do
		jq -c '{event: "end", steps_run: 10, median_step_time_s: .measured.iteration_s,
		        stages: [{stage: 0, dp_sync_s: 0, peak_rss_bytes: .measured.peak_memory_bytes}]}' \
			"$set/$name.json" >"$loop/runs/rank-$name.r$round.out"
	done
done
split --json --gpus "$set/env/gpus.json" "$set" "$loop" >"$work/loop.json" || die "error_split.py failed on a loop run"
check "a loop run's two plans are found and match the set's (no noise)" \
	'jq -e ".plans_repeated == 2 and .noise_sigma == 0" "$work/loop.json" >/dev/null'

cp -r "$loop" "$work/unfinished"
echo '{"event":"step","step":1}' >"$work/unfinished/runs/rank-v01-p1-d1-fast.r2.out"
expect_error "a loop run whose run did not finish is named" 1 "rank-v01-p1-d1-fast's runs: $work/unfinished/runs/rank-v01-p1-d1-fast.r2.out: no end event" \
	-- "${split[@]}" --gpus "$set/env/gpus.json" "$set" "$work/unfinished"
expect_error "one bring-up is not enough" 2 "give two or more bring-up directories" -- "${split[@]}" "$set"
expect_error "a loop run without its device types" 1 "give its device types with --gpus" -- "${split[@]}" "$set" "$loop"
mkdir -p "$work/noenv" && cp "$set/v01-p1-d1-fast.json" "$work/noenv/"
expect_error "a directory without env/ is named" 1 "$work/noenv: no $work/noenv/env/profiles" -- "${split[@]}" "$set" "$work/noenv"
copy "$set" "$work/mixed" 1
jq '.model = "gpt2-tiny-wide"' "$set/v01-p1-d1-fast.json" >"$work/mixed/other-model.json"
expect_error "plans of two models in one bring-up" 1 "plans of several models" -- "${split[@]}" "$set" "$work/mixed"
mkdir -p "$work/once/env" && cp -r "$set/env/." "$work/once/env/"
jq '.global_batch = 32' "$set/v01-p1-d1-fast.json" >"$work/once/only.json"
expect_error "no plan measured twice" 1 "no plan was measured in two bring-ups" -- "${split[@]}" "$set" "$work/once"
# island plans: the islands section is part of what a plan is (another H is another plan), and
# the split is made for each kind too: island plans 10 % slower in one copy move their noise only
isl=data/validation/testbed-isl3-gpt2tiny-islands
mkdir -p "$work/isl-a" "$work/isl-b"
cp -r "$isl/env" "$work/isl-a/env" && cp -r "$isl/env" "$work/isl-b/env"
for f in "$isl"/*.json; do
	cp "$f" "$work/isl-a/"
	jq 'if (.islands.pipelines // [] | length) > 1 then .measured.iteration_s *= 1.1 else . end' \
		"$f" >"$work/isl-b/$(basename "$f")"
done
jq '.islands.inner_steps = 5' "$isl/i01-3isl-h4-fp32.json" >"$work/isl-b/i01-3isl-h4-fp32.json"
split --json "$work/isl-a" "$work/isl-b" >"$work/isl.json" || die "error_split.py failed on island sets"
check "an island plan with another H is another plan (12 of 13 matched)" \
	'[ "$(jq .plans_repeated "$work/isl.json")" -eq 12 ]'
check "split by kind: synchronous plans without noise, island plans with it" \
	'jq -e ".kinds.synchronous.noise_sigma == 0 and .kinds.islands.noise_sigma > 0.02" "$work/isl.json" >/dev/null'
finish
