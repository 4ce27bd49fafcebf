/* The worker's held-out evaluation (runner_state.h): the loss of the model split over the plan's
 * stages and TP ranks on the --val-data windows (train/heldout.h), by a forward-only pass
 * through the pipelines.
 *
 * Each pipeline holds every layer once (its stages, each a TP group), so each evaluates a share
 * of the set on its own: micro-batch i (of the set's micro-batches of the plan's micro-batch
 * size) goes to pipeline i mod D. Along a pipeline it flows as a training forward does: stage 0
 * reads the tokens, each stage runs its forward into activation slot 0 and sends its output to
 * the next stage's TP ranks (the schedule's peers: TP rank i of stage k+1 receives from TP rank
 * i mod t_k of stage k, schedule.h), the last stage (which reads the targets) has the loss;
 * its TP rank 0 adds the micro-batch's loss times its tokens. One all-reduce over the world sums
 * the pipelines' parts, and every rank has the loss.
 *
 * Invariants: it reads the values the ranks' parameters hold (w->gpt) and writes no value,
 * gradient or moment, no data-loader position and no step timing, so training is the same with
 * and without it; it runs between steps, when no send of the step is in flight, and its own
 * messages carry EVAL_TAG (no schedule, snapshot or timeline message uses it) and are complete
 * when it returns; every rank calls it at the same steps (a collective). */
#include <stdlib.h>
#include <string.h>

#include "runtime/runner_state.h"
#include "train/cpu/kernels.h"
#include "train/progress.h"
#include "util/clock.h"

/* Above every schedule tag (schedule.h), apart from the snapshot's (32100) and the
 * timeline's (32200), below 32767 (MPI_TAG_UB's least guaranteed value). */
#define EVAL_TAG 32300

static int eval_batch(const struct worker *w) { return w->plan.micro_batch; }

int sl_runner_eval_check(struct worker *w, struct sl_err *err)
{
	const struct sl_train_options *o = &w->o->train;
	if (!o->val_data != (o->eval_every <= 0) || (o->val_windows && !o->val_data))
		return sl_err_set(err, SL_EUSAGE, "--val-data and --eval-every go together, and "
				  "--val-windows needs them");
	if (!o->val_data)
		return 0;
	struct sl_heldout h;
	int rc = sl_heldout_open(&h, o->val_data, &w->file, w->seq, eval_batch(w), w->model.vocab,
				 o->val_windows > 0 ? o->val_windows : SL_HELDOUT_DEFAULT_WINDOWS,
				 err);
	sl_heldout_close(&h);
	return rc;
}

int sl_runner_eval_init(struct worker *w, struct sl_err *err)
{
	const struct sl_train_options *o = &w->o->train;
	int rc = sl_runner_eval_check(w, err);
	if (rc || !o->val_data)
		return rc;
	/* every rank opens the set: they all count its micro-batches, and a bad file stops the
	 * job before its first step on every rank alike */
	rc = sl_heldout_open(&w->heldout, o->val_data, &w->file, w->seq, eval_batch(w),
			     w->model.vocab,
			     o->val_windows > 0 ? o->val_windows : SL_HELDOUT_DEFAULT_WINDOWS, err);
	if (rc)
		return rc;
	if (w->me.stage > 0) {
		w->eval_in = sl_alloc_floats((size_t)eval_batch(w) * w->seq * w->model.hidden);
		if (!w->eval_in)
			return sl_err_set(err, SL_ENOMEM, "out of memory for the held-out activations");
	}
	return 0;
}

void sl_runner_eval_free(struct worker *w)
{
	sl_heldout_close(&w->heldout);
	free(w->eval_in);
	w->eval_in = NULL;
}

void sl_runner_eval_header(const struct worker *w)
{
	const struct sl_train_options *o = &w->o->train;
	if (o->val_data)
		fprintf(w->out, "val data '%s': %lld tokens, the first %lld windows of %d+1 tokens "
			"(%lld tokens), after every %lld steps and the last\n", o->val_data,
			w->heldout.file.count, w->heldout.windows, w->seq,
			sl_heldout_tokens(&w->heldout), o->eval_every);
}

/* The world ranks this rank sends its output to (stage k to k+1 of its pipeline, as the
 * schedule's activations go); their count. */
