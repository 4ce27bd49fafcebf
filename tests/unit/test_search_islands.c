/* The island planner (search/islands_search.h) and the token value (search/token_value.h).
 * Oracle: on small pools (2 regions over 3 zones, 1-2 GPU types, up to 8 GPUs, a 4-layer model)
 * the planner's best plan with --sync islands and auto is as good as that of the same steps run
 * exhaustively (every shape; brute force for every synchronous and island search), under both
 * objectives. The token value: its lookup against hand-computed values, and bad files. The zones
 * whose islands the planner searches once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "search/islands_search.h"
#include "search/token_value.h"
#include "search/zone_equivalence.h"

struct pool_case {
	const char *name;
	int a100[3], v100[3]; /* in zones[0..2]: us-central1-a, us-central1-b, us-west1-b unless set */
	const char *zones[3];
	/* the zones' own figures are the same in zones[0] and zones[1] (search/zone_equivalence.h):
	 * the zone layout's second island is not searched, its plans are the first's */
	int interchangeable;
};

static const struct pool_case pools[] = {
	{"A100 in us-central1-a, V100 in us-west1-b", {2, 0, 0}, {0, 0, 4}, {NULL}, 0},
	{"2 types over 3 zones in 2 regions", {1, 1, 0}, {0, 2, 4}, {NULL}, 0},
	{"A100 in two regions", {2, 0, 2}, {0, 0, 0}, {NULL}, 0},
	{"one island too small for the model", {2, 0, 0}, {0, 0, 1}, {NULL}, 0},
	{"A100 in two zones of europe-west4 and in asia-east1", {2, 2, 4}, {0, 0, 0},
	 {"europe-west4-a", "europe-west4-b", "asia-east1-a"}, 1},
};

static void set_pool(const struct sl_sim_env *env, const struct pool_case *pc, struct sl_pool *pool)
{
	memset(pool, 0, sizeof(*pool));
	const struct sl_catalogue *cat = &env->catalogue;
	int a100 = sl_catalogue_gpu_index(cat, "A100-40"), v100 = sl_catalogue_gpu_index(cat, "V100-16");
	const char *sosp25_zones[3] = {"us-central1-a", "us-central1-b", "us-west1-b"};
	for (int z = 0; z < 3; z++) {
		int zi = sl_catalogue_zone_index(cat, pc->zones[z] ? pc->zones[z] : sosp25_zones[z]);
		assert_true(a100 >= 0 && v100 >= 0 && zi >= 0);
		pool->counts[a100][zi] = pc->a100[z];
		pool->counts[v100][zi] = pc->v100[z];
	}
}

static double objective_value(const struct sl_search_request *req, const struct sl_sim_result *r)
{
	return req->objective == SL_OBJECTIVE_COST ? -r->cost_usd_per_iter : r->throughput_it_s;
}

