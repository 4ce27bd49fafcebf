/* The sosp25 cost model: the SOSP'25 Sailor simulator (runtime_simulator.py) formula by formula
 * as ../shared/reference/sosp25/SIMULATOR.md section 4 gives it, so that a plan can be compared
 * with that paper on its own terms. Quirks kept on purpose: u_i from a stage's first layer only
 * and only the slowest stage's update counted; A_i from the last layer, B_i from the first layer
 * of a stage (tp = 1 sizes); the m_i rule for the first and last stages; the data-parallel sync
 * with count-1 fits between adjacent replicas on W_i / min(4, min tp), bucketed at 5e8 *bytes*,
 * added after the pipeline; its own GPU prices; memory = its validation estimate (5.06e9 bytes
 * overhead), fits = its planning check. The plan's D replicas of a stage are that simulator's
 * single pipeline with dp = D. */
#include <math.h>
#include <string.h>

#include "sim/internal.h"

static const struct sl_net_fit *fit(const struct sl_sim_env *env, const struct sl_replica *s,
				    int sc, const struct sl_replica *d, int dc)
{
	return sl_network_fit(env->network, s->zone, s->gpu, sc, d->zone, d->gpu, dc);
}

/* Replicas j and k of stage i are in the same zone. */
static int same_zones(const struct sl_plan *plan, int i, int j, int k)
{
	return sl_plan_replica(plan, i, j)->zone == sl_plan_replica(plan, i, k)->zone;
}

static int same_replica(const struct sl_replica *a, const struct sl_replica *b)
{
	return a->gpu == b->gpu && a->zone == b->zone && a->tp == b->tp;
}

double sl_sosp25_stage_sync_s(const struct sl_sim_env *env, const struct sl_plan *plan, int i,
			      int *derived)
{
	const int D = plan->num_pipelines;
	int first = plan->stages[i].first_layer, last = plan->stages[i].last_layer;
	double W = SL_FP32_BYTES * (env->tables->params_prefix[1][last + 1] -
				    env->tables->params_prefix[1][first]);
	int tmin = 4;
	for (int j = 0; j < D; j++)
		if (sl_plan_replica(plan, i, j)->tp < tmin)
			tmin = sl_plan_replica(plan, i, j)->tp;
	double stage_sync = 0.0;
	/* the time depends on the pair only through its fit: evaluate each distinct fit once
	 * (canonical plans repeat the same pair along a zone's run of replicas) */
	const struct sl_net_fit *seen[8];
	int seen_count = 0;
	for (int j = 0; j + 1 < D; j++) {
		const struct sl_replica *r = sl_plan_replica(plan, i, j);
		const struct sl_replica *n = sl_plan_replica(plan, i, j + 1);
		const struct sl_net_fit *f = fit(env, r, 1, n, 1);
		int known = 0;
		for (int q = 0; q < seen_count && !known; q++)
			known = seen[q] == f;
		if (known)
			continue;
		if (seen_count < 8)
			seen[seen_count++] = f;
		*derived |= f->derived;
		double tm = sl_sosp25_ar_time_buckets(W / tmin, D, f);
		if (tm > stage_sync)
			stage_sync = tm;
	}
	return stage_sync;
}

