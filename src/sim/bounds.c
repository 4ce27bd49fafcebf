/* Lower bounds on the gradient synchronisation of a stage, for the planner's pruning (sim.h,
 * sl_sim_sync_lower_bound_s). A bound must never exceed what sl_simulate charges any plan with
 * that stage, its D replicas drawn from the given GPUs:
 *   - the ring (sailor) or the chain of adjacent replicas (sosp25) is at least as slow as its
 *     fastest possible hop. When some zone can hold all D replicas (one GPU each at least), the
 *     fastest hop is a same-zone one; otherwise at least one hop crosses zones, and the time is
 *     at least that of the fastest cross-zone hop among the zones given;
 *   - every TP degree the plan might use is tried (it changes the shard size and the fit).
 * sl_simulate computes exactly these formulas (comm.c, time_sosp25.c); the bound evaluates them
 * on the best case instead of the plan. */
#include <float.h>
#include <stddef.h>

#include "sim/internal.h"

static double sosp25_bound(const struct sl_sim_env *env, double W, int D, int cross,
			   const int avail[SL_MAX_GPU_TYPES][SL_MAX_ZONES], int zone_capacity_ok[])
{
	const struct sl_catalogue *cat = &env->catalogue;
	double best = DBL_MAX;
	for (int z1 = 0; z1 < cat->zone_count; z1++)
		for (int g1 = 0; g1 < cat->gpu_count; g1++) {
			if (avail[g1][z1] <= 0 || (!cross && !zone_capacity_ok[z1]))
				continue;
			for (int z2 = 0; z2 < cat->zone_count; z2++)
				for (int g2 = 0; g2 < cat->gpu_count; g2++) {
					if (avail[g2][z2] <= 0 || (cross ? z1 == z2 : z1 != z2))
						continue;
					const struct sl_net_fit *f =
						sl_network_fit(env->network, z1, g1, 1, z2, g2, 1);
					/* tau = min(4, min tp) is 1, 2 or 4 */
					for (int tau = 1; tau <= 4; tau *= 2) {
						double t = sl_sosp25_ar_time_buckets(W / tau, D, f);
						if (t < best)
							best = t;
					}
				}
		}
	return best == DBL_MAX ? 0 : best;
}

static double sailor_bound(const struct sl_sim_env *env, double W, int D, int cross,
			   const int avail[SL_MAX_GPU_TYPES][SL_MAX_ZONES], int zone_capacity_ok[])
{
	const struct sl_catalogue *cat = &env->catalogue;
	double best = DBL_MAX;
	for (int z1 = 0; z1 < cat->zone_count; z1++)
		for (int g1 = 0; g1 < cat->gpu_count; g1++)
			for (int t1 = 1; t1 <= SL_SIM_MAX_TP && t1 <= avail[g1][z1]; t1 *= 2) {
				if (!cross && !zone_capacity_ok[z1])
					continue;
				struct sl_replica a = {(short)g1, (short)z1, (short)t1, 0};
				for (int z2 = 0; z2 < cat->zone_count; z2++) {
					if (cross ? z2 == z1 : z2 != z1)
						continue;
					for (int g2 = 0; g2 < cat->gpu_count; g2++)
						for (int t2 = 1; t2 <= SL_SIM_MAX_TP && t2 <= avail[g2][z2];
						     t2 *= 2) {
							struct sl_replica b = {(short)g2, (short)z2,
									       (short)t2, 0};
							int most = t1 < t2 ? t1 : t2;
							for (int tmin = 1; tmin <= most; tmin *= 2) {
								double t = sl_sim_allreduce_hop_bound(
									env, &a, &b, D, W, tmin);
								if (t < best)
									best = t;
							}
						}
				}
			}
	return best == DBL_MAX ? 0 : best;
}

double sl_sim_sync_lower_bound_s(const struct sl_sim_env *env, enum sl_cost_model cm, int first,
				 int last, int D, const int avail[SL_MAX_GPU_TYPES][SL_MAX_ZONES])
{
	if (D <= 1)
		return 0;
	const struct sl_catalogue *cat = &env->catalogue;
	int zone_capacity_ok[SL_MAX_ZONES] = {0}, any_zone = 0;
	for (int z = 0; z < cat->zone_count; z++) {
		long long gpus = 0;
		for (int g = 0; g < cat->gpu_count; g++)
			gpus += avail[g][z];
		zone_capacity_ok[z] = gpus >= D;
		any_zone |= zone_capacity_ok[z];
	}
	int cross = !any_zone;
	if (cm == SL_COST_SOSP25) {
		return sosp25_bound(env, sl_sim_stage_params_bytes(env, first, last), D, cross, avail,
				    zone_capacity_ok);
	}
	return sailor_bound(env, sl_sim_stage_grad_bytes(env, first, last), D, cross, avail,
			    zone_capacity_ok);
}

double sl_sim_stage_params_bytes(const struct sl_sim_env *env, int first, int last)
{
	return SL_FP32_BYTES *
	       (env->tables->params_prefix[1][last + 1] - env->tables->params_prefix[1][first]);
}
