#!/usr/bin/env bash
# `sailor profile --model M --gpu NAME`: writes DIR/<M>/<NAME>.json with an entry per (mbs, tp),
# every layer, provenance; the device type must be in the catalogue (--gpus adds the testbed's);
# bad --tp / --mbs are usage errors. Then the simulator reads such a profile: OPT-350 (a model
# whose layer sizes the simulator knows) at a short sequence, simulated on cpu-fast.
set -u
cd "$(dirname "$0")/../.."
source tests/lib/common.sh
need_tool jq
gpus=data/testbed/gpus-cpu.json
timeout 60 "$SAILOR" profile --model gpt2-tiny --gpu cpu-slow --gpus $gpus --tp 1,2 --mbs 1,2 --repeats 3 --min-sample-ms 20 -q -o "$work/p" 2>"$work/err"
check "profile written" '[ -s "$work/p/gpt2-tiny/cpu-slow.json" ]' || cat "$work/err"
f=$work/p/gpt2-tiny/cpu-slow.json
check "entries mbs 1,2 x tp 1,2 with 6 layers" 'jq -e "[.\"1\".\"1\", .\"1\".\"2\", .\"2\".\"1\", .\"2\".\"2\"] | all(keys | length == 6)" "$f" >/dev/null'
check "times positive" 'jq -e "[.\"1\",.\"2\"] | map(.[] | .[] | .[]) | all(. > 0)" "$f" >/dev/null'
check "provenance" 'jq -e ".schema == \"sailor.profile/1\" and .source.repeats == 3 and (.source.openblas_core | length > 0) and (.source.entries[\"mbs 2 tp 2\"].memory.block.params_bytes > 0)" "$f" >/dev/null'
check "the attention core timed alone in every entry, positive and less than the block's forward" 'jq -e "[.source.entries[].median_s | .recompute_attention > 0 and .recompute_attention < .forward_block] | length == 4 and all" "$f" >/dev/null'
# a profile whose attention core takes longer than the block around it is refused by name
jq '.source.entries["mbs 1 tp 1"].median_s.recompute_attention = 2 * .source.entries["mbs 1 tp 1"].median_s.forward_block' "$f" >"$work/bad-att.json"
mkdir -p "$work/bad/gpt2-tiny" && cp "$work/bad-att.json" "$work/bad/gpt2-tiny/cpu-slow.json"
echo '{"schema": "sailor.plan/1", "global_batch": 4, "micro_batch": 1, "stages": [{"layers": [0, 5], "replicas": [{"gpu": "cpu-slow", "zone": "us-central1-a"}], "recompute": "selective"}]}' >"$work/sel.json"
"$SAILOR" simulate --model gpt2-tiny --gpus $gpus --profiles "$work/bad" --plan "$work/sel.json" >/dev/null 2>"$work/err"; rc=$?
check "attention core longer than the block: input error naming the entry" '[ $rc -ne 0 ] && grep -q "mbs 1 tp 1.median_s: expected recompute_attention" "$work/err"' || cat "$work/err"
"$SAILOR" profile --model gpt2-tiny --gpu cpu-fast -o "$work/p" 2>"$work/err"; rc=$?
check "unknown device type: usage error naming --gpus" '[ $rc -eq 2 ] && grep -q "add it with --gpus FILE" "$work/err"'
"$SAILOR" profile --model gpt2-tiny --gpu cpu-fast --gpus $gpus --tp 3 -o "$work/p" 2>"$work/err"; rc=$?
check "tp 3 of 4 heads: usage error" '[ $rc -eq 2 ] && grep -q "a TP degree must divide both" "$work/err"'
"$SAILOR" profile --model gpt2-tiny --gpu cpu-fast --gpus $gpus --mbs 1,,2 -o "$work/p" 2>"$work/err"; rc=$?
check "bad --mbs: usage error" '[ $rc -eq 2 ]'
# the simulator reads it: OPT-350, 8 tokens per sequence, one micro-batch size
timeout 60 "$SAILOR" profile --model OPT-350 --gpu cpu-fast --gpus $gpus --mbs 1 --seq-len 8 --repeats 1 --warmup 0 --min-sample-ms 0 -q -o "$work/p" 2>"$work/err" || cat "$work/err"
cat >"$work/plan.json" <<'JSON'
{"schema": "sailor.plan/1", "model": "OPT-350", "global_batch": 4, "micro_batch": 1,
 "stages": [{"layers": [0, 12], "replicas": [{"gpu": "cpu-fast", "zone": "us-central1-a", "tp": 1, "count": 1}]},
            {"layers": [13, 25], "replicas": [{"gpu": "cpu-fast", "zone": "us-central1-a", "tp": 1, "count": 1}]}]}
