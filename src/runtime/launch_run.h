/* Runs a small MPI job whose ranks are pinned to given hosts of a cluster file (the profilers:
 * a rank per host for the network, the TP ranks of one host for layers), through the same
 * mpirun command `sailor run` builds (launch.h: rankfile, the cluster's agent and mpirun
 * arguments), and waits for it, bounded in time.
 *
 * Rank r runs on cluster->hosts[rank_host[r]]. The host and rank files go to a temporary folder
 * removed afterwards. mpirun gets SIGTERM after timeout_s, SIGKILL 3 s later; that returns
 * SL_ETIMEOUT. A non-zero exit of mpirun returns SL_EIO (the ranks printed their own messages);
 * who prefixes the launcher's own messages ("sailor profile"). */
#ifndef SL_DIST_LAUNCH_RUN_H
#define SL_DIST_LAUNCH_RUN_H

#include "cluster/cluster_file.h"
#include "util/err.h"

int sl_launch_run_on_hosts(const struct sl_cluster *cluster, const int *rank_host, int world,
			   int timeout_s, const char *const *worker_argv, const char *who,
			   struct sl_err *err);

#endif
