#!/usr/bin/env bash
# Runs every test: the cmocka unit binaries given as arguments, then each script in
# tests/integration/ (golden and end-to-end cases against $SAILOR).
# A script exits 0 for pass, 77 for skip (a prerequisite is missing, said on stderr), else fail.
# Ends with one line "N passed, N failed, N skipped" and exits non-zero if anything failed.
set -u
cd "$(dirname "$0")/.."
: "${SAILOR:?set SAILOR to the sailor binary}"
export SAILOR
passed=0 failed=0 skipped=0 failures=()
run_one() {
  local name=$1; shift
  local log; log=$(mktemp)
  "$@" >"$log" 2>&1
  local rc=$?
  case $rc in
    0) passed=$((passed + 1)); echo "PASS $name" ;;
    77) skipped=$((skipped + 1)); echo "SKIP $name: $(tail -n 1 "$log")" ;;
    *) failed=$((failed + 1)); failures+=("$name"); echo "FAIL $name (exit $rc)"; sed 's/^/    /' "$log" | tail -n 40 ;;
  esac
  rm -f "$log"
}
for bin in "$@"; do run_one "$(basename "$bin")" "$bin"; done
for script in tests/integration/*.sh; do
  [ -e "$script" ] || continue
  run_one "$(basename "$script")" bash "$script"
done
echo "${passed} passed, ${failed} failed, ${skipped} skipped"
[ "$failed" -eq 0 ]