int sl_sim_sosp25(const struct sl_sim_env *env, const struct sl_plan *plan, long long G,
		  struct sl_sim_result *out, struct sl_err *err)
{
	const int P = plan->num_stages, D = plan->num_pipelines, b = plan->micro_batch;
	const struct sl_layer_sizes *sz = env->sizes;
	/* Nmb = ceil(G / (b · dp)) in that simulator; here the busiest pipeline's count under the
	 * plan's sharing (plan/microbatch_share.h), which is that number wherever the plan shares
	 * the batch as evenly as it can (the planner's splits and the artifact's plans do) */
	int Nmb = 0;
	for (int j = 0; j < D; j++)
		if (sl_plan_pipeline_microbatches(plan, j, G) > Nmb)
			Nmb = sl_plan_pipeline_microbatches(plan, j, G);
	out->microbatches = Nmb;
	double c[SL_SIM_MAX_STAGES], u[SL_SIM_MAX_STAGES], act[SL_SIM_MAX_STAGES],
		grad[SL_SIM_MAX_STAGES], m[SL_SIM_MAX_STAGES];
	for (int i = 0; i < P; i++) {
		int first = plan->stages[i].first_layer, last = plan->stages[i].last_layer;
		c[i] = u[i] = act[i] = grad[i] = 0.0;
		double fwd_max = 0, bwd_max = 0;
		for (int j = 0; j < D; j++) {
			const struct sl_replica *r = sl_plan_replica(plan, i, j);
			/* a run of equal replicas (canonical plans have long ones) is timed once */
			if (j > 0 && same_replica(r, sl_plan_replica(plan, i, j - 1)))
				continue;
			double f, bw;
			if (sl_sim_stage_fwd_bwd(env, SL_COST_SOSP25, r->gpu, b, r->tp, first, last, &f, &bw))
				return sl_err_set(err, SL_ENOTFOUND, "no layer times for %s mbs %d tp %d",
						  env->catalogue.gpus[r->gpu].name, b, r->tp);
			if (f + bw > c[i]) {
				c[i] = f + bw;
				fwd_max = f;
				bwd_max = bw;
			}
			double upd = sl_sim_stage_update_s(env, SL_COST_SOSP25, r->gpu, b, r->tp, first, last);
			if (upd > u[i])
				u[i] = upd;
			if (sl_sim_time_source(env, r->gpu, b, r->tp) == SL_TIME_ESTIMATED)
				out->stages[i].time_estimated = 1;
		}
		out->stages[i].fwd_s = fwd_max;
		out->stages[i].bwd_s = bwd_max;
		double A = sz->act_output_bytes[1][last] * b;   /* act_output_floats[1][last] · fs · b */
		double B = sz->act_output_bytes[1][first] * b;  /* act_output_floats[1][first] · fs · b */
		for (int j = 0; j < D; j++) {
			const struct sl_replica *r = sl_plan_replica(plan, i, j);
			/* the same link as pipeline j-1 on both sides: the same times */
			if (j > 0 && same_replica(r, sl_plan_replica(plan, i, j - 1)) &&
			    (i == P - 1 || same_replica(sl_plan_replica(plan, i + 1, j),
							sl_plan_replica(plan, i + 1, j - 1))) &&
			    (i == 0 || same_replica(sl_plan_replica(plan, i - 1, j),
						    sl_plan_replica(plan, i - 1, j - 1))))
				continue;
			if (i < P - 1) {
				const struct sl_replica *n = sl_plan_replica(plan, i + 1, j % D);
				const struct sl_net_fit *f = fit(env, r, r->tp, n, n->tp);
				out->network_derived |= f->derived;
				double tm = sl_sosp25_send_time(f, A);
				if (tm > act[i])
					act[i] = tm;
			}
			if (i > 0) {
				const struct sl_replica *p = sl_plan_replica(plan, i - 1, j % D);
				const struct sl_net_fit *f = fit(env, r, r->tp, p, p->tp);
				out->network_derived |= f->derived;
				double tm = sl_sosp25_send_time(f, B);
				if (tm > grad[i])
					grad[i] = tm;
			}
		}
	}
	for (int i = 0; i < P; i++) {
		if (P == 1)
			m[i] = 0.0;
		else if (i == 0)
			m[i] = P <= 3 ? act[0] : 2.0 * act[0];
		else if (i == P - 1)
			m[i] = 2.0 * grad[P - 1];
		else
			m[i] = act[i] + grad[i];
	}
	double max_cm = 0, sum_m = 0, sum_c = 0, max_u = 0;
	for (int i = 0; i < P; i++) {
		if (c[i] + m[i] > max_cm)
			max_cm = c[i] + m[i];
		sum_m += m[i];
		sum_c += c[i];
		if (u[i] > max_u)
			max_u = u[i];
	}
	double T_pipe = (Nmb - 1) * max_cm + sum_m + sum_c + max_u;
	/* estimate_sync_time: intra over stages, adjacent replica pairs, count-1 fits */
	double intra = 0.0;
	for (int i = 0; i < P; i++) {
		int derived = 0;
		double stage_sync = sl_sosp25_stage_sync_s(env, plan, i, &derived);
		out->network_derived |= derived;
		out->stages[i].dp_sync_s = stage_sync;
		if (stage_sync > intra)
			intra = stage_sync;
	}
	/* inter = 0: one pipeline description (SIMULATOR.md 4.2) */
	double T = T_pipe + intra;
	out->iteration_time_s = T;
	out->pipeline_time_s = T_pipe - max_u;
	out->optimizer_s = max_u;
	out->dp_sync_s = intra;
	out->throughput_it_s = 1.0 / T;
	for (int i = 0; i < P; i++) {
		struct sl_sim_stage *st = &out->stages[i];
		st->compute_s = Nmb * c[i];
		st->p2p_s = Nmb * m[i];
		st->bubble_s = fmax(0.0, out->pipeline_time_s - st->compute_s - st->p2p_s);
		st->optimizer_s = u[i];
	}
	/* egress (get_comm_cost_for_pipeline), USD */
	double fwd = 0, bwd = 0, ar = 0;
	for (int i = 0; i < P; i++) {
		int first = plan->stages[i].first_layer, last = plan->stages[i].last_layer;
		double W = SL_FP32_BYTES * (env->tables->params_prefix[1][last + 1] -
					    env->tables->params_prefix[1][first]);
		for (int j = 0; j < D; j++) {
			const struct sl_replica *r = sl_plan_replica(plan, i, j);
			/* pipelines j whose replica and neighbours sit in the same zones as pipeline
			 * j-1's add the same amounts: count the run, price it once */
			int run = 1;
			while (j + run < D - 1 &&
			       same_zones(plan, i, j + run, j) && (i == P - 1 || same_zones(plan, i + 1, j + run, j)) &&
			       (i == 0 || same_zones(plan, i - 1, j + run, j)) &&
			       same_zones(plan, i, j + run + 1, j + 1))
				run++;
			if (i < P - 1) {
				const struct sl_replica *n = sl_plan_replica(plan, i + 1, j % D);
				fwd += run * sl_network_egress_usd_per_gb(env->network, r->zone, n->zone) *
				       (sz->act_output_bytes[1][last] * b);
			}
			if (i > 0) {
				const struct sl_replica *p = sl_plan_replica(plan, i - 1, j % D);
				int prev_last = plan->stages[i - 1].last_layer;
				bwd += run * sl_network_egress_usd_per_gb(env->network, r->zone, p->zone) *
				       (sz->act_output_bytes[1][prev_last] * b);
			}
			const struct sl_replica *nx = sl_plan_replica(plan, i, (j + 1) % D);
			ar += run * sl_network_egress_usd_per_gb(env->network, r->zone, nx->zone) *
			      (W / D) * (2.0 * (D - 1));
			j += run - 1;
		}
	}
	out->egress_cost_usd_per_iter = (Nmb * fwd + Nmb * bwd + ar) / 1e9;
	/* comp_cost_per_sec = Σ used GPUs · GPU_PRICES / 3600; cost = comp / throughput + comm */
	double usd_per_s = 0;
	for (int i = 0; i < P; i++)
		for (int j = 0; j < D; j++) {
			const struct sl_replica *r = sl_plan_replica(plan, i, j);
			usd_per_s += r->tp * env->tables->sosp25_usd_per_hour[r->gpu] / 3600.0;
		}
	out->gpu_usd_per_hour = usd_per_s * 3600.0;
	out->gpu_cost_usd_per_iter = usd_per_s / out->throughput_it_s;
	out->cost_usd_per_iter = out->gpu_cost_usd_per_iter + out->egress_cost_usd_per_iter;
	/* memory: validation estimate (max over stages and replicas); fits: planning check */
	out->fits_memory = 1;
	for (int i = 0; i < P; i++) {
		int first = plan->stages[i].first_layer, last = plan->stages[i].last_layer;
		struct sl_sim_stage *st = &out->stages[i];
		st->fits = 1;
		double worst = -1;
		for (int j = 0; j < D; j++) {
			const struct sl_replica *r = sl_plan_replica(plan, i, j);
			/* equal replicas need equal memory: the first of a run decides */
			if (j > 0 && same_replica(r, sl_plan_replica(plan, i, j - 1)))
				continue;
			struct sl_sim_memory mem;
			sl_sim_memory_sosp25(env, r->gpu, b, r->tp, first, last, i, P, &mem);
			double ratio = mem.total_bytes / mem.capacity_bytes;
			if (ratio > worst) {
				worst = ratio;
				st->memory = mem;
				st->memory_replica = j;
			}
			if (!sl_sim_fits_sosp25(env, r->gpu, b, r->tp, first, last, i, P))
				st->fits = 0;
		}
		out->fits_memory &= st->fits;
	}
	return 0;
}
