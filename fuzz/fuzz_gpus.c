/* Fuzz target: device types from a file (`--gpus FILE`, sailor.gpus/1) through
 * sl_catalogue_set_overlay, which is what every command taking --gpus calls first: the file is
 * read after the shipped catalogue (data/gpus.json), so this reaches the overlay's own rules
 * (names new to the shipped catalogue, the room left beside the shipped types, network_as and
 * estimate_from naming shipped or overlay types), which fuzz_catalogue, reading data/gpus.json
 * alone, does not.
 *
 * An accepted file is then used as `sailor simulate --gpus FILE` uses it: the OPT-350
 * environment is loaded with the overlay (layer times of the new types are estimated from their
 * estimate_from type, scaled by peak FLOP/s and memory bandwidth; links from network_as), and a
 * one-stage plan on the first new type (tp 1, the first zone) is checked and simulated under both
 * cost models. Invariants: the catalogue's (names unique, indices in range, sizes and prices in
 * their documented ranges) and, for a simulated plan, finite non-negative time, memory and cost:
 * a number the file is allowed to hold must not turn into an infinity or a NaN downstream. */
#include <math.h>

#include "cluster/catalogue.h"
#include "fuzz_util.h"
#include "plan/plan.h"
#include "sim/sim.h"

static void check_catalogue(const struct sl_catalogue *cat, int shipped)
{
	fuzz_assert(cat->gpu_count > shipped && cat->gpu_count <= SL_MAX_GPU_TYPES);
	for (int g = 0; g < cat->gpu_count; g++) {
		const struct sl_gpu_type *t = &cat->gpus[g];
		fuzz_assert(t->name[0] && strlen(t->name) < SL_GPU_NAME_MAX);
		for (int k = 0; k < g; k++)
			fuzz_assert(strcmp(cat->gpus[k].name, t->name) != 0);
		fuzz_assert(t->gpus_per_node >= 1 && t->gpus_per_node <= 64);
		fuzz_assert(t->memory_bytes >= 1 << 20 && t->memory_bytes <= SL_MAX_MEMORY_BYTES);
		fuzz_assert(t->usd_per_hour >= 0 && t->usd_per_hour <= SL_MAX_GPU_USD_PER_HOUR);
		fuzz_assert(t->peak_fp32_flops >= 0 && t->peak_fp32_flops <= SL_MAX_GPU_FLOPS);
		fuzz_assert(t->memory_bandwidth_bps >= 0 && t->memory_bandwidth_bps <= SL_MAX_BANDWIDTH_BPS);
		fuzz_assert(t->network_as >= 0 && t->network_as < cat->gpu_count);
		fuzz_assert(t->estimate_from >= 0 && t->estimate_from < cat->gpu_count);
	}
}

static void simulate_on(int gpu, size_t size)
{
	struct sl_sim_env *env = NULL;
	struct sl_err err = {0};
	if (sl_sim_env_load("OPT-350", NULL, &env, &err))
		return; /* e.g. no profile to estimate the new type from: a clear error is fine */
	struct sl_plan plan;
	sl_plan_init(&plan);
	if (!sl_plan_reserve(&plan, 1, 1, &err)) {
		plan.micro_batch = 1 << (int)(size % 3);
		plan.global_batch = 8;
		plan.stages[0].first_layer = 0;
		plan.stages[0].last_layer = 25;
		struct sl_replica *r = sl_plan_replica(&plan, 0, 0);
		r->gpu = (short)gpu;
		r->zone = 0;
		r->tp = 1;
		r->pad = 0;
		if (!sl_sim_check_plan(env, &plan, 0, &err))
			for (int cm = 0; cm < 2; cm++) {
				struct sl_sim_result res;
				if (sl_simulate(env, &plan, (enum sl_cost_model)cm, &res, &err))
					continue;
				fuzz_assert(isfinite(res.iteration_time_s) && res.iteration_time_s >= 0);
				fuzz_assert(isfinite(res.peak_memory_bytes) && res.peak_memory_bytes >= 0);
				fuzz_assert(isfinite(res.cost_usd_per_iter) && res.cost_usd_per_iter >= 0);
				json_decref(sl_sim_result_to_json(env, &plan, &res));
			}
	}
	sl_plan_free(&plan);
	sl_sim_env_free(env);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int shipped = -1;
	struct sl_err err = {0};
	fuzz_setup();
	if (shipped < 0) {
		struct sl_catalogue cat;
		if (sl_catalogue_load(NULL, &cat, &err)) {
			fprintf(stderr, "fuzz_gpus: %s\n", err.msg);
			abort();
		}
		shipped = cat.gpu_count;
	}
	const char *path = fuzz_write("gpus-overlay.json", data, size);
	if (sl_catalogue_set_overlay(path, &err)) {
		fuzz_assert(sl_catalogue_overlay() == NULL && err.msg[0]);
		return 0;
	}
	struct sl_catalogue cat;
	fuzz_assert(sl_catalogue_load(NULL, &cat, &err) == 0);
	check_catalogue(&cat, shipped);
	simulate_on(shipped, size);
	fuzz_assert(sl_catalogue_set_overlay(NULL, &err) == 0);
	return 0;
}
