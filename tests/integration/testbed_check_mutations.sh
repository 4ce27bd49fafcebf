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
command -v jq >/dev/null || { echo "jq is missing (scripts/install-deps.sh installs it)"; exit 77; }
command -v python3 >/dev/null || { echo "python3 is missing"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export SAILOR_TESTBED_STATE=$work/state
count=${TESTBED_MUTATIONS:-300}
mkdir -p "$work/m"
python3 tests/integration/testbed_mutate.py "$work/m" "$count" data/testbed/geo3.json || exit 1
netns_before=$( (ip netns list 2>/dev/null || true) | grep -c '^sailor-' || true)
fails=0 accepted=0 refused=0
fail() { # file, why
	echo "FAIL $1 ($(grep -F "$1" "$work/m/verdicts" | cut -f3)): $2"
	sed 's/^/    stderr: /' "$work/err" | head -n 5
	sed 's/^/    stdout: /' "$work/out" | head -n 3
	fails=$((fails + 1))
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
			{ fail "$name" "exit 0 without exactly one line of answer"; continue; }
		[ "$want" != invalid ] || fail "$name" "accepted, but it breaks the documented rules"
		;;
	1)
		refused=$((refused + 1))
		if [ -s "$work/out" ] || [ "$lines_err" -ne 1 ]; then
			fail "$name" "refused with $lines_err lines on stderr and $lines_out on stdout"
		elif grep -qE "jq: error|cannot be checked|line [0-9]+:|command not found|unbound variable" "$work/err"; then
			fail "$name" "refused by an error of the script, not by a check"
		elif ! grep -qE "^testbed: '$f': (.+: .+|not valid JSON \(.+\)|[0-9]+ bytes; .+)\$" "$work/err"; then
			fail "$name" "the refusal is not one 'path: message' line"
		elif [ "$want" = valid ]; then
			fail "$name" "refused, but it keeps the documented rules"
		fi
		;;
	*) fail "$name" "exit $rc (want 0 or 1)" ;;
	esac
done <"$work/m/verdicts"
[ ! -e "$SAILOR_TESTBED_STATE" ] || { echo "FAIL: check created $SAILOR_TESTBED_STATE"; fails=$((fails + 1)); }
netns_after=$( (ip netns list 2>/dev/null || true) | grep -c '^sailor-' || true)
[ "$netns_after" = "$netns_before" ] || { echo "FAIL: network namespaces appeared"; fails=$((fails + 1)); }
echo "$count mutants: $accepted accepted, $refused refused, $fails failures"
[ "$fails" -eq 0 ]
