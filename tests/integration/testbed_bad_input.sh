#!/usr/bin/env bash
# scripts/testbed refuses a bad description with one message naming the file and the field, exit
# 1, before creating anything: an unknown zone, a zone's host in an unknown device class, a
# bandwidth of zero, a host listed twice, an unknown field, a bad name. Needs jq only (the checks
# run before the root checks), so it runs without root; where it can, it also checks that no
# namespace of the testbed exists afterwards.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/lib/common.sh
need_tool jq
export SAILOR_TESTBED_STATE=$work/state
good='{"schema": "sailor.testbed/1", "name": "tbbad", "subnet": "10.81.0.0/16",
  "classes": {"cpu-fast": {"cpu_cores": 1}},
  "links": {"zone": {"bandwidth_mbit": 100, "latency_ms": 0}, "region": {"bandwidth_mbit": 50},
            "world": {"bandwidth_mbit": 10, "latency_ms": 20}},
  "zones": [{"name": "us-central1-a", "region": "us-central1",
             "hosts": [{"name": "h0", "class": "cpu-fast", "slots": 1}]},
            {"name": "us-west1-b", "hosts": [{"name": "h1", "class": "cpu-fast", "slots": 1}]}]}'
expect_refused() { # name, jq edit of the good description, text the message must contain
  local name=$1 edit=$2 text=$3
  jq "$edit" <<<"$good" >"$work/$name.json"
  scripts/testbed up "$work/$name.json" -o "$work/cluster.json" >"$work/out" 2>"$work/err"
  local got=$?
  if [ "$got" -ne 1 ] || ! grep -qF -- "$text" "$work/err" || ! grep -qF "$work/$name.json" "$work/err" ||
     [ -e "$work/cluster.json" ] || [ -d "$work/state/tbbad" ]; then
    echo "FAIL $name: exit $got (want 1), stderr:"; sed 's/^/    /' "$work/err"; failures=$((failures + 1))
  else
    echo "ok   $name: $(head -n 1 "$work/err")"
  fi
}
expect_refused unknown-zone '.zones[1].name = "mars-north1-a"' 'zones[1].name: unknown zone "mars-north1-a"'
expect_refused wrong-region '.zones[0].region = "us-west1"' 'zones[0].region: "us-west1": zone us-central1-a is in region "us-central1"'
expect_refused zero-bandwidth '.links.region.bandwidth_mbit = 0' 'links.region.bandwidth_mbit: 0: expected a number of Mbit/s from 0.01 to 100000'
expect_refused missing-link 'del(.links.world)' 'links.world: missing'
expect_refused duplicate-host '.zones[1].hosts[0].name = "h0"' 'hosts: host "h0" is listed twice'
expect_refused unknown-class '.zones[0].hosts[0].class = "cpu-medium"' 'zones[0].hosts[0].class: unknown device class "cpu-medium" (classes: cpu-fast)'
expect_refused unknown-field '.zones[0].hosts[0].slot = 2' 'zones[0].hosts[0].slot: unknown field'
expect_refused zero-slots '.zones[0].hosts[0].slots = 0' 'zones[0].hosts[0].slots: 0: expected a whole number from 1 to 64'
expect_refused bad-name '.name = "Too-Long-Name"' 'name: "Too-Long-Name": expected 1 to 8 lowercase letters or digits'
expect_refused bad-subnet '.subnet = "192.168.0.0/16"' 'subnet: "192.168.0.0/16": expected a /16 of 10.0.0.0/8'
expect_refused zero-cores '.classes["cpu-fast"].cpu_cores = 0' 'classes.cpu-fast.cpu_cores: 0: expected a number of cores'
# not JSON at all
echo '{"schema": ' >"$work/broken.json"
if scripts/testbed up "$work/broken.json" 2>"$work/err"; then echo "FAIL broken JSON accepted"; failures=$((failures + 1));
else grep -q "not valid JSON" "$work/err" && echo "ok   broken: $(cat "$work/err")" || { echo "FAIL broken: $(cat "$work/err")"; failures=$((failures + 1)); }; fi
# usage errors exit 2
scripts/testbed frobnicate x.json 2>/dev/null; [ $? -eq 2 ] || { echo "FAIL unknown command: not exit 2"; failures=$((failures + 1)); }
grep -q 'sailor.testbed/1' <<<"$(scripts/testbed --help)" || { echo "FAIL --help does not describe the format"; failures=$((failures + 1)); }
if command -v ip >/dev/null && grep -q '^sailor-tbbad-' <<<"$(ip netns list 2>/dev/null)"; then
  echo "FAIL a namespace of the refused testbed exists"; failures=$((failures + 1))
fi
finish
