/* Fuzz target: model descriptions (sailor.model/1 JSON) through sl_model_config_load and, for
 * the accepted ones, the simulator's environment (sl_sim_env_load: per-layer sizes, profiles,
 * estimates), which is what `sailor simulate/plan --model FILE` builds. */
#include "fuzz_util.h"
#include "model/model_config.h"
#include "sim/sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_setup();
	const char *path = fuzz_write("model.json", data, size);
	char copy[512];
	snprintf(copy, sizeof(copy), "%s", path);
	struct sl_model_config model;
	struct sl_err err = {0};
	if (sl_model_config_load(copy, &model, &err))
		return 0;
	fuzz_assert(sl_model_param_count(&model) > 0);
	struct sl_sim_env *env = NULL;
	if (!sl_sim_env_load(copy, NULL, &env, &err))
		sl_sim_env_free(env);
	return 0;
}
