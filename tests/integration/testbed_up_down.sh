#!/usr/bin/env bash
# scripts/testbed on this machine: `up` creates a namespace per host with its address, a shaped
# eth0 and a cgroup per device class, and writes a cluster file; `up` again is harmless; mpirun
# reaches ranks inside the namespaces through the agent (each rank sees its host's address and
# runs in its class's cgroup); `down` removes everything; an `up` that fails half-way leaves
# nothing behind. Needs root, network namespaces, tc, cgroups, jq and mpirun: skips (77) if not.
set -u
cd "$(dirname "$0")/../.."
source tests/lib/common.sh
need_testbed
export SAILOR_TESTBED_STATE=$work/state
desc=$work/tb.json
cat >"$desc" <<'JSON'
{"schema": "sailor.testbed/1", "name": "tbud", "subnet": "10.78.0.0/16",
 "classes": {"cpu-fast": {"cpu_cores": 1}, "cpu-slow": {"cpu_cores": 0.5}},
 "links": {"zone": {"bandwidth_mbit": 400, "latency_ms": 0.1}, "region": {"bandwidth_mbit": 100, "latency_ms": 2},
           "world": {"bandwidth_mbit": 20, "latency_ms": 20}},
 "zones": [{"name": "us-central1-a", "region": "us-central1",
            "hosts": [{"name": "a0", "class": "cpu-fast", "slots": 2}, {"name": "a1", "class": "cpu-fast", "slots": 1}]},
           {"name": "us-west1-b", "region": "us-west1", "hosts": [{"name": "w0", "class": "cpu-slow", "slots": 1}]}]}
JSON
# never remove through the testbed's cgroup bind mount should `down` fail
# only the testbed this test brings up is taken down at exit (down finds namespaces by name); a
# failed up removes what it made itself
up_status=0
timeout 60 scripts/testbed up "$desc" -o "$work/cluster.json" 2>"$work/err" || up_status=$?
case $up_status in 0 | 124 | 137) at_exit 'scripts/testbed down "$desc" >/dev/null 2>&1' ;; esac
[ "$up_status" -eq 0 ] || { cat "$work/err"; exit 1; }
check "three namespaces" '[ "$(ip netns list | grep -c "^sailor-tbud-")" -eq 3 ]'
check "w0 has 10.78.2.2" 'grep -q " 10.78.2.2/16" <<<"$(ip -n sailor-tbud-w0 -o -4 addr show dev eth0)"'
check "a0 shapes traffic to us-west1-b at 20 Mbit" 'grep -q "1:11 .*rate 20Mbit" <<<"$(ip netns exec sailor-tbud-a0 tc class show dev eth0)"'
check "status says up" 'scripts/testbed status "$desc" >"$work/status" && grep -q "w0  10.78.2.2" "$work/status"'
check "cluster file" 'jq -e ".schema == \"sailor.cluster/1\" and (.hosts | length) == 3 and .hosts[2].gpu == \"cpu-slow\" and .hosts[2].zone == \"us-west1-b\" and (.launch.agent | test(\"agent$\"))" "$work/cluster.json" >/dev/null'
check "up again is harmless" 'grep -q "already up" <<<"$(scripts/testbed up "$desc" 2>/dev/null)" && [ "$(ip netns list | grep -c "^sailor-tbud-")" -eq 3 ]'

# mpirun through the agent: one rank on a0 and one on w0
printf '10.78.1.2 slots=1\n10.78.2.2 slots=1\n' >"$work/hostfile"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
agent=$(jq -r .launch.agent "$work/cluster.json")
mapfile -t margs < <(jq -r '.launch.mpirun_args[]' "$work/cluster.json")
timeout 30 mpirun -np 2 --hostfile "$work/hostfile" --map-by node --bind-to none --mca plm_rsh_agent "$agent" \
  "${margs[@]}" sh -c 'echo "rank $OMPI_COMM_WORLD_RANK $(ip -o -4 addr show dev eth0 | awk "{print \$4}") $(grep -m 1 -E ":cpu(,cpuacct)?:|^0::" /proc/self/cgroup)"' \
  >"$work/ranks" 2>&1 || echo "mpirun failed" >&2
cat "$work/ranks"
check "rank on a0 runs in its namespace and on its own device (slot cgroup)" 'grep -Eq "^rank [01] 10.78.1.2/16 .*sailor-testbed/tbud/a0/slot0" "$work/ranks"'
check "rank on w0 runs in its namespace and on its own device (slot cgroup)" 'grep -Eq "^rank [01] 10.78.2.2/16 .*sailor-testbed/tbud/w0/slot0" "$work/ranks"'
check "a device of class cpu-slow has its quota" 'q=$(cat /sys/fs/cgroup/cpu/sailor-testbed/tbud/w0/slot0/cpu.cfs_quota_us 2>/dev/null || cut -d" " -f1 /sys/fs/cgroup/sailor-testbed/tbud/w0/slot0/cpu.max); [ "$q" -gt 0 ]'
check "exec runs a command in the host's namespace with N devices" 'grep -q "sailor-testbed/tbud/a0/devices2" <<<"$(scripts/testbed exec "$desc" a0 --devices 2 -- sh -c "ip -o -4 addr show dev eth0; cat /proc/self/cgroup")"'
check "exec refuses more devices than the host has" '! scripts/testbed exec "$desc" a0 --devices 9 -- true 2>"$work/exec-err" && grep -q "has 2 devices" "$work/exec-err"'

timeout 60 scripts/testbed down "$desc" >/dev/null
check "down removes the namespaces" '! grep -q "^sailor-tbud-" <<<"$(ip netns list)"'
check "down removes the bridge and veths" '! grep -Eq "sltbud(br|h[0-9])" <<<"$(ip -o link show)"'
check "down removes the cgroups" '[ ! -d /sys/fs/cgroup/cpu/sailor-testbed/tbud ] && [ ! -d /sys/fs/cgroup/sailor-testbed/tbud ]'
check "status says down (exit 1)" '! scripts/testbed status "$desc" >/dev/null'
check "down again is harmless" 'scripts/testbed down "$desc" >/dev/null'

# a failure half-way (an interface of the second host's name is taken) leaves nothing behind
ip link add sltbudh1 type veth peer name sltbudx1
timeout 60 scripts/testbed up "$desc" >/dev/null 2>"$work/err"; rc=$?
check "failed up exits 1" '[ $rc -eq 1 ] && grep -q "up failed (the command above); removing what it created" "$work/err"'
check "failed up leaves no namespace" '! grep -q "^sailor-tbud-" <<<"$(ip netns list)"'
check "failed up leaves no bridge" '! grep -q "sltbudbr" <<<"$(ip -o link show)"'
ip link del sltbudh1 2>/dev/null || true; ip link del sltbudx1 2>/dev/null || true
finish
