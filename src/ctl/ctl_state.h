/* The controller's state, private to src/ctl/: one struct ctl for the life of `sailor control`,
 * shared by the files of its jobs (plan_choice.c, generation_lifecycle.c, step_intake.c, hang_probe.c,
 * node_death.c, status_publish.c, slurm_hooks.c, setup.c, and the loop in controller.c). Single-threaded: only
 * the loop's thread touches it; the HTTP server reads only the texts sl_ctl_publish hands it.
 *
 * Ownership: struct ctl owns everything it points to (freed by sl_ctl_run); a struct candidate
 * owns its plan and key (sl_ctl_candidate_free). */
#ifndef SL_CTL_CTL_STATE_H
#define SL_CTL_CTL_STATE_H

#include <limits.h>
#include <stdio.h>

#include <jansson.h>

#include "cluster/cluster_file.h"
#include "ctl/controller.h"
#include "ctl/decide.h"
#include "ctl/events.h"
#include "ctl/generation_process.h"
#include "ctl/pool_watch.h"
#include "ctl/run_lock.h"
#include "ctl/steps_file.h"
#include "plan/outer_bytes.h"
#include "util/test_faults.h"

#define STOP_NONE SL_CTL_STOP_NONE
#define STOP_RECONFIGURE SL_CTL_STOP_RECONFIGURE
#define STOP_NO_PLAN SL_CTL_STOP_NO_PLAN
#define STOP_SIGNAL SL_CTL_STOP_SIGNAL
#define STOP_HANG SL_CTL_STOP_HANG
#define STOP_NODE_DEATH SL_CTL_STOP_NODE_DEATH

#define RATE_WINDOW 10

struct candidate {
	int valid;
	struct sl_plan plan;
	struct sl_sim_result res;
	char *key;        /* canonical JSON text: equal plans have equal keys */
	double plan_s;
};

/* The liveness probe of the running generation (hang_probe.c): where its ranks run, and who
 * answered. Set up by sl_ctl_start_generation; sent_s is cleared by every step. */
struct ctl_probe {
	int world;                    /* the generation's ranks */
	int *rank_host;               /* cluster file index of each rank's host */
	unsigned char *answered;      /* which ranks answered the probe */
	double sent_s;                /* when the probe was sent (0: none in flight) */
	int silent_hosts[16];         /* hosts of the ranks that did not answer */
	int silent_count;
};

struct ctl {
	const struct sl_ctl_options *o;
	struct sl_sim_env *env;
	struct sl_cluster cluster;
	json_t *cluster_json;
	json_t *islands;              /* --islands: the template every plan is run with */
	struct sl_ctl_pool_watch pool;
	struct sl_ctl_events ev;
	struct sl_ctl_run_lock lock;  /* held for the controller's life (run_lock.h) */
	struct sl_ctl_http *http;
	FILE *steps_file;
	char self[PATH_MAX];
	double start_s;
	struct sl_ctl_hosts hosts;
	/* the generation */
	struct sl_ctl_gen gen;
	int running;
	int gen_count;
	struct candidate cur;         /* plan of the running (or last) generation */
	struct candidate next;        /* plan to start next */
	enum sl_ctl_stop stop;
	double last_output_s;
	int gen_ready;                /* the generation printed its ready line or a step: started */
	int gen_steps;                /* steps this generation completed */
	struct sl_ctl_seen_steps seen; /* the steps of this generation on record (steps_file.h) */
	char gen_steps_path[PATH_MAX + 16]; /* gen-<n>/steps.jsonl: rank 0's own record */
	int dead_rank;
	char dead_host[256];
	struct ctl_probe probe;       /* the liveness probe of a silent generation */
	/* --slurm: nodes of the running generation found dead (node_death.c) */
	int slurmd_port;
	unsigned char node_alive[SL_CTL_MAX_HOSTS]; /* slurmd answered a confirmation */
	int node_refusals[SL_CTL_MAX_HOSTS]; /* the watch's refusals in a row, per host */
	double node_watch_s;          /* the watch's last look */
	double node_end_poll_s;       /* sl_ctl_node_death_end's last squeue */
	int dead_nodes[16];           /* cluster indices, in the order found */
	int dead_node_count;
	char last_error[512];
	int end_seen;
	/* progress */
	long long step;               /* newest step completed by any generation */
	long long recorded_max;       /* newest step in steps.jsonl */
	long long ckpt_step;          /* newest checkpoint persisted */
	double loss;
	double val_loss;              /* newest held-out loss (NAN: none yet), after val_step */
	long long val_step;
	/* island runs ("outer" events of the generations' rank 0, runtime/runner_state.h): the
	 * outer steps, the time rank 0's island waited on them, and the bytes rank 0 sent for
	 * them, summed over generations; the gen_ fields are the running generation's so far */
	double outer_steps, outer_wait_s, outer_bytes;
	double gen_outer_steps, gen_outer_wait_s, gen_outer_bytes;
	struct sl_outer_bytes gen_outer;  /* a round of the running generation's exchange */
	double outer_class_bytes[SL_LINK_CLASSES]; /* the pool's bytes so far, by link class */
	double step_times[RATE_WINDOW];
	int step_time_count;
	double usd;                   /* spent by finished generations */
	double gen_usd_per_hour;
	int reconfigurations, failures, consecutive_failures;
	struct sl_ctl_reconf rc;
	int signal_seen;
	int waiting;                  /* no plan possible: waiting for a pool change */
	/* the planner's own error when the last planning ended in one (a missing profile, a model
	 * that fits nowhere: the message says what to do); code 0 when it searched and found
	 * nothing that meets the constraints, or had no GPU to search */
	struct sl_err search_err;
	double published_s;
	/* test-only (util/test_faults.h): step lines to ignore when they come by pipe */
	struct sl_test_drop_lines drop;
};

