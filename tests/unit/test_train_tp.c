/* Unit tests for tensor parallelism across the whole model and for activation slots
 * (src/train/gpt_layers.h, model.h, param.h): the properties the distributed runtime relies on.
 *  - a model run at tp = 2 and tp = 4 (vocabulary-parallel embedding and LM head, Megatron
 *    blocks) computes the loss and, mapped back through sl_param_full_index, the gradients of
 *    the tp = 1 model; vocabularies of 50 (not divisible by 4: uneven row shards) and 64;
 *  - every TP rank gets the same loss and the same gradients of replicated parameters;
 *  - a pipeline cut [0..1] | [2..N+1] (the head holding its own copy of the table) at tp > 1
 *    gives the tp = 1 cut's output, input gradient and gradients;
 *  - activation slots: three micro-batches forwarded into three slots and backwarded out of
 *    order give what one slot gives, micro-batch by micro-batch, bit for bit.
 * TP ranks are threads of this process; the all-reduces (sum and max) meet on a barrier and
 * reduce in rank order, so every rank gets the same bits, as the runtime's must. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "train/cpu/kernels.h"
#include "train/model.h"
#include "train/rng.h"

#define MAX_TP 4
#define B 2
#define T 8
#define SEED 21

static struct sl_model_config small(int vocab)
{
	struct sl_model_config m = {0};
	snprintf(m.name, sizeof(m.name), "small");
	m.num_blocks = 2;
	m.hidden = 32;
	m.heads = 4;
	m.ffn_hidden = 128;
	m.seq_len = 16;
	m.vocab = vocab;
	return m;
}

static void fill_tokens(int32_t *tok, int32_t *tgt, int n, int vocab, uint64_t seed)
{
	struct sl_rng r;
	sl_rng_seed(&r, seed);
	for (int i = 0; i < n; i++) {
		tok[i] = (int32_t)sl_rng_below(&r, (uint64_t)vocab);
		tgt[i] = (int32_t)sl_rng_below(&r, (uint64_t)vocab);
	}
	tok[0] = 0; /* the first and last rows of the table, held by the first and last rank */
	tgt[1] = (int32_t)(vocab - 1);
}

static void fill_floats(float *x, long long n, uint64_t seed)
{
	struct sl_rng r;
	sl_rng_seed(&r, seed);
	for (long long i = 0; i < n; i++)
		x[i] = (float)((double)(sl_rng_next(&r) >> 40) / 16777216.0) - 0.5f;
}

static int close_to(double got, double want, double rel, double abs_tol)
{
	return fabs(got - want) <= rel * fabs(want) + abs_tol;
}

/* --- an in-process TP group: ranks are threads --- */

struct tp_group {
	int tp;
	pthread_barrier_t barrier;
	float *bufs[MAX_TP];
};

struct tp_rank {
	struct tp_group *group;
	int rank;
};

static int reduce(float *buf, long long count, void *ctx, int is_max)
{
	struct tp_rank *r = ctx;
	struct tp_group *g = r->group;
	g->bufs[r->rank] = buf;
	pthread_barrier_wait(&g->barrier);
	float *acc = malloc((size_t)(count ? count : 1) * sizeof(float));
	for (long long i = 0; i < count; i++) {
		float a = g->bufs[0][i];
		for (int k = 1; k < g->tp; k++) /* rank order: the same bits on every rank */
			a = is_max ? fmaxf(a, g->bufs[k][i]) : a + g->bufs[k][i];
		acc[i] = a;
	}
	pthread_barrier_wait(&g->barrier);
	memcpy(buf, acc, (size_t)count * sizeof(float));
	free(acc);
	return 0;
}

static int allreduce_sum(float *buf, long long count, void *ctx)
{
	return reduce(buf, count, ctx, 0);
}

static int allreduce_max(float *buf, long long count, void *ctx)
{
	return reduce(buf, count, ctx, 1);
}

/* --- one rank's work: a whole model, or a pipeline cut [0..cut] | [cut+1..N+1] --- */

struct job {
	struct sl_model_config model;
	int tp, cut; /* cut < 0: one stage with every layer */
	const struct sl_gpt_microbatch *mb;
};

