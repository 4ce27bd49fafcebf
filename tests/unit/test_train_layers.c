/* Unit tests for the layer and stage abstractions (src/train/gpt_layers.h, model.h): the
 * properties the distributed runtime will rely on.
 *  - initialisation is a function of (seed, tensor name, element): a tensor-parallel shard holds
 *    exactly the slices of the whole tensor;
 *  - a model cut into two pipeline stages (the second holding its own copy of the tied
 *    embedding) computes the same loss and gradients as the whole model;
 *  - a transformer block split over tp = 2 ranks, completed by an all-reduce, computes what the
 *    whole block computes (two threads stand in for the two ranks);
 *  - bad shapes and tokens give clear errors. */
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

static struct sl_model_config tiny(void)
{
	struct sl_model_config m = {0};
	snprintf(m.name, sizeof(m.name), "tiny");
	m.num_blocks = 3;
	m.hidden = 16;
	m.heads = 4;
	m.ffn_hidden = 64;
	m.seq_len = 12;
	m.vocab = 23;
	return m;
}

static double rel(const float *a, const float *b, long long n)
{
	double num = 0, den = 0;
	for (long long i = 0; i < n; i++) {
		num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
		den += (double)b[i] * b[i];
	}
	return sqrt(num) / (den > 0 ? sqrt(den) : 1.0);
}

static void fill_tokens(int32_t *tok, int32_t *tgt, int n, int vocab, uint64_t seed)
{
	struct sl_rng r;
	sl_rng_seed(&r, seed);
	for (int i = 0; i < n; i++) {
		tok[i] = (int32_t)sl_rng_below(&r, (uint64_t)vocab);
		tgt[i] = (int32_t)sl_rng_below(&r, (uint64_t)vocab);
	}
}

static int setup(void **state)
{
	(void)state;
	assert_int_equal(sl_cpu_set_threads(2, NULL), 0);
	return 0;
}

static int never_called(float *buf, long long count, void *ctx)
{
	(void)buf, (void)count, (void)ctx;
	fail_msg("no all-reduce expected while initialising");
	return SL_EINPUT;
}

static void init_is_deterministic_and_shard_independent(void **state)
{
	(void)state;
	struct sl_model_config m = tiny();
	struct sl_gpt a, b, c;
	struct sl_err err = {0};
	assert_int_equal(sl_gpt_init(&a, &m, 0, 4, 2, 8, 1, 0, NULL, 2, &err), 0);
	assert_int_equal(sl_gpt_init(&b, &m, 0, 4, 2, 8, 1, 0, NULL, 2, &err), 0);
	assert_int_equal(sl_gpt_init(&c, &m, 0, 4, 2, 8, 1, 0, NULL, 2, &err), 0);
	sl_gpt_init_weights(&a, 5);
	sl_gpt_init_weights(&b, 5);
	sl_gpt_init_weights(&c, 6);
	struct sl_param *pa = sl_gpt_find_param(&a, "layer2.attn.qkv.weight");
	struct sl_param *pb = sl_gpt_find_param(&b, "layer2.attn.qkv.weight");
	struct sl_param *pc = sl_gpt_find_param(&c, "layer2.attn.qkv.weight");
	assert_non_null(pa);
	assert_memory_equal(pa->value, pb->value, (size_t)pa->numel * sizeof(float));
	assert_memory_not_equal(pa->value, pc->value, (size_t)pa->numel * sizeof(float));
	/* GPT-2 init: std 0.02, residual projections scaled by 1/sqrt(2N), LayerNorm weight 1 */
	double sq = 0;
	for (long long i = 0; i < pa->numel; i++)
		sq += (double)pa->value[i] * pa->value[i];
	assert_true(fabs(sqrt(sq / (double)pa->numel) - 0.02) < 0.004);
	assert_true(sl_gpt_find_param(&a, "layer1.ln1.weight")->value[3] == 1.0f);
	assert_int_equal(sl_gpt_find_param(&a, "layer3.mlp.proj.weight")->decay, 1);
	assert_int_equal(sl_gpt_find_param(&a, "layer0.wte.weight")->decay, 0);
	assert_int_equal(a.param_count, 2 + 3 * 12 + 2);

	/* each tp = 2 shard holds the slices of the whole tensors, whatever the sharding */
	for (int rank = 0; rank < 2; rank++) {
		struct sl_gpt_layer shard;
		struct sl_gpt_layer_config cfg = {.kind = SL_GPT_BLOCK, .index = 2, .num_blocks = 3,
						  .hidden = 16, .heads = 4, .ffn_hidden = 64,
						  .max_seq_len = 12, .vocab = 23, .tp = 2,
						  .tp_rank = rank};
		cfg.comm.allreduce_sum = never_called;
		assert_int_equal(sl_gpt_layer_init(&shard, &cfg, 2, 8, &err), 0);
		sl_gpt_layer_init_weights(&shard, 5);
		for (int i = 0; i < shard.param_count; i++) {
			struct sl_param *sp = &shard.params[i];
			struct sl_param *full = sl_gpt_find_param(&a, sp->name);
			assert_non_null(full);
			for (long long k = 0; k < sp->numel; k++)
				assert_true(sp->value[k] == full->value[sl_param_full_index(sp, k)]);
		}
		struct sl_param *q = sl_gpt_layer_param(&shard, "attn.qkv.weight");
		assert_true(q->shape[0] == 24 && q->full_shape[0] == 48);
		assert_true(sl_gpt_layer_param(&shard, "mlp.proj.weight")->shape[1] == 32);
		sl_gpt_layer_free(&shard);
	}
	sl_gpt_free(&a);
	sl_gpt_free(&b);
	sl_gpt_free(&c);
}

