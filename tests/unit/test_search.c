/* Planner tests: layer partitions, ranking, and the oracle — on small pools (up to 8 GPUs, 2 GPU
 * types, 2 zones, a 4-layer model) the planner's best plan is as good as the best plan of a
 * brute-force enumeration of the same space, under both cost models and both objectives. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "search/partition.h"
#include "search/options_memo.h"
#include "search/partition_cache.h"
#include "search/search.h"
#include "search/uneven.h"

static void partition_count_is_binomial(void **state)
{
	(void)state;
	assert_int_equal(sl_partition_count(26, 1, 1000), 1);
	assert_int_equal(sl_partition_count(26, 2, 1000), 25);
	assert_int_equal(sl_partition_count(26, 3, 1000), 300);
	assert_int_equal(sl_partition_count(26, 27, 1000), 0);
	assert_int_equal(sl_partition_count(50, 10, 1000), 1001); /* saturates at limit + 1 */
}

/* The partition cache returns what it was given under exactly its key, truncated to what the
 * caller has room for, and stops taking keys when full (keeping those it has). */
static void partition_cache_keeps_answers_by_key(void **state)
{
	(void)state;
	struct sl_partition_cache *cache = sl_partition_cache_new();
	assert_non_null(cache);
	static struct sl_partition_scratch scratch;
	double times[26];
	for (int l = 0; l < 26; l++)
		times[l] = l == 0 || l == 25 ? 3.0 : 1.0 + 0.01 * l;
	const double *per_gpu[2] = {times, NULL};
	struct sl_partition made[SL_PARTITION_MAX_CANDIDATES], got[SL_PARTITION_MAX_CANDIDATES];
	int n = sl_partition_candidates(26, 5, per_gpu, 2, &scratch, made,
					SL_PARTITION_MAX_CANDIDATES);
	assert_true(n >= 2);
	struct sl_partition_key key = {.env_serial = 7, .cost_model = 0, .micro_batch = 4,
				       .num_stages = 5, .types = 1};
	assert_int_equal(sl_partition_cache_get(cache, &key, got, SL_PARTITION_MAX_CANDIDATES), -1);
	sl_partition_cache_put(cache, &key, made, n);
	assert_int_equal(sl_partition_cache_get(cache, &key, got, SL_PARTITION_MAX_CANDIDATES), n);
	for (int i = 0; i < n; i++) {
		assert_int_equal(got[i].num_stages, 5);
		assert_memory_equal(got[i].first, made[i].first, sizeof(int) * 6);
	}
	assert_int_equal(sl_partition_cache_get(cache, &key, got, 1), 1);
	/* any other key: another environment, cost model, micro-batch, depth or set of types */
	struct sl_partition_key other[5] = {key, key, key, key, key};
	other[0].env_serial = 8;
	other[1].cost_model = 1;
	other[2].micro_batch = 8;
	other[3].num_stages = 4;
	other[4].types = 3;
	for (int i = 0; i < 5; i++)
		assert_int_equal(sl_partition_cache_get(cache, &other[i], got, 4), -1);
	/* full: the keys it has stay, a new one is not kept */
	for (int k = 1; k < SL_PARTITION_CACHE_SLOTS; k++) {
		struct sl_partition_key more = key;
		more.env_serial = 1000 + (unsigned long long)k;
		sl_partition_cache_put(cache, &more, made, 1);
	}
	struct sl_partition_key last = key;
	last.env_serial = 1000 + SL_PARTITION_CACHE_SLOTS - 1;
	assert_int_equal(sl_partition_cache_get(cache, &last, got, 4), -1);
	assert_int_equal(sl_partition_cache_get(cache, &key, got, SL_PARTITION_MAX_CANDIDATES), n);
	sl_partition_cache_free(cache);
}

