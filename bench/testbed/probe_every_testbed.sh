#!/usr/bin/env bash
# Profiles the layers of every testbed's device classes once more, on a new bring-up each, with
# the model of that testbed's validation set: what a new profiler probe measures there, for
# add_profile_probe.py to carry into the sets' profiles (which keep everything they measured).
# One testbed at a time, each taken down before the next comes up; the machine should run
# nothing else meanwhile (the classes are CPU quotas).
#
# usage: bench/testbed/probe_every_testbed.sh OUT_DIR [TESTBED...]
#        writes OUT_DIR/<testbed>/<model>/<class>.json (default: every testbed below);
#        environment: MBS (1,2), TPS ("1")
set -euo pipefail
[ $# -ge 1 ] || { sed -n '2,10p' "$0" >&2; exit 2; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd) # the caller's folder, before this moves to the repository
shift
cd "$here"
[ "$(id -u)" -eq 0 ] || { echo "probe_every_testbed: needs root (the testbed)" >&2; exit 1; }
# testbed -> the validation set whose model and device catalogue it uses
declare -A set_of=([geo3]=testbed-geo3-gpt2tiny [quad4]=testbed-quad4-gpt2tiny-wide
	[tri3]=testbed-tri3-gpt2tiny-deep [pent5]=testbed-pent5-gpt2tiny-mid
	[mix4]=testbed-mix4-gpt2tiny-five [span3]=testbed-span3-gpt2tiny-six)
testbeds=("$@")
[ ${#testbeds[@]} -gt 0 ] || testbeds=(geo3 quad4 tri3 pent5 mix4 span3)
for t in "${testbeds[@]}"; do # every name checked before anything is brought up
	[ -n "${set_of[$t]:-}" ] || { echo "probe_every_testbed: unknown testbed '$t' (one of ${!set_of[*]})" >&2; exit 2; }
done
[ -x build/sailor ] || make -s -j2
up=""
cleanup() { [ -z "$up" ] || scripts/testbed down "$up" >/dev/null 2>&1 || true; }
trap cleanup EXIT
for t in "${testbeds[@]}"; do
	set=${set_of[$t]}
	env_dir=data/validation/$set/env
	model=$(basename "$(ls -d "$env_dir"/profiles/*/ | head -1)")
	desc=data/testbed/$t.json
	mkdir -p "$out/$t"
	echo "probe_every_testbed: $t ($model), $(date -u +%H:%M:%S) UTC" >&2
	up=$desc
	scripts/testbed up "$desc" -o "$out/$t/cluster.json" >&2
	MODEL=$model MBS=${MBS:-1,2} TPS=${TPS:-1} NETWORK=0 \
		bench/testbed/profile_testbed.sh "$out/$t/cluster.json" "$env_dir/gpus.json" "$out/$t/run"
	cp -r "$out/$t/run/profiles/$model" "$out/$t/"
	rm -rf "$out/$t/run"
	scripts/testbed down "$desc" >/dev/null
	up=""
done
