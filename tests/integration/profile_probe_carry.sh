#!/usr/bin/env bash
# bench/testbed/add_profile_probe.py, which carries a probe a later profile measured into an
# older profile of the same device class (how the validation sets' profiles got the attention
# core and the one-copy block times): each probe as its ratio to the phase both measured, times
# the older file's own figure; everything the older file had kept digit for digit; what was added
# listed once in source.added; a profile of another model refused with the older file untouched.
set -u
cd "$(dirname "$0")/../.."
source tests/lib/common.sh
need_tool jq
[ -x "$PY" ] || skip "python3 is missing"
gpus=data/testbed/gpus-cpu.json
quick=(--gpus $gpus --mbs 1,2 --seq-len 8 --repeats 1 --warmup 0 --min-sample-ms 0 -q)
timeout 60 "$SAILOR" profile --model gpt2-tiny --gpu cpu-fast "${quick[@]}" -o "$work/new" 2>"$work/err" || cat "$work/err"
new=$work/new/gpt2-tiny/cpu-fast.json
# the older file: the same profile as the profiler wrote it before it timed one copy, its
# median_s without the two one-copy phases (the lines, so the layout is the profiler's)
"$PY" - "$new" "$work/old.json" <<'EOF'
import sys
out = []
for line in open(sys.argv[1]).read().split("\n"):
    if "_one_copy" in line:
        continue
    if line.strip().startswith("}") and out and out[-1].endswith(","):
        out[-1] = out[-1][:-1]
    out.append(line)
open(sys.argv[2], "w").write("\n".join(out))
EOF
cp "$work/old.json" "$work/before.json"
# a newer file whose one-copy times are 0.8 and 0.9 of its block times, at another speed (x2)
jq '.source.entries |= map_values(.median_s |= (.forward_block *= 2 | .backward_block *= 2 |
    .forward_block_one_copy = 0.8 * .forward_block | .backward_block_one_copy = 0.9 * .backward_block))' \
	"$new" >"$work/newer.json"
"$PY" bench/testbed/add_profile_probe.py "$work/old.json" "$work/newer.json" 2>"$work/err"; rc=$?
check "carried: exit 0" '[ $rc -eq 0 ]' || cat "$work/err"
check "each entry's one-copy times are the newer file's ratios times the older file's block times" \
	'jq -e "[.source.entries[].median_s | ((.forward_block_one_copy / .forward_block - 0.8) | fabs) < 1e-12 and ((.backward_block_one_copy / .backward_block - 0.9) | fabs) < 1e-12] | length == 2 and all" "$work/old.json" >/dev/null'
check "everything else as it was" \
	'[ "$(jq -S "del(.source.added) | .source.entries |= map_values(.median_s |= del(.forward_block_one_copy, .backward_block_one_copy))" "$work/old.json")" = "$(jq -S . "$work/before.json")" ]'
check "source.added says what and from where, once" \
	'[ "$(grep -c "\"added\"" "$work/old.json")" -eq 1 ] && jq -e ".source.added | length == 1 and (.[0].what | test(\"forward_block_one_copy\")) and .[0].from == \"$work/newer.json\"" "$work/old.json" >/dev/null'
check "the simulator reads the result" \
	'mkdir -p "$work/p/gpt2-tiny" && cp "$work/old.json" "$work/p/gpt2-tiny/cpu-fast.json" && "$SAILOR" simulate --model gpt2-tiny --gpus $gpus --profiles "$work/p" --plan <(echo "{\"schema\": \"sailor.plan/1\", \"global_batch\": 4, \"micro_batch\": 1, \"stages\": [{\"layers\": [0, 1], \"replicas\": [{\"gpu\": \"cpu-fast\", \"zone\": \"us-central1-a\"}]}, {\"layers\": [2, 5], \"replicas\": [{\"gpu\": \"cpu-fast\", \"zone\": \"us-central1-a\"}]}]}") >/dev/null'
cp "$work/old.json" "$work/once.json"
"$PY" bench/testbed/add_profile_probe.py "$work/old.json" "$work/newer.json" 2>"$work/err"; rc=$?
check "a second time: nothing to add, the file unchanged" '[ $rc -eq 0 ] && grep -q "nothing to add" "$work/err" && cmp -s "$work/old.json" "$work/once.json"'
jq '.source.model = "gpt2-tiny-wide"' "$work/newer.json" >"$work/other.json"
cp "$work/before.json" "$work/old2.json"
"$PY" bench/testbed/add_profile_probe.py "$work/old2.json" "$work/other.json" 2>"$work/err"; rc=$?
check "another model: refused by name, the older file untouched" '[ $rc -eq 1 ] && grep -q "model differs" "$work/err" && cmp -s "$work/old2.json" "$work/before.json"'
finish
