/* The controller: elastic, fault-tolerant training as a sequence of generations.
 *
 * It plans on the pool in force (search.h, on the GPUs the pool offers that the cluster file has
 * hosts for, minus hosts left out after repeated failures), starts a generation (`sailor run` of
 * that plan, generation_process.h), and watches it, the pool (pool_watch.h) and its own signals:
 *   pool change   re-plan; the same plan: keep running; another plan: SIGTERM the generation (it
 *                 checkpoints at its next step boundary and stops), start the next one resuming
 *                 from that checkpoint under the new plan; no plan: stop and wait for a change.
 *   failure       a generation that ends without being asked (a rank died, the job aborted) or
 *                 that prints nothing for --hang-timeout: the next generation resumes from the
 *                 newest checkpoint on what is left; a host named in --exclude-after failures is
 *                 left out until the pool changes.
 *   SIGINT/TERM   the generation checkpoints and stops; the controller exits.
 * Invariants: never two generations at once (the next starts only after the previous one is
 * reaped, and its process group killed); every generation passes the same --steps, --global-batch
 * and seed and resumes from the checkpoint of the step its predecessor stopped at, so each step
 * trains the samples an uninterrupted run trains (checkpoints hold the data position); every
 * generation's plan, cluster file and output stay in RUNDIR/gen-<n>/.
 *
 * With val_data every generation evaluates on it (`sailor run --val-data --eval-every`); each
 * evaluation becomes an "eval" event and the newest one's loss is in /status and /metrics.
 * Files in RUNDIR: events.jsonl (events.h), steps.jsonl (every step event of every generation,
 * with "generation", "t_s" and "predicted_it_s"), gen-<n>/{plan.json, cluster.json,
 * stdout.jsonl, stderr.log, steps.jsonl}. A step comes from the generation's stdout, or, when its
 * line did not arrive there, from gen-<n>/steps.jsonl after the generation ended (steps_file.h).
 */
#ifndef SL_CTL_CONTROLLER_H
#define SL_CTL_CONTROLLER_H

#include "search/search.h"
#include "util/err.h"

struct sl_ctl_options {
	const char *model, *data, *cluster, *pool, *trace, *ckpt_dir, *run_dir, *http, *profiles;
	double time_scale;           /* trace seconds x this = wall seconds */
	long long steps, global_batch, ckpt_every;
	int seq_len;                 /* 0: the model's */
	int threads_per_rank;        /* 0: 1 */
	unsigned long long seed;
	int seed_given;
	struct sl_search_request req;
	int json;                    /* events also on stdout */
	double stop_timeout_s;       /* SIGTERM -> SIGKILL of a generation */
	double hang_timeout_s;       /* no output for this long: a failure */
	int exclude_after;           /* failures naming a host before it is left out */
	int max_failures;            /* consecutive failures without a step before giving up */
	int sync_checkpoints;        /* SAILOR_SYNC_CHECKPOINTS=1 for the generations */
	/* the held-out evaluation every generation runs (sailor run --val-data, --eval-every,
	 * --val-windows; NULL / 0: none, 0: sailor run's default) */
	const char *val_data;
	const char *islands;         /* islands template (plan/islands.h); NULL: synchronous */
	long long eval_every, val_windows;
	char **extra;                /* more `sailor run` options (after --) */
	int extra_count;
	/* Slurm (--slurm): hosts and pool from Slurm's nodes (pool_watch.h), each generation a
	 * Slurm job (`sailor run --slurm`, runtime/launch_slurm.h) ended with scancel */
	int slurm;
	const char *partition;       /* NULL: every node */
};

/* Runs the whole job. 0: step N reached; SL_EINFEASIBLE: gave up after repeated failures;
 * SL_EIO: stopped by a signal (after a checkpoint); other codes: bad input (err says which). */
int sl_ctl_run(const struct sl_ctl_options *o, struct sl_err *err);

#endif
