/* Runs a small MPI job whose ranks are pinned to given hosts of a cluster file (the profilers:
 * a rank per host for the network, the TP ranks of one host for layers), through the same
 * mpirun command `sailor run` builds (launch.h: rankfile, the cluster's agent and mpirun
 * arguments), and waits for it, bounded in time.
 *
 * Rank r runs on cluster->hosts[rank_host[r]]. The host and rank files go to a temporary folder
 * removed afterwards. mpirun gets SIGTERM after timeout_s, SIGKILL 3 s later; that returns
 * SL_ETIMEOUT. A non-zero exit of mpirun returns SL_EIO (the ranks printed their own messages);
 * who prefixes the launcher's own messages ("sailor profile"). A start failure of mpirun is
 * retried once (sl_launch_exec). */
#ifndef SL_RUNTIME_LAUNCH_RUN_H
#define SL_RUNTIME_LAUNCH_RUN_H

#include "cluster/cluster_file.h"
#include "util/err.h"

/* Runs a built mpirun command (launch.h) with its environment, copying its stdout and stderr to
 * out_fd and err_fd, bounded by timeout_s as above. When mpirun fails to start the job
 * (start_failure.h: its daemon crashed or could not connect back, before any rank printed) it
 * says so on stderr, with the reason, and starts it once more. Returns 0 when mpirun exited 0,
 * SL_ETIMEOUT, or SL_EIO naming its exit status (and a start failure's reason). */
struct sl_launch_cmd;
int sl_launch_exec(const struct sl_launch_cmd *cmd, int timeout_s, int out_fd, int err_fd,
		   const char *who, struct sl_err *err);

int sl_launch_run_on_hosts(const struct sl_cluster *cluster, const int *rank_host, int world,
			   int timeout_s, const char *const *worker_argv, const char *who,
			   struct sl_err *err);

#endif
