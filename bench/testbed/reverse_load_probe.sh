#!/usr/bin/env bash
# What traffic the other way does to a shaped link between zones (reverse_load_probe.c): brings
# the testbed up and runs three ranks outside the devices' CPU quotas: A and C on two hosts of
# the first zone that has two, B on the first host of a zone in another region (else another
# zone). A sends B BYTES alone, while B sends A as much, and while B sends C as much; then ring
# all-reduces of BYTES over A and B and over A, B, C (libnbc's ring, as the runtime asks for);
# prints A -> B's median time and rate in each. Outside the quotas and polling, traffic to C
# slows A -> B as much as traffic back to A; the runtime's own rings (in the quotas, waiting
# asleep) are slowed only by traffic back to the sender's host (ring_sync_runs.sh; the model's
# ring_loads_reverse follows the runs; bench/RESULTS.md, 2026-11-28 (12)).
# Needs root (the testbed), mpicc, jq.
#
# With RING_HOSTS ("HOST:SLOTS ..."), then a ring all-reduce of each of RING_BYTES over those
# hosts' slots in that order (ranks in the order a plan's data-parallel group has them), also
# outside the quotas; e.g. span3's all-device data parallelism of the loop (bench/testbed/
# loop-span3, baseline-dp-all): "ninth-b1:1 ninth-f0:3 threeeighths-b0:2 threeeighths-w0:1".
#
# usage: bench/testbed/reverse_load_probe.sh [OUT_FILE]   environment: DESC
#        (data/testbed/span3.json), BYTES ("1048576 4194304"), REPEATS (5), RING_HOSTS (none),
#        RING_BYTES (5557504: gpt2-tiny-six's gradients)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$here"
[ $# -le 1 ] || { sed -n '2,20p' "$0" >&2; exit 2; }
out=${1:-/dev/stdout}
DESC=${DESC:-data/testbed/span3.json} BYTES=${BYTES:-1048576 4194304} REPEATS=${REPEATS:-5}
RING_HOSTS=${RING_HOSTS:-} RING_BYTES=${RING_BYTES:-5557504}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
[ "$(id -u)" -eq 0 ] || { echo "reverse_load_probe: needs root (the testbed)" >&2; exit 1; }
# A and C: the first zone with two hosts; B: a host of another region, else of another zone
read -r host_a host_c host_b <<<"$(jq -r '
  ([.zones[] | select((.hosts | length) >= 2)][0]) as $z |
  if $z == null then "" else
    ([.zones[] | select(.region != $z.region)] + [.zones[] | select(.name != $z.name)])[0] as $far |
    "\($z.hosts[0].name) \($z.hosts[1].name) \($far.hosts[0].name)" end' "$DESC")"
[ -n "${host_b:-}" ] || { echo "reverse_load_probe: $DESC has no zone of two hosts and another zone" >&2; exit 1; }
work=$(mktemp -d /tmp/sailor-reverse-XXXXXX)
trap 'scripts/testbed down "$DESC" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
mpicc -O2 -Wall -o "$work/probe" bench/testbed/reverse_load_probe.c
scripts/testbed up "$DESC" -o "$work/cluster.json" >&2
addr() { jq -r --arg h "$1" '.hosts[] | select(.name == $h) | .address' "$work/cluster.json"; }
for spec in $RING_HOSTS; do
	[ -n "$(addr "${spec%%:*}")" ] && [ "${spec##*:}" -gt 0 ] 2>/dev/null ||
		{ echo "reverse_load_probe: RING_HOSTS: '$spec' is not HOST:SLOTS of a host of $DESC" >&2; exit 1; }
done
# rank 0 on A, 1 on B, 2 on C
printf "%s slots=1\n%s slots=1\n%s slots=1\n" "$(addr "$host_a")" "$(addr "$host_b")" "$(addr "$host_c")" >"$work/hosts"
# the cluster's own launch arguments, less the slot agent that would put the ranks in quotas
source "$here/bench/testbed/outside_quotas.sh"
outside_quotas_launch "$work/cluster.json"
zone_of() { jq -r --arg h "$1" '.zones[] | select(any(.hosts[]; .name == $h)) | .name' "$DESC"; }
{
	echo "# reverse_load_probe $(date -u +%Y-%m-%dT%H:%MZ), testbed $(jq -r .name "$DESC"):" \
	     "A $host_a ($(zone_of "$host_a")), B $host_b ($(zone_of "$host_b")), C $host_c ($(zone_of "$host_c"))," \
	     "OpenMPI $(ompi_info --version 2>/dev/null | sed -n 's/^Open MPI v//p' | head -1)"
	for bytes in $BYTES; do
		timeout 300 mpirun -np 3 --hostfile "$work/hosts" --mca plm_rsh_agent "$agent" \
			--mca coll_libnbc_iallreduce_algorithm ring --bind-to none "${launch[@]}" "$work/probe" "$bytes" "$REPEATS" </dev/null
	done
	if [ -n "$RING_HOSTS" ]; then
		ranks=0
		: >"$work/ring-hosts"
		for spec in $RING_HOSTS; do
			echo "$(addr "${spec%%:*}") slots=${spec##*:}" >>"$work/ring-hosts"
			ranks=$((ranks + ${spec##*:}))
		done
		echo "# ring over $RING_HOSTS"
		for bytes in $RING_BYTES; do
			timeout 300 mpirun -np "$ranks" --hostfile "$work/ring-hosts" --mca plm_rsh_agent "$agent" \
				--mca coll_libnbc_iallreduce_algorithm ring --bind-to none "${launch[@]}" \
				"$work/probe" ring "$bytes" "$REPEATS" </dev/null
		done
	fi
} >"$out"
