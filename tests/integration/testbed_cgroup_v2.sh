#!/usr/bin/env bash
# scripts/testbed's two cgroup paths (v1: cpu.cfs_quota_us; v2: cpu.max), on a machine that may
# offer only one of them:
#   - detection here: `up` picks what /proc/self/mounts says this machine has (v1's cpu
#     hierarchy at /sys/fs/cgroup/cpu, or cgroup v2 with "cpu" at /sys/fs/cgroup);
#   - a real cgroup2 mount (in a private mount namespace; the machine's mounts are untouched):
#     where it offers "cpu", `up` uses it; where it does not (cpu bound to a v1 hierarchy, as on
#     our CI machines), `up` refuses with one line that says why and how to fix it, and creates
#     nothing; likewise a hybrid layout whose unified hierarchy lacks "cpu", and a folder with no
#     cgroups at all;
#   - the v2 branch's writes, against a folder laid out as a cgroup v2 root with "cpu" (plain
#     files: the kernel does not check them here): cpu.max "QUOTA PERIOD" per slot and per
#     devices<n>, +cpu in cgroup.subtree_control at every level above them, cpu.weight of the
#     testbed's cgroup, no v1 file; status, exec, the agents and the Slurm TaskProlog write
#     their process ids into the v2 layout's cgroup.procs;
#   - with --slurm, slurmd sees a cgroup2 /sys/fs/cgroup (a private mount namespace again) and
#     starts (the testbed's cgroup.conf sets Slurm's own plugin to v1, which creates nothing).
# What the kernel does with cpu.max is tested only where the machine's v2 hierarchy has "cpu";
# docs/design/testbed.md says what was tested where. Needs what testbed_up_down.sh needs and
# unshare (util-linux): skips (77) if not.
set -u
cd "$(dirname "$0")/../.."
source tests/lib/common.sh
need_testbed
need_tool unshare "util-linux"
export SAILOR_TESTBED_STATE=$work/state OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
desc=$work/tb.json
cat >"$desc" <<'JSON'
{"schema": "sailor.testbed/1", "name": "tbcg", "subnet": "10.86.0.0/16",
 "classes": {"cpu-fast": {"cpu_cores": 0.5}, "cpu-tiny": {"cpu_cores": 0.05}},
 "links": {"zone": {"bandwidth_mbit": 400, "latency_ms": 0.1}, "region": {"bandwidth_mbit": 100, "latency_ms": 2},
           "world": {"bandwidth_mbit": 20, "latency_ms": 20}},
 "zones": [{"name": "us-central1-a", "hosts": [{"name": "a0", "class": "cpu-fast", "slots": 2}]},
           {"name": "us-west1-b", "hosts": [{"name": "w0", "class": "cpu-tiny", "slots": 1}]}]}
JSON
nothing_up() { ! grep -q "^sailor-tbcg-" <<<"$(ip netns list)" && [ ! -e "$work/state/tbcg" ]; }
# up_here ROOT OUT: `up` with cgroups under ROOT (stdout and stderr in OUT); exit status
up_here() {
	local rc=0
	SAILOR_TESTBED_CGROUP_ROOT=$1 timeout 60 scripts/testbed up "$desc" >"$2" 2>&1 || rc=$?
	case $rc in 0 | 124 | 137) at_exit "SAILOR_TESTBED_CGROUP_ROOT='$1' scripts/testbed down '$desc' >/dev/null 2>&1" ;; esac
	return $rc
}

# --- detection on this machine ----------------------------------------------------------------
mounts=$(cat /proc/self/mounts)
if grep -Eq "^[^ ]+ /sys/fs/cgroup cgroup2 " <<<"$mounts" && grep -qw cpu /sys/fs/cgroup/cgroup.controllers; then
	want="v2 /sys/fs/cgroup"
elif grep -Eq "^[^ ]+ /sys/fs/cgroup/cpu[a-z,]* cgroup [^ ]*,cpu[, ]" <<<"$mounts"; then
	want="v1 /sys/fs/cgroup/cpu"
elif grep -Eq "^[^ ]+ /sys/fs/cgroup/unified cgroup2 " <<<"$mounts" && grep -qw cpu /sys/fs/cgroup/unified/cgroup.controllers; then
	want="v2 /sys/fs/cgroup/unified"
else
	want=none
