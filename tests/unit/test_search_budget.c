/* The planner's work budget: how many plans the search simulates, and how many shapes it
 * searches, on every benchmark of the planner (memory options on), under both cost models:
 *   - every step of each SOSP'25 scenario's trace (data/sosp25/scenarios.json; the cases below);
 *   - the same traces under the sailor model with --sync auto (island plans compete: the
 *     island search's work is counted with the synchronous search's);
 *   - each case of the benchmark pool set, bench/plan_pools/cases.json (one step: 2-3 GPU
 *     types over 1-5 zones in 1-3 regions, 64 to 768 GPUs, throughput and cost objectives with
 *     and without a budget), which bench/bench_plan.py times.
 * Each count is held under a bound derived from the count recorded in `records` below, the one
 * place the counts are stated.
 *
 * Why a test: a search dimension that multiplies the work (the memory options once made the
 * planner 2.5x slower) shows in no other test, and timings are not tests on a shared machine.
 * The counts are deterministic on one thread (SAILOR_THREADS=1: the pruning bound then evolves
 * in one order), independent of the machine and its load.
 *
 * The bound rule: bound = recorded count + 2%, rounded up (BOUND below), for plans simulated
 * and for shapes searched alike. Tight on purpose: the search before its speed-up (commit
 * b0e4f45, the first to count shapes, run on one thread; sailor model) fails it on every case
 * it can run (the zones outside the SOSP'25 five came later), by shapes everywhere and by
 * simulations on all but fig11: fig10 3864 / 39221, fig11 237 / 39116, fig12 3016 / 30536, fig7
 * 103 / 3966, fig8b 3734 / 24656, 3types-256-1zone 208 / 10668, 3types-256-5zones 10467 /
 * 102482, a100-v100-3zones-128 526 / 41777 (-budget 117 / 47750, -cost-floor 1727 / 46194),
 * a100-gh96-4zones-256 2500 / 58545 (-cost-floor 1100 / 62916). The guard's first bounds
 * (count + 25%) let fig10 (4180, 44300) and the five zones (13140, 84000) slide back to those
 * counts.
 *
 * What a shape is changed on 2026-11-29: a zone set's fill orders share one shape now (what a
 * shape needs before its replicas are chosen is computed once, then each order chooses), where
 * each order counted its own before; the counts of the search just before (commit 2a09ab2) are
 * 2.3 to 3.8 times these shapes wherever a zone set has several orders (a100-v100-3zones-128:
 * 31770 then, 10542 now), so they fail these bounds too. Visiting the orders inside each shape
 * also changed when strong plans are found, so the bound prunes at other moments: a few cases
 * with the cost objective simulate more (a100-80-v100-3regions-64-cost-floor 98 -> 229,
 * a100-v100-3zones-128-cost-floor 1435 -> 1560), most fewer; the whole search does about half
 * the work it did (callgrind, a100-v100-3zones-128-cost-floor: 3,523 M instructions -> 1,732 M).
 *
 * Updating the records: a change that makes the search simulate or search more must say why in
 * its commit. Run
 *     make build/tests/test_search_budget && build/tests/test_search_budget
 * which prints every case's counts, and write them into `records` (the date with them). Counts
 * that move because the simulator or the model changed are an update too. A count below its
 * record is welcome (the test says so); lower the record with it, so the bound stays tight.
 */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cluster/pool.h"
#include "search/islands_search.h"
#include "search/search.h"

#define BOUND(count) ((count) + ((count) * 2 + 99) / 100)
#define POOL_SET "bench/plan_pools/cases.json"
#define MAX_MODELS 4

struct record {
	const char *name;              /* a trace case below, or a case of POOL_SET */
	enum sl_cost_model cost_model;
	long long simulated;           /* plans simulated, all steps together */
	long long shapes;              /* shapes searched (sl_search_stats: reaching the replica
					* choice, once for all fill orders of the zone set, less
					* those the search with options skipped) */
};

/* The counts, measured 2026-11-29 with the fill orders inside each shape (SAILOR_THREADS=1).
 * Raised on 2026-11-30 by 1-16 plans (a100-v100-3zones-128 and its budget and cost-floor cases,
 * a100-80-v100-3regions-64, the three 3types-4zones-2continents-384 cases, fig10 --sync auto):
 * the bound of an assigned plan's pipeline (sim/bounds.c) had counted the recomputation its
 * stages kept from the plan simulated before it, so it pruned plans that run without; which ones
 * depended on the order the threads took (GPT-Neo-2.7 --pareto on 3types-4zones-2continents-384
 * lost two frontier plans on one thread, one of them in 1 run of 25 on two). The best plans are
 * the same.
 * Lowered on 2026-11-30 (sailor model, 22 rows, by 1% to 82%: fig10 1611 -> 449, fig8b
 * 1694 -> 307, fig10 --sync auto 8081 -> 4576): an assigned plan's bound now counts its
 * pipeline's fill and drain (micro-batch 0's trip through every stage and transfer, the
 * transfers that hold the bottleneck stage) and the tied embedding's exchange before stage 0's
 * all-reduce (sim/bounds.c), so plans far from the best are no longer simulated. Every plan
 * returned is the one returned before. */
