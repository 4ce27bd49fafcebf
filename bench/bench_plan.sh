#!/usr/bin/env bash
# Planner benchmark (see bench/bench_plan.py): quality and speed against the SOSP'25 planner,
# the benchmark pool set (bench/plan_pools), and growth of search time. Uses whichever python3 is
# on PATH (standard library only).
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 bench/bench_plan.py --sailor "${SAILOR:-./sailor}" "$@"
