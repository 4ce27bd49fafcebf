#!/usr/bin/env bash
# Replays the fuzz regression corpus: every input that ever made a fuzz target fail
# (fuzz/corpus-regression/<target>/) runs through the same entry point again, with the replay
# binaries $BUILD/fuzz-replay/<target> that `make test` builds with the normal compiler (under
# `make check`, with ASan + UBSan). A crash, a sanitizer report or a broken invariant fails.
# Each input must also finish within 10 s: several were inputs that took minutes.
# The committed seeds (fuzz/seeds/<target>/) are replayed the same way, so every target runs in
# `make test` (the invariants a target checks on accepted inputs included) even before it has
# a finding of its own.
set -u
cd "$(dirname "$0")/../.."
source tests/lib/common.sh
build=${BUILD:-build}
inputs=0
for dir in fuzz/corpus-regression/*/ fuzz/seeds/*/; do
	t=$(basename "$dir")
	bin=$build/fuzz-replay/$t
	if [ ! -x "$bin" ]; then
		echo "FAIL: $bin is missing (make test builds it)" >&2
		failures=$((failures + 1))
		continue
	fi
	for f in "$dir"*; do
		[ -f "$f" ] || continue
		inputs=$((inputs + 1))
		if ! timeout 10 "$bin" "$f" >/dev/null 2>"$build/fuzz-replay/last.err"; then
			echo "FAIL: $t $f:" >&2
			tail -n 15 "$build/fuzz-replay/last.err" >&2
			failures=$((failures + 1))
		fi
	done
done
echo "$inputs regression inputs and seeds replayed, $failures failed"
finish
