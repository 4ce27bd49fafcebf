/* Fuzz target: measured runs (SOSP'25 validation files with "real", "max_mem", "red_grads")
 * through sl_validation_run on a folder holding the input, what `sailor validate DIR` does:
 * load, check, simulate, and compare with the measured figures. */
#include <math.h>

#include "fuzz_util.h"
#include "sim/sim.h"
#include "sim/validate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sl_sim_env *env;
	struct sl_err err = {0};
	fuzz_setup();
	if (!env && sl_sim_env_load("OPT-350", NULL, &env, &err)) {
		fprintf(stderr, "fuzz_validate: %s\n", err.msg);
		abort();
	}
	fuzz_write("runs/run.json", data, size);
	char dir[512];
	snprintf(dir, sizeof(dir), "%s/runs", fuzz_dir());
	struct sl_validation v;
	if (!sl_validation_run(env, dir, SL_COST_SOSP25, &v, &err)) {
		for (int i = 0; i < v.run_count; i++) {
			fuzz_assert(isfinite(v.runs[i].time_error));
			fuzz_assert(isfinite(v.runs[i].memory_error));
		}
		json_decref(sl_validation_to_json(env, &v));
		sl_validation_free(&v);
	}
	return 0;
}
