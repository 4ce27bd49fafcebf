/* The worker's state, private to runner.c, runner_checkpoint.c, runner_timeline.c and
 * runner_eval.c: one
 * struct worker per rank for the life of sl_runner_run. Ownership: the worker owns everything
 * it points to except o, comm and out (the caller's); runner.c's teardown frees it. */
#ifndef SL_RUNTIME_RUNNER_STATE_H
#define SL_RUNTIME_RUNNER_STATE_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "cluster/catalogue.h"
#include "runtime/comm.h"
#include "runtime/grad_sync.h"
#include "runtime/groups.h"
#include "runtime/outer_sync.h"
#include "plan/roles.h"
#include "runtime/runner.h"
#include "plan/schedule.h"
#include "plan/timeline.h"
#include "runtime/zero.h"
#include "model/model_config.h"
#include "plan/plan.h"
#include "train/data.h"
#include "train/heldout.h"
#include "train/model.h"

/* Time per rank, summed over the steps run; T_CPU is the rank's process CPU (every thread,
 * MPI's included), what a device that is a CPU quota pays from its budget, T_SYNC_CPU the part
 * of it spent in the gradient sync, T_WAIT_CPU the part spent in its sleeping waits, and
 * T_TESTS (a count, not seconds) their MPI tests (comm.h), T_OUTER the islands' outer steps
 * (starting, landing and waiting for exchanges; runner_islands.c). */
enum { T_COMPUTE, T_P2P, T_SYNC, T_OPTIM, T_STEP, T_CPU, T_SYNC_CPU, T_WAIT_CPU, T_TESTS,
       T_OUTER, T_COUNT };

struct tp_ctx {
	struct sl_comm *comm;
	const struct sl_comm_group *group;
};

struct worker {
	const struct sl_run_options *o;
	struct sl_comm *comm;
	FILE *out;
	FILE *events;                /* rank 0 with --events-file: each step line appended */
	long long late_stop_step;    /* test-only (util/test_faults.h; 0: none) */
	int training_lock;           /* rank 0: <ckpt-dir>/training.lock, shared (-1: none) */
	struct sl_catalogue cat;
	struct sl_plan plan;
	struct sl_model_config model;
	struct sl_role_table table;
	struct sl_role me;
	struct sl_groups groups;
	struct tp_ctx tp;
	struct sl_schedule sched;
	struct sl_gpt gpt;
	struct sl_gpt whole;         /* rank 0 with checkpoints: the assembly area */
	struct sl_grad_sync sync;
	int zero_on;                 /* this stage's optimizer is sharded (zero.h) */
	struct sl_zero zero;
	struct sl_param **unsharded; /* with zero_on: the parameters AdamW updates whole */
	int unsharded_count;
	int has_data;                /* first or last stage: reads tokens/targets */
	struct sl_token_file file;
	struct sl_data_loader loader;
	int32_t *tokens, *targets;   /* this pipeline's micro-batches of the step */
	int32_t *skip;               /* scratch for the other pipelines' samples */
	float **act_in;              /* per slot: the received input activation */
	float **grad_out;            /* per slot: a copy of the input gradient being sent */
	float *grad_in;              /* the received output gradient */
	struct sl_comm_request *act_send, *grad_send; /* per slot x peers */
	int max_peers;
	int seq, nmb_total, nmb;     /* sequence length, micro-batches of the step, of my pipeline */
	long long global;
	double times[T_COUNT];
	double *step_times;          /* one per step run, grown as steps run (not sized by --steps) */
	long long step_times_cap;
	char resumed_from[4200];
	/* --timeline (timeline.h): this rank's spans; its times are CLOCK_REALTIME seconds,
	 * sl_now_s() + realtime_offset_s, so that ranks' times compare */
	int timeline_on;
	struct sl_timeline timeline;
	int timeline_step;           /* the step being recorded, 1-based */
	double realtime_offset_s;
	/* islands (runner_islands.c): the outer step's state when the plan has them */
	int outer_on;
	int heap_given_back; /* islands: the heap's free pages given back before the first exchange */
	struct sl_outer_sync outer;
	float **view;                /* per parameter: the global weights an evaluation reads */
	int view_in;                 /* 1 while they are swapped into the parameters */
	long long reported_outer_steps; /* rank 0: the fragment syncs its last "outer" event said */
	/* --val-data (runner_eval.c): the held-out set (every rank's), and the input activation
	 * a rank of a later stage receives during an evaluation (NULL on stage 0) */
	struct sl_heldout heldout;
	float *eval_in;
};

/* ---- checkpoints (runner_checkpoint.c) ---- */

/* Saves step's checkpoint: the snapshot now, the file in the background (rank_checkpoint.h);
 * path gets where it goes. */
int sl_runner_save(struct worker *w, long long step, json_t *train, char *path, size_t size,
			struct sl_err *err);

/* Rank 0: says which checkpoints finished persisting since the last call; with json as
 * {"event":"checkpoint","step","path","persist_s"} (the controller logs them). ckpt gets the
 * newest path; last: the final call (the summary names it). */
void sl_runner_report_persisted(struct worker *w, char *ckpt, size_t size, int last);

/* Loads the newest checkpoint of --ckpt-dir into the rank's model, optimizer and data loader;
 * *start is its step. Data and sequence length must be the checkpoint's. */