struct worker {
	const struct job *job;
	struct tp_rank id;
	struct sl_gpt a, b; /* b used only with a cut */
	double loss;
	int rc;
	struct sl_err err;
};

static void *run_rank(void *arg)
{
	struct worker *w = arg;
	const struct job *j = w->job;
	struct sl_err err = {0};
	struct sl_tp_comm comm = {allreduce_sum, allreduce_max, &w->id};
	int n = j->model.num_blocks;
	assert_int_equal(sl_cpu_set_threads(1, NULL), 0);
	if (j->cut < 0) {
		w->rc = sl_gpt_init(&w->a, &j->model, 0, n + 1, B, T, j->tp, w->id.rank, &comm, 1,
				    &err);
		if (w->rc)
			goto out;
		sl_gpt_init_weights(&w->a, SEED);
		w->rc = sl_gpt_forward(&w->a, j->mb, NULL, &w->loss, &err);
		if (!w->rc)
			w->rc = sl_gpt_backward(&w->a, j->mb, NULL, 0.5f, &err);
		goto out;
	}
	w->rc = sl_gpt_init(&w->a, &j->model, 0, j->cut, B, T, j->tp, w->id.rank, &comm, 1, &err);
	if (!w->rc)
		w->rc = sl_gpt_init(&w->b, &j->model, j->cut + 1, n + 1, B, T, j->tp, w->id.rank,
				    &comm, 1, &err);
	if (w->rc)
		goto out;
	sl_gpt_init_weights(&w->a, SEED);
	sl_gpt_init_weights(&w->b, SEED);
	if ((w->rc = sl_gpt_forward(&w->a, j->mb, NULL, NULL, &err)) ||
	    (w->rc = sl_gpt_forward(&w->b, j->mb, sl_gpt_output(&w->a), &w->loss, &err)) ||
	    (w->rc = sl_gpt_backward(&w->b, j->mb, NULL, 0.5f, &err)) ||
	    (w->rc = sl_gpt_backward(&w->a, j->mb, sl_gpt_grad_input(&w->b), 0.0f, &err)))
		goto out;
out:
	w->err = err;
	return NULL;
}

/* Runs the job on j->tp threads; workers[k] keeps rank k's stages (freed by the caller). */
static void run_group(const struct job *j, struct worker *workers)
{
	struct tp_group group = {.tp = j->tp};
	pthread_t threads[MAX_TP];
	pthread_barrier_init(&group.barrier, NULL, (unsigned)j->tp);
	for (int k = 0; k < j->tp; k++) {
		memset(&workers[k], 0, sizeof(workers[k]));
		workers[k].job = j;
		workers[k].id = (struct tp_rank){&group, k};
		pthread_create(&threads[k], NULL, run_rank, &workers[k]);
	}
	for (int k = 0; k < j->tp; k++)
		pthread_join(threads[k], NULL);
	pthread_barrier_destroy(&group.barrier);
	assert_int_equal(sl_cpu_set_threads(2, NULL), 0);
	for (int k = 0; k < j->tp; k++) {
		if (workers[k].rc)
			print_error("rank %d: %s\n", k, workers[k].err.msg);
		assert_int_equal(workers[k].rc, 0);
	}
}

static void free_group(const struct job *j, struct worker *workers)
{
	for (int k = 0; k < j->tp; k++) {
		sl_gpt_free(&workers[k].a);
		if (j->cut >= 0)
			sl_gpt_free(&workers[k].b);
	}
}

/* The stage of a worker that holds the parameter, or NULL. */
static struct sl_param *find(struct worker *w, int cut, const char *name, int from_b)
{
	if (cut < 0)
		return from_b ? NULL : sl_gpt_find_param(&w->a, name);
	return sl_gpt_find_param(from_b ? &w->b : &w->a, name);
}

/* Compares every gradient of the TP ranks with the reference's, whole-tensor index by index:
 * each whole-tensor element of a sharded tensor is held by exactly one rank; replicated
 * tensors are bit-identical on every rank. */