/* The options memo answers only under exactly its key, and keeps every answer as it grows. */
static void options_memo_keeps_answers_by_key(void **state)
{
	(void)state;
	struct sl_options_memo *memo = sl_options_memo_new();
	assert_non_null(memo);
	struct sl_options_key key = {.env_serial = 3, .reserve_param_copies = 3.0,
				     .kinds = 044, .cost_model = 0, .micro_batch = 2,
				     .num_stages = 4, .partition_index = 1, .types = 3};
	assert_int_equal(sl_options_memo_get(memo, &key), -1);
	sl_options_memo_put(memo, &key, 1);
	assert_int_equal(sl_options_memo_get(memo, &key), 1);
	struct sl_options_key other[8] = {key, key, key, key, key, key, key, key};
	other[0].env_serial = 4;
	other[1].reserve_param_copies = 0;
	other[2].kinds = 043;
	other[3].cost_model = 1;
	other[4].micro_batch = 4;
	other[5].num_stages = 5;
	other[6].partition_index = 0;
	other[7].types = 1;
	for (int i = 0; i < 8; i++)
		assert_int_equal(sl_options_memo_get(memo, &other[i]), -1);
	/* thousands more: the table grows, every answer stays */
	for (int i = 0; i < 5000; i++) {
		struct sl_options_key more = key;
		more.partition_index = 100 + i;
		sl_options_memo_put(memo, &more, i % 3 == 0);
	}
	for (int i = 0; i < 5000; i++) {
		struct sl_options_key more = key;
		more.partition_index = 100 + i;
		assert_int_equal(sl_options_memo_get(memo, &more), i % 3 == 0);
	}
	assert_int_equal(sl_options_memo_get(memo, &key), 1);
	sl_options_memo_free(memo);
}

static void first_candidate_is_sosp25_uniform(void **state)
{
	(void)state;
	/* SIMULATOR.md section 3: OPT-350 with P=7 is [3,3,4,4,4,4,4]. */
	struct sl_partition parts[SL_PARTITION_MAX_CANDIDATES];
	const double *none[1] = {NULL};
	static struct sl_partition_scratch scratch;
	int n = sl_partition_candidates(26, 7, none, 1, &scratch, parts,
					SL_PARTITION_MAX_CANDIDATES);
	assert_int_equal(n, 1);
	int sizes[7] = {3, 3, 4, 4, 4, 4, 4};
	for (int k = 0; k < 7; k++)
		assert_int_equal(parts[0].first[k + 1] - parts[0].first[k], sizes[k]);
}

static void balanced_candidate_minimises_slowest_stage(void **state)
{
	(void)state;
	/* a heavy last layer: the balanced split gives it a stage of its own */
	double times[6] = {1, 1, 1, 1, 1, 4};
	const double *per_gpu[1] = {times};
	struct sl_partition parts[SL_PARTITION_MAX_CANDIDATES];
	static struct sl_partition_scratch scratch;
	int n = sl_partition_candidates(6, 2, per_gpu, 1, &scratch, parts,
					SL_PARTITION_MAX_CANDIDATES);
	assert_true(n >= 2);
	int found = 0;
	for (int i = 0; i < n; i++)
		found |= parts[i].first[1] == 5;
	assert_true(found);
}

static int count_visits(const struct sl_partition *part, void *ctx)
{
	(void)part;
	(*(int *)ctx)++;
	return 0;
}

static void every_partition_is_visited(void **state)
{
	(void)state;
	int visits = 0;
	sl_partition_each(8, 3, count_visits, &visits);
	assert_int_equal(visits, 21); /* C(7, 2) */
}

static void uneven_counts_follow_speed(void **state)
{
	(void)state;
	/* pipelines twice as fast get twice the micro-batches; the counts add up exactly */
	double pipeline_s[4] = {1.0, 1.0, 2.0, 2.0};
	int n[4];
	assert_int_equal(sl_uneven_counts(pipeline_s, 4, 60, n), 0);
	assert_int_equal(n[0] + n[1] + n[2] + n[3], 60);
	assert_int_equal(n[0], 20);
	assert_int_equal(n[2], 10);
	/* rounding: 7 over three equal pipelines, the remainder to the lowest index */
	double equal[3] = {1.0, 1.0, 1.0};
	int m[3];
	assert_int_equal(sl_uneven_counts(equal, 3, 7, m), 0);
	assert_int_equal(m[0] + m[1] + m[2], 7);
	assert_true(m[0] >= m[1] && m[1] >= m[2] && m[0] - m[2] <= 1);
	/* every pipeline gets at least one, and fewer micro-batches than pipelines is refused */
	double skewed[3] = {1.0, 1000.0, 1000.0};
	assert_int_equal(sl_uneven_counts(skewed, 3, 5, m), 0);
	assert_true(m[1] >= 1 && m[2] >= 1);
	assert_int_equal(sl_uneven_counts(skewed, 3, 2, m), -1);
}

/* ---- oracle ---- */

