#!/usr/bin/env bash
# same-outputs.sh: proves a refactor left sailor's behaviour unchanged (issue 43, item 8). It runs
# a fixed list of sailor commands (plan, simulate, validate, data, train, run --dry-run, run under
# mpirun, control, report, --help texts and bad input) and records each one's output, so that two
# builds can be compared byte for byte.
#
#   scripts/same-outputs.sh record REPO_ROOT OUT_DIR
#       runs the list with REPO_ROOT/sailor (as `sailor` on PATH) from inside REPO_ROOT and writes
#       OUT_DIR/NNN.txt per command: the command line, its exit status, its stdout and stderr,
#       and the files it writes (plan -o, simulate/run --timeline, checkpoint folders, control's
#       run folder, report's data). OUT_DIR must be absent or empty.
#   scripts/same-outputs.sh compare DIR_A DIR_B
#       exit 0 when both recordings are identical; otherwise names the commands whose records
#       differ, shows the start of each diff, and exits 1.
#   scripts/same-outputs.sh --help
#
# Run `record` on the build before and the build after, then `compare`. Two records of the same
# build compare identical. Every command runs under `timeout`; one record takes one to three
# minutes on two cores (more when the machine is busy). The planner runs on one thread
# (SAILOR_THREADS=1, see below); train and run use one thread per process. The command lines are recorded as written below, with $W (the temporary work folder,
# made with mktemp -d and removed at exit) unexpanded; the distributed tests' plans are copied
# into $W/plans from tests/runtime/plans (tests/$OLD_PLANS before the folder was renamed, at
# commit 44fb9a8 and earlier), so that their folder's name appears in no output. Files it reads otherwise are under data/.
#
# What is masked (the sed filters MASK_* below), and only that: what varies from one run to the
# next on the same build, never a simulator, planner or training figure (losses, gradient norms,
# learning rates, predicted times, memory and dollars, checkpoint bytes are all kept):
#   - paths: the work folder becomes @WORK@ and REPO_ROOT @REPO@ (the two builds live apart),
#     and the random part of run's own temporary folder (/tmp/sailor-run-XXXXXX) @;
#   - wall-clock measurements of train and run: the ms/step and tokens/s of each progress line,
#     the median, tokens/s and peak RSS of the `done:` line, the rows of run's per-stage table of
#     measured milliseconds and RSS; in their JSON lines (--json, control's steps and events)
#     the keys listed in MASK_JSON_KEYS (step and phase times, CPU times, MPI wait-test counts,
#     RSS, seconds since start, Unix time, pids, and control's usd_spent, which is rent times
#     wall time);
#   - the planner's search time (text `search: X s`, JSON search_time_s and the time_s of its
#     search_phases);
#   - report: the reconfiguration wall times of its summary, and in its data and gnuplot script
#     the time axis and measured iterations/s (report/steps.dat columns 1 and 4, marks' x);
#     its figure (PNG/SVG) is only checked to exist;
#   - run --timeline (measured): ts, dur and cpu_us of every span, then the lines are sorted
#     (spans of different ranks interleave by time). simulate --timeline is kept as written;
#   - checkpoints are recorded as their metadata (which names the data file: path masked) and
#     the SHA-256 of every byte after it but the CRC (which covers the path too).
# control runs with --sync-checkpoints: with asynchronous ones, whether a checkpoint that the next
# one overtakes is reported depends on timing.
set -uo pipefail
export LC_ALL=C TZ=UTC
unset SAILOR_DATA SAILOR_MPI_WAIT
# the planner's search on one thread: on several, which plans its threads prune depends on their
# timing, and with it the search's counts and (seen with --top 3 on two threads) the K-th best
# plans; its design promises the same result on any number of threads, so this is no mask
export SAILOR_THREADS=1

usage() { sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "$0"; }

