/* Launch: what mpirun (OpenMPI 4.1) needs to start a placed role table, and whether we already
 * run inside an MPI job.
 *
 * With a cluster file the job is pinned rank by rank with a rankfile, plus a hostfile that
 * gives mpirun the hosts and their slots:
 *   hostfile   "<address> slots=<n>"       one line per distinct address, slots summed over the
 *                                          cluster's hosts with that address (OpenMPI rejects a
 *                                          node listed twice with slots=, "multiple definitions
 *                                          of the slot count"), in first-appearance order;
 *   rankfile   "rank <r>=<address> slot=0:*"  one line per rank, in rank order.
 * Addresses that all name this machine ("localhost", "127.0.0.1", this host's name) are
 * written as "localhost", for the same reason: OpenMPI folds them into one node.
 *
 * Why "slot=0:*" and not "slot=<n>": in a rankfile, slot= is a CPU binding, not a slot number.
 * OpenMPI 4.1.4 binds each rank to that cpu set even under --bind-to none, and aborts without a
 * message when the core does not exist (slot=2 on a 2-core machine, tested). "0:*" (every core
 * of socket 0) exists on every host, keeps a rank's OpenMP/BLAS threads free to use all those
 * cores, and allows more ranks than cores (the testbed's hosts are network namespaces of one
 * small machine). On a host with several sockets this confines ranks to socket 0; pass your own
 * binding options in the cluster's mpirun_args if that matters.
 *
 * Ownership: sl_launch_build fills a struct sl_launch_cmd whose arrays and strings it allocates;
 * sl_launch_cmd_free releases them. The format functions return malloc'd text the caller frees.
 */
#ifndef SL_RUNTIME_LAUNCH_H
#define SL_RUNTIME_LAUNCH_H

#include <stddef.h>

#include "cluster/cluster_file.h"
#include "plan/roles.h"
#include "util/err.h"

#define SL_LAUNCH_PATH_MAX 4096
#define SL_LAUNCH_RANKFILE "sailor.rankfile"
#define SL_LAUNCH_HOSTFILE "sailor.hostfile"

/* Hostfile / rankfile text for a placed table (every roles[r].host a valid cluster index, as
 * sl_placement_assign leaves it). NULL with err set if a rank is unplaced or memory runs out. */
char *sl_launch_format_hostfile(const struct sl_role_table *table,
				const struct sl_cluster *cluster, struct sl_err *err);
char *sl_launch_format_rankfile(const struct sl_role_table *table,
				const struct sl_cluster *cluster, struct sl_err *err);

/* Writes dir/SL_LAUNCH_HOSTFILE and dir/SL_LAUNCH_RANKFILE, each atomically (a temporary file in
 * dir, then rename), so a relaunch never reads half of a new file. dir must exist. The paths
 * written go to hostfile_out / rankfile_out (each SL_LAUNCH_PATH_MAX bytes; may be NULL). */
int sl_launch_write_files(const struct sl_role_table *table, const struct sl_cluster *cluster,
			  const char *dir, char *hostfile_out, char *rankfile_out,
			  struct sl_err *err);

struct sl_launch_opts {
	const char *mpirun;              /* mpirun to run; NULL = "mpirun" (found on PATH) */
	const char *dir;                 /* where the host/rank files go (cluster case); NULL = "." */
	/* OMP_NUM_THREADS and OPENBLAS_NUM_THREADS of each rank. 0 = the launcher's own
	 * OMP_NUM_THREADS if set, else 1: several ranks per machine each starting one thread per
	 * core would oversubscribe it many times over. */
	int threads_per_rank;
	const char *const *env;          /* more variables for the ranks, "NAME=VALUE" or "NAME"
					  * (forward the launcher's value); NULL-terminated or NULL */
	const char *const *mpirun_args;  /* the user's extra mpirun options (after the cluster's);
					  * NULL-terminated or NULL */
};

struct sl_launch_cmd {
	char **argv;       /* NULL-terminated: "mpirun", options, then the worker command line */
	int argc;
	/* "NAME=VALUE" for mpirun's OWN environment (the env of util/run_command.h, which puts
	 * them into the child's before exec): OMPI_ALLOW_RUN_AS_ROOT=1 and
	 * OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 when running as root. NULL-terminated. */
	char **env;
	char hostfile[SL_LAUNCH_PATH_MAX];  /* "" for a local run */
	char rankfile[SL_LAUNCH_PATH_MAX];
};

/* Builds the mpirun command for a table placed by sl_placement_assign (cluster may be NULL: a local
 * run). With a cluster it also writes the host/rank files (sl_launch_write_files into
 * opts->dir). The argv is, in order:
 *   mpirun -np <world>
 *          [--hostfile H --rankfile R [--mca plm_rsh_agent A]]    cluster
 *          [--oversubscribe]                                      local
 *          [--bind-to none]              unless the cluster's or user's args have a --bind-to
 *          <cluster mpirun_args> <opts->mpirun_args>
 *          -x OMP_NUM_THREADS=n -x OPENBLAS_NUM_THREADS=n [-x <opts->env>...]
 *          <worker_argv...>
 * worker_argv (NULL-terminated, at least the program) is the command every rank runs: the
 * runtime passes its own binary and arguments plus a marker saying "you are a worker".
 * As root, OpenMPI 4.1 refuses to start unless both OMPI_ALLOW_RUN_AS_ROOT variables are set in
 * mpirun's environment (4.1 has no --allow-run-as-root option; containers run as root), so they
 * go into out->env. */
int sl_launch_build(const struct sl_role_table *table, const struct sl_cluster *cluster,
		    const struct sl_launch_opts *opts, const char *const *worker_argv,
		    struct sl_launch_cmd *out, struct sl_err *err);

void sl_launch_cmd_free(struct sl_launch_cmd *cmd);

/* Finds an executable "mpirun" on PATH and writes its path to buf. SL_ENOTFOUND with a message
 * naming the Debian package (openmpi-bin) when there is none. */
int sl_launch_find_mpirun(char *buf, size_t size, struct sl_err *err);

/* Whether this process is a rank of an MPI job started by mpirun (OMPI_COMM_WORLD_SIZE), a
 * PMI launcher such as MPICH's hydra (PMI_SIZE) or srun (SLURM_STEP_NUM_TASKS with
 * SLURM_PROCID, or PMIX_RANK). Returns 1 and sets *size (the job's world size, 0 if the
 * environment does not say) and *rank (-1 if unknown) when it is; 0 otherwise. Either pointer
 * may be NULL. A plain sbatch script is not a job: it has SLURM_NTASKS but no step. */
int sl_launch_in_mpi_job(int *size, int *rank);

#endif
