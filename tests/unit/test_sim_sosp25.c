/* Golden tests of the sosp25 cost model: every step's plan in data/sosp25/scenarios.json (the
 * SOSP'25 planner's choices on its evaluation scenarios, judged by its own simulator) simulated
 * again must give the recorded throughput and cost per iteration to 1e-6 relative; plus the
 * worked example at the end of ../shared/reference/sosp25/SIMULATOR.md. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sim/sim.h"
#include "util/json.h"

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

static void assert_rel(double got, double want, double tol, const char *what, const char *where)
{
	double rel = fabs(got - want) / fabs(want);
	if (!(rel <= tol)) {
		fprintf(stderr, "%s %s: got %.12g want %.12g (rel %.3g)\n", where, what, got, want, rel);
		fail();
	}
}

static void scenarios_reproduce(void **state)
{
	(void)state;
	struct sl_err err = {0};
	json_t *root = sl_json_load_file("data/sosp25/scenarios.json", "scenarios", &err);
	assert_non_null(root);
	json_t *scenarios = json_object_get(root, "scenarios");
	const char *name;
	json_t *sc;
	int checked = 0;
	static struct sl_sim_result res;
	json_object_foreach(scenarios, name, sc)
	{
		json_t *steps = json_object_get(sc, "steps");
		for (size_t i = 0; i < json_array_size(steps); i++) {
			json_t *step = json_array_get(steps, i);
			double thr = json_number_value(json_object_get(step, "throughput"));
			if (thr <= 0)
				continue;
			char where[128];
			snprintf(where, sizeof(where), "%s step %zu", name, i);
			struct sl_plan plan;
			sl_plan_init(&plan);
			int rc = sl_plan_from_json(json_object_get(step, "plan"), where, &env->catalogue,
						   &plan, &err);
			if (rc)
				fprintf(stderr, "%s\n", err.msg);
			assert_int_equal(rc, 0);
			rc = sl_simulate(env, &plan, SL_COST_SOSP25, &res, &err);
			assert_int_equal(rc, 0);
			assert_rel(res.throughput_it_s, thr, 1e-6, "throughput", where);
			assert_rel(res.cost_usd_per_iter,
				   json_number_value(json_object_get(step, "cost_per_iteration")), 1e-6,
				   "cost_per_iteration", where);
			double comm = json_number_value(json_object_get(step, "communication_cost"));
			if (comm > 0)
				assert_rel(res.egress_cost_usd_per_iter, comm, 1e-6, "communication_cost",
					   where);
			else
				assert_true(res.egress_cost_usd_per_iter == 0.0);
			/* computation_cost is $/s: GPU rent per second */
			assert_rel(res.gpu_usd_per_hour / 3600.0,
				   json_number_value(json_object_get(step, "computation_cost")), 1e-9,
				   "computation_cost", where);
			sl_plan_free(&plan);
			checked++;
		}
	}
	assert_true(checked >= 10);
	json_decref(root);
}

/* SIMULATOR.md, worked example: P=1, b=8, D=8, TP=4 A100-40 in us-central1-a, G=1024. */
static void worked_example(void **state)
{
	(void)state;
	struct sl_err err = {0};
	struct sl_plan plan;
	sl_plan_init(&plan);
	assert_int_equal(sl_plan_reserve(&plan, 1, 8, &err), 0);
	plan.micro_batch = 8;
	plan.global_batch = 1024;
	plan.stages[0].first_layer = 0;
	plan.stages[0].last_layer = 25;
	int a100 = sl_catalogue_gpu_index(&env->catalogue, "A100-40");
	int zone = sl_catalogue_zone_index(&env->catalogue, "us-central1-a");
	for (int j = 0; j < 8; j++)
		*sl_plan_replica(&plan, 0, j) = (struct sl_replica){(short)a100, (short)zone, 4, 0};
	static struct sl_sim_result res;
	assert_int_equal(sl_simulate(env, &plan, SL_COST_SOSP25, &res, &err), 0);
	assert_int_equal(res.microbatches, 16);
	assert_rel(res.stages[0].fwd_s + res.stages[0].bwd_s, 0.475258, 1e-6, "sum exec", "worked");
	assert_rel(res.pipeline_time_s + res.optimizer_s, 7.605066, 1e-6, "T_pipe", "worked");
	assert_rel(res.dp_sync_s, 0.388120, 2e-6, "sync", "worked");
	assert_rel(res.iteration_time_s, 7.993186, 1e-6, "T", "worked");
	assert_rel(res.throughput_it_s, 0.1251066, 1e-6, "throughput", "worked");
	assert_rel(res.cost_usd_per_iter, 0.2609960, 1e-6, "cost", "worked");
	/* memory (stage 0, TP 4): 26.3 GiB with the planning overhead (3e9) fits 40 GiB */
	assert_true(res.fits_memory);
	assert_rel(res.peak_memory_bytes - 5.06e9 + 3.0e9, 26.3 * 1073741824.0, 2e-3, "memory", "worked");
	sl_plan_free(&plan);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(scenarios_reproduce),
		cmocka_unit_test(worked_example),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