int sl_runner_resume(struct worker *w, long long *start, struct sl_err *err);

/* ---- output (runner_output.c) ---- */

/* The recomputation stage k runs: --recompute, else the plan's. */
int sl_runner_stage_recompute(const struct worker *w, int k);
/* Rank 0: the model, plan, batch, data and islands lines before the first step. */
void sl_runner_print_header(struct worker *w, long long start);
/* Rank 0 prints the summary (text or the JSON "end" event); every rank contributes its timings,
 * memory and outer-exchange figures (a collective over the world). */
int sl_runner_print_end(struct worker *w, long long ran, double last_loss, const char *ckpt,
			struct sl_err *err);

/* ---- islands (runner_islands.c, docs/design/islands.md) ---- */

int sl_runner_islands_on(const struct worker *w);
/* Every rank: the outer step's groups and global weights (after the model and groups). */
int sl_runner_islands_setup(struct worker *w, struct sl_err *err);
void sl_runner_islands_free(struct worker *w);
/* 1 when the rank's island trains at run step `step` (always without islands). */
int sl_runner_islands_steps_at(const struct worker *w, long long step);
/* The island's 1-based inner step at run step `step` (AdamW's bias correction). */
long long sl_runner_islands_inner_step(const struct worker *w, long long step);
/* Micro-batches the rank's island trains per inner step: its gradients' 1/M. */
int sl_runner_islands_microbatches(const struct worker *w);
/* Tokens the whole pool trains per run step (every island, averaged over a round). */
double sl_runner_islands_tokens_per_step(const struct worker *w);
/* After the island's inner step at run step `step`: lands and starts outer syncs. */
int sl_runner_islands_after_step(struct worker *w, long long step, struct sl_err *err);
/* Moves exchanges in flight along (between the schedule's instructions). */
int sl_runner_islands_progress(struct worker *w, struct sl_err *err);
/* 1 after the last run step of a round (always without islands). */
int sl_runner_islands_round_end(const struct worker *w, long long step);
/* World agreement on a stop at a round end. */
int sl_runner_islands_agree_stop(struct worker *w, int asked, int *stop, struct sl_err *err);
/* After the run's last step: the final flush; the parameters then hold the global weights. */
int sl_runner_islands_finish(struct worker *w, struct sl_err *err);
/* Swaps the global weights into the parameters' values (and back): a checkpoint saves them. */
void sl_runner_islands_swap_global(struct worker *w);
void sl_runner_islands_print_header(const struct worker *w);
/* Rank 0 with --json, after a step that landed fragment syncs: {"event":"outer","step",
 * "fragment_syncs" (landed so far by rank 0's island), "fragments", "outer_wait_s" (rank 0's
 * time waiting for exchanges so far), "bytes_sent" (rank 0's over the outer groups so far)}. */
void sl_runner_islands_report(struct worker *w, long long step);
/* begin = 1: settles the exchanges in flight and puts the global weights (with them applied)
 * into the parameters' values; begin = 0: puts the island's own back. Nothing without islands.
 * An evaluation judges an island run on what it would hand over now. */
int sl_runner_islands_global_view(struct worker *w, int begin, struct sl_err *err);

/* ---- --timeline (runner_timeline.c) ---- */

/* Gathers every rank's spans on rank 0, which writes them to --timeline; every rank calls it
 * (point-to-point messages to and from rank 0). */
int sl_runner_write_timeline(struct worker *w, struct sl_err *err);

/* ---- held-out evaluation, --val-data and --eval-every (runner_eval.c) ---- */

/* The launcher's check (sl_runner_check_plan): the options go together, and the held-out file
 * fits the training data (w->file, open) and the model; opens nothing that stays open. */
int sl_runner_eval_check(struct worker *w, struct sl_err *err);

/* After setup (w->file, the plan and the role open): checks as sl_runner_eval_check and opens
 * the held-out set on every rank; nothing without --val-data. sl_runner_eval_free releases it
 * (also after a failed init). */
int sl_runner_eval_init(struct worker *w, struct sl_err *err);
void sl_runner_eval_free(struct worker *w);

/* Rank 0's header line about the set (nothing without --val-data). */
void sl_runner_eval_header(const struct worker *w);

/* The mean loss on the held-out set (train/heldout.h) of the model whose values the ranks'
 * parameters hold now (w->gpt's params[i]->value, each rank its shards), by a forward-only pass
 * through the pipelines; every rank gets it. Collective: every rank of the job calls it, between
 * steps. It reads only those values: a caller may put other weights in the parameters around
 * the call (e.g. the islands' global weights, saving and restoring the rank's own) and gets
 * their loss; training is unchanged by it (no gradient, moment, data position or timing is
 * touched). Within 1e-5 relative of `sailor train`'s loss with the same weights (the TP ranks'
 * partial sums round differently). */
int sl_runner_eval_loss(struct worker *w, double *val_loss, struct sl_err *err);

/* The evaluation of train_loop: after step (1-based) when it is due (every --eval-every steps
 * and after the last, not after an agreed stop), sl_runner_eval_loss and rank 0's line or
 * {"event":"eval"} (train/progress.h). Collective; every rank passes the same step and stop. */
int sl_runner_eval_after_step(struct worker *w, long long step, int stop, struct sl_err *err);

#endif