# ---- masks ---------------------------------------------------------------------------------
# keys of compact JSON lines (train/run --json, --events-file, control's events and steps) whose
# values are measured on the wall clock or are process ids
MASK_JSON_KEYS='step_time_s|tokens_per_s|median_step_time_s|setup_s|load_s|compute_s|p2p_wait_s|dp_sync_s|optimizer_s|step_s|cpu_s|dp_sync_cpu_s|wait_cpu_s|wait_tests|peak_rss_bytes|t_s|time|plan_s|persist_s|wait_s|snapshot_s|place_s|write_s|persist_cpu_s|run_s|wall_s|stop_s|pid|waited_for_pid|usd_spent'
# every text recorded (stdout, stderr, files)
MASK_TEXT='
/^step +[0-9]+\/[0-9]+ \|/ s/\| +[0-9.]+ ms\/step \| +[0-9]+ tokens\/s$/| @ ms\/step | @ tokens\/s/
/^done: / s/median [0-9.]+ ms\/step \([0-9]+ tokens\/s\)/median @ ms\/step (@ tokens\/s)/
/^done: / s/peak RSS [0-9.]+ MiB/peak RSS @ MiB/
/^time per step by stage/,/^done: / s/^(  [0-9]+)( +[0-9.]+)+$/\1 @/
s/^search: [0-9.]+ s,/search: @ s,/
s/\/tmp\/sailor-run-[A-Za-z0-9]{6}\//\/tmp\/sailor-run-@\//g
s/("search_time_s": )[-0-9.eE+]+/\1@/
/"search_phases": \{/,/"shapes":/ s/("time_s": )[-0-9.eE+]+/\1@/
/^\{"(event|schema)":"/ s/"('"$MASK_JSON_KEYS"')":-?[0-9][-0-9.eE+]*/"\1":@/g
s/reconfigurations \(mean [0-9.]+ s, max [0-9.]+ s\)/reconfigurations (mean @ s, max @ s)/
'
# run --timeline files, after MASK_TEXT (then sorted)
MASK_RUN_TIMELINE='s/"(ts|dur|cpu_us)":-?[0-9][-0-9.eE+]*/"\1":@/g; s/,$//'
# report/steps.dat (t_s and measured_it_s columns) and report/report.gp (the time axis)
MASK_REPORT='
s/^[-0-9.eE+]+ ([0-9]+ [^ ]+) [^ ]+ /@ \1 @ /
s/(from|to|at) [-0-9.eE+]+, graph/\1 @, graph/g
s/xrange \[0:[-0-9.eE+]+\]/xrange [0:@]/
'

# sed_escape STRING: STRING as a literal in an extended regular expression
sed_escape() { sed -e 's/[]\/$*.^[+?(){}|]/\\&/g' <<<"$1"; }

# mask [EXTRA_SED]: stdin to stdout through the path substitutions, MASK_TEXT and EXTRA_SED
mask() {
	sed -E -e "s/$W_RE/@WORK@/g" -e "s/$REPO_RE/@REPO@/g" -e "$MASK_TEXT" ${1:+-e "$1"}
}

# text FILE: FILE's content (masked); says so when it lacks a final newline
text() {
	mask <"$1"
	if [ -s "$1" ] && [ -n "$(tail -c 1 "$1")" ]; then echo "[no newline at end]"; fi
}

# ckpt FILE NAME: a checkpoint (src/train/checkpoint.h): its metadata JSON (masked: it names the
# data file, in the work folder), then size and SHA-256 of the tensors, moments and end (every
# byte after the metadata but the CRC, which covers the metadata too)
ckpt() {
	local f=$1 size meta off
	size=$(stat -c %s "$f")
	meta=$(od -An -tu8 -j16 -N8 --endian=little "$f" | tr -d ' ')
	if [ "$(head -c 6 "$f")" != SLCKPT ] || [ -z "$meta" ] || [ $((24 + meta + 16)) -gt "$size" ]; then
		printf '%s %s bytes, sha256 %s (not a checkpoint)\n' "$2" "$size" "$(sha256sum <"$f" | cut -d' ' -f1)"
		return
	fi
	off=$((24 + meta))
	printf '%s %s bytes, metadata: ' "$2" "$size"
	dd if="$f" iflag=skip_bytes,count_bytes skip=24 count="$meta" status=none | sed -E -e 's/ +$//' | mask
	printf '\n  data sha256 %s, end %s\n' \
		"$(dd if="$f" iflag=skip_bytes,count_bytes skip=$off count=$((size - off - 16)) status=none | sha256sum | cut -d' ' -f1)" \
		"$(od -An -c -j $((size - 8)) -N 8 "$f" | tr -s ' ')"
}

# dump SPEC: one output file of a command. SPEC is KIND:PATH with KIND
#   f  a text file, masked            t  a run --timeline, masked and sorted
#   r  a report data file, masked     h  a binary file: size and SHA-256
#   d  a folder: every entry, with size and SHA-256 for checkpoints, tokens and weights
#   e  whether it exists only (and its first bytes)
dump() {
	local kind=${1%%:*} path=${1#*:}
	local p
	p=$(eval "printf '%s' \"$path\"")
	echo "--- $kind $path"
	if [ ! -e "$p" ]; then echo "(absent)"; return; fi
	case $kind in
	f) text "$p" ;;
	t) mask "$MASK_RUN_TIMELINE" <"$p" >"$W/.sorted" && sort "$W/.sorted" ;;
	r) text "$p" | sed -E -e "$MASK_REPORT" ;;
	h) printf '%s bytes, sha256 %s\n' "$(stat -c %s "$p")" "$(sha256sum <"$p" | cut -d' ' -f1)" ;;
	e) printf 'present, starts with:'; od -An -c -N 4 "$p" ;;
	d)
		local e
		find "$p" -mindepth 1 -printf '%P\n' | sort >"$W/.list"
		while IFS= read -r e; do
			if [ -d "$p/$e" ]; then
				echo "$e/"
			else
				case $e in
				*.ckpt) ckpt "$p/$e" "$e" ;;
				*.bin | *.safetensors)
					printf '%s %s bytes, sha256 %s\n' "$e" "$(stat -c %s "$p/$e")" \
						"$(sha256sum <"$p/$e" | cut -d' ' -f1)" ;;
				*) echo "$e" ;;
				esac
			fi
		done <"$W/.list"
		;;
	*) echo "same-outputs.sh: bad dump kind '$kind'" >&2; exit 2 ;;
	esac
}

