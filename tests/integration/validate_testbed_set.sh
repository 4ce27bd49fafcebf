#!/usr/bin/env bash
# The model of our runtime against the shipped runs of our runtime on the testbed
# (data/validation/testbed-geo3-gpt2tiny): every run is predicted (the runtime model, not
# DeepSpeed's), and the errors stay within a regression bound. The bound is looser than the
# targets in the README (time: mean 5%, no run above 12%), which these runs do not meet yet; it
# catches a model change that makes things worse.
set -u
cd "$(dirname "$0")/../.."
: "${SAILOR:?set SAILOR to the sailor binary}"
command -v jq >/dev/null || { echo "jq is missing (scripts/install-deps.sh installs it)"; exit 77; }
set=data/validation/testbed-geo3-gpt2tiny
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$SAILOR" validate --model gpt2-tiny "$set" --profiles "$set/env/profiles" --gpus "$set/env/gpus.json" \
	--network "$set/env/network.json" --cluster "$set/env/cluster.json" --json >"$out" || exit 1
fails=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fails=$((fails + 1)); fi; }
check "14 runs predicted" 'jq -e "(.runs | length) == 14" "$out" >/dev/null'
check "iteration time: mean |error| at most 15%, none above 35%" 'jq -e ".summary.time.mean_abs <= 0.15 and .summary.time.max_abs <= 0.35" "$out" >/dev/null'
check "peak memory: mean |error| at most 5%, none above 8%" 'jq -e ".summary.memory.mean_abs <= 0.05 and .summary.memory.max_abs <= 0.08" "$out" >/dev/null'
"$SAILOR" simulate --plan "$set/v05-p2-fast-slow-region.json" --profiles "$set/env/profiles" --gpus "$set/env/gpus.json" \
	--network "$set/env/network.json" --cluster "$set/env/cluster.json" --json >"$out" 2>&1
check "a plan of profiled devices is modelled as sailor run" 'jq -e ".runtime == \"sailor run\"" "$out" >/dev/null'
[ "$fails" -eq 0 ]
