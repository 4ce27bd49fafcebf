/* The worker of `sailor run` (runner.h).
 * Invariants: every rank runs the same sequence of collectives per step (gradient sync, norm,
 * loss and stop flag, checkpoint) so they can never be mismatched; the data loader of every rank
 * that reads data sits at the step's first sample at each step boundary (each rank skips the
 * micro-batches of the other pipelines), so checkpoints taken from rank 0 hold the position an
 * uninterrupted single-process run would have; no buffer handed to a non-blocking send is written
 * before that send completed (activations per slot, gradients per slot). */
#include "runtime/runner.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster/catalogue.h"
#include "runtime/rank_checkpoint.h"
#include "runtime/grad_sync.h"
#include "runtime/groups.h"
#include "plan/roles.h"
#include "plan/schedule.h"
#include "runtime/zero.h"
#include "model/model_config.h"
#include "plan/plan.h"
#include "train/checkpoint.h"
#include "train/cpu/kernels.h"
#include "train/data.h"
#include "train/lr_schedule.h"
#include "train/model.h"
#include "train/optimizer.h"
#include "train/progress.h"
#include "runtime/runner_state.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/test_faults.h"

/* A stop asked of this rank (SIGINT or SIGTERM). Only a request: the ranks act on the flag they
 * agree on after each step (run_step), never on this one, because the signals reach the ranks at
 * different moments and a rank that acted on its own would stop a step before the others and
 * leave them waiting for it (the stop that hung until the controller's SIGKILL, issue 20). */
static volatile sig_atomic_t stop_signal;
static void on_signal(int sig) { stop_signal = sig; }