static const struct record records[] = {
	{"fig10_geo_5zones_A100", SL_COST_SAILOR, 449, 16303},
	{"fig10_geo_5zones_A100", SL_COST_SOSP25, 4873, 14730},
	/* --sync auto (2026-11-29, commit after 4661b48): the synchronous search and the island
	 * search (its islands' searches and the outer-step choices) together; shapes: the
	 * synchronous search's. On one zone (fig7, fig8b) auto is the synchronous search. fig10
	 * and fig12 lowered at 62b3959 (the island model's outer step: its choice simulates fewer
	 * candidates); fig10 on 2026-11-30 (an island's search that an earlier one stands for is
	 * not made again: search/island_memo.h). */
	{"fig10_geo_5zones_A100 --sync auto", SL_COST_SAILOR, 4576, 16303},
	{"fig11_min_cost_minthr0.2 --sync auto", SL_COST_SAILOR, 640, 19947},
	{"fig12_max_thr_budget1.2 --sync auto", SL_COST_SAILOR, 622, 14856},
	{"fig7_homogeneous_A100 --sync auto", SL_COST_SAILOR, 33, 3708},
	{"fig8b_heterogeneous_A100_V100 --sync auto", SL_COST_SAILOR, 307, 18576},
	{"fig11_min_cost_minthr0.2", SL_COST_SAILOR, 285, 19947},
	{"fig11_min_cost_minthr0.2", SL_COST_SOSP25, 163, 16267},
	{"fig12_max_thr_budget1.2", SL_COST_SAILOR, 70, 14856},
	{"fig12_max_thr_budget1.2", SL_COST_SOSP25, 2424, 11195},
	{"fig7_homogeneous_A100", SL_COST_SAILOR, 33, 3708},
	{"fig7_homogeneous_A100", SL_COST_SOSP25, 155, 2912},
	{"fig8b_heterogeneous_A100_V100", SL_COST_SAILOR, 307, 18576},
	{"fig8b_heterogeneous_A100_V100", SL_COST_SOSP25, 2343, 13847},
	{"3types-256-1zone", SL_COST_SAILOR, 106, 6348},
	{"3types-256-1zone", SL_COST_SOSP25, 30, 6039},
	{"3types-256-5zones", SL_COST_SAILOR, 6004, 44769},
	{"3types-256-5zones", SL_COST_SOSP25, 22955, 34437},
	{"a100-v100-3zones-128", SL_COST_SAILOR, 116, 10542},
	{"a100-v100-3zones-128", SL_COST_SOSP25, 6027, 6133},
	{"a100-v100-3zones-128-budget", SL_COST_SAILOR, 91, 11983},
	{"a100-v100-3zones-128-budget", SL_COST_SOSP25, 235, 8690},
	{"a100-v100-3zones-128-cost-floor", SL_COST_SAILOR, 1273, 11836},
	{"a100-v100-3zones-128-cost-floor", SL_COST_SOSP25, 6399, 8530},
	{"a100-gh96-4zones-256", SL_COST_SAILOR, 385, 18404},
	{"a100-gh96-4zones-256", SL_COST_SOSP25, 14468, 12092},
	{"a100-gh96-4zones-256-cost-floor", SL_COST_SAILOR, 150, 19730},
	{"a100-gh96-4zones-256-cost-floor", SL_COST_SOSP25, 440, 16414},
	{"a100-80-v100-3regions-64", SL_COST_SAILOR, 195, 6731},
	{"a100-80-v100-3regions-64", SL_COST_SOSP25, 3317, 3144},
	{"a100-80-v100-3regions-64-cost-floor", SL_COST_SAILOR, 226, 6214},
	{"a100-80-v100-3regions-64-cost-floor", SL_COST_SOSP25, 609, 3373},
	{"3types-5zones-3regions-768", SL_COST_SAILOR, 371, 52222},
	{"3types-5zones-3regions-768", SL_COST_SOSP25, 8042, 38071},
	{"3types-5zones-3regions-768-budget", SL_COST_SAILOR, 136, 52761},
	{"3types-5zones-3regions-768-budget", SL_COST_SOSP25, 73, 40714},
	{"3types-5zones-3regions-768-cost", SL_COST_SAILOR, 358, 35278},
	{"3types-5zones-3regions-768-cost", SL_COST_SOSP25, 307, 28071},
	{"3types-4zones-2continents-384", SL_COST_SAILOR, 268, 44788},
	{"3types-4zones-2continents-384", SL_COST_SOSP25, 8909, 16795},
	{"3types-4zones-2continents-384-budget", SL_COST_SAILOR, 210, 41303},
	{"3types-4zones-2continents-384-budget", SL_COST_SOSP25, 2049, 19170},
	{"3types-4zones-2continents-384-cost-floor", SL_COST_SAILOR, 302, 45186},
	{"3types-4zones-2continents-384-cost-floor", SL_COST_SOSP25, 4812, 19231},
};

