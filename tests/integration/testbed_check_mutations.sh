#!/usr/bin/env bash
# A bounded mutation test of `scripts/testbed check`, the testbed's validation-only entry point
# (the checks `up` runs before it creates anything). testbed_mutate.py writes hostile variants
# of the shipped descriptions (data/testbed/*.json; structural and byte-level mutations from a
# fixed seed, TESTBED_MUTATIONS of them, default 300) with a verdict from an independent Python
# reading of the rules. For each variant:
#   - the exit status is 0 or 1, never a jq or bash error status;
#   - exit 0: one line on stdout ("... a valid description ..."), nothing on stderr, and the
#     Python reading says valid as well;
#   - exit 1: nothing on stdout and exactly one line on stderr, "testbed: 'FILE': " then
#     "path: message" (or the JSON parser's "not valid JSON (...)"), never a jq error, a bash
#     error or the "cannot be checked" fallback; and the Python reading says invalid;
#   - nothing is created: the state folder ($SAILOR_TESTBED_STATE) stays absent and no
#     network namespace of the name appears.
# Needs jq and python3, not root.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/lib/common.sh
need_tool jq
need_python
export SAILOR_TESTBED_STATE=$work/state
count=${TESTBED_MUTATIONS:-300}
mkdir -p "$work/m"
"$PY" tests/integration/testbed_mutate.py "$work/m" "$count" data/testbed/geo3.json || exit 1
# namespaces are compared by name: a testbed someone else has up on this machine may come and go
sailor_netns() { (ip netns list 2>/dev/null || true) | awk '/^sailor-/ {print $1}' | sort; }
sailor_netns >"$work/netns-before"
accepted=0 refused=0
fail_mutant() { # file, why
	echo "FAIL $1 ($(grep -F "$1" "$work/m/verdicts" | cut -f3)): $2"
	sed -n '1,5s/^/    stderr: /p' "$work/err"
	sed -n '1,3s/^/    stdout: /p' "$work/out"
	failures=$((failures + 1))
}
while IFS=$'\t' read -r name want what; do
	f=$work/m/$name
	scripts/testbed check "$f" >"$work/out" 2>"$work/err"
	rc=$?
	lines_err=$(wc -l <"$work/err") lines_out=$(wc -l <"$work/out")
	case $rc in
	0)
		accepted=$((accepted + 1))
		[ "$lines_out" -eq 1 ] && [ ! -s "$work/err" ] && grep -q "a valid description" "$work/out" ||
			{ fail_mutant "$name" "exit 0 without exactly one line of answer"; continue; }
		[ "$want" != invalid ] || fail_mutant "$name" "accepted, but it breaks the documented rules"
		;;
	1)
		refused=$((refused + 1))
		if [ -s "$work/out" ] || [ "$lines_err" -ne 1 ]; then
			fail_mutant "$name" "refused with $lines_err lines on stderr and $lines_out on stdout"
		elif grep -qE "jq: error|cannot be checked|line [0-9]+:|command not found|unbound variable" "$work/err"; then
			fail_mutant "$name" "refused by an error of the script, not by a check"
		elif ! grep -qE "^testbed: '$f': (.+: .+|not valid JSON \(.+\)|[0-9]+ bytes; .+)\$" "$work/err"; then
			fail_mutant "$name" "the refusal is not one 'path: message' line"
		elif [ "$want" = valid ]; then
			fail_mutant "$name" "refused, but it keeps the documented rules"
		fi
		;;
	*) fail_mutant "$name" "exit $rc (want 0 or 1)" ;;
	esac
done <"$work/m/verdicts"
[ ! -e "$SAILOR_TESTBED_STATE" ] || { echo "FAIL: check created $SAILOR_TESTBED_STATE"; failures=$((failures + 1)); }
# a namespace that appeared and is named for one of the mutants' testbeds came from `check`
sailor_netns | comm -13 "$work/netns-before" - >"$work/netns-new"
jq -r '.name? // empty' "$work"/m/*.json 2>/dev/null | sort -u | sed 's/^/sailor-/; s/$/-/' >"$work/mutant-prefixes"
if [ -s "$work/mutant-prefixes" ] && grep -qFf "$work/mutant-prefixes" "$work/netns-new"; then
	echo "FAIL: network namespaces appeared: $(grep -Ff "$work/mutant-prefixes" "$work/netns-new" | tr '\n' ' ')"
	failures=$((failures + 1))
fi
echo "$count mutants: $accepted accepted, $refused refused, $failures failures"
finish
