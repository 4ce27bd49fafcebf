/* Unit tests for the per-stage memory options under the sailor cost model (sim/memory_options.c,
 * sim/memory.c): closed forms for what activation recomputation and ZeRO-1 add and save, options
 * that change nothing costing bit for bit what the plan without them costs, and the sosp25 cost
 * model refusing plans that use them. Expected values are computed here from the per-layer sizes
 * and the layer times, not from the functions under test. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "search/memory_dimensions.h"
#include "sim/sim.h"

static struct sl_sim_env *env;

static int setup(void **state)
{
	(void)state;
	struct sl_err err = {0};
	if (sl_sim_env_load("OPT-350", "data", &env, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	sl_sim_env_free(env);
	return 0;
}

static int close_to(double x, double y)
{
	return fabs(x - y) <= 1e-9 * fmax(fabs(x), fabs(y)) + 1e-12;
}

/* OPT-350 (layers 0..25: embedding, blocks 1..24, head 25) in stages split at `cuts`, D replicas
 * of gpu at tp per stage in one zone, micro-batch mbs, global batch 256. */
static void build(struct sl_plan *plan, int P, const int *last_layers, int D, const char *gpu,
		  int tp, int mbs)
{
	struct sl_err err = {0};
	sl_plan_init(plan);
	assert_int_equal(sl_plan_reserve(plan, P, D, &err), 0);
	plan->micro_batch = mbs;
	plan->global_batch = 256;
	int first = 0;
	for (int k = 0; k < P; k++) {
		plan->stages[k] = (struct sl_plan_stage){.first_layer = first,
							 .last_layer = last_layers[k]};
		first = last_layers[k] + 1;
	}
	int za = sl_catalogue_zone_index(&env->catalogue, "us-central1-a");
	int g = sl_catalogue_gpu_index(&env->catalogue, gpu);
	for (int k = 0; k < P; k++)
		for (int j = 0; j < D; j++)
			*sl_plan_replica(plan, k, j) = (struct sl_replica){(short)g, (short)za, (short)tp, 0};
	assert_int_equal(sl_sim_check_plan(env, plan, 0, &err), 0);
}

static void simulate(const struct sl_plan *plan, enum sl_cost_model cm, struct sl_sim_result *res)
{
	struct sl_err err = {0};
	memset(res, 0, sizeof(*res));
	int rc = sl_simulate(env, plan, cm, res, &err);
	if (rc)
		fprintf(stderr, "%s\n", err.msg);
	assert_int_equal(rc, 0);
}

/* The replica (gpu, mbs, tp) of layers [first, last], without memory options: a query of the
 * stage time functions. */
#define LAYERS(gpu_, mbs_, tp_, first_, last_)                                                  \
	(&(struct sl_sim_replica_query){                                                         \
		.gpu = (gpu_), .mbs = (mbs_), .tp = (tp_), .first_layer = (first_), .last_layer = (last_)})

/* Forward seconds per micro-batch of layers [a, b], summed layer by layer. */
static double fwd_of(int gpu, int mbs, int tp, int a, int b)
{
	double total = 0;
	for (int l = a; l <= b; l++) {
		double f, bw;
		assert_int_equal(
			sl_sim_stage_fwd_bwd(env, SL_COST_SAILOR, LAYERS(gpu, mbs, tp, l, l), &f, &bw), 0);
		total += f;
	}
	return total;
}

