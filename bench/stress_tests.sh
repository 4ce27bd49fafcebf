#!/usr/bin/env bash
# bench/stress_tests.sh N [TEST...]: runs every MPI, testbed and controller test N times while two
# CPU-bound processes run beside them (the machine as loaded as a shared CI runner), and prints
# the failures per test. No test retries anything (issue 20): a failure here is a fault to find.
# TESTS: names under tests/integration/ (without .sh) or build/tests/ (unit binaries); default:
# test_runtime_launch and every control_*, run_*, slurm_*, profile_network, testbed_* script.
# Logs of failed runs are kept in $STRESS_LOGS (default: a new folder under /tmp, printed).
# Exit status: 0 when nothing failed, else 1. Run by `make bench` without N: says how, skips.
set -u
cd "$(dirname "$0")/.."
n=${1:-}
if [ -z "$n" ]; then
  echo "stress_tests.sh: give N (runs per test), e.g. bench/stress_tests.sh 20; skipped"
  exit 0
fi
shift
: "${SAILOR:=$PWD/build/sailor}"
: "${BUILD:=build}"
export SAILOR BUILD
[ -x "$SAILOR" ] || { echo "stress_tests.sh: no sailor at '$SAILOR' (make first)"; exit 2; }
if [ $# -gt 0 ]; then
  tests=("$@")
else
  tests=(test_runtime_launch)
  for s in tests/integration/control_*.sh tests/integration/run_*.sh \
           tests/integration/slurm_*.sh tests/integration/profile_network.sh \
           tests/integration/testbed_*.sh; do
    [ "$s" = tests/integration/run_bad_input.sh ] && continue   # no MPI job runs
    tests+=("$(basename "$s" .sh)")
  done
fi
for t in "${tests[@]}"; do
  [ -x "$BUILD/tests/$t" ] || [ -f "tests/integration/$t.sh" ] ||
    { echo "stress_tests.sh: no test '$t': neither $BUILD/tests/$t (make $BUILD/tests/$t, or make test) nor tests/integration/$t.sh"; exit 2; }
done
logs=${STRESS_LOGS:-$(mktemp -d /tmp/sailor-stress-XXXXXX)}
mkdir -p "$logs"
# two CPU-bound processes beside the tests, ended by their pids at exit
hogs=()
for _ in 1 2; do sh -c 'while :; do :; done' & hogs+=($!); done
trap 'kill "${hogs[@]}" 2>/dev/null' EXIT
declare -A fails runs secs
t_start=$(date +%s)
echo "stress: $n runs of each of ${#tests[@]} tests beside 2 CPU-bound processes; $(nproc) cores; logs of failures in $logs"
for ((i = 1; i <= n; i++)); do
  for t in "${tests[@]}"; do
    if [ -x "$BUILD/tests/$t" ]; then cmd=("$BUILD/tests/$t"); else cmd=(bash "tests/integration/$t.sh"); fi
    t0=$(date +%s.%N)
    "${cmd[@]}" >"$logs/$t.$i.log" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    runs[$t]=$(( ${runs[$t]:-0} + 1 ))
    secs[$t]=$(awk -v a="${secs[$t]:-0}" -v b="$t0" -v c="$t1" 'BEGIN { printf "%.1f", a + c - b }')
    case $rc in
      0|77) rm -f "$logs/$t.$i.log" ;;
      *) fails[$t]=$(( ${fails[$t]:-0} + 1 ))
         echo "run $i: FAIL $t (exit $rc): $(grep -m1 'FAIL\|rror' "$logs/$t.$i.log" | cut -c 1-160)" ;;
    esac
    [ "$rc" = 77 ] && echo "run $i: SKIP $t: $(tail -n 1 "$logs/$t.$i.log")"
  done
  echo "run $i of $n done ($(( $(date +%s) - t_start )) s)"
done
total=0
printf '%-32s %5s %8s %10s\n' test runs failures "mean s"
for t in "${tests[@]}"; do
  f=${fails[$t]:-0}
  total=$((total + f))
  printf '%-32s %5d %8d %10.1f\n' "$t" "${runs[$t]}" "$f" "$(awk -v s="${secs[$t]}" -v r="${runs[$t]}" 'BEGIN { print s / r }')"
done
echo "total: $total failures in $(( n * ${#tests[@]} )) runs, $(( $(date +%s) - t_start )) s"
[ "$total" -eq 0 ]