# c SECONDS 'COMMAND' [SPEC...]: runs COMMAND (bash, in REPO_ROOT, $W and sailor available)
# under `timeout SECONDS`, and writes its record OUT/NNN.txt with the files SPEC names
n=0
c() {
	local limit=$1 cmd=$2 rc spec
	shift 2
	n=$((n + 1))
	local rec
	rec=$(printf '%s/%03d.txt' "$OUT" "$n")
	(cd "$REPO" && exec timeout -k 10 "$limit" bash -c "$cmd") </dev/null >"$W/.out" 2>"$W/.err"
	rc=$?
	{
		echo "\$ $cmd"
		echo "exit $rc"
		echo "--- stdout"
		text "$W/.out"
		echo "--- stderr"
		text "$W/.err"
		for spec in "$@"; do dump "$spec"; done
	} >"$rec"
	printf '%03d exit %-3s %s\n' "$n" "$rc" "${cmd:0:110}" >&2
}

# ---- the files the commands use, made in $W -------------------------------------------------
setup() {
	mkdir -p "$W/bin" "$W/plans" "$W/empty-ckpt"
	ln -s "$REPO/sailor" "$W/bin/sailor"
	local d plans="" OLD_PLANS=dist/plans
	for d in tests/runtime/plans "tests/$OLD_PLANS"; do
		if [ -d "$REPO/$d" ]; then plans=$REPO/$d; break; fi
	done
	[ -n "$plans" ] || { echo "same-outputs.sh: no plans folder (tests/runtime/plans, tests/$OLD_PLANS) in $REPO" >&2; exit 1; }
	cp "$plans"/*.json "$W/plans/"
	pool() { printf '{"schema": "sailor.pool/1", "gpus": [%s]}\n' "$2" >"$W/$1.json"; }
	pool het '{"gpu": "A100-40", "zone": "us-central1-a", "count": 8}, {"gpu": "V100-16", "zone": "us-central1-a", "count": 32}'
	pool a100-80 '{"gpu": "A100-80", "zone": "us-central1-a", "count": 32}'
	pool v100 '{"gpu": "V100-16", "zone": "us-central1-b", "count": 16}'
	pool empty ''
	pool unknown-gpu '{"gpu": "B200", "zone": "us-central1-a", "count": 8}'
	pool unknown-zone '{"gpu": "A100-40", "zone": "mars-1a", "count": 8}'
	pool small '{"gpu": "RTX-2080", "zone": "us-central1-a", "count": 1}'
	pool ctl '{"gpu": "A100-40", "zone": "us-central1-a", "count": 2}, {"gpu": "V100-16", "zone": "us-central1-b", "count": 1}'
	pool testbed '{"gpu": "cpu-fast", "zone": "us-central1-a", "count": 4}, {"gpu": "cpu-slow", "zone": "us-central1-b", "count": 4}'
	echo '{"schema": "sailor.pool/1", "gpus": [' >"$W/broken.json"
	printf ',Timestamp,A100-40_us-central1-a\n0,1,32\n1,2,0\n2,3,64\n' >"$W/gone.csv"
	# control's trace: its second step comes long after the run has ended (a change during the
	# run would make where generations split depend on timing)
	printf ',Timestamp,A100-40_us-central1-a,V100-16_us-central1-b\n0,0,2,1\n1,100000,1,0\n' >"$W/ctl-trace.csv"
	cat >"$W/cluster.json" <<'JSON'
{"schema": "sailor.cluster/1", "hosts": [
  {"name": "a100-0", "address": "localhost", "gpu": "A100-40", "zone": "us-central1-a", "slots": 2},
  {"name": "v100-0", "address": "localhost", "gpu": "V100-16", "zone": "us-central1-b", "slots": 2}],
 "launch": {"mpirun_args": ["--mca", "mpi_yield_when_idle", "1"]}}
JSON
	cat >"$W/cluster-big.json" <<'JSON'
{"schema": "sailor.cluster/1", "hosts": [
  {"name": "a100-0", "address": "localhost", "gpu": "A100-40", "zone": "us-central1-a", "slots": 4},
  {"name": "v100-0", "address": "localhost", "gpu": "V100-16", "zone": "us-central1-b", "slots": 2}]}
JSON
	cat >"$W/cluster-small.json" <<'JSON'
{"schema": "sailor.cluster/1",
 "hosts": [{"name": "a", "address": "localhost", "gpu": "A100-40", "zone": "us-central1-a", "slots": 2},
           {"name": "b", "address": "localhost", "gpu": "V100-16", "zone": "us-central1-b", "slots": 1}]}
JSON
	# 2 stages x 2 pipelines of uneven micro-batch counts on the testbed's CPU classes (as
	# tests/integration/run_timeline.sh)
	cat >"$W/timeline-plan.json" <<'JSON'
{"schema": "sailor.plan/1", "model": "gpt2-tiny", "global_batch": 8, "micro_batch": 2,
 "microbatches_per_pipeline": [3, 1],
 "stages": [
  {"layers": [0, 2], "replicas": [{"gpu": "cpu-fast", "zone": "us-central1-a", "tp": 1, "count": 1},
                                  {"gpu": "cpu-fast", "zone": "us-central1-a", "tp": 1, "count": 1}]},
  {"layers": [3, 5], "replicas": [{"gpu": "cpu-slow", "zone": "us-central1-b", "tp": 1, "count": 1},
                                  {"gpu": "cpu-slow", "zone": "us-central1-b", "tp": 1, "count": 1}]}]}
JSON
	local good1='{"layers": [13, 25], "replicas": [{"gpu": "A100-40", "zone": "us-central1-a", "tp": 2, "count": 2}]}'
	printf '%s\n' '{"schema": "sailor.plan/1", "micro_batch": 2, "stages": [' >"$W/plan-malformed.json"
	printf '%s\n' '{"schema": "sailor.plan/1", "micro_batch": 2, "stages": [{"layers": [0, 12], "replicas": [{"gpu": "B200", "zone": "us-central1-a", "tp": 2, "count": 2}]}, '"$good1"']}' >"$W/plan-gpu.json"
	printf '%s\n' '{"schema": "sailor.plan/1", "micro_batch": 2, "stages": [{"layers": [0, 11], "replicas": [{"gpu": "A100-40", "zone": "us-central1-a", "tp": 2, "count": 2}]}, '"$good1"']}' >"$W/plan-cover.json"
	printf '%s\n' '{"schema": "sailor.plan/1", "micro_batch": 32, "stages": [{"layers": [0, 12], "replicas": [{"gpu": "A100-40", "zone": "us-central1-a", "tp": 2, "count": 2}]}, '"$good1"']}' >"$W/plan-profile.json"
	sed 's/"global_batch":8/"global_batch":6/' "$W/plans/02-dp2.json" >"$W/plan-odd.json"
	cat >"$W/bad-heads.json" <<'JSON'
{"schema": "sailor.model/1", "name": "bad", "layers": 2, "hidden": 30, "heads": 4, "ffn_hidden": 120, "seq_len": 32, "vocab": 256}
JSON
	head -c 100 "$REPO/data/text/fsf-licenses.txt" >"$W/short.txt"
}

# ---- the list -------------------------------------------------------------------------------
# shellcheck disable=SC2016  # $W and $E stay unexpanded: they are part of the recorded command
commands() {
	local pool=data/examples/pool-a100-v100.json
	local plan=data/examples/plan-opt350-a100-v100.json
	local uneven=data/examples/plan-opt350-a100-v100-uneven.json
	local tb='--profiles $E/profiles --gpus $E/gpus.json --network $E/network.json --cluster $E/cluster.json'

	# general
	c 30 'sailor version'
	c 30 'sailor --help'
	c 30 'sailor'
	c 30 'sailor frobnicate'
	local sub
	for sub in plan simulate validate train data run profile control report; do
		c 30 "sailor $sub --help"
	done

	# plan
	c 60 "sailor plan --model OPT-350 --pool $pool"
	c 60 "sailor plan --model OPT-350 --pool $pool --cost-model sosp25"
	c 60 "sailor plan --model OPT-350 --pool $pool --objective cost"
	c 60 "sailor plan --model OPT-350 --pool $pool --json -o \$W/plan-sailor.json" 'f:$W/plan-sailor.json'
	c 60 "sailor plan --model OPT-350 --pool $pool --cost-model sosp25 --json -o \$W/plan-sosp25.json" 'f:$W/plan-sosp25.json'
	c 60 "sailor plan --model OPT-350 --pool $pool --top 5 --pareto"
	c 60 "sailor plan --model OPT-350 --pool $pool --max-stages 2 --global-batch 512"
	c 60 "sailor plan --model OPT-350 --pool $pool --memory-options off -o \$W/plan-off.json" 'f:$W/plan-off.json'
	c 60 "sailor plan --model OPT-350 --pool $pool --objective cost --min-throughput 0.1"
	c 60 "sailor plan --model OPT-350 --pool $pool --max-cost 0.5"
	c 60 "sailor plan --model OPT-350 --pool $pool --cost-model sosp25 --profiles data/profiles-sosp25-simulator"
	c 60 "sailor plan --model OPT-350 --pool \$W/het.json --uneven-microbatches --json -o \$W/plan-uneven.json" 'f:$W/plan-uneven.json'
	c 60 "sailor plan --model OPT-350 --pool \$W/v100.json --objective cost"
	c 60 "sailor plan --model GPT-Neo-2.7 --pool $pool"
	c 60 "sailor plan --model GPT-Neo-2.7 --pool $pool --cost-model sosp25 --json"
	c 60 "sailor plan --model LLAMA-3-8 --pool $pool"
	c 60 "sailor plan --model LLAMA-3-8 --pool \$W/a100-80.json --json -o \$W/plan-llama.json" 'f:$W/plan-llama.json'
	c 60 "sailor plan --model OPT-30 --pool $pool"
	c 60 "sailor plan --model data/models/gpt2-small.json --pool $pool --top 2"
	c 60 "E=data/validation/testbed-geo3-gpt2tiny/env; sailor plan --model gpt2-tiny --pool \$W/testbed.json --global-batch 8 --top 3 $tb -o \$W/plan-testbed.json" 'f:$W/plan-testbed.json'
	c 60 "sailor plan --model OPT-350 --trace data/traces/gpu_trace_scaled.csv --json --top 3 --pareto"
	c 60 "sailor plan --model OPT-350 --trace data/traces/gpu_trace_multizone.csv"
	c 60 "sailor plan --model OPT-350 --trace data/traces/gpu_trace_heterogeneous_imbalanced.csv --cost-model sosp25"
	c 60 "sailor plan --model OPT-350 --trace data/traces/gpu_trace_2zones_2gpus.csv -o \$W/plan-trace.json" 'f:$W/plan-trace.json'
	c 60 "sailor plan --model GPT-Neo-2.7 --trace data/traces/gpu_trace_scaled.csv --objective cost"

	# simulate
	c 60 "sailor simulate --model OPT-350 --plan $plan"
	c 60 "sailor simulate --model OPT-350 --plan $plan --json"
	c 60 "sailor simulate --model OPT-350 --plan $plan --cost-model sosp25"
	c 60 "sailor simulate --model OPT-350 --plan $plan --cost-model sosp25 --json"
	c 60 "sailor simulate --plan $plan --global-batch 512"
	c 60 "sailor simulate --model OPT-350 --plan $uneven"
	c 60 "sailor simulate --model OPT-350 --plan $uneven --json"
	c 60 "sailor simulate --model OPT-350 --plan \$W/plan-sailor.json --json"
	c 60 "sailor simulate --model OPT-350 --plan \$W/plan-sosp25.json --cost-model sosp25"
	c 60 "sailor simulate --model OPT-350 --plan \$W/plan-uneven.json"
	c 60 "sailor simulate --model LLAMA-3-8 --plan \$W/plan-llama.json --json"
	c 60 "sailor simulate --model OPT-350 --plan data/validation/clariden-gh200-opt350/plan_config_N16_D4.json"
	c 60 "sailor simulate --model OPT-350 --plan data/validation/clariden-gh200-opt350/plan_config_N2_D2.json --profiles data/profiles-sosp25-simulator --cost-model sosp25 --json"
	c 60 "sailor simulate --model GPT-Neo-2.7 --plan data/validation/clariden-gh200-gptneo27/plan_config_N8_D2.json"
	c 60 "sailor simulate --model OPT-350 --plan data/validation/mit-rtx-opt350/plan_config_N6_D3.json --cost-model sosp25"
	c 60 "E=data/validation/testbed-geo3-gpt2tiny/env; sailor simulate --plan data/validation/testbed-geo3-gpt2tiny/v05-p2-fast-slow-region.json $tb"
	c 60 "E=data/validation/testbed-geo3-gpt2tiny/env; sailor simulate --plan data/validation/testbed-geo3-gpt2tiny/v09-p2-d2-uneven.json $tb --json"
	c 60 "E=data/validation/testbed-quad4-gpt2tiny-wide/env; sailor simulate --model gpt2-tiny-wide --plan data/validation/testbed-quad4-gpt2tiny-wide/a08-p1-d2-mixed-tp-zero-uneven.json $tb --json"
	c 60 "E=data/validation/testbed-geo3-gpt2tiny/env; sailor simulate --plan \$W/timeline-plan.json --profiles \$E/profiles --gpus \$E/gpus.json --network \$E/network.json --timeline \$W/sim-timeline.json" 'f:$W/sim-timeline.json'
	c 60 "E=data/validation/testbed-geo3-gpt2tiny/env; sailor simulate --plan \$W/plan-testbed.json $tb"

	# validate
	c 60 'sailor validate --model OPT-350 data/validation/clariden-gh200-opt350'
	c 60 'sailor validate --model OPT-350 data/validation/clariden-gh200-opt350 --json'
	c 60 'sailor validate --model OPT-350 data/validation/clariden-gh200-opt350 --cost-model sosp25 --profiles data/profiles-sosp25-simulator --json'
	c 60 'sailor validate --model GPT-Neo-2.7 data/validation/clariden-gh200-gptneo27'
	c 60 'sailor validate --model GPT-Neo-2.7 data/validation/clariden-gh200-gptneo27 --cost-model sosp25 --json'
	c 60 'sailor validate --model OPT-350 data/validation/mit-rtx-opt350'
	c 60 'sailor validate --model OPT-350 data/validation/mit-rtx-opt350-tp8 --cost-model sosp25'
	local set model
	for set in geo3-gpt2tiny:gpt2-tiny geo3-gpt2tiny-memopts:gpt2-tiny quad4-gpt2tiny-wide:gpt2-tiny-wide \
		tri3-gpt2tiny-deep:gpt2-tiny-deep pent5-gpt2tiny-mid:gpt2-tiny-mid \
		mix4-gpt2tiny-five:gpt2-tiny-five span3-gpt2tiny-six:gpt2-tiny-six; do
		model=${set#*:}
		set=data/validation/testbed-${set%%:*}
		c 60 "E=$set/env; sailor validate --model $model $set $tb"
	done
	c 60 "E=data/validation/testbed-geo3-gpt2tiny/env; sailor validate --model gpt2-tiny data/validation/testbed-geo3-gpt2tiny $tb --json"

	# data and train (one thread: BLAS results do not depend on the split of work)
	c 60 'sailor data data/text/fsf-licenses.txt -o $W/tokens.bin' 'h:$W/tokens.bin'
	c 60 'sailor data --info $W/tokens.bin'
	c 60 'sailor data $W/short.txt -o $W/short.bin' 'h:$W/short.bin'
	local t='sailor train --model gpt2-tiny --data $W/tokens.bin --threads 1 --seq-len 32'
	c 120 "$t --micro-batch 2 --global-batch 8 --steps 6 --ckpt-dir \$W/ckpt-train --ckpt-every 2" 'd:$W/ckpt-train'
	c 120 "$t --micro-batch 2 --global-batch 8 --steps 9 --ckpt-dir \$W/ckpt-train --ckpt-every 2 --resume --json" 'd:$W/ckpt-train'
	c 120 "$t --micro-batch 4 --global-batch 8 --steps 5 --lr 1e-3 --warmup-steps 2 --seed 11 --json --save-safetensors \$W/w.safetensors" 'h:$W/w.safetensors'
	c 120 "$t --micro-batch 2 --global-batch 4 --steps 3 --recompute full --json"
	c 120 "$t --micro-batch 2 --steps 4 --shuffle --log-every 2"
	c 120 'sailor train --model gpt2-tiny-wide --data $W/tokens.bin --threads 1 --seq-len 16 --micro-batch 2 --steps 3 --json'

	# run --dry-run over the distributed tests' plans
	local f name
	for f in "$W"/plans/*.json; do
		name=${f##*/}
		c 60 "sailor run --dry-run --plan \$W/plans/$name --data \$W/tokens.bin --seq-len 32 --steps 3"
	done
	c 60 'sailor run --dry-run --plan $W/plans/06-pp2-dp2-mixed-tp-two-zones.json --data $W/tokens.bin --cluster $W/cluster-big.json'
	c 60 'sailor run --dry-run --plan $W/plans/06-pp2-dp2-mixed-tp-two-zones.json --data $W/tokens.bin --cluster $W/cluster.json'
	c 60 'sailor run --dry-run --plan $W/timeline-plan.json --data $W/tokens.bin --gpus data/testbed/gpus-cpu.json --threads-per-rank 2'

	# run under mpirun, a few steps each
	c 180 'sailor run --plan $W/plans/06-pp2-dp2-mixed-tp-two-zones.json --data $W/tokens.bin --seq-len 32 --steps 3 --seed 11 --json --ckpt-dir $W/ckpt-run06' 'd:$W/ckpt-run06'
	c 180 'sailor run --plan $W/plans/09-pp2-dp3-tp124-uneven-mb.json --data $W/tokens.bin --seq-len 32 --steps 3 --ckpt-dir $W/ckpt-run09 --events-file $W/run09-steps.jsonl' 'd:$W/ckpt-run09' 'f:$W/run09-steps.jsonl'
	c 180 'sailor run --plan $W/plans/03-pp2.json --data $W/tokens.bin --seq-len 32 --steps 12 --ckpt-dir $W/ckpt-train --resume --json' 'd:$W/ckpt-train'
	c 180 'sailor run --plan $W/timeline-plan.json --data $W/tokens.bin --gpus data/testbed/gpus-cpu.json --seq-len 32 --steps 2 --timeline $W/run-timeline.json' 't:$W/run-timeline.json'

	# control: a short trace on two localhost "hosts", then the same on a pool file; report
	c 180 'sailor control --model gpt2-tiny --data $W/tokens.bin --seq-len 32 --steps 12 --global-batch 8 --cluster $W/cluster.json --trace $W/ctl-trace.csv --time-scale 0.25 --ckpt-dir $W/ctl-ckpt --ckpt-every 5 --sync-checkpoints --hang-timeout 60' \
		'd:$W/ctl-ckpt' 'd:$W/ctl-ckpt.run' 'f:$W/ctl-ckpt.run/events.jsonl' 'f:$W/ctl-ckpt.run/steps.jsonl' \
		'f:$W/ctl-ckpt.run/gen-1/plan.json' 'f:$W/ctl-ckpt.run/gen-1/cluster.json' \
		'f:$W/ctl-ckpt.run/gen-1/stdout.jsonl' 'f:$W/ctl-ckpt.run/gen-1/stderr.log' 'f:$W/ctl-ckpt.run/gen-1/steps.jsonl'
	c 180 'sailor control --model gpt2-tiny --data $W/tokens.bin --seq-len 32 --steps 6 --cluster $W/cluster.json --pool $W/ctl.json --objective cost --ckpt-dir $W/ctl2-ckpt --run-dir $W/ctl2-run --json --sync-checkpoints --hang-timeout 60 -- --lr 1e-3 --warmup-steps 2' \
		'd:$W/ctl2-ckpt' 'f:$W/ctl2-run/steps.jsonl' 'f:$W/ctl2-run/gen-1/plan.json'
	c 60 'sailor report $W/ctl-ckpt.run' 'r:$W/ctl-ckpt.run/report/steps.dat' 'r:$W/ctl-ckpt.run/report/report.gp' 'e:$W/ctl-ckpt.run/report.png'
	c 60 'sailor report -o $W/ctl2.svg $W/ctl2-run' 'r:$W/ctl2-run/report/steps.dat' 'e:$W/ctl2.svg'

	# bad input: exit 1 (2 for usage), one message on stderr, nothing on stdout
	c 30 "sailor plan --model OPT-350 --pool \$W/empty.json"
	c 30 "sailor plan --model OPT-350 --pool \$W/unknown-gpu.json"
	c 30 "sailor plan --model OPT-350 --pool \$W/unknown-zone.json"
	c 30 "sailor plan --model OPT-350 --pool \$W/broken.json"
	c 30 "sailor plan --model GPT-17 --pool $pool"
	c 30 "sailor plan --model OPT-30 --pool \$W/small.json"
	c 30 "sailor plan --model OPT-350 --pool $pool --max-cost 0.0001"
	c 30 "sailor plan --model OPT-350 --pool $pool --objective cost --min-throughput 1000"
	c 30 "sailor plan --model LLAMA-3-8 --pool \$W/a100-80.json --memory-options off"
	c 30 "sailor plan --model OPT-350 --trace \$W/gone.csv --json -o \$W/gone-plan.json" 'e:$W/gone-plan.json'
	c 30 "sailor plan --model OPT-350 --pool $pool -o \$W/nope/x.json"
	c 30 "sailor plan --pool $pool"
	c 30 "sailor plan --model OPT-350 --pool $pool --trace data/traces/gpu_trace_scaled.csv"
	c 30 "sailor plan --model OPT-350 --pool $pool --objective speed"
	c 30 "sailor plan --model OPT-350 --pool $pool --top 0"
	c 30 "sailor plan --model OPT-350 --pool $pool --cost-model magic"
	c 30 "sailor simulate --model OPT-350"
	c 30 "sailor simulate --model OPT-350 --plan \$W/nope.json"
	c 30 "sailor simulate --model OPT-350 --plan \$W/plan-malformed.json"
	c 30 "sailor simulate --model OPT-350 --plan \$W/plan-gpu.json"
	c 30 "sailor simulate --model OPT-350 --plan \$W/plan-cover.json"
	c 30 "sailor simulate --model OPT-350 --plan \$W/plan-profile.json"
	c 30 "sailor simulate --model GPT-17 --plan $plan"
	c 30 "sailor simulate --model OPT-350 --plan $plan --cost-model fast"
	c 30 "sailor simulate --model OPT-350 --plan $plan --global-batch 0"
	c 30 "sailor simulate --model OPT-350 --plan $plan --frobnicate"
	c 30 "sailor simulate --plan $plan --network data/gpus.json"
	c 30 "sailor simulate --plan $plan --timeline \$W/x.json" 'e:$W/x.json'
	c 30 'sailor validate --model OPT-350'
	c 30 'sailor validate --model OPT-350 $W/no-such-folder'
	c 30 'sailor data -o $W/x.bin'
	c 30 'sailor data data/text/README.md -o $W/x.bin --tokenizer words'
	c 30 'sailor data $W/nope.txt -o $W/x.bin'
	c 30 "$t --data \$W/short.bin --micro-batch 4"
	c 30 "$t --seq-len 256"
	c 30 'sailor train --model $W/bad-heads.json --data $W/tokens.bin --steps 1'
	c 30 "$t --micro-batch 4 --global-batch 10"
	c 30 'sailor train --model gpt2-tiny --data data/text/fsf-licenses.txt'
	c 30 "$t --ckpt-dir \$W/empty-ckpt --resume"
	c 30 'sailor train --model gpt9 --data $W/tokens.bin'
	c 30 'sailor train --data $W/tokens.bin'
	c 60 'sailor run --plan $W/plans/06-pp2-dp2-mixed-tp-two-zones.json --data $W/tokens.bin --seq-len 32 --steps 2 --cluster $W/cluster-small.json'
	c 60 'sailor run --plan $W/plans/03-pp2.json --data $W/tokens.bin --seq-len 32 --steps 2 --model gpt2-small'
	c 60 'sailor run --plan $W/plan-odd.json --data $W/tokens.bin --seq-len 32 --steps 2'
	c 60 'sailor run --plan $W/plans/02-dp2.json --data $W/missing.bin'
	c 60 'sailor run --plan $W/plans/02-dp2.json --data $W/tokens.bin --micro-batch 4'
	c 60 'sailor run --data $W/tokens.bin --steps 2'
	c 30 'sailor control --model gpt2-tiny --data $W/tokens.bin --pool $W/ctl.json --ckpt-dir $W/ctl3 --steps 4'
	c 30 'sailor report $W/no-such-run'
}

