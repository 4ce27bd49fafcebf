#!/usr/bin/env bash
# Builds bench/testbed/pass_cold_cost.c against the project's library, for pass_cold_cost.sh and
# throttle_cost.sh (the stage is built as the runtime builds it, so it links libsailor.a).
#
# usage: bench/testbed/pass_cold_cost_build.sh OUT_BINARY   (run from anywhere)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
[ $# -eq 1 ] || { sed -n '2,5p' "$0" >&2; exit 2; }
out=$1
cd "$here"
make -s build/libsailor.a
cc -O2 -std=c11 -D_GNU_SOURCE -Isrc $(pkg-config --cflags openblas 2>/dev/null) \
	-o "$out" bench/testbed/pass_cold_cost.c build/libsailor.a -ljansson \
	$(pkg-config --libs openblas 2>/dev/null || echo -lopenblas) -fopenmp -lpthread -lm