static void full_recomputation_adds_one_forward_of_the_blocks(void **state)
{
	(void)state;
	const int last[2] = {12, 25};
	struct sl_plan plan;
	struct sl_sim_result base, rec;
	build(&plan, 2, last, 2, "A100-40", 2, 4);
	simulate(&plan, SL_COST_SAILOR, &base);
	plan.stages[0].recompute = SL_RECOMPUTE_FULL;
	plan.stages[1].recompute = SL_RECOMPUTE_FULL;
	simulate(&plan, SL_COST_SAILOR, &rec);
	int g = sl_catalogue_gpu_index(&env->catalogue, "A100-40");
	/* stage 0 recomputes blocks 1..12 (not the embedding), stage 1 blocks 13..24 (not the head) */
	double extra[2] = {fwd_of(g, 4, 2, 1, 12), fwd_of(g, 4, 2, 13, 24)};
	int M = rec.microbatches;
	assert_int_equal(M, 32);
	for (int k = 0; k < 2; k++) {
		assert_true(extra[k] > 0);
		assert_true(close_to(rec.stages[k].fwd_s, base.stages[k].fwd_s));
		assert_true(close_to(rec.stages[k].bwd_s, base.stages[k].bwd_s + extra[k]));
		/* one more forward of the blocks per micro-batch, M micro-batches */
		assert_true(close_to(rec.stages[k].compute_s, base.stages[k].compute_s + M * extra[k]));
		struct sl_sim_replica_query q =
			*LAYERS(g, 4, 2, plan.stages[k].first_layer, plan.stages[k].last_layer);
		q.recompute = SL_RECOMPUTE_FULL;
		assert_true(close_to(sl_sim_stage_recompute_s(env, SL_COST_SAILOR, &q), extra[k]));
		/* optimizer and sync untouched */
		assert_true(close_to(rec.stages[k].optimizer_s, base.stages[k].optimizer_s));
		assert_true(close_to(rec.stages[k].dp_sync_s, base.stages[k].dp_sync_s));
	}
	assert_true(rec.iteration_time_s > base.iteration_time_s);
	assert_true(close_to(rec.egress_cost_usd_per_iter, base.egress_cost_usd_per_iter));

	/* memory: per in-flight micro-batch, only block outputs; one block rebuilt at a time */
	const struct sl_layer_sizes *sz = env->sizes;
	for (int k = 0; k < 2; k++) {
		int a = plan.stages[k].first_layer, b = plan.stages[k].last_layer;
		int inflight = 2 - k; /* min(P - k, M) */
		double kept = 0, largest = 0, largest_block = 0;
		for (int l = a; l <= b; l++) {
			int block = l >= 1 && l <= 24;
			kept += block ? sz->act_output_bytes[2][l] : sz->act_mem_bytes[2][l];
			largest = fmax(largest, sz->act_mem_bytes[2][l]);
			if (block)
				largest_block = fmax(largest_block, sz->act_mem_bytes[2][l]);
		}
		double expect = inflight * 4.0 * kept + 2.0 * 4 * largest + 4.0 * largest_block;
		assert_true(close_to(rec.stages[k].memory.activations_bytes, expect));
		assert_true(rec.stages[k].memory.activations_bytes <
			    base.stages[k].memory.activations_bytes);
		assert_true(close_to(rec.stages[k].memory.optimizer_bytes,
				     base.stages[k].memory.optimizer_bytes));
		assert_true(close_to(rec.stages[k].memory.total_bytes -
					     rec.stages[k].memory.activations_bytes,
				     base.stages[k].memory.total_bytes -
					     base.stages[k].memory.activations_bytes));
	}
	sl_plan_free(&plan);
}

static void selective_recomputation_recomputes_the_attention_core(void **state)
{
	(void)state;
	const int last[1] = {25};
	struct sl_plan plan;
	struct sl_sim_result base, sel, full;
	build(&plan, 1, last, 1, "A100-40", 4, 2);
	simulate(&plan, SL_COST_SAILOR, &base);
	plan.stages[0].recompute = SL_RECOMPUTE_SELECTIVE;
	simulate(&plan, SL_COST_SAILOR, &sel);
	plan.stages[0].recompute = SL_RECOMPUTE_FULL;
	simulate(&plan, SL_COST_SAILOR, &full);
	int g = sl_catalogue_gpu_index(&env->catalogue, "A100-40");
	/* the core's share of a block's FLOPs: 4 s² h of 8 s h² + 4 s h f + 4 s² h */
	double s = 2048, h = 1024, f = 4096;
	double share = 4 * s * s * h / (8 * s * h * h + 4 * s * h * f + 4 * s * s * h);
	double blocks = fwd_of(g, 2, 4, 1, 24);
	assert_true(close_to(sel.stages[0].bwd_s, base.stages[0].bwd_s + share * blocks));
	assert_true(close_to(full.stages[0].bwd_s, base.stages[0].bwd_s + blocks));
	assert_true(base.iteration_time_s < sel.iteration_time_s);
	assert_true(sel.iteration_time_s < full.iteration_time_s);
	/* activations: each block drops its attention scores (16 heads / tp 4 of 2048 x 2048 fp32
	 * per sample), one block's scores come back while it runs its backward */
	double scores = 4.0 * 16 * s * s / 4;
	double expect = base.stages[0].memory.activations_bytes - 1 * 2 * 24 * scores + 2 * scores;
	assert_true(close_to(sel.stages[0].memory.activations_bytes, expect));
	sl_plan_free(&plan);
}