static void compare_grads(struct worker *ref, struct worker *ranks, int tp, int cut)
{
	for (int stage = 0; stage < (cut < 0 ? 1 : 2); stage++) {
		struct sl_gpt *g = stage ? &ref->b : &ref->a;
		for (int i = 0; i < g->param_count; i++) {
			struct sl_param *want = g->params[i];
			long long full = want->numel;
			int *seen = calloc((size_t)full, sizeof(int));
			for (int k = 0; k < tp; k++) {
				struct sl_param *p = find(&ranks[k], cut, want->name, stage);
				assert_non_null(p);
				assert_true(p->full_shape[0] == want->full_shape[0] &&
					    p->full_shape[1] == want->full_shape[1]);
				if (p->shard_dim < 0) {
					struct sl_param *p0 = find(&ranks[0], cut, want->name, stage);
					assert_memory_equal(p->grad, p0->grad,
							    (size_t)p->numel * sizeof(float));
				}
				for (long long e = 0; e < p->numel; e++) {
					long long f = sl_param_full_index(p, e);
					assert_true(f >= 0 && f < full);
					seen[f]++;
					if (!close_to(p->grad[e], want->grad[f], 1e-4, 1e-6))
						fail_msg("tp %d rank %d %s[%lld]: %g, want %g", tp, k,
							 want->name, f, (double)p->grad[e],
							 (double)want->grad[f]);
				}
			}
			int replicated = find(&ranks[0], cut, want->name, stage)->shard_dim < 0;
			int copies = replicated ? tp : 1;
			for (long long f = 0; f < full; f++)
				assert_int_equal(seen[f], copies);
			free(seen);
		}
	}
}

static void check_model(int vocab, int tp, int cut)
{
	struct sl_model_config m = small(vocab);
	int32_t tok[B * T], tgt[B * T];
	fill_tokens(tok, tgt, B * T, vocab, 7 + (uint64_t)vocab);
	struct sl_gpt_microbatch mb = {B, T, tok, tgt};
	struct job ref_job = {m, 1, cut, &mb}, tp_job = {m, tp, cut, &mb};
	struct worker ref, ranks[MAX_TP];
	run_group(&ref_job, &ref);
	run_group(&tp_job, ranks);
	assert_true(fabs(log((double)vocab) - ref.loss) < 0.3); /* near uniform at init */
	for (int k = 0; k < tp; k++) {
		assert_true(close_to(ranks[k].loss, ref.loss, 1e-5, 0.0));
		assert_true(ranks[k].loss == ranks[0].loss); /* the same loss on every rank */
	}
	if (cut >= 0) {
		/* the boundary tensors: the first stage's output, the second's input gradient */
		size_t n = (size_t)B * T * m.hidden;
		for (int k = 0; k < tp; k++) {
			const float *out = sl_gpt_output(&ranks[k].a), *want = sl_gpt_output(&ref.a);
			const float *dx = sl_gpt_grad_input(&ranks[k].b);
			const float *dwant = sl_gpt_grad_input(&ref.b);
			for (size_t e = 0; e < n; e++) {
				assert_true(close_to(out[e], want[e], 1e-5, 1e-6));
				if (!close_to(dx[e], dwant[e], 1e-4, 1e-6))
					fail_msg("tp %d rank %d grad_input[%zu]: %g, want %g", tp, k,
						 e, (double)dx[e], (double)dwant[e]);
			}
		}
	}
	compare_grads(&ref, ranks, tp, cut);
	free_group(&ref_job, &ref);
	free_group(&tp_job, ranks);
}

static void whole_model_tp2_tp4(void **state)
{
	(void)state;
	for (int v = 0; v < 2; v++)
		for (int tp = 2; tp <= 4; tp += 2)
			check_model(v ? 64 : 50, tp, -1);
}

static void pipeline_cut_tp2_tp4(void **state)
{
	(void)state;
	/* [0..1] | [2..3]: the second stage starts at a block and holds the head with its own
	 * copy of the table */
	for (int v = 0; v < 2; v++)
		for (int tp = 2; tp <= 4; tp += 2)
			check_model(v ? 64 : 50, tp, 1);
}