# ---- record and compare ---------------------------------------------------------------------
record() {
	[ -x "$1/sailor" ] || { echo "same-outputs.sh: no executable '$1/sailor' (build it first)" >&2; exit 1; }
	REPO=$(cd "$1" && pwd -P)
	OUT=$2
	if [ -e "$OUT" ] && [ -n "$(ls -A "$OUT")" ]; then
		echo "same-outputs.sh: '$OUT' is not empty" >&2
		exit 1
	fi
	mkdir -p "$OUT" || exit 1
	OUT=$(cd "$OUT" && pwd -P)
	W=$(mktemp -d) || exit 1
	W=$(cd "$W" && pwd -P)
	trap 'rm -rf -- "$W"' EXIT
	W_RE=$(sed_escape "$W")
	REPO_RE=$(sed_escape "$REPO")
	export W PATH="$W/bin:$PATH"
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
	setup
	local start=$SECONDS
	commands
	echo "recorded $n commands of $REPO/sailor in $OUT ($((SECONDS - start)) s)" >&2
}

compare() {
	local a=$1 b=$2 f name differ=0
	if [ ! -d "$a" ] || [ ! -d "$b" ]; then
		echo "same-outputs.sh: compare needs two folders" >&2
		exit 2
	fi
	tmp=$(mktemp -d) || exit 2
	trap 'rm -rf -- "$tmp"' EXIT
	(cd "$a" && ls) >"$tmp/a"
	(cd "$b" && ls) >"$tmp/b"
	sort -u "$tmp/a" "$tmp/b" >"$tmp/all"
	: >"$tmp/diffs"
	while IFS= read -r name; do
		if [ ! -f "$a/$name" ] || [ ! -f "$b/$name" ]; then
			f=$a/$name
			[ -f "$f" ] || f=$b/$name
			echo "only in $([ -f "$a/$name" ] && echo "$a" || echo "$b"): $name: $(sed -n 1p "$f")"
			differ=$((differ + 1))
		elif ! cmp -s "$a/$name" "$b/$name"; then
			echo "differs: $name: $(sed -n 1p "$a/$name")"
			differ=$((differ + 1))
			diff -u --label "$a/$name" --label "$b/$name" "$a/$name" "$b/$name" >"$tmp/d"
			head -n 40 "$tmp/d" >>"$tmp/diffs"
		fi
	done <"$tmp/all"
	if [ "$differ" -eq 0 ]; then
		echo "identical: $(wc -l <"$tmp/all") records"
		return 0
	fi
	echo "$differ of $(wc -l <"$tmp/all") records differ; the start of each diff:"
	cat "$tmp/diffs"
	return 1
}

case ${1:-} in
-h | --help) usage; exit 0 ;;
record) [ $# -eq 3 ] || { usage >&2; exit 2; }; record "$2" "$3" ;;
compare) [ $# -eq 3 ] || { usage >&2; exit 2; }; compare "$2" "$3"; exit $? ;;
*) usage >&2; exit 2 ;;
esac
