/* The controller's decisions as functions of what it knows: no processes, no clock, no files.
 * controller.c gathers the facts (pipes, timers, the pool) and asks these; the unit tests
 * (tests/unit/test_ctl_decide.c) ask them the same questions without mpirun.
 *
 *   host health     failures counted per host of the cluster file; a host named in
 *                   exclude_after failures is left out of planning and placement until the pool
 *                   says it is back: a pool change that offers more GPUs of that host's (type,
 *                   zone) than the pool before it readmits every host of that kind and forgets
 *                   their failures. Any other change (another kind, or fewer) leaves it out.
 *   effective pool  the pool, capped per (type, zone) at the slots of the hosts not left out.
 *   pool change     keep running (same plan), stop for a new plan, stop for no plan, retarget a
 *                   stop in progress, start, or wait.
 *   end of a        complete (exit 0 at the last step), stopped (ended because asked), failed
 *   generation      (anything else; a hang; a rank that died even while a stop was on its way).
 *   launcher lines  "rank R (stage .., on HOST) died|failed ..." names the rank and host; a
 *                   death by signal 15 is the stop the controller itself sent. OpenMPI's "peer
 *                   process has unexpectedly disconnected" (and "failed to TCP connect to a
 *                   peer") and srun's "Node failure on H" say ranks were lost.
 *   liveness probe  after a silence the ranks are asked to answer (SIGUSR1); the hosts of the
 *                   ranks that did not answer are the ones that stopped answering.
 *   reconfiguration its parts from the timestamps the controller took.
 *
 * Invariants: every function is deterministic in its arguments. Ownership: plain data only.
 */
#ifndef SL_CTL_DECIDE_H
#define SL_CTL_DECIDE_H

#include <stddef.h>

#include "cluster/pool.h"
#include "cluster/cluster_file.h"

#define SL_CTL_MAX_HOSTS SL_CLUSTER_MAX_HOSTS

/* Why a running generation is being stopped. */
enum sl_ctl_stop {
	SL_CTL_STOP_NONE,
	SL_CTL_STOP_RECONFIGURE, /* the pool changed and yields another plan */
	SL_CTL_STOP_NO_PLAN,     /* the pool changed and yields no plan */
	SL_CTL_STOP_SIGNAL,      /* the controller got SIGINT/SIGTERM */
	SL_CTL_STOP_HANG,        /* the generation was silent for --hang-timeout */
	SL_CTL_STOP_NODE_DEATH,  /* a node of it died (--slurm: node_death.c): killed at once */
};
/* "none", "reconfigure", "no plan", "signal", "hang", "node death" (the event log's
 * stop_reason). */
const char *sl_ctl_stop_name(enum sl_ctl_stop stop);

/* ---- host health ---- */

struct sl_ctl_hosts {
	int count;                          /* hosts of the cluster file */
	int fails[SL_CTL_MAX_HOSTS];        /* failures since the host was last (re)admitted */
	unsigned char excluded[SL_CTL_MAX_HOSTS];
};

/* All count hosts admitted, no failures. count is clamped to [0, SL_CTL_MAX_HOSTS]. */
void sl_ctl_hosts_init(struct sl_ctl_hosts *h, int count);

/* Hosts joined (Slurm's dynamic nodes, pool_watch.h): count hosts now, the new ones admitted
 * with no failures. count is clamped to [h->count, SL_CTL_MAX_HOSTS]. */
void sl_ctl_hosts_grow(struct sl_ctl_hosts *h, int count);

/* One more failure of host (an index of the cluster file; out of range: ignored). Returns 1 when
 * this failure leaves it out (its exclude_after-th; exclude_after <= 0 never excludes), else 0. */
int sl_ctl_hosts_record_failure(struct sl_ctl_hosts *h, int host, int exclude_after);

/* The pool changed from before to after: readmits the hosts whose (type, zone) after offers
 * more of than before, and forgets their failures. Writes the indices of the hosts readmitted
 * (that were left out) to readmitted (up to max; may be NULL) and returns how many there were. */
int sl_ctl_hosts_pool_changed(struct sl_ctl_hosts *h, const struct sl_cluster *cluster,
			      const struct sl_pool *before, const struct sl_pool *after,
			      int *readmitted, int max);

/* pool capped per (type, zone) at the slots of cluster's hosts not left out. */
void sl_ctl_effective_pool(const struct sl_pool *pool, const struct sl_cluster *cluster,
			   const struct sl_ctl_hosts *h, struct sl_pool *out);

/* Index of the host named name in cluster, or -1. */
int sl_ctl_host_index(const struct sl_cluster *cluster, const char *name);

/* ---- what the generation says ---- */

/* 1 when line (one line of the launcher's stderr) reports a rank that died or failed, not by
 * signal 15 (the controller's own stop): rank and host (NUL-terminated, truncated to host_size)
 * are set. 0 for any other line. */