static void two_stages_equal_one(void **state)
{
	(void)state;
	struct sl_model_config m = tiny();
	const int B = 2, T = 10, N = B * T;
	int32_t tok[20], tgt[20];
	fill_tokens(tok, tgt, N, m.vocab, 9);
	struct sl_gpt_microbatch mb = {B, T, tok, tgt};
	struct sl_gpt whole, first, second;
	struct sl_err err = {0};
	assert_int_equal(sl_gpt_init(&whole, &m, 0, 4, B, T, 1, 0, NULL, 2, &err), 0);
	assert_int_equal(sl_gpt_init(&first, &m, 0, 1, B, T, 1, 0, NULL, 2, &err), 0);
	assert_int_equal(sl_gpt_init(&second, &m, 2, 4, B, T, 1, 0, NULL, 2, &err), 0);
	sl_gpt_init_weights(&whole, 3);
	sl_gpt_init_weights(&first, 3);
	sl_gpt_init_weights(&second, 3);
	assert_null(sl_gpt_head(&first));
	/* the last stage holds its own copy of the tied table, initialised identically */
	struct sl_param *copy = sl_gpt_find_param(&second, "layer0.wte.weight");
	struct sl_param *orig = sl_gpt_find_param(&whole, "layer0.wte.weight");
	assert_non_null(copy);
	assert_memory_equal(copy->value, orig->value, (size_t)orig->numel * sizeof(float));

	double loss_whole = 0, loss_split = 0;
	assert_int_equal(sl_gpt_forward(&whole, &mb, NULL, &loss_whole, &err), 0);
	assert_int_equal(sl_gpt_backward(&whole, &mb, NULL, 0.5f, &err), 0);
	assert_int_equal(sl_gpt_forward(&first, &mb, NULL, NULL, &err), 0);
	assert_int_equal(sl_gpt_forward(&second, &mb, sl_gpt_output(&first), &loss_split, &err), 0);
	assert_int_equal(sl_gpt_backward(&second, &mb, NULL, 0.5f, &err), 0);
	assert_int_equal(sl_gpt_backward(&first, &mb, sl_gpt_grad_input(&second), 0.0f, &err), 0);
	assert_null(sl_gpt_grad_input(&first));
	assert_true(loss_whole == loss_split);
	assert_true(fabs(loss_whole - log(23.0)) < 0.2); /* near uniform at init */
	for (int i = 0; i < whole.param_count; i++) {
		struct sl_param *p = whole.params[i];
		if (!strcmp(p->name, "layer0.wte.weight"))
			continue;
		struct sl_param *q = sl_gpt_find_param(p->name[5] <= '1' ? &first : &second, p->name);
		assert_non_null(q);
		assert_memory_equal(p->grad, q->grad, (size_t)p->numel * sizeof(float));
	}
	/* tied table: the whole model's gradient is the sum of the two stages' (the all-reduce
	 * the distributed runtime performs) */
	struct sl_param *g0 = sl_gpt_find_param(&first, "layer0.wte.weight");
	float *sum = malloc((size_t)g0->numel * sizeof(float));
	for (long long k = 0; k < g0->numel; k++)
		sum[k] = g0->grad[k] + copy->grad[k];
	assert_true(rel(sum, orig->grad, g0->numel) < 1e-6);
	free(sum);
	sl_gpt_free(&whole);
	sl_gpt_free(&first);
	sl_gpt_free(&second);
}

