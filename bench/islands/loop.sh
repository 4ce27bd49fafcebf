#!/usr/bin/env bash
# The planner's own choices on a geo testbed, measured: brings a testbed up, profiles its device
# classes and links (bench/testbed/profile_testbed.sh), plans its pool three ways (the first plan
# of `sailor plan --sync auto`, the first of the default every-step sync, and the best
# synchronous plan within one region), runs each with `sailor run` on real text with a held-out
# loss, and says how soon each reaches the synchronous plan's final validation loss, against
# what the planner predicted (bench/islands/planner_loop.py says how).
#
# Usage: bench/islands/loop.sh [--desc FILE] [--work DIR] [--quick] [--sailor BIN]
#   --desc FILE   the testbed (default bench/islands/testbed.json: 3 regions joined by 25 Mbit/s,
#                 a third of the compute each)
#   --work DIR    where everything goes (default /tmp/sailor-islands-loop): corpus/ (kept between
#                 runs; bench/islands/corpus.sh), env/ (profiles, network.json, cluster.json),
#                 loop/ (every plan, command, run's JSON events, index.json, results.md)
#   --quick       60/90 steps and fewer evaluation windows: a check that the tool works end to
#                 end; its figures mean nothing
#   --sailor BIN  the sailor binary (default ./sailor of this checkout)
# Needs root (namespaces, tc, cgroups), mpirun, jq, python3. The testbed is taken down at the end,
# also on failure or interrupt. Every run is bounded (timeout).
set -euo pipefail
usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; }
root=$(cd "$(dirname "$0")/../.." && pwd)
desc="$root/bench/islands/testbed.json" work=/tmp/sailor-islands-loop quick="" sailor="$root/sailor"
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --desc) desc=${2:?--desc needs FILE}; shift 2 ;;
    --work) work=${2:?--work needs DIR}; shift 2 ;;
    --quick) quick=--quick; shift ;;
    --sailor) sailor=${2:?--sailor needs BIN}; shift 2 ;;
    *) echo "loop.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done
[ -x "$sailor" ] || { echo "loop.sh: no sailor binary at '$sailor' (run make, or give --sailor)" >&2; exit 1; }
[ -f "$desc" ] || { echo "loop.sh: no testbed description '$desc'" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "loop.sh: needs root (the testbed)" >&2; exit 1; }
for c in mpirun jq python3; do
  command -v $c >/dev/null || { echo "loop.sh: $c is missing (scripts/install-deps.sh)" >&2; exit 1; }
done
mkdir -p "$work"
work=$(cd "$work" && pwd)
desc=$(cd "$(dirname "$desc")" && pwd)/$(basename "$desc")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
start=$(date +%s)

if [ ! -s "$work/corpus/train.bin" ] || [ ! -s "$work/corpus/val.bin" ]; then
  timeout 900 "$root/bench/islands/corpus.sh" "$work/corpus" --seq-len 128 --sailor "$sailor"
fi

zones="$work/testbed-zones"   # scripts/testbed --data: the description's zone names
python3 "$root/bench/islands/zone_list.py" "$desc" "$zones"
tb() { timeout 300 "$root/scripts/testbed" "$@" --data "$zones"; }
cleanup() { tb down "$desc" >/dev/null 2>&1 || echo "loop.sh: 'scripts/testbed down $desc' failed" >&2; }
trap cleanup EXIT
trap 'exit 130' INT TERM
rm -rf "$work/env" "$work/loop"
mkdir -p "$work/env"
tb down "$desc" >/dev/null 2>&1 || true
tb up "$desc" -o "$work/env/cluster.json"
# the classes' layers at the micro-batch sizes the plans can take, and the links
# with the binary the plans and runs use (the script's own default is build/sailor)
SAILOR="$sailor" MODEL=gpt2-tiny SEQ=128 MBS=1,2,4 ACROSS_CLASSES=1 timeout 1800 \
  "$root/bench/testbed/profile_testbed.sh" "$work/env/cluster.json" "$root/data/testbed/gpus-cpu.json" "$work/env"
python3 "$root/bench/islands/planner_loop.py" --work "$work" --cluster "$work/env/cluster.json" \
  --env "$work/env" --desc "$desc" --sailor "$sailor" $quick
cleanup
trap - EXIT
echo "loop.sh: done in $(( $(date +%s) - start )) s; the table in $work/loop/results.md"