int sl_ctl_parse_rank_death(const char *line, int *rank, char *host, size_t host_size);

/* 1 when line (one line of the generation's stderr) says ranks of the job were lost: OpenMPI's
 * "peer process has unexpectedly disconnected" (a rank saw its TCP connection to a peer closed:
 * the peer's processes were killed) or "failed to TCP connect to a peer MPI process", or srun's
 * "srun: error: Node failure on H" (Slurm lost the node). what gets a few words saying which.
 * It says the ranks are gone, not why or where: a rank that crashed on a healthy node reads the
 * same to its peers, and OpenMPI names the host (or only an address) lines later, if at all. */
int sl_ctl_parse_peer_lost(const char *line, char *what, size_t what_size);

/* ---- pool changes ---- */

enum sl_ctl_pool_action {
	SL_CTL_KEEP,              /* nothing to do: the same plan runs, or a stop already on its way
				   * re-plans when the generation ends */
	SL_CTL_STOP_FOR_PLAN,     /* stop the generation; the new plan starts next */
	SL_CTL_STOP_FOR_NO_PLAN,  /* stop the generation; then wait for a change */
	SL_CTL_RETARGET,          /* a reconfiguration is stopping the generation: the new plan
				   * (or none) replaces the one it was stopping for */
	SL_CTL_START,             /* nothing runs: start the new plan */
	SL_CTL_WAIT,              /* nothing runs and no plan: wait for a change */
};

/* running: a generation runs; stopping: why it is being stopped (NONE: it is not); plan_valid:
 * the new pool has a plan; same_as_running: that plan equals the running generation's. */
enum sl_ctl_pool_action sl_ctl_decide_pool_change(int running, enum sl_ctl_stop stopping,
						  int plan_valid, int same_as_running);

/* ---- the end of a generation ---- */

enum sl_ctl_outcome { SL_CTL_COMPLETE, SL_CTL_STOPPED, SL_CTL_FAILED };
/* "complete", "stopped", "failed" */
const char *sl_ctl_outcome_name(enum sl_ctl_outcome outcome);

/* exit_status: the launcher's (0 ok); step: the newest step it completed; steps: the job's
 * target; stopping: why the controller stopped it; rank_died: the launcher named a dead rank. */
enum sl_ctl_outcome sl_ctl_classify_end(int exit_status, long long step, long long steps,
					enum sl_ctl_stop stopping, int rank_died);

/* Failures in a row that never completed a step: a generation that ran steps restarts the count
 * at 1. The controller gives up at --max-failures. */
int sl_ctl_consecutive_failures(int before, int steps_run);

/* Steps of work a failure loses: from the newest checkpoint (resume_step; < 0: none, step 0) to
 * the newest step completed. */
long long sl_ctl_lost_steps(long long step, long long resume_step);

/* ---- liveness probe ---- */

/* world ranks; rank_host[r]: the cluster host of rank r; answered[r]: rank r answered the
 * probe. Writes the distinct hosts of silent ranks to hosts (first-silent-rank order, up to max)
 * and returns how many. 0 when every rank answered, and when none did (then nothing tells one
 * host from another: the job as a whole is stuck, e.g. the launcher). */
int sl_ctl_silent_hosts(int world, const int *rank_host, const unsigned char *answered,
			int *hosts, int max);

/* ---- reconfiguration ---- */

/* Monotonic timestamps of one reconfiguration (0: not reached). */
struct sl_ctl_reconf {
	int active;
	int from_gen;
	double change_s;   /* the pool change was seen */
	double plan_s;     /* seconds the planner took */
	double term_s;     /* the stop was sent */
	double ckpt_s;     /* the stopping generation's last checkpoint was on disk */
	double exit_s;     /* the stopping generation was reaped */
	double start_s;    /* the next generation was started */
	double ready_s;    /* it said it was ready to train (0: it did not say) */
	double load_s;     /* seconds it spent loading the checkpoint (from its "ready" line) */
};

struct sl_ctl_reconf_parts {
	double total_s;       /* change -> end of the first step of the new generation */
	double plan_s;
	double checkpoint_s;  /* stop sent -> checkpoint on disk (0 if none was written) */
	double stop_s;        /* checkpoint (or stop sent) -> generation reaped */
	double between_s;     /* reaped -> next started */
	double start_s;       /* started -> training begins, less the load */
	double load_s;        /* the checkpoint load, as the new generation measured it */
	double first_step_s;  /* the first step */
};

/* now_s: the end of the new generation's first step; first_step_s: its duration. */
void sl_ctl_reconf_parts(const struct sl_ctl_reconf *r, double now_s, double first_step_s,
			 struct sl_ctl_reconf_parts *out);

#endif
