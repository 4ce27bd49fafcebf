#!/usr/bin/env bash
# `sailor profile --network` on an emulated cluster (scripts/testbed): ranks on every host, a
# file in the simulator's network format (zone -> gpu -> count -> zone -> gpu -> count ->
# [[a2, a1, a0], max_bps]) with both directions of every zone pair and the within-host fit; and
# the numbers follow the shaping: within a zone (200 Mbit/s) faster than between regions
# (20 Mbit/s), both below their shaped rates; every pair's message probe (CPU per message at each
# end). Needs root, namespaces, tc, jq, mpirun: skips if not.
set -u
cd "$(dirname "$0")/../.."
source tests/lib/common.sh
need_testbed
export SAILOR_TESTBED_STATE=$work/state
desc=$work/tb.json
cat >"$desc" <<'JSON'
{"schema": "sailor.testbed/1", "name": "tbnet", "subnet": "10.79.0.0/16",
 "classes": {"cpu-fast": {"cpu_cores": 1}},
 "links": {"zone": {"bandwidth_mbit": 200}, "region": {"bandwidth_mbit": 50}, "world": {"bandwidth_mbit": 20}},
 "zones": [{"name": "us-central1-a", "hosts": [{"name": "a0", "class": "cpu-fast", "slots": 2},
                                              {"name": "a1", "class": "cpu-fast", "slots": 1}]},
           {"name": "us-west1-b", "hosts": [{"name": "w0", "class": "cpu-fast", "slots": 1}]}]}
JSON
# only the testbed this test brings up is taken down (down finds namespaces by name); a failed
# up removes what it made itself
up_status=0
timeout 60 scripts/testbed up "$desc" -o "$work/cluster.json" 2>"$work/up-err" || up_status=$?
case $up_status in 0 | 124 | 137) at_exit 'scripts/testbed down "$desc" >/dev/null 2>&1' ;; esac
[ "$up_status" -eq 0 ] || { echo "testbed up failed:"; cat "$work/up-err"; exit 1; }
# no retry here: a start failure of mpirun is retried once by the profiler's launcher itself
# (src/runtime/start_failure.h), which says so on stderr
timeout 90 "$SAILOR" profile --network --cluster "$work/cluster.json" --gpus data/testbed/gpus-cpu.json \
  --sizes 65536,262144,524288 --repeats 2 --timeout 60 -o "$work/net.json" 2>"$work/err" || cat "$work/err" >&2
check "network file written" '[ -s "$work/net.json" ]' || cat "$work/err"
n=$work/net.json
check "format: fits both ways between the zones" 'jq -e "(.\"us-central1-a\".\"cpu-fast\".\"1\".\"us-west1-b\".\"cpu-fast\".\"1\" | length == 2) and (.\"us-west1-b\".\"cpu-fast\".\"1\".\"us-central1-a\".\"cpu-fast\".\"1\"[0] | length == 3)" "$n" >/dev/null'
check "within a zone and within a host measured" 'jq -e "(.\"us-central1-a\".\"cpu-fast\".\"1\".\"us-central1-a\".\"cpu-fast\".\"1\" | length == 2) and (.intra_node.\"cpu-fast\".\"2\" | length == 2)" "$n" >/dev/null'
zone=$(jq '[.source.pairs[] | select(.sender == "a0" and .receiver == "a1") | .p2p_bps[-1]][0]' "$n")
world=$(jq '[.source.pairs[] | select(.sender == "a0" and .receiver == "w0") | .p2p_bps[-1]][0]' "$n")
echo "p2p at 512 kB: within the zone $zone B/s, between regions $world B/s"
check "within a zone faster than between regions" 'awk -v z="$zone" -v w="$world" "BEGIN { exit !(z > 1.5 * w) }"'
check "between regions below its 20 Mbit/s (2.5 MB/s) shaping" 'awk -v w="$world" "BEGIN { exit !(w > 0 && w < 2.5e6 * 1.1) }"'
check "simulator's loader skips the extra keys (schema, source, intra_node)" 'jq -e ".source.pairs | length == 3" "$n" >/dev/null'
check "every pair between hosts has the burst and eager probes" 'jq -e "[.source.pairs[] | select(.kind == \"between hosts\") | (.burst_bytes >= 0) and (.whole_message_bytes >= 0) and (.whole_message_bytes <= 61440) and (.eager_probe.round_trip_s > 0)] | length == 2 and all" "$n" >/dev/null'
# the message probe (ranks on cpu-fast, a CPU quota, wait asleep): every pair has each end's CPU
# per message at every size, none negative or absurd, and a receiver within a host pays for
# copying half a megabyte out of shared memory
check "every pair has the message probe, each end at every size" 'jq -e "[.source.pairs[] | .message_cpu | (.bytes == [65536, 262144, 524288]) and ([.sender_s[], .receiver_s[]] | length == 6 and all(. >= 0 and . < 0.05))] | length == 3 and all" "$n" >/dev/null'
check "a receiver within a host pays for its copy" 'jq -e "[.source.pairs[] | select(.kind == \"within a host\") | .message_cpu.receiver_s[-1] > 1e-6] == [true]" "$n" >/dev/null'
# sizes all below the eager probe's 60 KiB message: its buffer still holds it
timeout 90 "$SAILOR" profile --network --cluster "$work/cluster.json" --gpus data/testbed/gpus-cpu.json \
  --sizes 4096,8192 --repeats 1 --timeout 60 -o "$work/small.json" 2>"$work/err" || cat "$work/err" >&2
check "sizes below the eager probe's message: a file with its probe" 'jq -e "[.source.pairs[] | select(.kind == \"between hosts\") | .eager_probe.bytes == 61440] | length == 2 and all" "$work/small.json" >/dev/null'
finish
