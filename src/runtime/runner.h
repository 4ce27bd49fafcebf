/* The worker of `sailor run`: one rank of a distributed training job executing its part of a
 * plan (roles.h) step by step, and the per-step output of rank 0.
 *
 * A step is the rank's instruction list (schedule.h: load, receive, forward, send, backward,
 * ... in 1F1B order), then the gradient sync (grad_sync.h), the global gradient norm, and AdamW
 * on the rank's own shards with the learning rate of the step: the arithmetic of single-process
 * training (trainer.h) on the same global batch, partitioned. Every micro-batch's loss is scaled
 * by 1 / (micro-batches of the step), and the pipelines' gradients summed, so uneven micro-batch
 * counts weigh every sample equally.
 *
 * Output (rank 0, to `out`): `sailor train`'s header, step and summary lines; with json its
 * "step" events and an "end" event that adds "ranks", "plan" and "stages": per stage the time
 * measured on its ranks (mean over them, seconds per step): compute (forward + backward),
 * p2p_wait (waiting for activations and gradients, and for sends to finish), dp_sync (gradient
 * all-reduces), optimizer (norm + AdamW), and the largest peak resident memory of its ranks.
 * Before the first step, with json, a "ready" event: {"event":"ready","step" (the step it
 * resumes from), "setup_s" (plan, model and data set up), "load_s" (the checkpoint loaded on
 * every rank)}. Every rank answers SIGUSR1 with {"event":"alive","rank":R} on its stdout
 * (cmd_run.c; the controller's liveness probe). With events_file, rank 0 also appends each step
 * line it prints, as JSON (the bytes of the --json line), to that file on its host, flushed
 * right after: a record of the steps that does not depend on mpirun forwarding stdout to the end
 * (the controller reconciles its pipe with it).
 */
#ifndef SL_RUNTIME_RUNNER_H
#define SL_RUNTIME_RUNNER_H

#include <stdio.h>

#include "plan/plan.h"
#include "runtime/comm.h"
#include "train/trainer.h"
#include "util/err.h"

struct sl_run_options {
	struct sl_train_options train; /* model, data, hyper-parameters, steps, checkpoints */
	const char *plan;               /* sailor.plan/1 (or SOSP'25) plan file */
	const char *cluster;            /* sailor.cluster/1, or NULL: every rank on this host */
	int threads_per_rank;           /* CPU threads of each rank (0: 1) */
	int micro_batch_given;          /* --micro-batch was on the command line */
	const char *events_file;        /* rank 0 appends its step lines here (NULL: no file) */
	int slurm;                      /* launch with srun (launch_slurm.h); hosts from Slurm
					 * unless cluster is given */
	const char *partition;          /* with slurm: the partition (NULL: Slurm's default) */
	const char *timeline;           /* rank 0 writes every rank's spans here at the end
					 * (plan/timeline.h; NULL: none recorded) */
};

/* Runs rank comm->rank of the job. Every rank must call it with the same options. Returns 0 or a
 * negative SL_E* with err filled (the caller reports it, naming the rank, and aborts the job).
 * SIGINT or SIGTERM on any rank (mpirun forwards them) stops every rank after the step in
 * progress, with a checkpoint when --ckpt-dir is given; that returns 0 (a stop, not a failure). */
int sl_runner_run(const struct sl_run_options *o, struct sl_comm *comm, FILE *out,
		       struct sl_err *err);

/* Makes SIGINT and SIGTERM a request to stop (instead of death) from now on; a rank calls it
 * first thing, so a stop that arrives while MPI starts or the checkpoint loads is not lost. The
 * request is acted on after the next step, agreed by every rank (sl_runner_run). */
void sl_runner_catch_stop(void);

/* What the checks read, for a caller that shows the run before starting it (--dry-run): the
 * plan (the caller frees it with sl_plan_free), the model, and the sequence length and global
 * batch the run trains with. */
struct sl_runner_checked {
	struct sl_plan plan;
	struct sl_model_config model;
	int seq_len;
	long long global_batch;
};

/* What the launcher checks before starting anything: the plan against the model and the
 * catalogue, the global batch, the data file; fills the role table (caller frees it) and the
 * catalogue, and, when checked is not NULL, *checked (only on success). */
struct sl_catalogue;
struct sl_role_table;
int sl_runner_check_plan(const struct sl_run_options *o, struct sl_role_table *table,
			 struct sl_catalogue *cat, struct sl_runner_checked *checked,
			 struct sl_err *err);

#endif
