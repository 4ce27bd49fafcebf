/* Where the controller learns the pool: a pool file it re-reads whenever the file changes, or an
 * availability trace replayed in time.
 *
 *   pool file  sailor.pool/1 (cluster/pool.h). Checked every call by modification time and size;
 *              a writer should replace it atomically (write a temporary file, rename it over).
 *              A file that does not parse keeps the previous pool and is reported once.
 *   trace      SOSP'25 CSV (cluster/pool.h): step i starts time_scale x (the durations of steps
 *              0..i-1) seconds after the start; the last step lasts for ever.
 *   Slurm      the nodes of a partition (cluster/slurm.h), polled with `scontrol show node`
 *              every SL_CTL_SLURM_POLL_S (pool_watch_slurm.c says why polling); the pool is the
 *              GPUs of the usable nodes. The hosts are the nodes the partition has now: a node
 *              that registers later (a dynamic node, one added to slurm.conf) joins at the next
 *              poll, one deleted leaves; a node drained, down, not responding, gone, or one
 *              sailor cannot use as Slurm describes it (no GPU-type or zone feature, GPUs
 *              beyond its CPUs; one message each, sl_ctl_pool_watch_node_problem) is not
 *              usable, and the controller neither places ranks on it nor keeps a generation
 *              running there.
 *
 * Invariant: `current` is always a valid pool (the last one read). Ownership: the struct owns the
 * trace (sl_ctl_pool_watch_free).
 */
#ifndef SL_CTL_POOL_WATCH_H
#define SL_CTL_POOL_WATCH_H

#include <sys/types.h>
#include <time.h>

#include <jansson.h>

#include "cluster/pool.h"

struct sl_ctl_pool_watch {
	const char *pool_path;          /* or NULL */
	const char *trace_path;         /* or NULL */
	const struct sl_catalogue *cat;
	struct timespec mtime;
	off_t size;
	int file_error_reported;
	struct sl_pool_trace trace;
	int trace_step;                 /* index of the step in force */
	double time_scale;
	double start_s;                 /* monotonic time of step 0 */
	struct sl_pool current;
	struct sl_ctl_slurm_source *slurm; /* the Slurm source (pool_watch_slurm.c), or NULL */
};

#define SL_CTL_SLURM_POLL_S 0.5

/* Reads the first pool. */
int sl_ctl_pool_watch_init(struct sl_ctl_pool_watch *w, const char *pool_path,
			   const char *trace_path, double time_scale,
			   const struct sl_catalogue *cat, double now_s, struct sl_err *err);

/* 1 when the pool changed since the last call (w->current holds the new one), 0 when not;
 * SL_EINPUT (with err) once for a pool file that stopped parsing (the pool stays). */
int sl_ctl_pool_watch_poll(struct sl_ctl_pool_watch *w, double now_s, struct sl_err *err);

/* A name for the pool in force: "pool file" or "trace step i of n". */
void sl_ctl_pool_watch_describe(const struct sl_ctl_pool_watch *w, char *buf, size_t size);

void sl_ctl_pool_watch_free(struct sl_ctl_pool_watch *w);

/* ---- Slurm (pool_watch_slurm.c) ---- */

struct sl_cluster;

/* Slurm as the source (sailor control --slurm): reads the nodes of partition (NULL: every node)
 * and fills cluster (the nodes sailor can use, in Slurm's order, as sl_slurm_node_host) and
 * cluster_json (the same hosts as a sailor.cluster/1 document, for the generations' cluster
 * files). The caller owns both; the watch keeps pointers to them and appends to both the nodes
 * that join later (a host's index never changes). No node sailor can use: SL_EINPUT, each
 * node's message logged, the first one's in err. */
int sl_ctl_pool_watch_init_slurm(struct sl_ctl_pool_watch *w, const char *partition,
				 const struct sl_catalogue *cat, struct sl_cluster *cluster,
				 json_t **cluster_json, double now_s, struct sl_err *err);

/* The next node whose problem is not yet reported (a node sailor cannot use as Slurm describes
 * it, sl_slurm_node_host; reported once for as long as its message stays): 1 with the node's
 * name and message, 0 when none is left (and for the other sources). */
int sl_ctl_pool_watch_node_problem(struct sl_ctl_pool_watch *w, char *node, size_t node_size,
				   char *msg, size_t msg_size);

/* Whether host h (an index of that cluster) is usable now; always 1 for the other sources. */
int sl_ctl_pool_watch_host_usable(const struct sl_ctl_pool_watch *w, int h);

/* Whether one of the n hosts in rank_host (cluster indices) is no longer usable: a running
 * generation there must stop even if the plan stays the same. 0 for the other sources. */
int sl_ctl_pool_watch_hosts_lost(const struct sl_ctl_pool_watch *w, const int *rank_host, int n);

/* Slurm's state of host h at the last poll ("IDLE", "ALLOCATED+NOT_RESPONDING", "DOWN*", ...;
 * "" when unknown, and for the other sources). */
const char *sl_ctl_pool_watch_host_state(const struct sl_ctl_pool_watch *w, int h);

/* The next poll asks Slurm at once, not after SL_CTL_SLURM_POLL_S (after the controller marked a
 * node down: the pool without it, planned while the job ends). Nothing for the other sources. */
void sl_ctl_pool_watch_refresh(struct sl_ctl_pool_watch *w);

/* Internal to pool_watch.c: the Slurm source's poll, description and free. */
int sl_ctl_pool_watch_poll_slurm(struct sl_ctl_pool_watch *w, double now_s, struct sl_err *err);
void sl_ctl_pool_watch_describe_slurm(const struct sl_ctl_pool_watch *w, char *buf, size_t size);
void sl_ctl_pool_watch_free_slurm(struct sl_ctl_pool_watch *w);

#endif
