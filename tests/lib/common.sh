# The set-up every integration script shares (tests/integration/*.sh); source it from the
# repository root, where tests/run.sh starts each script:
#   source tests/lib/common.sh
# It checks SAILOR, defines how a script skips (exit 77, saying why), makes its work folder and
# removes it at exit, lets OpenMPI run as root, counts failures, and states the expectation
# about bad input once: exit status, the message on stderr, nothing on stdout.
: "${SAILOR:?set SAILOR to the sailor binary}"
export SAILOR
PY=/usr/bin/python3
failures=0

# skip WHY...: the test cannot run here (a prerequisite is missing); tests/run.sh counts it
skip() { echo "$*"; exit 77; }

# need_tool NAME [HOW]: skips unless NAME is on PATH; HOW says how to get it
need_tool() {
	command -v "$1" >/dev/null || skip "$1 is missing (${2:-scripts/install-deps.sh installs it})"
}

# need_python MODULE...: skips unless /usr/bin/python3 imports every MODULE
need_python() {
	[ -x "$PY" ] || skip "python3 is missing (scripts/install-deps.sh --with-torch)"
	local m
	for m in "$@"; do
		"$PY" -c "import $m" 2>/dev/null ||
			skip "python3-$m is missing (scripts/install-deps.sh --with-torch)"
	done
}

# need_root: skips unless root (network namespaces, cgroups, daemons)
need_root() { [ "$(id -u)" -eq 0 ] || skip "needs root"; }

# need_testbed: skips unless scripts/testbed can run here: root, its tools, and a network
# namespace this script may create (and removes at once)
need_testbed() {
	[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces, tc, cgroups)"
	local c
	for c in ip tc jq mpirun timeout; do
		command -v "$c" >/dev/null || skip "$c is missing (scripts/install-deps.sh)"
	done
	ip netns add sailor-tbprobe 2>/dev/null || skip "cannot create network namespaces here"
	ip netns del sailor-tbprobe
}

# use_mpi: skips without mpirun; lets OpenMPI run as root and with more ranks than cores
use_mpi() {
	need_tool mpirun "scripts/install-deps.sh installs openmpi-bin"
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	export OMPI_MCA_rmaps_base_oversubscribe=1
}

# The work folder, removed at exit after the clean-ups a script registered with at_exit
# (they run last registered first, so a testbed is taken down before its folder goes).
work=$(mktemp -d)
exit_steps=()
at_exit() { exit_steps=("$1" "${exit_steps[@]}"); }
run_exit_steps() {
	local step
	for step in "${exit_steps[@]}"; do eval "$step" || true; done
	# never through a mount a test made (a testbed's cgroup bind mount), should its `down` fail
	rm -rf --one-file-system "$work"
}

# kill_work_processes: SIGKILL to every process whose command line names $work (a run's ranks,
# launchers and daemons, which name the run's files); only with $work a folder mktemp made
# (".../tmp.XXXXXXXXXX" under any TMPDIR), so an empty or stray value can never widen the match
kill_work_processes() {
	case "$work" in
	/*/tmp.??????*) [ -d "$work" ] && pkill -9 -f -- "$work/" 2>/dev/null ;;
	esac
	return 0
}
trap run_exit_steps EXIT

# fail WHY...: records a failure and goes on (finish reports); die WHY...: fails at once
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
die() { echo "FAIL: $*"; exit 1; }

# check NAME CONDITION: evaluates CONDITION (a shell expression), prints ok or FAIL
# sanitized: whether $SAILOR is built with AddressSanitizer (`make check`): its allocator keeps
# freed memory in quarantine, so a process's resident size says nothing of what a user's build
# keeps; assertions about resident memory run in `make test` and are skipped here, saying so
sanitized() { grep -q 'libasan' <<<"$(ldd "$SAILOR" 2>/dev/null)"; }

check() {
	if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; failures=$((failures + 1)); fi
}

# expect_error NAME STATUS TEXT -- COMMAND...: COMMAND exits STATUS with TEXT (a fixed string)
# on stderr and prints nothing on stdout. expect_error_re: the same with TEXT an extended regex.
expect_error() { expect_error_match -F "$@"; }
expect_error_re() { expect_error_match -E "$@"; }
expect_error_match() {
	local how=$1 name=$2 want=$3 text=$4
	shift 4
	[ "$1" = "--" ] && shift
	timeout 60 "$@" >"$work/expect.out" 2>"$work/expect.err"
	local got=$?
	if [ "$got" -ne "$want" ] || ! grep -q "$how" -- "$text" "$work/expect.err" ||
		[ -s "$work/expect.out" ]; then
		echo "FAIL $name: exit $got (want $want), stdout $(wc -c <"$work/expect.out") bytes, stderr:"
		sed -n '1,8s/^/    /p' "$work/expect.err"
		echo "    (wanted '$text')"
		failures=$((failures + 1))
	else
		echo "ok   $name: $(grep -m 1 "$how" -- "$text" "$work/expect.err")"
	fi
}

# tokens FILE: a token file of the shipped text (byte tokenizer) for training runs
tokens() { "$SAILOR" data data/text/fsf-licenses.txt -o "$1" >/dev/null || die "sailor data failed"; }

# train_reference OUT ARGS...: the single-process run a distributed one is compared with: one
# thread, JSON step lines in OUT
train_reference() {
	local out=$1
	shift
	"$SAILOR" train "$@" --threads 1 --json >"$out" || die "reference sailor train failed"
}

# finish: the script's exit status: 0 when nothing failed
finish() {
	[ "$failures" -eq 0 ] || { echo "$failures failed"; exit 1; }
	exit 0
}