static void check_oracle(const struct sl_sim_env *env, enum sl_objective objective,
			 enum sl_sync_mode sync)
{
	struct sl_token_value tv;
	struct sl_err err = {0};
	assert_int_equal(sl_token_value_load("data/islands/token_value.json", &tv, &err), 0);
	for (size_t i = 0; i < sizeof(pools) / sizeof(pools[0]); i++) {
		struct sl_pool pool;
		set_pool(env, &pools[i], &pool);
		struct sl_search_request req = {.cost_model = SL_COST_SAILOR, .objective = objective,
						.top_k = 1, .memory_options = 1, .sync = sync,
						.max_inner_steps = 50, .token_value = &tv,
						.global_batch = 16};
		struct sl_search_outcome fast, brute;
		/* --sync islands where no two islands hold the model: the same refusal from both */
		int rc_fast = sl_search_plan(env, &pool, &req, &fast, &err);
		int rc_brute = sl_search_plan_exhaustive(env, &pool, &req, &brute, &err);
		assert_int_equal(rc_fast, rc_brute);
		assert_true(rc_fast == 0 || (rc_fast == SL_EINFEASIBLE && sync == SL_SYNC_ISLANDS));
		assert_int_equal(fast.count, brute.count);
		if (fast.count) {
			double f = objective_value(&req, &fast.best[0].result);
			double b = objective_value(&req, &brute.best[0].result);
			if (f < b - 1e-9 * fabs(b))
				print_error("%s, %s, sync %s: planner %.9g, exhaustive %.9g\n",
					    pools[i].name, sl_objective_name(objective),
					    sl_sync_mode_name(sync), f, b);
			assert_true(f >= b - 1e-9 * fabs(b));
			const struct sl_plan *p = &fast.best[0].plan;
			if (p->islands) { /* a plan the runtime takes */
				assert_int_equal(p->islands->island_of[0], 0);
				for (int k = 0; k < p->islands->count; k++)
					assert_true(p->islands->inner_steps[k] <= p->islands->inner_steps[0]);
				assert_true(p->islands->inner_steps[0] <= 50);
			}
		}
		/* the oracle searches every island; the planner, each of a pair of interchangeable
		 * zones' islands once (and, where it holds, the same plan: above) */
		assert_int_equal(brute.stats.island_searches_reused, 0);
		if (pools[i].interchangeable)
			assert_true(fast.stats.island_searches_reused > 0);
		fprintf(stderr, "%s, %s, sync %s: %d plan, %s, simulated %lld (exhaustive %lld), "
			"island searches %lld, reused %lld\n",
			pools[i].name, sl_objective_name(objective), sl_sync_mode_name(sync),
			fast.count, fast.count && fast.best[0].plan.islands ? "islands" : "every step",
			fast.plans_simulated, brute.plans_simulated, fast.stats.island_searches,
			fast.stats.island_searches_reused);
		sl_search_outcome_free(&fast);
		sl_search_outcome_free(&brute);
	}
}

static void oracle_islands_throughput(void **s) { check_oracle(*s, SL_OBJECTIVE_THROUGHPUT, SL_SYNC_ISLANDS); }
static void oracle_islands_cost(void **s) { check_oracle(*s, SL_OBJECTIVE_COST, SL_SYNC_ISLANDS); }
static void oracle_auto_throughput(void **s) { check_oracle(*s, SL_OBJECTIVE_THROUGHPUT, SL_SYNC_AUTO); }
static void oracle_auto_cost(void **s) { check_oracle(*s, SL_OBJECTIVE_COST, SL_SYNC_AUTO); }

/* The lookup of search/token_value.h on a table small enough to compute by hand. */
static void token_value_lookup(void **state)
{
	(void)state;
	char path[] = "/tmp/sailor-token-value-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	fputs("{\"schema\": \"sailor.token_value/1\", \"source\": \"by hand\", \"measurements\": ["
	      "{\"islands\": 2, \"inner_steps\": 10, \"wire\": \"fp32\", \"value\": 1.0},"
	      "{\"islands\": 2, \"inner_steps\": 50, \"wire\": \"fp32\", \"value\": 0.9},"
	      "{\"islands\": 4, \"inner_steps\": 50, \"wire\": \"fp32\", \"value\": 0.5},"
	      "{\"islands\": 2, \"inner_steps\": 50, \"wire\": \"int8\", \"value\": 0.81}]}", f);
	fclose(f);
	struct sl_token_value tv;
	struct sl_err err = {0};
	assert_int_equal(sl_token_value_load(path, &tv, &err), 0);
	unlink(path);
	assert_string_equal(tv.source, "by hand");
	int ex = -1;
	/* measured points, exactly */
	assert_true(fabs(sl_token_value_of(&tv, 2, 50, SL_ISLANDS_WIRE_FP32, &ex) - 0.9) < 1e-12);
	assert_int_equal(ex, 0);
	assert_true(fabs(sl_token_value_of(&tv, 2, 10, SL_ISLANDS_WIRE_FP32, &ex) - 1.0) < 1e-12);
	/* between: linear in log H, and through (1, 1) below the smallest H */
	double want = 1 + (log(22) - log(10)) / (log(50) - log(10)) * (0.9 - 1);
	assert_true(fabs(sl_token_value_of(&tv, 2, 22, SL_ISLANDS_WIRE_FP32, &ex) - want) < 1e-12);
	assert_true(fabs(sl_token_value_of(&tv, 2, 1, SL_ISLANDS_WIRE_FP32, &ex) - 1.0) < 1e-12);
	/* between island counts: linear in the count */
	assert_true(fabs(sl_token_value_of(&tv, 3, 50, SL_ISLANDS_WIRE_FP32, &ex) - 0.7) < 1e-12);
	assert_int_equal(ex, 0);
	/* outside: the nearest, said */
	assert_true(fabs(sl_token_value_of(&tv, 2, 100, SL_ISLANDS_WIRE_FP32, &ex) - 0.9) < 1e-12);
	assert_int_equal(ex, 1);
	assert_true(fabs(sl_token_value_of(&tv, 8, 50, SL_ISLANDS_WIRE_FP32, &ex) - 0.5) < 1e-12);
	assert_int_equal(ex, 1);
	/* int8 measured at 0.9 of fp32: that factor everywhere; bf16 never measured: int8's */
	assert_true(fabs(sl_token_value_of(&tv, 2, 10, SL_ISLANDS_WIRE_INT8, &ex) - 0.9) < 1e-12);
	assert_true(fabs(sl_token_value_of(&tv, 3, 50, SL_ISLANDS_WIRE_BF16, &ex) - 0.63) < 1e-12);
	/* the user's number, and numbers out of (0, 1] */
	assert_int_equal(sl_token_value_parse("0.7", &tv, &err), 0);
	assert_true(fabs(sl_token_value_of(&tv, 5, 500, SL_ISLANDS_WIRE_INT8, &ex) - 0.7) < 1e-12);
	assert_int_equal(sl_token_value_parse("1.5", &tv, &err), SL_EINPUT);
	assert_int_equal(sl_token_value_parse("0", &tv, &err), SL_EINPUT);
	assert_int_not_equal(sl_token_value_parse("/nonexistent/token_value.json", &tv, &err), 0);
}

