#!/usr/bin/env bash
# Every command output that README.md and docs/**/*.md show is what the command prints today.
# A documented output is a fenced block without a language (or ```text) right after a ```sh block
# (blank lines between allowed). tests/lib/docs_outputs.py runs the sh block's commands from the
# repository root (`\` continuations joined, comment lines dropped, one `timeout` per command,
# `./sailor` replaced by $SAILOR, every /tmp path moved into this test's work folder, one folder
# per markdown file whose blocks run in file order and share it, OpenMPI allowed to run as root)
# and compares their stdout and stderr, combined, with the documented block: a documented line
# that is exactly `...` matches any number of lines, every other line must equal the output line
# at its place byte for byte, and the block's first and last lines are anchored to the output's
# first and last unless a `...` stands there. A model change that moves a figure shown in the
# docs therefore fails here until the docs show the new figure.
#
# The masking rule (tests/lib/docs_outputs.py, mask()): before the comparison these fields, and
# only these, are replaced by a placeholder in the documented and in the actual line, each found
# by its label or column, never by its value:
#   - `sailor train`/`run` step lines: the `ms/step` and `tokens/s` at the end (wall clock);
#   - their `done:` line: `median N ms/step (N tokens/s)` (wall clock) and `peak RSS N MiB`
#     (resident memory of the process, which varies run to run);
#   - `(OpenBLAS NAME)`: the CPU kernel OpenBLAS chose for the machine;
#   - `sailor train`/`run` held-out lines (`eval after step ...`): the evaluation's `ms` at the end;
#   - `sailor run`'s table under `time per step by stage (...; ms)`: every column of its rows but
#     the stage number (wall milliseconds measured by the ranks, and their peak RSS);
#   - `sailor plan`'s `search: N s, N plans simulated`: the search's wall time and how many plans
#     it simulated (its threads share a pruning bound, so the count depends on their timing).
# Planner, simulator, loss, learning-rate, gradient-norm, memory-accounting and cost figures are
# never masked. A block that cannot be checked at all needs a visible marker line
# `<!-- docs-output: not checked: WHY -->` above its ```sh fence; the test counts and names
# each. A mismatch prints FILE:LINE, the documented line and the actual one;
# `/usr/bin/python3 tests/lib/docs_outputs.py --sailor ./sailor --work DIR --show FILE.md`
# prints what the commands print now. About 45 s on this shared 2-core machine (sailor train's
# 60 steps in docs/train.md take most of it).
set -u
cd "$(dirname "$0")/../.."
source tests/lib/common.sh
[ -x "$PY" ] || skip "python3 is missing (scripts/install-deps.sh)"
need_tool timeout "coreutils"
use_mpi
# The docs show what a user's build prints (-O2). The sanitizer build of `make check` is -O1,
# whose floating-point rounding differs in the last digit of a training figure (a gradient
# norm 2.4907 for 2.4908): there the numbers of a line may differ by 1e-3 of their size.
rounding=()
if sanitized; then
	echo "note: $SAILOR is a sanitizer build: numbers compared within 1e-3 (make test compares them byte for byte)"
	rounding=(--rounding 1e-3)
fi
"$PY" tests/lib/docs_outputs.py --sailor "$SAILOR" --work "$work" --timeout 180 "${rounding[@]}" ||
	fail "a documented output differs from what the command prints (above)"
finish
