/* Unit tests for the simulator of plans with islands (sim/islands.c) against closed forms: two
 * islands of one pipeline each, in two regions. An island's inner step is the synchronous plan
 * of its own pipelines, simulated alone; the round's exchange is two phases of one chunk (half
 * the model, in the wire's bytes) each way, timed on the link's fit; the round is the slowest
 * island's H steps plus what overlap does not hide (fragment 0, synced at the round end, is in
 * flight there and over with the stop agreement: never hidden), plus the stop agreement; a rank
 * holds two more copies of its
 * shard, a fragment's lane in fp32 and the wire buffers of every fragment; egress is the
 * exchange's bytes at the
 * link's price; the sosp25 cost model refuses. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "plan/outer_bytes.h"
#include "runtime/outer_wire.h"
#include "sim/sim.h"

static struct sl_sim_env *env;

static int setup(void **state)
{
	(void)state;
	struct sl_err err = {0};
	if (sl_sim_env_load("gpt2-tiny", "data", &env, &err)) {
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

/* One stage, pipeline 0 in us-central1-a and pipeline 1 in europe-west4-a (another continent),
 * tp 1, 2 micro-batches of 2 each; islands as given (NULL: synchronous). */
static void load(struct sl_plan *plan, const char *islands, int pipelines)
{
	char text[2048];
	snprintf(text, sizeof(text),
		 "{\"schema\": \"sailor.plan/1\", \"global_batch\": %d, \"micro_batch\": 2, "
		 "\"stages\": [{\"layers\": [0, 5], \"replicas\": [{\"gpu\": \"A100-40\", \"zone\": "
		 "\"us-central1-a\"}%s]}]%s%s}",
		 4 * pipelines, pipelines > 1 ? ", {\"gpu\": \"A100-40\", \"zone\": \"europe-west4-a\"}" : "",
		 islands ? ", \"islands\": " : "", islands ? islands : "");
	json_error_t je;
	json_t *root = json_loads(text, 0, &je);
	assert_non_null(root);
	struct sl_err err = {0};
	sl_plan_init(plan);
	assert_int_equal(sl_plan_from_json(root, NULL, &env->catalogue, plan, &err), 0);
	json_decref(root);
}