/* The SOSP'25 scenarios (OPT-350, as data/sosp25/scenarios.json gives them). */
struct trace_case {
	const char *name;
	const char *trace;             /* in data/traces/ */
	enum sl_objective objective;
	double min_throughput, max_cost;
};

static const struct trace_case trace_cases[] = {
	{"fig10_geo_5zones_A100", "gpu_trace_multizone.csv", SL_OBJECTIVE_THROUGHPUT, 0, 0},
	{"fig11_min_cost_minthr0.2", "gpu_trace_2zones_2gpus.csv", SL_OBJECTIVE_COST, 0.2, 0},
	{"fig12_max_thr_budget1.2", "gpu_trace_2zones_2gpus.csv", SL_OBJECTIVE_THROUGHPUT, 0, 1.2},
	{"fig7_homogeneous_A100", "gpu_trace_scaled.csv", SL_OBJECTIVE_THROUGHPUT, 0, 0},
	{"fig8b_heterogeneous_A100_V100", "gpu_trace_heterogeneous_imbalanced.csv",
	 SL_OBJECTIVE_THROUGHPUT, 0, 0},
};

/* One environment per model, loaded when a case first names it. */
struct envs {
	const char *names[MAX_MODELS];
	struct sl_sim_env *envs[MAX_MODELS];
	int count;
};

static const struct sl_sim_env *env_of(struct envs *e, const char *model)
{
	for (int i = 0; i < e->count; i++)
		if (!strcmp(e->names[i], model))
			return e->envs[i];
	assert_true(e->count < MAX_MODELS);
	struct sl_err err = {0};
	if (sl_sim_env_load(model, NULL, &e->envs[e->count], &err))
		fail_msg("%s", err.msg);
	e->names[e->count] = model;
	return e->envs[e->count++];
}

/* The case's counts (the sum over its steps) into *simulated and *shapes. */
static void count_steps(const struct sl_sim_env *env, const struct sl_pool *steps, int step_count,
			const struct sl_search_request *req, long long *simulated,
			long long *shapes)
{
	*simulated = *shapes = 0;
	for (int s = 0; s < step_count; s++) {
		struct sl_search_outcome out;
		struct sl_err err = {0};
		if (sl_search_plan(env, &steps[s], req, &out, &err))
			fail_msg("%s", err.msg);
		assert_true(out.count > 0);
		*simulated += out.plans_simulated;
		*shapes += out.stats.shapes - out.stats.skipped_shapes;
		sl_search_outcome_free(&out);
	}
}

/* Compares a case's counts with its record, prints them; returns 1 when over the bound or when
 * the case has no record. used[] marks the record. */
static int judge(const char *name, enum sl_cost_model cm, long long simulated, long long shapes,
		 int *used)
{
	const struct record *r = NULL;
	for (size_t i = 0; i < sizeof(records) / sizeof(records[0]) && !r; i++)
		if (!strcmp(records[i].name, name) && records[i].cost_model == cm) {
			r = &records[i];
			used[i] = 1;
		}
	if (!r) {
		printf("  %-40s %-6s simulated %6lld, shapes searched %7lld: NO RECORD (add one)\n",
		       name, sl_cost_model_name(cm), simulated, shapes);
		return 1;
	}
	int over = simulated > BOUND(r->simulated) || shapes > BOUND(r->shapes);
	int under = simulated < r->simulated || shapes < r->shapes;
	printf("  %-40s %-6s simulated %6lld (record %6lld, bound %6lld)   shapes searched %7lld "
	       "(record %7lld, bound %7lld)%s\n",
	       name, sl_cost_model_name(cm), simulated, r->simulated, BOUND(r->simulated), shapes,
	       r->shapes, BOUND(r->shapes),
	       over ? "  OVER" : under ? "  below the record: lower it" : "");
	return over;
}

