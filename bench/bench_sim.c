/* Simulations per second of typical plans on one core (the planner calls sl_simulate in its inner
 * loop). Plans: OPT-350, 4 stages, heterogeneous (A100-40 and V100-16 in two zones), 16 and 64
 * replicas per stage, G = 1024, micro-batch 4; both cost models. Prints figures; never fails on
 * speed. */
#include <stdio.h>
#include <time.h>

#include "sim/sim.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int build(const struct sl_sim_env *env, struct sl_plan *plan, int D)
{
	struct sl_err err = {0};
	if (sl_plan_reserve(plan, 4, D, &err))
		return -1;
	plan->micro_batch = 4;
	plan->global_batch = 1024;
	static const int bounds[4][2] = {{0, 6}, {7, 12}, {13, 19}, {20, 25}};
	int a100 = sl_catalogue_gpu_index(&env->catalogue, "A100-40");
	int v100 = sl_catalogue_gpu_index(&env->catalogue, "V100-16");
	int za = sl_catalogue_zone_index(&env->catalogue, "us-central1-a");
	int zb = sl_catalogue_zone_index(&env->catalogue, "us-central1-b");
	for (int k = 0; k < 4; k++) {
		plan->stages[k].first_layer = bounds[k][0];
		plan->stages[k].last_layer = bounds[k][1];
		for (int j = 0; j < D; j++) {
			int het = j >= D * 3 / 4; /* a quarter of the pipelines on V100s in zone b */
			*sl_plan_replica(plan, k, j) = (struct sl_replica){
				(short)(het ? v100 : a100), (short)(het ? zb : za), (short)(het ? 4 : 2), 0};
		}
	}
	return 0;
}

int main(void)
{
	struct sl_err err = {0};
	struct sl_sim_env *env;
	if (sl_sim_env_load("OPT-350", NULL, &env, &err)) {
		fprintf(stderr, "bench_sim: %s\n", err.msg);
		return 1;
	}
	static struct sl_sim_result res;
	const int Ds[] = {16, 64};
	for (size_t di = 0; di < sizeof(Ds) / sizeof(Ds[0]); di++) {
		struct sl_plan plan;
		sl_plan_init(&plan);
		if (build(env, &plan, Ds[di]) || sl_sim_check_plan(env, &plan, 0, &err)) {
			fprintf(stderr, "bench_sim: %s\n", err.msg);
			return 1;
		}
		for (int cm = 0; cm < 2; cm++) {
			long n = 0;
			double t0 = now_s(), t;
			do {
				for (int i = 0; i < 256; i++) {
					if (sl_simulate(env, &plan, (enum sl_cost_model)cm, &res, &err)) {
						fprintf(stderr, "bench_sim: %s\n", err.msg);
						return 1;
					}
				}
				n += 256;
				t = now_s() - t0;
			} while (t < 1.0);
			printf("sl_simulate %-6s 4 stages x %2d replicas (%3d replicas, %d micro-batches): "
			       "%8.0f simulations/s (%.2f us each)\n",
			       sl_cost_model_name((enum sl_cost_model)cm), Ds[di], 4 * Ds[di],
			       res.microbatches, n / t, 1e6 * t / n);
		}
		sl_plan_free(&plan);
	}
	sl_sim_env_free(env);
	return 0;
}