struct pool_case {
	const char *name;
	int a100_a, a100_b, v100_a, v100_b;
};

static const struct pool_case pools[] = {
	{"4 A100 in one zone", 4, 0, 0, 0},
	{"2 A100 + 4 V100, one zone", 2, 0, 4, 0},
	{"A100 in zone a, V100 in zone b", 4, 0, 0, 4},
	{"2 types in 2 zones", 2, 2, 2, 2},
	{"3 A100 + 5 V100 over 2 zones", 1, 2, 3, 2},
};

static void set_pool(const struct sl_sim_env *env, const struct pool_case *pc, struct sl_pool *pool)
{
	memset(pool, 0, sizeof(*pool));
	const struct sl_catalogue *cat = &env->catalogue;
	int a100 = sl_catalogue_gpu_index(cat, "A100-40"), v100 = sl_catalogue_gpu_index(cat, "V100-16");
	int za = sl_catalogue_zone_index(cat, "us-central1-a");
	int zb = sl_catalogue_zone_index(cat, "us-west1-b");
	assert_true(a100 >= 0 && v100 >= 0 && za >= 0 && zb >= 0);
	pool->counts[a100][za] = pc->a100_a;
	pool->counts[a100][zb] = pc->a100_b;
	pool->counts[v100][za] = pc->v100_a;
	pool->counts[v100][zb] = pc->v100_b;
}

static double objective_value(const struct sl_search_request *req, const struct sl_sim_result *r)
{
	return req->objective == SL_OBJECTIVE_COST ? r->cost_usd_per_iter : r->throughput_it_s;
}

/* Constraints that bind on these pools: the cheapest plan is one A100 at about 0.07 it/s, the
 * fastest uses 4 to 6 GPUs at 0.13 to 0.24 it/s. */
#define ORACLE_MIN_THROUGHPUT 0.1
#define ORACLE_MAX_COST 0.02

/* Small pools where the memory options decide (with oracle-memory-model.json): the brute force
 * tries every option set of every plan, so these stay at 4 GPUs or fewer. */
static const struct pool_case memory_pools[] = {
	{"4 A100 in one zone", 4, 0, 0, 0},
	{"2 A100 + 2 V100, one zone", 2, 0, 2, 0},
	{"2 A100 in each of 2 zones", 2, 2, 0, 0},
	{"1 A100 + 2 V100, one zone", 1, 0, 2, 0},
	{"A100 in zone a, V100 in zone b", 2, 0, 0, 2},
};

static void check_oracle(const struct sl_sim_env *env, enum sl_cost_model cm,
			 enum sl_objective objective, int memory_options)
{
	const struct pool_case *cases = memory_options ? memory_pools : pools;
	size_t count = memory_options ? sizeof(memory_pools) / sizeof(memory_pools[0])
				      : sizeof(pools) / sizeof(pools[0]);
	for (size_t i = 0; i < count; i++) {
		struct sl_pool pool;
		set_pool(env, &cases[i], &pool);
		struct sl_search_request req = {.cost_model = cm, .objective = objective, .top_k = 1,
						.memory_options = memory_options};
		if (objective == SL_OBJECTIVE_COST)
			req.min_throughput_it_s = ORACLE_MIN_THROUGHPUT;
		else if (i % 2)
			req.max_cost_usd_per_iter = ORACLE_MAX_COST;
		struct sl_search_outcome fast, brute;
		struct sl_err err = {0};
		assert_int_equal(sl_search_run(env, &pool, &req, &fast, &err), 0);
		assert_int_equal(sl_search_exhaustive(env, &pool, &req, &brute, &err), 0);
		assert_int_equal(fast.count > 0, brute.count > 0);
		if (brute.count) {
			double want = objective_value(&req, &brute.best[0].result);
			double got = objective_value(&req, &fast.best[0].result);
			if (fabs(got - want) > 1e-9 * fabs(want)) {
				print_error("%s, cost model %s, objective %s, memory options %d: planner "
					    "%.9g, brute force %.9g (%lld plans)\n", cases[i].name,
					    sl_cost_model_name(cm), sl_objective_name(objective),
					    memory_options, got, want, brute.plans_simulated);
				json_t *p = sl_plan_to_json(&brute.best[0].plan, &env->catalogue);
				char *text = json_dumps(p, JSON_COMPACT);
				print_error("brute-force plan: %s\n", text);
				free(text);
				json_decref(p);
				p = sl_plan_to_json(&fast.best[0].plan, &env->catalogue);
				text = json_dumps(p, JSON_COMPACT);
				print_error("planner plan: %s\n", text);
				free(text);
				json_decref(p);
				fail();
			}
			assert_true(fast.best[0].result.fits_memory);
			assert_true(sl_search_meets(&req, &fast.best[0].result));
			if (memory_options) {
				/* the options only add plans: never worse than the search without them */
				struct sl_search_request without = req;
				without.memory_options = 0;
				struct sl_search_outcome off;
				assert_int_equal(sl_search_run(env, &pool, &without, &off, &err), 0);
				if (off.count) {
					double o = objective_value(&req, &off.best[0].result);
					assert_true(objective == SL_OBJECTIVE_COST ? got <= o * (1 + 1e-12)
										   : got >= o * (1 - 1e-12));
				}
				sl_search_outcome_free(&off);
			}
			/* the threshold heuristic alone (no complete enumeration of small shapes, no
			 * local search help beyond its own) stays within 10% of the optimum here */
			struct sl_search_request structured = req;
			structured.structured_only = 1;
			struct sl_search_outcome heur;
			assert_int_equal(sl_search_run(env, &pool, &structured, &heur, &err), 0);
			assert_true(heur.count > 0);
			double h = objective_value(&req, &heur.best[0].result);
			double gap = objective == SL_OBJECTIVE_COST ? h / want - 1 : 1 - h / want;
			if (gap > 0.10) {
				print_error("%s, %s, %s: heuristic alone %.6g vs optimum %.6g\n",
					    cases[i].name, sl_cost_model_name(cm),
					    sl_objective_name(objective), h, want);
				fail();
			}
			sl_search_outcome_free(&heur);
		}
		sl_search_outcome_free(&fast);
		sl_search_outcome_free(&brute);
	}
}

