/* Fuzz target: plan files (both formats) through sl_plan_from_json, and every plan that loads
 * through the checks and both cost models of the simulator, on OPT-350 and the shipped data:
 * what `sailor simulate --plan FILE` does. */
#include <jansson.h>

#include "fuzz_util.h"
#include "plan/plan.h"
#include "sim/sim.h"

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
	if (!sl_plan_from_json(root, "fuzz.json", &env->catalogue, &plan, &err) &&
	    !sl_sim_check_plan(env, &plan, 0, &err)) {
		for (int cm = 0; cm < 2; cm++)
			if (!sl_simulate(env, &plan, (enum sl_cost_model)cm, &res, &err)) {
				fuzz_assert(res.iteration_time_s >= 0);
				json_decref(sl_sim_result_to_json(env, &plan, &res));
			}
		json_decref(sl_plan_to_json(&plan, &env->catalogue));
	}
	sl_plan_free(&plan);
	json_decref(root);
	return 0;
}