/* --- tensor parallelism over two threads --- */

struct tp_group {
	pthread_barrier_t barrier;
	float *bufs[2];
};

struct tp_rank {
	struct tp_group *group;
	int rank;
	struct sl_gpt_layer layer;
	struct sl_gpt_workspace ws;
	const float *x, *dout;
	float *out, *dx;
	int rc;
};

static int allreduce(float *buf, long long count, void *ctx)
{
	struct tp_rank *r = ctx;
	struct tp_group *g = r->group;
	g->bufs[r->rank] = buf;
	pthread_barrier_wait(&g->barrier);
	float *sum = malloc((size_t)count * sizeof(float));
	for (long long i = 0; i < count; i++)
		sum[i] = g->bufs[0][i] + g->bufs[1][i]; /* same order on both ranks */
	pthread_barrier_wait(&g->barrier);
	memcpy(buf, sum, (size_t)count * sizeof(float));
	free(sum);
	return 0;
}

static void *tp_worker(void *arg)
{
	struct tp_rank *r = arg;
	assert_int_equal(sl_cpu_set_threads(1, NULL), 0);
	const int B = 2, T = 6;
	int32_t none[12] = {0};
	struct sl_gpt_microbatch mb = {B, T, none, none};
	r->rc = sl_gpt_layer_forward(&r->layer, &r->ws, &mb, r->x, r->out, NULL, NULL);
	if (!r->rc)
		r->rc = sl_gpt_layer_backward(&r->layer, &r->ws, &mb, r->x, r->dout, r->dx, 1.0f, NULL);
	return NULL;
}