fi
echo "this machine: $want"
if [ "$want" = none ]; then
	check "up refuses where no cpu controller is mounted" '! up_here /sys/fs/cgroup "$work/up0" && [ "$(wc -l <"$work/up0")" -eq 1 ] && nothing_up'
else
	up_here /sys/fs/cgroup "$work/up0" || { cat "$work/up0"; die "up with the machine's cgroups"; }
	check "up picks the machine's cgroups: $want" 'grep -q "up, 2 hosts, cgroup ${want% *} at .${want#* }." "$work/up0"'
	check "status names them" 'grep -q "cgroups: ${want% *}, ${want#* }/sailor-testbed/tbcg$" <<<"$(scripts/testbed status "$desc")"'
	check "exec runs in the devices cgroup" 'grep -q "sailor-testbed/tbcg/a0/devices2" <<<"$(scripts/testbed exec "$desc" a0 --devices 2 -- cat /proc/self/cgroup)"'
	timeout 60 scripts/testbed down "$desc" >/dev/null
	check "down removes it" 'nothing_up && [ ! -d "${want#* }/sailor-testbed/tbcg" ]'
fi

# --- a real cgroup2 mount, in a private mount namespace ----------------------------------------
# the commands after "--" run there, with $1 a cgroup2 mount (removed with the namespace)
in_cgroup2() {
	mkdir -p "$work/cg2"
	unshare -m --propagation private bash -c 'mount -t cgroup2 none "$1" || exit 99; shift; "$@"' _ "$work/cg2" "$@"
}
in_cgroup2 cat "$work/cg2/cgroup.controllers" >"$work/cg2-controllers" ||
	die "cannot mount cgroup2 in a private mount namespace (unshare -m; mount -t cgroup2)"
echo "a cgroup2 mount here offers: $(cat "$work/cg2-controllers")"
if grep -qw cpu "$work/cg2-controllers"; then
	# a machine whose v2 hierarchy has cpu: the v2 path ran above on the machine's own cgroups
	echo "the cgroup2 mount has cpu: the refusal is not reachable with a real mount here"
else
	in_cgroup2 bash -c 'SAILOR_TESTBED_CGROUP_ROOT=$0 timeout 60 scripts/testbed up "$1"; echo "exit $?"; ls "$0"' "$work/cg2" "$desc" >"$work/up1" 2>"$work/up1.err"
	cat "$work/up1.err"
	check "cgroup2 without cpu: up exits 1" 'grep -qx "exit 1" "$work/up1"'
	check "cgroup2 without cpu: one line that says so, what it has, and how to fix it" '[ "$(wc -l <"$work/up1.err")" -eq 1 ] &&
		grep -q "^testbed: cgroup v2 at .$work/cg2. without the cpu controller delegated (its controllers: $(cat "$work/cg2-controllers")), so device classes (cpu.max) cannot be emulated: " "$work/up1.err"'
	h=$(awk '$1 == "cpu" { print $2 }' /proc/cgroups)
	if [ "$h" != 0 ]; then
		check "cgroup2 without cpu: names the v1 hierarchy holding cpu and the boot option" 'grep -q "bound to a cgroup v1 hierarchy (hierarchy $h in /proc/cgroups).*systemd.unified_cgroup_hierarchy=1" "$work/up1.err"'
	else
		check "cgroup2 without cpu: says how to delegate it" 'grep -q "echo +cpu > PARENT/cgroup.subtree_control" "$work/up1.err"'
	fi
	check "cgroup2 without cpu: nothing created (no namespace, state or cgroup)" 'nothing_up && ! grep -q sailor-testbed "$work/up1"'
	# hybrid: v1 hierarchies (here none holds cpu) beside the unified one at ROOT/unified
	mkdir -p "$work/hybrid/unified"
	in_cgroup2 bash -c 'mount --bind "$0" "$1/unified" && SAILOR_TESTBED_CGROUP_ROOT=$1 timeout 60 scripts/testbed up "$2"' \
		"$work/cg2" "$work/hybrid" "$desc" >/dev/null 2>"$work/up2.err"
	check "hybrid without cpu anywhere: up names the unified hierarchy" '[ "$(wc -l <"$work/up2.err")" -eq 1 ] &&
		grep -q "^testbed: cgroup v2 at .$work/hybrid/unified. without the cpu controller delegated" "$work/up2.err" && nothing_up'
