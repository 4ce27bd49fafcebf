#!/usr/bin/env bash
# bench/testbed/add_profile_probe.py, which carries a probe a later profile measured into an
# older profile of the same device class (how the validation sets' profiles got the attention
# core): each probe as its ratio to the phase both measured, times
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
# strip_core IN OUT [ENTRY]: IN without recompute_attention (in ENTRY only, when given)
strip_core() {
	"$PY" - "$@" <<'EOF'
import sys
out, entry = [], None
for line in open(sys.argv[1]).read().split("\n"):
    stripped = line.strip()
    if stripped.startswith('"mbs ') and stripped.endswith(": {"):
        entry = stripped[1:-4]
    if '"recompute_attention"' in line and "median_s" not in line and \
            (len(sys.argv) < 4 or entry == sys.argv[3]):
        continue
    if stripped.startswith("}") and out and out[-1].endswith(","):
        out[-1] = out[-1][:-1]
    out.append(line)
open(sys.argv[2], "w").write("\n".join(out))
EOF
}
# the older file: the same profile as the profiler wrote it before it timed the attention core,
# its median_s without recompute_attention (the lines, so the layout is the profiler's)
strip_core "$new" "$work/old.json"
cp "$work/old.json" "$work/before.json"
# a newer file whose attention core is 0.3 of its block's forward, at another speed (x2)
jq '.source.entries |= map_values(.median_s |= (.forward_block *= 2 |
    .recompute_attention = 0.3 * .forward_block))' \
	"$new" >"$work/newer.json"
"$PY" bench/testbed/add_profile_probe.py "$work/old.json" "$work/newer.json" 2>"$work/err"; rc=$?
check "carried: exit 0" '[ $rc -eq 0 ]' || cat "$work/err"
check "each entry's core is the newer file's share times the older file's block forward" \
	'jq -e "[.source.entries[].median_s | ((.recompute_attention / .forward_block - 0.3) | fabs) < 1e-12] | length == 2 and all" "$work/old.json" >/dev/null'
check "everything else as it was" \
	'[ "$(jq -S "del(.source.added) | .source.entries |= map_values(.median_s |= del(.recompute_attention))" "$work/old.json")" = "$(jq -S . "$work/before.json")" ]'
check "source.added says what and from where, once" \
	'[ "$(grep -c "\"added\"" "$work/old.json")" -eq 1 ] && jq -e ".source.added | length == 1 and (.[0].what | test(\"recompute_attention\")) and .[0].from == \"$work/newer.json\"" "$work/old.json" >/dev/null'
check "the simulator reads the result" \
	'mkdir -p "$work/p/gpt2-tiny" && cp "$work/old.json" "$work/p/gpt2-tiny/cpu-fast.json" && "$SAILOR" simulate --model gpt2-tiny --gpus $gpus --profiles "$work/p" --plan <(echo "{\"schema\": \"sailor.plan/1\", \"global_batch\": 4, \"micro_batch\": 1, \"stages\": [{\"layers\": [0, 5], \"replicas\": [{\"gpu\": \"cpu-fast\", \"zone\": \"us-central1-a\"}], \"recompute\": \"selective\"}]}") >/dev/null'
cp "$work/old.json" "$work/once.json"
"$PY" bench/testbed/add_profile_probe.py "$work/old.json" "$work/newer.json" 2>"$work/err"; rc=$?
check "a second time: nothing to add, the file unchanged" '[ $rc -eq 0 ] && grep -q "nothing to add" "$work/err" && cmp -s "$work/old.json" "$work/once.json"'
# a file that already lists what an earlier carry added gets one list with both
strip_core "$work/once.json" "$work/again.json" "mbs 2 tp 1"
"$PY" bench/testbed/add_profile_probe.py "$work/again.json" "$work/newer.json" 2>"$work/err"; rc=$?
check "a second carry into a file with source.added: one list, both carries in it" \
	'[ $rc -eq 0 ] && [ "$(grep -c "\"added\"" "$work/again.json")" -eq 1 ] && jq -e ".source.added | length == 2 and .[1].entries == [\"mbs 2 tp 1\"]" "$work/again.json" >/dev/null' || cat "$work/err"
jq '.source.model = "gpt2-tiny-wide"' "$work/newer.json" >"$work/other.json"
cp "$work/before.json" "$work/old2.json"
"$PY" bench/testbed/add_profile_probe.py "$work/old2.json" "$work/other.json" 2>"$work/err"; rc=$?
check "another model: refused by name, the older file untouched" '[ $rc -eq 1 ] && grep -q "model differs" "$work/err" && cmp -s "$work/old2.json" "$work/before.json"'
finish