static void tensor_parallel_block_equals_whole(void **state)
{
	(void)state;
	const int B = 2, T = 6, C = 16, n = B * T * C;
	struct sl_err err = {0};
	struct sl_gpt_layer_config cfg = {.kind = SL_GPT_BLOCK, .index = 1, .num_blocks = 2,
					  .hidden = C, .heads = 4, .ffn_hidden = 64,
					  .max_seq_len = 8, .vocab = 10, .tp = 1};
	struct sl_gpt_layer whole;
	struct sl_gpt_workspace ws;
	assert_int_equal(sl_gpt_layer_init(&whole, &cfg, B, T, &err), 0);
	assert_int_equal(sl_gpt_workspace_init(&ws, &whole, 1, 2, &err), 0);
	sl_gpt_layer_init_weights(&whole, 11);
	/* non-zero biases so the replicated row-parallel biases are exercised */
	for (int i = 0; i < whole.param_count; i++)
		for (long long k = 0; k < whole.params[i].numel; k++)
			if (whole.params[i].ndim == 1)
				whole.params[i].value[k] += 0.01f * (float)((k * 7 + i) % 5);
	struct sl_rng r;
	sl_rng_seed(&r, 4);
	float *x = malloc(n * sizeof(float)), *dout = malloc(n * sizeof(float));
	for (int i = 0; i < n; i++) {
		x[i] = (float)((double)(sl_rng_next(&r) >> 40) / 16777216.0) - 0.5f;
		dout[i] = (float)((double)(sl_rng_next(&r) >> 40) / 16777216.0) - 0.5f;
	}
	float *out = malloc(n * sizeof(float)), *dx = malloc(n * sizeof(float));
	int32_t none[12] = {0};
	struct sl_gpt_microbatch mb = {B, T, none, none};
	assert_int_equal(sl_gpt_layer_forward(&whole, &ws, &mb, x, out, NULL, &err), 0);
	assert_int_equal(sl_gpt_layer_backward(&whole, &ws, &mb, x, dout, dx, 1.0f, &err), 0);

	struct tp_group group;
	pthread_barrier_init(&group.barrier, NULL, 2);
	struct tp_rank ranks[2];
	pthread_t threads[2];
	for (int k = 0; k < 2; k++) {
		struct tp_rank *rk = &ranks[k];
		memset(rk, 0, sizeof(*rk));
		rk->group = &group;
		rk->rank = k;
		struct sl_gpt_layer_config c = cfg;
		c.tp = 2;
		c.tp_rank = k;
		c.comm.allreduce_sum = allreduce;
		c.comm.ctx = rk;
		assert_int_equal(sl_gpt_layer_init(&rk->layer, &c, B, T, &err), 0);
		assert_int_equal(sl_gpt_workspace_init(&rk->ws, &rk->layer, 1, 1, &err), 0);
		for (int i = 0; i < rk->layer.param_count; i++) {
			struct sl_param *p = &rk->layer.params[i];
			for (long long e = 0; e < p->numel; e++)
				p->value[e] = whole.params[i].value[sl_param_full_index(p, e)];
		}
		rk->x = x;
		rk->dout = dout;
		rk->out = malloc(n * sizeof(float));
		rk->dx = malloc(n * sizeof(float));
	}
	for (int k = 0; k < 2; k++)
		pthread_create(&threads[k], NULL, tp_worker, &ranks[k]);
	for (int k = 0; k < 2; k++)
		pthread_join(threads[k], NULL);
	assert_int_equal(sl_cpu_set_threads(2, NULL), 0);
	for (int k = 0; k < 2; k++) {
		struct tp_rank *rk = &ranks[k];
		assert_int_equal(rk->rc, 0);
		assert_true(rel(rk->out, out, n) < 1e-6);
		assert_true(rel(rk->dx, dx, n) < 1e-6);
		for (int i = 0; i < rk->layer.param_count; i++) {
			struct sl_param *p = &rk->layer.params[i];
			float *want = malloc((size_t)p->numel * sizeof(float));
			for (long long e = 0; e < p->numel; e++)
				want[e] = whole.params[i].grad[sl_param_full_index(p, e)];
			assert_true(rel(p->grad, want, p->numel) < 1e-5);
			free(want);
		}
		sl_gpt_layer_free(&rk->layer);
		sl_gpt_workspace_free(&rk->ws);
		free(rk->out);
		free(rk->dx);
	}
	pthread_barrier_destroy(&group.barrier);
	sl_gpt_layer_free(&whole);
	sl_gpt_workspace_free(&ws);
	free(x), free(dout), free(out), free(dx);
}

/* The runtime's between-layers call (an island's exchange in flight moves there): once after
 * every layer's forward and backward, the values as without it, and its error ends the pass. */
struct layer_calls {
	int calls, fail_at;
};

static int count_layer_call(void *ctx, struct sl_err *err)
{
	struct layer_calls *c = ctx;
	if (++c->calls == c->fail_at)
		return sl_err_set(err, SL_EIO, "the exchange failed");
	return 0;
}