static void uneven_vocab_shards(void **state)
{
	(void)state;
	/* vocab 50 over 4 ranks: rows 0..11, 12..24, 25..36, 37..49 */
	static const long long start[4] = {0, 12, 25, 37}, len[4] = {12, 13, 12, 13};
	struct sl_model_config m = small(50);
	struct sl_err err = {0};
	struct tp_group group = {.tp = 4};
	for (int r = 0; r < 4; r++) {
		struct tp_rank id = {&group, r};
		struct sl_tp_comm comm = {allreduce_sum, allreduce_max, &id};
		struct sl_gpt g;
		assert_int_equal(sl_gpt_init(&g, &m, 0, 3, B, T, 4, r, &comm, 1, &err), 0);
		struct sl_param *wte = sl_gpt_find_param(&g, "layer0.wte.weight");
		assert_true(wte->shard_dim == 0 && wte->shard_start == start[r] &&
			    wte->shard_len == len[r]);
		assert_true(wte->shape[0] == len[r] && wte->shape[1] == 32);
		assert_true(wte->full_shape[0] == 50);
		assert_true(sl_param_full_index(wte, 5 * 32 + 3) == (start[r] + 5) * 32 + 3);
		assert_int_equal(sl_gpt_head(&g)->vocab_start, (int)start[r]);
		assert_int_equal(sl_gpt_head(&g)->local_vocab, (int)len[r]);
		/* the tied head uses the embedding's shard */
		assert_ptr_equal(sl_gpt_head(&g)->wte, wte);
		/* QKV keeps its three equal parts */
		struct sl_param *q = sl_gpt_find_param(&g, "layer1.attn.qkv.weight");
		assert_true(q->shape[0] == 24 && q->shard_len == 8 && q->shard_start == 8 * r);
		assert_true(sl_param_full_index(q, 8 * 32) == (32 + 8 * r) * 32);
		sl_gpt_free(&g);
	}
	/* too small a vocabulary, missing collectives */
	struct sl_gpt g;
	m.vocab = 3;
	struct sl_tp_comm comm = {allreduce_sum, allreduce_max, NULL};
	assert_int_equal(sl_gpt_init(&g, &m, 0, 3, B, T, 4, 0, &comm, 1, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "vocabulary 3 is smaller than tp 4"));
	m.vocab = 50;
	comm.allreduce_max = NULL;
	assert_int_equal(sl_gpt_init(&g, &m, 2, 3, B, T, 2, 0, &comm, 1, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "all-reduce sum and max"));
	assert_int_equal(sl_gpt_init(&g, &m, 0, 2, B, T, 2, 0, &comm, 1, &err), 0);
	sl_gpt_free(&g);
}

/* --- activation slots --- */

#define MBS 3

struct slot_data {
	int32_t tok[MBS][B * T], tgt[MBS][B * T];
	float *x[MBS], *dout[MBS]; /* stage input and output gradient per micro-batch */
	struct sl_gpt_microbatch mb[MBS];
};

static void slot_data_init(struct slot_data *d, const struct sl_model_config *m)
{
	size_t n = (size_t)B * T * m->hidden;
	for (int k = 0; k < MBS; k++) {
		fill_tokens(d->tok[k], d->tgt[k], B * T, m->vocab, 100 + (uint64_t)k);
		d->x[k] = malloc(n * sizeof(float));
		d->dout[k] = malloc(n * sizeof(float));
		fill_floats(d->x[k], (long long)n, 200 + (uint64_t)k);
		fill_floats(d->dout[k], (long long)n, 300 + (uint64_t)k);
		d->mb[k] = (struct sl_gpt_microbatch){B, T, d->tok[k], d->tgt[k]};
	}
}

static void slot_data_free(struct slot_data *d)
{
	for (int k = 0; k < MBS; k++) {
		free(d->x[k]);
		free(d->dout[k]);
	}
}