/* ---- plan choice (plan_choice.c) ---- */

void sl_ctl_candidate_free(struct candidate *c);

/* Whether the runtime executes the plan on the cluster left: the checks `sailor run` makes
 * before it starts anything (plan against model and batch, data, placement on hosts). With
 * rank_host, also where each rank goes (the cluster file's host index; malloc'd, *world
 * entries): the placement is deterministic, so it is the launcher's. */
/* Writes the plan a generation runs to path: the planner's, with --islands its pipelines
 * grouped into islands (plan/islands.h); outer (may be NULL) gets what a round of its outer
 * exchange sends (zeros without islands). */
int sl_ctl_save_plan(const struct ctl *c, const struct sl_plan *plan, const char *path,
		     struct sl_outer_bytes *outer, struct sl_err *err);
int sl_ctl_runnable(struct ctl *c, const struct sl_plan *plan, int **rank_host, int *world,
		    struct sl_err *err);

/* Plans on the pool left into cand (freed first): the best candidate the runtime can execute,
 * or cand->valid 0 and why there is none. */
int sl_ctl_plan_now(struct ctl *c, struct candidate *cand, char *why, size_t why_size);

/* The plan in a few numbers (a new JSON object; json null for no plan). */
json_t *sl_ctl_plan_summary(const struct ctl *c, const struct candidate *p);

/* The plan (or why there is none) as an event; sets c->waiting. */
void sl_ctl_log_plan(struct ctl *c, const struct candidate *p, const char *why, int same);

/* ---- generations (generation_lifecycle.c) ---- */

/* Step of the newest checkpoint in --ckpt-dir, -1 if none. */
long long sl_ctl_newest_checkpoint(const struct ctl *c);

/* Starts c->next as the next generation (it becomes c->cur). */
int sl_ctl_start_generation(struct ctl *c, struct sl_err *err);

/* Asks the running generation to stop (once), for why. */
void sl_ctl_stop_generation(struct ctl *c, enum sl_ctl_stop why);

/* The generation ended: account for it and say how. Returns 1 when the job is complete. */
int sl_ctl_generation_ended(struct ctl *c);

/* ---- step intake (step_intake.c) ---- */

/* A line of the generation's stdout or stderr (sl_ctl_line_fn; ctx is the struct ctl). */
void sl_ctl_on_line(void *ctx, int is_stderr, const char *line);

/* After the generation's end: the steps of its own file whose lines did not arrive. */
void sl_ctl_recover_steps(struct ctl *c);

/* ---- the liveness probe (hang_probe.c) ---- */

