/* Slurm as a source of hosts and pool: the nodes of a partition read from slurmctld with
 * `scontrol show node --oneliner` (and `scontrol show partition P` to tell a partition that does
 * not exist from an empty one), turned into a cluster (cluster_file.h) and a pool (pool.h).
 *
 * The convention sailor reads from each node (scripts/testbed up --slurm writes it; README
 * "Running on your Slurm cluster"):
 *   Features   one feature naming a GPU type of the catalogue (data/gpus.json, plus --gpus
 *              FILE) and one naming a zone (data/network/egress_usd_per_gb.json), e.g.
 *              Features=A100-40,us-central1-a; other features are ignored;
 *   Gres       gpu:<n> (or gpu:<type>:<n>): the node's GPUs, one rank each (its slots);
 *   NodeAddr   the address (the name when Slurm gives none).
 * A node is usable when its state is IDLE, MIXED, ALLOCATED or COMPLETING with no DRAIN, FAIL,
 * MAINT, REBOOT, POWER or NOT_RESPONDING flag: drained, draining, down and unresponsive nodes
 * are not in the pool.
 *
 * Why scontrol's text and not libslurm: the library's ABI changes with every Slurm release
 * (libslurm.so.37 is 22.05's), the command's one-line output does not, and a controller that
 * polls once a second does not need more.
 *
 * Ownership: sl_slurm_query / sl_slurm_parse_nodes fill a struct sl_slurm_nodes whose array
 * sl_slurm_nodes_free releases. sl_slurm_to_cluster allocates the cluster's hosts
 * (sl_cluster_free).
 */
#ifndef SL_CLUSTER_SLURM_H
#define SL_CLUSTER_SLURM_H

#include "cluster/cluster_file.h"
#include "cluster/pool.h"
#include "util/err.h"

struct sl_slurm_node {
	char name[SL_CLUSTER_NAME_MAX];
	char address[SL_CLUSTER_NAME_MAX];
	char features[512];     /* AvailableFeatures, "" when none */
	char state[128];        /* e.g. "IDLE", "MIXED+DRAIN", "DOWN*" */
	int gpus;               /* from Gres gpu:..., 0 when none */
	int cpus;               /* CPUTot, 0 when not given */
	int usable;             /* in the pool (see above) */
};

struct sl_slurm_nodes {
	int count;
	struct sl_slurm_node *nodes;
	char partition[128];    /* "" = every node */
};

/* Asks slurmctld (through scontrol, bounded to 30 s; SLURM_CONF is honoured) for the nodes of
 * partition (NULL: all nodes). Errors, each saying what to fix: scontrol missing (SL_ENOTFOUND),
 * slurmctld not reachable (SL_EIO), no such partition (SL_ENOTFOUND), a partition without
 * nodes (SL_EINPUT). */
int sl_slurm_query(const char *partition, struct sl_slurm_nodes *out, struct sl_err *err);

/* Parses `scontrol show node --oneliner` text (one node a line), keeping the nodes whose
 * Partitions list has partition (NULL: all). */
int sl_slurm_parse_nodes(const char *text, const char *partition, struct sl_slurm_nodes *out,
			 struct sl_err *err);

void sl_slurm_nodes_free(struct sl_slurm_nodes *nodes);

/* Whether a node state (as in struct sl_slurm_node) says Slurm lost the node: down or not
 * responding ("DOWN", "IDLE+NOT_RESPONDING", "ALLOCATED*"); a drain is not a loss. */
int sl_slurm_state_lost(const char *state);

/* One node as a host with its GPU type, zone and slots by the convention above. A node with no
 * GPU-type feature, no zone feature, two of either, no gpu Gres, or more GPUs than CPUs (each
 * rank is a task of one CPU) is an error (SL_EINPUT) naming the node, what it has, and what to
 * write in slurm.conf or its slurmd's --conf. */
int sl_slurm_node_host(const struct sl_slurm_node *n, const struct sl_catalogue *cat,
		       struct sl_host *out, struct sl_err *err);

/* Every node (usable or not, in Slurm's order) as a host (sl_slurm_node_host); the first bad
 * node is the error (`sailor plan --slurm`, `run --slurm`: the user fixes it before a start;
 * the controller skips bad nodes instead, ctl/pool_watch_slurm.c). */
int sl_slurm_to_cluster(const struct sl_slurm_nodes *nodes, const struct sl_catalogue *cat,
			struct sl_cluster *out, struct sl_err *err);

/* The cluster's path (its name in messages): "slurm" or "slurm partition P". */
void sl_slurm_cluster_name(const struct sl_slurm_nodes *nodes, struct sl_cluster *cluster);

/* The pool: the slots of the usable nodes, by GPU type and zone (cluster from
 * sl_slurm_to_cluster of the same nodes). */
void sl_slurm_pool(const struct sl_slurm_nodes *nodes, const struct sl_cluster *cluster,
		   struct sl_pool *out);

/* The three above in one: query, cluster (may be NULL: not kept) and pool. With an empty
 * pool (every node drained or down) the message says so: SL_EINFEASIBLE. describe (may be
 * NULL, size bytes) gets one line such as "partition 'p': 3 nodes, 2 usable (left out: n1
 * IDLE+DRAIN)". */
int sl_slurm_load_pool(const char *partition, const struct sl_catalogue *cat,
		       struct sl_pool *pool, struct sl_cluster *cluster, char *describe,
		       size_t size, struct sl_err *err);

/* The usable nodes only, as a cluster (the hosts a job may be placed on now). */
int sl_slurm_usable_cluster(const char *partition, const struct sl_catalogue *cat,
			    struct sl_cluster *out, struct sl_err *err);

/* That line for nodes already queried. */
void sl_slurm_describe(const struct sl_slurm_nodes *nodes, char *buf, size_t size);

/* Runs argv (argv[0] looked up on PATH) with stdout and stderr captured into *out (malloc'd,
 * NUL-terminated), bounded to timeout_s (then killed). Returns 0 and sets *status to the exit
 * status (128 + signal, 124 on timeout); SL_ENOTFOUND when the program does not exist. */
int sl_slurm_exec(char *const argv[], double timeout_s, char **out, int *status,
		  struct sl_err *err);

/* `scancel` of every job named name (signal NULL: cancel; else e.g. "TERM", "KILL" to the
 * steps of those running, none to a job still pending: it has no task yet, and scancel would
 * retry it for minutes). 0 when scancel ran and succeeded. */
int sl_slurm_cancel_name(const char *name, const char *signal, struct sl_err *err);

/* `scancel` of the jobs named name that are still pending (none of their tasks started: nothing
 * to stop gracefully). 0 when scancel ran and succeeded. */
int sl_slurm_cancel_pending(const char *name, struct sl_err *err);

/* How many jobs named name squeue still lists (-1 when squeue fails). */
int sl_slurm_jobs_named(const char *name);

#endif