static void zero_divides_the_optimizer_by_the_replicas(void **state)
{
	(void)state;
	const int last[2] = {12, 25};
	for (int D = 1; D <= 4; D *= 2) {
		struct sl_plan plan;
		struct sl_sim_result base, zero;
		build(&plan, 2, last, D, "A100-40", 4, 4);
		simulate(&plan, SL_COST_SAILOR, &base);
		plan.stages[0].zero = plan.stages[1].zero = 1;
		simulate(&plan, SL_COST_SAILOR, &zero);
		if (D == 1) {
			/* one replica: nothing to split, the very same result */
			assert_memory_equal(&zero, &base, sizeof(base));
		}
		for (int k = 0; k < 2; k++) {
			const struct sl_sim_memory *m0 = &base.stages[k].memory, *m1 = &zero.stages[k].memory;
			assert_true(close_to(m1->optimizer_bytes, m0->optimizer_bytes / D));
			assert_true(close_to(m1->total_bytes, m0->total_bytes - m0->optimizer_bytes * (1.0 - 1.0 / D)));
			assert_true(close_to(zero.stages[k].optimizer_s, base.stages[k].optimizer_s / D));
			/* reduce-scatter + all-gather: the all-reduce's time and bytes */
			assert_true(close_to(zero.stages[k].dp_sync_s, base.stages[k].dp_sync_s));
			assert_true(close_to(zero.stages[k].bwd_s, base.stages[k].bwd_s));
		}
		assert_true(close_to(zero.pipeline_time_s, base.pipeline_time_s));
		assert_true(close_to(zero.egress_cost_usd_per_iter, base.egress_cost_usd_per_iter));
		if (D > 1)
			assert_true(zero.iteration_time_s < base.iteration_time_s);
		/* the planner's queries agree with the simulation */
		int g = sl_catalogue_gpu_index(&env->catalogue, "A100-40");
		struct sl_sim_replica_query q = {.gpu = g, .mbs = 4, .tp = 4, .first_layer = 0,
						.last_layer = 12, .stage = 0, .num_stages = 2,
						.microbatches = zero.microbatches, .num_pipelines = D,
						.recompute = SL_RECOMPUTE_NONE, .zero = 1};
		assert_true(close_to(sl_sim_replica_memory(env, SL_COST_SAILOR, &q, NULL),
				     zero.stages[0].memory.total_bytes));
		assert_true(close_to(sl_sim_stage_update_s(env, SL_COST_SAILOR, &q),
				     zero.stages[0].optimizer_s));
		sl_plan_free(&plan);
	}
}

static void options_without_effect_cost_exactly_the_same(void **state)
{
	(void)state;
	/* stage 0 holds only the embedding, stage 2 only the head: no block to recompute */
	const int last[3] = {0, 24, 25};
	struct sl_plan plan;
	struct sl_sim_result base, noop;
	build(&plan, 3, last, 1, "A100-40", 1, 2);
	simulate(&plan, SL_COST_SAILOR, &base);
	plan.stages[0].recompute = SL_RECOMPUTE_FULL;
	plan.stages[2].recompute = SL_RECOMPUTE_SELECTIVE;
	for (int k = 0; k < 3; k++)
		plan.stages[k].zero = 1; /* one replica each */
	assert_int_equal(sl_sim_plan_uses_options(env, &plan), 0);
	simulate(&plan, SL_COST_SAILOR, &noop);
	assert_memory_equal(&noop, &base, sizeof(base));
	/* and the sosp25 model accepts them: they are no options */
	simulate(&plan, SL_COST_SOSP25, &noop);
	plan.stages[0].recompute = SL_RECOMPUTE_NONE;
	plan.stages[2].recompute = SL_RECOMPUTE_NONE;
	for (int k = 0; k < 3; k++)
		plan.stages[k].zero = 0;
	simulate(&plan, SL_COST_SOSP25, &base);
	assert_memory_equal(&noop, &base, sizeof(base));
	/* JSON says each option and whether it applies */
	json_t *j = sl_sim_result_to_json(env, &plan, &base);
	json_t *st = json_array_get(json_object_get(j, "stages"), 0);
	assert_string_equal(json_string_value(json_object_get(st, "recompute")), "none");
	assert_true(json_is_false(json_object_get(st, "zero_applies")));
	json_decref(j);
	sl_plan_free(&plan);
}

static void sosp25_refuses_options_that_apply(void **state)
{
	(void)state;
	const int last[2] = {12, 25};
	struct sl_plan plan;
	struct sl_sim_result res;
	struct sl_err err = {0};
	build(&plan, 2, last, 2, "A100-40", 4, 4);
	plan.stages[1].recompute = SL_RECOMPUTE_SELECTIVE;
	assert_int_equal(sl_simulate(env, &plan, SL_COST_SOSP25, &res, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "stages[1].recompute selective"));
	assert_non_null(strstr(err.msg, "--cost-model sailor"));
	plan.stages[1].recompute = SL_RECOMPUTE_NONE;
	plan.stages[0].zero = 1;
	err = (struct sl_err){0};
	assert_int_equal(sl_simulate(env, &plan, SL_COST_SOSP25, &res, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "stages[0].zero 1"));
	/* the sailor model takes the same plan */
	simulate(&plan, SL_COST_SAILOR, &res);
	sl_plan_free(&plan);
}

