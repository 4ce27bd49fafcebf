#!/usr/bin/env bash
# The tree as docs/design/layout.md says it is: every file it names exists and every source file
# is named; no source file over 800 lines nor function over 100; no path or sl_ name cited in
# code comments, docs or scripts that the tree does not have (tests/lib/tree_check.py says how).
set -u
cd "$(dirname "$0")/../.."
source tests/lib/common.sh
[ -x "$PY" ] || skip "python3 is missing (scripts/install-deps.sh --with-torch)"
"$PY" tests/lib/tree_check.py