static void round_matches_closed_form(void **state)
{
	(void)state;
	const int H = 10, F = 2, tau = 1;
	char isl[256];
	snprintf(isl, sizeof(isl), "{\"pipelines\": [[0], [1]], \"inner_steps\": %d, \"fragments\": "
		 "%d, \"overlap_steps\": %d}", H, F, tau);
	struct sl_plan plan, one;
	load(&plan, isl, 2);
	load(&one, NULL, 1); /* island 0 alone: the synchronous plan of pipeline 0 */
	struct sl_sim_result res, alone;
	struct sl_sim_islands d;
	struct sl_err err = {0};
	assert_int_equal(sl_sim_islands(env, &plan, SL_COST_SAILOR, &res, &d, &err), 0);
	assert_int_equal(sl_simulate(env, &one, SL_COST_SAILOR, &alone, &err), 0);
	assert_int_equal(d.count, 2);
	assert_true(fabs(d.island[0].step_s - alone.iteration_time_s) < 1e-12);
	/* the exchange: each member sends half the model (fp32) to the other, and back */
	long long params = sl_model_param_count(&env->model);
	struct sl_outer_bytes b;
	assert_int_equal(sl_outer_bytes_count(&plan, &env->model, 8, env->model.seq_len,
					      &env->catalogue, &b, &err), 0);
	assert_int_equal(b.total_bytes, 2 * 4 * params);
	int za = sl_catalogue_zone_index(&env->catalogue, "us-central1-a");
	int ze = sl_catalogue_zone_index(&env->catalogue, "europe-west4-a");
	int g = sl_catalogue_gpu_index(&env->catalogue, "A100-40");
	const struct sl_link_fit *ae = sl_network_fit(env->network, za, g, 1, ze, g, 1);
	const struct sl_link_fit *ea = sl_network_fit(env->network, ze, g, 1, za, g, 1);
	double half0 = 4.0 * (params / 2), half1 = 4.0 * (params - params / 2);
	/* member 0 sends chunk 1 then receives it back; member 1 sends chunk 0 then returns it */
	double p1 = fmax(sl_link_send_time_s(ae, half1), sl_link_send_time_s(ea, half0));
	double p2 = fmax(sl_link_send_time_s(ea, half1), sl_link_send_time_s(ae, half0));
	assert_true(fabs(d.exchange_s - (p1 + p2)) < 1e-12 * (p1 + p2) + 1e-15);
	double lat = fmax(ae->latency_s, ea->latency_s);
	double frag = (p1 + p2) / F + 2 * lat;
	assert_true(fabs(d.fragment_exchange_s - frag) < 1e-12);
	double round = 0;
	for (int i = 0; i < 2; i++) {
		/* fragment 0 is synced at the round end, in flight there and over with the stop
		 * agreement (whose messages queue behind it); fragment 1, synced H / 2 = 5 steps
		 * before it, lands before it */
		double stall = frag + fmax(0, frag - tau * d.island[i].step_s);
		assert_true(fabs(d.island[i].stall_s - stall) < 1e-12);
		round = fmax(round, H * d.island[i].step_s + stall);
	}
	round += 2 * lat;
	assert_true(fabs(d.round_s - round) < 1e-12);
	assert_true(fabs(res.iteration_time_s - round / H) < 1e-12);
	assert_true(fabs(res.tokens_per_s - 8.0 * env->model.seq_len * H / round) < 1e-6);
	/* memory: two copies of the shard, a fragment's lane in fp32 and its chunk's average, and
	 * (fp32, Q = 1, n = 2) 3 + 1/2 encoded pieces of the whole lane */
	double shard = alone.stages[0].memory.params_bytes;
	double extra = 2 * shard + shard / F + shard / (F * 2) + 3.5 * shard;
	assert_true(fabs(d.outer_memory_bytes - extra) < 1.0);
	assert_true(fabs(d.island[0].peak_memory_bytes - (alone.peak_memory_bytes + extra)) < 1.0);
	/* egress: the exchange's bytes at the link's price, per round */
	double usd = 1e-9 * (half1 + half1) * sl_network_egress_usd_per_gb(env->network, za, ze) +
		     1e-9 * (half0 + half0) * sl_network_egress_usd_per_gb(env->network, ze, za);
	assert_true(fabs(d.outer_egress_usd_per_round - usd) < 1e-12);
	assert_true(usd > 0);
	sl_plan_free(&plan);
	sl_plan_free(&one);
}

static void wire_and_overlap_change_what_they_should(void **state)
{
	(void)state;
	struct sl_plan fp32, int8, hidden;
	load(&fp32, "{\"pipelines\": [[0], [1]], \"inner_steps\": 50}", 2);
	load(&int8, "{\"pipelines\": [[0], [1]], \"inner_steps\": 50, \"wire\": \"int8\"}", 2);
	load(&hidden, "{\"pipelines\": [[0], [1]], \"inner_steps\": 50, \"wire\": \"int8\", "
		      "\"overlap_steps\": 40}", 2);
	struct sl_sim_result r;
	struct sl_sim_islands a, b, c;
	struct sl_err err = {0};
	assert_int_equal(sl_sim_islands(env, &fp32, SL_COST_SAILOR, &r, &a, &err), 0);
	assert_int_equal(sl_sim_islands(env, &int8, SL_COST_SAILOR, &r, &b, &err), 0);
	assert_int_equal(sl_sim_islands(env, &hidden, SL_COST_SAILOR, &r, &c, &err), 0);
	/* int8: a byte a value and 4 per 256: about a quarter of fp32's bytes and exchange */
	double ratio = b.bytes_per_round / a.bytes_per_round;
	assert_true(ratio > 0.25 && ratio < 0.26);
	assert_true(b.exchange_s < a.exchange_s);
	/* overlap hides nothing of one fragment: it is synced at the round end, where the stop
	 * agreement waits behind it */
	assert_true(fabs(c.island[0].stall_s - c.fragment_exchange_s) < 1e-12);
	assert_true(c.round_s <= b.round_s);
	/* no per-step sync between the islands: the island plan's step beats the synchronous
	 * plan's, whose gradients cross the continent every step */
	struct sl_plan sync;
	load(&sync, NULL, 2);
	struct sl_sim_result s;
	assert_int_equal(sl_simulate(env, &sync, SL_COST_SAILOR, &s, &err), 0);
	assert_true(r.iteration_time_s < s.iteration_time_s);
	/* the sosp25 model refuses, saying why */
	assert_int_equal(sl_simulate(env, &fp32, SL_COST_SOSP25, &r, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "sosp25 cost model has no islands"));
	sl_plan_free(&fp32);
	sl_plan_free(&int8);
	sl_plan_free(&hidden);
	sl_plan_free(&sync);
}

