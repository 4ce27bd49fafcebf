#!/usr/bin/env bash
# Runs each benchmark binary given as an argument, then each bench/*.sh script.
# Benchmarks print figures; they never fail on speed, only on a broken run.
set -eu
cd "$(dirname "$0")/.."
for bin in "$@"; do echo "== $(basename "$bin")"; "$bin"; done
for script in bench/*.sh; do
  [ "$script" = bench/run.sh ] && continue
  [ -e "$script" ] || continue
  echo "== $(basename "$script")"; bash "$script"
done