static void between_layers_runs_after_every_layer(void **state)
{
	(void)state;
	struct sl_model_config m = tiny();
	int32_t tok[20], tgt[20];
	fill_tokens(tok, tgt, 20, m.vocab, 5);
	struct sl_gpt_microbatch mb = {2, 10, tok, tgt};
	struct sl_gpt models[2]; /* the same stage, without and with the call */
	struct sl_err err = {0};
	for (int k = 0; k < 2; k++) {
		assert_int_equal(sl_gpt_init(&models[k], &m, 0, 4, mb.batch, mb.seq, 1, 0, NULL, 2,
					     &err), 0);
		sl_gpt_init_weights(&models[k], 4);
	}
	struct sl_gpt *plain = &models[0], *hooked = &models[1];
	struct layer_calls calls = {0, -1};
	hooked->between_layers = count_layer_call;
	hooked->between_layers_ctx = &calls;
	double loss_plain = 0, loss_hooked = 0;
	assert_int_equal(sl_gpt_forward(plain, &mb, NULL, &loss_plain, &err), 0);
	assert_int_equal(sl_gpt_backward(plain, &mb, NULL, 1.0f, &err), 0);
	assert_int_equal(sl_gpt_forward(hooked, &mb, NULL, &loss_hooked, &err), 0);
	assert_int_equal(calls.calls, hooked->layer_count);
	assert_int_equal(sl_gpt_backward(hooked, &mb, NULL, 1.0f, &err), 0);
	assert_int_equal(calls.calls, 2 * hooked->layer_count);
	assert_true(loss_plain == loss_hooked);
	for (int i = 0; i < plain->param_count; i++)
		assert_memory_equal(plain->params[i]->grad, hooked->params[i]->grad,
				    (size_t)plain->params[i]->numel * sizeof(float));
	calls = (struct layer_calls){0, 3};
	assert_int_equal(sl_gpt_forward(hooked, &mb, NULL, &loss_hooked, &err), SL_EIO);
	assert_int_equal(calls.calls, 3);
	assert_non_null(strstr(err.msg, "the exchange failed"));
	calls = (struct layer_calls){0, hooked->layer_count + 2};
	assert_int_equal(sl_gpt_forward(hooked, &mb, NULL, &loss_hooked, &err), 0);
	assert_int_equal(sl_gpt_backward(hooked, &mb, NULL, 1.0f, &err), SL_EIO);
	assert_int_equal(calls.calls, hooked->layer_count + 2);
	sl_gpt_free(plain);
	sl_gpt_free(hooked);
}

static void bad_shapes_and_tokens_are_refused(void **state)
{
	(void)state;
	struct sl_model_config m = tiny();
	struct sl_gpt g;
	struct sl_err err = {0};
	m.heads = 5;
	assert_int_equal(sl_gpt_init(&g, &m, 0, 4, 2, 8, 1, 0, NULL, 2, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "hidden 16 is not divisible by heads 5"));
	m = tiny();
	assert_int_equal(sl_gpt_init(&g, &m, 0, 4, 2, 13, 1, 0, NULL, 2, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "sequence length 13 is longer"));
	assert_int_equal(sl_gpt_init(&g, &m, 0, 4, 2, 8, 3, 0, NULL, 2, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "tp 3 must divide heads 4"));
	assert_int_equal(sl_gpt_init(&g, &m, 0, 4, 2, 8, 1, 0, NULL, 2, &err), 0);
	sl_gpt_init_weights(&g, 1);
	int32_t tok[16] = {0}, tgt[16] = {0};
	tok[5] = 23;
	struct sl_gpt_microbatch mb = {2, 8, tok, tgt};
	double loss;
	assert_int_equal(sl_gpt_forward(&g, &mb, NULL, &loss, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "token 23 at position 5 is outside the model's vocabulary"));
	struct sl_gpt_microbatch big = {3, 8, tok, tgt};
	assert_int_equal(sl_gpt_forward(&g, &big, NULL, &loss, &err), SL_EINPUT);
	sl_gpt_free(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(init_is_deterministic_and_shard_independent),
		cmocka_unit_test(two_stages_equal_one),
		cmocka_unit_test(tensor_parallel_block_equals_whole),
		cmocka_unit_test(between_layers_runs_after_every_layer),
		cmocka_unit_test(bad_shapes_and_tokens_are_refused),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