/* An outer step varied on one plan, as the planner varies it (H, wire, fragments, overlap): with
 * the exchange cache the figures are exactly those without it, an exchange is worked out once
 * per (wire, fragments), and a plan whose exchange the cache holds is not worked out again. */
static void exchange_cache_changes_nothing(void **state)
{
	(void)state;
	struct sl_plan plan;
	load(&plan, "{\"pipelines\": [[0], [1]], \"inner_steps\": 10}", 2);
	struct sl_sim_result parts[2];
	struct sl_err err = {0};
	assert_int_equal(sl_sim_islands_parts(env, &plan, SL_COST_SAILOR, parts, &err), 0);
	struct sl_sim_exchange_cache cache = {0};
	const int hs[] = {1, 10, 50}, fo[][2] = {{1, 0}, {2, 1}, {4, 2}};
	for (int pass = 0; pass < 2; pass++)
		for (int w = 0; w < 3; w++)
			for (int f = 0; f < 3; f++)
				for (int h = 0; h < 3; h++) {
					plan.islands->wire = (enum sl_islands_wire)w;
					plan.islands->fragments = fo[f][0];
					plan.islands->overlap_steps = hs[h] > fo[f][1] ? fo[f][1] : 0;
					plan.islands->inner_steps[0] = plan.islands->inner_steps[1] = hs[h];
					struct sl_sim_result with, without;
					struct sl_sim_islands dw, dn;
					assert_int_equal(sl_sim_islands_from_parts(env, &plan, parts, &cache,
										   &with, &dw, &err), 0);
					assert_int_equal(sl_sim_islands_from_parts(env, &plan, parts, NULL,
										   &without, &dn, &err), 0);
					assert_true(with.iteration_time_s == without.iteration_time_s);
					assert_true(with.cost_usd_per_iter == without.cost_usd_per_iter);
					assert_true(with.tokens_per_s == without.tokens_per_s);
					assert_true(dw.round_s == dn.round_s);
					assert_true(dw.exchange_s == dn.exchange_s);
					assert_true(dw.bytes_per_1k_tokens == dn.bytes_per_1k_tokens);
					assert_true(dw.outer_egress_usd_per_round ==
						    dn.outer_egress_usd_per_round);
					/* one entry per (wire, fragments) met so far, on both passes */
					assert_int_equal(cache.count, (pass ? 9 : w * 3 + f + 1));
				}
	/* the cache is what it says: a doctored entry is used as it stands */
	plan.islands->wire = SL_ISLANDS_WIRE_FP32;
	plan.islands->fragments = 1;
	plan.islands->overlap_steps = 0;
	struct sl_sim_result res;
	struct sl_sim_islands d;
	for (int i = 0; i < cache.count; i++)
		if (cache.entries[i].wire == SL_ISLANDS_WIRE_FP32 && cache.entries[i].fragments == 1)
			cache.entries[i].exchange_s = 1234.0;
	assert_int_equal(sl_sim_islands_from_parts(env, &plan, parts, &cache, &res, &d, &err), 0);
	assert_true(d.exchange_s == 1234.0);
	sl_plan_free(&plan);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(round_matches_closed_form),
		cmocka_unit_test(wire_and_overlap_change_what_they_should),
		cmocka_unit_test(exchange_cache_changes_nothing),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
