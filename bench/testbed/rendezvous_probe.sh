#!/usr/bin/env bash
# When OpenMPI moves a message over its rendezvous limit across a testbed link
# (rendezvous_probe.c): brings the testbed up, runs two ranks on the first host of the first zone
# and the first host of another region (outside the devices' CPU quotas, so that their compute is
# wall time), and prints the receive's time for eager and rendezvous sizes, with the receiver
# entering its receive at once or 50-100 ms after the Isend, and with a sender that computes
# before its next MPI call. Needs root (the testbed), mpicc, jq.
#
# usage: bench/testbed/rendezvous_probe.sh [OUT_FILE]   environment: DESC
#        (data/testbed/geo3.json), REPEATS (8)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$here"
[ $# -le 1 ] || { sed -n '2,10p' "$0" >&2; exit 2; }
out=${1:-/dev/stdout}
DESC=${DESC:-data/testbed/geo3.json} REPEATS=${REPEATS:-8}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
[ "$(id -u)" -eq 0 ] || { echo "rendezvous_probe: needs root (the testbed)" >&2; exit 1; }
work=$(mktemp -d /tmp/sailor-rendezvous-XXXXXX)
trap 'scripts/testbed down "$DESC" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
mpicc -O2 -Wall -o "$work/probe" bench/testbed/rendezvous_probe.c
scripts/testbed up "$DESC" -o "$work/cluster.json" >&2
name=$(jq -r .name "$DESC")
# the sender's host: zone 0's first; the receiver's: the first host of a zone in another region
read -r sender receiver <<<"$(jq -r '
  .zones[0] as $z0 | [.zones[] | select(.region != $z0.region)][0] as $far |
  "\($z0.hosts[0].name) \($far.hosts[0].name)"' "$DESC")"
addr() { jq -r --arg h "$1" '.hosts[] | select(.name == $h) | .address' "$work/cluster.json"; }
printf "%s slots=1\n%s slots=1\n" "$(addr "$sender")" "$(addr "$receiver")" >"$work/hosts"
# the cluster's own launch arguments, less the slot agent that would put the ranks in quotas
source "$here/bench/testbed/outside_quotas.sh"
outside_quotas_launch "$work/cluster.json"
{
	echo "# rendezvous_probe $(date -u +%Y-%m-%dT%H:%MZ), testbed $name: $sender -> $receiver" \
	     "($(jq -r .links.world.bandwidth_mbit "$DESC") Mbit/s), OpenMPI $(ompi_info --version 2>/dev/null | sed -n 's/^Open MPI v//p' | head -1)"
	for args in "16384 0 0.05" "60000 0 0.05" "131072 0 0" "131072 0 0.05" "131072 0 0.1" \
		    "131072 0.1 0.05" "200000 0 0" "200000 0 0.1"; do
		# shellcheck disable=SC2086
		timeout 120 mpirun -np 2 --hostfile "$work/hosts" --mca plm_rsh_agent "$agent" \
			--bind-to none "${launch[@]}" "$work/probe" $args "$REPEATS" </dev/null
	done
} >"$out"