/* Sends the probe to a generation silent too long; once the probe window passed, names the
 * silent hosts and stops and kills the generation. */
void sl_ctl_probe_check(struct ctl *c, double now_s);

/* ---- node deaths (node_death.c; --slurm, nothing otherwise) ---- */

/* slurmd's port, once at start-up. */
void sl_ctl_node_death_setup(struct ctl *c);

/* A new generation: nothing of it found dead yet. */
void sl_ctl_node_death_reset(struct ctl *c);

/* A line of the generation's stderr: when it names a host whose ranks were lost, the
 * generation's nodes are asked (their slurmd); the dead ones are marked down in Slurm with a
 * reason, left out, and the generation is killed at once. */
void sl_ctl_node_death_line(struct ctl *c, const char *line);

/* Once the generation printed nothing for a few steps' time: every quarter second the slurmd of
 * its nodes asked; one that refuses twice in a row is dead (as above). The death of a node whose
 * peers print nothing. */
void sl_ctl_node_death_watch(struct ctl *c, double now_s);

/* After a pool poll: a node of the running generation that Slurm reports down or not
 * responding, and whose slurmd does not answer either, died; the generation is killed at once.
 * (One whose slurmd answers is left to the pool change: stopped for a new plan.) */
void sl_ctl_node_death_pool(struct ctl *c);

/* Asks the slurmd of the n hosts (cluster indices) whether they live; marks the dead ones down
 * (reason naming how, what said they were lost) and leaves them out. Returns how many died. */
int sl_ctl_node_death_confirm(struct ctl *c, const int *hosts, int n, const char *how);

/* A generation whose nodes died is not killed with its job's tasks: its srun takes their ends
 * and leaves (sl_ctl_slurm_kill_tasks says why). Every NODE_END_POLL_S: once squeue no longer
 * lists its job (nothing of it runs on any node), or NODE_END_WAIT_S after the kill, the
 * launcher and whatever is left of srun are killed. */
void sl_ctl_node_death_end(struct ctl *c, double now_s);

/* ---- status (status_publish.c) ---- */

/* Hands /status and /metrics their texts (nothing without --http). */
void sl_ctl_publish(struct ctl *c);

/* The pool as an event of type ("pool", "pool_change"). */
void sl_ctl_pool_event(struct ctl *c, const char *type);

/* ---- Slurm (slurm_hooks.c) ---- */

/* Slurm: the generation's job neither queued nor running any more (a warning, prefixed with
 * "generation N: " when say_generation, if that fails). Nothing without --slurm. */
void sl_ctl_slurm_end_job(const struct ctl *c, int say_generation);

/* Slurm: every task of the running generation's job killed now, on every node, by SIGUSR2
 * (`scancel --signal=USR2`; the ranks leave its default action, termination, in place). Not a
 * cancel: the ranks left by a dead node block in MPI and cannot checkpoint, and a cancelled
 * job's tasks get SIGTERM (which they answer by finishing a step that never ends) and SIGKILL
 * only KillWait later (30 s by default); `scancel --signal=KILL` is a cancel too. srun is left
 * alive: each node's slurmstepd tells it of its tasks' ends, and with srun gone it retries that
 * for ~2.3 s (0.1 s doubling to 0.8 s, 5 times) before the node is free for the next job.
 * Call before the node is marked down (a job killed for a node failure takes no more signals).
 * Nothing without --slurm. */
void sl_ctl_slurm_kill_tasks(struct ctl *c);

/* Slurm: the running generation's job cancelled (`scancel --name`), without waiting: after
 * sl_ctl_slurm_kill_tasks and the dead nodes marked down, what is left of it ends in a moment
 * (sl_ctl_node_death_end waits for that). Nothing without --slurm. */
void sl_ctl_slurm_cancel_job(struct ctl *c);

/* Slurm: a first plan impossible on the nodes Slurm offers is bad input, not a wait; the
 * planner's own error (c->search_err) is its cause, else the nodes or the constraints. */
int sl_ctl_slurm_no_first_plan(const struct ctl *c, struct sl_err *err);

/* ---- start-up (setup.c) ---- */

int sl_ctl_setup(struct ctl *c, struct sl_err *err);

#endif