static int load_env(void **state)
{
	struct sl_sim_env *env = NULL;
	struct sl_err err = {0};
	if (sl_sim_env_load("tests/golden/search/oracle-model.json", NULL, &env, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return -1;
	}
	*state = env;
	return 0;
}

static int free_env(void **state)
{
	sl_sim_env_free(*state);
	return 0;
}

static void oracle_sailor_throughput(void **state) { check_oracle(*state, SL_COST_SAILOR, SL_OBJECTIVE_THROUGHPUT, 0); }
static void oracle_sosp25_throughput(void **state) { check_oracle(*state, SL_COST_SOSP25, SL_OBJECTIVE_THROUGHPUT, 0); }
static void oracle_sailor_cost(void **state) { check_oracle(*state, SL_COST_SAILOR, SL_OBJECTIVE_COST, 0); }
static void oracle_sosp25_cost(void **state) { check_oracle(*state, SL_COST_SOSP25, SL_OBJECTIVE_COST, 0); }
/* with activation recomputation and ZeRO-1 per stage: brute force over every option set, on a
 * model whose activations make them pay */
static void check_memory_oracle(enum sl_objective objective)
{
	struct sl_sim_env *env = NULL;
	struct sl_err err = {0};
	assert_int_equal(sl_sim_env_load("tests/golden/search/oracle-memory-model.json", NULL, &env,
					 &err), 0);
	check_oracle(env, SL_COST_SAILOR, objective, 1);
	/* the options matter here: on 3 GPUs the best plan recomputes, and it is faster than
	 * the best without options */
	struct sl_pool pool;
	set_pool(env, &memory_pools[1], &pool);
	struct sl_search_request req = {.cost_model = SL_COST_SAILOR, .top_k = 1, .memory_options = 1};
	struct sl_search_outcome with, without;
	assert_int_equal(sl_search_run(env, &pool, &req, &with, &err), 0);
	req.memory_options = 0;
	assert_int_equal(sl_search_run(env, &pool, &req, &without, &err), 0);
	assert_true(with.count == 1 && without.count == 1);
	assert_true(with.best[0].result.throughput_it_s > without.best[0].result.throughput_it_s);
	int recomputes = 0;
	for (int k = 0; k < with.best[0].plan.num_stages; k++)
		recomputes |= with.best[0].plan.stages[k].recompute != SL_RECOMPUTE_NONE;
	assert_true(recomputes);
	for (int k = 0; k < without.best[0].plan.num_stages; k++)
		assert_int_equal(without.best[0].plan.stages[k].recompute, SL_RECOMPUTE_NONE);
	sl_search_outcome_free(&with);
	sl_search_outcome_free(&without);
	sl_sim_env_free(env);
}
static void oracle_sailor_throughput_memory_options(void **state) { (void)state; check_memory_oracle(SL_OBJECTIVE_THROUGHPUT); }
static void oracle_sailor_cost_memory_options(void **state) { (void)state; check_memory_oracle(SL_OBJECTIVE_COST); }

/* The search runs its work items on several threads; the plan it returns must not depend on how
 * many (pruning only drops plans that cannot win). OPT-350 on a two-zone A100 + V100 pool, under
 * both cost models, with a budget and with the cost objective. */
static void same_plan_on_one_or_two_threads(void **state)
{
	(void)state;
	struct sl_sim_env *env = NULL;
	struct sl_err err = {0};
	assert_int_equal(sl_sim_env_load("OPT-350", NULL, &env, &err), 0);
	struct sl_pool pool;
	assert_int_equal(sl_pool_load("data/examples/pool-a100-v100.json", &env->catalogue, &pool,
				      &err), 0);
	struct sl_search_request reqs[] = {
		{.cost_model = SL_COST_SAILOR, .top_k = 1},
		{.cost_model = SL_COST_SOSP25, .top_k = 3},
		{.cost_model = SL_COST_SAILOR, .max_cost_usd_per_iter = 0.3, .top_k = 1},
		{.cost_model = SL_COST_SOSP25, .objective = SL_OBJECTIVE_COST,
		 .min_throughput_it_s = 0.05, .top_k = 1},
	};
	for (size_t i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
		char *text[2];
		for (int threads = 1; threads <= 2; threads++) {
			setenv("SAILOR_THREADS", threads == 1 ? "1" : "2", 1);
			struct sl_search_outcome out;
			assert_int_equal(sl_search_run(env, &pool, &reqs[i], &out, &err), 0);
			assert_true(out.count > 0);
			json_t *plans = json_array();
			for (int k = 0; k < out.count; k++)
				json_array_append_new(plans, sl_plan_to_json(&out.best[k].plan,
									     &env->catalogue));
			text[threads - 1] = json_dumps(plans, JSON_COMPACT);
			json_decref(plans);
			sl_search_outcome_free(&out);
		}
		if (strcmp(text[0], text[1])) {
			print_error("request %zu: one thread %s\ntwo threads %s\n", i, text[0], text[1]);
			fail();
		}
		free(text[0]);
		free(text[1]);
	}
	unsetenv("SAILOR_THREADS");
	sl_sim_env_free(env);
}

static void empty_pool_is_an_error(void **state)
{
	struct sl_pool pool;
	memset(&pool, 0, sizeof(pool));
	struct sl_search_request req = {.top_k = 1};
	struct sl_search_outcome out;
	struct sl_err err = {0};
	assert_int_equal(sl_search_run(*state, &pool, &req, &out, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "no GPUs"));
	sl_search_outcome_free(&out);
}

int main(void)
{
	setenv("SAILOR_DATA", "data", 0);
	const struct CMUnitTest pure[] = {
		cmocka_unit_test(partition_count_is_binomial),
		cmocka_unit_test(first_candidate_is_sosp25_uniform),
		cmocka_unit_test(partition_cache_keeps_answers_by_key),
		cmocka_unit_test(options_memo_keeps_answers_by_key),
		cmocka_unit_test(balanced_candidate_minimises_slowest_stage),
		cmocka_unit_test(every_partition_is_visited),
		cmocka_unit_test(uneven_counts_follow_speed),
		cmocka_unit_test(same_plan_on_one_or_two_threads),
	};
	const struct CMUnitTest with_env[] = {
		cmocka_unit_test(empty_pool_is_an_error),
		cmocka_unit_test(oracle_sailor_throughput),
		cmocka_unit_test(oracle_sosp25_throughput),
		cmocka_unit_test(oracle_sailor_cost),
		cmocka_unit_test(oracle_sosp25_cost),
		cmocka_unit_test(oracle_sailor_throughput_memory_options),
		cmocka_unit_test(oracle_sailor_cost_memory_options),
	};
	int failed = cmocka_run_group_tests(pure, NULL, NULL);
	failed += cmocka_run_group_tests(with_env, load_env, free_env);
	return failed;
}
