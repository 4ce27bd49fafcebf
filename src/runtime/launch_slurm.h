/* Launch under Slurm: the srun command that starts a placed role table as one Slurm job (an
 * allocation of exactly the plan's nodes and one step), and the check every rank makes that
 * the allocation is the plan's.
 *
 * The command (sl_launch_slurm_build):
 *   srun --mpi=pmix --job-name=<name> [--partition=P] --ntasks=<world> --nodes=<distinct hosts>
 *        --distribution=arbitrary --kill-on-bad-exit=1
 *        --export=ALL,OMP_NUM_THREADS=n,OPENBLAS_NUM_THREADS=n <worker argv...>
 * with SLURM_HOSTFILE=<dir>/sailor.slurm-hosts in srun's environment: one node name a line, line
 * r the node of rank r (what --distribution=arbitrary reads), so rank r runs where
 * sl_placement_assign put it. That file is the job's node list (the allocation is exactly those
 * nodes); --nodelist is not given as well, since with an arbitrary distribution Slurm 22.05
 * wants it to repeat each node once per task ("Asked for 4 tasks have 2 in the nodelist"). PMIx (Debian's OpenMPI 4.1 is built with it) wires up the ranks; no
 * mpirun. The job name is how the launcher and the controller address the job: signals go to
 * its tasks with `scancel --signal=TERM --name=<name>` (srun itself, given SIGTERM, cancels the
 * step at once, before any rank could checkpoint), and `scancel --name=<name>` ends what is left.
 *
 * Ownership: as sl_launch_build (launch.h): sl_launch_cmd_free releases the command.
 */
#ifndef SL_RUNTIME_LAUNCH_SLURM_H
#define SL_RUNTIME_LAUNCH_SLURM_H

#include "cluster/catalogue.h"
#include "cluster/cluster_file.h"
#include "runtime/comm.h"
#include "runtime/launch.h"
#include "plan/roles.h"
#include "util/err.h"

#define SL_LAUNCH_SLURM_HOSTFILE "sailor.slurm-hosts"

struct sl_launch_slurm_opts {
	const char *dir;          /* where the SLURM_HOSTFILE goes (must exist) */
	const char *job_name;     /* --job-name */
	const char *partition;    /* NULL: Slurm's default partition */
	int threads_per_rank;     /* OMP_NUM_THREADS / OPENBLAS_NUM_THREADS of each rank (0: 1) */
};

/* The job name of a launcher: "sailor-run-<pid>" (the controller derives it from the pid of
 * the generation it started). */
void sl_launch_slurm_job_name(int launcher_pid, char *buf, size_t size);

/* Ends what is left of the job named job_name (scancel --name) and waits, up to timeout_s,
 * until squeue no longer lists it. SL_ETIMEOUT when it is still listed then. */
int sl_launch_slurm_end(const char *job_name, double timeout_s, struct sl_err *err);

/* srun forks a helper that can outlive it by a moment. A launcher that made itself a child
 * subreaper (PR_SET_CHILD_SUBREAPER) before starting srun calls this after srun ended: it reaps
 * its children as they end, up to timeout_s, then kills (SIGKILL) and reaps those left. Returns
 * how many it had to kill. */
int sl_launch_slurm_reap_children(double timeout_s);

int sl_launch_slurm_build(const struct sl_role_table *table, const struct sl_cluster *cluster,
			  const struct sl_launch_slurm_opts *opts, const char *const *worker_argv,
			  struct sl_launch_cmd *out, struct sl_err *err);

/* Every rank calls it (a collective on the world) before the first step: where each rank runs
 * (SLURMD_NODENAME under Slurm, else the host name) must be a host of cluster whose GPU type
 * and zone are those of the rank's replica, and the ranks of one replica (a TP group) must
 * share it. Every rank reaches the same verdict; SL_EINPUT names the first misplaced rank, its
 * role and the host it is on. */
int sl_launch_slurm_check_placement(const struct sl_role_table *table,
				    const struct sl_cluster *cluster, const struct sl_catalogue *cat,
				    struct sl_comm *comm, struct sl_err *err);

#endif
