#!/usr/bin/env bash
# bench/testbed/reverse_load_probe.sh, what traffic the other way does to a shaped link
# (bench/RESULTS.md, 2026-11-28 (12)): on a small testbed of its own it times A -> B in all five
# modes and a ring over hosts given by name, prints a rate for each, and takes its testbed down;
# a testbed without a zone of two hosts, or a ring host it does not have, gets a message that
# names what to change. Needs root, network namespaces, tc, cgroups, jq, mpicc and mpirun.
set -u
cd "$(dirname "$0")/../.."
source tests/lib/common.sh
need_testbed
need_tool mpicc
export SAILOR_TESTBED_STATE=$work/state
desc=$work/rl.json
cat >"$desc" <<'JSON'
{"schema": "sailor.testbed/1", "name": "rlp", "subnet": "10.87.0.0/16",
 "classes": {"cpu-fast": {"cpu_cores": 1}},
 "links": {"zone": {"bandwidth_mbit": 400, "latency_ms": 0.1}, "region": {"bandwidth_mbit": 200, "latency_ms": 2},
           "world": {"bandwidth_mbit": 100, "latency_ms": 5}},
 "zones": [{"name": "us-central1-a", "region": "us-central1",
            "hosts": [{"name": "a0", "class": "cpu-fast", "slots": 1}, {"name": "a1", "class": "cpu-fast", "slots": 1}]},
           {"name": "us-west1-b", "region": "us-west1", "hosts": [{"name": "w0", "class": "cpu-fast", "slots": 2}]}]}
JSON
# only this test's testbed is taken down at exit, should the probe's own trap not have run
at_exit 'scripts/testbed down "$desc" >/dev/null 2>&1'
DESC=$desc BYTES=65536 REPEATS=2 RING_HOSTS="a0:1 w0:2 a1:1" RING_BYTES=131072 \
	timeout 300 bash bench/testbed/reverse_load_probe.sh "$work/out" 2>"$work/err" ||
	{ cat "$work/err"; die "reverse_load_probe.sh failed"; }
check "A, B and C named: a0, w0 and a1" 'grep -q "A a0 (us-central1-a), B w0 (us-west1-b), C a1 (us-central1-a)" "$work/out"'
for mode in alone same other ring2 ring3; do
	check "mode $mode: a rate" "grep -Eq '^bytes 65536, $mode *: [0-9]+ bytes A -> B in [0-9.]+ s median \\(least [0-9.]+\\), [0-9]*\\.[0-9]+ MB/s\$' \"\$work/out\""
done
check "the rings count what crosses A -> B: 2(m-1)/m of the bytes" \
	'grep -q "^bytes 65536, ring2: 65536 bytes" "$work/out" && grep -q "^bytes 65536, ring3: 87381 bytes" "$work/out"'
check "the ring over a0, w0 x 2, a1: 4 ranks, one line per repeat" \
	'[ "$(grep -c "^ring of 4 ranks, 131072 bytes: [0-9.]* s, 196608 bytes each hop, [0-9.]* MB/s$" "$work/out")" -eq 2 ]'
check "its testbed is down" '! ip netns list | grep -q "^sailor-rlp-"'

jq '.zones[0].hosts |= .[:1]' "$desc" >"$work/one-host-zones.json"
expect_error "no zone of two hosts" 1 "has no zone of two hosts and another zone" \
	-- env DESC="$work/one-host-zones.json" bash bench/testbed/reverse_load_probe.sh
expect_error "a ring host the testbed has not" 1 "RING_HOSTS: 'z9:1' is not HOST:SLOTS of a host of" \
	-- env DESC="$desc" BYTES=65536 REPEATS=1 RING_HOSTS="a0:1 z9:1" bash bench/testbed/reverse_load_probe.sh "$work/bad"
check "and its testbed is down again" '! ip netns list | grep -q "^sailor-rlp-"'
finish
