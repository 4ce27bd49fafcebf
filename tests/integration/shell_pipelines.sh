#!/usr/bin/env bash
# No shell pipeline in the project's scripts ends in a reader that may stop before its writer is
# done (`| grep -q`, `| grep -m N`, `| head`, `| sed -n '...q'`, `| awk '...exit...'`): the writer
# then dies of SIGPIPE, and under `set -o pipefail` the pipeline fails or not depending on timing
# (a flaky test, a check that misses a rank). Write `grep -q PATTERN <<<"$(cmd)"`, `grep -m 1
# PATTERN FILE`, `sed -n 1p` instead: they read all their input. A reader on the next line of a
# continued pipeline is caught too.
set -u
cd "$(dirname "$0")/../.."
reader='(grep[[:space:]]+(-[a-zA-Z]*[qm]|--quiet|--max-count)|head\b|sed[[:space:]]+-n[^|]*q|awk[^|]*\bexit\b)'
mapfile -t files < <(find tests bench scripts .ci -type f \( -name '*.sh' -o -path scripts/testbed \
	-o -path .ci/run \) ! -name shell_pipelines.sh | sort)  # not this file: it names the readers
[ "${#files[@]}" -gt 20 ] || { echo "FAIL: found only ${#files[@]} shell scripts to check"; exit 1; }
found=$({ grep -nE "(^|[^|])\|[[:space:]]*$reader" "${files[@]}"
	grep -nE -A1 '(^|[^|])\|[[:space:]]*\\?$' "${files[@]}" | grep -E "^[^:]+-[0-9]+-[[:space:]]*$reader"
	} | grep -vE '^[^:]+[:-][0-9]+[:-][[:space:]]*#')
if [ -n "$found" ]; then
	echo "FAIL: pipelines whose reader may stop before the writer (SIGPIPE under pipefail):"
	printf '%s\n' "$found"
	exit 1
fi
echo "ok   ${#files[@]} shell scripts: no pipeline ends in a reader that stops early"
