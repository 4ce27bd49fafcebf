# Sourced by the testbed probes that run their own MPI programs on a testbed's hosts outside the
# devices' CPU quotas (rendezvous_probe.sh, reverse_load_probe.sh), so that compute is wall time
# and no rank waits for its quota.
#
# outside_quotas_launch CLUSTER.json: sets `launch` (the cluster file's mpirun arguments less the
# slot agent, `--mca orte_fork_agent PATH`, that would put each rank in its class's cgroup) and
# `agent` (the launch agent that reaches the hosts' namespaces, for --mca plm_rsh_agent).
outside_quotas_launch() {
	local all i
	mapfile -t all < <(jq -r '.launch.mpirun_args[]' "$1")
	launch=()
	for ((i = 0; i < ${#all[@]}; i++)); do
		if [ "${all[i]}" = --mca ] && [ "${all[i + 1]:-}" = orte_fork_agent ]; then
			i=$((i + 2)) # --mca orte_fork_agent PATH
			continue
		fi
		launch+=("${all[i]}")
	done
	agent=$(jq -r .launch.agent "$1")
}