static int next_stage_peers(const struct worker *w, int *peers)
{
	const struct sl_role *me = &w->me;
	if (me->stage + 1 >= w->table.num_stages)
		return 0;
	int t2 = sl_role_of(&w->table, me->stage + 1, me->pipeline, 0)->tp, n = 0;
	for (int i = 0; i < t2; i++)
		if (i % me->tp == me->tp_rank)
			peers[n++] = sl_role_of(&w->table, me->stage + 1, me->pipeline, i)->rank;
	return n;
}

/* The world rank this rank receives its input from (stage k-1 of its pipeline). */
static int previous_stage_peer(const struct worker *w)
{
	const struct sl_role *me = &w->me;
	int t1 = sl_role_of(&w->table, me->stage - 1, me->pipeline, 0)->tp;
	return sl_role_of(&w->table, me->stage - 1, me->pipeline, me->tp_rank % t1)->rank;
}

/* Micro-batch i of the set through this rank's stage: receive, forward, send; the loss it adds
 * (0 but on the last stage's TP rank 0). */
static int forward_one(struct worker *w, long long i, double *sum, struct sl_err *err)
{
	struct sl_comm *comm = w->comm;
	struct sl_gpt_microbatch mb = sl_heldout_microbatch(&w->heldout, i);
	long long act = (long long)mb.batch * mb.seq * w->model.hidden;
	int rc = 0;
	if (w->me.stage > 0) {
		struct sl_comm_request req = {0};
		rc = sl_comm_irecv(comm, w->eval_in, act, SL_COMM_FLOAT, previous_stage_peer(w),
				   EVAL_TAG, &req, err);
		if (!rc)
			rc = sl_comm_wait(comm, &req, err);
		if (rc)
			return rc;
	}
	double loss = 0.0;
	sl_gpt_select_slot(&w->gpt, 0);
	if ((rc = sl_gpt_forward(&w->gpt, &mb, w->me.stage > 0 ? w->eval_in : NULL, &loss, err)))
		return sl_err_prefix(err, "held-out micro-batch %lld", i);
	int last = w->me.stage == w->table.num_stages - 1;
	if (last && w->me.tp_rank == 0)
		*sum += sl_heldout_add(&mb, loss);
	int peers[SL_SCHEDULE_MAX_TP];
	int n = next_stage_peers(w, peers);
	struct sl_comm_request reqs[SL_SCHEDULE_MAX_TP];
	memset(reqs, 0, sizeof(reqs));
	for (int p = 0; p < n && !rc; p++)
		rc = sl_comm_isend(comm, sl_gpt_output(&w->gpt), act, SL_COMM_FLOAT, peers[p],
				   EVAL_TAG, &reqs[p], err);
	/* the output buffer is the next forward's: the sends complete first */
	for (int p = 0; p < n && !rc; p++)
		rc = sl_comm_wait(comm, &reqs[p], err);
	return rc;
}

int sl_runner_eval_loss(struct worker *w, double *val_loss, struct sl_err *err)
{
	double sum = 0.0;
	int D = w->table.num_pipelines, rc = 0;
	long long M = sl_heldout_microbatches(&w->heldout);
	for (long long i = w->me.pipeline; i < M && !rc; i += D)
		rc = forward_one(w, i, &sum, err);
	if (rc)
		return rc;
	if ((rc = sl_comm_allreduce(w->comm, &w->comm->world, &sum, 1, SL_COMM_DOUBLE, SL_COMM_SUM,
				    err)))
		return rc;
	*val_loss = sum / (double)sl_heldout_tokens(&w->heldout);
	return 0;
}

int sl_runner_eval_after_step(struct worker *w, long long step, int stop, struct sl_err *err)
{
	const struct sl_train_options *o = &w->o->train;
	if (!o->val_data || stop || (step % o->eval_every && step != o->steps))
		return 0;
	double t0 = sl_now_s(), val_loss = 0.0;
	/* an island run is judged on its global weights, with the exchanges in flight applied */
	int rc = sl_runner_islands_global_view(w, 1, err);
	if (!rc)
		rc = sl_runner_eval_loss(w, &val_loss, err);
	sl_runner_islands_global_view(w, 0, NULL);
	if (rc)
		return sl_err_prefix(err, "evaluation after step %lld", step);
	if (w->comm->rank == 0)
		sl_print_eval(w->out, o->json, step, val_loss, sl_heldout_tokens(&w->heldout),
			      sl_now_s() - t0);
	return 0;
}