static const enum sl_cost_model cost_models[] = {SL_COST_SAILOR, SL_COST_SOSP25};

static int trace_cases_over(struct envs *e, int *used)
{
	int over = 0;
	const struct sl_sim_env *env = env_of(e, "OPT-350");
	for (size_t i = 0; i < sizeof(trace_cases) / sizeof(trace_cases[0]); i++) {
		const struct trace_case *c = &trace_cases[i];
		char path[256];
		snprintf(path, sizeof(path), "data/traces/%s", c->trace);
		struct sl_pool_trace trace = {0};
		struct sl_err err = {0};
		if (sl_trace_load_csv(path, &env->catalogue, &trace, &err))
			fail_msg("%s", err.msg);
		/* both cost models, and the sailor model with --sync auto (islands compete) */
		for (int m = 0; m < 3; m++) {
			struct sl_search_request req = {
				.cost_model = cost_models[m % 2], .objective = c->objective,
				.min_throughput_it_s = c->min_throughput,
				.max_cost_usd_per_iter = c->max_cost, .top_k = 1, .memory_options = 1,
				.sync = m == 2 ? SL_SYNC_AUTO : SL_SYNC_EVERY_STEP,
			};
			char name[128];
			snprintf(name, sizeof(name), "%s%s", c->name, m == 2 ? " --sync auto" : "");
			long long simulated, shapes;
			count_steps(env, trace.steps, trace.step_count, &req, &simulated, &shapes);
			over += judge(name, cost_models[m % 2], simulated, shapes, used);
		}
		sl_pool_trace_free(&trace);
	}
	return over;
}

static const char *string_field(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	if (!s)
		fail_msg("%s: a case lacks \"%s\"", POOL_SET, key);
	return s;
}

/* One case of the pool set under both cost models. */
static int pool_case_over(struct envs *e, const json_t *c, int *used)
{
	const char *name = string_field(c, "name");
	const char *objective = string_field(c, "objective");
	const struct sl_sim_env *env = env_of(e, string_field(c, "model"));
	char path[512];
	snprintf(path, sizeof(path), "bench/plan_pools/%s", string_field(c, "pool"));
	struct sl_pool pool;
	struct sl_err err = {0};
	if (sl_pool_load(path, &env->catalogue, &pool, &err))
		fail_msg("%s", err.msg);
	assert_true(!strcmp(objective, "throughput") || !strcmp(objective, "cost"));
	int over = 0;
	for (int m = 0; m < 2; m++) {
		struct sl_search_request req = {
			.cost_model = cost_models[m],
			.objective = !strcmp(objective, "cost") ? SL_OBJECTIVE_COST
								 : SL_OBJECTIVE_THROUGHPUT,
			.min_throughput_it_s =
				json_number_value(json_object_get(c, "min_throughput_it_s")),
			.max_cost_usd_per_iter =
				json_number_value(json_object_get(c, "max_cost_usd_per_iter")),
			.top_k = 1,
			.memory_options = 1,
		};
		long long simulated, shapes;
		count_steps(env, &pool, 1, &req, &simulated, &shapes);
		over += judge(name, cost_models[m], simulated, shapes, used);
	}
	return over;
}

static void work_stays_within_budget(void **state)
{
	(void)state;
	struct envs e = {0};
	int used[sizeof(records) / sizeof(records[0])] = {0};
	int over = trace_cases_over(&e, used);
	json_error_t jerr;
	json_t *set = json_load_file(POOL_SET, 0, &jerr);
	if (!set)
		fail_msg("%s: %s (line %d)", POOL_SET, jerr.text, jerr.line);
	const json_t *cases = json_object_get(set, "cases");
	assert_true(json_is_array(cases) && json_array_size(cases) > 0);
	for (size_t i = 0; i < json_array_size(cases); i++)
		over += pool_case_over(&e, json_array_get(cases, i), used);
	json_decref(set);
	for (int i = 0; i < e.count; i++)
		sl_sim_env_free(e.envs[i]);
	/* a record of no case is stale: the case was renamed or dropped */
	for (size_t i = 0; i < sizeof(records) / sizeof(records[0]); i++)
		if (!used[i]) {
			printf("  record '%s' (%s) names no case: remove or rename it\n",
			       records[i].name, sl_cost_model_name(records[i].cost_model));
			over++;
		}
	/* see the top of this file before raising a record */
	assert_int_equal(over, 0);
}

int main(void)
{
	setenv("SAILOR_DATA", "data", 0);
	/* one thread: the count does not depend on which thread found a bound first */
	setenv("SAILOR_THREADS", "1", 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(work_stays_within_budget),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
