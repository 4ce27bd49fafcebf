/* Golden outputs of `sailor simulate --json` (sl_sim_result_to_json) for shipped plans under
 * both cost models, kept in tests/golden/sim/. Numbers compare to 1e-9 relative, everything else
 * exactly. After an intended change of the model, regenerate with
 *   SAILOR_UPDATE_GOLDEN=1 build/tests/test_sim_golden
 * and review the diff. */
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

static const struct {
	const char *plan;
	enum sl_cost_model cm;
	const char *golden;
} cases[] = {
	{"data/examples/plan-opt350-a100-v100.json", SL_COST_SAILOR, "tests/golden/sim/plan-opt350-a100-v100.sailor.json"},
	{"data/examples/plan-opt350-a100-v100.json", SL_COST_SOSP25, "tests/golden/sim/plan-opt350-a100-v100.sosp25.json"},
	{"data/validation/clariden-gh200-opt350/plan_config_N16_D4.json", SL_COST_SAILOR, "tests/golden/sim/N16_D4.sailor.json"},
	{"data/validation/clariden-gh200-opt350/plan_config_N4_D2.json", SL_COST_SAILOR, "tests/golden/sim/N4_D2.sailor.json"},
};

static int same(const json_t *a, const json_t *b, const char *path)
{
	if (json_is_number(a) && json_is_number(b)) {
		double x = json_number_value(a), y = json_number_value(b);
		if (fabs(x - y) <= 1e-9 * fmax(fabs(x), fabs(y)) + 1e-12)
			return 1;
		fprintf(stderr, "%s: %.17g, golden %.17g\n", path, x, y);
		return 0;
	}
	if (json_typeof(a) != json_typeof(b)) {
		fprintf(stderr, "%s: different JSON types\n", path);
		return 0;
	}
	if (json_is_object(a)) {
		if (json_object_size(a) != json_object_size(b)) {
			fprintf(stderr, "%s: different keys\n", path);
			return 0;
		}
		const char *k;
		json_t *v;
		json_object_foreach((json_t *)a, k, v)
		{
			char sub[256];
			snprintf(sub, sizeof(sub), "%s.%s", path, k);
			json_t *w = json_object_get(b, k);
			if (!w) {
				fprintf(stderr, "%s: missing in golden\n", sub);
				return 0;
			}
			if (!same(v, w, sub))
				return 0;
		}
		return 1;
	}
	if (json_is_array(a)) {
		if (json_array_size(a) != json_array_size(b)) {
			fprintf(stderr, "%s: different lengths\n", path);
			return 0;
		}
		for (size_t i = 0; i < json_array_size(a); i++) {
			char sub[256];
			snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
			if (!same(json_array_get(a, i), json_array_get(b, i), sub))
				return 0;
		}
		return 1;
	}
	if (json_equal((json_t *)a, (json_t *)b))
		return 1;
	fprintf(stderr, "%s: differs\n", path);
	return 0;
}

static void outputs_match_golden(void **state)
{
	(void)state;
	struct sl_err err = {0};
	struct sl_sim_env *env;
	assert_int_equal(sl_sim_env_load("OPT-350", "data", &env, &err), 0);
	static struct sl_sim_result res;
	const char *update = getenv("SAILOR_UPDATE_GOLDEN");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sl_plan plan;
		sl_plan_init(&plan);
		assert_int_equal(sl_plan_load(cases[i].plan, &env->catalogue, &plan, &err), 0);
		assert_int_equal(sl_sim_check_plan(env, &plan, 0, &err), 0);
		assert_int_equal(sl_simulate(env, &plan, cases[i].cm, &res, &err), 0);
		json_t *got = sl_sim_result_to_json(env, &plan, &res);
		if (update && *update) {
			FILE *f = fopen(cases[i].golden, "w");
			assert_non_null(f);
			sl_json_print(f, got);
			fclose(f);
		}
		json_t *want = sl_json_load_file(cases[i].golden, "golden", &err);
		if (!want)
			fprintf(stderr, "%s\n", err.msg);
		assert_non_null(want);
		if (!same(got, want, cases[i].golden))
			fail_msg("%s differs from %s", cases[i].plan, cases[i].golden);
		json_decref(got);
		json_decref(want);
		sl_plan_free(&plan);
	}
	sl_sim_env_free(env);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(outputs_match_golden)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
