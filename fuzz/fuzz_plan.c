/* Fuzz target: plan files (both formats) through sl_plan_from_json, and every plan that loads
 * through the checks and both cost models of the simulator, on OPT-350 and the shipped data:
 * what `sailor simulate --plan FILE` does (time, memory and cost must come out finite). A plan
 * that loads is also written back (sl_plan_to_json, what `plan -o` writes) and read again: the
 * copy must have the same stages, per-stage memory options ("recompute", "zero"), replicas and
 * batch. */
#include <jansson.h>
#include <math.h>

#include "fuzz_util.h"
#include "plan/plan.h"
#include "sim/sim.h"

/* The plan written as sailor.plan/1 and read back is the same plan. */
static void check_round_trip(const struct sl_plan *plan, const struct sl_catalogue *cat)
{
	json_t *out = sl_plan_to_json(plan, cat);
	fuzz_assert(out != NULL);
	struct sl_plan back;
	sl_plan_init(&back);
	struct sl_err err = {0};
	if (sl_plan_from_json(out, "round-trip.json", cat, &back, &err)) {
		fprintf(stderr, "fuzz_plan: the written plan does not read back: %s\n", err.msg);
		abort();
	}
	fuzz_assert(back.num_stages == plan->num_stages && back.num_pipelines == plan->num_pipelines);
	fuzz_assert(back.micro_batch == plan->micro_batch && back.global_batch == plan->global_batch);
	for (int k = 0; k < plan->num_stages; k++) {
		fuzz_assert(back.stages[k].first_layer == plan->stages[k].first_layer);
		fuzz_assert(back.stages[k].last_layer == plan->stages[k].last_layer);
		fuzz_assert(back.stages[k].recompute == plan->stages[k].recompute);
		fuzz_assert(back.stages[k].zero == plan->stages[k].zero);
		for (int j = 0; j < plan->num_pipelines; j++) {
			const struct sl_replica *a = sl_plan_replica(plan, k, j), *b = sl_plan_replica(&back, k, j);
			fuzz_assert(a->gpu == b->gpu && a->zone == b->zone && a->tp == b->tp);
		}
	}
	sl_plan_free(&back);
	json_decref(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sl_sim_env *env;
	static struct sl_sim_result res;
	struct sl_err err = {0};
	fuzz_setup();
	if (!env && sl_sim_env_load("OPT-350", NULL, &env, &err)) {
		fprintf(stderr, "fuzz_plan: %s\n", err.msg);
		abort();
	}
	json_error_t jerr;
	json_t *root = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return 0;
	struct sl_plan plan;
	sl_plan_init(&plan);
	int loaded = !sl_plan_from_json(root, "fuzz.json", &env->catalogue, &plan, &err);
	if (loaded && !sl_sim_check_plan(env, &plan, 0, &err)) {
		for (int cm = 0; cm < 2; cm++)
			if (!sl_simulate(env, &plan, (enum sl_cost_model)cm, &res, &err)) {
				fuzz_assert(isfinite(res.iteration_time_s) && res.iteration_time_s >= 0);
				fuzz_assert(isfinite(res.peak_memory_bytes) && isfinite(res.cost_usd_per_iter));
				json_decref(sl_sim_result_to_json(env, &plan, &res));
			}
	}
	if (loaded)
		check_round_trip(&plan, &env->catalogue);
	sl_plan_free(&plan);
	json_decref(root);
	return 0;
}
