#!/usr/bin/env bash
# Runs fuzz campaigns, one target after the other, each for SECONDS: `make fuzz` calls it after
# building the targets (build-fuzz/fuzz/<target>, clang's libFuzzer + ASan + UBSan).
# Usage: scripts/fuzz.sh SECONDS TARGET...
#
# Each target starts from its seeds: shipped data files (copied into build-fuzz/seeds/<target>
# by seed() below), the generated seeds in fuzz/seeds/<target>/ and the regression corpus
# fuzz/corpus-regression/<target>/. What it learns goes to build-fuzz/corpus/<target>/ (kept
# between runs), what fails to build-fuzz/findings/<target>/ (crash-*, timeout-*, oom-*,
# leak-*: add each, once fixed, to fuzz/corpus-regression/<target>/). One process at a time,
# niced: the campaign shares the machine. A time-out is 20 s of wall time per input (every
# input of the regression corpus runs in well under 1 s; at nice 19 on a loaded 2-core machine
# 5 s gave a spurious time-out) and memory is capped at 2 GiB (RSS, or one allocation): nothing
# sailor reads may cost more than that.
# Appends one line per target to $FUZZ_FIGURES (default build-fuzz/fuzz-figures.txt):
#   <target> seconds=S execs=N exec_per_s=R corpus=C findings=F
set -u
cd "$(dirname "$0")/.."
secs=${1:?usage: scripts/fuzz.sh SECONDS TARGET...}
shift
build=${FUZZ_BUILD:-build-fuzz}
figures=${FUZZ_FIGURES:-$build/fuzz-figures.txt}

# seed TARGET DIR: copies the shipped data files that TARGET parses into DIR.
seed() {
	local t=$1 dir=$2 f i
	case $t in
	fuzz_plan) cp data/examples/plan-*.json "$dir"/; cp data/validation/mit-rtx-opt350/plan_config_N2_D1.json "$dir"/mit-N2_D1.json ;;
	fuzz_validate)
		for f in data/validation/*/*.json; do cp "$f" "$dir/$(basename "$(dirname "$f")")-$(basename "$f")"; done ;;
	fuzz_pool) cp data/examples/pool-*.json data/traces/*.csv "$dir"/ ;;
	fuzz_catalogue) cp data/gpus.json "$dir"/ ;;
	fuzz_gpus) cp data/testbed/gpus-*.json "$dir"/ ;;
	fuzz_pool_watch)
		# a trace alone, a pool file alone, and a pool file then its replacement (form feed)
		cp data/examples/pool-*.json data/traces/*.csv "$dir"/
		for f in data/examples/pool-*.json; do
			{ cat "$f"; printf '\f'; sed 's/"count": [0-9]*/"count": 3/' "$f"; } >"$dir/replaced-$(basename "$f")"
			{ cat "$f"; printf '\f{"schema": "sailor.pool/1", "gpus": ['; } >"$dir/broken-$(basename "$f")"
		done ;;
	fuzz_network)
		i=0
		for f in zone_bandwidths intra_node_bandwidths egress_usd_per_gb; do
			{ printf "\\$(printf '%03o' $i)"; cat "data/network/$f.json"; } >"$dir/$f"
			i=$((i + 1))
		done ;;
	fuzz_profile)
		for f in data/profiles/OPT-350/*.json; do
			{ printf '\001'; cat "$f"; } >"$dir/$(basename "$f")"
		done ;;
	fuzz_model)
		for f in data/models/*.json; do
			case $f in *layer_sizes*) ;; *) cp "$f" "$dir"/ ;; esac
		done ;;
	esac
}

for t in "$@"; do
	bin=$build/fuzz/$t
	[ -x "$bin" ] || { echo "fuzz: $bin is missing: run 'make fuzz-build'" >&2; exit 1; }
	mkdir -p "$build/seeds/$t" "$build/corpus/$t" "$build/findings/$t" "$build/logs"
	seed "$t" "$build/seeds/$t"
	dirs=("$build/corpus/$t" "$build/seeds/$t")
	for d in "fuzz/seeds/$t" "fuzz/corpus-regression/$t"; do [ -d "$d" ] && dirs+=("$d"); done
	log=$build/logs/$t.log
	before=$(ls "$build/findings/$t" | wc -l)
	echo "fuzz: $t for $secs s (log $log)" >&2
	nice -n 19 "$bin" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 \
		-malloc_limit_mb=2048 -close_fd_mask=3 -print_final_stats=1 \
		-artifact_prefix="$build/findings/$t/" "${dirs[@]}" >"$log" 2>&1
	execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$log")
	took=$(awk '/stat::average_exec_per_sec/ {print $2}' "$log")
	found=$(( $(ls "$build/findings/$t" | wc -l) - before ))
	line="$t seconds=$secs execs=${execs:-?} exec_per_s=${took:-?} corpus=$(ls "$build/corpus/$t" | wc -l) findings=$found"
	echo "$line" | tee -a "$figures"
	[ "$found" -eq 0 ] || grep -m 3 -E "ERROR|runtime error|invariant|SUMMARY" "$log" | sed 's/^/    /'
done
