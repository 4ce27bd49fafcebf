#!/usr/bin/env bash
# The islands benchmark: DiLoCo-style islands (docs/design/islands.md) against synchronous data
# parallelism on real English text, on this machine and on an emulated 3-region testbed.
#
# Usage: bench/islands/run.sh [--work DIR] [--quick] [--skip-curves] [--seeds N]
#                             [--skip-testbed] [--sailor BIN]
#   --work DIR      where everything goes (default /tmp/sailor-islands-bench): corpus/ (kept
#                   between runs), curves/ and testbed/ (every run's plan, command, JSON events
#                   with arrival times, stderr, timelines; replaced by each run of their phase),
#                   results.md (the tables), islands.png and islands.gp (the plot)
#   --quick         about 1/8 of the steps (curves 100, testbed 60/90) and fewer evaluation
#                   windows: a check that the tool works end to end, in about 5 minutes;
#                   its figures mean nothing (H = 200 then makes no round)
#   --skip-curves   leave out part 2 (the report keeps the curves of an earlier run in DIR)
#   --seeds N       the loss target's two curves (synchronous; 4 islands, H = 50, int8) from N
#                   seeds in all: part 2's and N - 1 more, in DIR/seeds/ (default 3; 1 leaves
#                   this out and the report keeps the seeds of an earlier run in DIR; with
#                   --skip-curves part 2's curves of an earlier run count as the first seed)
#   --skip-testbed  leave out part 3 (needs root; the same)
#   --sailor BIN    the sailor binary (default ./sailor of this checkout)
#
# What it does (the full run: 29 minutes on the shared 2-core development VM, 2026-11-29,
# before the seeds were added; the curves and 4 seed runs alone: 19 minutes on a quiet one):
#  1. the corpus: bench/islands/corpus.sh DIR/corpus (21.4 MB of the Linux kernel's
#     documentation from Debian's linux-doc, byte tokens, the last 1% held out as val.bin);
#     reused when DIR/corpus has train.bin and val.bin;
#  2. loss curves on this machine, no testbed: gpt2-tiny, 4 pipelines of one stage, global batch
#     16 x 128 tokens, 800 steps (1.64 M tokens, 7.7% of an epoch, shuffled windows), the same
#     seed, data stream and learning-rate schedule for every curve; synchronous; 2 and 4 islands
#     at H = 10, 50, 200 (fp32 wire); int8 wire at H = 50 (2 and 4 islands); 4 islands, H = 50,
#     int8, 4 fragments with overlap 0 and 2. Validation loss every 100 steps on 512 windows
#     (65,536 tokens). About 2 minutes a curve; then the loss target's two curves from the
#     next N - 1 seeds (--seeds), each its own initial weights and data order;
#  3. the testbed (root: namespaces, tc, cgroups): brings bench/islands/testbed.json up (3
#     regions, 25 Mbit/s between them, devices of 0.4 and 0.2 core, 0.4 core per region) with a
#     zone list of its own for scripts/testbed (--data: that script knows two regions only), and
#     takes it down at the end, also on failure or interrupt. Probes the synchronous candidates
#     (every device; each shape of region alone) and runs the fastest for 400 steps; probes the
#     island plan's islands to give each its inner steps per round (island 0: H = 50); runs the
#     island plan (one island per region, int8, 4 fragments, overlap 2) for 600 steps with a
#     timeline. Counts the bytes between regions with tc (htb class counters);
#  4. the report: DIR/results.md (the tables, every target met or missed by how much, what bounds
#     the gain) and DIR/islands.png (gnuplot).
# It prints figures and fails only on a broken run (a run that fails or passes its time limit).
# Every sailor run has a time limit (timeout). Needs mpirun, python3, gnuplot; the testbed part
# needs root, iproute2 and jq.
set -euo pipefail
usage() { sed -n '2,40p' "$0" | sed 's/^# \{0,1\}//'; }
root=$(cd "$(dirname "$0")/../.." && pwd)
work=/tmp/sailor-islands-bench quick="" curves=1 seeds=3 testbed=1 sailor="$root/sailor"
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --work) work=${2:?--work needs DIR}; shift 2 ;;
    --quick) quick=--quick; shift ;;
    --skip-curves) curves=0; shift ;;
    --seeds) seeds=${2:?--seeds needs N}; shift 2 ;;
    --skip-testbed) testbed=0; shift ;;
    --sailor) sailor=${2:?--sailor needs BIN}; shift 2 ;;
    *) echo "run.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done
case "$seeds" in ''|*[!0-9]*|0) echo "run.sh: --seeds needs a whole number of 1 or more, not '$seeds'" >&2; exit 2 ;; esac
[ -x "$sailor" ] || { echo "run.sh: no sailor binary at '$sailor' (run make, or give --sailor)" >&2; exit 1; }
for c in mpirun python3 gnuplot; do
  command -v $c >/dev/null || { echo "run.sh: $c is missing (scripts/install-deps.sh)" >&2; exit 1; }
done
if [ $testbed = 1 ] && [ "$(id -u)" -ne 0 ]; then
  echo "run.sh: the testbed part needs root (or give --skip-testbed)" >&2; exit 1
fi
case "$work" in *"'"*) echo "run.sh: --work must not hold a quote (gnuplot)" >&2; exit 2 ;; esac
mkdir -p "$work"
work=$(cd "$work" && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
py=(python3 "$root/bench/islands/islands_bench.py")
start=$(date +%s)

# 1. the corpus
if [ ! -s "$work/corpus/train.bin" ] || [ ! -s "$work/corpus/val.bin" ]; then
  timeout 900 "$root/bench/islands/corpus.sh" "$work/corpus" --seq-len 128 --sailor "$sailor"
fi

# 2. the curves on this machine
if [ $curves = 1 ]; then
  rm -rf "$work/curves"
  "${py[@]}" curves --work "$work" --sailor "$sailor" $quick
fi
if [ "$seeds" -gt 1 ]; then
  rm -rf "$work/seeds"
  "${py[@]}" seeds --work "$work" --sailor "$sailor" --seeds "$seeds" $quick
fi

# 3. the testbed
if [ $testbed = 1 ]; then
  desc="$root/bench/islands/testbed.json"
  zones="$work/testbed-zones"   # scripts/testbed --data: its zone names (network/egress_usd_per_gb.json)
  python3 "$root/bench/islands/zone_list.py" "$desc" "$zones"
  tb() { timeout 300 "$root/scripts/testbed" "$@" --data "$zones"; }
  cleanup() { tb down "$desc" >/dev/null 2>&1 || echo "run.sh: 'scripts/testbed down $desc' failed" >&2; }
  trap cleanup EXIT
  trap 'exit 130' INT TERM
  rm -rf "$work/testbed"
  mkdir -p "$work/testbed"
  tb down "$desc" >/dev/null 2>&1 || true
  tb up "$desc" -o "$work/testbed/cluster.json"
  tb status "$desc" > "$work/testbed/status.txt" 2>&1 || true
  "${py[@]}" testbed --work "$work" --sailor "$sailor" --cluster "$work/testbed/cluster.json" $quick
  cleanup
  trap - EXIT
fi

# 4. the report
"${py[@]}" report --work "$work" --sailor "$sailor"
echo "run.sh: done in $(( $(date +%s) - start )) s; tables in $work/results.md, plot $work/islands.png"