fi
mkdir -p "$work/empty"
check "no cgroups under the root: one line naming both" '! up_here "$work/empty" "$work/up3" && [ "$(wc -l <"$work/up3")" -eq 1 ] &&
	grep -q "^testbed: no cgroup hierarchy under .$work/empty.: neither cgroup v2 (.*cgroup.controllers.) nor cgroup v1.s cpu hierarchy" "$work/up3" && nothing_up'

# --- the v2 branch's writes, against a v2 root laid out in a folder -----------------------------
v2=$work/v2root
mkdir -p "$v2"
echo "cpuset cpu io memory pids" >"$v2/cgroup.controllers"
: >"$v2/cgroup.subtree_control"
# the test's own stand-in: the processes it records are the test's, and gone; `down` then finds
# no process to end and plain folders it cannot rmdir (it warns), so the test removes them
forget_procs() { find "$v2" -name cgroup.procs -exec truncate -s 0 {} +; }
up_here "$v2" "$work/up4" || { cat "$work/up4"; die "up with a cgroup v2 root"; }
at_exit forget_procs
t=$v2/sailor-testbed
check "v2: up says so" 'grep -q "up, 2 hosts, cgroup v2 at .$v2." "$work/up4"'
check "v2: +cpu for the root's children" 'grep -qx "+cpu" "$v2/cgroup.subtree_control"'
check "v2: +cpu at every level above the devices" '(for f in "$t" "$t/tbcg" "$t/tbcg/a0" "$t/tbcg/w0"; do grep -qx "+cpu" "$f/cgroup.subtree_control" || exit 1; done)'
check "v2: no controller below the leaves (processes live there)" '[ -z "$(find "$t/tbcg/a0" "$t/tbcg/w0" -mindepth 2 -name cgroup.subtree_control)" ]'
check "v2: the testbed's weight" '[ "$(cat "$t/cpu.weight")" = 10000 ]'
check "v2: a half-core slot: cpu.max 5000 10000" '[ "$(cat "$t/tbcg/a0/slot0/cpu.max")" = "5000 10000" ] && [ "$(cat "$t/tbcg/a0/slot1/cpu.max")" = "5000 10000" ]'
check "v2: two half-core devices: cpu.max 10000 10000" '[ "$(cat "$t/tbcg/a0/devices2/cpu.max")" = "10000 10000" ]'
check "v2: a twentieth of a core: the kernel's least quota, 1000 us" '[ "$(cat "$t/tbcg/w0/slot0/cpu.max")" = "1000 10000" ]'
check "v2: the daemon cgroup has no quota" '[ ! -e "$t/tbcg/a0/daemon/cpu.max" ]'
check "v2: no v1 file" '[ -z "$(find "$v2" -name "cpu.cfs_*" -o -name cpu.shares)" ]'
check "v2: status names the cgroups and the quota" 'scripts/testbed status "$desc" >"$work/st4" && grep -q "cgroups: v2, $t/tbcg" "$work/st4" && grep -q "w0: 1 devices of class cpu-tiny, cgroups $t/tbcg/w0/slot<i>, quota/period 1000 10000" "$work/st4"'
check "v2: exec writes its pid into devices<n>/cgroup.procs" 'pid=$(scripts/testbed exec "$desc" a0 --devices 2 -- sh -c "echo \$\$") && grep -qx "$pid" "$t/tbcg/a0/devices2/cgroup.procs"'
# mpirun through the agents: the daemon into a0/daemon, each rank into its slot
printf '10.86.1.2 slots=2\n' >"$work/hostfile"
agent=$SAILOR_TESTBED_STATE/tbcg/agent
timeout 30 mpirun -np 2 --hostfile "$work/hostfile" --bind-to none --mca plm_rsh_agent "$agent" \
	--mca btl self,vader,tcp --mca btl_tcp_if_include 10.86.0.0/16 --mca oob_tcp_if_include 10.86.0.0/16 \
	--mca orte_fork_agent "$SAILOR_TESTBED_STATE/tbcg/slot-agent" \
	sh -c 'echo "$OMPI_COMM_WORLD_LOCAL_RANK $$"' >"$work/ranks" 2>&1 || echo "mpirun failed" >&2