JSON
"$SAILOR" simulate --gpus $gpus --profiles "$work/p" --plan "$work/plan.json" --json >"$work/sim.json" 2>"$work/err"
check "simulate --profiles reads it" 'jq -e ".schema" "$work/sim.json" >/dev/null' || cat "$work/err"
"$SAILOR" simulate --profiles "$work/p" --plan "$work/plan.json" >/dev/null 2>"$work/err"; rc=$?
check "without --gpus cpu-fast is unknown" '[ $rc -ne 0 ] && grep -q "cpu-fast" "$work/err"'
# a second run adds its entries and keeps the others (TP degrees measured one run at a time)
timeout 60 "$SAILOR" profile --model gpt2-tiny --gpu cpu-slow --gpus $gpus --tp 1 --mbs 4 --repeats 1 --min-sample-ms 0 -q -o "$work/p" 2>"$work/err"
check "a second run merges: mbs 4 added, mbs 1-2 kept with their provenance" 'jq -e "(.\"4\".\"1\" | keys | length == 6) and (.\"2\".\"2\" | keys | length == 6) and (.source.entries | has(\"mbs 2 tp 2\") and has(\"mbs 4 tp 1\"))" "$f" >/dev/null'
echo '{"not": "a profile"}' >"$work/p/gpt2-tiny/cpu-fast.json"
"$SAILOR" profile --model gpt2-tiny --gpu cpu-fast --gpus $gpus --mbs 1 --repeats 1 --min-sample-ms 0 -q -o "$work/p" 2>"$work/err"; rc=$?
check "a file there that is not a profile is refused and kept" '[ $rc -eq 1 ] && grep -q "is not a sailor.profile/1 file" "$work/err" && grep -q "not" "$work/p/gpt2-tiny/cpu-fast.json"'
# an entry's runtime memory is the process less its tensors, whatever entries came before it:
# what malloc kept of theirs is given back first (it was 7.5 MB of mbs 4's 11 MB after mbs 1, 2)
timeout 60 "$SAILOR" profile --model gpt2-tiny --gpu cpu-fast --gpus $gpus --mbs 1,2,4 --repeats 1 --min-sample-ms 0 -q -o "$work/after" 2>"$work/err" &&
	timeout 60 "$SAILOR" profile --model gpt2-tiny --gpu cpu-fast --gpus $gpus --mbs 4 --repeats 1 --min-sample-ms 0 -q -o "$work/alone" 2>"$work/err"
rss_check="mbs 4's runtime_rss_bytes after mbs 1 and 2 is within 2 MB of mbs 4's alone"
if sanitized; then
	echo "skip $rss_check: $SAILOR is built with AddressSanitizer, whose allocator keeps freed memory (make test checks it)"
else
	check "$rss_check" \
		'jq -n --slurpfile a "$work/after/gpt2-tiny/cpu-fast.json" --slurpfile b "$work/alone/gpt2-tiny/cpu-fast.json" -e "(\$a[0].source.entries[\"mbs 4 tp 1\"].memory.runtime_rss_bytes - \$b[0].source.entries[\"mbs 4 tp 1\"].memory.runtime_rss_bytes) | (. < 2e6 and . > -2e6)" >/dev/null' || cat "$work/err"