void sl_runner_catch_stop(void)
{
	struct sigaction sa = {0};
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/* The TP group's reductions, handed to the layers (struct tp_ctx, runner_state.h). */
static int tp_sum(float *buf, long long count, void *ctx)
{
	struct tp_ctx *c = ctx;
	return sl_comm_allreduce(c->comm, c->group, buf, count, SL_COMM_FLOAT, SL_COMM_SUM, NULL);
}

static int tp_max(float *buf, long long count, void *ctx)
{
	struct tp_ctx *c = ctx;
	return sl_comm_allreduce(c->comm, c->group, buf, count, SL_COMM_FLOAT, SL_COMM_MAX, NULL);
}


static long long mb_tokens(const struct worker *w)
{
	return (long long)w->plan.micro_batch * w->seq;
}

static int setup_plan(struct worker *w, struct sl_err *err)
{
	const struct sl_run_options *o = w->o;
	int rc = sl_catalogue_load(NULL, &w->cat, err);
	if (rc)
		return rc;
	sl_plan_init(&w->plan);
	if ((rc = sl_plan_load(o->plan, &w->cat, &w->plan, err)))
		return rc;
	const char *model = o->train.model ? o->train.model : w->plan.model;
	if (!model || !model[0])
		return sl_err_set(err, SL_EUSAGE, "plan '%s' names no model: give --model", o->plan);
	if ((rc = sl_model_config_load(model, &w->model, err)))
		return rc;
	w->seq = o->train.seq_len > 0 ? o->train.seq_len : w->model.seq_len;
	if (w->seq > w->model.seq_len)
		return sl_err_set(err, SL_EUSAGE, "--seq-len %d is longer than model '%s' allows (%d)",
				  w->seq, w->model.name, w->model.seq_len);
	if (o->micro_batch_given && o->train.micro_batch != w->plan.micro_batch)
		return sl_err_set(err, SL_EUSAGE,
				  "--micro-batch %d differs from the plan's micro_batch %d: the plan "
				  "decides it (leave --micro-batch out)",
				  o->train.micro_batch, w->plan.micro_batch);
	w->global = o->train.global_batch > 0 ? o->train.global_batch : w->plan.global_batch;
	if (w->global <= 0)
		return sl_err_set(err, SL_EUSAGE, "plan '%s' gives no global_batch: give "
				  "--global-batch", o->plan);
	if ((rc = sl_plan_check(&w->plan, sl_model_plan_layers(&w->model), w->global, &w->cat,
				err)))
		return rc;
	if (w->plan.islands && (rc = sl_islands_check_model(w->plan.islands, &w->model, err)))
		return sl_err_prefix(err, "plan '%s'", o->plan);
	if ((rc = sl_role_table_build(&w->plan, w->global, &w->table, err)))
		return rc;
	w->nmb_total = (int)(w->global / w->plan.micro_batch);
	return 0;
}

static int setup_rank(struct worker *w, struct sl_err *err)
{
	struct sl_comm *comm = w->comm;
	if (comm->size != w->table.world_size)
		return sl_err_set(err, SL_EUSAGE,
				  "this MPI job has %d ranks, but plan '%s' needs %d (one per GPU: "
				  "the sum of tp over its replicas): start it with mpirun -np %d",
				  comm->size, w->o->plan, w->table.world_size, w->table.world_size);
	w->me = w->table.roles[comm->rank];
	int rc = sl_comm_set_idle_wait(
		comm, sl_comm_idle_wait_for(w->cat.gpus[w->me.gpu].cpu_quota_cores), err);
	if (!rc)
		rc = sl_groups_build(comm, &w->table, &w->groups, err);
	if (rc)
		return rc;
	w->tp = (struct tp_ctx){comm, &w->groups.tp};
	if ((rc = sl_schedule_build(&w->table, comm->rank, &w->sched, err)))
		return rc;
	w->nmb = w->table.microbatches[w->me.pipeline];
	int threads = w->o->threads_per_rank > 0 ? w->o->threads_per_rank : 1;
	if ((rc = sl_cpu_set_threads(threads, err)))
		return rc;
	struct sl_tp_comm hooks = {.allreduce_sum = tp_sum, .allreduce_max = tp_max, .ctx = &w->tp};
	/* memory options: --recompute overrides the plan's; ZeRO needs more than one replica */
	const struct sl_plan_stage *ps = &w->plan.stages[w->me.stage];
	w->zero_on = ps->zero && w->table.num_pipelines > 1;
	struct sl_gpt_options opts = {
		.slots = w->sched.slots,
		.recompute = w->o->train.recompute >= 0 ? w->o->train.recompute : ps->recompute,
		.moments = !w->zero_on ? SL_GPT_MOMENTS_ALL
				       : (w->table.num_stages > 1 ? SL_GPT_MOMENTS_TABLE_ONLY
								  : SL_GPT_MOMENTS_NONE),
	};
	rc = sl_gpt_init_opts(&w->gpt, &w->model, w->me.first_layer, w->me.last_layer,
			      w->plan.micro_batch, w->seq, &opts, w->me.tp, w->me.tp_rank, &hooks,
			      sl_cpu_threads(), err);
	if (rc)
		return sl_err_prefix(err, "stage %d (layers %d-%d, tp %d)", w->me.stage,
				     w->me.first_layer, w->me.last_layer, w->me.tp);
	sl_gpt_init_weights(&w->gpt, w->o->train.seed);
	if ((rc = sl_grad_sync_init(&w->sync, comm, &w->groups, &w->table, w->gpt.params,
				    w->gpt.param_count, err)))
		return rc;
	if (w->zero_on) {
		if ((rc = sl_zero_init(&w->zero, comm, &w->groups.stage_sync,
				       w->groups.stage_sync_uniform, &w->table, w->gpt.params,
				       w->gpt.param_count, w->sync.bucket,
				       (long long)w->sync.bucket_floats, err)))
			return rc;
		w->sync.zero = &w->zero;
		w->unsharded = calloc((size_t)w->gpt.param_count, sizeof(*w->unsharded));
		if (!w->unsharded)
			return sl_err_set(err, SL_ENOMEM, "out of memory");
		for (int i = 0; i < w->gpt.param_count; i++)
			if (!sl_zero_holds(&w->zero, w->gpt.params[i]))
				w->unsharded[w->unsharded_count++] = w->gpt.params[i];
		if ((rc = sl_zero_load(&w->zero, 0, err)))
			return rc;
	}
	if ((rc = sl_runner_islands_setup(w, err)))
		return rc;
	if (comm->rank == 0 && w->o->train.ckpt_dir &&
	    (rc = sl_rank_checkpoint_whole_model_init(&w->whole, &w->model, err)))
		return rc;
	/* buffers of the transfers */
	size_t act = (size_t)mb_tokens(w) * w->model.hidden;
	int S = w->sched.slots;
	w->max_peers = 1;
	for (int i = 0; i < w->sched.count; i++)
		if (w->sched.instrs[i].peer_count > w->max_peers)
			w->max_peers = w->sched.instrs[i].peer_count;
	w->act_in = calloc((size_t)S, sizeof(float *));
	w->grad_out = calloc((size_t)S, sizeof(float *));
	w->act_send = calloc((size_t)(S * w->max_peers), sizeof(*w->act_send));
	w->grad_send = calloc((size_t)(S * w->max_peers), sizeof(*w->grad_send));
	w->grad_in = sl_alloc_floats(act);
	if (!w->act_in || !w->grad_out || !w->act_send || !w->grad_send || !w->grad_in)
		return sl_err_set(err, SL_ENOMEM, "out of memory for transfer buffers");
	for (int s = 0; s < S; s++) {
		w->act_in[s] = w->me.stage > 0 ? sl_alloc_floats(act) : NULL;
		w->grad_out[s] = w->me.stage > 0 ? sl_alloc_floats(act) : NULL;
		if (w->me.stage > 0 && (!w->act_in[s] || !w->grad_out[s]))
			return sl_err_set(err, SL_ENOMEM, "out of memory for transfer buffers");
	}
	return 0;
}

static int setup_data(struct worker *w, struct sl_err *err)
{
	/* every rank opens the data: the first and last stages read it, and every rank checks the
	 * same file so a bad one stops the job before it starts */
	w->has_data = w->me.stage == 0 || w->me.stage == w->table.num_stages - 1;
	int rc = sl_token_file_open(&w->file, w->o->train.data, err);
	if (rc)
		return rc;
	if ((rc = sl_data_loader_init(&w->loader, &w->file, w->plan.micro_batch, w->seq,
				      w->model.vocab, w->o->train.shuffle, w->o->train.seed, err)))
		return rc;
	size_t n = (size_t)mb_tokens(w);
	w->tokens = malloc(n * (size_t)w->nmb * sizeof(int32_t));
	w->targets = malloc(n * (size_t)w->nmb * sizeof(int32_t));
	w->skip = malloc(2 * n * sizeof(int32_t));
	if (!w->tokens || !w->targets || !w->skip)
		return sl_err_set(err, SL_ENOMEM, "out of memory for the micro-batches");
	return 0;
}

/* Reads this pipeline's micro-batches of the step, skipping the other pipelines' ones. */
static void load_step(struct worker *w)
{
	if (!w->has_data)
		return;
	size_t n = (size_t)mb_tokens(w);
	int first = w->table.first_microbatch[w->me.pipeline];
	for (int m = 0; m < w->nmb_total; m++) {
		int local = m - first;
		if (local >= 0 && local < w->nmb)
			sl_data_loader_next(&w->loader, w->tokens + (size_t)local * n,
					    w->targets + (size_t)local * n);
		else
			sl_data_loader_next(&w->loader, w->skip, w->skip + n);
	}
}

static int wait_all(struct worker *w, struct sl_comm_request *reqs, int count, struct sl_err *err)
{
	for (int i = 0; i < count; i++) {
		int rc = sl_comm_wait(w->comm, &reqs[i], err);
		if (rc)
			return rc;
	}
	return 0;
}

static const char *op_name(enum sl_instr_op op) { return sl_instr_op_name(op); }

/* --timeline: the process's CPU now, read only when spans are recorded (a system call). */
static double timeline_cpu_s(const struct worker *w)
{
	return w->timeline_on ? sl_clock_s(CLOCK_PROCESS_CPUTIME_ID) : 0;
}

/* --timeline: records a span of kind from start_s (sl_now_s) and cpu_start_s (timeline_cpu_s)
 * until end_s and cpu_end_s; a span that ends where the next begins passes the next one's start,
 * so that a rank's spans never overlap. */
static void timeline_span_until(struct worker *w, int kind, int microbatch, double start_s,
				double cpu_start_s, double end_s, double cpu_end_s)
{
	if (w->timeline_on)
		sl_timeline_add(&w->timeline, w->comm->rank, w->timeline_step, kind, microbatch,
				start_s + w->realtime_offset_s, end_s + w->realtime_offset_s,
				cpu_end_s - cpu_start_s);
}

/* The same, until now. */
static void timeline_span(struct worker *w, int kind, int microbatch, double start_s,
			  double cpu_start_s)
{
	if (w->timeline_on)
		timeline_span_until(w, kind, microbatch, start_s, cpu_start_s, sl_now_s(),
				    sl_clock_s(CLOCK_PROCESS_CPUTIME_ID));
}

/* Executes one instruction; accumulates the micro-batch losses of the last stage. */
static int execute(struct worker *w, const struct sl_instr *in, double *loss_sum,
		   struct sl_err *err)
{
	struct sl_comm *comm = w->comm;
	size_t n = (size_t)mb_tokens(w);
	long long act = (long long)n * w->model.hidden;
	int m = in->microbatch, s = in->slot, rc = 0;
	struct sl_gpt_microbatch mb = {w->plan.micro_batch, w->seq,
				       w->tokens ? w->tokens + (size_t)m * n : NULL,
				       w->targets ? w->targets + (size_t)m * n : NULL};
	double t0 = sl_now_s(), cpu0 = timeline_cpu_s(w);
	switch (in->op) {
	case SL_INSTR_LOAD_MICROBATCH:
		return 0; /* the step's micro-batches were read at its start (load_step) */
	case SL_INSTR_RECV_ACTIVATION: {
		struct sl_comm_request req = {0};
		rc = sl_comm_irecv(comm, w->act_in[s], act, SL_COMM_FLOAT, in->peers[0],
				   sl_schedule_tag(SL_MSG_ACTIVATION, m), &req, err);
		if (!rc)
			rc = sl_comm_wait(comm, &req, err);
		w->times[T_P2P] += sl_now_s() - t0;
		timeline_span(w, in->op, m, t0, cpu0);
		return rc;
	}
	case SL_INSTR_FORWARD: {
		/* the slot's output buffer may still be on its way to the next stage */
		if ((rc = wait_all(w, &w->act_send[s * w->max_peers], w->max_peers, err)))
			return rc;
		double t1 = sl_now_s(), cpu1 = timeline_cpu_s(w);
		w->times[T_P2P] += t1 - t0;
		if (t1 - t0 > 1e-6) /* a span only where it waited (it mostly does not) */
			timeline_span_until(w, SL_TL_WAIT_SENDS, m, t0, cpu0, t1, cpu1);
		double loss = 0.0;
		sl_gpt_select_slot(&w->gpt, s);
		rc = sl_gpt_forward(&w->gpt, &mb, w->me.stage > 0 ? w->act_in[s] : NULL, &loss, err);
		*loss_sum += loss;
		w->times[T_COMPUTE] += sl_now_s() - t1;
		timeline_span(w, in->op, m, t1, cpu1);
		return rc;
	}
	case SL_INSTR_SEND_ACTIVATION:
		sl_gpt_select_slot(&w->gpt, s);
		for (int p = 0; p < in->peer_count && !rc; p++)
			rc = sl_comm_isend(comm, sl_gpt_output(&w->gpt), act, SL_COMM_FLOAT,
					   in->peers[p], sl_schedule_tag(SL_MSG_ACTIVATION, m),
					   &w->act_send[s * w->max_peers + p], err);
		w->times[T_P2P] += sl_now_s() - t0;
		timeline_span(w, in->op, m, t0, cpu0);
		return rc;
	case SL_INSTR_RECV_GRADIENT: {
		struct sl_comm_request req = {0};
		rc = sl_comm_irecv(comm, w->grad_in, act, SL_COMM_FLOAT, in->peers[0],
				   sl_schedule_tag(SL_MSG_GRADIENT, m), &req, err);
		if (!rc)
			rc = sl_comm_wait(comm, &req, err);
		w->times[T_P2P] += sl_now_s() - t0;
		timeline_span(w, in->op, m, t0, cpu0);
		return rc;
	}
	case SL_INSTR_BACKWARD: {
		int last = w->me.stage == w->table.num_stages - 1;
		sl_gpt_select_slot(&w->gpt, s);
		rc = sl_gpt_backward(&w->gpt, &mb, last ? NULL : w->grad_in,
				     1.0f / (float)sl_runner_islands_microbatches(w), err);
		w->times[T_COMPUTE] += sl_now_s() - t0;
		timeline_span(w, in->op, m, t0, cpu0);
		return rc;
	}
	case SL_INSTR_SEND_GRADIENT: {
		if ((rc = wait_all(w, &w->grad_send[s * w->max_peers], w->max_peers, err)))
			return rc;
		memcpy(w->grad_out[s], sl_gpt_grad_input(&w->gpt), (size_t)act * sizeof(float));
		for (int p = 0; p < in->peer_count && !rc; p++)
			rc = sl_comm_isend(comm, w->grad_out[s], act, SL_COMM_FLOAT, in->peers[p],
					   sl_schedule_tag(SL_MSG_GRADIENT, m),
					   &w->grad_send[s * w->max_peers + p], err);
		w->times[T_P2P] += sl_now_s() - t0;
		timeline_span(w, in->op, m, t0, cpu0);
		return rc;
	}
	case SL_INSTR_REDUCE_GRADIENTS:
	case SL_INSTR_OPTIMIZER_STEP:
		return 0; /* run by step() with the step's scalars */
	}
	return 0;
}

int sl_runner_stage_recompute(const struct worker *w, int k)
{
	return w->o->train.recompute >= 0 ? w->o->train.recompute : w->plan.stages[k].recompute;
}

/* The memory options are accepted where they change nothing (plan.h); say so once. */
static void note_noop_options(const struct worker *w)
{
	int N = w->model.num_blocks;
	for (int k = 0; k < w->plan.num_stages; k++) {
		const struct sl_plan_stage *st = &w->plan.stages[k];
		int rec = sl_runner_stage_recompute(w, k);
		if (rec != SL_GPT_RECOMPUTE_NONE && (st->last_layer < 1 || st->first_layer > N))
			sl_log_note("stage %d (layers %d-%d) holds no transformer block: recompute "
				    "'%s' changes nothing there",
				    k, st->first_layer, st->last_layer, sl_gpt_recompute_name(rec));
		if (st->zero && w->table.num_pipelines == 1)
			sl_log_note("stage %d has one replica: \"zero\": 1 changes nothing there "
				    "(ZeRO-1 splits the optimizer state across a stage's replicas)", k);
	}
}

static int run_step(struct worker *w, long long step, const struct sl_lr_schedule *sched,
		    const struct sl_adamw_config *adamw, double *loss, double *lr, double *norm,
		    int *stop, struct sl_err *err)
{
	w->timeline_step = (int)(step + 1);
	load_step(w);
	*lr = sl_lr_at(sched, step);
	if (!sl_runner_islands_steps_at(w, step)) {
		*loss = NAN; /* the island trains no inner step here (docs/design/islands.md) */
		return sl_runner_islands_progress(w, err);
	}
	sl_gpt_zero_grad(&w->gpt);
	double loss_sum = 0.0;
	int rc = 0;
	for (int i = 0; i < w->sched.count && !rc; i++) {
		rc = execute(w, &w->sched.instrs[i], &loss_sum, err);
		if (rc)
			return sl_err_prefix(err, "step %lld, %s of micro-batch %d", step + 1,
					     op_name(w->sched.instrs[i].op),
					     w->sched.instrs[i].microbatch);
	}
	double t0 = sl_now_s(), cpu0 = timeline_cpu_s(w);
	int S = w->sched.slots;
	if ((rc = wait_all(w, w->act_send, S * w->max_peers, err)) ||
	    (rc = wait_all(w, w->grad_send, S * w->max_peers, err)))
		return rc;
	double t1 = sl_now_s(), cpu1 = sl_clock_s(CLOCK_PROCESS_CPUTIME_ID);
	timeline_span_until(w, SL_TL_WAIT_SENDS, -1, t0, cpu0, t1, cpu1);
	w->times[T_P2P] += t1 - t0;
	if ((rc = sl_grad_sync_run(&w->sync, w->gpt.params, w->gpt.param_count, err)))
		return rc;
	double t2 = sl_now_s(), cpu2 = sl_clock_s(CLOCK_PROCESS_CPUTIME_ID);
	w->times[T_SYNC] += t2 - t1;
	w->times[T_SYNC_CPU] += cpu2 - cpu1;
	timeline_span_until(w, SL_TL_GRAD_SYNC, -1, t1, cpu1, t2, cpu2);
	/* the loss: the last stage's TP rank 0 of each pipeline contributes its micro-batches;
	 * the stop flag travels with it so every rank stops after the same step */
	int last = w->me.stage == w->table.num_stages - 1 && w->me.tp_rank == 0;
	double shared[2] = {last ? loss_sum : 0.0, stop_signal ? 1.0 : 0.0};
	/* with islands the island's own (the stop is agreed over the world at round ends) */
	int islands = sl_runner_islands_on(w);
	if ((rc = sl_comm_allreduce(w->comm, islands ? &w->groups.island : &w->comm->world, shared,
				    2, SL_COMM_DOUBLE, SL_COMM_SUM, err)))
		return rc;
	*loss = shared[0] / sl_runner_islands_microbatches(w);
	*stop = !islands && shared[1] > 0;
	if (w->late_stop_step == step + 1)
		raise(SIGTERM); /* the test's stop request, just too late for this step's agreement */
	if (!isfinite(*loss))
		return sl_err_set(err, SL_EINFEASIBLE,
				  "loss became %f at step %lld: training diverged (try a lower --lr "
				  "or --grad-clip); no checkpoint was written for it",
				  *loss, step + 1);
	if ((rc = sl_grad_sync_norm(&w->sync, w->gpt.params, w->gpt.param_count, norm, err)))
		return rc;
	double t3 = sl_now_s(), cpu3 = timeline_cpu_s(w);
	timeline_span_until(w, SL_TL_SCALARS, -1, t2, cpu2, t3, cpu3);
	long long inner = sl_runner_islands_inner_step(w, step); /* step + 1 without islands */
	if (w->zero_on) {
		struct sl_adamw_step s;
		sl_adamw_prepare(adamw, *lr, inner, *norm, &s);
		sl_adamw_apply(w->unsharded, w->unsharded_count, adamw, *lr, inner, *norm);
		if ((rc = sl_zero_step(&w->zero, adamw, *lr, &s, err)))
			return rc;
	} else {
		sl_adamw_apply(w->gpt.params, w->gpt.param_count, adamw, *lr, inner, *norm);
	}
	double t4 = sl_now_s();
	w->times[T_OPTIM] += t4 - t2;
	timeline_span(w, SL_TL_UPDATE, -1, t3, cpu3);
	rc = sl_runner_islands_after_step(w, step, err);
	w->times[T_OUTER] += sl_now_s() - t4;
	return rc;
}

/* --ckpt-every K: after every K steps; with islands at the first round end after each K. */
static int checkpoint_due(const struct worker *w, long long step)
{
	long long every = w->o->train.ckpt_every;
	if (every <= 0 || !sl_runner_islands_round_end(w, step))
		return 0;
	long long round = w->plan.islands ? w->plan.islands->inner_steps[0] : 1;
	return (step + 1) / every > (step + 1 - round) / every;
}

static int train_loop(struct worker *w, long long start, json_t *train, struct sl_err *err)
{
	const struct sl_train_options *o = &w->o->train;
	struct sl_lr_schedule sched = sl_train_lr_schedule(o);
	struct sl_adamw_config adamw = sl_train_adamw_config(o);
	char ckpt[4300] = "";
	double loss = NAN;
	long long ran = 0;
	int rc = 0;
	int rank0 = w->comm->rank == 0;
	for (long long step = start; step < o->steps; step++) {
		double t0 = sl_now_s(), cpu0 = sl_clock_s(CLOCK_PROCESS_CPUTIME_ID);
		long tests0 = w->comm->sleeping_tests;
		double wait_cpu0 = w->comm->sleeping_cpu_s;
		double lr = 0.0, norm = 0.0;
		int stop = 0; /* agreed by every rank: the only flag a rank may act on */
		if ((rc = run_step(w, step, &sched, &adamw, &loss, &lr, &norm, &stop, err)))
			break;
		/* islands: a stop is agreed over the world at round ends only; the agreement (where
		 * an island that ran ahead waits for the others) is part of the round's last step */
		if (sl_runner_islands_on(w) && sl_runner_islands_round_end(w, step) &&
		    step + 1 < o->steps &&
		    (rc = sl_runner_islands_agree_stop(w, stop_signal != 0, &stop, err)))
			break;
		double dt = sl_now_s() - t0;
		w->times[T_STEP] += dt;
		w->times[T_CPU] += sl_clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
		w->times[T_TESTS] += (double)(w->comm->sleeping_tests - tests0);
		w->times[T_WAIT_CPU] += w->comm->sleeping_cpu_s - wait_cpu0;
		if (ran == w->step_times_cap) {
			long long cap = w->step_times_cap ? 2 * w->step_times_cap : 1024;
			double *grown = realloc(w->step_times, (size_t)cap * sizeof(double));
			if (!grown) {
				rc = sl_err_set(err, SL_ENOMEM, "out of memory");
				break;
			}
			w->step_times = grown;
			w->step_times_cap = cap;
		}
		w->step_times[ran++] = dt;
		if (rank0 && ((step + 1) % o->log_every == 0 || step + 1 == o->steps || step == start))
			sl_print_step(w->out, o->json, w->events, step + 1, o->steps, loss, lr,
				      norm, dt, sl_runner_islands_tokens_per_step(w));
		if (rank0)
			sl_runner_islands_report(w, step);
		int last = step + 1 == o->steps || stop;
		if (step + 1 == o->steps && (rc = sl_runner_islands_finish(w, err)))
			break;
		if ((rc = sl_runner_eval_after_step(w, step + 1, stop, err)))
			break;
		if (o->ckpt_dir && (last || checkpoint_due(w, step))) {
			if ((rc = sl_runner_save(w, step + 1, train, ckpt, sizeof(ckpt), err)))
				break;
			/* the last checkpoint is on disk before the job ends or stops */
			if (last && (rc = sl_rank_checkpoint_finish(w->comm, ckpt, sizeof(ckpt), err)))
				break;
		}
		if (rank0 && o->ckpt_dir)
			sl_runner_report_persisted(w, ckpt, sizeof(ckpt), last);
		if (stop) {
			/* a requested stop, agreed by every rank after the same step: not a failure
			 * of the job; rank 0 says where it stopped and every rank ends cleanly */
			if (rank0)
				sl_log_warn("stopped by signal %d after step %lld%s%s%s",
					    stop_signal ? (int)stop_signal : SIGTERM, step + 1,
					    o->ckpt_dir ? " (checkpoint '" : "",
					    o->ckpt_dir ? ckpt : "", o->ckpt_dir ? "')" : "");
			return 0;
		}
	}
	if (rc)
		return rc;
	if (rank0 && start >= o->steps && !o->json)
		fprintf(w->out, "nothing to do: training already reached step %lld of %lld\n", start,
			o->steps);
	return sl_runner_print_end(w, ran, loss, ckpt[0] ? ckpt : NULL, err);
}

int sl_runner_check_plan(const struct sl_run_options *o, struct sl_role_table *table,
			 struct sl_catalogue *cat, struct sl_runner_checked *checked,
			 struct sl_err *err)
{
	struct worker *w = calloc(1, sizeof(*w));
	if (!w)
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	w->o = o;
	int rc = setup_plan(w, err);
	if (!rc)
		note_noop_options(w);
	/* a checkpoint of another model is refused before any rank starts */
	if (!rc && o->train.resume && o->train.ckpt_dir)
		rc = sl_checkpoint_check_model_latest(o->train.ckpt_dir, &w->model, err);
	if (!rc) {
		/* the data must exist and fit the model before any rank starts */
		rc = sl_token_file_open(&w->file, o->train.data, err);
		if (!rc)
			rc = sl_data_loader_init(&w->loader, &w->file, w->plan.micro_batch, w->seq,
						 w->model.vocab, o->train.shuffle, o->train.seed, err);
		if (!rc)
			rc = sl_runner_eval_check(w, err);
	}
	if (!rc) {
		*table = w->table;
		*cat = w->cat;
		memset(&w->table, 0, sizeof(w->table));
		if (checked) {
			*checked = (struct sl_runner_checked){.plan = w->plan, .model = w->model,
							      .seq_len = w->seq,
							      .global_batch = w->global};
			sl_plan_init(&w->plan); /* the caller owns it now */
		}
	}
	sl_data_loader_free(&w->loader);
	sl_token_file_close(&w->file);
	sl_role_table_free(&w->table);
	sl_plan_free(&w->plan);
	free(w);
	return rc;
}

static void teardown(struct worker *w)
{
	for (int s = 0; w->act_in && s < w->sched.slots; s++) {
		free(w->act_in[s]);
		free(w->grad_out[s]);
	}
	free(w->act_in);
	free(w->grad_out);
	free(w->act_send);
	free(w->grad_send);
	free(w->grad_in);
	free(w->tokens);
	free(w->targets);
	free(w->skip);
	free(w->step_times);
	sl_data_loader_free(&w->loader);
	sl_runner_eval_free(w);
	sl_token_file_close(&w->file);
	sl_runner_islands_free(w);
	sl_grad_sync_free(&w->sync);
	if (w->zero_on)
		sl_zero_free(&w->zero);
	free(w->unsharded);
	sl_gpt_free(&w->gpt);
	sl_gpt_free(&w->whole);
	sl_schedule_free(&w->sched);
	if (w->groups.tp.impl || w->groups.stage_sync.impl)
		sl_groups_free(w->comm, &w->groups);
	sl_role_table_free(&w->table);
	sl_plan_free(&w->plan);
}

int sl_runner_run(const struct sl_run_options *o, struct sl_comm *comm, FILE *out,
		       struct sl_err *err)
{
	if (o->train.resume && !o->train.ckpt_dir)
		return sl_err_set(err, SL_EUSAGE, "--resume needs --ckpt-dir");
	struct worker *w = calloc(1, sizeof(*w));
	if (!w)
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	w->o = o;
	w->comm = comm;
	w->out = out;
	/* a stop asked during the set-up (or before it, work() in cmd_run.c) is kept: the first
	 * step's agreement carries it */
	sl_runner_catch_stop();
	/* test-only (util/test_faults.h): a rank may send itself SIGTERM right after a step's stop
	 * agreement, the moment that split the ranks' stop before (tests/integration/
	 * run_stop_late_signal.sh); read below, after the training lock */
	/* rank 0 (the one that writes checkpoints) says "a job trains here" for as long as it
	 * lives, whatever becomes of mpirun and the launcher: a controller takes this lock
	 * exclusively before it starts a generation (ctl/run_lock.h), so it never trains beside
	 * a rank an earlier, dead controller left behind. Advisory: a failure is not an error. */
	w->training_lock = -1;
	if (comm->rank == 0 && o->train.ckpt_dir) {
		char lock_path[4300];
		mkdir(o->train.ckpt_dir, 0777);
		snprintf(lock_path, sizeof(lock_path), "%s/training.lock", o->train.ckpt_dir);
		w->training_lock = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
		if (w->training_lock >= 0 && flock(w->training_lock, LOCK_SH | LOCK_NB)) {
			close(w->training_lock);
			w->training_lock = -1;
		}
	}
	w->late_stop_step = sl_test_late_stop_step(comm->rank);
	long long start = 0;
	double t_setup = sl_now_s();
	int rc = setup_plan(w, err);
	if (!rc)
		rc = setup_rank(w, err);
	if (!rc)
		rc = setup_data(w, err);
	if (!rc)
		rc = sl_runner_eval_init(w, err);
	if (!rc && comm->rank == 0 && o->events_file) {
		/* The launcher has checked the path on its own host. Rank 0 may run on another, where
		 * the folder may not exist: the file is a second record of what stdout says, not worth
		 * failing the job for, so say so and train on. */
		w->events = fopen(o->events_file, "a");
		if (!w->events)
			sl_log_warn("rank 0: cannot append to events file '%s': %s; the step lines go "
				    "to stdout only", o->events_file, strerror(errno));
	}
	double t_load = sl_now_s();
	if (!rc && o->train.resume)
		rc = sl_runner_resume(w, &start, err);
	if (!rc && comm->rank == 0 && o->train.json) {
		/* the controller splits a reconfiguration's start from its load with this */
		double now = sl_now_s();
		fprintf(w->out, "{\"event\":\"ready\",\"step\":%lld,\"setup_s\":%.6f,"
			"\"load_s\":%.6f,\"idle_wait\":\"%s\"}\n", start, t_load - t_setup,
			now - t_load, comm->idle_wait == SL_COMM_WAIT_SLEEP ? "sleep" : "poll");
		fflush(w->out);
	}
	json_t *train = rc ? NULL : sl_train_hparams_json(&o->train, w->plan.micro_batch,
								   w->global, w->seq);
	if (!rc && comm->rank == 0 && !o->train.json)
		sl_runner_print_header(w, start);
	w->timeline_on = o->timeline != NULL;
	w->realtime_offset_s = sl_clock_s(CLOCK_REALTIME) - sl_now_s();
	if (!rc)
		rc = train_loop(w, start, train, err);
	if (!rc && w->timeline_on)
		rc = sl_runner_write_timeline(w, err);
	sl_timeline_free(&w->timeline);
	json_decref(train);
	/* after a failure a persist may still be writing from the model teardown frees */
	sl_rank_checkpoint_wait_local();
	if (w->events)
		fclose(w->events);
	if (w->training_lock >= 0)
		close(w->training_lock);
	teardown(w);
	free(w);
	return rc;
}