cat "$work/ranks"
check "v2: the agent joins the host's daemon cgroup" '[ -s "$t/tbcg/a0/daemon/cgroup.procs" ]'
check "v2: the slot agent puts local rank i in slot i" '(while read -r r p; do grep -qx "$p" "$t/tbcg/a0/slot$r/cgroup.procs" || exit 1; done <"$work/ranks") && [ "$(wc -l <"$work/ranks")" -eq 2 ]'
forget_procs
timeout 60 scripts/testbed down "$desc" >/dev/null 2>"$work/down4.err"
check "v2: down removes namespaces and state" 'nothing_up && ! mountpoint -q "$work/state/tbcg/cgroup" 2>/dev/null'
rm -rf --one-file-system "$v2/sailor-testbed"

# --- the Slurm testbed over a cgroup2 /sys/fs/cgroup ---------------------------------------------
missing=""
for c in munged slurmctld slurmd scontrol sinfo srun; do command -v $c >/dev/null || missing+=" $c"; done
if [ -n "$missing" ]; then
	echo "skipped: the Slurm testbed on cgroup v2 (missing:$missing; scripts/install-deps.sh installs slurm-wlm and munge)"
else
	mkdir -p "$v2"
	echo "cpuset cpu io memory pids" >"$v2/cgroup.controllers"
	: >"$v2/cgroup.subtree_control"
	# in one private mount namespace: /sys/fs/cgroup a cgroup2 mount (slurmd's view of the
	# machine), the testbed's cgroups in the v2 layout, a step of two tasks on a0, down
	unshare -m --propagation private bash -c '
		v2=$0 desc=$1 out=$2
		mount -t cgroup2 none /sys/fs/cgroup || { echo "cannot mount cgroup2"; exit 1; }
		export SLURM_CONF=$SAILOR_TESTBED_STATE/tbcg/slurm/slurm.conf
		rc=0
		SAILOR_TESTBED_CGROUP_ROOT=$v2 timeout 120 scripts/testbed up "$desc" --slurm >"$out/up5" 2>&1 || rc=$?
		if [ $rc -eq 0 ]; then
			for p in "$SAILOR_TESTBED_STATE"/tbcg/slurm/run/slurmd-*.pid; do
				grep " /sys/fs/cgroup " "/proc/$(cat "$p")/mounts"
			done >"$out/slurmd-mounts"
			cat "$SAILOR_TESTBED_STATE"/tbcg/slurm/run/slurmd-*.pid >"$out/slurmd-pids"
			timeout 30 srun -p tbcg -w a0 -n 2 sh -c "echo \$SLURM_LOCALID \$\$" >"$out/tasks" 2>&1
			for i in 0 1; do cp "$v2/sailor-testbed/tbcg/a0/slot$i/cgroup.procs" "$out/slurm-slot$i"; done
			cat "$SAILOR_TESTBED_STATE"/tbcg/slurm/log/slurmd-*.log >"$out/slurmd-logs" 2>&1
		fi
		find "$v2" -name cgroup.procs -exec truncate -s 0 {} +
		[ $rc -eq 124 ] || [ $rc -eq 137 ] || [ $rc -eq 0 ] && timeout 60 scripts/testbed down "$desc" >/dev/null 2>&1
		exit $rc' "$v2" "$desc" "$work" || { cat "$work/up5"; fail "up --slurm with a cgroup2 /sys/fs/cgroup"; }
	cat "$work/tasks" 2>/dev/null
	check "slurm: up runs no Slurm command before its slurm.conf is whole" '! grep -q "^scontrol:" "$work/up5"'
	check "slurm: every slurmd saw a cgroup2 /sys/fs/cgroup" '[ "$(grep -c " /sys/fs/cgroup cgroup2 " "$work/slurmd-mounts")" -eq 2 ]'
	check "slurm: the TaskProlog puts task i in slot i of the v2 layout" '(while read -r r p; do grep -qx "$p" "$work/slurm-slot$r" || exit 1; done <"$work/tasks") && [ "$(wc -l <"$work/tasks")" -eq 2 ]'
	check "slurm: down removes namespaces, daemons and state" 'nothing_up && (while read -r p; do ! kill -0 "$p" 2>/dev/null || exit 1; done <"$work/slurmd-pids")'
	rm -rf --one-file-system "$v2/sailor-testbed"
fi
finish