fi
# -o may name folders that do not exist yet (bench/testbed/validation.sh's speed probes do);
# one that a file stands in the way of is an error naming it
timeout 60 "$SAILOR" profile --model gpt2-tiny --gpu cpu-fast --gpus $gpus --mbs 1 --repeats 1 --min-sample-ms 0 -q -o "$work/new/deeper" 2>"$work/err"; rc=$?
check "-o creates the missing folders above it" '[ $rc -eq 0 ] && [ -s "$work/new/deeper/gpt2-tiny/cpu-fast.json" ]' || cat "$work/err"
touch "$work/plain"
"$SAILOR" profile --model gpt2-tiny --gpu cpu-fast --gpus $gpus --mbs 1 --repeats 1 --min-sample-ms 0 -q -o "$work/plain/p" 2>"$work/err"; rc=$?
check "-o under a file: error naming the folder" '[ $rc -eq 1 ] && grep -q "cannot create folder .*plain/p.*Not a directory" "$work/err"'
cat >"$work/cluster.json" <<'JSON'
{"schema": "sailor.cluster/1", "hosts": [{"name": "h0", "address": "localhost", "gpu": "cpu-fast", "zone": "us-central1-a", "slots": 1}]}
JSON
"$SAILOR" profile --model gpt2-tiny --gpu cpu-fast --gpus $gpus --tp 2 --cluster "$work/cluster.json" --host h0 -o "$work/p" 2>"$work/err"; rc=$?
check "TP larger than the host: one message, nothing written" '[ $rc -eq 1 ] && grep -q "host .h0. has 1 slots" "$work/err" && [ ! -e "$work/p/gpt2-tiny/cpu-fast.json.tmp" ]'
"$SAILOR" profile --model gpt2-tiny --gpu cpu-fast --gpus $gpus --cluster "$work/cluster.json" --host h9 -o "$work/p" 2>"$work/err"; rc=$?
check "a host the cluster does not have: named" '[ $rc -eq 1 ] && grep -q "no such host" "$work/err"'
"$SAILOR" profile --model gpt2-tiny --gpu cpu-fast --gpus $gpus --host h0 -o "$work/p" 2>"$work/err"; rc=$?
check "--host without --cluster: usage error" '[ $rc -eq 2 ] && grep -q "need both" "$work/err"'
# TP ranks as MPI ranks (what --host does on a cluster's host), here as a local MPI job
if command -v mpirun >/dev/null; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
	for attempt in 1 2; do  # OpenMPI's start-up flakes now and then on this VM
		timeout 120 mpirun -np 2 --bind-to none "$SAILOR" profile --model gpt2-tiny --gpu cpu-fast --gpus $gpus --tp 2 --mbs 1 --repeats 2 --min-sample-ms 0 -q -o "$work/m" >"$work/mpi.log" 2>&1 && break
	done
	m=$work/m/gpt2-tiny/cpu-fast.json
	check "MPI TP ranks: an entry for tp 2 measured over MPI, with the rank's baseline memory" 'jq -e "(.\"1\".\"2\" | keys | length == 6) and (.source.tp_ranks_as | test(\"MPI\")) and .source.entries[\"mbs 1 tp 2\"].memory.mpi_ranks and .source.entries[\"mbs 1 tp 2\"].memory.runtime_rss_bytes > 0" "$m" >/dev/null' || cat "$work/mpi.log"
	timeout 60 mpirun -np 2 --bind-to none "$SAILOR" profile --model gpt2-tiny --gpu cpu-fast --gpus $gpus --tp 1,2 --mbs 1 -q -o "$work/m" >"$work/mpi.log" 2>&1; rc=$?
	check "MPI: one TP degree per job" '[ $rc -ne 0 ] && grep -q "one TP degree per run" "$work/mpi.log"'
fi
finish