/* Zones the simulator cannot tell apart (search/zone_equivalence.h), on the shipped data: the
 * SOSP'25 zones, whose links were each measured, differ; two zones of one region whose links
 * are the catalogue's classes are interchangeable; zones of regions with other GPU prices are
 * not, except under the sosp25 cost model, which prices a GPU the same everywhere. */
static int zone(const struct sl_sim_env *env, const char *name)
{
	int z = sl_catalogue_zone_index(&env->catalogue, name);
	assert_true(z >= 0);
	return z;
}

static void interchangeable_zones(void **state)
{
	const struct sl_sim_env *env = *state;
	int central_a = zone(env, "us-central1-a"), central_b = zone(env, "us-central1-b");
	int west4_a = zone(env, "europe-west4-a"), west4_b = zone(env, "europe-west4-b");
	int east1_a = zone(env, "asia-east1-a");
	/* a zone is itself */
	assert_int_equal(sl_zones_interchangeable(env, SL_COST_SAILOR, central_a, central_a), 1);
	/* measured fits: us-central1-a's A100 links are not us-central1-b's */
	assert_int_equal(sl_zones_interchangeable(env, SL_COST_SAILOR, central_a, central_b), 0);
	assert_int_equal(sl_zones_interchangeable(env, SL_COST_SOSP25, central_a, central_b), 0);
	/* class links, one region's prices: interchangeable, both ways */
	assert_int_equal(sl_zones_interchangeable(env, SL_COST_SAILOR, west4_a, west4_b), 1);
	assert_int_equal(sl_zones_interchangeable(env, SL_COST_SAILOR, west4_b, west4_a), 1);
	/* an A100-40 costs 3.748 $/h in europe-west4, 3.790 in asia-east1 (data/zones/gcp.json) */
	assert_int_equal(sl_zones_interchangeable(env, SL_COST_SAILOR, west4_a, east1_a), 0);
	/* the sosp25 model's prices are the same everywhere; the links within each zone are the
	 * same class */
	assert_int_equal(sl_zones_interchangeable(env, SL_COST_SOSP25, west4_a, east1_a), 1);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(token_value_lookup),
		cmocka_unit_test_setup_teardown(oracle_islands_throughput, load_env, free_env),
		cmocka_unit_test_setup_teardown(oracle_islands_cost, load_env, free_env),
		cmocka_unit_test_setup_teardown(oracle_auto_throughput, load_env, free_env),
		cmocka_unit_test_setup_teardown(oracle_auto_cost, load_env, free_env),
		cmocka_unit_test_setup_teardown(interchangeable_zones, load_env, free_env),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