/* Stage [first, last] with three slots versus one slot, backward order B, A, C. */
static void check_slots(int first, int last)
{
	struct sl_model_config m = small(50);
	int n_last = m.num_blocks + 1;
	int has_input = first > 0, has_output = last < n_last;
	size_t n = (size_t)B * T * m.hidden;
	struct slot_data d;
	slot_data_init(&d, &m);
	struct sl_err err = {0};
	struct sl_gpt one, three;
	assert_int_equal(sl_gpt_init(&one, &m, first, last, B, T, 1, 0, NULL, 2, &err), 0);
	assert_int_equal(sl_gpt_init_slots(&three, &m, first, last, B, T, 3, 1, 0, NULL, 2, &err),
			 0);
	sl_gpt_init_weights(&one, SEED);
	sl_gpt_init_weights(&three, SEED);
	static const int order[MBS] = {1, 0, 2};
	float *out_ref[MBS], *din_ref[MBS];
	double loss_ref[MBS], loss[MBS];
	/* reference: one micro-batch at a time, in the backward order of the slotted run */
	for (int i = 0; i < MBS; i++) {
		int k = order[i];
		out_ref[k] = malloc(n * sizeof(float));
		din_ref[k] = malloc(n * sizeof(float));
		assert_int_equal(sl_gpt_forward(&one, &d.mb[k], has_input ? d.x[k] : NULL,
						&loss_ref[k], &err),
				 0);
		if (has_output)
			memcpy(out_ref[k], sl_gpt_output(&one), n * sizeof(float));
		assert_int_equal(sl_gpt_backward(&one, &d.mb[k], has_output ? d.dout[k] : NULL,
						 0.25f, &err),
				 0);
		if (has_input)
			memcpy(din_ref[k], sl_gpt_grad_input(&one), n * sizeof(float));
	}
	/* three in flight: forward A, B, C into slots 0, 1, 2; backward B, A, C */
	for (int k = 0; k < MBS; k++) {
		sl_gpt_select_slot(&three, k);
		assert_int_equal(sl_gpt_forward(&three, &d.mb[k], has_input ? d.x[k] : NULL, &loss[k],
						&err),
				 0);
	}
	for (int k = 0; has_output && k < MBS; k++) {
		sl_gpt_select_slot(&three, k);
		assert_memory_equal(sl_gpt_output(&three), out_ref[k], n * sizeof(float));
	}
	for (int i = 0; i < MBS; i++) {
		int k = order[i];
		sl_gpt_select_slot(&three, k);
		assert_int_equal(sl_gpt_backward(&three, &d.mb[k], has_output ? d.dout[k] : NULL,
						 0.25f, &err),
				 0);
		if (has_input)
			assert_memory_equal(sl_gpt_grad_input(&three), din_ref[k], n * sizeof(float));
		if (!has_output)
			assert_true(loss[k] == loss_ref[k]);
	}
	assert_int_equal(three.param_count, one.param_count);
	for (int i = 0; i < one.param_count; i++)
		assert_memory_equal(three.params[i]->grad, one.params[i]->grad,
				    (size_t)one.params[i]->numel * sizeof(float));
	/* memory: every slot counted */
	struct sl_gpt_memory m1, m3;
	sl_gpt_memory(&one, &m1);
	sl_gpt_memory(&three, &m3);
	assert_true(m3.activations_bytes == 3 * m1.activations_bytes);
	assert_true(m3.workspace_bytes == m1.workspace_bytes);
	assert_true(m3.params_bytes == m1.params_bytes);
	for (int k = 0; k < MBS; k++) {
		free(out_ref[k]);
		free(din_ref[k]);
	}
	sl_gpt_free(&one);
	sl_gpt_free(&three);
	slot_data_free(&d);
}

static void slots_equal_one_at_a_time(void **state)
{
	(void)state;
	check_slots(1, 2); /* blocks only: output and input gradient per slot */
	check_slots(0, 3); /* the whole model: embedding and head, losses per slot */
	check_slots(2, 3); /* a block and the head with its own table */
	check_slots(0, 1); /* the embedding and a block */
	struct sl_model_config m = small(50);
	struct sl_gpt g;
	struct sl_err err = {0};
	assert_int_equal(sl_gpt_init_slots(&g, &m, 0, 3, B, T, 0, 1, 0, NULL, 2, &err), SL_EINPUT);
}

static int setup(void **state)
{
	(void)state;
	assert_int_equal(sl_cpu_set_threads(2, NULL), 0);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(uneven_vocab_shards),
		cmocka_unit_test(whole_model_tp2_tp4),
		cmocka_unit_test(pipeline_cut_tp2_tp4),
		cmocka_unit_test(slots_equal_one_at_a_time),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