static void recomputation_fits_what_did_not(void **state)
{
	(void)state;
	/* the whole model on one V100-16 at micro-batch 2: not without recomputation, yes with */
	int g = sl_catalogue_gpu_index(&env->catalogue, "V100-16");
	int fits[3];
	double mem[3], time[3];
	for (int r = 0; r < 3; r++) {
		struct sl_sim_replica_query q = {.gpu = g, .mbs = 2, .tp = 1, .first_layer = 0,
						.last_layer = 25, .stage = 0, .num_stages = 1,
						.microbatches = 32, .num_pipelines = 1,
						.recompute = (enum sl_recompute)r, .zero = 0};
		fits[r] = sl_sim_replica_fits(env, SL_COST_SAILOR, &q);
		mem[r] = sl_sim_replica_memory(env, SL_COST_SAILOR, &q, NULL);
		time[r] = sl_sim_stage_compute_s(env, SL_COST_SAILOR, &q);
	}
	assert_false(fits[SL_RECOMPUTE_NONE]);
	assert_true(fits[SL_RECOMPUTE_FULL]);
	assert_true(mem[SL_RECOMPUTE_FULL] < mem[SL_RECOMPUTE_SELECTIVE]);
	assert_true(mem[SL_RECOMPUTE_SELECTIVE] < mem[SL_RECOMPUTE_NONE]);
	assert_true(time[SL_RECOMPUTE_NONE] < time[SL_RECOMPUTE_SELECTIVE]);
	assert_true(time[SL_RECOMPUTE_SELECTIVE] < time[SL_RECOMPUTE_FULL]);
	/* and the sosp25 queries ignore options */
	struct sl_sim_replica_query full = *LAYERS(g, 8, 1, 0, 25);
	full.recompute = SL_RECOMPUTE_FULL;
	assert_true(sl_sim_stage_compute_s(env, SL_COST_SOSP25, &full) ==
		    sl_sim_stage_compute_s(env, SL_COST_SOSP25, LAYERS(g, 8, 1, 0, 25)));
}

/* The planner's option sets (search/memory_dimensions.h) with ZeRO-1 and without it, which it also tries
 * where the model of our runtime makes ZeRO-1 cost time: without, the replicas hold whole
 * moments and may need more recomputation to fit. */
static void options_without_zero_recompute_at_least_as_much(void **state)
{
	(void)state;
	const int last[1] = {25};
	struct sl_search_request req = {.cost_model = SL_COST_SAILOR, .memory_options = 1};
	struct sl_plan with, without;
	build(&with, 1, last, 2, "V100-16", 1, 2);
	build(&without, 1, last, 2, "V100-16", 1, 2);
	sl_search_choose_options_zero(env, &req, &with, 256, 1);
	sl_search_choose_options_zero(env, &req, &without, 256, 0);
	assert_int_equal(with.stages[0].zero, 1);
	assert_int_equal(without.stages[0].zero, 0);
	/* the whole model on a V100-16 at micro-batch 2: with its moments halved selective
	 * recomputation is enough, with whole moments only full recomputation fits */
	assert_int_equal(with.stages[0].recompute, SL_RECOMPUTE_SELECTIVE);
	assert_int_equal(without.stages[0].recompute, SL_RECOMPUTE_FULL);
	struct sl_sim_result a, b;
	simulate(&with, SL_COST_SAILOR, &a);
	simulate(&without, SL_COST_SAILOR, &b);
	assert_true(a.fits_memory && b.fits_memory);
	/* one replica: nothing to shard, the same set */
	struct sl_plan one;
	build(&one, 1, last, 1, "V100-16", 1, 2);
	sl_search_choose_options_zero(env, &req, &one, 256, 1);
	assert_int_equal(one.stages[0].zero, 0);
	sl_plan_free(&with);
	sl_plan_free(&without);
	sl_plan_free(&one);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(full_recomputation_adds_one_forward_of_the_blocks),
		cmocka_unit_test(selective_recomputation_recomputes_the_attention_core),
		cmocka_unit_test(zero_divides_the_optimizer_by_the_replicas),
		cmocka_unit_test(options_without_effect_cost_exactly_the_same),
		cmocka_unit_test(sosp25_refuses_options_that_apply),
		cmocka_unit_test(recomputation_fits_what_did_not),
		cmocka_unit_test(options_without_zero_recompute_at_least_as_much),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
